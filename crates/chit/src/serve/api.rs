//! The HTTP API: the log's writes (with a token) and reads, the verifier,
//! and C2SP tlog-tiles, so any tiles client can audit the server.
//!
//! | route | answer |
//! | --- | --- |
//! | `POST /v1/entries` | 201 appended, 200 already logged, 422 invalid (the findings `chit verify --json` gives), 400 unreadable, 401/403 token, 413 too large; JSON Lines in (`Content-Type: application/jsonl`), one answer a line out |
//! | `POST /v1/verify` | the verdict line `chit verify --json` gives; 200 valid, 422 not |
//! | `GET /v1/entries/{index}`, `GET /v1/entries/sha256:{hex}` | the entry's log bundle (`chit verify --log-key` proves it); its content address in the header `Chit-Content-Address: sha256:{hex}` |
//! | `GET /v1/consistency?from=&to=` | a consistency proof (as `chit log consistency`) |
//! | `GET /checkpoint`, `GET /tile/…` | C2SP tlog-tiles |
//! | `GET /healthz`, `GET /metrics` | liveness; Prometheus text |

// A refusal is an HTTP response, built once where it is found and returned
// as is: boxing every one would only add noise to each handler.
#![allow(clippy::result_large_err)]

use super::sequencer::{Appended, Job};
use super::tokens::Tokens;
use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use chit_log::tiles::Tile;
use chit_logstore::policy::Compiled;
use chit_logstore::{Admission, Log, Outcome};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// What every handler shares.
pub struct AppState {
    /// A log on its own store connection, for reads.
    pub reader: Mutex<Log>,
    pub checker: Arc<Compiled>,
    pub jobs: mpsc::UnboundedSender<Job>,
    /// Requests being checked on their way to `jobs`.
    pub checking: super::sequencer::Checking,
    pub tokens: Tokens,
    pub buckets: super::tokens::Buckets,
    pub metrics: super::metrics::Metrics,
    /// The bytes of request bodies held at once (`--max-in-flight`).
    pub budget: super::budget::Budget,
    /// Most receipts one JSON Lines request may carry (`--max-lines`).
    pub max_lines: usize,
    /// How the last batch written went.
    pub health: super::health::Writes,
    /// What `/v1/verify` reads a document under.
    pub verify_limits: chit_core::Limits,
    /// This log's key: a log bundle given to `/v1/verify` is proven with
    /// it, as `chit verify --log-key` would.
    pub log_keys: chit_core::kinds::log_bundle::LogKeys,
    /// The largest body `/v1/verify` takes: what the budget can hold with
    /// its check ([`verify_cost`]), at most [`super::MAX_BODY`].
    pub verify_max: usize,
    /// `--request-timeout`: a streamed answer ends by it too.
    pub request_timeout: std::time::Duration,
    /// Witnesses asked to cosign (`--witness-policy`).
    pub witnessing: Option<Arc<super::witnessing::Witnessing>>,
}

/// What a `/v1/verify` body of `len` bytes takes of the budget: its bytes,
/// and what checking it may take beside them: a multiple of its size (long
/// strings are decoded and copied) and a cost for each value a reader may
/// hold ([`super::MAX_VALUES`] at most), both above the costliest shapes
/// measured (docs/decisions/serve-memory.md).
pub fn verify_cost(len: usize) -> usize {
    const PER_BYTE: usize = 8;
    const PER_VALUE: usize = 200;
    let values = (len / 2 + 128).min(super::MAX_VALUES);
    len.saturating_mul(1 + PER_BYTE)
        .saturating_add(values.saturating_mul(PER_VALUE))
}

/// The largest body whose [`verify_cost`] fits `budget`, at most
/// [`super::MAX_BODY`].
pub fn largest_verified(budget: usize) -> usize {
    let (mut lo, mut hi) = (0usize, super::MAX_BODY);
    if verify_cost(hi) <= budget {
        return hi;
    }
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if verify_cost(mid) <= budget {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A request's submissions once handled: each one's refusal where its
/// token may not submit its kind, and what the batch of the others gave
/// (none when every one was refused so).
pub(super) struct Handled {
    pub forbidden: Vec<Option<String>>,
    pub appended: Option<Appended>,
}

type Shared = Arc<AppState>;

pub(super) fn error(code: StatusCode, why: impl Into<String>) -> Response {
    (code, axum::Json(json!({ "error": why.into() }))).into_response()
}

/// `r`, and the connection ends after it: a body sent with the request
/// was not read, and the next request cannot be told from its rest.
pub(super) fn closing(mut r: Response) -> Response {
    r.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    r
}

/// 401: no token the server knows, said before any body is read.
fn unauthorized(why: &str) -> Response {
    let mut r = closing(error(StatusCode::UNAUTHORIZED, why));
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer realm=\"chit\""),
    );
    r
}

/// 429 for a token whose bucket holds no receipt for `wait` seconds.
pub(super) fn over_rate(tok: &super::tokens::Token, wait: f64) -> Response {
    let mut r = error(
        StatusCode::TOO_MANY_REQUESTS,
        format!(
            "token {} is over its rate; try again in {wait:.1} s",
            tok.name
        ),
    );
    if let Ok(v) = header::HeaderValue::from_str(&format!("{}", wait.ceil().max(1.0) as u64)) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// Runs blocking work (checks, store reads) off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

/// Runs CPU-bound work (checking receipts) on the rayon pool, one thread
/// per core: many requests at once queue there instead of starting a
/// thread each.
pub(super) async fn on_cores<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    let (tx, rx) = oneshot::channel();
    rayon::spawn(move || {
        let _ = tx.send(f());
    });
    rx.await.map_err(|_| {
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the check did not finish",
        )
    })
}

/// The bearer token, if the request carries one the file lists: the
/// scheme is case-insensitive (RFC 9110 §11.1), and two Authorization
/// headers are refused rather than one of them taken.
fn token<'a>(
    state: &'a AppState,
    headers: &HeaderMap,
) -> Result<&'a Arc<super::tokens::Token>, Response> {
    if state.tokens.is_empty() {
        return Err(unauthorized(
            "this server takes no writes: start it with --tokens FILE",
        ));
    }
    let mut given = headers.get_all(header::AUTHORIZATION).iter();
    let first = given.next();
    if given.next().is_some() {
        return Err(closing(error(
            StatusCode::BAD_REQUEST,
            "two Authorization headers: send one, Authorization: Bearer TOKEN",
        )));
    }
    let presented = first
        .and_then(|v| v.to_str().ok())
        .and_then(bearer)
        .ok_or_else(|| unauthorized("a write needs Authorization: Bearer TOKEN"))?;
    state
        .tokens
        .find(presented)
        .ok_or_else(|| unauthorized("that token is not one this server knows"))
}

