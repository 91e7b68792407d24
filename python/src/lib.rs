//! chit for Python: the native module `chit._chit`.
//!
//! A thin layer over `chit_core` and `chit_logstore`: it reads Python's
//! arguments, calls the core (the one door to every verdict) and hands
//! back what it found. It holds no rule of its own. The package `chit`
//! (`python/chit`) re-exports it and adds `check_all`'s list.
//!
//! Python's names (`Report`, `Finding`, `Key`, ...) are given by
//! `#[pyclass(name = ...)]` over Rust types with names of their own.

#![forbid(unsafe_code)]

mod check;
mod errors;
mod keys;
mod log;
mod report;
mod text;

use pyo3::prelude::*;

#[pymodule]
#[pyo3(name = "_chit")]
fn chit_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("Error", errors::CHIT_ERROR.class(py)?)?;
    m.add("Unreadable", errors::UNREADABLE_INPUT.class(py)?)?;
    m.add("Invalid", errors::REFUSED_INPUT.class(py)?)?;
    m.add_class::<report::Verdict>()?;
    m.add_class::<report::Found>()?;
    m.add_class::<report::CrossVerdict>()?;
    m.add_class::<keys::TrustFile>()?;
    m.add_class::<keys::SigningKey>()?;
    m.add_class::<log::LogHandle>()?;
    m.add_class::<log::Logged>()?;
    m.add_function(wrap_pyfunction!(check::check, m)?)?;
    m.add_function(wrap_pyfunction!(check::check_all, m)?)?;
    m.add_function(wrap_pyfunction!(check::verify_proof, m)?)?;
    m.add_function(wrap_pyfunction!(text::canon, m)?)?;
    m.add_function(wrap_pyfunction!(text::digest, m)?)?;
    m.add_function(wrap_pyfunction!(text::seal, m)?)?;
    Ok(())
}
