//! C2SP `signed-note`: a text and the signatures over it.
//!
//! The format (as Go's `golang.org/x/mod/sumdb/note` writes it):
//!
//! ```text
//! <text: one or more non-empty lines, each ending in U+000A>
//! <an empty line>
//! — <key name> <base64(4-byte key id ‖ signature)>
//! …
//! ```
//!
//! A key name is non-empty UTF-8 with no white space and no `+`. The key id
//! of a key is the first 4 bytes (big-endian) of `SHA-256(name ‖ 0x0A ‖
//! type ‖ public key)`; type `0x01` is a plain Ed25519 signature over the
//! text, type `0x04` a timestamped witness cosignature (see
//! [`crate::checkpoint`]). A verifier key is written
//! `<name>+<8 hex digits of the id>+<base64(type ‖ public key)>`.
//!
//! [`open`] is strict: the whole note must be valid UTF-8 with no ASCII
//! control character but the line feed, at most [`MAX_NOTE_BYTES`] long;
//! the text (which may hold empty lines, as C2SP allows) is separated from
//! the signatures by the last empty line; there must be one to
//! [`MAX_SIGNATURES`] signature lines, each well formed (a valid key name,
//! canonical padded base64 of at least 5 bytes) and ending in a line feed.
//! A signature by a known key that does not verify fails the whole note, as
//! do two signatures by one known key; signatures by unknown keys are kept,
//! counted and otherwise ignored, as C2SP requires. A note with no
//! signature by a known key is refused.
//!
//! Formats built on notes (a checkpoint) forbid empty lines in their text
//! themselves.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// The largest note [`open`] reads.
pub const MAX_NOTE_BYTES: usize = 1 << 20;
/// The most signature lines a note may carry (Go's limit).
pub const MAX_SIGNATURES: usize = 100;

/// The signature type of an Ed25519 note signature.
pub const ALG_ED25519: u8 = 0x01;
/// The signature type of a C2SP tlog-cosignature/v1 witness cosignature.
pub const ALG_COSIGNATURE_V1: u8 = 0x04;
/// The signature type of a C2SP tlog-cosignature ML-DSA-44 cosignature
/// (`subtree/v1`).
pub const ALG_COSIGNATURE_MLDSA44: u8 = 0x06;
/// The public key length of each signature type chit reads.
fn public_key_len(alg: u8) -> Option<usize> {
    match alg {
        ALG_ED25519 | ALG_COSIGNATURE_V1 => Some(32),
        ALG_COSIGNATURE_MLDSA44 => Some(1312),
        _ => None,
    }
}

const SIG_PREFIX: &str = "\u{2014} ";

/// What is wrong with a note, a key or a signature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    #[error("malformed note: {0}")]
    Malformed(&'static str),
    #[error("the note is larger than {MAX_NOTE_BYTES} bytes")]
    TooLarge,
    #[error("invalid signature for key {name}+{key_id:08x}")]
    InvalidSignature { name: String, key_id: u32 },
    #[error("two verifiers for key {name}+{key_id:08x}")]
    AmbiguousKey { name: String, key_id: u32 },
    #[error("no signature by a known key ({unknown} by unknown keys)")]
    NoKnownSignature { unknown: usize },
    #[error("malformed verifier key: {0}")]
    BadKey(&'static str),
    #[error("invalid key name")]
    BadName,
}

/// One signature line: the key's name and id, and the bytes after the id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    pub name: String,
    pub key_id: u32,
    /// The signature bytes that follow the key id (for a cosignature, the
    /// timestamp and the Ed25519 signature).
    pub bytes: Vec<u8>,
}

impl Signature {
    /// The line as the note writes it, with its line feed.
    pub fn line(&self) -> String {
        let mut raw = self.key_id.to_be_bytes().to_vec();
        raw.extend_from_slice(&self.bytes);
        format!("{SIG_PREFIX}{} {}\n", self.name, STANDARD.encode(raw))
    }
}

/// A note as written: its text and every signature line, unchecked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The text, ending in a line feed.
    pub text: String,
    pub signatures: Vec<Signature>,
}

impl Note {
    /// The note's bytes: text, blank line, signature lines.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.text.clone().into_bytes();
        out.push(b'\n');
        for s in &self.signatures {
            out.extend_from_slice(s.line().as_bytes());
        }
        out
    }
}

