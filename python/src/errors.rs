//! chit's exceptions: `chit.Error`, and under it `chit.Unreadable` and
//! `chit.Invalid`. A verdict is never an exception: an input that cannot
//! be read gives a `Report` of status `unreadable`. Exceptions are for
//! what stops a call: a bad trust file or key, a payload chit refuses to
//! sign or seal, an entry a log refuses.
//!
//! The classes are made once per interpreter, under Rust names of their
//! own (the core's `Unreadable` is a verdict, this one an exception).

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use std::ffi::CStr;

/// One of chit's exception classes: its qualified name, its docstring and
/// the class it derives from (`None`: Python's `Exception`).
pub struct ExceptionClass {
    name: &'static CStr,
    doc: &'static CStr,
    base: Option<&'static ExceptionClass>,
    made: PyOnceLock<Py<PyType>>,
}

impl ExceptionClass {
    const fn new(
        name: &'static CStr,
        doc: &'static CStr,
        base: Option<&'static ExceptionClass>,
    ) -> ExceptionClass {
        ExceptionClass {
            name,
            doc,
            base,
            made: PyOnceLock::new(),
        }
    }

    /// The class, made the first time it is asked for.
    pub fn class<'py>(&'static self, py: Python<'py>) -> PyResult<Bound<'py, PyType>> {
        let made = self.made.get_or_try_init(py, || {
            let base = match self.base {
                Some(b) => b.class(py)?,
                None => py.get_type::<PyException>(),
            };
            PyErr::new_type(py, self.name, Some(self.doc), Some(&base), None)
        })?;
        Ok(made.bind(py).clone())
    }

    /// The exception, with `message`, to raise.
    fn raise(&'static self, message: String) -> PyErr {
        Python::attach(|py| match self.class(py) {
            Ok(class) => PyErr::from_type(class, message),
            Err(e) => e,
        })
    }
}

pub static CHIT_ERROR: ExceptionClass = ExceptionClass::new(
    c"chit.Error",
    c"What stopped a call of chit's: its message is the one line the chit command prints.",
    None,
);

pub static UNREADABLE_INPUT: ExceptionClass = ExceptionClass::new(
    c"chit.Unreadable",
    c"The bytes given could not be read: not JSON, mis-encoded, or past a limit.",
    Some(&CHIT_ERROR),
);

pub static REFUSED_INPUT: ExceptionClass = ExceptionClass::new(
    c"chit.Invalid",
    c"Refused for what the input is: a payload that breaks its kind's rules (signing, \
      sealing), or an entry a log's policy refuses.",
    Some(&CHIT_ERROR),
);

pub fn error(message: impl Into<String>) -> PyErr {
    CHIT_ERROR.raise(message.into())
}

pub fn unreadable(message: impl Into<String>) -> PyErr {
    UNREADABLE_INPUT.raise(message.into())
}

pub fn invalid(message: impl Into<String>) -> PyErr {
    REFUSED_INPUT.raise(message.into())
}

/// An exception to raise once the GIL is held again and no lock is: made
/// where Python must not be touched (the GIL released, a log's lock
/// held), turned into the exception by `?` after.
#[derive(Debug)]
pub enum Deferred {
    Error(String),
    Unreadable(String),
    Invalid(String),
    Index(String),
    Key(String),
}

impl From<Deferred> for PyErr {
    fn from(d: Deferred) -> PyErr {
        match d {
            Deferred::Error(m) => error(m),
            Deferred::Unreadable(m) => unreadable(m),
            Deferred::Invalid(m) => invalid(m),
            Deferred::Index(m) => pyo3::exceptions::PyIndexError::new_err(m),
            Deferred::Key(m) => pyo3::exceptions::PyKeyError::new_err(m),
        }
    }
}
