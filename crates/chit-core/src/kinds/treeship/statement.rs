//! Verifying a signed receipt: a DSSE envelope carrying a Treeship receipt
//! statement, checked as an explicit sequence of named steps.
//!
//! 1. `envelope`: shape and base64 ([`Envelope::read`]);
//! 2. `signature`: every signature verifies under a trusted key;
//! 3. `art`: the envelope's art id is the one it was filed under, if any;
//! 4. `statement`: the decoded payload is a Treeship receipt statement;
//! 5. `trust`: trusted signers, allowed to sign the statement's kind, and at
//!    least `threshold` of them (distinct keys);
//! 6. the payload, under its kind's own schema and rules (paths under
//!    `/payload`); a kind chit does not know is a warning, never a pass.

use crate::checked::Checked;
use crate::context::Context;
use crate::envelope::{Envelope, Ids, TREESHIP_RECEIPT};
use crate::facts::Facts;
use crate::json;
use crate::kind::Kind;
use crate::report::Report;
use crate::time::is_rfc3339;

/// The statement type Treeship writes.
pub const STATEMENT_TYPE: &str = "treeship/receipt/v1";

/// Checks an envelope, step by step, under what the caller knows.
///
/// Returns what it found and how many distinct trusted keys, each allowed
/// the statement's kind, signed it (a lineage receipt's own signer among
/// them; `None` when the envelope could not be read);
/// [`crate::check::check_doc`] holds that against `--threshold`.
pub(crate) fn check(doc: &crate::Doc, ctx: &Context) -> (Checked, Option<usize>) {
    check_val(doc.root(), ctx)
}

/// An envelope carried inside another input (a package's sealed copy, an
/// export bundle's member): checked as a bare one, and held to the trust
/// file and threshold the same way (the input that carries it answers to
/// `--require-authorized` itself).
pub(crate) fn carried(v: crate::Val, ctx: &Context) -> Checked {
    let (checked, signers) = check_val(v, ctx);
    checked.held_to_signers(signers, ctx.trust.is_some(), ctx.threshold)
}

/// [`check`] of an envelope that is a value inside a document (a Treeship
/// store record's `envelope`).
pub(crate) fn check_val(v: crate::Val, ctx: &Context) -> (Checked, Option<usize>) {
    let mut report = Report::new(crate::kind::ENVELOPE);
    let Some(env) = Envelope::read_val(v, &mut report) else {
        return (Checked::of(report), None);
    };
    check_envelope(env, report, ctx)
}

/// Steps 2-6 on an envelope already read (from a document, a store record
/// or a `treeship receipt export`), with what step 1 found in `report`.
pub(crate) fn check_envelope(
    env: Envelope,
    mut report: Report,
    ctx: &Context,
) -> (Checked, Option<usize>) {
    // A session participant is signed over a text of its own, and named
    // by its envelope before the countersign; every other over DSSE's.
    let participant = env.payload_type == super::participant::PAYLOAD_TYPE;
    let (ids, signers) = if participant {
        let signers = super::participant::signers(&env, ctx, &mut report);
        (env.ids(), signers)
    } else {
        let pae = env.pae();
        let signers = signatures(&env, &pae, ctx, &mut report);
        (Ids::of_pae(&pae), signers)
    };
    art(&ids, ctx, &mut report);
    let statement = statement(&env, &signers, ctx, &mut report);
    let kind = statement
        .as_ref()
        .and_then(|s| statement_shape(s, &mut report));
    // Any payload type's statement, read for the parent it names (a
    // Treeship action's parentId) and a session record's claims.
    let statement_any = match &statement {
        Some(_) => None,
        None => json::parse(&env.payload, &ctx.limits).ok(),
    };
    asked_kind(kind.as_deref(), ctx, &mut report);
    let (signer, mut allowed) = trust(&signers, kind.as_deref(), ctx, &mut report);
    let mut facts = None;
    if let Some(statement) = &statement {
        let named = Named {
            signer,
            art_id: &ids.artifact_id,
        };
        if let Some(found) = payload(statement, kind.as_deref(), named, ctx, &mut report) {
            facts = found.facts;
            if let Some(own) = found.lineage_signer {
                if !allowed.contains(&own) {
                    allowed.push(own);
                }
            }
        }
    }
    let any = statement
        .as_ref()
        .or(statement_any.as_ref())
        .map(crate::Doc::root);
    let mut artifact = crate::facts::ArtifactFacts::of(&env, &ids, any);
    artifact.role = super::participant::role(&env, any, &signers, &mut report).map(Box::new);
    let artifact = Some(artifact);
    let checked = Checked {
        report,
        artifact_id: Some(ids.artifact_id),
        statement_kind: kind,
        facts,
        artifact,
    };
    (checked, Some(allowed.len()))
}

