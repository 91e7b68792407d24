//! The arithmetic of a `numeric.lineage` receipt, shared by the gateway that
//! builds one and the verifier that recomputes it: commitments, the bound's
//! digest, sequence digests, divergence, class and effect. Integers only.
//!
//! Token sequences are held as `runs[r][i]`: repetition `r`, request `i`,
//! the token ids in order.

use crate::canon;
use crate::digest::sha256_hex;

pub const RECEIPT_TYPE: &str = "numeric.lineage";
pub const SCHEMA_VERSION: &str = "r1.0.0";
/// `fraction_scale` when nothing else is asked for.
pub const DEFAULT_FRACTION_SCALE: u32 = 6;

/// The schema's constant `boundary` text (L12).
pub const BOUNDARY: &str = "Numeric Lineage record. Attests that an identical request set declaring a temperature of zero was transmitted to one named serving endpoint at two or more batch occupancy levels induced by the measuring gateway, that the bitwise divergence of the emitted token sequence across those levels was measured against a divergence bound whose digest was fixed before the first measured request was transmitted, that the accumulator width identifier, the reduction split count, and the reduction order identifier reported for each level are recorded as signed fields, and that the recorded serving set change and the recorded withholding of settlement authorization were recomputed from the measurement rather than supplied. It does not attest that any emitted token sequence is correct, does not attest the numeric precision of the weights, does not attest a quantization level, does not attest the identity of the model served, and does not attest that any nondeterminism observed arose from batch occupancy rather than from another source the endpoint may have introduced.";

/// `JCS({"salt": salt})`, the preimage of `salt.commitment_sha256`.
pub fn salt_preimage(salt_hex: &str) -> Vec<u8> {
    let mut out = b"{\"salt\":".to_vec();
    canon::write_string(salt_hex, &mut out);
    out.push(b'}');
    out
}

pub fn salt_commitment(salt_hex: &str) -> String {
    sha256_hex(&salt_preimage(salt_hex))
}

/// `JCS({"salt": salt, "value": identity})`, the preimage of an identity
/// commitment (endpoint, gateway, reroute target).
pub fn identity_preimage(salt_hex: &str, value: &str) -> Vec<u8> {
    let mut out = b"{\"salt\":".to_vec();
    canon::write_string(salt_hex, &mut out);
    out.extend_from_slice(b",\"value\":");
    canon::write_string(value, &mut out);
    out.push(b'}');
    out
}

pub fn identity_commitment(salt_hex: &str, value: &str) -> String {
    sha256_hex(&identity_preimage(salt_hex, value))
}

/// A divergence bound, fixed before any measured request is sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    /// RFC 3339, UTC.
    pub committed_at: String,
    pub max_differing_positions: u64,
    pub min_first_divergent_index: u64,
    pub max_distinct_sequences_per_level: u64,
    pub required_repetitions_per_level: u64,
}

impl Bound {
    /// `JCS` of exactly the five bound fields.
    pub fn canonical(&self) -> Vec<u8> {
        let mut out = b"{\"committed_at\":".to_vec();
        canon::write_string(&self.committed_at, &mut out);
        out.extend_from_slice(
            format!(
                ",\"max_differing_positions\":{},\"max_distinct_sequences_per_level\":{},\"min_first_divergent_index\":{},\"required_repetitions_per_level\":{}}}",
                self.max_differing_positions,
                self.max_distinct_sequences_per_level,
                self.min_first_divergent_index,
                self.required_repetitions_per_level
            )
            .as_bytes(),
        );
        out
    }

    /// `bound_digest_sha256`.
    pub fn digest(&self) -> String {
        sha256_hex(&self.canonical())
    }

    /// Reads the five fields from an object (a receipt's `bound_ref`, a
    /// bound file); `None` if one is missing or not a non-negative integer.
    pub fn from_val(v: crate::Val) -> Option<Bound> {
        let n = |k: &str| {
            v.get(k)
                .and_then(|x| x.as_i64())
                .and_then(|x| u64::try_from(x).ok())
        };
        Some(Bound {
            committed_at: v.get("committed_at")?.as_str()?.to_owned(),
            max_differing_positions: n("max_differing_positions")?,
            min_first_divergent_index: n("min_first_divergent_index")?,
            max_distinct_sequences_per_level: n("max_distinct_sequences_per_level")?,
            required_repetitions_per_level: n("required_repetitions_per_level")?,
        })
    }
}

