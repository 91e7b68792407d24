//! DSSE envelopes, byte-compatible with Treeship.
//!
//! An envelope is `{"payload": <base64>, "payloadType": <string>,
//! "signatures": [{"keyid"?: <hint>, "sig": <base64>}]}`. What is signed is
//! the pre-authentication encoding of the *decoded* payload bytes
//! ([`pae`]), never re-serialised JSON; its SHA-256 names the envelope
//! ([`Ids`]). Verification is a fixed sequence of named steps, each
//! reporting under its own rule id:
//!
//! 1. `envelope`: the envelope has its shape and its base64 decodes;
//! 2. `signature`: every signature verifies strictly under some key the
//!    verifier trusts. The `keyid` picks the key to check it under (a
//!    signature that verifies under that key proves the key signed, whatever
//!    the `keyid` says); without a `keyid` that names a trusted key, the keys
//!    are tried in turn, at most [`MAX_KEYS_TRIED`] per envelope;
//! 3. `trust`: enough distinct trusted keys signed (a threshold counts a key
//!    once however often it signs), each allowed to sign the statement's kind.

use crate::doc::{Doc, Val};
use crate::keys::{decode_base64, encode_base64url, is_base64url_unpadded, PublicKey, SecretKey};
use crate::report::Report;

/// The most signatures chit checks on one envelope.
pub const MAX_SIGNATURES: usize = 16;

/// The most keys chit tries, over one envelope, for signatures whose
/// `keyid` names no trusted key: with a large trust file, an envelope of
/// bad signatures costs at most this many verifications beyond one per
/// signature.
pub const MAX_KEYS_TRIED: usize = 1024;

/// UTF-8's byte-order mark, which Treeship's reader refuses at the start of
/// a payload.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// The payload type of a Treeship receipt statement.
pub const TREESHIP_RECEIPT: &str = "application/vnd.treeship.receipt.v1+json";
/// The payload type of a Treeship session participant, whose art id is not
/// of its DSSE encoding ([`Envelope::ids`]).
pub const TREESHIP_PARTICIPANT: &str = "application/vnd.treeship.session-participant.v1+json";

/// DSSE's pre-authentication encoding:
/// `"DSSEv1" SP len(type) SP type SP len(body) SP body`, lengths in bytes.
pub fn pae(payload_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload_type.len() + body.len() + 32);
    out.extend_from_slice(b"DSSEv1 ");
    out.extend_from_slice(payload_type.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload_type.as_bytes());
    out.push(b' ');
    out.extend_from_slice(body.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(body);
    out
}

/// What names an envelope: `art_` and the first 32 hex digits of
/// SHA-256(PAE), and `sha256:` with all 64.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ids {
    pub artifact_id: String,
    pub digest: String,
}

impl Ids {
    pub fn of_pae(pae: &[u8]) -> Ids {
        let digest = crate::digest::sha256_tagged(pae);
        let artifact_id = format!("art_{}", &digest["sha256:".len().."sha256:".len() + 32]);
        Ids {
            artifact_id,
            digest,
        }
    }
}

/// One signature: the signer's hint and the signature bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sig {
    pub keyid: Option<String>,
    pub sig: Vec<u8>,
}

/// A decoded envelope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub payload: Vec<u8>,
    pub payload_type: String,
    pub signatures: Vec<Sig>,
}

/// Whether a document has an envelope's members.
pub fn looks_like_envelope(doc: &Doc) -> bool {
    looks_like_envelope_val(doc.root())
}

/// Whether a value has an envelope's members.
pub fn looks_like_envelope_val(root: Val) -> bool {
    root.get("payload").is_some()
        && root.get("payloadType").is_some()
        && root.get("signatures").is_some()
}

/// Whether `bytes` are an envelope that `key` signed: a signature that
/// verifies under it (strictly), whatever else the envelope holds. Not a
/// verdict on the envelope: a filter (`chit log watch --match signer=KEY`).
pub fn signed_by(bytes: &[u8], key: &PublicKey, limits: &crate::json::Limits) -> bool {
    let Ok(doc) = crate::json::parse(bytes, limits) else {
        return false;
    };
    if !looks_like_envelope(&doc) {
        return false;
    }
    let mut scratch = Report::new("envelope");
    let Some(env) = Envelope::read(&doc, &mut scratch) else {
        return false;
    };
    !env.signers(&env.pae(), std::slice::from_ref(key), &mut scratch)
        .is_empty()
}

