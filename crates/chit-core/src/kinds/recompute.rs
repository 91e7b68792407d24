//! `verification.recompute.v1`: a verifier's result of re-running one
//! packet. R3 and R4 hold for a result alone; R1 needs its envelope (see
//! [`crate::statement`]) and R1-R2 against the packet need the packet
//! ([`crate::streams::recompute_against_packet`]).

use crate::doc::Val;
use crate::report::Report;
use crate::schema;

pub const KIND: &str = "verification.recompute.v1";

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
            "R4",
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
                    "R3",
                    "/verdict",
                    format!("distance {d} against threshold {t} is a {want}, not a {verdict}"),
                );
            }
        }
        (Some(_), None) | (None, Some(_)) => {
            r.error("R3", "/threshold", "distance and threshold go together")
        }
        (None, None) if method == Some("bounded") && verdict != "inconclusive" => r.error(
            "R3",
            "/distance",
            "a bounded result needs a distance and a threshold",
        ),
        _ => {}
    }
}
