//! `verification.recompute.v1`: a verifier's result of re-running one
//! packet. R3 and R4 hold for a result alone; R1 needs its envelope (see
//! [`crate::kinds::treeship::statement`]) and R1-R2 against the packet need the packet
//! ([`recompute_against_packet`], fed by [`crate::across::Across`]).

use crate::doc::Val;
use crate::facts::Origin;
pub use crate::facts::RecomputeFacts;
use crate::kinds::packet::stream::{Fingerprint, PacketFacts};
use crate::report::Report;
use crate::schema;

pub const KIND: &str = crate::kind::Kind::Recompute.name();

/// The rule ids of `verification.recompute.v1`, and the schema's. R1 and R2
/// are checked where the envelope or the packet is at hand
/// ([`crate::kinds::treeship::statement`], [`crate::kinds::packet::stream`]).
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
    let method = v.get("method").and_then(|m| m.as_str()).unwrap_or("");
    let digest = v.get("output_digest_recomputed").is_some();
    r2_match_has_evidence(
        verdict,
        method,
        digest,
        distance.zip(threshold).is_some(),
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

/// A `match` carries the evidence its method needs: `bit_exact` the
/// recomputed output digest (R2), any other method a distance and a
/// threshold, or at least the digest (R3; `bounded` is R3's already).
fn r2_match_has_evidence(
    verdict: &str,
    method: &str,
    digest: bool,
    distance: bool,
    r: &mut Report,
) {
    if verdict != "match" {
        return;
    }
    if method == "bit_exact" && !digest {
        r.error(
            rule::R2,
            "/output_digest_recomputed",
            "a bit_exact match needs output_digest_recomputed, the digest it found equal to the packet's",
        );
    } else if method != "bit_exact" && method != "bounded" && !digest && !distance {
        r.error(
            rule::R3,
            "/verdict",
            format!("a {method} match carries no evidence: give output_digest_recomputed, or a distance and a threshold"),
        );
    }
}

impl RecomputeFacts {
    pub fn read(v: Val, source: Origin) -> Option<RecomputeFacts> {
        let s = |k: &str| v.get(k).and_then(|x| x.as_str());
        Some(RecomputeFacts {
            source,
            packet: s("packet")?.to_owned(),
            packet_id: s("packet_id")?.to_owned(),
            verdict: s("verdict")?.to_owned(),
            output_digest_recomputed: s("output_digest_recomputed").map(Fingerprint::of),
            bit_exact: s("method") == Some("bit_exact"),
        })
    }
}

/// R1 and R2 of a recompute result against the packet receipt it names.
pub fn recompute_against_packet(rec: &RecomputeFacts, packet: &PacketFacts) -> Report {
    let mut r = Report::new(KIND);
    if *rec.packet_id != *packet.packet_id {
        r.error(
            rule::R1,
            "/payload/packet_id",
            format!(
                "packet_id {} differs from the packet's {}",
                rec.packet_id, packet.packet_id
            ),
        );
    }
    if let Some(art) = packet.art_id.as_deref() {
        if rec.packet != art {
            r.error(
                rule::R1,
                "/payload/packet",
                format!(
                    "the result checks {}, but the packet {} among the inputs is {art}",
                    rec.packet, packet.packet_id
                ),
            );
        }
    }
    if (packet.bit_exact || rec.bit_exact) && rec.verdict != "inconclusive" {
        if let Some(out) = rec.output_digest_recomputed {
            let want = if out == packet.output_digest {
                "match"
            } else {
                "mismatch"
            };
            if rec.verdict != want {
                r.error(rule::R2,
                    "/payload/verdict",
                    format!("the recomputed output digest {} the packet's, so the verdict is {want}, not {}",
                        if want == "match" { "equals" } else { "differs from" }, rec.verdict),
                );
            }
        }
    }
    r
}

/// A signed packet ready to re-run: its envelope's art id and the fields a
/// recompute result names or compares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PacketToRerun {
    pub art_id: String,
    pub packet_id: String,
    pub input_digest: String,
    pub output_digest: String,
    /// `bit_exact`, `bounded`, `none`, or empty when the packet claims none.
    pub reproducibility: String,
}

/// Why a packet cannot be re-run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RerunError {
    /// Not a DSSE envelope (payload, payloadType, signatures).
    #[error("not a signed envelope (payload, payloadType, signatures)")]
    NotAnEnvelope,
    /// The envelope or its packet breaks these rules.
    #[error("it breaks {}", .0.join(", "))]
    Breaks(Vec<&'static str>),
    /// The statement is not a `verification.packet.v1`.
    #[error("not a verification.packet.v1 receipt")]
    NotAPacket,
}