/// The token of a `Bearer` credential (the scheme in any case).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once([' ', '\t'])?;
    let token = token.trim_matches([' ', '\t']);
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Whether a body is JSON Lines: its media type names `jsonl` or
/// `ndjson` (in any case, as media types are read).
fn is_lines(headers: &HeaderMap) -> bool {
    // A media type is a few dozen bytes: a plain scan beats a searcher.
    let names = |t: &[u8], what: &[u8]| t.windows(what.len()).any(|w| w.eq_ignore_ascii_case(what));
    headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| names(v.as_bytes(), b"jsonl") || names(v.as_bytes(), b"ndjson"))
}

/// Where a submission is in the log (appended, or there already): its
/// HTTP status, `status` word, index, content address and leaf hash.
type Placed<'a> = (
    StatusCode,
    &'static str,
    u64,
    &'a chit_log::Hash,
    &'a chit_log::Hash,
);

fn placed(o: &Outcome) -> Option<Placed<'_>> {
    match o {
        Outcome::Appended {
            index,
            sha256,
            leaf,
            ..
        } => Some((StatusCode::CREATED, "appended", *index, sha256, leaf)),
        Outcome::Duplicate {
            index,
            sha256,
            leaf,
        } => Some((StatusCode::OK, "present", *index, sha256, leaf)),
        Outcome::Refused(_) | Outcome::Unreadable(_) => None,
    }
}

/// One submission's answer, as JSON, and its HTTP status.
fn answer(o: &Outcome, appended: &Appended) -> (StatusCode, Value) {
    if let Some((code, status, index, sha256, leaf)) = placed(o) {
        return (
            code,
            json!({"status": status, "index": index, "sha256": chit_core::digest::hex(sha256),
                   "leaf_hash": B64.encode(leaf), "size": appended.size}),
        );
    }
    match o {
        Outcome::Refused(r) => (StatusCode::UNPROCESSABLE_ENTITY, refused(r)),
        Outcome::Unreadable(why) => (
            StatusCode::BAD_REQUEST,
            json!({"status": "unreadable", "error": why}),
        ),
        Outcome::Appended { .. } | Outcome::Duplicate { .. } => unreachable!("placed above"),
    }
}

/// The answer to the submission at `at` of a request (with its JSON
/// Lines `line`, if any), as JSON text: [`logged`]'s where it is in the
/// log with its proof, else [`answer`]'s.
///
/// With witnesses (`cosigned` given), a logged answer also says whether
/// its checkpoint is covered by one whose cosignatures meet the quorum
/// (`"cosigned"`, after `"checkpoint"`, keeping the members sorted).
pub(super) fn answered(
    a: &Appended,
    at: usize,
    line: Option<usize>,
    cosigned: Option<bool>,
) -> (StatusCode, Vec<u8>) {
    if let Some((code, mut out)) = logged(a, at, line) {
        if let Some(c) = cosigned {
            // `{"checkpoint":` and the checkpoint's JSON string, then a comma.
            let at = b"{\"checkpoint\":".len() + a.checkpoint.len() + 1;
            let member: &[u8] = if c {
                b"\"cosigned\":true,"
            } else {
                b"\"cosigned\":false,"
            };
            out.splice(at..at, member.iter().copied());
        }
        return (code, out);
    }
    let (code, mut v) = answer(&a.outcomes[at], a);
    if let Some(n) = line {
        v["line"] = json!(n);
    }
    (code, v.to_string().into_bytes())
}

/// One receipt's answer where it is in the log, with its proof: the
/// members [`answer`] gives, then `inclusion_proof`, the `leaf_hash` it
/// starts from and the `checkpoint` whose root it reaches (and a JSON
/// Lines answer's `line`), in the order serde_json writes an object's
/// (sorted), written straight into bytes (the answer every write of a
/// busy log gets: its JSON built as a tree cost more than the rest of the
/// response, and each piece checked as UTF-8 on its way into a string
/// cost a tenth of it).
fn logged(a: &Appended, at: usize, line: Option<usize>) -> Option<(StatusCode, Vec<u8>)> {
    use std::io::Write as _;
    let (code, status, index, sha256, leaf) = placed(a.outcomes.get(at)?)?;
    let proof = a.proofs.get(at)?.as_ref()?;
    let mut out = Vec::with_capacity(200 + proof.len() * 47 + a.checkpoint.len());
    out.extend_from_slice(b"{\"checkpoint\":");
    out.extend_from_slice(a.checkpoint.as_bytes());
    out.extend_from_slice(b",\"inclusion_proof\":[");
    for (i, h) in proof.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        push_base64(&mut out, h);
        out.push(b'"');
    }
    let _ = write!(out, "],\"index\":{index},\"leaf_hash\":\"");
    push_base64(&mut out, leaf);
    out.extend_from_slice(b"\",");
    if let Some(n) = line {
        let _ = write!(out, "\"line\":{n},");
    }
    let _ = write!(
        out,
        "\"sha256\":\"{}\",\"size\":{},\"status\":\"{status}\"}}",
        chit_core::digest::hex(sha256),
        a.size
    );
    Some((code, out))
}

/// Appends a hash in base64, encoded in place: the engine's
/// `encode_string` goes through a chunked writer (a zeroed buffer and a
/// UTF-8 check a call), which cost an answer of 17 hashes more than its
/// hashing.
fn push_base64(out: &mut Vec<u8>, h: &chit_log::Hash) {
    let start = out.len();
    // 44 bytes hold any 32 bytes' base64.
    out.resize(start + 44, 0);
    let n = B64.encode_slice(h, &mut out[start..]).unwrap_or(0);
    out.truncate(start + n);
}

