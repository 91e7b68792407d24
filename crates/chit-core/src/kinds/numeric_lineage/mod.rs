//! `numeric.lineage`: whether an LLM endpoint's temperature-0 tokens change
//! with batch occupancy, measured against a bound fixed beforehand.
//!
//! This module is the kind's check: one function per rule, L1-L12, which
//! hold for a receipt alone. The rest lives beside it:
//!
//! - [`arithmetic`]: commitments, the bound's digest, sequence digests,
//!   distinct counts, divergence, class and effect (shared by the gateway
//!   that builds a receipt and the rules that recompute one);
//! - [`receipt`]: the measurement, the `signed_body` builder, the signer
//!   and receipt ids;
//! - [`transcript`]: the gateway's transcript, read, and L13-L15, the rules
//!   that need it.

pub mod arithmetic;
mod fields;
pub mod receipt;
pub mod rule;
pub mod transcript;

use self::arithmetic::{self as math, Bound, Class, LevelFigures};
use crate::canon::{self, Profile};
use crate::digest::sha256_hex;
use crate::doc::Val;
use crate::keys::{decode_base64, KeyError, PublicKey};
use crate::report::Report;
use crate::schema;
use crate::time::rfc3339_nanos;
use crate::trust::Trust;
use fields::{int, text};

pub const KIND: &str = crate::kind::Kind::Lineage.name();

/// What a check may use beyond the receipt: the one [`crate::check::Context`]
/// every kind is given. This kind reads its `trust` (which resolves
/// `did:web` and `did:hive` key ids, and says whether a `did:key` signer is
/// one the verifier trusts) and its `transcript` (L13-L15).
pub use crate::context::Context;

/// The receipt alone (L1-L12); `did:web` and `did:hive` keys then cannot be
/// resolved.
pub fn check(v: Val) -> Report {
    check_with(v, Context::default())
}

pub fn check_with(v: Val, ctx: Context) -> Report {
    check_signed(v, ctx).0
}

/// The receipt's findings, and its own signer when L3 found the signature
/// good under a key the trust file lists and lets sign `numeric.lineage`:
/// that key counts toward `--threshold` with the signers of any envelope
/// carrying the receipt.
pub fn check_signed(v: Val, ctx: Context) -> (Report, Option<PublicKey>) {
    let mut r = Report::new(KIND);
    if !l1_schema(v, &mut r) {
        return (r, None);
    }
    let Some(body) = v.get("signed_body") else {
        return (r, None);
    };
    let canonical = canon::to_vec(body, Profile::Jcs);
    let digest = sha256_hex(&canonical);
    l2_payload_digest(v, &digest, &mut r);
    let signer = l3_signature(v, &canonical, ctx.trust, &mut r);
    l4_receipt_id(v, &mut r);
    let bound = body.get("bound_ref").and_then(Bound::from_val);
    if let Some(b) = &bound {
        l5_bound_digest(body, b, &mut r);
    }
    let levels = level_figures(body);
    l6_levels(body, &levels, &mut r);
    l7_pair(body, levels.len(), &mut r);
    l8_counts(body, &mut r);
    if let Some(b) = &bound {
        l9_class(body, b, &levels, &mut r);
    }
    l10_effect(body, &mut r);
    l11_times(v, body, &mut r);
    if let Some(t) = ctx.transcript {
        t.check(v, body, &mut r);
    }
    (r, signer)
}

/// L1: the schema (reported as `schema`, as for every kind), except that a
/// wrong `boundary` text is L12.
fn l1_schema(v: Val, r: &mut Report) -> bool {
    let mut s = Report::new(KIND);
    let ok = schema::NUMERIC_LINEAGE.check(v, &mut s);
    for mut f in s.errors {
        if f.path == "/signed_body/boundary" {
            f.rule = rule::L12;
            f.message = "boundary is not the schema's constant text".into();
        }
        r.errors.push(f);
    }
    ok
}

/// L2: `payload_sha256` is the SHA-256 of `JCS(signed_body)`.
fn l2_payload_digest(v: Val, digest: &str, r: &mut Report) {
    if text(v, "payload_sha256") != Some(digest) {
        r.error(
            rule::L2,
            "/payload_sha256",
            format!("payload_sha256 is not the SHA-256 of the canonical signed_body ({digest})"),
        );
    }
}

