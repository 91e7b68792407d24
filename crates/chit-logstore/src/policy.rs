//! What a log accepts, fixed at `chit log init` and stored with it: an entry
//! is accepted exactly when `chit verify` under these settings would call it
//! valid (the core's one [`chit_core::check()`]), with one exception for
//! packet streams: P3 (a gap) is allowed at append, since packets arrive
//! out of order; P1, P2 and P4 are held against the whole log
//! ([`crate::streams`]).

use chit_core::across::Facts;
use chit_core::kinds::packet::stream::PacketFacts;
use chit_core::report::Status;
use chit_core::trust::Trust;
use chit_core::{check, Context, Report};

fn one() -> usize {
    1
}

/// Why a log's stored policy cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("the stored policy: {0}")]
    Stored(serde_json::Error),
    #[error("the stored trust file: {0}")]
    Trust(chit_core::trust::TrustError),
}

/// Why a submission cannot be checked as a log entry.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error("{}", too_large_for_an_entry(*.0))]
    TooLarge(usize),
    #[error(transparent)]
    Unreadable(#[from] chit_core::check::Unreadable),
}

/// The settings, as stored (JSON, read by serde: a key this chit does not
/// know is refused rather than ignored).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// A trust file's text (`--trust`): who may sign, which kinds.
    pub trust: Option<String>,
    /// Distinct trusted signers an envelope needs (`--threshold`), at least 1.
    #[serde(default = "one")]
    pub threshold: usize,
    /// With a trust file, whether documents no trusted key signed are still
    /// accepted, checked by their own rules (`--accept-unsigned`). Without
    /// a trust file every document is checked by its own rules.
    #[serde(default)]
    pub accept_unsigned: bool,
    /// Whether inputs chit could check only in part (SIGNED: a payload of a
    /// kind chit does not know; UNCHECKED) are accepted (`--allow-unchecked`).
    #[serde(default)]
    pub allow_unchecked: bool,
}

/// One submission, checked: its bytes, the policy's verdict on them and
/// their content address. Only [`Compiled::check_all`] makes one, so the
/// three always belong together and an append need not hash the bytes
/// again to trust the verdict.
#[derive(Debug)]
pub struct Submitted {
    /// Its bytes where accepted (empty otherwise: never appended).
    pub(crate) bytes: Vec<u8>,
    pub(crate) verdict: Admission,
    pub(crate) sha256: chit_log::Hash,
    /// Its leaf hash in the log's tree (RFC 9162), made beside its check
    /// on all cores rather than by the one thread that appends.
    pub(crate) leaf: chit_log::Hash,
}

impl Submitted {
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
    pub fn verdict(&self) -> &Admission {
        &self.verdict
    }
    /// SHA-256 of the bytes.
    pub fn sha256(&self) -> &chit_log::Hash {
        &self.sha256
    }
}

/// What the policy says of one submission.
#[derive(Debug)]
pub enum Admission {
    /// Accepted: its status (VALID, or SIGNED/UNCHECKED where allowed) and,
    /// for a packet, what the stream rules need.
    Accept {
        status: Status,
        /// The kind it was checked as (`Report::kind`).
        kind: &'static str,
        /// A signed artifact's art id.
        art_id: Option<String>,
        packet: Option<Box<PacketFacts>>,
    },
    /// Refused, with the findings `chit verify` gives.
    Refuse(Report),
    /// Not readable at all (not JSON, mis-encoded, too deep, too large).
    Unreadable(String),
}

impl Policy {
    pub fn to_json(&self) -> String {
        let stored = Policy {
            threshold: self.threshold.max(1),
            ..self.clone()
        };
        serde_json::to_string(&stored).unwrap_or_default()
    }

    pub fn from_json(text: &str) -> Result<Policy, PolicyError> {
        let mut p: Policy = serde_json::from_str(text).map_err(PolicyError::Stored)?;
        p.threshold = p.threshold.max(1);
        Ok(p)
    }

    /// Reads the trust file once, for every check.
    pub fn compile(&self) -> Result<Compiled, PolicyError> {
        let trust = match &self.trust {
            None => None,
            Some(t) => Some(Trust::parse(t).map_err(PolicyError::Trust)?),
        };
        Ok(Compiled {
            policy: self.clone(),
            trust,
        })
    }