impl Envelope {
    /// Step 1, `envelope`: reads the envelope's members and decodes its base64.
    pub fn read(doc: &Doc, report: &mut Report) -> Option<Envelope> {
        Envelope::read_val(doc.root(), report)
    }

    /// [`Envelope::read`] of a value (a Treeship store record's `envelope`).
    pub fn read_val(root: Val, report: &mut Report) -> Option<Envelope> {
        let mut bad = |path: &str, msg: &str| {
            report.error(crate::rule::ENVELOPE, path, msg);
        };
        // What DSSE allows and Treeship refuses: a warning, so a producer
        // learns it before Treeship rejects the envelope.
        let mut not_url: Vec<String> = Vec::new();
        let payload = match root.get("payload").and_then(|p| p.as_str()) {
            Some(p) => match decode_base64(p) {
                Some(b) => {
                    if !is_base64url_unpadded(p) {
                        not_url.push("/payload".into());
                    }
                    Some(b)
                }
                None => {
                    bad("/payload", "the payload is not valid base64");
                    None
                }
            },
            None => {
                bad("/payload", "the envelope needs a payload string");
                None
            }
        };
        let payload_type = root
            .get("payloadType")
            .and_then(|t| t.as_str())
            .map(str::to_owned);
        if payload_type.is_none() {
            bad("/payloadType", "the envelope needs a payloadType string");
        }
        if payload_type.as_deref() == Some(TREESHIP_RECEIPT)
            && payload.as_ref().is_some_and(|p| p.starts_with(BOM))
        {
            bad(
                "/payload",
                "the payload starts with a byte-order mark, which Treeship's reader refuses: \
                 sign the statement's JSON without one",
            );
        }
        let mut signatures = Vec::new();
        match root.get("signatures").and_then(|s| s.as_array()) {
            None => bad("/signatures", "the envelope needs a signatures array"),
            Some(list) if list.len() > MAX_SIGNATURES => bad(
                "/signatures",
                &format!(
                    "{} signatures; chit checks at most {MAX_SIGNATURES} (each costs a check against every trusted key)",
                    list.len()
                ),
            ),
            Some(list) => {
                if list.len() == 0 {
                    bad("/signatures", "the envelope carries no signature");
                }
                for (i, s) in list.enumerate() {
                    let at = format!("/signatures/{i}");
                    // DSSE: an absent keyid is the same as an empty one.
                    let keyid = match s.get("keyid") {
                        None => None,
                        Some(k) => match k.as_str() {
                            Some("") => None,
                            Some(k) => Some(k.to_owned()),
                            None => {
                                bad(
                                    &format!("{at}/keyid"),
                                    &format!(
                                        "signature {i}'s keyid is not a string, which Treeship's reader refuses: \
                                         write the signer's keyid as a string, or leave it out"
                                    ),
                                );
                                continue;
                            }
                        },
                    };
                    let text = s.get("sig").and_then(|x| x.as_str());
                    match text.map(|t| (t, decode_base64(t))) {
                        Some((t, Some(sig))) => {
                            if !is_base64url_unpadded(t) {
                                not_url.push(format!("{at}/sig"));
                            }
                            signatures.push(Sig { keyid, sig })
                        }
                        Some((_, None)) => {
                            bad(&at, &format!("signature {i} is not valid base64"))
                        }
                        None => bad(&at, &format!("signature {i} has no sig string")),
                    }
                }
            }
        }
        for path in not_url {
            let what = if path == "/payload" {
                "the payload".to_owned()
            } else {
                format!(
                    "signature {}",
                    path["/signatures/".len()..].trim_end_matches("/sig")
                )
            };
            report.warning(
                crate::rule::BASE64URL,
                path,
                format!(
                    "{what} is base64 that DSSE allows but Treeship 0.25.1 refuses (it reads only URL-safe \
                     base64 without padding: - and _ for + and /, no =): write it so for Treeship to read it"
                ),
            );
        }
        Some(Envelope {
            payload: payload?,
            payload_type: payload_type?,
            signatures,
        })
        .filter(|_| !report.breaks(crate::rule::ENVELOPE))
    }

