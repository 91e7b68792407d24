//! The arithmetic of a `numeric.lineage` receipt, shared by the gateway that
//! builds one and the verifier that recomputes it: commitments, the bound's
//! digest, sequence digests, distinct counts, divergence, class and effect.
//! Integers only.
//!
//! Token sequences are held as `runs[r][i]`: repetition `r`, request `i`,
//! the token ids in order.

use crate::canon;
use crate::digest::sha256_hex;

/// `fraction_scale` when nothing else is asked for.
pub const DEFAULT_FRACTION_SCALE: u32 = 6;

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

    /// Reads a bound file as `chit lineage bound` wrote it, and checks it
    /// before anything is measured against it: its five fields, a UTC
    /// `committed_at`, and its `bound_digest_sha256` (where written) over
    /// those fields, so a bound edited after it was committed is refused.
    pub fn read_committed(bytes: &[u8], limits: &crate::json::Limits) -> Result<Bound, BoundError> {
        let doc = crate::json::parse(bytes, limits).map_err(BoundError::Unreadable)?;
        let b = Bound::from_val(doc.root()).ok_or(BoundError::NotABound)?;
        if crate::time::rfc3339_nanos(&b.committed_at).is_none() {
            return Err(BoundError::NotUtc);
        }
        let recorded = doc
            .root()
            .get("bound_digest_sha256")
            .and_then(|d| d.as_str());
        if recorded.is_some_and(|d| d != b.digest()) {
            return Err(BoundError::Edited);
        }
        Ok(b)
    }

    /// A bound must be fixed before the measurement starts: refuses one
    /// committed at or after `now` (nanoseconds since 1970, UTC).
    pub fn committed_before(&self, now_nanos: i128) -> Result<(), BoundError> {
        let committed = crate::time::rfc3339_nanos(&self.committed_at).unwrap_or(i128::MAX);
        if committed >= now_nanos {
            return Err(BoundError::NotBeforeNow(self.committed_at.clone()));
        }
        Ok(())
    }
}

/// Why a bound file cannot be measured against.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BoundError {
    #[error("{0}")]
    Unreadable(crate::json::ReadError),
    #[error("not a bound (write one with 'chit lineage bound')")]
    NotABound,
    #[error("committed_at is not a UTC time")]
    NotUtc,
    #[error(
        "bound_digest_sha256 does not match its fields (the bound was edited after it was committed)"
    )]
    Edited,
    #[error("it was committed at {0}, not before now: a bound must be fixed before the measurement starts")]
    NotBeforeNow(String),
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