    /// Where `asked` (a new log's options) differs from this stored
    /// policy, each as the option and what the log has instead; empty
    /// when they are the same policy.
    pub fn differences(&self, asked: &Policy) -> Vec<String> {
        let mut out = Vec::new();
        match (&self.trust, &asked.trust) {
            (None, Some(_)) => out.push("--trust (the log has no trust file)".into()),
            (Some(_), None) => out.push("no --trust (the log has a trust file)".into()),
            (Some(a), Some(b)) if a != b => {
                out.push("--trust (a file whose text differs from the log's)".into())
            }
            _ => {}
        }
        if asked.threshold != self.threshold {
            out.push(format!(
                "--threshold {} (the log's is {})",
                asked.threshold, self.threshold
            ));
        }
        if asked.accept_unsigned != self.accept_unsigned {
            out.push(if asked.accept_unsigned {
                "--accept-unsigned (the log refuses unsigned documents)".into()
            } else {
                "no --accept-unsigned (the log accepts unsigned documents)".into()
            });
        }
        if asked.allow_unchecked != self.allow_unchecked {
            out.push(if asked.allow_unchecked {
                "--allow-unchecked (the log refuses what chit cannot check)".into()
            } else {
                "no --allow-unchecked (the log accepts what chit cannot check)".into()
            });
        }
        out
    }

    /// One line for people: what the log accepts.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        match &self.trust {
            None => parts.push("any valid receipt (no trust file)".to_string()),
            Some(_) if self.accept_unsigned => parts.push(format!(
                "receipts signed by {} trusted key(s), and unsigned ones valid by their own rules",
                self.threshold.max(1)
            )),
            Some(_) => parts.push(format!(
                "only receipts signed by {} trusted key(s)",
                self.threshold.max(1)
            )),
        }
        if self.allow_unchecked {
            parts.push("payloads chit cannot check are accepted".into());
        }
        parts.join("; ")
    }
}

/// Why an input of `len` bytes cannot be a log entry (more than 65,535).
pub fn too_large_for_an_entry(len: usize) -> String {
    format!(
        "{len} bytes: a log entry is at most 65,535 bytes (the length prefix of tlog-tiles entry \
         bundles); log a smaller receipt, or its digest inside one"
    )
}