/// The context a signed packet is checked under before it is re-run: as
/// `chit verify --kind verification.packet.v1` with the trust file given.
pub fn rerun_context(trust: Option<&crate::trust::Trust>) -> crate::Context<'_> {
    crate::Context {
        kind: Some(crate::Kind::Packet),
        trust,
        ..Default::default()
    }
}

/// What a signed packet, checked under [`rerun_context`] (`checked`), asks
/// to be re-run: the envelope, the statement and the packet must all hold.
/// Without a trust file (`trusted` false) its signature cannot be checked,
/// and only that is let pass (the caller says so).
pub fn packet_to_rerun(
    doc: &crate::Doc,
    checked: &crate::Checked,
    trusted: bool,
) -> Result<PacketToRerun, RerunError> {
    if !crate::envelope::looks_like_envelope(doc) {
        return Err(RerunError::NotAnEnvelope);
    }
    let mut rules: Vec<&'static str> = checked.report.errors.iter().map(|f| f.rule).collect();
    if !trusted {
        rules.retain(|r| *r != crate::rule::TRUST);
    }
    rules.sort_unstable();
    rules.dedup();
    if !rules.is_empty() {
        return Err(RerunError::Breaks(rules));
    }
    if checked.statement_kind.as_deref() != Some(crate::kinds::packet::KIND) {
        return Err(RerunError::NotAPacket);
    }
    let mut report = Report::new(crate::kind::ENVELOPE);
    let env = crate::envelope::Envelope::read(doc, &mut report).ok_or(RerunError::NotAnEnvelope)?;
    let statement = crate::json::parse(&env.payload, &crate::Limits::default())
        .map_err(|_| RerunError::NotAPacket)?;
    let payload = statement
        .root()
        .get("payload")
        .ok_or(RerunError::NotAPacket)?;
    let field = |k: &str| {
        payload
            .get(k)
            .and_then(|x| x.as_str())
            .unwrap_or("")
            .to_owned()
    };
    Ok(PacketToRerun {
        art_id: env.ids().artifact_id,
        packet_id: field("packet_id"),
        input_digest: field("input_digest"),
        output_digest: field("output_digest"),
        reproducibility: field("reproducibility"),
    })
}

/// What re-running a packet's workload gave.
#[derive(Clone, Debug)]
pub struct Rerun {
    /// The workload's exit status, when it did not succeed.
    pub failed: Option<String>,
    /// The digest of its output, in the packet's algorithm.
    pub output_digest: String,
    /// For a bounded claim: the distance between the outputs and the
    /// largest distance allowed, when both could be had.
    pub distance: Option<(f64, f64)>,
}

/// The recompute result for `packet` re-run as `rerun`: its verdict, and
/// the `verification.recompute.v1` document to sign. A `match` or
/// `mismatch` is decided by the packet's claim: `bit_exact` by the output
/// digests, `bounded` by the distance against the threshold; anything else
/// (or a failed workload) is `inconclusive`, saying why in `notes`.
pub fn result(
    packet: &PacketToRerun,
    rerun: &Rerun,
    recomputed_at: String,
) -> (&'static str, serde_json::Value) {
    let mut result = serde_json::Map::new();
    result.insert("schema".into(), KIND.into());
    result.insert("packet".into(), packet.art_id.clone().into());
    result.insert("packet_id".into(), packet.packet_id.clone().into());
    let claim = packet.reproducibility.as_str();
    result.insert(
        "method".into(),
        if claim.is_empty() { "none" } else { claim }.into(),
    );
    let (verdict, notes): (&'static str, Option<String>) = match &rerun.failed {
        Some(status) => (
            "inconclusive",
            Some(format!("the workload exited with {status}")),
        ),
        None => {
            result.insert(
                "output_digest_recomputed".into(),
                rerun.output_digest.clone().into(),
            );
            match claim {
                "bit_exact" => (
                    if rerun.output_digest == packet.output_digest {
                        "match"
                    } else {
                        "mismatch"
                    },
                    None,
                ),
                "bounded" => match rerun.distance {
                    Some((d, max)) => {
                        result.insert("distance".into(), serde_json::json!(d));
                        result.insert("threshold".into(), serde_json::json!(max));
                        (if d <= max { "match" } else { "mismatch" }, None)
                    }
                    None => (
                        "inconclusive",
                        Some(
                            "a bounded claim needs --distance-cmd and --max-distance to decide"
                                .into(),
                        ),
                    ),
                },
                _ => (
                    "inconclusive",
                    Some("the packet claims no reproducibility, so nothing decides a match".into()),
                ),
            }
        }
    };
    result.insert("verdict".into(), verdict.into());
    if let Some(n) = notes {
        result.insert("notes".into(), n.into());
    }
    result.insert("recomputed_at".into(), recomputed_at.into());
    (verdict, serde_json::Value::Object(result))
}
