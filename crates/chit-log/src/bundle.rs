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
//! 2. `checkpoint`: the note is signed by a key the trust policy lists for
//!    its origin, which is the bundle's `origin`;
//! 3. `witnesses`: its cosignatures meet the policy's quorum;
//! 4. `inclusion`: the entry's leaf hash is at `index` in the tree the
//!    checkpoint names (RFC 9162 §2.1.3.2).
//!
//! The entry itself is then checked like any input (chit-core's
//! `kinds::log_bundle`, which reads a file's bundles strictly first).

use crate::policy::{Policy, Witnessed};
use crate::proof::verify_entry;
use crate::tree::{leaf_hash, Hash};
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
    pub checkpoint: Witnessed,
}

/// Which step refused a bundle, and why: the steps of a tlog-proof,
/// whose proof a bundle carries in JSON.
pub use crate::proof::ProofError as BundleError;

/// A bundle that could not be read, and why.
pub fn unreadable(why: impl std::fmt::Display) -> BundleError {
    BundleError::Read(format!("not a log bundle: {why}"))
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
        let bad = |s: &str| unreadable(s);
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
                return Err(unreadable(format!("an unknown field {k:?}")));
            }
        }
        if !is_bundle(v) {
            return Err(bad("its type is not chit.log.bundle.v1"));
        }
        let s = |k: &str| {
            o.get(k)
                .and_then(Value::as_str)
                .ok_or_else(|| unreadable(format!("{k} is missing or not a string")))
        };
        let b64 = |k: &str, s: &str| {
            B64.decode(s)
                .map_err(|_| unreadable(format!("{k} is not standard base64")))
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

    /// Steps 2-4 (see the module documentation), under a trust policy
    /// (C2SP tlog-policy: the log's keys, the witnesses and the quorum).
    pub fn verify(&self, policy: &Policy) -> Result<Verified, BundleError> {
        let checkpoint = verify_entry(
            policy,
            &self.checkpoint,
            Some(&self.origin),
            &leaf_hash(&self.entry),
            self.index,
            &self.inclusion_proof,
        )?;
        Ok(Verified { checkpoint })
    }
}

/// A file's bundles, read already (by a strict reader: a duplicate key, a
/// lone surrogate or too deep a nesting refused before this): one object,
/// or an array of them.
pub fn bundles_of(v: &Value) -> Result<Vec<Bundle>, BundleError> {
    match v {
        Value::Array(items) if !items.is_empty() => items.iter().map(Bundle::from_json).collect(),
        Value::Array(_) => Err(unreadable("an empty list")),
        _ => Ok(vec![Bundle::from_json(v)?]),
    }
}