/// A refusal: the verdict line `chit verify --json` gives, with a status.
fn refused(r: &chit_core::Report) -> Value {
    let mut line = Vec::new();
    chit_core::report::json::verdict_line(Some("request"), None, None, Ok(r), &mut line);
    let mut v: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.insert("status".into(), "refused".into());
    }
    v
}

pub(super) fn count(state: &AppState, o: &Outcome) {
    let c = match o {
        Outcome::Appended { .. } => &state.metrics.appended,
        Outcome::Duplicate { .. } => &state.metrics.present,
        Outcome::Refused(_) => &state.metrics.refused,
        Outcome::Unreadable(_) => &state.metrics.unreadable,
    };
    c.inc();
}

/// The token a write was made with, left on its response for the access
/// log (so the token is looked up once a request).
#[derive(Clone)]
pub struct TokenName(pub Arc<super::tokens::Token>);

/// `POST /v1/entries`.
pub async fn post_entries(State(state): State<Shared>, req: axum::extract::Request) -> Response {
    let tok = match token(&state, req.headers()) {
        Ok(t) => t.clone(),
        Err(r) => return r,
    };
    let name = TokenName(tok.clone());
    let mut r = entries(state, tok, req).await;
    r.extensions_mut().insert(name);
    r
}

/// `POST /v1/entries` once its token is known: the body is read only
/// while the token's bucket holds a receipt.
async fn entries(
    state: Shared,
    tok: Arc<super::tokens::Token>,
    req: axum::extract::Request,
) -> Response {
    if let Err(wait) = state.buckets.ready(&tok) {
        return closing(over_rate(&tok, wait));
    }
    let lines = is_lines(req.headers());
    let wait_cosigned = req
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "wait=cosigned"));
    // The answer may stream after its head is sent: it ends by the
    // request's deadline too.
    let deadline = tokio::time::Instant::now() + state.request_timeout;
    let limit = route_limit(lines);
    let (body, held) = match read_body(&state, req, limit, too_large).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    if lines {
        return super::lines::append(state, tok, body, held, deadline).await;
    }
    if let Err(wait) = state.buckets.take(&tok) {
        return over_rate(&tok, wait);
    }
    let handled = match submit(&state, tok, vec![(1, body.whole())]).await {
        Ok(h) => h,
        Err(why) => return error(StatusCode::SERVICE_UNAVAILABLE, why.to_string()),
    };
    drop(held);
    let Handled {
        mut forbidden,
        appended,
    } = handled;
    if let Some(why) = forbidden[0].take() {
        return error(StatusCode::FORBIDDEN, why);
    }
    let a = appended.expect("one submission sent");
    if let (Some(w), true) = (&state.witnessing, wait_cosigned) {
        if let Some(r) = cosigned_answer(&state, w, &a, deadline).await {
            return r;
        }
    }
    let cosigned = state
        .witnessing
        .as_ref()
        .map(|w| w.cosigned_size() >= a.size);
    let (code, body) = answered(&a, 0, None, cosigned);
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// `POST /v1/entries?wait=cosigned`: the answer once a checkpoint that
/// covers the entry has the quorum's cosignatures, with its inclusion
/// proof under that checkpoint (and `"cosigned": true`); `None` (the
/// usual answer, `"cosigned": false`) when none has by the request's
/// deadline, or for an answer that places nothing.
async fn cosigned_answer(
    state: &Shared,
    w: &Arc<super::witnessing::Witnessing>,
    a: &Appended,
    deadline: tokio::time::Instant,
) -> Option<Response> {
    let (code, _, index, _, _) = placed(a.outcomes.first()?)?;
    let mut rx = w.cosigned.clone();
    // Leave a moment of the deadline to answer in.
    let until = deadline - std::time::Duration::from_millis(250).min(state.request_timeout / 4);
    let cosigned = tokio::time::timeout_at(until, async {
        loop {
            if let Some(c) = rx.borrow_and_update().clone() {
                if c.size > index {
                    return Some(c);
                }
            }
            if rx.changed().await.is_err() {
                return None;
            }
        }
    })
    .await
    .ok()
    .flatten()?;
    let size = cosigned.size;
    let reader = state.clone();
    let proof = blocking(move || {
        let mut log = reader.reader.lock().unwrap_or_else(|p| p.into_inner());
        log.inclusion_proof(index, size).map_err(|e| e.to_string())
    })
    .await
    .ok()?
    .ok()?;
    let mut v = answer(&a.outcomes[0], a).1;
    v["checkpoint"] = json!(String::from_utf8_lossy(&cosigned.note));
    v["cosigned"] = json!(true);
    v["inclusion_proof"] = json!(proof.iter().map(|h| B64.encode(h)).collect::<Vec<_>>());
    v["size"] = json!(size);
    Some(
        (
            code,
            [(header::CONTENT_TYPE, "application/json")],
            v.to_string(),
        )
            .into_response(),
    )
}

/// The most bytes a `POST /v1/entries` body may hold: one entry, or
/// JSON Lines of them.
fn route_limit(lines: bool) -> usize {
    if lines {
        super::MAX_BODY
    } else {
        chit_log::tiles::MAX_ENTRY_BYTES
    }
}

/// Checks `inputs` (each with the line of the request it starts on) and
/// sends what may be appended to the sequencer: what each came to, or why
/// nothing of it was written.
pub(super) async fn submit(
    state: &Shared,
    tok: Arc<super::tokens::Token>,
    inputs: Vec<(usize, Bytes)>,
) -> Result<Handled, super::sequencer::WriteError> {
    // Checked on the check threads, which hand what is to be appended
    // straight to the sequencer: this task wakes once, for the answer.
    let checker = state.checker.clone();
    let jobs = state.jobs.clone();
    // Counted until its job is queued: a short batch waits for it.
    let checking = state.checking.enter();
    let (tx, rx) = oneshot::channel::<Result<Handled, super::sequencer::WriteError>>();
    rayon::spawn(move || {
        let checked = checker.check_lines(inputs);
        // A kind this token may not submit is answered, never appended.
        let mut forbidden = vec![None; checked.len()];
        let mut send = Vec::new();
        for (i, c) in checked.into_iter().enumerate() {
            if let Admission::Accept { kind, .. } = c.verdict() {
                if !tok.may_submit(kind) {
                    forbidden[i] = Some(format!("token {} may not submit {kind}", tok.name));
                    continue;
                }
            }
            send.push(c);
        }
        if send.is_empty() {
            let _ = tx.send(Ok(Handled {
                forbidden,
                appended: None,
            }));
            return;
        }
        let job = Job {
            checked: send,
            reply: Box::new(move |r| {
                let _ = tx.send(r.map(|a| Handled {
                    forbidden,
                    appended: Some(a),
                }));
            }),
        };
        if let Err(mpsc::error::SendError(job)) = jobs.send(job) {
            (job.reply)(Err(super::sequencer::WriteError::ShuttingDown));
        }
        drop(checking);
    });
    // A job dropped unanswered, still queued: the server stopped.
    let handled = rx
        .await
        .unwrap_or(Err(super::sequencer::WriteError::Stopped));
    match &handled {
        Ok(h) => {
            if let Some(a) = &h.appended {
                state.health.wrote();
                state.metrics.size.set(super::metrics::gauge_value(a.size));
                for o in &a.outcomes {
                    count(state, o);
                }
            }
        }
        Err(why) => state.health.failed(&why.to_string()),
    }
    handled
}

