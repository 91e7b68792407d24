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
    pub fn new(rule: &'static str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Finding {
            rule,
            message: message.into(),
            path: path.into(),
        }
    }
}

/// What checking one document found. Errors make it invalid; warnings do not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The kind the document was checked as (empty when none could be told).
    pub kind: &'static str,
    pub errors: Vec<Finding>,
    pub warnings: Vec<Finding>,
}

impl Report {
    pub fn new(kind: &'static str) -> Self {
        Report {
            kind,
            ..Report::default()
        }
    }

    pub fn valid(&self) -> bool {
        self.errors.is_empty()
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
    }

    /// Whether any error carries `rule`.
    pub fn breaks(&self, rule: &str) -> bool {
        self.errors.iter().any(|f| f.rule == rule)
    }
}

/// Escapes one JSON Pointer reference token (RFC 6901).
pub fn pointer_token(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}