/// Step 2, `signature`: the distinct trusted keys that signed.
fn signatures(
    env: &Envelope,
    pae: &[u8],
    ctx: &Context,
    report: &mut Report,
) -> Vec<crate::keys::PublicKey> {
    let Some(trust) = ctx.trust else {
        report.error(
            crate::rule::TRUST,
            "",
            "no trusted keys, so no signature can be checked: name the keys you trust with --trust FILE \
             (a TOML file of [[key]] tables with name and public_key)",
        );
        return Vec::new();
    };
    env.signers(pae, trust.public_keys(), report)
        .into_iter()
        .copied()
        .collect()
}

/// Step 3, `art`: the envelope's art id is the one it was filed under.
fn art(ids: &Ids, ctx: &Context, report: &mut Report) {
    if let Some(want) = ctx.expected_art {
        if want != ids.artifact_id {
            report.error(
                crate::rule::ART,
                "",
                format!(
                    "filed as {want}, but the envelope's art id is {}",
                    ids.artifact_id
                ),
            );
        }
    }
}

/// Step 4, `statement`: the payload read as a Treeship receipt statement.
/// Another payload type is carried, signed, but unchecked.
fn statement<'e>(
    env: &'e Envelope,
    signers: &[crate::keys::PublicKey],
    ctx: &Context,
    report: &mut Report,
) -> Option<crate::Doc<'e>> {
    if super::command::is_command(&env.payload_type) {
        report.kind = super::command::KIND;
        super::command::check(&env.payload_type, &env.payload, ctx, report);
        return None;
    }
    if env.payload_type == super::action_v2::PAYLOAD_TYPE {
        report.kind = super::action_v2::KIND;
        super::action_v2::check(&env.payload, signers, ctx, report);
        return None;
    }
    if env.payload_type != TREESHIP_RECEIPT {
        report.unchecked = true;
        report.warning(
            crate::rule::STATEMENT,
            "/payloadType",
            format!(
                "payload type {} is not a Treeship receipt statement, so chit did not check its payload: \
                 signature and art id only",
                env.payload_type
            ),
        );
        return None;
    }
    match json::parse(&env.payload, &ctx.limits) {
        Ok(s) => Some(s),
        Err(e) => {
            report.error(
                crate::rule::STATEMENT,
                "/payload",
                format!("the payload is not JSON: {e}"),
            );
            None
        }
    }
}

/// Step 4, the kind `--kind` asked for.
fn asked_kind(kind: Option<&str>, ctx: &Context, report: &mut Report) {
    if let Some(want) = ctx.kind {
        if !kind.is_some_and(|k| want.is_named(k)) {
            let want = want.name();
            report.error(
                crate::rule::STATEMENT,
                "/kind",
                format!(
                    "the statement's kind is {}, but --kind asked for {want}",
                    kind.unwrap_or("missing")
                ),
            );
        }
    }
}

/// Step 5, `trust`: each signer allowed this kind. Always, whatever the
/// payload type: a key limited to some kinds may sign no payload that is
/// not a statement of one of them. Returns the first signer's name and the
/// keys allowed.
fn trust(
    signers: &[crate::keys::PublicKey],
    kind: Option<&str>,
    ctx: &Context,
    report: &mut Report,
) -> (Option<std::sync::Arc<str>>, Vec<crate::keys::PublicKey>) {
    let mut signer = None;
    let mut allowed = Vec::new();
    let Some(trust) = ctx.trust else {
        return (signer, allowed);
    };
    for key in signers {
        let entries = trust.entries_for(key);
        let name: std::sync::Arc<str> = entries.first().map_or("?".into(), |e| e.name.clone());
        signer.get_or_insert_with(|| name.clone());
        let ok = entries.iter().any(|e| match kind {
            Some(kind) => e.may_sign(kind),
            None => e.kinds.is_none(),
        });
        if ok {
            allowed.push(*key);
            continue;
        }
        report.error(
            crate::rule::TRUST,
            "",
            match kind {
                Some(kind) => format!(
                    "key {name} signed {} {kind}, which the trust file does not let it sign",
                    crate::report::a_or_an(kind)
                ),
                None => format!(
                    "key {name} may sign only the kinds the trust file lists, and this envelope carries no statement of a kind"
                ),
            },
        );
    }
    (signer, allowed)
}

