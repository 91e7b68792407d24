//! `canon`, `digest` and `seal`: a document's canonical bytes and the
//! digests a receipt carries, as `chit canon`, `chit digest` and `chit
//! seal` give them.

use crate::errors;
use chit_core::canon::{write as write_canonical, Profile};
use chit_core::seal::{digests as digests_of, seal as seal_receipt, SealError};
use chit_core::{json, Kind, Limits};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

fn kind_of(kind: Option<&str>) -> PyResult<Option<Kind>> {
    kind.map(Kind::parse).transpose().map_err(errors::error)
}

/// The bytes' canonical JSON: RFC 8785 (`profile="jcs"`), or Lattice's
/// profile (`profile="lattice"`), exactly as `chit canon` writes them.
#[pyfunction]
#[pyo3(signature = (data, *, profile="jcs"))]
pub fn canon<'py>(py: Python<'py>, data: &[u8], profile: &str) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::with_capacity(data.len());
    match profile {
        "jcs" => {
            let doc = json::parse(data, &Limits::default())
                .map_err(|e| errors::unreadable(e.to_string()))?;
            write_canonical(doc.root(), Profile::Jcs, &mut out);
        }
        "lattice" => {
            let v = chit_core::lattice::parse(data).map_err(|e| match e {
                e @ chit_core::lattice::Error::Profile(_) => {
                    errors::error(format!("not writable in Lattice's profile: {e}"))
                }
                e => errors::unreadable(e.to_string()),
            })?;
            out = chit_core::lattice::canonical(&v)
                .map_err(|e| errors::error(format!("not writable in Lattice's profile: {e}")))?;
        }
        other => {
            return Err(errors::error(format!(
                "unknown profile '{other}'; chit knows: jcs, lattice"
            )))
        }
    }
    Ok(PyBytes::new(py, &out))
}

fn unknown_kind() -> PyErr {
    let known: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
    errors::error(format!(
        "not a receipt chit recognises; name its kind with kind= ({})",
        known.join(", ")
    ))
}

/// Why `digest` could not give a receipt's digests, as `chit digest` says it.
fn digest_failed(e: SealError) -> PyErr {
    match e {
        SealError::Unreadable(why) => errors::unreadable(why.explained()),
        SealError::UnknownKind => unknown_kind(),
        e if e.is_invalid() => errors::invalid(e.to_string()),
        e => errors::error(e.to_string()),
    }
}

/// Why `seal` would not seal a receipt, as `chit seal` says it.
fn sealing_failed(e: SealError) -> PyErr {
    match e {
        SealError::Unreadable(why) => errors::unreadable(why.explained()),
        SealError::UnknownKind => unknown_kind(),
        SealError::Breaks(rules) => errors::invalid(format!(
            "refusing to seal it: it breaks {} (chit.check gives the details)",
            rules.join(", ")
        )),
        SealError::Refused(why) => errors::invalid(format!("refusing to seal it: {why}")),
        SealError::NoDigest(kind) => {
            errors::error(format!("a {} has no digest to seal", kind.name()))
        }
        e @ SealError::NotAnObject => errors::error(e.to_string()),
        e @ SealError::NotValidAfterSealing => errors::error(format!("internal error: {e}")),
    }
}

/// The digests a receipt should carry, by the member that carries each: a
/// run receipt's `digest`; a Lattice packet's `context_content_digest` and
/// `packet_digest` (`sha256:…` each), as `chit digest` gives them.
#[pyfunction]
#[pyo3(signature = (data, *, kind=None))]
pub fn digest<'py>(
    py: Python<'py>,
    data: &[u8],
    kind: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let (_, digests) =
        digests_of(data, kind_of(kind)?, &Limits::default()).map_err(digest_failed)?;
    let out = PyDict::new(py);
    for (name, d) in digests {
        out.set_item(name, d)?;
    }
    Ok(out)
}

/// Checks a receipt, then writes its digests in, as `chit seal` does: a
/// run receipt keeps every byte but its digest's; a Lattice packet becomes
/// its canonical bytes and one LF. The sealed bytes are checked again and
/// returned only when valid; a receipt that breaks rules sealing does not
/// mend raises `chit.Invalid`.
#[pyfunction]
#[pyo3(signature = (data, *, kind=None))]
pub fn seal<'py>(
    py: Python<'py>,
    data: &[u8],
    kind: Option<&str>,
) -> PyResult<Bound<'py, PyBytes>> {
    let sealed = seal_receipt(data, kind_of(kind)?, &Limits::default()).map_err(sealing_failed)?;
    Ok(PyBytes::new(py, &sealed.bytes))
}
