//! `Trust` (a trust file) and `Key` (an Ed25519 signing key), read and used
//! as `chit verify --trust` and `chit keygen`/`chit sign` use them.

use crate::errors;
use chit_core::keys::SecretKey;
use chit_core::kinds::treeship::statement::{self, Claim, SignError};
use chit_core::trust::Trust;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::io::Read;
use std::path::PathBuf;

/// The most a key file may be: a PEM key is a few thousand bytes at most.
const KEY_FILE_MAX: usize = 16 * 1024;

/// Why a file could not be read.
pub enum FileError {
    /// Over the limit given.
    TooLarge(String),
    Other(String),
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileError::TooLarge(why) | FileError::Other(why) => f.write_str(why),
        }
    }
}

/// Reads at most `max` bytes of a file, or says why not in the words the
/// chit command uses.
///
/// Only a regular file is read: a FIFO or a device could block the caller
/// without end (its type is asked of the path before it is opened).
pub fn read_file(path: &std::path::Path, max: usize) -> Result<Vec<u8>, FileError> {
    let meta = std::fs::metadata(path).map_err(|e| io_why(&e))?;
    if meta.is_dir() {
        return Err(FileError::Other("is a folder".to_owned()));
    }
    if !meta.is_file() {
        return Err(FileError::Other(
            "is not a regular file (a FIFO or a device): give a file".to_owned(),
        ));
    }
    if meta.len() > max as u64 {
        return Err(FileError::TooLarge(format!(
            "the input is {} bytes, over the limit of {max} (raise it with --max-size)",
            meta.len()
        )));
    }
    let file = std::fs::File::open(path).map_err(|e| io_why(&e))?;
    let mut bytes = Vec::new();
    file.take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_why(&e))?;
    if bytes.len() > max {
        return Err(FileError::TooLarge(format!(
            "the input is over the limit of {max} bytes (raise it with --max-size)"
        )));
    }
    Ok(bytes)
}

fn io_why(e: &std::io::Error) -> FileError {
    FileError::Other(match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => {
            let s = e.to_string();
            match s.find(" (os error") {
                Some(i) => s[..i].to_owned(),
                None => s,
            }
        }
    })
}

/// The keys whose signatures count (`chit verify --trust`): TOML `[[key]]`
/// tables, each with `name`, `public_key` (`did:key:…` or `ed25519:…`), an
/// optional `kinds = [...]` and an optional `did`.
///
/// `Trust(text)` reads a trust file's text; `Trust.from_path(path)` the
/// file. A bad one raises `chit.Error` with the line chit prints.
#[pyclass(frozen, name = "Trust", module = "chit")]
pub struct TrustFile(Trust);

impl TrustFile {
    pub fn trust(&self) -> &Trust {
        &self.0
    }
}

#[pymethods]
impl TrustFile {
    #[new]
    fn new(text: &str) -> PyResult<TrustFile> {
        Trust::parse(text)
            .map(TrustFile)
            .map_err(|e| errors::error(format!("trust file: {e}")))
    }

    /// Reads the trust file at `path` (at most 64 MiB, as `--max-size`).
    #[staticmethod]
    fn from_path(py: Python<'_>, path: PathBuf) -> PyResult<TrustFile> {
        let max = chit_core::Limits::default().max_size;
        let shown = path.display();
        let bytes = py
            .detach(|| read_file(&path, max))
            .map_err(|why| errors::error(format!("cannot read trust file {shown}: {why}")))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| errors::error(format!("trust file {shown} is not UTF-8")))?;
        Trust::parse(&text)
            .map(TrustFile)
            .map_err(|e| errors::error(format!("trust file {shown}: {e}")))
    }

    fn __repr__(&self) -> String {
        format!("Trust({} keys)", self.0.public_keys().len())
    }
}

/// An Ed25519 signing key, as `chit keygen` makes and `chit sign` uses:
/// `Key.generate()`, `Key.from_path(pem_file)`, `Key.from_pem(text)`.
#[pyclass(frozen, name = "Key", module = "chit")]
pub struct SigningKey(SecretKey);