/// What step 6 found in a statement's payload.
struct PayloadFound {
    /// What the checks across inputs need, when the statement names a kind
    /// chit knows.
    facts: Option<Facts>,
    /// A lineage receipt's own signer, which counts with the envelope's.
    lineage_signer: Option<crate::keys::PublicKey>,
}

/// Who signed and under which art id, for a payload's facts.
struct Named<'a> {
    signer: Option<std::sync::Arc<str>>,
    art_id: &'a str,
}

/// Step 6: the payload under its kind; a payload that declares a kind of
/// its own is checked under it, whatever the statement says. A kind chit
/// does not know is a warning, never a pass.
fn payload(
    statement: &crate::Doc,
    kind: Option<&str>,
    named_by: Named,
    ctx: &Context,
    report: &mut Report,
) -> Option<PayloadFound> {
    let root = statement.root();
    let kind = kind?;
    let Some(payload) = root.get("payload") else {
        report.unchecked = true;
        report.warning(
            crate::rule::STATEMENT,
            "/payload",
            "the statement carries no payload to check",
        );
        return None;
    };
    let named = Kind::from_name(kind);
    let declared = Kind::detect_val(payload);
    if let (None, Some(d)) = (named, declared) {
        report.error(
            crate::rule::STATEMENT,
            "/kind",
            format!(
                "the statement's kind {kind} is not the kind its payload declares ({})",
                d.name()
            ),
        );
    }
    let Some(k) = named.or(declared) else {
        report.unchecked = true;
        report.warning(
            crate::rule::KIND,
            "/payload",
            format!("payload of kind {kind} not checked: chit does not know this kind"),
        );
        return None;
    };
    report.kind = k.name();
    let (inner, own_signer) = k.check_in(payload, ctx);
    let lineage_signer = own_signer.filter(|_| named == Some(Kind::Lineage));
    let facts = named.and_then(|_| {
        Facts::of(
            k,
            payload,
            &inner,
            named_by.signer,
            Some(named_by.art_id.into()),
        )
    });
    report.absorb(inner, "/payload");
    if k == Kind::Recompute {
        r1_subject_is_the_packet(root, payload, report);
    }
    Some(PayloadFound {
        facts,
        lineage_signer,
    })
}

/// R1, in the envelope: a recompute result's `packet` is the art id its
/// statement names as subject.
fn r1_subject_is_the_packet(statement: crate::Val, payload: crate::Val, report: &mut Report) {
    let packet = payload.get("packet").and_then(|p| p.as_str());
    let subject = statement
        .get("subject")
        .and_then(|s| s.get("artifactId"))
        .and_then(|a| a.as_str());
    match (packet, subject) {
        (Some(p), Some(s)) if p != s => report.error(crate::kinds::recompute::rule::R1,
            "/payload/packet",
            format!("the result checks {p}, but its statement's subject is {s}"),
        ),
        (Some(_), None) => report.error(crate::kinds::recompute::rule::R1,
            "/subject",
            "a recompute result's statement names the packet receipt as subject.artifactId; this one names none",
        ),
        _ => {}
    }
}

