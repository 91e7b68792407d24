//! chit-core: receipts of AI work, checked.
//!
//! No I/O and no async: bytes in, verdicts out. [`check()`] is the one entry
//! point; the command line, the log and the server all call it, and only
//! read, render and store around it.
//!
//! ```
//! use chit_core::{check, Context};
//!
//! let bytes = std::fs::read("../../examples/run-receipts/agreed-verified.json").unwrap();
//! let checked = check(&bytes, &Context::default()).expect("a readable receipt");
//! assert!(checked.report.valid());
//! println!("{}: {} errors", checked.report.kind, checked.report.errors.len());
//! ```
//!
//! The pieces, in the order an input meets them:
//!
//! 1. [`json`]: strict reading (UTF-8, no duplicate keys, bounded depth,
//!    size and keys, errors with line and column) into a [`Doc`]; and
//!    [`lattice`], Lattice's own reading and canonical profile.
//! 2. [`check()`]: which kind of input it is ([`kinds`]), and every check
//!    that applies to it alone, under a [`Context`] (trust, transcript,
//!    request, call, limits); [`kinds::treeship::statement`] for signed envelopes.
//! 3. [`across`]: the checks across inputs (packet streams, recompute
//!    results, Lattice rebinds), fed each input's facts.
//! 4. [`canon`] and [`digest`]: canonical JSON (RFC 8785) and `sha256:`
//!    digests; [`keys`], [`envelope`] and [`trust`] for signatures.

#![forbid(unsafe_code)]

pub mod across;
pub mod canon;
pub mod check;
pub mod checked;
pub mod context;
pub mod digest;
pub mod doc;
pub mod edit;
pub mod envelope;
pub mod facts;
pub mod json;
pub mod keys;
pub mod kind;
pub mod kinds;
pub mod lattice;
pub mod report;
pub mod rule;
pub mod schema;
pub mod seal;
pub mod time;
pub mod trust;

pub use check::{check, Checked, Context, Input, Unreadable};
pub use doc::{Doc, Val};
pub use json::{Limits, ReadError};
pub use kinds::Kind;
pub use report::{Finding, Report};

/// The producers' guide, `docs/producers.md`: its Rust example runs as
/// this crate's doctest, so the guide cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/producers.md")]
pub struct ProducersGuide;
