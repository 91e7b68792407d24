//! C2SP `tlog-witness`: what a witness decides about an `add-checkpoint`
//! request, with no I/O. The server around it keeps the latest cosigned
//! checkpoint of each origin and holds one origin's lock from
//! [`check_consistent`] to the persisting of the new latest checkpoint, so
//! two submissions from one old size cannot both be cosigned.
//!
//! The request body:
//!
//! ```text
//! old <size>
//! <consistency proof hashes, base64, at most 63>
//!
//! <the checkpoint, signed by the log>
//! ```
//!
//! and the answers, in the order the specification checks them:
//!
//! | status | when |
//! | --- | --- |
//! | 400 | the body is malformed, or the old size exceeds the checkpoint's |
//! | 404 | the checkpoint's origin is not a log of the witness's policy |
//! | 403 | no signature by the log's key, or one by its key that fails |
//! | 409 | the old size is not the latest cosigned size (sent back as `text/x.tlog.size`) |
//! | 422 | a size-0 checkpoint whose root is not the empty tree's, a proof from size 0, an equal size with another root, or a consistency proof that fails |
//! | 200 | cosigned: the witness's cosignature lines |

use crate::checkpoint::Checkpoint;
use crate::lines::parse_decimal;
use crate::lines::{LineError, Lines};
use crate::note::{self, NoteError, Verifier};
use crate::policy::Policy;
use crate::tree::{verify_consistency, Hash, EMPTY_ROOT};

/// The most consistency proof lines a request may carry.
pub const MAX_PROOF_LINES: usize = 63;
/// The largest request body a witness reads: the proof lines and the
/// largest note.
pub const MAX_REQUEST_BYTES: usize = 32 + MAX_PROOF_LINES * 46 + note::MAX_NOTE_BYTES;
/// The content type of a 409's body.
pub const SIZE_CONTENT_TYPE: &str = "text/x.tlog.size";

/// An `add-checkpoint` request, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddCheckpoint {
    pub old_size: u64,
    pub proof: Vec<Hash>,
    /// The signed checkpoint note, as sent.
    pub note: Vec<u8>,
}

/// Why a witness does not cosign: each is one HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("unknown log {0:?}")]
    UnknownLog(String),
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("the latest cosigned size is {0}")]
    Conflict(u64),
    #[error("unprocessable: {0}")]
    Unprocessable(String),
}

impl Refusal {
    /// The HTTP status the specification gives it.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::BadRequest(_) => 400,
            Refusal::UnknownLog(_) => 404,
            Refusal::Forbidden(_) => 403,
            Refusal::Conflict(_) => 409,
            Refusal::Unprocessable(_) => 422,
        }
    }
}

impl AddCheckpoint {
    /// The request's bytes, as a log sends them.
    pub fn to_bytes(&self) -> Vec<u8> {
        use base64::Engine;
        let mut out = format!("old {}\n", self.old_size);
        for h in &self.proof {
            out.push_str(&base64::engine::general_purpose::STANDARD.encode(h));
            out.push('\n');
        }
        out.push('\n');
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(&self.note);
        bytes
    }

    /// Reads a request body strictly: `old <decimal>`, at most 63 lines of
    /// canonical base64 of 32 bytes, an empty line, the note.
    pub fn parse(body: &[u8]) -> Result<AddCheckpoint, Refusal> {
        let bad = |m: &str| Refusal::BadRequest(m.to_string());
        if body.len() > MAX_REQUEST_BYTES {
            return Err(bad("the body is too large"));
        }
        let mut lines = Lines::new(body);
        let ended = |e: LineError| match e {
            LineError::Ended => bad("the body ends before the checkpoint"),
            LineError::TooMany => bad("more than 63 consistency proof lines"),
            LineError::NotAHash => bad("a proof line is not base64 of 32 bytes"),
        };
        let old_size = lines
            .line()
            .map_err(ended)?
            .strip_prefix(b"old ")
            .and_then(parse_decimal::<u64>)
            .ok_or_else(|| bad("the first line is not old <size>"))?;
        let proof = lines.hashes(MAX_PROOF_LINES).map_err(ended)?;
        let rest = lines.rest();
        Ok(AddCheckpoint {
            old_size,
            proof,
            note: rest.to_vec(),
        })
    }
}