/// One level's sequences: `runs[r][i]`.
pub type Runs = Vec<Vec<Vec<u64>>>;

/// `JCS(runs)`: nested arrays of integers, no whitespace.
pub fn runs_canonical(runs: &Runs) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.push(b'[');
    for (r, reqs) in runs.iter().enumerate() {
        if r > 0 {
            out.push(b',');
        }
        out.push(b'[');
        for (i, toks) in reqs.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'[');
            for (k, t) in toks.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(t.to_string().as_bytes());
            }
            out.push(b']');
        }
        out.push(b']');
    }
    out.push(b']');
    out
}

/// `sequence_digest_sha256`.
pub fn sequence_digest(runs: &Runs) -> String {
    sha256_hex(&runs_canonical(runs))
}

/// `distinct_sequence_count`: distinct whole vectors `runs[r]` over `r`.
/// Linear in the tokens (a hash set), so a transcript of many repetitions
/// cannot make it quadratic.
pub fn distinct_count(runs: &Runs) -> u64 {
    let seen: std::collections::HashSet<&Vec<Vec<u64>>> = runs.iter().collect();
    seen.len() as u64
}

/// `emitted_token_count`.
pub fn token_count(runs: &Runs) -> u64 {
    runs.iter().flatten().map(|t| t.len() as u64).sum()
}

/// Positions compared and differing between two levels, and the first
/// differing position (section 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Comparison {
    pub compared: u64,
    pub differing: u64,
    pub first: Option<u64>,
}

/// Compares `base` and `other` over `r < min(R_base, R_other)` and every
/// request both have. The positions past the shorter sequence all differ
/// and are counted at once, so the work is the shorter side's length (a
/// long baseline compared with many short levels stays linear).
pub fn compare(base: &Runs, other: &Runs) -> Comparison {
    let mut c = Comparison::default();
    for (ra, rb) in base.iter().zip(other) {
        for (a, b) in ra.iter().zip(rb) {
            let (short, long) = (a.len().min(b.len()), a.len().max(b.len()));
            let mut diff_first = None;
            let mut differing = 0u64;
            for (p, (x, y)) in a.iter().zip(b).enumerate() {
                if x != y {
                    differing += 1;
                    diff_first.get_or_insert(p);
                }
            }
            if long > short {
                differing += (long - short) as u64;
                diff_first.get_or_insert(short);
            }
            c.compared += long as u64;
            c.differing += differing;
            if let Some(p) = diff_first {
                let p = p as u64;
                c.first = Some(c.first.map_or(p, |f| f.min(p)));
            }
        }
    }
    c
}

/// floor(differing × 10^scale / compared), integers only.
pub fn fraction_numerator(differing: u64, compared: u64, scale: u32) -> Option<u64> {
    if compared == 0 {
        return None;
    }
    let num = u128::from(differing).checked_mul(10u128.checked_pow(scale)?)?;
    u64::try_from(num / u128::from(compared)).ok()
}

/// The divergence block: the pair (0, ℓ) with the most differing positions,
/// the higher ℓ on a tie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divergence {
    pub high: usize,
    pub comparison: Comparison,
}

/// The divergence over `levels` (at least two). `None` with fewer.
pub fn divergence(levels: &[&Runs]) -> Option<Divergence> {
    let base = levels.first()?;
    let mut best: Option<Divergence> = None;
    for (l, other) in levels.iter().enumerate().skip(1) {
        let c = compare(base, other);
        if best.is_none_or(|b| c.differing >= b.comparison.differing) {
            best = Some(Divergence {
                high: l,
                comparison: c,
            });
        }
    }
    best
}

/// A receipt's class (section 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Invariant,
    Coupled,
    Indeterminate,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Invariant => "occupancy_invariant",
            Class::Coupled => "occupancy_coupled",
            Class::Indeterminate => "indeterminate",
        }
    }
}

/// What the class rules read of one level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelFigures {
    pub induced_concurrency: u64,
    pub observed_in_flight_at_accept: u64,
    pub repetitions: u64,
    pub distinct_sequence_count: u64,
}

