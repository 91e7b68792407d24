//! C2SP `tlog-proof`: an entry's index, its inclusion proof and the
//! (cosigned) checkpoint it is proven under, as one text file
//! (`.tlog-proof`), verified offline against a [`Policy`].
//!
//! ```text
//! c2sp.org/tlog-proof@v1
//! [extra <base64>]
//! index <decimal>
//! <inclusion proof hashes, base64, one per line, leaf's sibling first>
//!
//! <the signed checkpoint, verbatim>
//! ```
//!
//! chit's leaf is the RFC 9162 leaf hash of the entry's exact bytes
//! (`SHA-256(0x00 ‖ entry)`), the entry being the receipt as logged.
//! [`TlogProof::verify`] is the specification's steps in order: the
//! checkpoint is signed by a log of the policy for its origin
//! ([`ProofError::Checkpoint`]), the witnesses' cosignatures meet the
//! policy's quorum ([`ProofError::Witnesses`]), and the leaf is at the
//! index in that tree ([`ProofError::Inclusion`]).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use crate::lines::parse_decimal;
use crate::lines::{LineError, Lines};
use crate::note::decode_b64;
use crate::policy::{OpenError, Policy, Witnessed};
use crate::tree::{verify_inclusion, Hash};

/// The first line of a tlog-proof.
pub const HEADER: &str = "c2sp.org/tlog-proof@v1";
/// The largest proof read (the checkpoint note's limit and the lines
/// before it).
pub const MAX_PROOF_BYTES: usize = crate::note::MAX_NOTE_BYTES + 16 * 1024;
/// The most inclusion proof hashes (a tree of 2^64 leaves).
pub const MAX_PROOF_HASHES: usize = 64;

/// A tlog-proof, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlogProof {
    pub extra: Option<Vec<u8>>,
    pub index: u64,
    pub inclusion_proof: Vec<Hash>,
    /// The signed checkpoint note, exactly as in the file.
    pub checkpoint: Vec<u8>,
}

/// Which step refused a proof (a tlog-proof, or a log bundle: the two
/// carry the same proof in two encodings, and share its steps).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// It could not be read; the text says what it was read as.
    #[error("{0}")]
    Read(String),
    #[error("the checkpoint: {0}")]
    Checkpoint(String),
    #[error("witnesses: {0}")]
    Witnesses(String),
    #[error("inclusion: {0}")]
    Inclusion(String),
}

impl TlogProof {
    /// The proof's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = format!("{HEADER}\n");
        if let Some(extra) = &self.extra {
            out.push_str(&format!("extra {}\n", STANDARD.encode(extra)));
        }
        out.push_str(&format!("index {}\n", self.index));
        for h in &self.inclusion_proof {
            out.push_str(&STANDARD.encode(h));
            out.push('\n');
        }
        out.push('\n');
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(&self.checkpoint);
        bytes
    }

    /// Reads a proof strictly: the header, an optional `extra` line
    /// (canonical base64), `index` (canonical decimal), at most 64 hash
    /// lines (canonical base64 of 32 bytes), an empty line, then the
    /// checkpoint note (checked when verified).
    pub fn parse(bytes: &[u8]) -> Result<TlogProof, ProofError> {
        let bad = |m: &str| ProofError::Read(format!("not a tlog-proof: {m}"));
        if bytes.len() > MAX_PROOF_BYTES {
            return Err(bad("larger than a proof can be"));
        }
        let mut lines = Lines::new(bytes);
        let ended = |e: LineError| match e {
            LineError::Ended => bad("it ends before the checkpoint"),
            LineError::TooMany => bad("more than 64 inclusion proof hashes"),
            LineError::NotAHash => bad("an inclusion proof line is not base64 of 32 bytes"),
        };
        if lines.line().map_err(ended)? != HEADER.as_bytes() {
            return Err(bad("the first line is not c2sp.org/tlog-proof@v1"));
        }
        let mut next = lines.line().map_err(ended)?;
        let mut extra = None;
        if let Some(b64) = next.strip_prefix(b"extra ") {
            let text = std::str::from_utf8(b64).map_err(|_| bad("extra is not base64"))?;
            extra = Some(decode_b64(text).ok_or_else(|| bad("extra is not canonical base64"))?);
            next = lines.line().map_err(ended)?;
        }
        let index = next
            .strip_prefix(b"index ")
            .and_then(parse_decimal::<u64>)
            .ok_or_else(|| bad("no index line (index <decimal>)"))?;
        let inclusion_proof = lines.hashes(MAX_PROOF_HASHES).map_err(ended)?;
        let rest = lines.rest();
        if rest.is_empty() {
            return Err(bad("no checkpoint after the empty line"));
        }
        Ok(TlogProof {
            extra,
            index,
            inclusion_proof,
            checkpoint: rest.to_vec(),
        })
    }

    /// Verifies the proof for `leaf` (the entry's leaf hash) under
    /// `policy`: the steps of the module documentation, in order.
    pub fn verify(&self, leaf: &Hash, policy: &Policy) -> Result<Witnessed, ProofError> {
        verify_entry(
            policy,
            &self.checkpoint,
            None,
            leaf,
            self.index,
            &self.inclusion_proof,
        )
    }
}