/// A key that can check signatures of one name and key id.
pub trait Verifier {
    fn name(&self) -> &str;
    fn key_id(&self) -> u32;
    /// Whether `sig` (the bytes after the key id) signs `text`.
    fn verify(&self, text: &[u8], sig: &[u8]) -> bool;
}

/// Whether `name` may name a key: non-empty, no white space, no `+`.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty() && !name.chars().any(|c| c.is_whitespace() || c == '+')
}

/// The key id of a key: the first 4 bytes of `SHA-256(name ‖ 0x0A ‖ type ‖
/// public key)`, big-endian.
pub fn key_id(name: &str, alg: u8, public: &[u8]) -> u32 {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', alg]);
    h.update(public);
    let d = h.finalize();
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

/// Writes a verifier key: `<name>+<hex id>+<base64(type ‖ public key)>`.
pub fn encode_verifier_key(name: &str, alg: u8, public: &[u8]) -> String {
    let mut raw = vec![alg];
    raw.extend_from_slice(public);
    format!(
        "{name}+{:08x}+{}",
        key_id(name, alg, public),
        STANDARD.encode(raw)
    )
}

/// A verifier key read: its name, signature type and public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierKey {
    pub name: String,
    pub alg: u8,
    /// The public key: 32 bytes for Ed25519 types, 1312 for ML-DSA-44.
    pub public: Vec<u8>,
}

/// Reads a verifier key of any type chit knows (Ed25519 `0x01`,
/// cosignature/v1 `0x04`, ML-DSA-44 cosignature `0x06`). The id must be
/// the one the rest implies and the key as long as its type's.
pub fn parse_verifier_key(vkey: &str) -> Result<VerifierKey, NoteError> {
    let mut parts = vkey.splitn(3, '+');
    let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(NoteError::BadKey("want name+id+key"));
    };
    if !is_valid_name(name) {
        return Err(NoteError::BadName);
    }
    if id.len() != 8 || !id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(NoteError::BadKey("the id is not 8 lower-case hex digits"));
    }
    let raw = decode_b64(key).ok_or(NoteError::BadKey("the key is not base64"))?;
    let Some((&alg, public)) = raw.split_first() else {
        return Err(NoteError::BadKey("an empty key"));
    };
    let want = public_key_len(alg).ok_or(NoteError::BadKey("an unknown key type"))?;
    if public.len() != want {
        return Err(NoteError::BadKey("the key is not as long as its type's"));
    }
    if format!("{:08x}", key_id(name, alg, public)) != id {
        return Err(NoteError::BadKey("the id does not match the key"));
    }
    Ok(VerifierKey {
        name: name.to_string(),
        alg,
        public: public.to_vec(),
    })
}

/// Reads a verifier key of a 32-byte type: its name, type and key.
pub fn decode_verifier_key(vkey: &str) -> Result<(String, u8, [u8; 32]), NoteError> {
    let k = parse_verifier_key(vkey)?;
    let public: [u8; 32] = k
        .public
        .as_slice()
        .try_into()
        .map_err(|_| NoteError::BadKey("not a 32-byte key"))?;
    Ok((k.name, k.alg, public))
}

/// Canonical standard base64 (padded, no stray bits): the one encoding of
/// the bytes, so a note has a single valid spelling.
pub(crate) fn decode_b64(s: &str) -> Option<Vec<u8>> {
    let raw = STANDARD.decode(s).ok()?;
    (STANDARD.encode(&raw) == s).then_some(raw)
}

/// Signs notes with an Ed25519 key (signature type `0x01`).
pub struct NoteSigner {
    name: String,
    key_id: u32,
    key: SigningKey,
}

impl NoteSigner {
    pub fn new(name: &str, key: SigningKey) -> Result<Self, NoteError> {
        if !is_valid_name(name) {
            return Err(NoteError::BadName);
        }
        let key_id = key_id(name, ALG_ED25519, key.verifying_key().as_bytes());
        Ok(NoteSigner {
            name: name.to_string(),
            key_id,
            key,
        })
    }

    /// The signer for a 32-byte Ed25519 seed (what `chit keygen` keeps).
    pub fn from_seed(name: &str, seed: &[u8; 32]) -> Result<Self, NoteError> {
        Self::new(name, SigningKey::from_bytes(seed))
    }

    /// The signer for a PKCS#8 PEM Ed25519 private key, the form `chit
    /// keygen` writes (and `chit_core::keys::SecretKey::from_pem` reads).
    pub fn from_pkcs8_pem(name: &str, pem: &str) -> Result<Self, NoteError> {
        Self::new(name, signing_key_from_pem(pem)?)
    }