/// Section 5's class: the first rule that applies.
pub fn class(bound: &Bound, levels: &[LevelFigures], differing: u64, first: Option<u64>) -> Class {
    if levels.iter().any(|l| {
        l.repetitions < bound.required_repetitions_per_level
            || l.observed_in_flight_at_accept < l.induced_concurrency
    }) {
        return Class::Indeterminate;
    }
    if differing > bound.max_differing_positions
        || first.is_some_and(|f| f < bound.min_first_divergent_index)
        || levels
            .iter()
            .any(|l| l.distinct_sequence_count > bound.max_distinct_sequences_per_level)
    {
        return Class::Coupled;
    }
    Class::Invariant
}

/// The effect a class gives (section 5), apart from `effected_at`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effect {
    pub serving_set_action: &'static str,
    pub settlement_action: &'static str,
    pub refused_request_count: u64,
    /// The reroute target's commitment and its batch-invariance declaration.
    pub reroute: Option<(String, bool)>,
}

/// The effect of `class` for a set of `requests`; `reroute` (a target's
/// commitment, declared batch invariant) is used only for a coupled
/// endpoint, and only when the target declares batch invariance.
pub fn effect(class: Class, requests: u64, reroute: Option<(String, bool)>) -> Effect {
    match class {
        Class::Invariant => Effect {
            serving_set_action: "retained",
            settlement_action: "authorized",
            refused_request_count: 0,
            reroute: None,
        },
        Class::Indeterminate => Effect {
            serving_set_action: "retained",
            settlement_action: "refused",
            refused_request_count: requests,
            reroute: None,
        },
        Class::Coupled => Effect {
            serving_set_action: "removed",
            settlement_action: "refused",
            refused_request_count: requests,
            reroute: reroute.filter(|(_, declared)| *declared),
        },
    }
}

/// `r_numeric_lineage_<ts>_<first 12 hex of payload_sha256>`.
pub fn receipt_id(ts: u64, payload_sha256: &str) -> String {
    format!(
        "r_numeric_lineage_{ts}_{}",
        payload_sha256.get(..12).unwrap_or(payload_sha256)
    )
}

/// What an endpoint declares about its numerics for a level: recorded and
/// signed, never believed. Unreported fields are `unreported`, 1 and false.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Numerics {
    pub accumulator_width_id: String,
    pub operand_width_id: String,
    pub reduction_split_count: u64,
    pub reduction_order_id: String,
    pub page_layout_fixed_before_kernel: bool,
    pub parameter_region_id: String,
    pub batch_invariant_declared: bool,
}

impl Default for Numerics {
    fn default() -> Self {
        Numerics {
            accumulator_width_id: "unreported".into(),
            operand_width_id: "unreported".into(),
            reduction_split_count: 1,
            reduction_order_id: "unreported".into(),
            page_layout_fixed_before_kernel: false,
            parameter_region_id: "unreported".into(),
            batch_invariant_declared: false,
        }
    }
}

/// One measured level.
#[derive(Clone, Debug)]
pub struct LevelRecord {
    pub induced_concurrency: u64,
    pub observed_in_flight_at_accept: u64,
    pub observed_in_flight_at_complete: u64,
    pub runs: Runs,
    pub numerics: Numerics,
}

/// Everything a receipt is built from.
#[derive(Clone, Debug)]
pub struct Measurement {
    pub lineage_id: String,
    pub salt_hex: String,
    pub gateway: String,
    pub endpoint: String,
    pub model: String,
    pub bound: Bound,
    /// `JCS` of the request set as sent.
    pub request_set_canonical: Vec<u8>,
    pub request_count: u64,
    pub max_output_tokens: u64,
    pub levels: Vec<LevelRecord>,
    /// When the first measured request was transmitted (RFC 3339).
    pub measured_at: String,
    /// A reroute target the operator declares batch invariant.
    pub reroute: Option<String>,
}

/// What a measurement found, before it is signed.
#[derive(Clone, Debug)]
pub struct Finding {
    pub class: Class,
    pub divergence: Divergence,
    pub body: serde_json::Value,
}

