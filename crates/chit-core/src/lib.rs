//! chit-core: receipts of AI work, checked.
//!
//! No I/O and no async: bytes in, [`Report`]s out. The pieces, in the order
//! a document meets them:
//!
//! 1. [`json`]: strict reading (UTF-8, no duplicate keys, bounded depth,
//!    size and keys, numbers as doubles, errors with line and column).
//! 2. [`kinds`]: which kind of receipt a document is, and that kind's schema
//!    ([`schema`]) and rules, one function per rule id.
//! 3. [`canon`] and [`digest`]: canonical JSON (RFC 8785) and `sha256:` digests.

pub mod canon;
pub mod digest;
pub mod doc;
pub mod edit;
pub mod envelope;
pub mod json;
pub mod keys;
pub mod kinds;
pub mod lattice;
pub mod lineage;
pub mod report;
pub mod rule;
pub mod schema;
pub mod statement;
pub mod streams;
pub mod time;
pub mod trust;

pub use doc::{Doc, Val};
pub use json::{Limits, ReadError};
pub use kinds::Kind;
pub use report::{Finding, Report};

/// Reads `bytes` strictly and checks the document as `kind`, or as the kind
/// it declares when `kind` is `None`.
pub fn verify_bytes(
    bytes: &[u8],
    limits: &Limits,
    kind: Option<Kind>,
) -> Result<Report, ReadError> {
    let doc = json::parse(bytes, limits)?;
    Ok(verify_doc(&doc, kind))
}

/// Checks a parsed document as `kind`, or as the kind it declares.
pub fn verify_doc(doc: &Doc, kind: Option<Kind>) -> Report {
    match kind.or_else(|| Kind::detect(doc)) {
        Some(k) => k.check(doc),
        None => kinds::unknown_kind(),
    }
}
