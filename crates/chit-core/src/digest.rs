//! Digests, written `sha256:` and lower-case hex.

use sha2::{Digest, Sha256};

/// `sha256:` followed by the lower-case hex SHA-256 of `bytes`.
pub fn sha256_tagged(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

/// The lower-case hex SHA-256 of `bytes`, untagged.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The SHA-256 of `bytes`, as its 32 bytes.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// A SHA-256 written as exactly 64 hex digits (either case), as its 32
/// bytes; None for anything else.
pub fn unhex32(s: &str) -> Option<[u8; 32]> {
    let b = s.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = digit(b[2 * i])? << 4 | digit(b[2 * i + 1])?;
    }
    Some(out)
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = vec![0u8; bytes.len() * 2];
    for (pair, b) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 15)];
    }
    // Only hex digits were written (a char a push cost several times more).
    String::from_utf8(out).unwrap_or_default()
}

/// A running digest in the algorithm another digest names (`sha256:`,
/// `sha384:` or `sha512:`), to compute the same kind of digest over bytes
/// that arrive in pieces (a workload's input or output).
pub struct Hasher {
    alg: &'static str,
    state: State,
}

enum State {
    Sha256(Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
}

/// A digest algorithm chit does not compute.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("chit cannot compute {0:?} digests (it computes sha256, sha384 and sha512)")]
pub struct UnknownAlgorithm(pub String);

impl Hasher {
    /// A hasher for the algorithm `claimed` (a digest `alg:hex`) is in.
    pub fn like(claimed: &str) -> Result<Hasher, UnknownAlgorithm> {
        let alg = claimed.split_once(':').map(|(a, _)| a).unwrap_or("");
        let (alg, state) = match alg {
            "sha256" => ("sha256", State::Sha256(Sha256::new())),
            "sha384" => ("sha384", State::Sha384(sha2::Sha384::new())),
            "sha512" => ("sha512", State::Sha512(sha2::Sha512::new())),
            _ => return Err(UnknownAlgorithm(alg.to_owned())),
        };
        Ok(Hasher { alg, state })
    }

    pub fn update(&mut self, bytes: &[u8]) {
        match &mut self.state {
            State::Sha256(h) => h.update(bytes),
            State::Sha384(h) => h.update(bytes),
            State::Sha512(h) => h.update(bytes),
        }
    }

    /// The digest, `alg:` and lower-case hex.
    pub fn finish(self) -> String {
        let bytes: Vec<u8> = match self.state {
            State::Sha256(h) => h.finalize().to_vec(),
            State::Sha384(h) => h.finalize().to_vec(),
            State::Sha512(h) => h.finalize().to_vec(),
        };
        format!("{}:{}", self.alg, hex(&bytes))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_value() {
        assert_eq!(
            super::sha256_tagged(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn hex_is_lower_case_two_digits_a_byte() {
        assert_eq!(super::hex(&[]), "");
        assert_eq!(super::hex(&[0x00, 0x0f, 0xa5, 0xff, 0x10]), "000fa5ff10");
        let all: Vec<u8> = (0..=255).collect();
        let want: String = all.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(super::hex(&all), want);
    }

    #[test]
    fn a_hasher_follows_the_claimed_algorithm() {
        let mut h = super::Hasher::like("sha256:00").unwrap();
        h.update(b"a");
        h.update(b"bc");
        assert_eq!(h.finish(), super::sha256_tagged(b"abc"));
        let mut h = super::Hasher::like("sha512:00").unwrap();
        h.update(b"abc");
        assert!(h.finish().starts_with("sha512:ddaf35a193617aba"));
        assert!(super::Hasher::like("sha256").is_err());
        assert!(super::Hasher::like("md5:00").is_err());
    }
}