/// Step 4: the statement's members. Returns its kind.
fn statement_shape(statement: &crate::Doc, report: &mut Report) -> Option<String> {
    let s = statement.root();
    if !s.is_object() {
        report.error(
            crate::rule::STATEMENT,
            "",
            "the statement is not a JSON object",
        );
        return None;
    }
    let text = |k: &str| s.get(k).and_then(|v| v.as_str());
    if text("type") != Some(STATEMENT_TYPE) {
        report.error(
            crate::rule::STATEMENT,
            "/type",
            format!("the statement type must be {STATEMENT_TYPE}"),
        );
    }
    match text("timestamp") {
        Some(t) if is_rfc3339(t) => {}
        _ => report.error(
            crate::rule::STATEMENT,
            "/timestamp",
            "the timestamp must be an RFC 3339 time",
        ),
    }
    if text("system").is_none() {
        report.error(
            crate::rule::STATEMENT,
            "/system",
            "the statement needs a system (a URI string)",
        );
    }
    if let Some(subject) = s.get("subject") {
        let ok = subject.is_object()
            && subject
                .members()
                .all(|(k, v)| matches!(k, "digest" | "uri" | "artifactId") && v.as_str().is_some());
        if !ok {
            report.error(
                crate::rule::STATEMENT,
                "/subject",
                "the subject holds only digest, uri and artifactId strings",
            );
        }
    }
    if let Some(p) = s.get("payload") {
        if !p.is_object() {
            report.error(
                crate::rule::STATEMENT,
                "/payload",
                "the payload must be a JSON object",
            );
        }
    }
    let kind = text("kind").map(str::to_owned);
    if kind.is_none() {
        report.error(
            crate::rule::STATEMENT,
            "/kind",
            "the statement needs a kind",
        );
    }
    kind
}

/// Why chit will not sign a payload.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    /// A statement's payload is a JSON object (exit 1).
    #[error("a payload must be a JSON object")]
    NotAnObject,
    /// As the kind named, the payload breaks these rules (exit 1).
    #[error("as a {kind} it breaks {}", .rules.join(", "))]
    Breaks {
        kind: &'static str,
        rules: Vec<&'static str>,
    },
    /// The subject is not an art id (exit 2).
    #[error("--subject {0} is not an art id (art_ and 32 lower-case hex digits)")]
    NotAnArtId(String),
    /// The payload declares a kind of its own, and the claim names another:
    /// `chit verify` would reject the statement (exit 2: the wrong --kind).
    #[error("the payload is a {declared}, but the statement would say {kind}, which chit verify rejects: sign it with --kind {declared}")]
    KindDiffers {
        kind: String,
        declared: &'static str,
    },
    /// A whole number RFC 8785 would write as another (exit 1): the
    /// statement is canonical JSON, whose numbers are doubles, so signing
    /// would change it.
    #[error("the number {literal} at {path} would be written as {written} in the statement's canonical JSON (RFC 8785 numbers are doubles), so signing would change the payload: write it as a string")]
    Inexact {
        path: String,
        literal: String,
        written: String,
    },
    /// The statement did not read back (exit 2).
    #[error("internal error: the statement does not read back: {0}")]
    Internal(String),
}

impl SignError {
    /// Whether the payload breaks a rule (exit 1) rather than the request
    /// being wrong (exit 2).
    pub fn is_invalid(&self) -> bool {
        matches!(
            self,
            SignError::NotAnObject | SignError::Breaks { .. } | SignError::Inexact { .. }
        )
    }
}

/// What a signed statement says besides its payload.
#[derive(Clone, Copy, Debug)]
pub struct Claim<'a> {
    /// The statement's kind (a payload of a kind chit knows must pass it).
    pub kind: &'a str,
    /// The system that made it (a URI).
    pub system: &'a str,
    /// The art id of the receipt it is about, if any.
    pub subject: Option<&'a str>,
    /// When it was made, in seconds since 1970 (UTC).
    pub at_unix_secs: u64,
}

/// Checks `payload` as the claim's kind (when chit knows the kind), then
/// signs a statement around it: chit signs nothing it would reject.
pub fn sign_checked(
    key: &crate::keys::SecretKey,
    claim: Claim,
    payload: crate::Val,
) -> Result<Envelope, SignError> {
    if !payload.is_object() {
        return Err(SignError::NotAnObject);
    }
    // A statement of a kind chit does not know, around a payload that
    // declares a kind it does, is rejected (step 6): sign it under its own.
    if let (None, Some(declared)) = (Kind::from_name(claim.kind), Kind::detect_val(payload)) {
        return Err(SignError::KindDiffers {
            kind: claim.kind.to_owned(),
            declared: declared.name(),
        });
    }
    if let Some(kind) = Kind::from_name(claim.kind) {
        let report = kind.check_val(payload);
        let mut rules: Vec<&'static str> = report.errors.iter().map(|f| f.rule).collect();
        rules.sort_unstable();
        rules.dedup();
        if !rules.is_empty() {
            return Err(SignError::Breaks {
                kind: kind.name(),
                rules,
            });
        }
    }
    if let Some((path, literal, written)) = inexact_in_canonical(payload) {
        return Err(SignError::Inexact {
            path,
            literal,
            written,
        });
    }
    sign(key, claim, payload.to_value())
}