/// Why a `key_id` names no key (L3).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// A `did:key` that is not a usable Ed25519 key.
    #[error("key_id {key_id}: {source}")]
    BadDidKey { key_id: String, source: KeyError },
    /// A `did:web` or `did:hive` with no trust file to resolve it.
    #[error("key_id {key_id} resolves only through a trust file (never over the network): give --trust with a [[key]] whose did is {key_id}")]
    NeedsTrust { key_id: String },
    /// A DID the trust file does not name.
    #[error("the trust file names no key with did {key_id}")]
    NotInTrust { key_id: String },
}

/// The key a `key_id` names: a did:key by itself, did:web and did:hive
/// only through the trust file.
pub fn resolve(key_id: &str, trust: Option<&Trust>) -> Result<PublicKey, ResolveError> {
    if key_id.starts_with("did:key:") {
        return PublicKey::parse(key_id).map_err(|source| ResolveError::BadDidKey {
            key_id: key_id.to_owned(),
            source,
        });
    }
    let key_id = key_id.to_owned();
    match trust {
        None => Err(ResolveError::NeedsTrust { key_id }),
        Some(t) => t
            .keys
            .iter()
            .find(|k| k.did.as_deref() == Some(key_id.as_str()))
            .map(|k| k.key)
            .ok_or(ResolveError::NotInTrust { key_id }),
    }
}

/// L3: the signature over `JCS(signed_body)` verifies under the key
/// `key_id` names; under `--trust`, a key the trust file lists and lets sign
/// this kind. Returns that trusted key.
fn l3_signature(
    v: Val,
    canonical: &[u8],
    trust: Option<&Trust>,
    r: &mut Report,
) -> Option<PublicKey> {
    let key_id = text(v, "key_id").unwrap_or("");
    let key = match resolve(key_id, trust) {
        Ok(k) => k,
        Err(why) => {
            r.error(rule::L3, "/key_id", why.to_string());
            return None;
        }
    };
    let sig = text(v, "sig_b64u").and_then(decode_base64);
    if !sig.is_some_and(|s| key.verify_strict(canonical, &s)) {
        r.error(
            rule::L3,
            "/sig_b64u",
            format!("the signature does not verify under {key_id}"),
        );
        return None;
    }
    // Under --trust only the keys it lists are trusted, each for its kinds.
    let t = trust?;
    let entries = t.entries_for(&key);
    if entries.is_empty() {
        r.error(
            crate::rule::TRUST,
            "/key_id",
            format!(
                "signed by {key_id}, which the trust file does not list: under --trust only listed keys are trusted; \
                 add a [[key]] with public_key = \"{key_id}\" if you trust it"
            ),
        );
        None
    } else if !entries.iter().any(|k| k.may_sign(KIND)) {
        r.error(
            crate::rule::TRUST,
            "/key_id",
            format!(
                "key {} ({key_id}) signed a {KIND}, which the trust file does not let it sign (its kinds)",
                entries[0].name
            ),
        );
        None
    } else {
        Some(key)
    }
}

/// L4: `receipt_id` is formed from `ts` and the digest.
fn l4_receipt_id(v: Val, r: &mut Report) {
    let (Some(ts), Some(d)) = (int(v, "ts"), text(v, "payload_sha256")) else {
        return;
    };
    let want = receipt::receipt_id(ts, d);
    if text(v, "receipt_id") != Some(want.as_str()) {
        r.error(
            rule::L4,
            "/receipt_id",
            format!("receipt_id should be {want} (from ts and payload_sha256)"),
        );
    }
}

/// L5: `bound_digest_sha256` recomputes from the bound's fields.
fn l5_bound_digest(body: Val, bound: &Bound, r: &mut Report) {
    let want = bound.digest();
    let got = body
        .get("bound_ref")
        .and_then(|b| text(b, "bound_digest_sha256"));
    if got != Some(want.as_str()) {
        r.error(
            rule::L5,
            "/signed_body/bound_ref/bound_digest_sha256",
            format!("the bound's digest is {want}, not the one recorded"),
        );
    }
}