/// The steps after reading, for a tlog-proof and a log bundle alike: the
/// checkpoint is signed by a log of the policy for its origin (which is
/// `origin` where the proof names one), its cosignatures meet the quorum,
/// and `leaf` is at `index` in the tree it signs.
pub(crate) fn verify_entry(
    policy: &Policy,
    checkpoint: &[u8],
    origin: Option<&str>,
    leaf: &Hash,
    index: u64,
    proof: &[Hash],
) -> Result<Witnessed, ProofError> {
    let w = policy.verify(checkpoint).map_err(|e| match e {
        OpenError::Checkpoint(m) => ProofError::Checkpoint(m),
        OpenError::Quorum(m) => ProofError::Witnesses(m),
    })?;
    let cp = &w.checkpoint;
    if let Some(origin) = origin.filter(|o| *o != cp.origin) {
        return Err(ProofError::Checkpoint(format!(
            "the proof says it is from log {origin:?}, but its checkpoint is {:?}'s",
            cp.origin
        )));
    }
    verify_inclusion(leaf, index, cp.size, proof, &cp.root).map_err(|e| {
        ProofError::Inclusion(format!(
            "the entry is not at index {index} of the tree of {} the checkpoint signs: {e}",
            cp.size
        ))
    })?;
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{add_signatures, Checkpoint};
    use crate::cosignature::Cosigner;
    use crate::note::NoteSigner;
    use crate::tree::{inclusion_proof, leaf_hash, MemoryTree};

    #[test]
    fn a_proof_round_trips_and_verifies_and_each_step_refuses() {
        let log = NoteSigner::from_seed("log.example/p", &[1; 32]).unwrap();
        let w = Cosigner::from_seed("w.example", &[2; 32]).unwrap();
        let mut tree = MemoryTree::new();
        for i in 0..13u8 {
            tree.push(&[i; 5]);
        }
        let cp = Checkpoint::new("log.example/p", 13, tree.root(13).unwrap());
        let signed = cp.sign(&log).unwrap();
        let cosigned =
            add_signatures(&signed, &[w.cosign(&cp.text(), 1_700_000_000).unwrap()]).unwrap();
        let proof = TlogProof {
            extra: Some(b"ctx".to_vec()),
            index: 6,
            inclusion_proof: inclusion_proof(&tree, 6, 13).unwrap(),
            checkpoint: cosigned.clone(),
        };
        let bytes = proof.to_bytes();
        assert!(bytes.starts_with(b"c2sp.org/tlog-proof@v1\nextra Y3R4\nindex 6\n"));
        let read = TlogProof::parse(&bytes).unwrap();
        assert_eq!(read, proof);
        let policy = Policy::parse(
            format!(
                "log {}\nwitness W {}\nquorum W\n",
                log.verifier_key(),
                w.verifier_key()
            )
            .as_bytes(),
        )
        .unwrap();
        let ok = read.verify(&leaf_hash(&[6; 5]), &policy).unwrap();
        assert_eq!(ok.cosigned, vec![(0, 1_700_000_000)]);
        assert!(matches!(
            read.verify(&leaf_hash(&[7; 5]), &policy),
            Err(ProofError::Inclusion(_))
        ));
        let uncosigned = TlogProof {
            checkpoint: signed,
            ..read.clone()
        };
        assert!(matches!(
            uncosigned.verify(&leaf_hash(&[6; 5]), &policy),
            Err(ProofError::Witnesses(_))
        ));
        let mut forged = read.clone();
        let at = forged.checkpoint.len() - 10;
        forged.checkpoint[at] ^= 1;
        assert!(matches!(
            forged.verify(&leaf_hash(&[6; 5]), &policy),
            Err(ProofError::Checkpoint(_))
        ));
        // Malformed files.
        let text = String::from_utf8(bytes.clone()).unwrap();
        for (bad, want) in [
            (text.replacen("@v1", "@v2", 1), "first line"),
            (text.replacen("index 6", "index 06", 1), "index"),
            (text.replacen("extra Y3R4", "extra Y3R4=", 1), "extra"),
            (text.replacen("\n\n", "\nAAAA\n\n", 1), "32 bytes"),
            (
                text[..text.find("\n\n").unwrap() + 2].to_string(),
                "no checkpoint",
            ),
            ("c2sp.org/tlog-proof@v1\nindex 1".to_string(), "ends before"),
        ] {
            let e = TlogProof::parse(bad.as_bytes()).unwrap_err();
            assert!(e.to_string().contains(want), "{bad:?}: {e}");
        }
    }
}