/// The first whole number in `v` that RFC 8785 would write as another
/// (past 2^53, where doubles skip integers): its JSON Pointer, its literal
/// and what canonical JSON would write.
fn inexact_in_canonical(v: crate::Val) -> Option<(String, String, String)> {
    use crate::doc::{JsonType, Number};
    match v.json_type() {
        JsonType::Number => {
            let exact = match v.as_number()? {
                Number::PosInt(n) => (n as f64) as u64 == n && n != u64::MAX,
                Number::NegInt(n) => (n as f64) as i64 == n && n != i64::MIN,
                Number::Float(_) => true,
            };
            (!exact).then(|| {
                let written = crate::canon::to_vec(v, crate::canon::Profile::Jcs);
                (
                    String::new(),
                    v.number_text().unwrap_or_default().to_owned(),
                    String::from_utf8_lossy(&written).into_owned(),
                )
            })
        }
        JsonType::Array => v
            .items()
            .enumerate()
            .find_map(|(i, x)| inexact_in_canonical(x).map(|(p, l, w)| (format!("/{i}{p}"), l, w))),
        JsonType::Object => v.members().find_map(|(k, x)| {
            inexact_in_canonical(x)
                .map(|(p, l, w)| (format!("/{}{p}", crate::report::pointer_token(k)), l, w))
        }),
        _ => None,
    }
}

/// Signs a Treeship receipt statement around `payload`. The statement is
/// written as RFC 8785 canonical JSON: the same payload and claim always
/// give the same bytes, whatever their spelling.
pub fn sign(
    key: &crate::keys::SecretKey,
    claim: Claim,
    payload: serde_json::Value,
) -> Result<Envelope, SignError> {
    if let Some(s) = claim.subject {
        if !crate::envelope::is_art_id(s) {
            return Err(SignError::NotAnArtId(s.to_owned()));
        }
    }
    let mut st = serde_json::Map::new();
    st.insert("type".into(), STATEMENT_TYPE.into());
    st.insert(
        "timestamp".into(),
        crate::time::format_unix_utc(claim.at_unix_secs).into(),
    );
    st.insert("system".into(), claim.system.into());
    if let Some(s) = claim.subject {
        st.insert("subject".into(), serde_json::json!({ "artifactId": s }));
    }
    st.insert("kind".into(), claim.kind.into());
    st.insert("payload".into(), payload);
    let text = serde_json::to_vec(&serde_json::Value::Object(st))
        .map_err(|e| SignError::Internal(e.to_string()))?;
    // Read back under limits the payload has already met: the caller read
    // it under its own (--max-depth up to the ceiling), and the statement
    // adds one level and a few members around it. Default limits refused a
    // statement around a payload deeper than 127.
    let back = crate::Limits {
        max_depth: crate::Limits::DEPTH_CEILING + 1,
        max_size: text.len(),
        max_keys: usize::MAX,
        max_values: usize::MAX,
    };
    let doc = json::parse(&text, &back).map_err(|e| SignError::Internal(e.to_string()))?;
    Ok(Envelope::sign(
        TREESHIP_RECEIPT,
        crate::canon::to_vec(doc.root(), crate::canon::Profile::Jcs),
        key,
    ))
}

/// The document an input carries, read: the input itself, or a signed
/// statement's `payload` where the input is an envelope; given to `f`
/// (`None` where it cannot be read), for a front end that shows a
/// receipt's own fields beside its verdict.
pub fn with_document<R>(
    input: &[u8],
    limits: &crate::json::Limits,
    f: impl FnOnce(Option<crate::doc::Val>) -> R,
) -> R {
    let Ok(doc) = crate::json::parse(input, limits) else {
        return f(None);
    };
    if !crate::envelope::looks_like_envelope(&doc) {
        return f(Some(doc.root()));
    }
    let Some(env) = Envelope::read(&doc, &mut Report::new(crate::kind::ENVELOPE)) else {
        return f(None);
    };
    match crate::json::parse(&env.payload, limits) {
        Ok(st) => f(st.root().get("payload")),
        Err(_) => f(None),
    }
}
