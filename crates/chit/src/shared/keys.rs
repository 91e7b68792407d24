//! Private keys as the commands read them.

use crate::exit::Failure;
use crate::inputs::{self, Source};
use chit_core::keys::SecretKey;
use std::path::Path;

/// The most a key file may be: a PEM key is a few thousand bytes at most
/// (an ML-DSA-44 key's, with its public key).
const KEY_FILE_MAX: usize = 16 * 1024;

/// Reads an Ed25519 private key (PKCS#8 PEM), warning on standard error,
/// as ssh does, when others may read or write the file.
pub fn read_key(path: &Path) -> Result<SecretKey, Failure> {
    let text = read_key_text(path)?;
    let key = SecretKey::from_pem(&text)
        .map_err(|e| Failure::error(format!("{}: {e}", path.display())))?;
    warn_if_open(path);
    Ok(key)
}

/// A private key file's text (a PEM key of any algorithm), read within
/// its own fixed limit.
pub fn read_key_text(path: &Path) -> Result<String, Failure> {
    // --max-size is for documents; a key file has its own fixed limit, and
    // the message names it.
    let bytes = inputs::read(&Source::File(path.to_path_buf()), KEY_FILE_MAX).map_err(|why| {
        let why = if why.is_size() {
            format!(
                "over the limit of {KEY_FILE_MAX} bytes for a key file (a PEM key is a few \
                 thousand bytes at most: is this the key?)"
            )
        } else {
            why.to_string()
        };
        Failure::error(format!("cannot read key {}: {why}", path.display()))
    })?;
    String::from_utf8(bytes)
        .map_err(|_| Failure::error(format!("{} is not a PEM key file", path.display())))
}

/// Warns on standard error, as ssh does, when others may read or write a
/// private key file.
pub fn warn_if_open(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(m) = std::fs::metadata(path) {
            let mode = m.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                anstream::eprintln!(
                    "chit: warning: the private key {p} is open to others (mode {mode:04o}); \
                     anyone who can read it can sign as you: run 'chmod 600 {p}'",
                    p = path.display()
                );
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}