    pub fn pae(&self) -> Vec<u8> {
        pae(&self.payload_type, &self.payload)
    }

    /// Its art id and digest, as Treeship names it: of its DSSE
    /// encoding, or for a session participant (signed over a text of its
    /// own) of the envelope before the countersign.
    pub fn ids(&self) -> Ids {
        if self.payload_type == TREESHIP_PARTICIPANT {
            return self.pending_ids();
        }
        Ids::of_pae(&self.pae())
    }

    /// A session participant's art id and digest, as Treeship names it:
    /// the art id `art_` and the first 16 bytes of the SHA-256 of the
    /// envelope with its first signature only (before the host
    /// countersigned), the digest the SHA-256 of the envelope whole, each
    /// as Treeship's JSON writes it.
    fn pending_ids(&self) -> Ids {
        use sha2::{Digest, Sha256};
        let pending = Sha256::digest(self.treeship_json(1));
        Ids {
            artifact_id: format!("art_{}", crate::digest::hex(&pending[..16])),
            digest: format!(
                "sha256:{}",
                crate::digest::hex(&Sha256::digest(self.treeship_json(usize::MAX)))
            ),
        }
    }

    /// The envelope as Treeship's JSON writes it (base64url without
    /// padding, members in its order), with at most `signatures` of its
    /// signatures.
    fn treeship_json(&self, signatures: usize) -> Vec<u8> {
        let string = crate::canon::write_string;
        let mut json = b"{\"payload\":".to_vec();
        string(&crate::keys::encode_base64url(&self.payload), &mut json);
        json.extend_from_slice(b",\"payloadType\":");
        string(&self.payload_type, &mut json);
        json.extend_from_slice(b",\"signatures\":[");
        for (i, s) in self.signatures.iter().take(signatures).enumerate() {
            if i > 0 {
                json.push(b',');
            }
            json.extend_from_slice(b"{\"keyid\":");
            string(s.keyid.as_deref().unwrap_or(""), &mut json);
            json.extend_from_slice(b",\"sig\":");
            string(&crate::keys::encode_base64url(&s.sig), &mut json);
            json.push(b'}');
        }
        json.extend_from_slice(b"]}");
        json
    }

    /// Signs `payload` as `payload_type` with `key`.
    pub fn sign(payload_type: &str, payload: Vec<u8>, key: &SecretKey) -> Envelope {
        let sig = key.sign(&pae(payload_type, &payload));
        Envelope {
            payload,
            payload_type: payload_type.to_owned(),
            signatures: vec![Sig {
                keyid: Some(key.public().key_id()),
                sig: sig.to_vec(),
            }],
        }
    }

