//! The JSON Schemas chit embeds, each compiled once (draft 2020-12) and
//! reused for every document.
//!
//! The `jsonschema` crate gives `pattern` ECMA-262 semantics (`\d` is ASCII
//! only) and counts string lengths in code points, as JSON Schema defines.

use crate::report::Report;
use serde_json::Value;
use std::sync::OnceLock;

/// The most schema errors reported for one document; the rest are counted.
pub const MAX_SCHEMA_ERRORS: usize = 20;

/// An embedded schema: its text and, once first used, its compiled validator.
pub struct Embedded {
    pub name: &'static str,
    pub text: &'static str,
    compiled: OnceLock<jsonschema::Validator>,
}

impl Embedded {
    pub const fn new(name: &'static str, text: &'static str) -> Self {
        Embedded {
            name,
            text,
            compiled: OnceLock::new(),
        }
    }

    /// The compiled validator. Embedded schemas are tested to compile, so a
    /// failure here is a build defect, not bad input.
    pub fn validator(&self) -> &jsonschema::Validator {
        self.compiled.get_or_init(|| {
            let schema: Value = serde_json::from_str(self.text)
                .unwrap_or_else(|e| panic!("embedded schema {} is not JSON: {e}", self.name));
            jsonschema::draft202012::new(&schema)
                .unwrap_or_else(|e| panic!("embedded schema {} does not compile: {e}", self.name))
        })
    }

    /// Checks `doc`, adding each violation to `report` under rule `schema`.
    /// Returns whether `doc` is valid.
    pub fn check(&self, doc: &Value, report: &mut Report) -> bool {
        let v = self.validator();
        if v.is_valid(doc) {
            return true;
        }
        let mut n = 0usize;
        for e in v.iter_errors(doc) {
            if n < MAX_SCHEMA_ERRORS {
                let path = e.instance_path().to_string();
                let shown = if path.is_empty() { "/" } else { path.as_str() };
                report.error(
                    "schema",
                    path.clone(),
                    format!("{shown}: {}", one_line(&e.to_string())),
                );
            }
            n += 1;
        }
        if n > MAX_SCHEMA_ERRORS {
            report.error(
                "schema",
                "",
                format!("and {} more schema errors", n - MAX_SCHEMA_ERRORS),
            );
        }
        if n == 0 {
            // is_valid and iter_errors disagree: never let that pass.
            report.error("schema", "", "the document does not match the schema");
        }
        false
    }
}

/// A validator message cut to one short line (messages quote the offending
/// value, which may be megabytes long or hold line breaks).
fn one_line(msg: &str) -> String {
    const MAX: usize = 160;
    let mut out = String::with_capacity(MAX.min(msg.len()) + 3);
    for (n, c) in msg.chars().enumerate() {
        if n == MAX {
            out.push('…');
            break;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}

pub static RUN_RECEIPT: Embedded = Embedded::new(
    "run-receipt-0.1",
    include_str!("../../../schemas/run-receipt-0.1.schema.json"),
);

/// Every schema chit embeds.
pub const ALL: &[&Embedded] = &[&RUN_RECEIPT];

#[cfg(test)]
mod tests {
    #[test]
    fn embedded_schemas_compile() {
        for s in super::ALL {
            let _ = s.validator();
        }
    }

    #[test]
    fn messages_stay_short() {
        let doc = serde_json::json!({"id": "x".repeat(5000)});
        let mut r = crate::report::Report::new("t");
        assert!(!super::RUN_RECEIPT.check(&doc, &mut r));
        assert!(r.errors.iter().all(|f| f.message.chars().count() < 200));
    }
}
