//! What a check gives Python: `Report` (one input's verdict), `Finding`
//! and `Across` (a check across inputs). Each holds the core's own value
//! and renders it with the core's writers, so `to_json()` is the very line
//! `chit verify --json` writes.

use chit_core::across::CrossReport;
use chit_core::check::{Checked, Unreadable};
use chit_core::report::{json, Finding, Report, Status};
use pyo3::prelude::*;

/// One thing a check found: the rule it breaks (`P3`, `signature`,
/// `schema`, ...), what is wrong in one line, and where (a JSON Pointer;
/// empty for the whole input).
#[pyclass(frozen, name = "Finding", module = "chit")]
pub struct Found(Finding);

#[pymethods]
impl Found {
    /// The rule's id, as chit reports it (`P3`, `signature`, `read`, ...).
    #[getter]
    fn rule(&self) -> &'static str {
        self.0.rule
    }

    /// What is wrong, in one line.
    #[getter]
    fn message(&self) -> &str {
        &self.0.message
    }

    /// Where in the input (a JSON Pointer, RFC 6901); empty for the whole.
    #[getter]
    fn path(&self) -> &str {
        &self.0.path
    }

    fn __repr__(&self) -> String {
        format!(
            "Finding(rule={:?}, path={:?}, message={:?})",
            self.0.rule, self.0.path, self.0.message
        )
    }
}

fn found(list: &[Finding]) -> Vec<Found> {
    list.iter().cloned().map(Found).collect()
}

/// One input's verdict, from `chit.check` or `chit.check_all`.
///
/// `status` is `valid`, `signed` (signature and art id good, the payload
/// not checked), `unchecked` (its own rules hold; what it claims was not
/// recomputed), `invalid` or `unreadable`; `valid` is true only for
/// `valid`. `to_json()` is the line `chit verify --json` writes for it.
#[pyclass(frozen, name = "Report", module = "chit")]
pub struct Verdict {
    name: Option<String>,
    artifact_id: Option<String>,
    /// The report, or why the input could not be read.
    outcome: Result<Report, String>,
}

impl Verdict {
    pub fn new(name: Option<String>, result: Result<Checked, Unreadable>) -> Verdict {
        match result {
            Ok(c) => Verdict {
                name,
                artifact_id: c.artifact_id,
                outcome: Ok(c.report),
            },
            Err(e) => Verdict {
                name,
                artifact_id: None,
                outcome: Err(e.explained()),
            },
        }
    }

    fn status_of(&self) -> Status {
        match &self.outcome {
            Ok(r) => r.status(),
            Err(_) => Status::Unreadable,
        }
    }
}

#[pymethods]
impl Verdict {
    /// `valid`, `signed`, `unchecked`, `invalid` or `unreadable`.
    #[getter]
    fn status(&self) -> &'static str {
        self.status_of().name()
    }

    /// Whether the status is `valid`: no error, and every part checked.
    #[getter]
    fn valid(&self) -> bool {
        self.status_of() == Status::Valid
    }

    /// The kind it was checked as (`run-receipt`, `verification.packet.v1`,
    /// ...); None when none could be told or it could not be read.
    #[getter]
    fn kind(&self) -> Option<&'static str> {
        match &self.outcome {
            Ok(r) if !r.kind.is_empty() => Some(r.kind),
            _ => None,
        }
    }

    /// A signed input's art id (`art_` and 32 hex digits); None otherwise.
    #[getter]
    fn artifact_id(&self) -> Option<&str> {
        self.artifact_id.as_deref()
    }

    /// The name it was given (`name=`, or a `(name, bytes)` pair), if any.
    #[getter]
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// What makes it invalid (for an unreadable input, one finding of rule
    /// `read` saying why).
    #[getter]
    fn errors(&self) -> Vec<Found> {
        match &self.outcome {
            Ok(r) => found(&r.errors),
            Err(why) => vec![Found(Finding::new(chit_core::rule::READ, "", why.as_str()))],
        }
    }

    /// What is worth knowing but does not make it invalid.
    #[getter]
    fn warnings(&self) -> Vec<Found> {
        match &self.outcome {
            Ok(r) => found(&r.warnings),
            Err(_) => Vec::new(),
        }
    }

    /// The verdict as `chit verify --json` writes it, without the line's
    /// end: `file` (where a name was given), `artifact_id` (signed inputs),
    /// `kind`, `valid`, `status`, `errors`, `warnings`.
    fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(256);
        json::verdict_line(
            self.name.as_deref(),
            None,
            self.artifact_id.as_deref(),
            self.outcome.as_ref().map_err(String::as_str),
            &mut out,
        );
        out.pop();
        String::from_utf8(out).expect("the core writes UTF-8 JSON")
    }

    fn __repr__(&self) -> String {
        let (errors, warnings) = match &self.outcome {
            Ok(r) => (r.errors.len(), r.warnings.len()),
            Err(_) => (1, 0),
        };
        format!(
            "Report(status={:?}, kind={}, errors={errors}, warnings={warnings}{})",
            self.status(),
            self.kind().map_or("None".to_owned(), |k| format!("{k:?}")),
            self.name
                .as_deref()
                .map_or(String::new(), |n| format!(", name={n:?}"))
        )
    }
}

/// A check across inputs (`check_all`'s `.across`): a packet stream
/// (P1-P8), a recompute result against its packet, a Lattice rebind, a
/// Treeship chain. Never `valid` over members that did not pass.
#[pyclass(frozen, name = "Across", module = "chit")]
pub struct CrossVerdict(pub CrossReport);

#[pymethods]
impl CrossVerdict {
    /// What was checked: `stream`, `rebind`, `recompute`, `chain`, `index`,
    /// `session`, `lineage` or `intent`.
    #[getter]
    fn subject(&self) -> &'static str {
        self.0.subject.name()
    }

    /// Which one: the stream id, the todo id, the recompute result's name.
    #[getter]
    fn name(&self) -> &str {
        &self.0.name
    }

    /// `valid`, `invalid`, `signed`, or `unchecked` where its members did
    /// not all pass.
    #[getter]
    fn status(&self) -> &'static str {
        self.0.status.name()
    }

    /// Whether the status is `valid`.
    #[getter]
    fn valid(&self) -> bool {
        self.0.status == Status::Valid
    }

    #[getter]
    fn errors(&self) -> Vec<Found> {
        found(&self.0.report.errors)
    }

    #[getter]
    fn warnings(&self) -> Vec<Found> {
        found(&self.0.report.warnings)
    }

    /// The check as `chit verify --json` writes it, without the line's end.
    fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(256);
        json::cross_line(
            self.0.subject.name(),
            &self.0.name,
            self.0.status,
            &self.0.report,
            &mut out,
        );
        out.pop();
        String::from_utf8(out).expect("the core writes UTF-8 JSON")
    }

    fn __repr__(&self) -> String {
        format!(
            "Across(subject={:?}, name={:?}, status={:?}, errors={})",
            self.0.subject.name(),
            self.0.name,
            self.0.status.name(),
            self.0.report.errors.len()
        )
    }
}
