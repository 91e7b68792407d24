//! chit's exceptions. A verdict is never an exception: an input that
//! cannot be read gives a `Report` of status `unreadable`. Exceptions are
//! for what stops a call: a bad trust file or key, a payload chit refuses
//! to sign or seal, an entry a log refuses.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::PyErr;

create_exception!(
    chit,
    Error,
    PyException,
    "What stopped a call of chit's: its message is the one line the chit command prints."
);
create_exception!(
    chit,
    Unreadable,
    Error,
    "The bytes given could not be read: not JSON, mis-encoded, or past a limit."
);
create_exception!(
    chit,
    Invalid,
    Error,
    "Refused for what the input is: a payload that breaks its kind's rules (signing, sealing), \
     or an entry a log's policy refuses."
);

pub fn error(message: impl Into<String>) -> PyErr {
    Error::new_err(message.into())
}

pub fn unreadable(message: impl Into<String>) -> PyErr {
    Unreadable::new_err(message.into())
}

pub fn invalid(message: impl Into<String>) -> PyErr {
    Invalid::new_err(message.into())
}
