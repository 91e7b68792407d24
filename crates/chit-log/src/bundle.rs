//! Log bundles: one entry with what proves it was logged, for a verifier
//! with nothing but the log's public key.
//!
//! ```json
//! {
//!   "type": "chit.log.bundle.v1",
//!   "origin": "log.example/receipts",
//!   "index": 7,
//!   "entry": "<the entry's exact bytes, base64>",
//!   "inclusion_proof": ["<hash, base64>", "..."],
//!   "checkpoint": "<the signed checkpoint note, as text>"
//! }
//! ```
//!
//! A file may hold one bundle, or a JSON array of them (a lineage bound
//! and its receipt). Verifying one, step by step:
//!
//! 1. `read`: the fields above, nothing else, each of its type;
//! 2. `checkpoint`: the note is signed by the log's key, its origin is the
//!    key's name and the bundle's `origin`;
//! 3. `witnesses`: at least `min` of the given witnesses cosigned it;
//! 4. `inclusion`: the entry's leaf hash is at `index` in the tree the
//!    checkpoint names (RFC 9162 §2.1.3.2).
//!
//! The entry itself is then checked like any input (chit-core's
//! `kinds::log_bundle`, which reads a file's bundles strictly first).

use crate::checkpoint::{open_checkpoint, SignedCheckpoint};
use crate::note::NoteVerifier;
use crate::tree::{leaf_hash, verify_inclusion, Hash};
use crate::CosignatureVerifier;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Map, Value};

/// The value of a bundle's `type`.
pub const BUNDLE_TYPE: &str = "chit.log.bundle.v1";

/// One entry, its inclusion proof and the checkpoint that covers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bundle {
    pub origin: String,
    pub index: u64,
    pub entry: Vec<u8>,
    pub inclusion_proof: Vec<Hash>,
    pub checkpoint: Vec<u8>,
}

/// A bundle that verified.
#[derive(Clone, Debug)]
pub struct Verified {
    pub checkpoint: SignedCheckpoint,
}

/// Which step refused a bundle, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    #[error("not a log bundle: {0}")]
    Read(String),
    #[error("the checkpoint: {0}")]
    Checkpoint(String),
    #[error("witnesses: {0}")]
    Witnesses(String),
    #[error("inclusion: {0}")]
    Inclusion(String),
}

/// Whether a JSON value looks like a log bundle (its `type`).
pub fn is_bundle(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some(BUNDLE_TYPE)
}

impl Bundle {
    pub fn to_json(&self) -> Value {
        json!({
            "type": BUNDLE_TYPE,
            "origin": self.origin,
            "index": self.index,
            "entry": B64.encode(&self.entry),
            "inclusion_proof": self.inclusion_proof.iter().map(|h| B64.encode(h)).collect::<Vec<_>>(),
            "checkpoint": String::from_utf8_lossy(&self.checkpoint),
        })
    }

    /// Reads one bundle, strictly: exactly its fields.
    pub fn from_json(v: &Value) -> Result<Bundle, BundleError> {
        let bad = |s: &str| BundleError::Read(s.to_string());
        let o: &Map<String, Value> = v.as_object().ok_or_else(|| bad("not an object"))?;
        for k in o.keys() {
            if ![
                "type",
                "origin",
                "index",
                "entry",
                "inclusion_proof",
                "checkpoint",
            ]
            .contains(&k.as_str())
            {
                return Err(BundleError::Read(format!("an unknown field {k:?}")));
            }
        }
        if !is_bundle(v) {
            return Err(bad("its type is not chit.log.bundle.v1"));
        }
        let s = |k: &str| {
            o.get(k)
                .and_then(Value::as_str)
                .ok_or_else(|| BundleError::Read(format!("{k} is missing or not a string")))
        };
        let b64 = |k: &str, s: &str| {
            B64.decode(s)
                .map_err(|_| BundleError::Read(format!("{k} is not standard base64")))
        };
        let index = o
            .get("index")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("index is missing or not a whole number"))?;
        let proof = o
            .get("inclusion_proof")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("inclusion_proof is missing or not a list"))?;
        if proof.len() > 64 {
            return Err(bad("inclusion_proof has more than 64 hashes"));
        }
        let inclusion_proof = proof
            .iter()
            .map(|h| {
                let text = h
                    .as_str()
                    .ok_or_else(|| bad("an inclusion_proof hash is not a string"))?;
                b64("inclusion_proof", text)?
                    .try_into()
                    .map_err(|_| bad("an inclusion_proof hash is not 32 bytes"))
            })
            .collect::<Result<Vec<Hash>, _>>()?;
        Ok(Bundle {
            origin: s("origin")?.to_string(),
            index,
            entry: b64("entry", s("entry")?)?,
            inclusion_proof,
            checkpoint: s("checkpoint")?.as_bytes().to_vec(),
        })
    }

    /// Steps 2-4 (see the module documentation).
    pub fn verify(
        &self,
        log: &NoteVerifier,
        witnesses: &[CosignatureVerifier],
        min_witnesses: usize,
    ) -> Result<Verified, BundleError> {
        let name = crate::note::Verifier::name(log);
        if self.origin != name {
            return Err(BundleError::Checkpoint(format!(
                "the bundle is from log {:?}, but the key given is {name:?}'s",
                self.origin
            )));
        }
        let opened = open_checkpoint(&self.checkpoint, &self.origin, log, witnesses)
            .map_err(|e| BundleError::Checkpoint(e.to_string()))?;
        let mut cosigners: Vec<usize> = opened.cosignatures.iter().map(|(i, _)| *i).collect();
        cosigners.sort_unstable();
        cosigners.dedup();
        if cosigners.len() < min_witnesses {
            return Err(BundleError::Witnesses(format!(
                "{} of the given witnesses cosigned the checkpoint; {min_witnesses} required",
                cosigners.len()
            )));
        }
        let cp = &opened.checkpoint;
        verify_inclusion(
            &leaf_hash(&self.entry),
            self.index,
            cp.size,
            &self.inclusion_proof,
            &cp.root,
        )
        .map_err(|e| {
            BundleError::Inclusion(format!(
                "entry {} is not in the tree of {} the checkpoint signs: {e}",
                self.index, cp.size
            ))
        })?;
        Ok(Verified { checkpoint: opened })
    }
}

/// A file's bundles, read already (by a strict reader: a duplicate key, a
/// lone surrogate or too deep a nesting refused before this): one object,
/// or an array of them.
pub fn bundles_of(v: &Value) -> Result<Vec<Bundle>, BundleError> {
    match v {
        Value::Array(items) if !items.is_empty() => items.iter().map(Bundle::from_json).collect(),
        Value::Array(_) => Err(BundleError::Read("an empty list".into())),
        _ => Ok(vec![Bundle::from_json(v)?]),
    }
}