    /// The envelope as JSON text, base64 URL-safe without padding, in the
    /// member order Treeship writes.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        out.extend_from_slice(b"{\n  \"payload\": ");
        crate::canon::write_string(&encode_base64url(&self.payload), &mut out);
        out.extend_from_slice(b",\n  \"payloadType\": ");
        crate::canon::write_string(&self.payload_type, &mut out);
        out.extend_from_slice(b",\n  \"signatures\": [");
        for (i, s) in self.signatures.iter().enumerate() {
            out.extend_from_slice(if i == 0 { b"\n    {" } else { b",\n    {" });
            if let Some(k) = &s.keyid {
                out.extend_from_slice(b"\n      \"keyid\": ");
                crate::canon::write_string(k, &mut out);
                out.push(b',');
            }
            out.extend_from_slice(b"\n      \"sig\": ");
            crate::canon::write_string(&encode_base64url(&s.sig), &mut out);
            out.extend_from_slice(b"\n    }");
        }
        out.extend_from_slice(b"\n  ]\n}\n");
        String::from_utf8(out).unwrap_or_default()
    }

    /// Step 2, `signature`: which of `trusted` signed `pae` (this envelope's
    /// [`Envelope::pae`], built once by the caller), each key once. A
    /// signature is checked under the trusted keys its `keyid` names; when
    /// it names none, under the trusted keys in turn, at most
    /// [`MAX_KEYS_TRIED`] for the whole envelope. A signature that does not
    /// verify is an error naming its `keyid`.
    pub fn signers<'k, K: Keys + ?Sized>(
        &self,
        pae: &[u8],
        trusted: &'k K,
        report: &mut Report,
    ) -> Vec<&'k PublicKey> {
        let mut signers: Vec<&PublicKey> = Vec::new();
        let all = trusted.all();
        let mut tries_left = MAX_KEYS_TRIED;
        for (i, s) in self.signatures.iter().enumerate() {
            let keyid = s.keyid.as_deref().unwrap_or("none");
            let named = s
                .keyid
                .as_deref()
                .map(|k| trusted.with_keyid(k))
                .unwrap_or_default();
            let (found, why) = if !named.is_empty() {
                (
                    named.into_iter().find(|k| k.verify_strict(pae, &s.sig)),
                    "does not verify under the trusted key its keyid names".to_owned(),
                )
            } else {
                let tried = tries_left.min(all.len());
                let found = all[..tried]
                    .iter()
                    .position(|k| k.verify_strict(pae, &s.sig));
                tries_left -= found.map_or(tried, |at| at + 1);
                let why = if tried == all.len() {
                    "does not verify under any trusted key".to_owned()
                } else if tried == 0 {
                    format!(
                        "was not checked: its keyid names no trusted key, and the signatures before it \
                         used up the {MAX_KEYS_TRIED} keys chit tries per envelope: sign with the keyid \
                         chit and Treeship write (key_ and 16 hex digits of the key's SHA-256)"
                    )
                } else {
                    format!(
                        "does not verify under the first {tried} of {} trusted keys, and chit tries at most \
                         {MAX_KEYS_TRIED} keys per envelope for signatures without a keyid that names a \
                         trusted key: sign with the keyid chit and Treeship write (key_ and 16 hex digits \
                         of the key's SHA-256)",
                        all.len()
                    )
                };
                (found.map(|at| &all[at]), why)
            };
            match found {
                Some(k) => {
                    if !signers.contains(&k) {
                        signers.push(k);
                    }
                }
                None => report.error(
                    crate::rule::SIGNATURE,
                    format!("/signatures/{i}"),
                    format!("signature {i} (keyid {keyid}) {why}"),
                ),
            }
        }
        signers
    }
}

/// Keys to check signatures under: all of them, and those a `keyid` names.
pub trait Keys {
    /// Every key, in the order to try them.
    fn all(&self) -> &[PublicKey];
    /// The keys whose [`PublicKey::key_id`] is `keyid`.
    fn with_keyid(&self, keyid: &str) -> Vec<&PublicKey>;
}

impl Keys for [PublicKey] {
    fn all(&self) -> &[PublicKey] {
        self
    }
    fn with_keyid(&self, keyid: &str) -> Vec<&PublicKey> {
        self.iter().filter(|k| k.key_id() == keyid).collect()
    }
}

impl<const N: usize> Keys for [PublicKey; N] {
    fn all(&self) -> &[PublicKey] {
        self
    }
    fn with_keyid(&self, keyid: &str) -> Vec<&PublicKey> {
        self[..].with_keyid(keyid)
    }
}

/// Trusted keys, each once, indexed by `keyid`: what a trust file gathers
/// once for every envelope it checks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyRing {
    keys: Vec<PublicKey>,
    by_keyid: std::collections::HashMap<String, Vec<usize>>,
}

impl KeyRing {
    /// The distinct keys of `keys`, in their first order.
    pub fn new(keys: impl IntoIterator<Item = PublicKey>) -> KeyRing {
        let mut ring = KeyRing::default();
        let mut seen = std::collections::HashSet::new();
        for k in keys {
            if seen.insert(k.bytes()) {
                ring.by_keyid
                    .entry(k.key_id())
                    .or_default()
                    .push(ring.keys.len());
                ring.keys.push(k);
            }
        }
        ring
    }
}

impl std::ops::Deref for KeyRing {
    type Target = [PublicKey];
    fn deref(&self) -> &[PublicKey] {
        &self.keys
    }
}

impl Keys for KeyRing {
    fn all(&self) -> &[PublicKey] {
        &self.keys
    }
    fn with_keyid(&self, keyid: &str) -> Vec<&PublicKey> {
        self.by_keyid
            .get(keyid)
            .map_or_else(Vec::new, |at| at.iter().map(|&i| &self.keys[i]).collect())
    }
}

