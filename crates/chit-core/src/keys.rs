//! Ed25519 keys and the ways they are written.
//!
//! A public key is read in either of two forms and written in both:
//!
//! - `did:key:z6Mk…`: the W3C did:key method, multibase base58btc (`z`) of
//!   the multicodec prefix `0xed 0x01` and the 32 key bytes;
//! - `ed25519:<base64url>`: Treeship's form, the 32 key bytes in URL-safe
//!   base64 without padding.
//!
//! Private keys are PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), the form
//! OpenSSL and most tools read.

use base64::Engine;
use ed25519_dalek::pkcs8::DecodePrivateKey;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use std::fmt;

const MULTICODEC_ED25519: [u8; 2] = [0xed, 0x01];

/// The canonical encodings of the eight points of small order on
/// edwards25519 (the torsion subgroup E\[8\]); a test derives them again.
const SMALL_ORDER_ENCODINGS: [[u8; 32]; 8] = [
    // identity (0, 1)
    hex32("0100000000000000000000000000000000000000000000000000000000000000"),
    // order 2: (0, -1)
    hex32("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
    // order 4: (±sqrt(-1), 0)
    hex32("0000000000000000000000000000000000000000000000000000000000000000"),
    hex32("0000000000000000000000000000000000000000000000000000000000000080"),
    // order 8
    hex32("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"),
    hex32("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa"),
    hex32("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"),
    hex32("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85"),
];

const fn hex32(s: &str) -> [u8; 32] {
    const fn nibble(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => panic!("not a hex digit"),
        }
    }
    let b = s.as_bytes();
    assert!(b.len() == 64);
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        out[i] = nibble(b[2 * i]) << 4 | nibble(b[2 * i + 1]);
        i += 1;
    }
    out
}

/// An Ed25519 public key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey(VerifyingKey);

/// Why a key could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("a did:key must be multibase base58btc (it starts with z)")]
    DidKeyNotBase58btc,
    #[error("the did:key is not valid base58")]
    DidKeyBadBase58,
    #[error("the did:key is not an Ed25519 key (multicodec 0xed01)")]
    DidKeyNotEd25519,
    #[error("the ed25519: key is not valid base64")]
    BadBase64,
    #[error("a public key is written did:key:z6Mk… or ed25519:<base64url>")]
    UnknownForm,
    #[error("an Ed25519 public key is 32 bytes")]
    WrongLength,
    #[error("not a point on the Ed25519 curve")]
    NotOnCurve,
    #[error("a weak Ed25519 key (small order): signatures under it prove nothing")]
    Weak,
    #[error("the key's point has a small-order part (it is not in the prime-order subgroup): one secret could sign as it and as another key; use the key its owner published")]
    SmallOrderPart,
    #[error("the key's bytes are not the canonical encoding of its point: one point, written two ways, would count as two keys; write the key as its owner published it")]
    NotCanonical,
    #[error("not an Ed25519 private key in PKCS#8 PEM (-----BEGIN PRIVATE KEY-----)")]
    NotPkcs8Pem,
    /// A private key for another algorithm (named from the PEM label or the
    /// PKCS#8 algorithm OID).
    #[error(
        "an {0} private key, not Ed25519: chit signs with Ed25519 keys in PKCS#8 PEM \
         ('chit keygen' makes one)"
    )]
    OtherAlgorithm(String),
    /// An encrypted private key (`ENCRYPTED PRIVATE KEY`, or a legacy PEM
    /// with `Proc-Type: 4,ENCRYPTED`).
    #[error(
        "an encrypted private key ({0}): chit reads unencrypted PKCS#8 PEM only; decrypt a copy \
         with 'openssl pkey -in KEY -out PLAIN.pem' and keep it private (chmod 600)"
    )]
    Encrypted(String),
    /// A public key or a certificate where a private key belongs.
    #[error(
        "a public key or certificate ({0}), not a private key: give the Ed25519 private key \
         in PKCS#8 PEM ('chit keygen' makes one)"
    )]
    NotPrivate(String),
    /// An Ed25519 PKCS#8 key that does not decode.
    #[error("an Ed25519 PKCS#8 key that does not decode (a damaged file?)")]
    BadEd25519,
    /// A PEM block of some other kind.
    #[error(
        "a PEM {0} block, not an Ed25519 private key in PKCS#8 PEM (-----BEGIN PRIVATE KEY-----)"
    )]
    OtherPem(String),
}