impl Measurement {
    /// Builds the `signed_body` exactly as the spec says. Refuses a
    /// measurement with fewer than two levels or no token at all.
    pub fn body(&self, effected_at: &str) -> Result<Finding, String> {
        let runs: Vec<&Runs> = self.levels.iter().map(|l| &l.runs).collect();
        let div = divergence(&runs).ok_or("a measurement needs at least two levels")?;
        let c = div.comparison;
        if c.compared == 0 {
            return Err("no tokens were emitted, so nothing can be compared".into());
        }
        let figures: Vec<LevelFigures> = self
            .levels
            .iter()
            .map(|l| LevelFigures {
                induced_concurrency: l.induced_concurrency,
                observed_in_flight_at_accept: l.observed_in_flight_at_accept,
                repetitions: l.runs.len() as u64,
                distinct_sequence_count: distinct_count(&l.runs),
            })
            .collect();
        let class = class(&self.bound, &figures, c.differing, c.first);
        let reroute = self
            .reroute
            .as_ref()
            .map(|url| (identity_commitment(&self.salt_hex, url), true));
        let effect = effect(class, self.request_count, reroute);
        let levels: Vec<serde_json::Value> = self
            .levels
            .iter()
            .zip(&figures)
            .enumerate()
            .map(|(i, (l, f))| {
                let n = &l.numerics;
                serde_json::json!({
                    "level_index": i,
                    "induced_concurrency": l.induced_concurrency,
                    "observed_in_flight_at_accept": l.observed_in_flight_at_accept,
                    "observed_in_flight_at_complete": l.observed_in_flight_at_complete,
                    "repetitions": f.repetitions,
                    "distinct_sequence_count": f.distinct_sequence_count,
                    "sequence_digest_sha256": sequence_digest(&l.runs),
                    "emitted_token_count": token_count(&l.runs),
                    "accumulator_width_id": n.accumulator_width_id,
                    "operand_width_id": n.operand_width_id,
                    "reduction_split_count": n.reduction_split_count,
                    "reduction_order_id": n.reduction_order_id,
                    "page_layout_fixed_before_kernel": n.page_layout_fixed_before_kernel,
                    "parameter_region_id": n.parameter_region_id,
                    "batch_invariant_declared": n.batch_invariant_declared,
                })
            })
            .collect();
        let b = &self.bound;
        let body = serde_json::json!({
            "receipt_type": RECEIPT_TYPE,
            "schema": SCHEMA_VERSION,
            "lineage_id": self.lineage_id,
            "salt": {"commitment_sha256": salt_commitment(&self.salt_hex)},
            "gateway_ref": {"commitment": identity_commitment(&self.salt_hex, &self.gateway)},
            "endpoint_ref": {
                "commitment": identity_commitment(&self.salt_hex, &self.endpoint),
                "declared_model_name": self.model,
            },
            "bound_ref": {
                "bound_digest_sha256": b.digest(),
                "committed_at": b.committed_at,
                "max_differing_positions": b.max_differing_positions,
                "min_first_divergent_index": b.min_first_divergent_index,
                "max_distinct_sequences_per_level": b.max_distinct_sequences_per_level,
                "required_repetitions_per_level": b.required_repetitions_per_level,
            },
            "request_set": {
                "set_digest_sha256": sha256_hex(&self.request_set_canonical),
                "request_count": self.request_count,
                "declared_temperature_numerator": 0,
                "declared_temperature_scale": 0,
                "max_output_tokens": self.max_output_tokens,
            },
            "levels": levels,
            "divergence": {
                "pair_low_level_index": 0,
                "pair_high_level_index": div.high,
                "first_divergent_index": c.first,
                "differing_position_count": c.differing,
                "compared_position_count": c.compared,
                "fraction_numerator": fraction_numerator(c.differing, c.compared, DEFAULT_FRACTION_SCALE),
                "fraction_scale": DEFAULT_FRACTION_SCALE,
                "class": class.name(),
            },
            "effect": {
                "serving_set_action": effect.serving_set_action,
                "reroute_target_commitment": effect.reroute.as_ref().map(|r| r.0.clone()),
                "reroute_target_batch_invariant_declared": effect.reroute.as_ref().map(|r| r.1),
                "settlement_action": effect.settlement_action,
                "refused_request_count": effect.refused_request_count,
                "effected_at": effected_at,
            },
            "measured_at": self.measured_at,
            "boundary": BOUNDARY,
        });
        Ok(Finding {
            class,
            divergence: div,
            body,
        })
    }
}

/// `JCS` of a `serde_json` value.
pub fn canonical_of(v: &serde_json::Value) -> Result<Vec<u8>, String> {
    let text = v.to_string();
    let limits = crate::json::Limits {
        max_size: usize::MAX,
        ..Default::default()
    };
    let doc = crate::json::parse(text.as_bytes(), &limits).map_err(|e| e.to_string())?;
    Ok(canon::to_vec(doc.root(), canon::Profile::Jcs))
}