/// A request's body, at most `limit` bytes, held against the server's
/// budget until the returned share is dropped, its bytes taken as they
/// arrive (a client holds what it sent, not what it announced): 413 past
/// the limit (as soon as its length says so, else once read past it), 503
/// with Retry-After when the budget is spent (at once when the announced
/// length is more than is free), 400 when it cannot be read.
async fn read_body(
    state: &AppState,
    req: axum::extract::Request,
    limit: usize,
    too_large: fn(usize) -> Response,
) -> Result<(BodyParts, super::budget::Held), Response> {
    use http_body_util::BodyExt;
    let note = req
        .extensions()
        .get::<Arc<super::wire::FramingNote>>()
        .cloned();
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if let Some(n) = announced {
        if n > limit {
            return Err(too_large(limit));
        }
        if n > state.budget.free() {
            return Err(busy(&state.budget));
        }
    }
    let mut held = state.budget.share();
    let mut body = req.into_body();
    // Copied out of hyper's buffers as it comes, in blocks of at most 256
    // KiB: a frame keeps the whole buffer it was read into alive, some of
    // it unused, and larger blocks cost more than their size
    // (docs/decisions/serve-memory.md).
    let mut parts: Vec<Bytes> = Vec::new();
    let mut block: Vec<u8> = Vec::new();
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            let why = note
                .as_ref()
                .and_then(|n| n.framing_error())
                .unwrap_or_else(|| format!("the body could not be read: {e}"));
            closing(error(StatusCode::BAD_REQUEST, why))
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        total += data.len();
        if total > limit {
            return Err(too_large(limit));
        }
        if !held.take(data.len()) {
            return Err(busy(&state.budget));
        }
        let mut rest = &data[..];
        while !rest.is_empty() {
            if block.len() == block.capacity() {
                if !block.is_empty() {
                    parts.push(Bytes::from(std::mem::take(&mut block)));
                }
                // What is still to come where the length is announced
                // (most bodies fit one block of their size), else as much
                // as came so far: blocks double up to BLOCK.
                let stored = total - rest.len();
                let want = match announced {
                    Some(n) => n - stored,
                    None => stored.max(rest.len()).max(4096),
                };
                block.reserve_exact(want.min(BLOCK));
            }
            let n = rest.len().min(block.capacity() - block.len());
            block.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
        }
    }
    if !block.is_empty() {
        parts.push(Bytes::from(block));
    }
    Ok((BodyParts(parts), held))
}

/// The blocks a body is gathered in.
const BLOCK: usize = 256 << 10;

/// A body as it was read: its parts, in order, never copied into one
/// (a JSON Lines body is read line by line across them).
pub struct BodyParts(pub Vec<Bytes>);

impl BodyParts {
    /// The body in one piece: copied when it came in several (each part
    /// let go once copied).
    pub fn whole(mut self) -> Bytes {
        match self.0.len() {
            0 => Bytes::new(),
            1 => self.0.pop().unwrap_or_default(),
            _ => {
                let mut all = Vec::with_capacity(self.0.iter().map(Bytes::len).sum());
                for p in self.0.drain(..) {
                    all.extend_from_slice(&p);
                }
                Bytes::from(all)
            }
        }
    }
}

/// 503: the server holds as many body bytes as it may; the connection
/// ends (the rest of the body is not read).
fn busy(budget: &super::budget::Budget) -> Response {
    let mut r = closing(error(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "the server holds as many request bodies as it may at once ({} bytes, --max-in-flight): \
             try again in a moment",
            budget.limit()
        ),
    ));
    r.headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    r
}

/// Query parameters (axum's `Query`), refused with 400 in JSON that names
/// the one that does not parse.
pub struct Params<T>(pub T);

impl<T: serde::de::DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = Response;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Params<T>, Response> {
        Query::from_request_parts(parts, state)
            .await
            .map(|Query(t)| Params(t))
            .map_err(|e: QueryRejection| {
                error(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "{}; docs/serving.md lists each route's parameters",
                        e.body_text()
                    ),
                )
            })
    }
}

/// A route's one path parameter (axum's `Path<String>`), refused with 400
/// in JSON when it is not UTF-8.
pub struct PathText(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathText {
    type Rejection = Response;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<PathText, Response> {
        Path::from_request_parts(parts, state)
            .await
            .map(|Path(t)| PathText(t))
            .map_err(|e: PathRejection| error(StatusCode::BAD_REQUEST, e.body_text()))
    }
}

/// 413 for a body past `max` bytes; the connection ends with it (the rest
/// of the body is not read).
pub(super) fn too_large(max: usize) -> Response {
    let why = if max == chit_log::tiles::MAX_ENTRY_BYTES {
        format!(
            "a log entry is at most {max} bytes (tlog-tiles' entry bundles): log a smaller \
             receipt, or its digest inside one"
        )
    } else {
        format!("a body of at most {max} bytes")
    };
    closing(error(StatusCode::PAYLOAD_TOO_LARGE, why))
}

/// 413 for a `/v1/verify` body past `max` bytes, where that is less than
/// any body may be: what its check would take is more than the budget.
pub(super) fn too_large_to_check(max: usize) -> Response {
    if max >= super::MAX_BODY {
        return too_large(max);
    }
    closing(error(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "a body of at most {max} bytes: checking a document takes several times its size in \
             memory, which this server bounds (--max-in-flight); check a larger one with chit verify"
        ),
    ))
}