    /// Reads Go's private key form
    /// `PRIVATE+KEY+<name>+<hex id>+<base64(0x01 ‖ seed)>`.
    pub fn from_go_private_key(skey: &str) -> Result<Self, NoteError> {
        let rest = skey
            .strip_prefix("PRIVATE+KEY+")
            .ok_or(NoteError::BadKey("no PRIVATE+KEY+ prefix"))?;
        let mut parts = rest.splitn(3, '+');
        let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(NoteError::BadKey("want name+id+key"));
        };
        let raw = decode_b64(key).ok_or(NoteError::BadKey("the key is not base64"))?;
        if raw.len() != 33 || raw[0] != ALG_ED25519 {
            return Err(NoteError::BadKey("not an Ed25519 seed"));
        }
        let seed: [u8; 32] = raw[1..].try_into().expect("33 bytes");
        let signer = Self::from_seed(name, &seed)?;
        if format!("{:08x}", signer.key_id) != id {
            return Err(NoteError::BadKey("the id does not match the key"));
        }
        Ok(signer)
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn key_id(&self) -> u32 {
        self.key_id
    }
    pub fn verifying_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }
    /// The verifier that checks this signer's signatures.
    pub fn verifier(&self) -> NoteVerifier {
        NoteVerifier {
            name: self.name.clone(),
            key_id: self.key_id,
            key: self.key.verifying_key(),
        }
    }
    /// The verifier key string others configure.
    pub fn verifier_key(&self) -> String {
        encode_verifier_key(&self.name, ALG_ED25519, self.key.verifying_key().as_bytes())
    }

    /// The signature line over `text`.
    pub fn sign(&self, text: &str) -> Signature {
        Signature {
            name: self.name.clone(),
            key_id: self.key_id,
            bytes: self.key.sign(text.as_bytes()).to_bytes().to_vec(),
        }
    }
}

/// Checks Ed25519 note signatures (type `0x01`) of one key.
#[derive(Debug, Clone)]
pub struct NoteVerifier {
    name: String,
    key_id: u32,
    key: VerifyingKey,
}

impl NoteVerifier {
    pub fn new(name: &str, public: &[u8; 32]) -> Result<Self, NoteError> {
        if !is_valid_name(name) {
            return Err(NoteError::BadName);
        }
        let key = VerifyingKey::from_bytes(public)
            .map_err(|_| NoteError::BadKey("not an Ed25519 point"))?;
        Ok(NoteVerifier {
            name: name.to_string(),
            key_id: key_id(name, ALG_ED25519, public),
            key,
        })
    }

    /// Reads a verifier key string of type `0x01`.
    pub fn from_verifier_key(vkey: &str) -> Result<Self, NoteError> {
        let (name, alg, public) = decode_verifier_key(vkey)?;
        if alg != ALG_ED25519 {
            return Err(NoteError::BadKey("not an Ed25519 note key"));
        }
        Self::new(&name, &public)
    }

