//! C2SP `tlog-cosignature`: a witness's timestamped statement that it
//! checked a checkpoint consistent with every one of its origin it
//! cosigned before.
//!
//! A cosignature is a note signature line whose bytes (after the key id)
//! are a `timestamped_signature`: an 8-byte big-endian timestamp (seconds
//! since the Unix epoch, at most 2^63 - 1), then the signature. Two types:
//!
//! - **`cosignature/v1`, Ed25519** (key type `0x04`): a 64-byte Ed25519
//!   signature over
//!
//!   ```text
//!   cosignature/v1
//!   time <timestamp>
//!   <the checkpoint text, extension lines included>
//!   ```
//!
//! - **ML-DSA-44** (key type `0x06`): a 2,420-byte FIPS 204 ML-DSA-44
//!   signature (empty context) over the `subtree/v1` message
//!
//!   ```text
//!   "subtree/v1\n\0" ‖ u8 len ‖ cosigner name ‖ u64 timestamp
//!     ‖ u8 len ‖ origin ‖ u64 start (0) ‖ u64 end (the size) ‖ root hash
//!   ```
//!
//!   which commits to the witness's name and leaves out extension lines.
//!
//! A witness's key id is `SHA-256(name ‖ 0x0A ‖ type ‖ public key)[:4]`,
//! so one key read as the other type is another key, never confused.

use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use ml_dsa::{MlDsa44, Signer as _};

use crate::checkpoint::{Checkpoint, CheckpointError};
use crate::note::{
    self, key_id, NoteError, Signature, Verifier, ALG_COSIGNATURE_MLDSA44, ALG_COSIGNATURE_V1,
};

/// The length of an ML-DSA-44 signature.
pub const MLDSA44_SIGNATURE_BYTES: usize = 2420;
/// The length of an ML-DSA-44 public key.
pub const MLDSA44_PUBLIC_KEY_BYTES: usize = 1312;

/// The timestamp of a cosignature's bytes (after the key id), for either
/// type: 8 bytes big-endian, at most 2^63 - 1, followed by a 64-byte
/// Ed25519 or a 2,420-byte ML-DSA-44 signature.
pub fn cosignature_time(bytes: &[u8]) -> Option<u64> {
    if bytes.len() != 8 + 64 && bytes.len() != 8 + MLDSA44_SIGNATURE_BYTES {
        return None;
    }
    let t = u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes"));
    (t <= i64::MAX as u64).then_some(t)
}

/// The message a `cosignature/v1` (Ed25519) cosignature signs.
pub fn cosigned_message(timestamp: u64, checkpoint_text: &str) -> Vec<u8> {
    format!("cosignature/v1\ntime {timestamp}\n{checkpoint_text}").into_bytes()
}

/// The `subtree/v1` message an ML-DSA-44 cosignature signs, for a
/// checkpoint (start 0, end its size). `None` when the cosigner's name or
/// the origin is longer than 255 bytes, which the message cannot hold.
pub fn subtree_message(cosigner: &str, timestamp: u64, checkpoint: &Checkpoint) -> Option<Vec<u8>> {
    let name = u8::try_from(cosigner.len()).ok()?;
    let origin = u8::try_from(checkpoint.origin.len()).ok()?;
    if name == 0 || origin == 0 {
        return None;
    }
    let mut m = Vec::with_capacity(12 + 2 + 24 + 32 + cosigner.len() + checkpoint.origin.len());
    m.extend_from_slice(b"subtree/v1\n\0");
    m.push(name);
    m.extend_from_slice(cosigner.as_bytes());
    m.extend_from_slice(&timestamp.to_be_bytes());
    m.push(origin);
    m.extend_from_slice(checkpoint.origin.as_bytes());
    m.extend_from_slice(&0u64.to_be_bytes());
    m.extend_from_slice(&checkpoint.size.to_be_bytes());
    m.extend_from_slice(&checkpoint.root);
    Some(m)
}

enum Secret {
    Ed25519(Box<SigningKey>),
    MlDsa44(Box<ml_dsa::SigningKey<MlDsa44>>),
}

/// A witness's key, making cosignatures: `cosignature/v1` with an Ed25519
/// key, `subtree/v1` with an ML-DSA-44 key.
pub struct Cosigner {
    name: String,
    key_id: u32,
    key: Secret,
}

