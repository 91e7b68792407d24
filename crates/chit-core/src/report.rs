//! The `Report` every check returns.

/// One thing a check found: the rule it breaks, what is wrong in words, and
/// where in the document (a JSON Pointer, RFC 6901; empty for the whole).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub rule: &'static str,
    pub message: String,
    pub path: String,
}

impl Finding {
    /// A finding. Its message is kept to one line: control characters and
    /// line separators that text quoted from the input brings in (a
    /// `payloadType`, a `keyid`) are written as escapes (`\n`, `\x1b`; see [`escape_controls`]).
    pub fn new(rule: &'static str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Finding {
            rule,
            message: one_line(message.into()),
            path: path.into(),
        }
    }
}

fn one_line(message: String) -> String {
    match escape_controls(&message) {
        std::borrow::Cow::Borrowed(_) => message,
        std::borrow::Cow::Owned(escaped) => escaped,
    }
}

/// Text made safe for one line of a terminal: every control character (and
/// the characters that reorder or break lines) written as a visible escape,
/// so a file name or a receipt's text cannot start a line of its own, move
/// the cursor or hide what follows. `\n`, `\r` and `\t` as C writes them,
/// other ASCII controls and DEL as `\x1b`, the rest as `\u{85}` (as ripgrep
/// and `ls -b` show such names). A backslash is left as it is.
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    use std::fmt::Write;
    let unsafe_char = |c: char| {
        c.is_control()
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// What checking one document found. Errors make it invalid; warnings do
/// not. A signed document whose payload chit could not check (another
/// payload type, a kind chit does not know) is `unchecked`: its signature
/// and art id may be good, but nobody read what it says, so it is not valid
/// either ([`Status::Signed`]). A document whose evidence chit could not
/// check without something not given (a Reason certificate without its
/// request) is `partial`: its own rules hold, but what it claims was not
/// recomputed, so it is not valid either ([`Status::Unchecked`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The kind the document was checked as (empty when none could be told).
    pub kind: &'static str,
    pub errors: Vec<Finding>,
    pub warnings: Vec<Finding>,
    /// The payload was not checked: only the envelope, signature, art id and
    /// statement were. A warning says why.
    pub unchecked: bool,
    /// What the document claims was not recomputed, for want of something
    /// not given: only its own rules were checked. A warning says what to
    /// give.
    pub partial: bool,
}

/// The verdict on an input (or on a check across inputs): what `--json`
/// writes as `status`, what the summary counts and what the exit status
/// and a log's policy decide by ([`Status::passes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// No error, and every part was checked.
    Valid,
    /// No error, but the payload was not checked: signature and art id only.
    Signed,
    /// No error, but what the document claims could not be recomputed
    /// (a Reason certificate without its request): its own rules only. A
    /// check across inputs whose members did not all verify is this too.
    Unchecked,
    /// Some error.
    Invalid,
    /// Not read at all: no report (not JSON, mis-encoded, past a limit).
    Unreadable,
}

impl Status {
    /// The word `--json` writes as `status`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Valid => "valid",
            Status::Signed => "signed",
            Status::Unchecked => "unchecked",
            Status::Invalid => "invalid",
            Status::Unreadable => "unreadable",
        }
    }

    /// Whether an input of this status passes: valid, or signed or
    /// unchecked where the user lets what chit could check only in part
    /// pass (`--allow-unchecked`, a log's `allow_unchecked`). The one
    /// place that says so, for the exit status, `--quiet`, a log's policy
    /// and the checks across inputs alike.
    pub fn passes(self, allow_unchecked: bool) -> bool {
        match self {
            Status::Valid => true,
            Status::Signed | Status::Unchecked => allow_unchecked,
            Status::Invalid | Status::Unreadable => false,
        }
    }
}

impl Report {
    pub fn new(kind: &'static str) -> Self {
        Report {
            kind,
            ..Report::default()
        }
    }

    /// No error, and the payload was checked: [`Status::Valid`].
    pub fn valid(&self) -> bool {
        self.errors.is_empty() && !self.unchecked && !self.partial
    }

    /// Valid, signed with the payload unchecked, unchecked, or invalid
    /// (never unreadable: a report is what a read input gets).
    pub fn status(&self) -> Status {
        if !self.errors.is_empty() {
            Status::Invalid
        } else if self.unchecked {
            Status::Signed
        } else if self.partial {
            Status::Unchecked
        } else {
            Status::Valid
        }
    }

    pub fn error(
        &mut self,
        rule: &'static str,
        path: impl Into<String>,
        message: impl Into<String>,
    ) {
        self.errors.push(Finding::new(rule, path, message));
    }

    pub fn warning(
        &mut self,
        rule: &'static str,
        path: impl Into<String>,
        message: impl Into<String>,
    ) {
        self.warnings.push(Finding::new(rule, path, message));
    }

    /// Takes in `other`'s findings, their paths under `prefix` (a JSON
    /// Pointer to where `other`'s document sits in this one).
    pub fn absorb(&mut self, other: Report, prefix: &str) {
        let moved = |f: Finding| Finding {
            path: format!("{prefix}{}", f.path),
            ..f
        };
        self.errors.extend(other.errors.into_iter().map(moved));
        self.warnings.extend(other.warnings.into_iter().map(moved));
        self.unchecked |= other.unchecked;
        self.partial |= other.partial;
    }