/// A path no route serves: 404, with the routes there are.
pub async fn not_found(uri: axum::http::Uri) -> Response {
    error(
        StatusCode::NOT_FOUND,
        format!(
            "nothing is served at {}: the routes are / (the page), /v1/entries, \
             /v1/entries/{{index}}, /v1/verify, /v1/search, /v1/streams/{{id}}, \
             /v1/rebinds, /v1/consistency, /checkpoint, /tile/..., /healthz and /metrics",
            uri.path()
        ),
    )
}

/// A route asked with a method it does not take: 405, saying what to do
/// instead (axum adds the `Allow` header).
pub async fn wrong_method(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    let instead = match uri.path() {
        "/v1/entries" => {
            "POST a receipt here (with a token) to log it; read one with \
             GET /v1/entries/{index} or /v1/entries/sha256:{hex}, find them with GET /v1/search"
        }
        "/v1/verify" => "POST a receipt here to have it checked (nothing is logged)",
        _ => "the Allow header names the methods it takes",
    };
    error(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{} does not take {method}: {instead}", uri.path()),
    )
}

/// `POST /v1/verify`: the verdict `chit verify` gives under the log's
/// policy, for a document as large as the budget can hold with its check
/// (`verify_max`, at most [`super::MAX_BODY`]) read under this server's
/// limits; nothing appended.
pub async fn post_verify(State(state): State<Shared>, req: axum::extract::Request) -> Response {
    let read = read_body(&state, req, state.verify_max, too_large_to_check);
    let (body, mut held) = match read.await {
        Ok(b) => b,
        Err(r) => return r,
    };
    // Checked only once the budget holds what its check may take beside it.
    let len = body.0.iter().map(Bytes::len).sum::<usize>();
    if !held.take(verify_cost(len) - len) {
        return busy(&state.budget);
    }
    let body = body.whole();
    let shared = state.clone();
    // The body comes back to be let go here, on the thread that read it
    // (an allocator keeps what another thread frees for a while).
    let (checked, body) = match on_cores(move || {
        // What chit verify under the log's policy says: a log bundle of
        // this log proven with its key (--log-key), its entry checked.
        let ctx = chit_core::Context {
            limits: shared.verify_limits,
            log: Some(&shared.log_keys),
            ..shared.checker.context()
        };
        (chit_core::check(&body[..], &ctx), body)
    })
    .await
    {
        Ok(c) => c,
        Err(r) => return r,
    };
    drop(body);
    drop(held);
    let mut line = Vec::new();
    let why = checked.as_ref().err().map(server_unreadable);
    let (code, result) = match &checked {
        Ok(c) => (
            if c.report.valid() {
                StatusCode::OK
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            },
            Ok(&c.report),
        ),
        Err(_) => (
            StatusCode::BAD_REQUEST,
            Err(why.as_deref().unwrap_or_default()),
        ),
    };
    let art = checked.as_ref().ok().and_then(|c| c.artifact_id.as_deref());
    chit_core::report::json::verdict_line(Some("request"), None, art, result, &mut line);
    (code, [(header::CONTENT_TYPE, "application/json")], line).into_response()
}

/// Why a document could not be read, as this server says it: a limit it
/// passed is named as the server's own.
fn server_unreadable(e: &chit_core::check::Unreadable) -> String {
    match e.limit() {
        Some(_) => format!("{e} (this server's limit)"),
        None => e.to_string(),
    }
}

/// `GET /v1/entries/{index}` and `GET /v1/entries/sha256:{hex}`: the log
/// bundle.
pub async fn get_entry(State(state): State<Shared>, PathText(which): PathText) -> Response {
    let r = blocking(move || -> Result<(String, Value), Response> {
        let mut log = state.reader.lock().unwrap_or_else(|p| p.into_inner());
        let name: chit_logstore::EntryName = which
            .parse()
            .map_err(|why| error(StatusCode::BAD_REQUEST, why))?;
        let index = log
            .locate(name)
            .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
            .ok_or_else(|| error(StatusCode::NOT_FOUND, "no entry has that content address"))?;
        match log.bundle(index) {
            Ok(b) => Ok((chit_core::digest::sha256_hex(&b.entry), b.to_json())),
            Err(chit_logstore::LogError::Proof(chit_log::ProofError::IndexOutOfRange {
                ..
            })) => Err(error(StatusCode::NOT_FOUND, format!("no entry {index}"))),
            Err(e) => Err(error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
        }
    })
    .await;
    match r {
        // The bundle holds only its own fields (`chit verify` reads it
        // strictly): the entry's content address, what the page shows and
        // searches by, goes beside it.
        Ok(Ok((sha256, v))) => (
            [(CONTENT_ADDRESS, format!("sha256:{sha256}"))],
            axum::Json(v),
        )
            .into_response(),
        Ok(Err(r)) | Err(r) => r,
    }
}

/// The header of an entry's answer that gives its content address.
pub const CONTENT_ADDRESS: &str = "chit-content-address";

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    kind: Option<String>,
    art: Option<String>,
    stream: Option<String>,
    /// RFC 3339 times: integrated at or after `since`, before `until`.
    since: Option<String>,
    until: Option<String>,
    after: Option<u64>,
    limit: Option<u32>,
}

