//! Digests, written `sha256:` and lower-case hex.

use sha2::{Digest, Sha256};

/// `sha256:` followed by the lower-case hex SHA-256 of `bytes`.
pub fn sha256_tagged(bytes: &[u8]) -> String {
    let sum = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in sum {
        out.push(char::from(b"0123456789abcdef"[(b >> 4) as usize]));
        out.push(char::from(b"0123456789abcdef"[(b & 15) as usize]));
    }
    out
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
}
