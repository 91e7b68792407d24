//! `verification.recompute.v1`: a verifier's result of re-running one
//! packet. R3 and R4 hold for a result alone; R1 needs its envelope (see
//! [`crate::statement`]) and R1-R2 against the packet need the packet
//! ([`crate::streams::recompute_against_packet`]).

use crate::doc::Val;
use crate::report::Report;
use crate::schema;

pub const KIND: &str = "verification.recompute.v1";

/// The rule ids of `verification.recompute.v1`, and the schema's. R1 and R2
/// are checked where the envelope or the packet is at hand
/// ([`crate::statement`], [`crate::streams`]).
pub mod rule {
    pub use crate::rule::SCHEMA;

    /// The result names its packet: the packet's `packet_id`, and as
    /// `packet` the art id its statement's subject is.
    pub const R1: &str = "R1";
    /// The verdict is `match` exactly when the recomputed output digest is
    /// the packet's.
    pub const R2: &str = "R2";
    /// With a distance and a threshold, `match` exactly when distance <=
    /// threshold; a bounded method needs both.
    pub const R3: &str = "R3";
    /// (Warning) An inconclusive result says why in `notes`.
    pub const R4: &str = "R4";
}

pub fn check(v: Val) -> Report {
    let mut r = Report::new(KIND);
    if !schema::RECOMPUTE.check(v, &mut r) {
        return r;
    }
    let verdict = v.get("verdict").and_then(|x| x.as_str()).unwrap_or("");
    let distance = v.get("distance").and_then(|x| x.as_f64());
    let threshold = v.get("threshold").and_then(|x| x.as_f64());
    r3_distance_decides(
        verdict,
        distance,
        threshold,
        v.get("method").and_then(|m| m.as_str()),
        &mut r,
    );
    if verdict == "inconclusive" && v.get("notes").is_none() {
        r.warning(
            rule::R4,
            "/notes",
            "an inconclusive result should say why in notes",
        );
    }
    r
}

/// R3: with a distance and a threshold, `match` exactly when distance <=
/// threshold; a bounded method needs both.
fn r3_distance_decides(
    verdict: &str,
    distance: Option<f64>,
    threshold: Option<f64>,
    method: Option<&str>,
    r: &mut Report,
) {
    match (distance, threshold) {
        (Some(d), Some(t)) if verdict != "inconclusive" => {
            let want = if d <= t { "match" } else { "mismatch" };
            if verdict != want {
                r.error(
                    rule::R3,
                    "/verdict",
                    format!("distance {d} against threshold {t} is a {want}, not a {verdict}"),
                );
            }
        }
        (Some(_), None) | (None, Some(_)) => {
            r.error(rule::R3, "/threshold", "distance and threshold go together")
        }
        (None, None) if method == Some("bounded") && verdict != "inconclusive" => r.error(
            rule::R3,
            "/distance",
            "a bounded result needs a distance and a threshold",
        ),
        _ => {}
    }
}