#[pymethods]
impl SigningKey {
    /// A new key from the system's randomness.
    #[staticmethod]
    fn generate() -> PyResult<SigningKey> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)
            .map_err(|e| errors::error(format!("no randomness from the system: {e}")))?;
        let key = SecretKey::from_seed(&seed);
        seed.fill(0);
        Ok(SigningKey(key))
    }

    /// Reads a PKCS#8 PEM private key file (as `chit keygen --out` writes).
    /// Warns, as ssh does, when others may read or write it.
    #[staticmethod]
    fn from_path(py: Python<'_>, path: PathBuf) -> PyResult<SigningKey> {
        let shown = path.display();
        let bytes = py
            .detach(|| read_file(&path, KEY_FILE_MAX))
            .map_err(|why| {
                let why = match why {
                    FileError::TooLarge(_) => format!(
                    "over the limit of {KEY_FILE_MAX} bytes for a key file (a PEM key is a few \
                     thousand bytes at most: is this the key?)"
                ),
                    FileError::Other(why) => why,
                };
                errors::error(format!("cannot read key {shown}: {why}"))
            })?;
        let text = String::from_utf8(bytes)
            .map_err(|_| errors::error(format!("{shown} is not a PEM key file")))?;
        let key = SecretKey::from_pem(&text).map_err(|e| errors::error(format!("{shown}: {e}")))?;
        warn_if_open(py, &path)?;
        Ok(SigningKey(key))
    }

    /// Reads a PKCS#8 PEM private key from its text.
    #[staticmethod]
    fn from_pem(text: &str) -> PyResult<SigningKey> {
        SecretKey::from_pem(text)
            .map(SigningKey)
            .map_err(|e| errors::error(format!("the key: {e}")))
    }

    /// The key as PKCS#8 PEM, as `chit keygen` writes it (keep it secret).
    fn to_pem(&self) -> PyResult<String> {
        self.0.to_pem().map_err(|e| errors::error(e.to_string()))
    }

    /// The public key as a `did:key:…`.
    #[getter]
    fn did(&self) -> String {
        self.0.public().did_key()
    }

    /// The public key as `ed25519:…`, the form a trust file's `public_key`
    /// names.
    #[getter]
    fn treeship(&self) -> String {
        self.0.public().treeship()
    }

    /// Checks `payload` (a JSON object's bytes) as `kind` where chit knows
    /// the kind, then signs a Treeship receipt statement around it: a DSSE
    /// envelope's JSON, exactly as `chit sign --kind KIND` writes it. chit
    /// signs nothing it would reject: a payload that breaks its kind's
    /// rules raises `chit.Invalid`, one that cannot be read
    /// `chit.Unreadable`.
    #[pyo3(signature = (kind, payload, *, subject=None, system="chit://sign"))]
    fn sign<'py>(
        &self,
        py: Python<'py>,
        kind: &str,
        payload: &[u8],
        subject: Option<&str>,
        system: &str,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let limits = chit_core::Limits::default();
        let doc = chit_core::json::parse(payload, &limits)
            .map_err(|e| errors::unreadable(format!("cannot read the payload: {e}")))?;
        let claim = Claim {
            kind,
            system,
            subject,
            at_unix_secs: now_secs(),
        };
        let env = statement::sign_checked(&self.0, claim, doc.root()).map_err(|e| match e {
            SignError::NotAnObject => errors::invalid(format!("the payload: {e}")),
            SignError::Breaks { kind, .. } => errors::invalid(format!(
                "refusing to sign the payload: {e} (chit.check(payload, kind={kind:?}) gives \
                 the details)"
            )),
            SignError::Inexact { .. } => {
                errors::invalid(format!("refusing to sign the payload: {e}"))
            }
            SignError::KindDiffers { .. } => {
                errors::error(format!("refusing to sign the payload: {e}"))
            }
            e => errors::error(e.to_string()),
        })?;
        if chit_core::Kind::from_name(kind).is_none() {
            warn(
                py,
                &format!(
                    "chit does not know the kind '{kind}'; the payload is signed as given, \
                     unchecked"
                ),
            )?;
        }
        Ok(PyBytes::new(py, env.to_json().as_bytes()))
    }

    fn __repr__(&self) -> String {
        format!("Key({})", self.0.public().treeship())
    }
}

/// Seconds since 1970, for a statement's timestamp.
fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Warns (a Python `UserWarning`), as ssh does, when others may read or
/// write a private key file.
fn warn_if_open(py: Python<'_>, path: &std::path::Path) -> PyResult<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(m) = std::fs::metadata(path) {
            let mode = m.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                let message = format!(
                    "the private key {p} is open to others (mode {mode:04o}); anyone who can \
                     read it can sign as you: run 'chmod 600 {p}'",
                    p = path.display()
                );
                warn(py, &message)?;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (py, path);
    Ok(())
}

/// A Python `UserWarning` (shown once per place by default, as Python's).
fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    let message =
        std::ffi::CString::new(message.replace('\0', " ")).expect("no NUL after the replace");
    let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
    PyErr::warn(py, &category, &message, 1)
}