/// `GET /v1/search?kind=&art=&stream=&since=&until=&after=&limit=`:
/// entries by the kind they were checked as, art id, packet stream and
/// integration time (labels kept beside the tree, not proven by it), in
/// index order; `next` continues the list; `indexed_upto` is the size up
/// to which the answer is complete (every entry below it is searchable).
pub async fn search(State(state): State<Shared>, Params(p): Params<SearchParams>) -> Response {
    let millis = |t: &Option<String>, what: &str| -> Result<Option<i64>, Response> {
        match t {
            None => Ok(None),
            Some(t) => chit_core::time::rfc3339_nanos(t)
                .map(|n| Some((n / 1_000_000) as i64))
                .ok_or_else(|| {
                    error(
                        StatusCode::BAD_REQUEST,
                        format!("{what} is not an RFC 3339 time"),
                    )
                }),
        }
    };
    let (since, until) = match (millis(&p.since, "since"), millis(&p.until, "until")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    // A kind no entry can be labelled with matches nothing: say so rather
    // than answer an empty page that reads as "not logged".
    if let Some(k) = p.kind.as_deref().filter(|k| !chit_core::kinds::is_label(k)) {
        return error(
            StatusCode::BAD_REQUEST,
            format!(
                "unknown kind '{k}'; an entry is labelled with one of: {}",
                chit_core::kinds::LABELS.join(", ")
            ),
        );
    }
    let limit = p.limit.unwrap_or(100).clamp(1, 1000);
    let q = chit_logstore::store::Query {
        kind: p.kind,
        art_id: p.art,
        stream_id: p.stream,
        since,
        until,
        after: p.after,
        limit,
    };
    let r = blocking(move || {
        let mut log = state.reader.lock().unwrap_or_else(|p| p.into_inner());
        // Read before the search: every entry below it was committed with
        // its label, so the search sees them all (later ones may show too).
        let (size, _) = log.store().head()?;
        log.store().search(&q).map(|hits| (size, hits))
    })
    .await;
    match r {
        Ok(Ok((indexed_upto, hits))) => {
            let next = (hits.len() == limit as usize)
                .then(|| hits.last().map(|h| h.label.index))
                .flatten();
            let hits: Vec<Value> = hits
                .iter()
                .map(|h| {
                    json!({
                        "index": h.label.index,
                        "kind": h.label.kind,
                        "art_id": h.label.art_id,
                        "stream_id": h.label.stream_id,
                        "integrated_at": chit_core::time::format_unix_utc((h.integrated_at / 1000) as u64),
                    })
                })
                .collect();
            axum::Json(json!({"hits": hits, "next": next, "indexed_upto": indexed_upto}))
                .into_response()
        }
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(r) => r,
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RebindParams {
    todo_id: Option<String>,
}

/// Lattice executor packets read for one rebind answer, at most.
const REBIND_SCAN: u32 = 5_000;

/// `GET /v1/rebinds?todo_id=`: the Lattice executor packets of one todo in
/// this log, as chit-core's X6 reads them (sorted by epoch), each with what
/// X6 finds against the packet before it (the fields it names, `valid`
/// whether the packet is valid on its own), and X6's findings over all of
/// them. The page draws its rebind table from this answer, so that what is
/// red there is what `chit verify` says. At most the first 5,000 executor
/// packets of the log are read (`complete` says whether that was all).
pub async fn get_rebinds(State(state): State<Shared>, Params(p): Params<RebindParams>) -> Response {
    use chit_core::across::Origin;
    use chit_core::kinds::executor_packet::{rebind_chain, RebindFacts};
    let Some(todo_id) = p.todo_id else {
        return error(
            StatusCode::BAD_REQUEST,
            "name the todo: /v1/rebinds?todo_id=ID",
        );
    };
    let checker = state.checker.clone();
    let r = blocking(move || -> Result<Value, String> {
        // Each packet's facts, its packet_digest and its entry index.
        let mut found: Vec<(RebindFacts, Option<String>, u64)> = Vec::new();
        const PAGE: u32 = 500;
        // One page of the log's executor packets after `after`: how many
        // the search found, the last one's index, and the entries read.
        type Page = (usize, Option<u64>, Vec<chit_logstore::store::Entry>);
        let page = |after: Option<u64>, limit: u32| -> Result<Page, String> {
            let mut log = state.reader.lock().unwrap_or_else(|p| p.into_inner());
            let store = log.store();
            let hits = store
                .search(&chit_logstore::store::Query {
                    kind: Some(chit_core::kinds::executor_packet::KIND.to_string()),
                    art_id: None,
                    stream_id: None,
                    since: None,
                    until: None,
                    after,
                    limit,
                })
                .map_err(|e| e.to_string())?;
            let mut entries = Vec::with_capacity(hits.len());
            for h in &hits {
                if let Some(e) = store.entry(h.label.index).map_err(|e| e.to_string())? {
                    entries.push(e);
                }
            }
            Ok((hits.len(), hits.last().map(|h| h.label.index), entries))
        };
        let mut after = None;
        let mut read = 0u32;
        let complete = loop {
            let (hits, last, entries) = page(after, PAGE)?;
            after = last.or(after);
            read += hits as u32;
            for e in &entries {
                // Only this todo's packets are checked: a packet whose
                // todo_id reads, as plain JSON, as another todo's is not it
                // (one that does not read is checked, and chit-core decides).
                let plain = serde_json::from_slice::<Value>(&e.data).ok();
                let todo = plain.as_ref().and_then(|v| v.get("todo_id")?.as_str());
                if todo.is_some_and(|t| t != todo_id) {
                    continue;
                }
                let Ok(checked) = checker.checked(&e.data) else {
                    continue;
                };
                let Some(mut f) = checked.facts.and_then(|f| f.into_rebind()) else {
                    continue;
                };
                if f.todo_id != todo_id {
                    continue;
                }
                // By entry index, as numbers (X6 orders a tie by source).
                f.source = Origin::new("entry", Some(e.index as usize));
                let digest = plain
                    .as_ref()
                    .and_then(|v| v["packet_digest"].as_str().map(str::to_string));
                found.push((f, digest, e.index));
            }
            if hits < PAGE as usize {
                break true;
            }
            if read >= REBIND_SCAN {
                // Complete only if the search has nothing after the last.
                break page(after, 1)?.0 == 0;
            }
        };
        // In X6's order, each paired with the one before it: chit-core's.
        // Each packet's source is its entry index.
        let mut digests: BTreeMap<u64, Option<String>> = BTreeMap::new();
        let facts = found
            .into_iter()
            .map(|(f, digest, index)| {
                digests.insert(index, digest);
                f
            })
            .collect();
        let chain = rebind_chain(facts);
        let packets: Vec<Value> = chain
            .packets
            .iter()
            .map(|(f, flagged)| {
                let index = f.source.line.unwrap_or(0) as u64;
                let digest = digests.get(&index).cloned().flatten();
                json!({
                    "index": index,
                    "packet_id": f.packet_id,
                    "plan_epoch": f.plan_epoch,
                    "plan_ref": f.plan_ref,
                    "context_content_digest": f.context_content_digest,
                    "packet_digest": digest,
                    "valid": f.valid,
                    "flagged": flagged,
                })
            })
            .collect();
        let findings: Vec<Value> = chain
            .report
            .errors
            .into_iter()
            .map(|e| json!({"rule": e.rule, "path": e.path, "message": e.message}))
            .collect();
        Ok(json!({
            "todo_id": todo_id,
            "packets": packets,
            "findings": findings,
            "complete": complete,
        }))
    })
    .await;
    match r {
        Ok(Ok(v)) => axum::Json(v).into_response(),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
        Err(r) => r,
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamParams {
    limit: Option<u32>,
}

/// `GET /v1/streams/{stream_id}?limit=`: a packet stream as the log holds
/// it, by sequence (at most `limit`, 2,000 by default and at most): each
/// packet's sequence, packet id, previous packet id and entry index. Read
/// from the log's stream table, entries unread: what the page draws a
/// stream from.
pub async fn get_stream(
    State(state): State<Shared>,
    PathText(stream_id): PathText,
    Params(p): Params<StreamParams>,
) -> Response {
    let limit = p.limit.unwrap_or(STREAM_LIMIT).clamp(1, STREAM_LIMIT);
    let id = stream_id.clone();
    let r = blocking(move || {
        let mut log = state.reader.lock().unwrap_or_else(|p| p.into_inner());
        log.store().stream(&id, limit)
    })
    .await;
    match r {
        Ok(Ok(rows)) => {
            let packets: Vec<Value> = rows
                .iter()
                .map(|p| {
                    json!({
                        "sequence": p.sequence,
                        "packet_id": p.packet_id,
                        "prev_packet_id": p.prev_packet_id,
                        "index": p.index,
                    })
                })
                .collect();
            axum::Json(json!({"stream_id": stream_id, "packets": packets})).into_response()
        }
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(r) => r,
    }
}

/// The most packets `GET /v1/streams/{id}` answers.
const STREAM_LIMIT: u32 = 2000;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sizes {
    from: u64,
    to: u64,
}

/// `GET /v1/consistency?from=&to=`.
pub async fn get_consistency(State(state): State<Shared>, Params(q): Params<Sizes>) -> Response {
    let r = blocking(move || -> Result<Value, Response> {
        let mut log = state.reader.lock().unwrap_or_else(|p| p.into_inner());
        let (size, _) = log
            .head()
            .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        if q.from > q.to || q.to > size {
            return Err(error(
                StatusCode::BAD_REQUEST,
                format!("need from <= to <= {size} (the log's size)"),
            ));
        }
        let fail =
            |e: chit_logstore::LogError| error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
        let proof = log.consistency_proof(q.from, q.to).map_err(fail)?;
        let (a, b) = (
            log.root(q.from).map_err(fail)?,
            log.root(q.to).map_err(fail)?,
        );
        Ok(json!({
            "old": q.from,
            "new": q.to,
            "old_root": B64.encode(a),
            "new_root": B64.encode(b),
            "consistency_proof": proof.iter().map(|h| B64.encode(h)).collect::<Vec<_>>(),
        }))
    })
    .await;
    match r {
        Ok(Ok(v)) => axum::Json(v).into_response(),
        Ok(Err(r)) | Err(r) => r,
    }
}

/// `GET /checkpoint`: the latest signed checkpoint, as signed; with
/// witnesses, the newest whose cosignatures meet the policy's quorum
/// (the latest, until one has).
pub async fn get_checkpoint(State(state): State<Shared>) -> Response {
    // With a quorum of none every checkpoint counts as cosigned: the latest.
    let cosigned = state
        .witnessing
        .as_ref()
        .filter(|w| !w.policy.quorum_is_none())
        .and_then(|w| w.cosigned.borrow().clone());
    if let Some(c) = cosigned {
        return (
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            c.note.clone(),
        )
            .into_response();
    }
    let r = blocking(move || {
        let mut log = state.reader.lock().unwrap_or_else(|p| p.into_inner());
        log.head()
    })
    .await;
    match r {
        Ok(Ok((_, note))) => (
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            note,
        )
            .into_response(),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(r) => r,
    }
}

/// `GET /tile/…`: a hash tile or an entry bundle of the current tree; a
/// partial tile by its width (`N.p/W`), as tlog-tiles asks.
pub async fn get_tile(State(state): State<Shared>, PathText(rest): PathText) -> Response {
    let Some(t) = Tile::parse_path(&format!("tile/{rest}")) else {
        return error(StatusCode::NOT_FOUND, "not a tile path");
    };
    let r = blocking(move || -> Result<Vec<u8>, Response> {
        let mut log = state.reader.lock().unwrap_or_else(|p| p.into_inner());
        let (size, _) = log
            .head()
            .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        if !t.in_tree(size) {
            return Err(error(StatusCode::NOT_FOUND, "no such tile in the log yet"));
        }
        crate::shared::logs::tile_bytes(&mut log, &t)
            .map_err(|f| error(StatusCode::INTERNAL_SERVER_ERROR, f.message))
    })
    .await;
    match r {
        Ok(Ok(data)) => {
            // A full tile never changes; the right edge's partial ones are
            // not kept by caches (nor is the checkpoint).
            let cache = if t.width == chit_log::tiles::TILE_WIDTH {
                "public, max-age=31536000, immutable"
            } else {
                "no-cache"
            };
            (
                [
                    (header::CONTENT_TYPE, "application/octet-stream"),
                    (header::CACHE_CONTROL, cache),
                ],
                data,
            )
                .into_response()
        }
        Ok(Err(r)) | Err(r) => r,
    }
}

/// `GET /metrics`: Prometheus text.
pub async fn metrics(State(state): State<Shared>) -> Response {
    let mut text = state.metrics.text(state.budget.held());
    if let Some(w) = &state.witnessing {
        text = super::witnessing::with_metrics(w, text);
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// What every request goes through, in one layer (each layer costs a busy
/// server a little on every request):
///
/// - a body announced larger than the server reads is refused from its
///   Content-Length, before a byte of it is read, and the connection ends
///   (a body that grows past the limit without announcing it is cut off by
///   the body limit);
/// - the request, its body included, is given `timeout` to be answered;
/// - every response is counted by status (for `/metrics`) and logged, one
///   event a request (target `chit::access`: method, path, status,
///   milliseconds, and the token's name where one was given and known).
pub async fn around(
    State((state, timeout)): State<(Shared, std::time::Duration)>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    observed(&state, timeout, req, |req| next.run(req)).await
}

/// `POST /v1/entries` as the server answers it: observed as [`around`]
/// observes every routed request, and answered by the route's handler,
/// [`post_entries`], but not through the router (see `serve::Front`).
pub async fn post_entries_direct(
    state: Shared,
    timeout: std::time::Duration,
    req: axum::extract::Request,
) -> Response {
    let handler = state.clone();
    observed(&state, timeout, req, move |req| {
        post_entries(State(handler), req)
    })
    .await
}

/// [`around`]'s work around `run`, which answers the request unless its
/// announced body is past its route's limit or it takes longer than
/// `timeout`.
async fn observed<F, A>(
    state: &AppState,
    timeout: std::time::Duration,
    req: axum::extract::Request,
    run: F,
) -> Response
where
    F: FnOnce(axum::extract::Request) -> A,
    A: std::future::Future<Output = Response>,
{
    let logged = tracing::enabled!(target: "chit::access", tracing::Level::INFO);
    let started = std::time::Instant::now();
    let seen = logged.then(|| (req.method().clone(), req.uri().path().to_string()));
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    // Only these routes read a body; the others never do, whatever it is.
    // A length within every route's limit needs no route's.
    let post = req.method() == axum::http::Method::POST;
    let within_all = chit_log::tiles::MAX_ENTRY_BYTES.min(state.verify_max) as u64;
    let over = announced.filter(|&n| n > within_all).and_then(|n| {
        let limit = match req.uri().path() {
            super::ENTRIES if post => route_limit(is_lines(req.headers())),
            "/v1/verify" if post => state.verify_max,
            _ => super::MAX_BODY,
        };
        (n > limit as u64).then_some(limit)
    });
    let mut r = if let Some(limit) = over {
        if post && req.uri().path() == "/v1/verify" {
            too_large_to_check(limit)
        } else {
            too_large(limit)
        }
    } else {
        match tokio::time::timeout(timeout, run(req)).await {
            Ok(r) => r,
            Err(_) => closing(error(
                StatusCode::REQUEST_TIMEOUT,
                "the request took too long (its body, or its answer)",
            )),
        }
    };
    r.headers_mut()
        .entry(header::X_CONTENT_TYPE_OPTIONS)
        .or_insert(header::HeaderValue::from_static("nosniff"));
    let ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1e3;
    let token = r.extensions().get::<TokenName>().map(|t| t.0.name.as_str());
    match &seen {
        Some((method, path)) => {
            state.record(r.status().as_u16(), method.as_str(), path, Some(ms), token)
        }
        None => state.count_status(r.status().as_u16()),
    }
    r
}

impl AppState {
    /// One answer: counted by status (for `/metrics`) and logged (target
    /// `chit::access`), as every answer is, including those of
    /// [`super::wire`].
    fn record(&self, status: u16, method: &str, path: &str, ms: Option<f64>, token: Option<&str>) {
        tracing::info!(
            target: "chit::access",
            method = %method,
            path = %path,
            status,
            ms,
            token,
        );
        self.count_status(status);
    }

    fn count_status(&self, status: u16) {
        self.metrics.answered(status);
    }
}

impl super::wire::Observe for AppState {
    fn refused(&self, r: &super::wire::Refusal) {
        self.record(
            r.status,
            r.method.as_deref().unwrap_or("-"),
            r.path.as_deref().unwrap_or("-"),
            None,
            None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body is JSON Lines when its media type names jsonl or ndjson, in
    /// any case.
    #[test]
    fn json_lines_is_told_by_the_media_type() {
        for (value, lines) in [
            ("application/jsonl", true),
            ("application/x-ndjson", true),
            ("Application/JSONL; charset=utf-8", true),
            ("application/x-jsonlines", true),
            ("application/json", false),
            ("application/jsonp", false),
            ("text/plain", false),
            ("j", false),
            ("", false),
        ] {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, value.parse().unwrap());
            assert_eq!(is_lines(&h), lines, "{value:?}");
        }
        assert!(!is_lines(&HeaderMap::new()));
    }

    /// The answer written by hand is, byte for byte, the one serde_json
    /// writes from the same members.
    #[test]
    fn a_logged_answer_is_the_json_of_its_members() {
        let proof: Vec<chit_log::Hash> = (0..17u8).map(|i| [i.wrapping_mul(37); 32]).collect();
        for (outcome, proofs) in [
            (
                Outcome::Appended {
                    index: 41,
                    sha256: [7; 32],
                    leaf: [0xfe; 32],
                    status: chit_core::report::Status::Valid,
                },
                vec![Some(proof.clone())],
            ),
            (
                Outcome::Duplicate {
                    index: 0,
                    sha256: [255; 32],
                    leaf: [0xfe; 32],
                },
                vec![Some(Vec::new())],
            ),
        ] {
            let a = Appended {
                outcomes: vec![outcome],
                proofs,
                size: 42,
                checkpoint: super::super::sequencer::json_string(
                    b"log.example/\"x\"\n42\nabc=\n\n\xe2\x80\x94 log.example/ sig\n\x01\xff",
                ),
            };
            for line in [None, Some(1), Some(4096)] {
                let (code, body) = logged(&a, 0, line).unwrap();
                let (want_code, mut v) = answer(&a.outcomes[0], &a);
                let p = a.proofs[0].as_ref().unwrap();
                v["inclusion_proof"] = json!(p.iter().map(|h| B64.encode(h)).collect::<Vec<_>>());
                assert_eq!(v["leaf_hash"], json!(B64.encode([0xfe; 32])));
                v["checkpoint"] = json!(String::from_utf8_lossy(
                    b"log.example/\"x\"\n42\nabc=\n\n\xe2\x80\x94 log.example/ sig\n\x01\xff"
                ));
                if let Some(n) = line {
                    v["line"] = json!(n);
                }
                assert_eq!(code, want_code);
                assert_eq!(
                    String::from_utf8(body).unwrap(),
                    serde_json::to_string(&v).unwrap()
                );
            }
        }
    }
}