/// Signs a `signed_body` at `ts` (Unix seconds): the whole receipt.
pub fn sign(
    body: serde_json::Value,
    key: &crate::keys::SecretKey,
    ts: u64,
) -> Result<serde_json::Value, String> {
    let canonical = canonical_of(&body)?;
    let digest = sha256_hex(&canonical);
    let sig = key.sign(&canonical);
    Ok(serde_json::json!({
        "receipt_id": receipt_id(ts, &digest),
        "payload_sha256": digest,
        "sig_b64u": crate::keys::encode_base64url(&sig),
        "key_id": key.public().did_key(),
        "algorithm": "Ed25519",
        "ts": ts,
        "signed_body": body,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparison_counts_missing_tokens_as_differences() {
        let a: Runs = vec![vec![vec![1, 2, 3], vec![4]]];
        let b: Runs = vec![vec![vec![1, 9, 3, 5], vec![4]]];
        let c = compare(&a, &b);
        assert_eq!(
            c,
            Comparison {
                compared: 5,
                differing: 2,
                first: Some(1)
            }
        );
        assert_eq!(fraction_numerator(2, 5, 6), Some(400_000));
        assert_eq!(fraction_numerator(1, 3, 6), Some(333_333));
        assert_eq!(fraction_numerator(1, 0, 6), None);
    }

    #[test]
    fn divergence_takes_the_most_differing_pair_and_the_higher_on_a_tie() {
        let base: Runs = vec![vec![vec![1, 2]]];
        let same = base.clone();
        let off: Runs = vec![vec![vec![1, 3]]];
        assert_eq!(divergence(&[&base, &off, &same]).unwrap().high, 1);
        assert_eq!(divergence(&[&base, &off, &off]).unwrap().high, 2);
        assert_eq!(divergence(&[&base, &same, &same]).unwrap().high, 2);
        assert!(divergence(&[&base]).is_none());
    }

    /// The public vector's bound.
    fn vector_bound() -> Bound {
        Bound {
            committed_at: "2026-11-30T10:00:00Z".into(),
            max_differing_positions: 0,
            min_first_divergent_index: 0,
            max_distinct_sequences_per_level: 1,
            required_repetitions_per_level: 2,
        }
    }

    #[test]
    fn class_rules_in_order() {
        let bound = vector_bound();
        let lv = |c, acc, reps, distinct| LevelFigures {
            induced_concurrency: c,
            observed_in_flight_at_accept: acc,
            repetitions: reps,
            distinct_sequence_count: distinct,
        };
        let ok = [lv(1, 1, 2, 1), lv(8, 8, 2, 1)];
        assert_eq!(class(&bound, &ok, 0, None), Class::Invariant);
        assert_eq!(class(&bound, &ok, 1, Some(3)), Class::Coupled);
        assert_eq!(
            class(&bound, &[lv(1, 1, 2, 1), lv(8, 8, 2, 2)], 0, None),
            Class::Coupled
        );
        // Not induced: indeterminate even though tokens differ.
        assert_eq!(
            class(&bound, &[lv(1, 1, 2, 1), lv(8, 1, 2, 1)], 5, Some(0)),
            Class::Indeterminate
        );
        assert_eq!(
            class(&bound, &[lv(1, 1, 1, 1), lv(8, 8, 2, 1)], 0, None),
            Class::Indeterminate
        );
    }

    #[test]
    fn commitments_and_bound_digest_match_the_vector() {
        // ../vectors/lineage/coupled.* (crates/chit/tests/data/lineage).
        let salt = "5a".repeat(32);
        assert_eq!(
            salt_commitment(&salt),
            "a8c9fe32d054470e6cabe30d883a8921fb4104b2ee2e5416bab73d45817c4868"
        );
        assert_eq!(
            identity_commitment(&salt, "chit-gateway-test"),
            "a4a332478218bba797b9a0be1d63d9826929d3c24ee1126458b5a0209a7090a6"
        );
        assert_eq!(
            identity_commitment(&salt, "http://127.0.0.1:8080/v1"),
            "98dbe0971ef6a139c997360ee1fd4939d2c7a4d1989c00b61d09db4ff5ffc012"
        );
        let bound = vector_bound();
        assert_eq!(
            bound.digest(),
            "c9f3868ef802520eced0c56dce37d67e4da8164bbba1e7b36764b0324f0fe8d3"
        );
    }
}
