//! `POST /v1/entries` with a JSON Lines body: one answer a receipt, in
//! order, each written as soon as it is decided. The receipts are checked
//! and appended a group at a time, so what the server holds for a request
//! is its body (within the budget) and one group, whatever the body's
//! count of lines. A request carries at most `--max-lines` receipts and
//! what its token's rate allows (each receipt counts); the ones past
//! either are answered `refused`, in place, and never appended.
//!
//! Each answer's `line` is the receipt's line in the body, blank lines
//! counted, as `chit verify --lines` numbers them.

use super::api::{answered, error, submit, AppState, BodyParts, Handled};
use super::budget::Held;
use super::tokens::Token;
use axum::body::Bytes;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Receipts checked and appended together, at most; and their bytes.
const GROUP: usize = 256;
const GROUP_BYTES: usize = 1 << 20;
/// Refusals written together.
const REFUSALS: usize = 1024;

/// One receipt of a body: its line in the body, and its bytes (a slice of
/// the body's part where it lies in one, else a copy; none when it is
/// longer than an entry may be: its length).
type Receipt = (usize, Result<Bytes, usize>);

/// The receipts of a JSON Lines body, read in order across the body's
/// parts (never copied whole): each non-blank line, with its number.
#[derive(Clone)]
struct Receipts {
    parts: Vec<Bytes>,
    part: usize,
    at: usize,
    line: usize,
    /// Whether to copy the lines' bytes (a count needs none).
    copy: bool,
}

impl Receipts {
    fn new(parts: Vec<Bytes>) -> Receipts {
        let parts = parts.into_iter().filter(|p| !p.is_empty()).collect();
        Receipts {
            parts,
            part: 0,
            at: 0,
            line: 0,
            copy: true,
        }
    }
}

impl Iterator for Receipts {
    type Item = Receipt;
    fn next(&mut self) -> Option<Receipt> {
        let keep = chit_log::tiles::MAX_ENTRY_BYTES + 1;
        while self.part < self.parts.len() {
            self.line += 1;
            // The line's first part and where it starts there; bytes
            // copied only once it goes on into another part.
            let (first, start) = (self.part, self.at);
            let mut copied: Option<Vec<u8>> = None;
            let (mut len, mut blank) = (0, true);
            let mut end_in_first = None;
            while self.part < self.parts.len() {
                let part = &self.parts[self.part];
                let rest = &part[self.at..];
                let (piece, ended) = match memchr::memchr(b'\n', rest) {
                    Some(n) => (&rest[..n], Some(n + 1)),
                    None => (rest, None),
                };
                blank &= piece.iter().all(u8::is_ascii_whitespace);
                if self.copy && self.part != first && len + piece.len() <= keep {
                    let c = copied.get_or_insert_with(|| self.parts[first][start..].to_vec());
                    c.extend_from_slice(piece);
                }
                if self.part == first {
                    end_in_first = Some(self.at + piece.len());
                }
                len += piece.len();
                self.at += ended.unwrap_or(rest.len());
                if self.at == self.parts[self.part].len() {
                    self.part += 1;
                    self.at = 0;
                }
                if ended.is_some() {
                    break;
                }
            }
            if blank {
                continue;
            }
            let mut bytes = match copied {
                Some(c) => Bytes::from(c),
                None if self.copy && len <= keep => {
                    self.parts[first].slice(start..end_in_first.unwrap_or(start))
                }
                None => Bytes::new(),
            };
            if bytes.last() == Some(&b'\r') {
                bytes.truncate(bytes.len() - 1);
                len -= 1;
            }
            return Some((
                self.line,
                if len > chit_log::tiles::MAX_ENTRY_BYTES {
                    Err(len)
                } else {
                    Ok(bytes)
                },
            ));
        }
        None
    }
}

/// One request's lines on their way to answers.
struct Answering {
    state: Arc<AppState>,
    tok: Arc<Token>,
    receipts: Receipts,
    /// The next receipt, read ahead.
    ahead: Option<Receipt>,
    /// Receipts taken so far, and how many of them may be checked (the
    /// request's cap and what its token's rate gave).
    taken: usize,
    checked: usize,
    /// Seconds until the token's bucket holds another receipt.
    wait: f64,
    /// Why a batch of this request was not written: the rest is not tried.
    failed: Option<String>,
}