fn level_figures(body: Val) -> Vec<LevelFigures> {
    body.get("levels")
        .map(|ls| {
            ls.items()
                .map(|l| LevelFigures {
                    induced_concurrency: int(l, "induced_concurrency").unwrap_or(0),
                    observed_in_flight_at_accept: int(l, "observed_in_flight_at_accept")
                        .unwrap_or(0),
                    repetitions: int(l, "repetitions").unwrap_or(0),
                    distinct_sequence_count: int(l, "distinct_sequence_count").unwrap_or(0),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// L6: levels in order, concurrency strictly increasing, no more distinct
/// sequences than repetitions.
fn l6_levels(body: Val, levels: &[LevelFigures], r: &mut Report) {
    let Some(ls) = body.get("levels") else { return };
    for (i, l) in ls.items().enumerate() {
        if int(l, "level_index") != Some(i as u64) {
            r.error(
                rule::L6,
                format!("/signed_body/levels/{i}/level_index"),
                format!(
                    "level {i} carries level_index {}",
                    int(l, "level_index").unwrap_or(0)
                ),
            );
        }
    }
    for (i, w) in levels.windows(2).enumerate() {
        if w[1].induced_concurrency <= w[0].induced_concurrency {
            r.error(
                rule::L6,
                format!("/signed_body/levels/{}/induced_concurrency", i + 1),
                format!(
                    "induced_concurrency must strictly increase: {} then {}",
                    w[0].induced_concurrency, w[1].induced_concurrency
                ),
            );
        }
    }
    for (i, l) in levels.iter().enumerate() {
        if l.distinct_sequence_count > l.repetitions {
            r.error(
                rule::L6,
                format!("/signed_body/levels/{i}/distinct_sequence_count"),
                format!(
                    "{} distinct sequences from {} repetitions",
                    l.distinct_sequence_count, l.repetitions
                ),
            );
        }
    }
}

/// L7: the pair names existing levels, low = 0 < high.
fn l7_pair(body: Val, levels: usize, r: &mut Report) {
    let Some(d) = body.get("divergence") else {
        return;
    };
    let (low, high) = (
        int(d, "pair_low_level_index").unwrap_or(0),
        int(d, "pair_high_level_index").unwrap_or(0),
    );
    if low != 0 || high <= low || high >= levels as u64 {
        r.error(
            rule::L7,
            "/signed_body/divergence/pair_high_level_index",
            format!("the pair ({low}, {high}) must be (0, ℓ) with 0 < ℓ < {levels} levels"),
        );
    }
}

/// L8: the divergence counts agree with each other.
fn l8_counts(body: Val, r: &mut Report) {
    let Some(d) = body.get("divergence") else {
        return;
    };
    let differing = int(d, "differing_position_count").unwrap_or(0);
    let compared = int(d, "compared_position_count").unwrap_or(0);
    let first = int(d, "first_divergent_index");
    let at = "/signed_body/divergence";
    if differing > compared {
        r.error(
            rule::L8,
            format!("{at}/differing_position_count"),
            format!("{differing} differing positions of {compared} compared"),
        );
    }
    match first {
        None if differing > 0 => r.error(
            rule::L8,
            format!("{at}/first_divergent_index"),
            "first_divergent_index is null, but positions differ",
        ),
        Some(_) if differing == 0 => r.error(
            rule::L8,
            format!("{at}/first_divergent_index"),
            "first_divergent_index is set, but no position differs",
        ),
        Some(f) if f >= compared => r.error(
            rule::L8,
            format!("{at}/first_divergent_index"),
            format!("first_divergent_index {f} is not below the {compared} compared positions"),
        ),
        _ => {}
    }
    let scale = int(d, "fraction_scale").unwrap_or(0);
    let want = u32::try_from(scale)
        .ok()
        .and_then(|s| math::fraction_numerator(differing, compared, s));
    match want {
        Some(w) if int(d, "fraction_numerator") == Some(w) => {}
        Some(w) => r.error(
            rule::L8,
            format!("{at}/fraction_numerator"),
            format!(
                "fraction_numerator should be floor({differing} × 10^{scale} / {compared}) = {w}"
            ),
        ),
        None => r.error(
            rule::L8,
            format!("{at}/fraction_scale"),
            format!("fraction_scale {scale} is too large to compute the fraction"),
        ),
    }
}

/// L9: the class is what the bound and the levels give.
fn l9_class(body: Val, bound: &Bound, levels: &[LevelFigures], r: &mut Report) {
    let Some(d) = body.get("divergence") else {
        return;
    };
    let want = math::class(
        bound,
        levels,
        int(d, "differing_position_count").unwrap_or(0),
        int(d, "first_divergent_index"),
    );
    let got = text(d, "class").unwrap_or("");
    if got != want.name() {
        r.error(
            rule::L9,
            "/signed_body/divergence/class",
            format!("the bound and the levels give {}, not {got}", want.name()),
        );
    }
}

/// L10: the effect is what the class gives; reroute fields go together.
fn l10_effect(body: Val, r: &mut Report) {
    let (Some(d), Some(e)) = (body.get("divergence"), body.get("effect")) else {
        return;
    };
    let class = match text(d, "class") {
        Some("occupancy_invariant") => Class::Invariant,
        Some("occupancy_coupled") => Class::Coupled,
        _ => Class::Indeterminate,
    };
    let requests = body
        .get("request_set")
        .and_then(|s| int(s, "request_count"))
        .unwrap_or(0);
    let at = "/signed_body/effect";
    let commitment = e.get("reroute_target_commitment").filter(|x| !x.is_null());
    let declared = e
        .get("reroute_target_batch_invariant_declared")
        .filter(|x| !x.is_null());
    let want = math::effect(class, requests, Some((String::new(), true)));
    for (field, want) in [
        ("serving_set_action", want.serving_set_action.to_owned()),
        ("settlement_action", want.settlement_action.to_owned()),
    ] {
        if text(e, field) != Some(want.as_str()) {
            r.error(
                rule::L10,
                format!("{at}/{field}"),
                format!("a {} endpoint's {field} is {want}", class.name()),
            );
        }
    }
    if int(e, "refused_request_count") != Some(want.refused_request_count) {
        r.error(
            rule::L10,
            format!("{at}/refused_request_count"),
            format!(
                "a {} endpoint refuses {} request(s)",
                class.name(),
                want.refused_request_count
            ),
        );
    }
    if commitment.is_some() != declared.is_some() {
        r.error(
            rule::L10,
            format!("{at}/reroute_target_commitment"),
            "reroute_target_commitment and reroute_target_batch_invariant_declared are both null or both set",
        );
    }
    if let Some(dec) = declared {
        if dec.as_bool() != Some(true) {
            r.error(
                rule::L10,
                format!("{at}/reroute_target_batch_invariant_declared"),
                "a reroute target must declare batch invariance",
            );
        }
        if class != Class::Coupled {
            r.error(
                rule::L10,
                format!("{at}/reroute_target_commitment"),
                format!("a {} endpoint is not rerouted", class.name()),
            );
        }
    }
}

/// L11: committed_at < measured_at ≤ effected_at, ts ≥ effected_at.
fn l11_times(v: Val, body: Val, r: &mut Report) {
    let at = |p: &str, x: Option<&str>, r: &mut Report| -> Option<i128> {
        let t = x.and_then(rfc3339_nanos);
        if t.is_none() {
            r.error(
                rule::L11,
                p,
                format!("{} is not a real UTC time", x.unwrap_or("")),
            );
        }
        t
    };
    let committed = at(
        "/signed_body/bound_ref/committed_at",
        body.get("bound_ref").and_then(|b| text(b, "committed_at")),
        r,
    );
    let measured = at("/signed_body/measured_at", text(body, "measured_at"), r);
    let effected = at(
        "/signed_body/effect/effected_at",
        body.get("effect").and_then(|e| text(e, "effected_at")),
        r,
    );
    if let (Some(c), Some(m)) = (committed, measured) {
        if c >= m {
            r.error(
                rule::L11,
                "/signed_body/measured_at",
                "the bound was not committed before the measurement",
            );
        }
    }
    if let (Some(m), Some(e)) = (measured, effected) {
        if e < m {
            r.error(
                rule::L11,
                "/signed_body/effect/effected_at",
                "effected_at is before measured_at",
            );
        }
    }
    if let (Some(e), Some(ts)) = (effected, int(v, "ts")) {
        if i128::from(ts) < e.div_euclid(1_000_000_000) {
            r.error(rule::L11, "/ts", "ts is before effected_at");
        }
    }
}