    pub fn public_key(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// The verifier key string (`<name>+<hex id>+<base64>`).
    pub fn verifier_key(&self) -> String {
        encode_verifier_key(&self.name, ALG_ED25519, self.key.as_bytes())
    }
}

impl Verifier for NoteVerifier {
    fn name(&self) -> &str {
        &self.name
    }
    fn key_id(&self) -> u32 {
        self.key_id
    }
    fn verify(&self, text: &[u8], sig: &[u8]) -> bool {
        let Ok(sig) = <[u8; 64]>::try_from(sig) else {
            return false;
        };
        self.key
            .verify_strict(text, &ed25519_dalek::Signature::from_bytes(&sig))
            .is_ok()
    }
}

/// An Ed25519 private key in PKCS#8 PEM, the form `chit keygen` writes: a
/// log's key or a witness's.
pub(crate) fn signing_key_from_pem(pem: &str) -> Result<SigningKey, NoteError> {
    use ed25519_dalek::pkcs8::DecodePrivateKey;
    SigningKey::from_pkcs8_pem(pem)
        .map_err(|_| NoteError::BadKey("not an Ed25519 PKCS#8 PEM private key"))
}

/// Signs `text` (which must be a valid note text) with each signer.
pub fn sign(text: &str, signers: &[&NoteSigner]) -> Result<Vec<u8>, NoteError> {
    check_text(text)?;
    let note = Note {
        text: text.to_string(),
        signatures: signers.iter().map(|s| s.sign(text)).collect(),
    };
    Ok(note.to_bytes())
}

/// Checks what a note's text must be: non-empty, ending in a line feed,
/// with no ASCII control character but the line feed.
pub fn check_text(text: &str) -> Result<(), NoteError> {
    if text.is_empty() || !text.ends_with('\n') {
        return Err(NoteError::Malformed("the text must end in a line feed"));
    }
    if has_control(text) {
        return Err(NoteError::Malformed("a control character"));
    }
    Ok(())
}

fn has_control(s: &str) -> bool {
    s.bytes().any(|b| b < 0x20 && b != b'\n')
}

/// Splits a note into text and signature lines, checking its form but no
/// signature.
pub fn parse(msg: &[u8]) -> Result<Note, NoteError> {
    if msg.len() > MAX_NOTE_BYTES {
        return Err(NoteError::TooLarge);
    }
    let msg = std::str::from_utf8(msg).map_err(|_| NoteError::Malformed("not UTF-8"))?;
    if has_control(msg) {
        return Err(NoteError::Malformed("a control character"));
    }
    let split = msg
        .rfind("\n\n")
        .ok_or(NoteError::Malformed("no blank line before the signatures"))?;
    let (text, sigs) = (&msg[..split + 1], &msg[split + 2..]);
    check_text(text)?;
    if sigs.is_empty() {
        return Err(NoteError::Malformed("no signature"));
    }
    if !sigs.ends_with('\n') {
        return Err(NoteError::Malformed(
            "the last signature line has no line feed",
        ));
    }
    let mut signatures: Vec<Signature> = Vec::new();
    for line in sigs[..sigs.len() - 1].split('\n') {
        if signatures.len() == MAX_SIGNATURES {
            return Err(NoteError::Malformed("too many signatures"));
        }
        let rest = line.strip_prefix(SIG_PREFIX).ok_or(NoteError::Malformed(
            "a line after the text is not a signature",
        ))?;
        let (name, b64) = rest
            .split_once(' ')
            .ok_or(NoteError::Malformed("a signature line has no signature"))?;
        if !is_valid_name(name) {
            return Err(NoteError::Malformed("a signature's key name is invalid"));
        }
        let raw = decode_b64(b64).ok_or(NoteError::Malformed("a signature is not base64"))?;
        if raw.len() < 5 {
            return Err(NoteError::Malformed("a signature is too short"));
        }
        let key_id = u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]);
        signatures.push(Signature {
            name: name.to_string(),
            key_id,
            bytes: raw[4..].to_vec(),
        });
    }
    Ok(Note {
        text: text.to_string(),
        signatures,
    })
}

/// A note whose signatures were checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    pub text: String,
    /// For each verified signature, in note order: the index of the
    /// verifier in the list given to [`open`], and the signature.
    pub verified: Vec<(usize, Signature)>,
    /// Signatures by keys not in the list: kept, not trusted.
    pub unknown: Vec<Signature>,
}

/// Parses a note strictly and checks every signature by a known key; see
/// the module documentation for what is refused.
pub fn open(msg: &[u8], verifiers: &[&dyn Verifier]) -> Result<Opened, NoteError> {
    let note = parse(msg)?;
    let mut verified = Vec::new();
    let mut unknown = Vec::new();
    for sig in note.signatures {
        let mut matching = verifiers
            .iter()
            .enumerate()
            .filter(|(_, v)| v.name() == sig.name && v.key_id() == sig.key_id);
        let Some((i, v)) = matching.next() else {
            unknown.push(sig);
            continue;
        };
        if matching.next().is_some() {
            return Err(NoteError::AmbiguousKey {
                name: sig.name,
                key_id: sig.key_id,
            });
        }
        if verified.iter().any(|(j, _)| *j == i) {
            return Err(NoteError::Malformed("two signatures by one known key"));
        }
        if !v.verify(note.text.as_bytes(), &sig.bytes) {
            return Err(NoteError::InvalidSignature {
                name: sig.name,
                key_id: sig.key_id,
            });
        }
        verified.push((i, sig));
    }
    if verified.is_empty() {
        return Err(NoteError::NoKnownSignature {
            unknown: unknown.len(),
        });
    }
    Ok(Opened {
        text: note.text,
        verified,
        unknown,
    })
}