/// Why a log refused an entry, in one line: each rule it breaks with its
/// message, or, where it broke none, that chit could check it only in
/// part (a policy without `allow_unchecked` takes only what it fully
/// checks).
pub fn refusal(report: &Report) -> String {
    if report.errors.is_empty() {
        return format!(
            "{}: chit could check it only in part; this log accepts only what it fully checks \
             (its policy has no --allow-unchecked)",
            report.status().name()
        );
    }
    report
        .errors
        .iter()
        .map(|f| format!("{} {}", f.rule, f.message))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A policy ready to check with.
pub struct Compiled {
    pub policy: Policy,
    trust: Option<Trust>,
}

impl Compiled {
    /// The options `chit verify` would be given for this policy: its
    /// trust file, threshold, `--accept-unsigned` and `--allow-unchecked`.
    pub fn context(&self) -> Context<'_> {
        Context {
            trust: self.trust.as_ref(),
            threshold: self.policy.threshold.max(1),
            accept_unsigned: self.policy.accept_unsigned,
            allow_unchecked: self.policy.allow_unchecked,
            ..Context::default()
        }
    }

    /// Step 1 of an append: every submission with its verdict, content
    /// address (SHA-256 of its bytes) and leaf hash, on all cores. The four
    /// stay together, so an append can never take one input's verdict or
    /// hashes for another's bytes.
    pub fn check_all(&self, inputs: Vec<Vec<u8>>) -> Vec<Submitted> {
        self.check_lines(inputs.into_iter().map(|b| (1, b)).collect())
    }

    /// [`Compiled::check_all`] for lines of a larger input (JSON Lines):
    /// each with the number of the line it starts on, so that where a
    /// line cannot be read is said in the input's own line numbers. Only
    /// an accepted input's bytes are kept (made a `Vec` on the checking
    /// thread); the others' are let go there.
    pub fn check_lines<B>(&self, inputs: Vec<(usize, B)>) -> Vec<Submitted>
    where
        B: AsRef<[u8]> + Into<Vec<u8>> + Send,
    {
        use rayon::prelude::*;
        inputs
            .into_par_iter()
            .map(|(line, input)| {
                let bytes = input.as_ref();
                let verdict = self.decide_at(bytes, line);
                let (sha256, leaf) = (
                    chit_core::digest::sha256(bytes),
                    chit_log::tree::leaf_hash(bytes),
                );
                let bytes = match verdict {
                    Admission::Accept { .. } => input.into(),
                    Admission::Refuse(_) | Admission::Unreadable(_) => Vec::new(),
                };
                Submitted {
                    bytes,
                    verdict,
                    sha256,
                    leaf,
                }
            })
            .collect()
    }

    /// What `chit verify` under this policy finds in one submission: the
    /// core's check with the policy's trust file (and, with
    /// `accept_unsigned`, a document no key signed held to its own rules);
    /// `Err` where it cannot be read, or is too large to be an entry.
    pub fn checked(&self, bytes: &[u8]) -> Result<chit_core::Checked, EntryError> {
        self.checked_at(bytes, 1)
    }

    /// [`Compiled::checked`] for an input that starts on line `line` of a
    /// larger one.
    fn checked_at(&self, bytes: &[u8], line: usize) -> Result<chit_core::Checked, EntryError> {
        if bytes.len() > chit_log::tiles::MAX_ENTRY_BYTES {
            return Err(EntryError::TooLarge(bytes.len()));
        }
        Ok(self
            .verified(bytes, &chit_core::Limits::default())
            .map_err(|e| e.starting_at_line(line))?)
    }

    /// What `chit verify` under this policy finds in a document of any
    /// size, read under `limits` (what is checked and not logged: a
    /// verifier's answer): the core's check under [`Compiled::context`].
    pub fn verified(
        &self,
        bytes: &[u8],
        limits: &chit_core::Limits,
    ) -> Result<chit_core::Checked, chit_core::check::Unreadable> {
        let ctx = Context {
            limits: *limits,
            ..self.context()
        };
        check(bytes, &ctx)
    }

    /// Whether a check's status is accepted under this policy: VALID, and
    /// SIGNED or UNCHECKED only with `--allow-unchecked`.
    pub fn admits(&self, status: Status) -> bool {
        status.passes(self.policy.allow_unchecked)
    }

    /// The verdict on one submission's bytes.
    pub fn decide(&self, bytes: &[u8]) -> Admission {
        self.decide_at(bytes, 1)
    }

    /// [`Compiled::decide`] for an input that starts on line `line` of a
    /// larger one.
    pub fn decide_at(&self, bytes: &[u8], line: usize) -> Admission {
        let checked = match self.checked_at(bytes, line) {
            Ok(c) => c,
            Err(why) => return Admission::Unreadable(why.to_string()),
        };
        let status = checked.status();
        if !self.admits(status) {
            // SIGNED or UNCHECKED under a policy without --allow-unchecked
            // keeps its status: the report says what was not checked.
            return Admission::Refuse(checked.report);
        }
        let packet = match checked.facts {
            Some(Facts::Packet(p)) => Some(Box::new(p)),
            _ => None,
        };
        Admission::Accept {
            status,
            kind: checked.report.kind,
            art_id: checked.artifact_id,
            packet,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Policy;

    /// A stored policy reads back as it was; a key this chit does not know
    /// is refused, a missing threshold or flag takes its default.
    #[test]
    fn a_stored_policy_reads_back_and_refuses_unknown_keys() {
        let p = Policy {
            trust: Some("[[key]]".into()),
            threshold: 2,
            accept_unsigned: true,
            allow_unchecked: false,
        };
        assert_eq!(Policy::from_json(&p.to_json()).unwrap(), p);
        let old = r#"{"accept_unsigned":false,"allow_unchecked":true,"threshold":1,"trust":null}"#;
        assert!(Policy::from_json(old).unwrap().allow_unchecked);
        let bare = Policy::from_json(r#"{"trust":null}"#).unwrap();
        assert_eq!((bare.threshold, bare.accept_unsigned), (1, false));
        let e = Policy::from_json(r#"{"trust":null,"witness":"x"}"#).unwrap_err();
        assert!(e.to_string().contains("witness"), "{e}");
    }

    /// The same policy has no differences; each field that differs is
    /// named once, by its option.
    #[test]
    fn differences_name_each_option_that_differs() {
        let log = Policy {
            trust: Some("[[key]]".into()),
            threshold: 2,
            accept_unsigned: true,
            allow_unchecked: false,
        };
        assert!(log.differences(&log.clone()).is_empty());
        let asked = Policy {
            trust: Some("[[key]] # another".into()),
            threshold: 1,
            accept_unsigned: false,
            allow_unchecked: true,
        };
        assert_eq!(
            log.differences(&asked),
            vec![
                "--trust (a file whose text differs from the log's)",
                "--threshold 1 (the log's is 2)",
                "no --accept-unsigned (the log accepts unsigned documents)",
                "--allow-unchecked (the log refuses what chit cannot check)",
            ]
        );
        let none = Policy {
            trust: None,
            ..log.clone()
        };
        assert_eq!(
            none.differences(&log),
            vec!["--trust (the log has no trust file)"]
        );
        assert_eq!(
            log.differences(&none),
            vec!["no --trust (the log has a trust file)"]
        );
    }
}