impl PublicKey {
    /// Reads `did:key:z6Mk…` or `ed25519:<base64url>`. Refuses keys of small
    /// order (weak keys under which forged signatures verify), keys with a
    /// small-order part (`A + T`: the secret of `A` signs as `A + T` too,
    /// so one secret would count as two keys toward a threshold), and
    /// encodings that are not canonical (a second spelling of a point).
    pub fn parse(s: &str) -> Result<PublicKey, KeyError> {
        let s = s.trim();
        let bytes: Vec<u8> = if let Some(mb) = s.strip_prefix("did:key:") {
            let b58 = mb.strip_prefix('z').ok_or(KeyError::DidKeyNotBase58btc)?;
            let raw = bs58::decode(b58)
                .into_vec()
                .map_err(|_| KeyError::DidKeyBadBase58)?;
            raw.strip_prefix(&MULTICODEC_ED25519)
                .ok_or(KeyError::DidKeyNotEd25519)?
                .to_vec()
        } else if let Some(b64) = s.strip_prefix("ed25519:") {
            decode_base64(b64).ok_or(KeyError::BadBase64)?
        } else {
            return Err(KeyError::UnknownForm);
        };
        let arr: [u8; 32] = bytes.try_into().map_err(|_| KeyError::WrongLength)?;
        let key = VerifyingKey::from_bytes(&arr).map_err(|_| KeyError::NotOnCurve)?;
        if key.is_weak() {
            return Err(KeyError::Weak);
        }
        if !is_canonical(&arr) {
            return Err(KeyError::NotCanonical);
        }
        if !is_torsion_free(&key.to_edwards()) {
            return Err(KeyError::SmallOrderPart);
        }
        Ok(PublicKey(key))
    }

    /// Reads a key as Treeship writes one inside its statements: 32 bytes
    /// in base64url without padding (and no other spelling).
    pub fn from_base64url(s: &str) -> Option<PublicKey> {
        is_base64url_unpadded(s)
            .then(|| PublicKey::parse(&format!("ed25519:{s}")).ok())
            .flatten()
    }

    pub fn bytes(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    /// `did:key:z6Mk…`
    pub fn did_key(&self) -> String {
        let mut raw = MULTICODEC_ED25519.to_vec();
        raw.extend_from_slice(self.0.as_bytes());
        format!("did:key:z{}", bs58::encode(raw).into_string())
    }

    /// `ed25519:<base64url>`, Treeship's form.
    pub fn treeship(&self) -> String {
        format!(
            "ed25519:{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(self.0.as_bytes())
        )
    }

    /// A short id for envelopes' `keyid` hint: `key_` and 16 hex digits of
    /// the key's SHA-256. A hint only: verifiers pick keys from their trust.
    pub fn key_id(&self) -> String {
        let sum = Sha256::digest(self.0.as_bytes());
        format!("key_{}", crate::digest::hex(&sum[..8]))
    }

    /// Strict verification (RFC 8032 with canonical `S` and no small-order
    /// `R`): a signature that any lax verifier would also accept, and only one.
    ///
    /// The verdict is exactly `ed25519_dalek`'s `verify_strict` (Treeship's
    /// verifier), computed without decompressing `R`: `verify_strict`
    /// accepts iff `A` and `R` are not of small order and `[s]B - [k]A`
    /// compresses to `R`'s bytes. This key is never of small order
    /// ([`PublicKey::parse`] refuses those), and when the bytes match, `R`
    /// is the canonical encoding of a curve point, so "`R` is of small
    /// order" is "`R` is one of the eight canonical small-order encodings".
    /// That leaves the byte comparison, which is `verify`. A test checks the
    /// two agree, crafted small-order signatures included.
    pub fn verify_strict(&self, message: &[u8], sig: &[u8]) -> bool {
        VERIFICATIONS.with(|n| n.set(n.get() + 1));
        let Ok(sig) = <[u8; 64]>::try_from(sig) else {
            return false;
        };
        if SMALL_ORDER_ENCODINGS.iter().any(|e| sig[..32] == e[..]) {
            return false;
        }
        use ed25519_dalek::Verifier;
        self.0.verify(message, &Signature::from_bytes(&sig)).is_ok()
    }
}

/// Whether 32 bytes are the canonical encoding of the point they decode
/// to, for a point that is not of small order: its y, the low 255 bits, is
/// below p = 2^255 - 19. (The only other second spelling, x = 0 with the
/// sign bit set, is of the points (0, ±1), both of small order.)
fn is_canonical(bytes: &[u8; 32]) -> bool {
    let y_at_least_p =
        bytes[31] & 0x7f == 0x7f && bytes[1..31].iter().all(|&b| b == 0xff) && bytes[0] >= 0xed;
    !y_at_least_p
}

/// Whether `p` is in the prime-order subgroup: `[l]P`, computed as
/// `[l - 1]P + P` in variable time (a public key is public), is the
/// identity.
fn is_torsion_free(p: &curve25519_dalek::EdwardsPoint) -> bool {
    use curve25519_dalek::traits::IsIdentity;
    use curve25519_dalek::{EdwardsPoint, Scalar};
    let l_minus_1 = Scalar::ZERO - Scalar::ONE;
    (EdwardsPoint::vartime_double_scalar_mul_basepoint(&l_minus_1, p, &Scalar::ZERO) + p)
        .is_identity()
}

thread_local! {
    static VERIFICATIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many signature verifications this thread has run: what bounds on
/// the work per envelope are tested by.
pub fn verifications() -> u64 {
    VERIFICATIONS.with(|n| n.get())
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.treeship())
    }
}