    /// Whether any error carries `rule`.
    pub fn breaks(&self, rule: &str) -> bool {
        self.errors.iter().any(|f| f.rule == rule)
    }
}

/// `a` or `an`, as `word` is read aloud: "an agent_card.v1", "a packet".
/// By its first letter (a vowel), which serves the kind names chit quotes.
pub fn a_or_an(word: &str) -> &'static str {
    match word.bytes().next().map(|b| b.to_ascii_lowercase()) {
        Some(b'a' | b'e' | b'i' | b'o' | b'u') => "an",
        _ => "a",
    }
}

/// Escapes one JSON Pointer reference token (RFC 6901).
pub fn pointer_token(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// The machine-readable verdicts: one JSON object a line, as `chit verify
/// --json` writes them (and the server answers with). Members, in order:
/// `file`, `line` (JSON Lines only), `artifact_id` (signed inputs only),
/// `kind` (null when none could be told), `valid`, `status` (inputs only:
/// `valid`, `signed`, `invalid` or `unreadable`), `errors`, `warnings`;
/// each finding is `{rule, message, path}`. An unreadable input has kind
/// null and one error of rule `read`.
pub mod json {
    use super::{Finding, Report};
    use crate::canon::write_string;

    /// One input's verdict line (with its LF): `result` is the report, or
    /// why the input could not be read. `file` is left out where the input
    /// has no name (an input given as bytes alone, through a binding).
    pub fn verdict_line(
        file: Option<&str>,
        line: Option<usize>,
        artifact_id: Option<&str>,
        result: Result<&Report, &str>,
        out: &mut Vec<u8>,
    ) {
        out.push(b'{');
        if let Some(file) = file {
            out.extend_from_slice(b"\"file\":");
            write_string(file, out);
            out.push(b',');
        }
        if let Some(n) = line {
            out.extend_from_slice(format!("\"line\":{n},").as_bytes());
        }
        if let Some(art) = artifact_id {
            out.extend_from_slice(b"\"artifact_id\":");
            write_string(art, out);
            out.push(b',');
        }
        out.extend_from_slice(b"\"kind\":");
        match result {
            Err(why) => {
                out.extend_from_slice(
                    b"null,\"valid\":false,\"status\":\"unreadable\",\"errors\":",
                );
                findings(&[Finding::new(crate::rule::READ, "", why)], out);
                out.extend_from_slice(b",\"warnings\":[]");
            }
            Ok(r) => {
                if r.kind.is_empty() {
                    out.extend_from_slice(b"null");
                } else {
                    write_string(r.kind, out);
                }
                verdict_fields(r, r.status(), out);
            }
        }
        out.extend_from_slice(b"}\n");
    }

    /// A check across inputs (with its LF): `{SUBJECT: NAME, "valid",
    /// "status", "errors", "warnings"}`, SUBJECT one of `stream`,
    /// `rebind`, `recompute`, `chain`, `index`, `session`, `lineage`.
    /// `status` is the check's own ([`crate::across::CrossReport::status`]):
    /// `unchecked` where its members did not all verify, whatever its
    /// findings; `valid` is true only where it is `valid`.
    pub fn cross_line(
        subject: &str,
        name: &str,
        status: super::Status,
        r: &Report,
        out: &mut Vec<u8>,
    ) {
        out.extend_from_slice(b"{\"");
        out.extend_from_slice(subject.as_bytes());
        out.extend_from_slice(b"\":");
        write_string(name, out);
        verdict_fields(r, status, out);
        out.extend_from_slice(b"}\n");
    }

    fn findings(list: &[Finding], out: &mut Vec<u8>) {
        out.push(b'[');
        for (i, f) in list.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"rule\":");
            write_string(f.rule, out);
            out.extend_from_slice(b",\"message\":");
            write_string(&f.message, out);
            out.extend_from_slice(b",\"path\":");
            write_string(&f.path, out);
            out.push(b'}');
        }
        out.push(b']');
    }

    /// The `,"valid":…,"status":…,"errors":[…],"warnings":[…]` members:
    /// `valid` says the status is `valid`.
    fn verdict_fields(r: &Report, status: super::Status, out: &mut Vec<u8>) {
        out.extend_from_slice(if status == super::Status::Valid {
            b",\"valid\":true"
        } else {
            b",\"valid\":false"
        });
        out.extend_from_slice(b",\"status\":");
        write_string(status.name(), out);
        out.extend_from_slice(b",\"errors\":");
        findings(&r.errors, out);
        out.extend_from_slice(b",\"warnings\":");
        findings(&r.warnings, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line() {
        let mut r = Report::new("t");
        r.warning(
            "t",
            "",
            "payload type a\nb\r\tc\u{1b}d\u{2028}e\u{85}f is not known",
        );
        assert_eq!(
            r.warnings[0].message,
            "payload type a\\nb\\r\\tc\\x1bd\\u{2028}e\\u{85}f is not known"
        );
        r.error("t", "", "keyid é😀 plain");
        assert_eq!(r.errors[0].message, "keyid é😀 plain");
    }
}