impl Cosigner {
    /// An Ed25519 witness key (`cosignature/v1`).
    pub fn new(name: &str, key: SigningKey) -> Result<Self, NoteError> {
        if !note::is_valid_name(name) {
            return Err(NoteError::BadName);
        }
        Ok(Cosigner {
            name: name.to_string(),
            key_id: key_id(name, ALG_COSIGNATURE_V1, key.verifying_key().as_bytes()),
            key: Secret::Ed25519(Box::new(key)),
        })
    }

    pub fn from_seed(name: &str, seed: &[u8; 32]) -> Result<Self, NoteError> {
        Self::new(name, SigningKey::from_bytes(seed))
    }

    /// An ML-DSA-44 witness key from its 32-byte FIPS 204 seed.
    pub fn mldsa44_from_seed(name: &str, seed: &[u8; 32]) -> Result<Self, NoteError> {
        if !note::is_valid_name(name) || name.len() > 255 {
            return Err(NoteError::BadName);
        }
        let key = ml_dsa::SigningKey::<MlDsa44>::from_seed(&(*seed).into());
        let public = key.expanded_key().verifying_key().encode();
        Ok(Cosigner {
            name: name.to_string(),
            key_id: key_id(name, ALG_COSIGNATURE_MLDSA44, &public),
            key: Secret::MlDsa44(Box::new(key)),
        })
    }

    /// A witness key from a PKCS#8 PEM private key, the form `chit keygen`
    /// writes: Ed25519 (the default) or ML-DSA-44 (`--algorithm
    /// ml-dsa-44`, the seed form of RFC 9881).
    pub fn from_pkcs8_pem(name: &str, pem: &str) -> Result<Self, NoteError> {
        if let Ok(key) = note::signing_key_from_pem(pem) {
            return Self::new(name, key);
        }
        let seed = mldsa44_seed_from_pem(pem)?;
        Self::mldsa44_from_seed(name, &seed)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key's signature type: `0x04` or `0x06`.
    pub fn alg(&self) -> u8 {
        match self.key {
            Secret::Ed25519(_) => ALG_COSIGNATURE_V1,
            Secret::MlDsa44(_) => ALG_COSIGNATURE_MLDSA44,
        }
    }

    fn public(&self) -> Vec<u8> {
        match &self.key {
            Secret::Ed25519(k) => k.verifying_key().to_bytes().to_vec(),
            Secret::MlDsa44(k) => k.expanded_key().verifying_key().encode().to_vec(),
        }
    }

    pub fn verifier(&self) -> CosignatureVerifier {
        CosignatureVerifier::new(&self.name, self.alg(), &self.public())
            .expect("a signer's own key")
    }

    /// The verifier key string others configure (`witness` lines of a
    /// policy, `--witness`).
    pub fn verifier_key(&self) -> String {
        note::encode_verifier_key(&self.name, self.alg(), &self.public())
    }

    /// The cosignature line over a checkpoint text at `timestamp`. The text
    /// must parse as a checkpoint: a witness cosigns nothing else.
    pub fn cosign(
        &self,
        checkpoint_text: &str,
        timestamp: u64,
    ) -> Result<Signature, CheckpointError> {
        let checkpoint = Checkpoint::parse(checkpoint_text)?;
        if timestamp > i64::MAX as u64 {
            return Err(CheckpointError::Malformed("a timestamp above 2^63 - 1"));
        }
        let mut bytes = timestamp.to_be_bytes().to_vec();
        match &self.key {
            Secret::Ed25519(k) => {
                let sig = k.sign(&cosigned_message(timestamp, checkpoint_text));
                bytes.extend_from_slice(&sig.to_bytes());
            }
            Secret::MlDsa44(k) => {
                let msg = subtree_message(&self.name, timestamp, &checkpoint).ok_or(
                    CheckpointError::Malformed("an origin longer than 255 bytes"),
                )?;
                let sig = k
                    .try_sign(&msg)
                    .map_err(|_| CheckpointError::Malformed("ML-DSA-44 signing failed"))?;
                bytes.extend_from_slice(&sig.encode());
            }
        }
        Ok(Signature {
            name: self.name.clone(),
            key_id: self.key_id,
            bytes,
        })
    }
}

/// The 32-byte seed of an ML-DSA-44 PKCS#8 PEM private key.
pub fn mldsa44_seed_from_pem(pem: &str) -> Result<[u8; 32], NoteError> {
    use pkcs8_mldsa::DecodePrivateKey;
    let key = ml_dsa::SigningKey::<MlDsa44>::from_pkcs8_pem(pem)
        .map_err(|_| NoteError::BadKey("not an Ed25519 or ML-DSA-44 PKCS#8 PEM private key"))?;
    Ok(key.to_seed().into())
}

/// An ML-DSA-44 private key as PKCS#8 PEM (the seed form), from its seed.
pub fn mldsa44_pem_from_seed(seed: &[u8; 32]) -> String {
    use pkcs8_mldsa::{EncodePrivateKey, LineEnding};
    let key = ml_dsa::SigningKey::<MlDsa44>::from_seed(&(*seed).into());
    key.to_pkcs8_pem(LineEnding::LF)
        .expect("a seed encodes")
        .to_string()
}

/// The 1,312-byte public key of an ML-DSA-44 seed.
pub fn mldsa44_public_key(seed: &[u8; 32]) -> Vec<u8> {
    let key = ml_dsa::SigningKey::<MlDsa44>::from_seed(&(*seed).into());
    key.expanded_key().verifying_key().encode().to_vec()
}

#[derive(Clone)]
enum Public {
    Ed25519(VerifyingKey),
    MlDsa44(Box<ml_dsa::VerifyingKey<MlDsa44>>),
}

/// Checks one witness's cosignatures (type `0x04` or `0x06`).
#[derive(Clone)]
pub struct CosignatureVerifier {
    name: String,
    key_id: u32,
    alg: u8,
    public: Vec<u8>,
    key: Public,
}

impl std::fmt::Debug for CosignatureVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CosignatureVerifier({}+{:08x})", self.name, self.key_id)
    }
}