/// An Ed25519 private key. Its secret never appears in `Debug` output.
pub struct SecretKey(SigningKey);

impl SecretKey {
    /// The key whose seed is these 32 bytes.
    pub fn from_seed(seed: &[u8; 32]) -> SecretKey {
        SecretKey(SigningKey::from_bytes(seed))
    }

    /// Reads a PKCS#8 PEM private key.
    pub fn from_pem(pem: &str) -> Result<SecretKey, KeyError> {
        SigningKey::from_pkcs8_pem(pem)
            .map(SecretKey)
            .map_err(|_| pem_is(pem))
    }

    /// The key as PKCS#8 v1 PEM (RFC 8410: the seed alone, no public key),
    /// the form OpenSSL and Python's cryptography read.
    pub fn to_pem(&self) -> Result<String, KeyError> {
        // SEQUENCE { INTEGER 0, SEQUENCE { OID 1.3.101.112 }, OCTET STRING { OCTET STRING seed } }
        const PREFIX: [u8; 16] = [
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20,
        ];
        let mut der = PREFIX.to_vec();
        der.extend_from_slice(&self.0.to_bytes());
        let b64 = base64::engine::general_purpose::STANDARD.encode(&der);
        der.fill(0);
        let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
        for chunk in b64.as_bytes().chunks(64) {
            pem.push_str(std::str::from_utf8(chunk).unwrap_or(""));
            pem.push('\n');
        }
        pem.push_str("-----END PRIVATE KEY-----\n");
        Ok(pem)
    }

    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }

    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.0.sign(message).to_bytes()
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey({})", self.public().treeship())
    }
}

/// Says what a PEM text that is not an Ed25519 PKCS#8 private key is: its
/// label tells the kind, and for PKCS#8 its algorithm OID the algorithm.
fn pem_is(pem: &str) -> KeyError {
    use ed25519_dalek::pkcs8::spki::der::Decode;
    use ed25519_dalek::pkcs8::PrivateKeyInfo;
    let Some(start) = pem.find("-----BEGIN ") else {
        return KeyError::NotPkcs8Pem;
    };
    let rest = &pem[start + "-----BEGIN ".len()..];
    let Some(end) = rest.find("-----") else {
        return KeyError::NotPkcs8Pem;
    };
    let label = &rest[..end];
    if label.is_empty()
        || label.len() > 40
        || !label
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ')
    {
        return KeyError::NotPkcs8Pem;
    }
    let body = &rest[end + 5..];
    let body = &body[..body.find("-----END ").unwrap_or(body.len())];
    let encrypted = body.contains("ENCRYPTED");
    match label {
        "PRIVATE KEY" => {
            let b64: String = body
                .lines()
                .filter(|l| !l.contains(':'))
                .flat_map(|l| l.chars().filter(|c| !c.is_whitespace()))
                .collect();
            let Some(der) = decode_base64(&b64) else {
                return KeyError::NotPkcs8Pem;
            };
            let Ok(info) = PrivateKeyInfo::from_der(&der) else {
                return KeyError::NotPkcs8Pem;
            };
            let oid = info.algorithm.oid.to_string();
            let name = match oid.as_str() {
                "1.3.101.112" => return KeyError::BadEd25519,
                "1.3.101.113" => "Ed448".to_owned(),
                "1.3.101.110" => "X25519".to_owned(),
                "1.3.101.111" => "X448".to_owned(),
                "1.2.840.113549.1.1.1" => "RSA".to_owned(),
                "1.2.840.113549.1.1.10" => "RSA-PSS".to_owned(),
                "1.2.840.10045.2.1" => "EC (ECDSA)".to_owned(),
                "1.2.840.10040.4.1" => "DSA".to_owned(),
                "1.2.840.113549.1.3.1" => "DH".to_owned(),
                _ => format!("algorithm {oid}"),
            };
            KeyError::OtherAlgorithm(name)
        }
        "ENCRYPTED PRIVATE KEY" => KeyError::Encrypted(label.to_owned()),
        l if encrypted && l.ends_with("PRIVATE KEY") => KeyError::Encrypted(l.to_owned()),
        "RSA PRIVATE KEY" => KeyError::OtherAlgorithm("RSA (PKCS#1)".into()),
        "EC PRIVATE KEY" => KeyError::OtherAlgorithm("EC (SEC 1)".into()),
        "DSA PRIVATE KEY" => KeyError::OtherAlgorithm("DSA".into()),
        "OPENSSH PRIVATE KEY" => KeyError::OtherPem(label.to_owned()),
        l if l.contains("PUBLIC KEY") || l.contains("CERTIFICATE") => {
            KeyError::NotPrivate(l.to_owned())
        }
        l => KeyError::OtherPem(l.to_owned()),
    }
}

