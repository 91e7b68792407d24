//! What checking one input gives: its verdict and what it leaves for the
//! checks across inputs, or why it could not be read. A leaf: it imports
//! no kind.

use crate::facts::Facts;
use crate::json::ReadError;
use crate::lattice;
use crate::report::{Report, Status};

/// What checking one readable input found.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The verdict: its kind, errors and warnings.
    pub report: Report,
    /// A signed input's art id.
    pub artifact_id: Option<String>,
    /// The kind a signed statement names, as written.
    pub statement_kind: Option<String>,
    /// What the checks across inputs need of it.
    pub facts: Option<Facts>,
    /// A signed artifact's art id, parent and claims, for the checks across
    /// inputs (parent chains, a store's index, a session package).
    pub artifact: Option<crate::facts::ArtifactFacts>,
}

impl Checked {
    /// Its status: its report's.
    pub fn status(&self) -> Status {
        self.report.status()
    }

    /// Held to the trust file (when `trusted`): at least `threshold`
    /// distinct trusted keys allowed its kind signed it (`signers`; `None`
    /// for an envelope that could not be read, whose errors already fail
    /// it); one that is not, or whose signature or trust failed, counts
    /// toward nothing across inputs (an unsigned or forged packet fills no
    /// gap in a stream).
    pub(crate) fn held_to_signers(
        mut self,
        signers: Option<usize>,
        trusted: bool,
        threshold: usize,
    ) -> Checked {
        if !trusted {
            return self;
        }
        if let Some(signers) = signers.filter(|&n| n < threshold) {
            let (path, message) = if self.artifact_id.is_some() {
                (
                    "/signatures",
                    format!("{signers} distinct trusted key(s) signed; {threshold} required"),
                )
            } else {
                (
                    "",
                    format!(
                        "not signed by enough trusted keys: {signers} of {threshold} required. With --trust every \
                         input must be signed by keys the trust file lists: give its signed envelope (chit sign), \
                         or check it without --trust"
                    ),
                )
            };
            self.report.error(crate::rule::THRESHOLD, path, message);
        }
        let r = &self.report;
        if [
            crate::rule::SIGNATURE,
            crate::rule::TRUST,
            crate::rule::THRESHOLD,
        ]
        .iter()
        .any(|rule| r.breaks(rule))
        {
            self.facts = None;
            self.artifact = None;
        }
        self
    }

    /// A verdict with nothing more to tell.
    pub fn of(report: Report) -> Checked {
        Checked {
            report,
            artifact_id: None,
            statement_kind: None,
            facts: None,
            artifact: None,
        }
    }
}

/// Why an input could not be read (chit's exit status 2): not a verdict on
/// a receipt, but no verdict at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unreadable {
    /// The strict reader refused it.
    #[error("{0}")]
    Json(ReadError),
    /// Lattice's reader refused a Lattice packet.
    #[error("{0}")]
    Lattice(lattice::Error),
}

impl Unreadable {
    /// The reader's limit this input passed, if that is why it could not
    /// be read (a front end then says how its limits are raised).
    pub fn limit(&self) -> Option<crate::json::Limit> {
        match self {
            Unreadable::Json(e) => e.kind.limit(),
            Unreadable::Lattice(lattice::Error::Read {
                past_limit: true, ..
            }) => Some(crate::json::Limit::Values),
            Unreadable::Lattice(_) => None,
        }
    }

    /// The one line a front end shows for it: the reader's message and,
    /// where a limit refused the input, the `chit verify` flag that raises
    /// it (the binary, the server and the bindings say it alike).
    pub fn explained(&self) -> String {
        use crate::json::Limit;
        let flag = match self.limit() {
            Some(Limit::Size) => "--max-size",
            Some(Limit::Depth) => "--max-depth",
            Some(Limit::Keys) => "--max-keys",
            Some(Limit::Values) | None => return self.to_string(),
        };
        format!("{self} (raise it with {flag})")
    }

    /// The same error, with lines counted from `first` (JSON Lines).
    pub fn starting_at_line(self, first: usize) -> Unreadable {
        match self {
            Unreadable::Json(e) => Unreadable::Json(e.starting_at_line(first)),
            Unreadable::Lattice(e) => Unreadable::Lattice(e.starting_at_line(first)),
        }
    }
}
