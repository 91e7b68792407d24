//! C2SP `tlog-checkpoint` and `tlog-cosignature`.
//!
//! A checkpoint is the text of a signed note:
//!
//! ```text
//! <origin>
//! <tree size, decimal, no leading zero>
//! <root hash, standard padded base64 of 32 bytes>
//! [extension lines…]
//! ```
//!
//! A signed checkpoint proves that the holder of the log's key stated this
//! root for this size under this origin; nothing more. It carries no time.
//!
//! A witness cosignature (C2SP `tlog-cosignature`) is a note signature
//! line by a witness's key; [`crate::cosignature`] makes and checks them.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

pub use crate::cosignature::{
    cosignature_time, cosigned_message, CosignatureVerifier, Cosigner, MLDSA44_SIGNATURE_BYTES,
};
use crate::note::{self, decode_b64, NoteError, NoteSigner, Signature, Verifier};
use crate::tree::Hash;

/// What is wrong with a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("malformed checkpoint: {0}")]
    Malformed(&'static str),
    #[error(transparent)]
    Note(#[from] NoteError),
}

/// A checkpoint's text, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
    /// Extension lines, without their line feeds.
    pub extensions: Vec<String>,
}

impl Checkpoint {
    pub fn new(origin: &str, size: u64, root: Hash) -> Self {
        Checkpoint {
            origin: origin.to_string(),
            size,
            root,
            extensions: Vec::new(),
        }
    }

    /// The checkpoint as a note text.
    pub fn text(&self) -> String {
        let mut t = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            STANDARD.encode(self.root)
        );
        for e in &self.extensions {
            t.push_str(e);
            t.push('\n');
        }
        t
    }

    /// Parses a checkpoint text strictly: three lines at least, a canonical
    /// decimal size, a canonical base64 32-byte root, non-empty lines.
    pub fn parse(text: &str) -> Result<Checkpoint, CheckpointError> {
        note::check_text(text)?;
        if text.starts_with('\n') || text.contains("\n\n") {
            return Err(CheckpointError::Malformed("an empty line"));
        }
        let mut lines = text[..text.len() - 1].split('\n');
        let (Some(origin), Some(size), Some(root)) = (lines.next(), lines.next(), lines.next())
        else {
            return Err(CheckpointError::Malformed("fewer than three lines"));
        };
        if origin.is_empty() {
            return Err(CheckpointError::Malformed("empty origin"));
        }
        let canonical = size == "0" || (!size.starts_with('0') && !size.is_empty());
        if !canonical || !size.bytes().all(|b| b.is_ascii_digit()) {
            return Err(CheckpointError::Malformed(
                "the size is not a decimal number",
            ));
        }
        let size: u64 = size
            .parse()
            .map_err(|_| CheckpointError::Malformed("the size is too large"))?;
        let root: Hash =
            decode_b64(root)
                .and_then(|r| r.try_into().ok())
                .ok_or(CheckpointError::Malformed(
                    "the root is not base64 of 32 bytes",
                ))?;
        Ok(Checkpoint {
            origin: origin.to_string(),
            size,
            root,
            extensions: lines.map(str::to_string).collect(),
        })
    }

    /// The checkpoint a signed note states, its signatures not checked
    /// (for a size to compare; [`open_checkpoint`] is what trusts one).
    pub fn from_note(note: &[u8]) -> Result<Checkpoint, CheckpointError> {
        let text = String::from_utf8_lossy(note);
        let body = text.split("\n\n").next().unwrap_or("");
        Checkpoint::parse(&format!("{body}\n"))
    }

    /// Signs the checkpoint with the log's key: the signed note's bytes.
    pub fn sign(&self, signer: &NoteSigner) -> Result<Vec<u8>, CheckpointError> {
        Ok(note::sign(&self.text(), &[signer])?)
    }
}

/// A checkpoint opened with the log's key and any witnesses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedCheckpoint {
    pub checkpoint: Checkpoint,
    /// The exact note text that was signed.
    pub text: String,
    /// Witness cosignatures that verified: (index into the witness list,
    /// timestamp).
    pub cosignatures: Vec<(usize, u64)>,
    /// Signatures by keys neither the log's nor a listed witness's.
    pub unknown: usize,
}

/// Opens a signed checkpoint: the log's signature must verify, every
/// signature by a listed witness must verify, others are counted. The
/// origin must be `origin` (C2SP tlog-checkpoint: a client checks the
/// origin it expects; chit names the log's key after it).
pub fn open_checkpoint(
    msg: &[u8],
    origin: &str,
    log: &note::NoteVerifier,
    witnesses: &[CosignatureVerifier],
) -> Result<SignedCheckpoint, CheckpointError> {
    let mut vs: Vec<&dyn Verifier> = vec![log];
    vs.extend(witnesses.iter().map(|w| w as &dyn Verifier));
    let opened = note::open(msg, &vs)?;
    if !opened.verified.iter().any(|(i, _)| *i == 0) {
        return Err(NoteError::NoKnownSignature {
            unknown: opened.unknown.len(),
        }
        .into());
    }
    let checkpoint = Checkpoint::parse(&opened.text)?;
    if checkpoint.origin != origin {
        return Err(CheckpointError::Malformed(
            "the origin is not the expected one",
        ));
    }
    let cosignatures = opened
        .verified
        .iter()
        .filter(|(i, _)| *i > 0)
        .map(|(i, s)| (i - 1, cosignature_time(&s.bytes).expect("verified")))
        .collect();
    Ok(SignedCheckpoint {
        checkpoint,
        text: opened.text,
        cosignatures,
        unknown: opened.unknown.len(),
    })
}

/// Adds signature lines to a signed note (a witness adding its
/// cosignature), replacing any earlier line by the same key.
pub fn add_signatures(msg: &[u8], new: &[Signature]) -> Result<Vec<u8>, NoteError> {
    let mut n = note::parse(msg)?;
    n.signatures
        .retain(|s| !new.iter().any(|x| x.name == s.name && x.key_id == s.key_id));
    n.signatures.extend_from_slice(new);
    if n.signatures.len() > note::MAX_SIGNATURES {
        return Err(NoteError::Malformed("too many signatures"));
    }
    Ok(n.to_bytes())
}