/// A 409's body: the latest cosigned size in canonical decimal, then a
/// newline.
pub fn size_body(size: u64) -> String {
    format!("{size}\n")
}

/// Reads a 409's body ([`size_body`]) strictly.
pub fn parse_size(body: &[u8]) -> Option<u64> {
    body.strip_suffix(b"\n").and_then(parse_decimal::<u64>)
}

/// A request whose checkpoint a log of the policy signed.
#[derive(Debug, Clone)]
pub struct Signed {
    pub checkpoint: Checkpoint,
    /// The checkpoint's note text (what is cosigned).
    pub text: String,
    /// The log's signatures on it that verified, in note order.
    pub log_signatures: Vec<note::Signature>,
}

/// The checks that need no state: the note and checkpoint well formed
/// (400), the origin a log of the policy (404), signed by its key with no
/// failing signature by it (403), the old size at most the new (400).
pub fn check_signed(req: &AddCheckpoint, policy: &Policy) -> Result<Signed, Refusal> {
    let bad = |e: &dyn std::fmt::Display| Refusal::BadRequest(e.to_string());
    let parsed = note::parse(&req.note).map_err(|e| bad(&e))?;
    let checkpoint = Checkpoint::parse(&parsed.text).map_err(|e| bad(&e))?;
    let logs: Vec<&dyn Verifier> = policy
        .logs_of(&checkpoint.origin)
        .into_iter()
        .map(|(_, l)| &l.verifier as &dyn Verifier)
        .collect();
    if logs.is_empty() {
        return Err(Refusal::UnknownLog(checkpoint.origin));
    }
    let opened = note::open(&req.note, &logs).map_err(|e| match e {
        NoteError::NoKnownSignature { .. } => {
            Refusal::Forbidden("no signature by the log's key".into())
        }
        e => Refusal::Forbidden(e.to_string()),
    })?;
    if checkpoint.size > i64::MAX as u64 {
        return Err(Refusal::BadRequest(
            "a tree size above 2^63 - 1, which no log reaches".into(),
        ));
    }
    if req.old_size > checkpoint.size {
        return Err(Refusal::BadRequest(format!(
            "the old size {} exceeds the checkpoint's {}",
            req.old_size, checkpoint.size
        )));
    }
    Ok(Signed {
        checkpoint,
        text: opened.text,
        log_signatures: opened.verified.into_iter().map(|(_, s)| s).collect(),
    })
}