/// Decodes base64 in either alphabet (standard or URL-safe), padded or not,
/// as DSSE asks verifiers to accept. `None` for anything else.
pub fn decode_base64(s: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let url = s.contains(['-', '_']);
    let padded = s.ends_with('=');
    let engine = match (url, padded) {
        (true, true) => &URL_SAFE,
        (true, false) => &URL_SAFE_NO_PAD,
        (false, true) => &STANDARD,
        (false, false) => &STANDARD_NO_PAD,
    };
    engine.decode(s).ok()
}

/// Whether `s` reads as URL-safe base64 without padding, the only form
/// Treeship 0.25.1 decodes (DSSE allows standard and URL-safe, padded or
/// not, and [`decode_base64`] reads all four).
pub fn is_base64url_unpadded(s: &str) -> bool {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .is_ok()
}

/// URL-safe base64 without padding, as chit writes it.
pub fn encode_base64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::Verifier;

    /// Treeship's test key (shared/vectors/treeship-envelopes/README.md).
    const TREESHIP_KEY: &str = "ed25519:SeVxSanX9yDn1yvX3DdaNsLaqXcy2X3FUHSyz8QRHFY";

    #[test]
    fn both_forms_round_trip() {
        let k = PublicKey::parse(TREESHIP_KEY).unwrap();
        assert_eq!(k.treeship(), TREESHIP_KEY);
        let did = k.did_key();
        assert!(did.starts_with("did:key:z6Mk"), "{did}");
        assert_eq!(PublicKey::parse(&did).unwrap(), k);
    }

    #[test]
    fn rfc8032_test_1() {
        // RFC 8032 section 7.1, TEST 1: empty message.
        let seed: [u8; 32] =
            hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
        let k = SecretKey::from_seed(&seed);
        assert_eq!(
            k.public().bytes().to_vec(),
            hex::<32>("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a").to_vec()
        );
        let sig = k.sign(b"");
        assert_eq!(
            sig.to_vec(),
            hex::<64>("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b").to_vec()
        );
        assert!(k.public().verify_strict(b"", &sig));
        assert!(!k.public().verify_strict(b"x", &sig));
        // The key in did:key form, as the did:key spec's test vector writes it.
        assert_eq!(
            k.public().did_key(),
            "did:key:z6MktwupdmLXVVqTzCw4i46r4uGyosGXRnR3XjN4Zq7oMMsw"
        );
    }

    #[test]
    fn pem_round_trip_and_refusals() {
        let k = SecretKey::from_seed(&[7; 32]);
        let pem = k.to_pem().unwrap();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        // RFC 8410 section 10.3's example key, byte for byte.
        let rfc = SecretKey::from_seed(&[
            0xd4, 0xee, 0x72, 0xdb, 0xf9, 0x13, 0x58, 0x4a, 0xd5, 0xb6, 0xd8, 0xf1, 0xf7, 0x69,
            0xf8, 0xad, 0x3a, 0xfe, 0x7c, 0x28, 0xcb, 0xf1, 0xd4, 0xfb, 0xe0, 0x97, 0xa8, 0x8f,
            0x44, 0x75, 0x58, 0x42,
        ]);
        assert_eq!(
            rfc.to_pem().unwrap(),
            "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n-----END PRIVATE KEY-----\n"
        );
        assert_eq!(SecretKey::from_pem(&pem).unwrap().public(), k.public());
        assert!(SecretKey::from_pem("not a key").is_err());
        assert!(PublicKey::parse("ed25519:AAAA").is_err());
        assert!(PublicKey::parse("did:key:zQ3s").is_err());
        assert!(PublicKey::parse("ssh-ed25519 AAAA").is_err());
        // The identity point: small order, refused.
        let mut weak = [0u8; 32];
        weak[0] = 1;
        assert!(PublicKey::parse(&format!("ed25519:{}", encode_base64url(&weak))).is_err());
    }

    #[test]
    fn a_pem_that_is_not_an_ed25519_key_says_what_it_is() {
        let keys = concat!(env!("CARGO_MANIFEST_DIR"), "/../chit/tests/data/keys/");
        for (file, want) in [
            ("rsa.pem", KeyError::OtherAlgorithm("RSA".into())),
            (
                "rsa-pkcs1.pem",
                KeyError::OtherAlgorithm("RSA (PKCS#1)".into()),
            ),
            ("ed448.pem", KeyError::OtherAlgorithm("Ed448".into())),
            ("ec.pem", KeyError::OtherAlgorithm("EC (ECDSA)".into())),
            ("x25519.pem", KeyError::OtherAlgorithm("X25519".into())),
            (
                "ed25519-public.pem",
                KeyError::NotPrivate("PUBLIC KEY".into()),
            ),
            (
                "ed25519-encrypted.pem",
                KeyError::Encrypted("ENCRYPTED PRIVATE KEY".into()),
            ),
        ] {
            let pem = std::fs::read_to_string(format!("{keys}{file}")).unwrap();
            assert_eq!(SecretKey::from_pem(&pem).err(), Some(want), "{file}");
        }
    }

    #[test]
    fn base64_both_alphabets() {
        assert_eq!(decode_base64("-_8").unwrap(), vec![0xfb, 0xff]);
        assert_eq!(decode_base64("+/8=").unwrap(), vec![0xfb, 0xff]);
        assert_eq!(decode_base64("+/8").unwrap(), vec![0xfb, 0xff]);
        assert!(decode_base64("+_8").is_none());
        assert!(decode_base64("a").is_none());
    }

    #[test]
    fn small_order_encodings_are_the_torsion_subgroup() {
        use curve25519_dalek::constants::EIGHT_TORSION;
        use curve25519_dalek::edwards::CompressedEdwardsY;
        let mut ours = SMALL_ORDER_ENCODINGS.to_vec();
        let mut theirs: Vec<[u8; 32]> = EIGHT_TORSION.iter().map(|p| p.compress().0).collect();
        ours.sort();
        theirs.sort();
        assert_eq!(ours, theirs);
        for e in SMALL_ORDER_ENCODINGS {
            let p = CompressedEdwardsY(e).decompress().unwrap();
            assert!(p.is_small_order());
            assert_eq!(p.compress().0, e, "canonical");
        }
    }

    /// The subgroup and encoding checks agree with curve25519-dalek's own:
    /// a key, the key plus each torsion point, and every y at or past p.
    #[test]
    fn torsion_and_canonical_checks_match_curve25519_dalek() {
        use curve25519_dalek::constants::EIGHT_TORSION;
        use curve25519_dalek::edwards::CompressedEdwardsY;
        for i in 0u32..50 {
            let seed: [u8; 32] = Sha256::digest(i.to_le_bytes()).into();
            let a = SigningKey::from_bytes(&seed).verifying_key().to_edwards();
            for t in EIGHT_TORSION.iter() {
                let p = a + t;
                assert_eq!(is_torsion_free(&p), p.is_torsion_free());
                assert!(is_canonical(&p.compress().0));
                assert_eq!(is_torsion_free(t), t.is_torsion_free());
            }
        }
        for y in 0u8..19 {
            for sign in [0u8, 0x80] {
                let mut enc = [0xffu8; 32];
                enc[0] = 0xed + y;
                enc[31] = 0x7f | sign;
                assert!(!is_canonical(&enc));
                if let Some(p) = CompressedEdwardsY(enc).decompress() {
                    assert_ne!(p.compress().0, enc);
                }
                // One below p: canonical.
                let mut below = enc;
                below[0] = 0xec;
                assert!(is_canonical(&below));
            }
        }
    }

    /// `verify_strict` here and in ed25519-dalek agree, over honest,
    /// damaged and crafted signatures: R of small order with `[s]B - [k]A`
    /// equal to it (which `verify` alone accepts), R with a torsion part,
    /// non-canonical S, non-canonical and undecodable R.
    #[test]
    fn strict_verdicts_match_ed25519_dalek() {
        use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT as B, EIGHT_TORSION};
        use curve25519_dalek::scalar::Scalar;
        use sha2::Sha512;
        let hram = |r: &[u8; 32], a: &[u8; 32], m: &[u8]| {
            let mut h = Sha512::new();
            h.update(r);
            h.update(a);
            h.update(m);
            Scalar::from_hash(h)
        };
        let mut cases: Vec<(VerifyingKey, Vec<u8>, [u8; 64])> = Vec::new();
        let mut lax_only = 0;
        for i in 0u32..200 {
            let seed: [u8; 32] = Sha256::digest(i.to_le_bytes()).into();
            let sk = SigningKey::from_bytes(&seed);
            let vk = sk.verifying_key();
            let a = sk.to_scalar();
            let m = format!("message {i}").into_bytes();
            let good = sk.sign(&m).to_bytes();
            cases.push((vk, m.clone(), good));
            // One bit flipped in R, in S.
            for byte in [0usize, 31, 32, 63] {
                let mut bad = good;
                bad[byte] ^= 1 << (i % 8);
                cases.push((vk, m.clone(), bad));
            }
            // S + l: not canonical.
            let s = Scalar::from_canonical_bytes(good[32..].try_into().unwrap()).unwrap();
            let mut wide = [0u8; 32];
            let mut carry = 0u16;
            let l = Scalar::ZERO - Scalar::ONE; // l - 1
            for (j, w) in wide.iter_mut().enumerate() {
                let v = s.as_bytes()[j] as u16 + l.as_bytes()[j] as u16 + carry + (j == 0) as u16;
                *w = v as u8;
                carry = v >> 8;
            }
            let mut noncanon = good;
            noncanon[32..].copy_from_slice(&wide);
            cases.push((vk, m.clone(), noncanon));
            // R of small order with s = k·a: [s]B - [k]A = identity.
            for t in EIGHT_TORSION.iter() {
                let r = t.compress().0;
                let k = hram(&r, vk.as_bytes(), &m);
                let mut sig = [0u8; 64];
                sig[..32].copy_from_slice(&r);
                sig[32..].copy_from_slice((k * a).as_bytes());
                if vk.verify(&m, &Signature::from_bytes(&sig)).is_ok() {
                    lax_only += 1;
                }
                cases.push((vk, m.clone(), sig));
            }
            // R = [r]B + T: a torsion part the equation cannot match.
            let r = Scalar::from(u64::from(i) + 5);
            let big_r = (r * B + EIGHT_TORSION[(i % 7 + 1) as usize]).compress().0;
            let k = hram(&big_r, vk.as_bytes(), &m);
            let mut sig = [0u8; 64];
            sig[..32].copy_from_slice(&big_r);
            sig[32..].copy_from_slice((r + k * a).as_bytes());
            cases.push((vk, m.clone(), sig));
            // R bytes that are not canonical (y >= p) or not on the curve.
            for raw in [[0xffu8; 32], {
                let mut y = [0xffu8; 32];
                y[0] = 0xee;
                y[31] = 0x7f;
                y
            }] {
                let mut sig = good;
                sig[..32].copy_from_slice(&raw);
                cases.push((vk, m.clone(), sig));
            }
        }
        // The crafted signatures really are ones plain verify accepts.
        assert!(lax_only >= 200, "{lax_only}");
        let mut accepted = 0;
        for (vk, m, sig) in &cases {
            let theirs = vk.verify_strict(m, &Signature::from_bytes(sig)).is_ok();
            let ours = PublicKey(*vk).verify_strict(m, sig);
            assert_eq!(ours, theirs, "{}", encode_base64url(sig));
            accepted += ours as usize;
        }
        assert_eq!(accepted, 200, "only the honest signatures verify");
    }

    fn hex<const N: usize>(s: &str) -> [u8; N] {
        let mut out = [0u8; N];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
        }
        out
    }
}
