//! `numeric.lineage.bound.v1`: a divergence bound as `chit lineage bound`
//! commits it, a document of its own so a receipt log can hold it, and
//! prove it was logged before the receipt measured against it.
//!
//! - schema: `schemas/numeric.lineage.bound.v1.schema.json`;
//! - B1 `bound_digest_sha256` recomputes from the five bound fields (the
//!   digest a receipt's `bound_ref` carries, numeric-lineage.md section 2);
//! - B2 `committed_at` is a real UTC time.

use crate::doc::Val;
use crate::kinds::numeric_lineage::arithmetic::Bound;
use crate::report::Report;
use crate::schema;

pub const KIND: &str = crate::kind::Kind::LineageBound.name();

pub mod rule {
    pub use crate::rule::SCHEMA;
    /// `bound_digest_sha256` recomputes from the bound's five fields.
    pub const B1: &str = "B1";
    /// `committed_at` is a real UTC time.
    pub const B2: &str = "B2";
}

pub fn check(v: Val) -> Report {
    let mut r = Report::new(KIND);
    if !schema::LINEAGE_BOUND.check(v, &mut r) {
        return r;
    }
    let Some(b) = Bound::from_val(v) else {
        return r; // the schema requires every field
    };
    b1_digest(v, &b, &mut r);
    b2_committed_at(&b, &mut r);
    r
}

fn b1_digest(v: Val, b: &Bound, r: &mut Report) {
    let written = v.get("bound_digest_sha256").and_then(|d| d.as_str());
    let want = b.digest();
    if written != Some(want.as_str()) {
        r.error(
            rule::B1,
            "/bound_digest_sha256",
            format!(
                "bound_digest_sha256 is {}, but the bound's fields give {want} (edited after it was committed?)",
                written.unwrap_or("missing")
            ),
        );
    }
}

fn b2_committed_at(b: &Bound, r: &mut Report) {
    if crate::time::rfc3339_nanos(&b.committed_at).is_none() {
        r.error(
            rule::B2,
            "/committed_at",
            format!("committed_at {} is not a real UTC time", b.committed_at),
        );
    }
}

/// A bound's digest, where `v` is a valid bound document.
pub fn digest_of(v: Val) -> Option<String> {
    (v.get("schema").and_then(|s| s.as_str()) == Some(KIND))
        .then(|| Bound::from_val(v).map(|b| b.digest()))
        .flatten()
}