impl Answering {
    fn take(&mut self) -> Option<Receipt> {
        let r = self.ahead.take()?;
        self.ahead = self.receipts.next();
        self.taken += 1;
        Some(r)
    }

    /// The answers to the next group of receipts, as JSON lines; None when
    /// every receipt is answered.
    async fn next(&mut self) -> Option<Vec<u8>> {
        self.ahead.as_ref()?;
        let mut out = Vec::new();
        if self.taken >= self.checked || self.failed.is_some() {
            for _ in 0..REFUSALS {
                let (status, why) = self.refusal();
                let Some((line, _)) = self.take() else { break };
                push(
                    &mut out,
                    json!({"error": why, "line": line, "status": status}),
                );
            }
            return Some(out);
        }
        // In order: each receipt's line, and its bytes or its length.
        let mut group: Vec<(usize, Result<(), usize>)> = Vec::new();
        let mut inputs = Vec::new();
        let mut bytes = 0;
        while self.taken < self.checked && group.len() < GROUP && bytes < GROUP_BYTES {
            let Some((line, r)) = self.take() else { break };
            match r {
                Ok(b) => {
                    bytes += b.len();
                    inputs.push((line, b));
                    group.push((line, Ok(())));
                }
                Err(len) => group.push((line, Err(len))),
            }
        }
        let handled = if inputs.is_empty() {
            Ok(Handled {
                forbidden: Vec::new(),
                appended: None,
            })
        } else {
            submit(&self.state, self.tok.clone(), inputs).await
        };
        match handled {
            Ok(Handled {
                forbidden,
                appended,
            }) => {
                let witnessing = self.state.witnessing.clone();
                let cosigned = |a: &super::sequencer::Appended| {
                    witnessing.as_ref().map(|w| w.cosigned_size() >= a.size)
                };
                let (mut checked, mut sent) = (0, 0);
                for (line, r) in &group {
                    if let Err(len) = r {
                        let why = chit_logstore::policy::too_large_for_an_entry(*len);
                        push(
                            &mut out,
                            json!({"error": why, "line": line, "status": "unreadable"}),
                        );
                        continue;
                    }
                    if let Some(why) = &forbidden[checked] {
                        push(
                            &mut out,
                            json!({"error": why, "line": line, "status": "forbidden"}),
                        );
                    } else {
                        let a = appended.as_ref().expect("a line not forbidden was sent");
                        out.extend_from_slice(&answered(a, sent, Some(*line), cosigned(a)).1);
                        out.push(b'\n');
                        sent += 1;
                    }
                    checked += 1;
                }
            }
            Err(why) => {
                let why = why.to_string();
                for (line, _) in &group {
                    push(
                        &mut out,
                        json!({"error": why, "line": line, "status": "error"}),
                    );
                }
                self.failed = Some(why);
            }
        }
        Some(out)
    }

    /// Why the next receipt, past those checked, is not checked: its
    /// status and reason.
    fn refusal(&self) -> (&'static str, String) {
        if let Some(why) = &self.failed {
            return (
                "error",
                format!("not appended: an earlier batch of this request was not written ({why})"),
            );
        }
        let cap = self.state.max_lines;
        if self.taken >= cap {
            (
                "refused",
                format!(
                    "past the {cap} receipts a request may carry (--max-lines): send the rest in \
                     another request"
                ),
            )
        } else {
            (
                "refused",
                format!(
                    "token {} is over its rate; send this receipt again in {:.1} s",
                    self.tok.name, self.wait
                ),
            )
        }
    }
}

fn push(out: &mut Vec<u8>, v: serde_json::Value) {
    out.extend_from_slice(v.to_string().as_bytes());
    out.push(b'\n');
}