/// Whether `s` is an art id: `art_` and 32 lower-case hex digits.
pub fn is_art_id(s: &str) -> bool {
    s.len() == 36
        && s.starts_with("art_")
        && s[4..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The art id a file name carries, as Treeship files envelopes
/// (`<art id>.json`; chit's examples `pkt-0__<art id>.envelope.json`): the
/// envelope must then have that art id. It is the name's last `art_`
/// followed by exactly 32 hex digits (no letter or digit after them), in
/// any case: `start__art_<id>.json` carries `<id>`, and an upper-case id is
/// returned as written, so it fails the check (art ids are lower case)
/// rather than skipping it. Folders in the path do not count.
pub fn art_id_in_file_name(file: &str) -> Option<&str> {
    let name = file.rsplit(['/', '\\']).next()?;
    let bytes = name.as_bytes();
    name.match_indices("art_")
        .filter_map(|(at, _)| {
            let end = at + 36;
            let hex = bytes.get(at + 4..end)?;
            let bounded = bytes.get(end).is_none_or(|b| !b.is_ascii_alphanumeric());
            (bounded && hex.iter().all(u8::is_ascii_hexdigit)).then(|| &name[at..end])
        })
        .last()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_counts_bytes() {
        assert_eq!(pae("t", "é".as_bytes()), b"DSSEv1 1 t 2 \xc3\xa9".to_vec());
        assert_eq!(pae("", b""), b"DSSEv1 0  0 ".to_vec());
    }

    #[test]
    fn sign_then_verify() {
        let key = SecretKey::from_seed(&[9; 32]);
        let env = Envelope::sign(TREESHIP_RECEIPT, b"{\"a\":1}".to_vec(), &key);
        let text = env.to_json();
        let doc = crate::json::parse(text.as_bytes(), &Default::default()).unwrap();
        assert!(looks_like_envelope(&doc));
        let mut r = Report::new("t");
        let back = Envelope::read(&doc, &mut r).unwrap();
        assert_eq!(back, env);
        let trusted = [key.public()];
        assert_eq!(back.signers(&back.pae(), &trusted, &mut r).len(), 1);
        assert!(r.valid(), "{r:?}");
        // Another key does not verify it.
        let other = [SecretKey::from_seed(&[8; 32]).public()];
        assert!(back.signers(&back.pae(), &other, &mut r).is_empty());
        assert!(r.breaks(crate::rule::SIGNATURE));
    }

    /// The art id a name carries is its last `art_` token of 32 hex
    /// digits, in any case; no other `art_` decides it.
    #[test]
    fn art_id_is_the_last_token_of_32_hex_digits() {
        const A: &str = "art_b06bd32e47eab4c537f21be003e5b852";
        const W: &str = "art_0123456789abcdef0123456789abcdef";
        const UP: &str = "art_B06BD32E47EAB4C537F21BE003E5B852";
        for (name, want) in [
            (format!("{A}.json"), Some(A)),
            (format!("dir/art_x/{A}.json"), Some(A)),
            (format!("C:\\art\\{A}.envelope.json"), Some(A)),
            (format!("pkt-0__{A}.envelope.json"), Some(A)),
            // "start" holds an "art_" too: the token after it still counts.
            (format!("start__{W}.json"), Some(W)),
            (format!("part_1__{W}.json"), Some(W)),
            (format!("pkt__{W}.json"), Some(W)),
            // The last token wins.
            (format!("{A}__{W}.json"), Some(W)),
            (format!("{W}.json.{A}"), Some(A)),
            // Upper case and mixed case count (and then fail the check).
            (format!("{UP}.json"), Some(UP)),
            (format!("start__{UP}.json"), Some(UP)),
            (
                "art_B06bd32e47eab4c537f21be003e5b852.json".to_owned(),
                Some("art_B06bd32e47eab4c537f21be003e5b852"),
            ),
            // Not 32 hex digits: no art id.
            (format!("{A}0.json"), None),
            (format!("{}.json", &A[..35]), None),
            ("art_.json".to_owned(), None),
            ("receipt.json".to_owned(), None),
            ("art_g6bd32e47eab4c537f21be003e5b852.json".to_owned(), None),
            ("".to_owned(), None),
            ("\u{e9}art_\u{e9}".to_owned(), None),
        ] {
            assert_eq!(art_id_in_file_name(&name), want, "{name}");
        }
    }
}
