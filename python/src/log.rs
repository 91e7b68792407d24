//! `Log`: a chit receipt log (a SQLite file, a log folder or a PostgreSQL
//! URL), opened as `chit log` opens it. Appends are checked under the
//! log's own policy by `chit_logstore` (and through it `chit_core::check`).

use crate::errors::{self, Deferred};
use chit_logstore::{EntryName, Log, LogError, Outcome};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;
use std::sync::Mutex;

/// How long an append waits for another sequencer of the same log.
const LEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// A key file is a few hundred bytes.
const KEY_MAX: usize = 16 * 1024;

fn failed(e: impl std::fmt::Display) -> Deferred {
    Deferred::Error(e.to_string())
}

/// The log, and the key file to sign with once an append needs it.
struct Held {
    log: Log,
    signer: bool,
    key: Option<PathBuf>,
}

/// A chit receipt log: `Log.open(store)`, where `store` is a SQLite file,
/// a log folder or a `postgres://` URL made by `chit log init`.
///
/// `append` checks an entry under the log's policy and appends it; `entry`,
/// `proof`, `size` and `checkpoint` read it. Threads may share one (its
/// calls take turns, the GIL released while they wait), and it is a
/// context manager.
#[pyclass(frozen, name = "Log", module = "chit")]
pub struct LogHandle {
    held: Mutex<Option<Held>>,
}

impl LogHandle {
    /// Runs `f` on the open log with the GIL released and the log's lock
    /// held: it touches no Python, and what it fails with is raised after.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Held) -> Result<T, Deferred> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut guard = self.held.lock().map_err(|_| {
                Deferred::Error("the log's lock was poisoned by a panic".to_owned())
            })?;
            match guard.as_mut() {
                Some(held) => f(held),
                None => Err(Deferred::Error("the log is closed".to_owned())),
            }
        })
        .map_err(PyErr::from)
    }
}

impl Held {
    /// The log's private key, taken before the first append: `key=`, else
    /// the key file named at `chit log init`.
    fn signed(&mut self) -> Result<&mut Log, Deferred> {
        if !self.signer {
            let path = match (&self.key, &self.log.meta().key_file) {
                (Some(k), _) => k.clone(),
                (None, Some(k)) => PathBuf::from(k),
                (None, None) => {
                    return Err(Deferred::Error(
                        "give the log's private key (Log.open(store, key=PEM_FILE)); this log \
                         names none"
                            .to_owned(),
                    ))
                }
            };
            let bytes = crate::keys::read_file(&path, KEY_MAX).map_err(|why| {
                Deferred::Error(format!("cannot read the key {}: {why}", path.display()))
            })?;
            let pem = String::from_utf8(bytes)
                .map_err(|_| Deferred::Error(format!("the key {} is not UTF-8", path.display())))?;
            self.log.add_signer(&pem).map_err(failed)?;
            self.signer = true;
        }
        Ok(&mut self.log)
    }
}

/// What `Log.append` did: the entry's `index`, its content address
/// (`sha256:…` of its bytes), a C2SP tlog-proof of it under the log's
/// newest checkpoint, and whether it was `present` already.
#[pyclass(frozen, name = "Appended", module = "chit")]
pub struct Logged {
    index: u64,
    address: String,
    proof: String,
    present: bool,
}

#[pymethods]
impl Logged {
    #[getter]
    fn index(&self) -> u64 {
        self.index
    }

    /// `sha256:` and the hex SHA-256 of the entry's bytes.
    #[getter]
    fn address(&self) -> &str {
        &self.address
    }

    /// A C2SP tlog-proof: `chit.verify_proof(proof, entry, policy)` and
    /// `chit verify --proof` prove the entry with it, offline.
    #[getter]
    fn proof(&self) -> &str {
        &self.proof
    }

    /// The log already held these very bytes (at `index`).
    #[getter]
    fn present(&self) -> bool {
        self.present
    }

    fn __repr__(&self) -> String {
        format!(
            "Appended(index={}, address={:?}, present={})",
            self.index,
            self.address,
            if self.present { "True" } else { "False" }
        )
    }
}

/// An index past the log's end is Python's `IndexError`.
fn out_of_range(e: LogError) -> Deferred {
    match e {
        LogError::Proof(chit_log::tree::ProofError::IndexOutOfRange { index, size }) => {
            Deferred::Index(format!("no entry {index}: the log holds {size}"))
        }
        e => failed(e),
    }
}

fn proof_text(
    log: &mut Log,
    index: u64,
    policy: Option<&chit_log::policy::Policy>,
) -> Result<String, Deferred> {
    let proof = log.tlog_proof(index, policy).map_err(out_of_range)?;
    String::from_utf8(proof.to_bytes()).map_err(failed)
}

/// The entry `Log.entry` was asked for: an index, or a content address.
fn entry_name(which: &Bound<'_, PyAny>) -> PyResult<EntryName> {
    let wrong = || {
        pyo3::exceptions::PyTypeError::new_err(
            "give an index (0, 1, ...) or a content address (sha256:HEX)",
        )
    };
    if which.is_instance_of::<pyo3::types::PyBool>() {
        return Err(wrong());
    }
    if which.is_instance_of::<pyo3::types::PyInt>() {
        return match which.extract::<u64>() {
            Ok(index) => Ok(EntryName::Index(index)),
            Err(_) => Err(pyo3::exceptions::PyIndexError::new_err(if which.lt(0)? {
                format!("no entry {which}: an index is 0 or more")
            } else {
                format!("no entry {which}: past the end of any log")
            })),
        };
    }
    let text: String = which.extract().map_err(|_| wrong())?;
    text.parse()
        .map_err(|why| errors::error(format!("{text}: {why}")))
}