/// `POST /v1/entries`, JSON Lines, once its token is known and its body
/// read (and held in the budget as `held`, until the last answer is
/// written). The first group is answered before the answer's head, so
/// that a batch the server cannot write is a 503 as for one receipt; the
/// rest streams, and is cut short at `deadline` (as an unfinished chunked
/// answer, which no client takes for a whole one).
pub async fn append(
    state: Arc<AppState>,
    tok: Arc<Token>,
    body: BodyParts,
    held: Held,
    deadline: tokio::time::Instant,
) -> Response {
    let mut receipts = Receipts::new(body.0);
    // What the token's bucket gives of the receipts this request may
    // carry (counted first, nothing copied).
    let mut count = receipts.clone();
    count.copy = false;
    let carried = count.take(state.max_lines).count();
    let Some(first) = receipts.next() else {
        return error(StatusCode::BAD_REQUEST, "an empty body: send a receipt");
    };
    let (granted, wait) = state.buckets.take_up_to(&tok, carried);
    if granted == 0 {
        return super::api::over_rate(&tok, wait);
    }
    let mut job = Answering {
        state,
        tok,
        receipts,
        ahead: Some(first),
        taken: 0,
        checked: granted,
        wait,
        failed: None,
    };
    // A first receipt is there (read above): its group is answered.
    let head = job.next().await.unwrap_or_default();
    if let Some(why) = &job.failed {
        // Nothing of the request was written: answered as one receipt is.
        return error(StatusCode::SERVICE_UNAVAILABLE, why.clone());
    }
    let (tx, rx) = mpsc::channel::<Bytes>(2);
    let cut = Arc::new(AtomicBool::new(false));
    let cutting = cut.clone();
    tokio::spawn(async move {
        let streamed = tokio::time::timeout_at(deadline, async {
            if tx.send(Bytes::from(head)).await.is_err() {
                return;
            }
            while let Some(more) = job.next().await {
                // A client gone: nothing more is checked or appended.
                if tx.send(Bytes::from(more)).await.is_err() {
                    return;
                }
            }
        })
        .await;
        // The body and the budget it held are let go now, whether the
        // client reads what is left of the answer or not.
        drop(held);
        if streamed.is_err() {
            // The answer ends unfinished, so the client cannot take it
            // for whole. No later group is tried; one in flight may have
            // been appended unanswered (sent again, it is "present").
            cutting.store(true, Ordering::Release);
        }
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/jsonl")],
        axum::body::Body::new(Streamed { parts: rx, cut }),
    )
        .into_response()
}

/// An answer's body as its parts arrive; one cut short ends in an error
/// (hyper then aborts it rather than finish it).
struct Streamed {
    parts: mpsc::Receiver<Bytes>,
    cut: Arc<AtomicBool>,
}

impl http_body::Body for Streamed {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        self.parts.poll_recv(cx).map(|next| match next {
            Some(b) => Some(Ok(http_body::Frame::data(b))),
            None if self.cut.load(Ordering::Acquire) => {
                Some(Err(std::io::Error::other("the request's time ran out")))
            }
            None => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body's receipts are the same however it was cut into parts: each
    /// non-blank line with its number in the body, CRLF or LF, the last
    /// line without its newline too, one too long for an entry by length.
    #[test]
    fn receipts_are_read_across_parts() {
        let long = "x".repeat(70_000);
        let body = format!("a\r\n  \n\n{{\"b\":1}}\n\t\r\n{long}\nlast");
        let want: Vec<Receipt> = vec![
            (1, Ok(Bytes::from_static(b"a"))),
            (4, Ok(Bytes::from_static(b"{\"b\":1}"))),
            (6, Err(70_000)),
            (7, Ok(Bytes::from_static(b"last"))),
        ];
        let bytes = body.as_bytes();
        for step in [1, 2, 3, 5, 64, 69_999, bytes.len()] {
            let parts: Vec<Bytes> = bytes.chunks(step).map(Bytes::copy_from_slice).collect();
            let got: Vec<Receipt> = Receipts::new(parts.clone()).collect();
            assert_eq!(got, want, "step {step}");
            let mut count = Receipts::new(parts);
            count.copy = false;
            assert_eq!(count.count(), 4);
        }
        assert_eq!(Receipts::new(vec![Bytes::from_static(b"\n \n")]).count(), 0);
        assert_eq!(Receipts::new(Vec::new()).count(), 0);
    }
}