/// The checks against the latest cosigned checkpoint of the origin
/// (`None`: never cosigned, size 0): the old size is its size (409), and
/// the new checkpoint is consistent with it (422).
pub fn check_consistent(
    req: &AddCheckpoint,
    signed: &Signed,
    latest: Option<(u64, Hash)>,
) -> Result<(), Refusal> {
    let (size, root) = latest.unwrap_or((0, EMPTY_ROOT));
    if req.old_size != size {
        return Err(Refusal::Conflict(size));
    }
    let cp = &signed.checkpoint;
    if cp.size == 0 && cp.root != EMPTY_ROOT {
        return Err(Refusal::Unprocessable(
            "a checkpoint of size 0 whose root is not the empty tree's".into(),
        ));
    }
    if size == 0 && !req.proof.is_empty() {
        return Err(Refusal::Unprocessable(
            "a consistency proof from size 0 must be empty".into(),
        ));
    }
    verify_consistency(size, cp.size, &root, &cp.root, &req.proof).map_err(|e| {
        Refusal::Unprocessable(format!(
            "the checkpoint of size {} is not consistent with the one of size {size}: {e}",
            cp.size
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::note::NoteSigner;
    use crate::tree::{consistency_proof, MemoryTree};

    fn policy(log: &NoteSigner) -> Policy {
        Policy::parse(format!("log {}\nquorum none\n", log.verifier_key()).as_bytes()).unwrap()
    }

    #[test]
    fn each_refusal_has_its_status() {
        let log = NoteSigner::from_seed("log.example/w", &[1; 32]).unwrap();
        let p = policy(&log);
        let mut tree = MemoryTree::new();
        for i in 0..10u8 {
            tree.push(&[i]);
        }
        let cp = |n: u64| Checkpoint::new("log.example/w", n, tree.root(n).unwrap());
        let req = |old: u64, new: u64, proof: Vec<Hash>| AddCheckpoint {
            old_size: old,
            proof,
            note: cp(new).sign(&log).unwrap(),
        };
        let status = |r: &AddCheckpoint, latest: Option<(u64, Hash)>| {
            let parsed = AddCheckpoint::parse(&r.to_bytes()).unwrap();
            assert_eq!(&parsed, r);
            check_signed(&parsed, &p)
                .and_then(|s| check_consistent(&parsed, &s, latest))
                .map(|()| 200)
                .unwrap_or_else(|e| e.status())
        };
        let latest4 = Some((4, tree.root(4).unwrap()));
        let proof4_10 = consistency_proof(&tree, 4, 10).unwrap();
        assert_eq!(status(&req(0, 4, vec![]), None), 200);
        assert_eq!(status(&req(4, 10, proof4_10.clone()), latest4), 200);
        assert_eq!(status(&req(4, 4, vec![]), latest4), 200);
        assert_eq!(status(&req(0, 10, vec![]), latest4), 409);
        assert_eq!(status(&req(5, 4, vec![]), latest4), 400);
        assert_eq!(status(&req(0, 4, vec![[0; 32]]), None), 422);
        let mut wrong = proof4_10.clone();
        wrong[0][0] ^= 1;
        assert_eq!(status(&req(4, 10, wrong), latest4), 422);
        assert_eq!(
            status(&req(4, 4, vec![]), Some((4, tree.root(3).unwrap()))),
            422
        );
        let empty_bad = AddCheckpoint {
            old_size: 0,
            proof: vec![],
            note: Checkpoint::new("log.example/w", 0, [1; 32])
                .sign(&log)
                .unwrap(),
        };
        assert_eq!(status(&empty_bad, None), 422);
        let other = NoteSigner::from_seed("log.example/x", &[2; 32]).unwrap();
        let unknown = AddCheckpoint {
            note: Checkpoint::new("log.example/x", 4, tree.root(4).unwrap())
                .sign(&other)
                .unwrap(),
            ..req(0, 4, vec![])
        };
        assert_eq!(status(&unknown, None), 404);
        let impostor = NoteSigner::from_seed("log.example/w", &[3; 32]).unwrap();
        let forged = AddCheckpoint {
            note: cp(4).sign(&impostor).unwrap(),
            ..req(0, 4, vec![])
        };
        assert_eq!(status(&forged, None), 403);
        let mut broken = req(0, 4, vec![]);
        let at = broken.note.len() - 6;
        broken.note[at] = if broken.note[at] == b'A' { b'B' } else { b'A' };
        assert_eq!(status(&broken, None), 403);
        // A size no log reaches (it could not be stored).
        let huge = AddCheckpoint {
            old_size: 0,
            proof: vec![],
            note: Checkpoint::new("log.example/w", 1 << 63, [1; 32])
                .sign(&log)
                .unwrap(),
        };
        assert_eq!(status(&huge, None), 400);
        // Malformed bodies.
        for body in [
            &b"old 01\n\nx"[..],
            b"old 1\nAAAA\n\nx",
            b"new 1\n\nx",
            b"old 1\n",
            b"old 1",
        ] {
            assert_eq!(AddCheckpoint::parse(body).unwrap_err().status(), 400);
        }
        let many = format!(
            "old 1\n{}\n",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n".repeat(64)
        );
        assert!(AddCheckpoint::parse(many.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("63"));
    }
}