impl CosignatureVerifier {
    /// A witness's key: `alg` `0x04` (32-byte Ed25519) or `0x06`
    /// (1,312-byte ML-DSA-44).
    pub fn new(name: &str, alg: u8, public: &[u8]) -> Result<Self, NoteError> {
        if !note::is_valid_name(name) {
            return Err(NoteError::BadName);
        }
        let key = match alg {
            ALG_COSIGNATURE_V1 => {
                let bytes: [u8; 32] = public
                    .try_into()
                    .map_err(|_| NoteError::BadKey("not a 32-byte key"))?;
                Public::Ed25519(
                    VerifyingKey::from_bytes(&bytes)
                        .map_err(|_| NoteError::BadKey("not an Ed25519 point"))?,
                )
            }
            ALG_COSIGNATURE_MLDSA44 => {
                if name.len() > 255 {
                    return Err(NoteError::BadName);
                }
                let enc = ml_dsa::EncodedVerifyingKey::<MlDsa44>::try_from(public)
                    .map_err(|_| NoteError::BadKey("not a 1,312-byte ML-DSA-44 key"))?;
                Public::MlDsa44(Box::new(ml_dsa::VerifyingKey::decode(&enc)))
            }
            _ => return Err(NoteError::BadKey("not a cosignature key type")),
        };
        Ok(CosignatureVerifier {
            name: name.to_string(),
            key_id: key_id(name, alg, public),
            alg,
            public: public.to_vec(),
            key,
        })
    }

    /// Reads a verifier key string of type `0x04` or `0x06`.
    pub fn from_verifier_key(vkey: &str) -> Result<Self, NoteError> {
        let k = note::parse_verifier_key(vkey)?;
        if k.alg != ALG_COSIGNATURE_V1 && k.alg != ALG_COSIGNATURE_MLDSA44 {
            return Err(NoteError::BadKey(
                "not a witness key (cosignature/v1 or ML-DSA-44)",
            ));
        }
        Self::new(&k.name, k.alg, &k.public)
    }

    /// The key's signature type.
    pub fn alg(&self) -> u8 {
        self.alg
    }

    /// The public key's bytes.
    pub fn public_key(&self) -> &[u8] {
        &self.public
    }

    /// The verifier key string.
    pub fn verifier_key(&self) -> String {
        note::encode_verifier_key(&self.name, self.alg, &self.public)
    }
}