#[pymethods]
impl LogHandle {
    /// Opens the log at `store` (a SQLite file, a log folder or a
    /// `postgres://` URL). `key` is its private key file, needed to append
    /// where the log names none (`chit log init --key` names one).
    #[staticmethod]
    #[pyo3(signature = (store, *, key=None))]
    fn open(py: Python<'_>, store: PathBuf, key: Option<PathBuf>) -> PyResult<LogHandle> {
        let location = store
            .to_str()
            .ok_or_else(|| errors::error(format!("{}: not UTF-8", store.display())))?
            .to_owned();
        let log = py
            .detach(|| {
                let inner = chit_logstore::open(&location)?;
                Log::open(Box::new(chit_logstore::store::FullTiles::new(inner)))
            })
            .map_err(|e| errors::error(e.to_string()))?;
        Ok(LogHandle {
            held: Mutex::new(Some(Held {
                log,
                signer: false,
                key,
            })),
        })
    }

    /// Checks `data` under the log's policy, then appends it (the bytes
    /// exactly); the same bytes again are answered with their index. An
    /// entry the policy refuses raises `chit.Invalid`, with the rules it
    /// breaks; one that cannot be read `chit.Unreadable`.
    fn append(&self, py: Python<'_>, data: &[u8]) -> PyResult<Logged> {
        self.with(py, |held| {
            let log = held.signed()?;
            log.lease(LEASE_WAIT).map_err(failed)?;
            let submitted = log.submit(&[data]);
            let released = log.release();
            let sub = submitted.map_err(failed)?;
            released.map_err(failed)?;
            let outcome = sub
                .outcomes
                .first()
                .ok_or_else(|| Deferred::Error("the log gave no answer".to_owned()))?;
            let (index, sha256, present) = match outcome {
                Outcome::Appended { index, sha256, .. } => (*index, sha256, false),
                Outcome::Duplicate { index, sha256, .. } => (*index, sha256, true),
                Outcome::Refused(r) => {
                    return Err(Deferred::Invalid(format!(
                        "the log {} refused the entry: {}",
                        log.meta().origin,
                        chit_logstore::policy::refusal(r)
                    )))
                }
                Outcome::Unreadable(why) => {
                    return Err(Deferred::Unreadable(format!("the entry: {why}")));
                }
            };
            // Proven under the checkpoint the append signed, over the
            // tiles it wrote (as the server answers a batch).
            let inclusion_proof = log
                .inclusion_proofs_over(&[index], sub.size, &sub.tiles)
                .map_err(failed)?
                .pop()
                .ok_or_else(|| Deferred::Error("the log gave no proof".to_owned()))?;
            let proof = chit_log::proof::TlogProof {
                extra: None,
                index,
                inclusion_proof,
                checkpoint: sub.checkpoint,
            };
            Ok(Logged {
                index,
                address: format!("sha256:{}", chit_core::digest::hex(sha256)),
                proof: String::from_utf8(proof.to_bytes()).map_err(failed)?,
                present,
            })
        })
    }

    /// An entry's bytes, by its index or its content address
    /// (`sha256:HEX`); text is read as `chit log get` reads it.
    fn entry<'py>(
        &self,
        py: Python<'py>,
        which: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let name = entry_name(which)?;
        let shown = which.to_string();
        let data = self.with(py, |held| {
            let log = &mut held.log;
            let index = log
                .locate(name)
                .map_err(failed)?
                .ok_or_else(|| Deferred::Key(format!("no entry has content address {shown}")))?;
            log.entry(index).map(|e| e.data).map_err(out_of_range)
        })?;
        Ok(PyBytes::new(py, &data))
    }

    /// A C2SP tlog-proof of entry `index` (the text `chit log proof`
    /// writes): under the newest checkpoint, or, given a tlog-policy, the
    /// newest whose cosignatures meet its quorum.
    #[pyo3(signature = (index, *, policy=None))]
    fn proof(&self, py: Python<'_>, index: u64, policy: Option<&str>) -> PyResult<String> {
        let policy = policy.map(crate::check::read_policy).transpose()?;
        self.with(py, |held| proof_text(&mut held.log, index, policy.as_ref()))
    }

    /// How many entries the log holds.
    #[getter]
    fn size(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |held| Ok(held.log.head().map_err(failed)?.0))
    }

    /// The log's newest signed checkpoint (a C2SP signed note).
    #[getter]
    fn checkpoint(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |held| {
            String::from_utf8(held.log.head().map_err(failed)?.1).map_err(failed)
        })
    }

    /// The log's name, its checkpoints' origin line.
    #[getter]
    fn origin(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |held| Ok(held.log.meta().origin.clone()))
    }

    /// The log's verifier key (`origin+keyid+base64`): a policy of it alone
    /// is what `verify_proof` takes for a log with no witnesses.
    #[getter]
    fn verifier_key(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |held| Ok(held.log.meta().verifier_key.clone()))
    }

    /// Closes the log's store (after a call in progress ends); any later
    /// call raises `chit.Error`.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| match self.held.lock() {
            Ok(mut guard) => {
                *guard = None;
                Ok(())
            }
            Err(_) => Err(Deferred::Error(
                "the log's lock was poisoned by a panic".to_owned(),
            )),
        })
        .map_err(PyErr::from)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _kind: &Bound<'_, PyAny>,
        _value: &Bound<'_, PyAny>,
        _traceback: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.close(py)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        self.origin(py)
            .map(|o| format!("Log({o:?})"))
            .unwrap_or_else(|_| "Log(closed)".to_owned())
    }
}
