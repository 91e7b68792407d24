//! Building and signing a `numeric.lineage` receipt: the measurement a
//! gateway gathered, the `signed_body` the spec prescribes, the signature
//! over its canonical form, and the receipt id.

use super::arithmetic::{
    class, distinct_count, divergence, effect, fraction_numerator, identity_commitment,
    salt_commitment, sequence_digest, token_count, Bound, Class, Divergence, LevelFigures, Runs,
    DEFAULT_FRACTION_SCALE,
};
use super::KIND;
use crate::canon;
use crate::digest::sha256_hex;
use crate::json::ReadError;

/// Why a measurement gives no `signed_body`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("a measurement needs at least two levels")]
    TooFewLevels,
    #[error("no tokens were emitted, so nothing can be compared")]
    NoTokens,
}

/// Why a `serde_json` value has no canonical form: chit's strict reader
/// refused its text (a number out of range, say).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub struct CanonicalError(#[from] pub ReadError);

pub const SCHEMA_VERSION: &str = "r1.0.0";
/// The schema's constant `boundary` text (L12).
pub const BOUNDARY: &str = "Numeric Lineage record. Attests that an identical request set declaring a temperature of zero was transmitted to one named serving endpoint at two or more batch occupancy levels induced by the measuring gateway, that the bitwise divergence of the emitted token sequence across those levels was measured against a divergence bound whose digest was fixed before the first measured request was transmitted, that the accumulator width identifier, the reduction split count, and the reduction order identifier reported for each level are recorded as signed fields, and that the recorded serving set change and the recorded withholding of settlement authorization were recomputed from the measurement rather than supplied. It does not attest that any emitted token sequence is correct, does not attest the numeric precision of the weights, does not attest a quantization level, does not attest the identity of the model served, and does not attest that any nondeterminism observed arose from batch occupancy rather than from another source the endpoint may have introduced.";

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
pub struct Assessment {
    pub class: Class,
    pub divergence: Divergence,
    pub body: serde_json::Value,
}

impl Measurement {
    /// Builds the `signed_body` exactly as the spec says. Refuses a
    /// measurement with fewer than two levels or no token at all.
    pub fn body(&self, effected_at: &str) -> Result<Assessment, BodyError> {
        let runs: Vec<&Runs> = self.levels.iter().map(|l| &l.runs).collect();
        let div = divergence(&runs).ok_or(BodyError::TooFewLevels)?;
        let c = div.comparison;
        if c.compared == 0 {
            return Err(BodyError::NoTokens);
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
            "receipt_type": KIND,
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
        Ok(Assessment {
            class,
            divergence: div,
            body,
        })
    }
}

/// `JCS` of a `serde_json` value.
pub fn canonical_of(v: &serde_json::Value) -> Result<Vec<u8>, CanonicalError> {
    let text = v.to_string();
    let limits = crate::json::Limits {
        max_size: usize::MAX,
        ..Default::default()
    };
    let doc = crate::json::parse(text.as_bytes(), &limits)?;
    Ok(canon::to_vec(doc.root(), canon::Profile::Jcs))
}

/// Signs a `signed_body` at `ts` (Unix seconds): the whole receipt.
pub fn sign(
    body: serde_json::Value,
    key: &crate::keys::SecretKey,
    ts: u64,
) -> Result<serde_json::Value, CanonicalError> {
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