impl Verifier for CosignatureVerifier {
    fn name(&self) -> &str {
        &self.name
    }
    fn key_id(&self) -> u32 {
        self.key_id
    }
    fn verify(&self, text: &[u8], sig: &[u8]) -> bool {
        let Some(ts) = cosignature_time(sig) else {
            return false;
        };
        let Ok(text) = std::str::from_utf8(text) else {
            return false;
        };
        let Ok(checkpoint) = Checkpoint::parse(text) else {
            return false;
        };
        match &self.key {
            Public::Ed25519(k) => {
                let Ok(s) = <[u8; 64]>::try_from(&sig[8..]) else {
                    return false;
                };
                k.verify_strict(
                    &cosigned_message(ts, text),
                    &ed25519_dalek::Signature::from_bytes(&s),
                )
                .is_ok()
            }
            Public::MlDsa44(k) => {
                let Ok(s) = ml_dsa::Signature::<MlDsa44>::try_from(&sig[8..]) else {
                    return false;
                };
                let Some(msg) = subtree_message(&self.name, ts, &checkpoint) else {
                    return false;
                };
                k.verify_with_context(&msg, &[], &s)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::add_signatures;
    use crate::note::NoteSigner;

    #[test]
    fn mldsa44_cosignatures_sign_the_subtree_message_and_verify() {
        let seed = [9u8; 32];
        let pem = mldsa44_pem_from_seed(&seed);
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
        assert_eq!(mldsa44_seed_from_pem(&pem).unwrap(), seed);
        let w = Cosigner::from_pkcs8_pem("witness.example/pq", &pem).unwrap();
        assert_eq!(w.alg(), ALG_COSIGNATURE_MLDSA44);
        let vkey = w.verifier_key();
        let v = CosignatureVerifier::from_verifier_key(&vkey).unwrap();
        assert_eq!(v.public_key(), mldsa44_public_key(&seed).as_slice());
        assert_eq!(
            v.key_id(),
            key_id("witness.example/pq", 0x06, &mldsa44_public_key(&seed))
        );
        let cp = Checkpoint::new("log.example/a", 42, [5; 32]);
        let text = format!("{}ext line\n", cp.text());
        let sig = w.cosign(&text, 1_700_000_123).unwrap();
        assert_eq!(sig.bytes.len(), 8 + MLDSA44_SIGNATURE_BYTES);
        assert_eq!(cosignature_time(&sig.bytes), Some(1_700_000_123));
        assert!(v.verify(text.as_bytes(), &sig.bytes));
        // Extension lines are not signed; the size, root, origin and time are.
        assert!(v.verify(cp.text().as_bytes(), &sig.bytes));
        let other = Checkpoint::new("log.example/a", 43, [5; 32]).text();
        assert!(!v.verify(other.as_bytes(), &sig.bytes));
        let mut late = sig.bytes.clone();
        late[7] ^= 1;
        assert!(!v.verify(text.as_bytes(), &late));
        // The same key under another name is another cosigner.
        let renamed = CosignatureVerifier::new("witness.example/pr", 0x06, v.public_key()).unwrap();
        assert!(!renamed.verify(text.as_bytes(), &sig.bytes));
        // In a note, by the generic note reader.
        let log = NoteSigner::from_seed("log.example/a", &[1; 32]).unwrap();
        let signed = add_signatures(&cp.sign(&log).unwrap(), &[sig]).unwrap();
        let opened =
            crate::checkpoint::open_checkpoint(&signed, "log.example/a", &log.verifier(), &[v])
                .unwrap();
        assert_eq!(opened.cosignatures, vec![(0, 1_700_000_123)]);
    }

    #[test]
    fn an_ed25519_witness_key_is_cosignature_v1() {
        let w = Cosigner::from_seed("w.example", &[3; 32]).unwrap();
        assert_eq!(w.alg(), ALG_COSIGNATURE_V1);
        assert!(w.verifier_key().starts_with("w.example+"));
        let cp = Checkpoint::new("log.example/a", 1, [5; 32]);
        let s = w.cosign(&cp.text(), 7).unwrap();
        assert_eq!(s.bytes.len(), 72);
        assert!(w.verifier().verify(cp.text().as_bytes(), &s.bytes));
        assert!(Cosigner::from_pkcs8_pem("w", "not a key").is_err());
    }
}
