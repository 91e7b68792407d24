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

use crate::envelope::{Envelope, Ids, TREESHIP_RECEIPT};
use crate::json::{self, Limits};
use crate::kinds::Kind;
use crate::report::Report;
use crate::streams::Facts;
use crate::time::is_rfc3339;
use crate::trust::Trust;

/// The statement type Treeship writes.
pub const STATEMENT_TYPE: &str = "treeship/receipt/v1";

/// What checking an envelope found: the report (its kind is the payload's
/// where chit knows it) and the envelope's ids where it could be read.
pub struct Checked {
    pub report: Report,
    pub ids: Option<Ids>,
    /// The statement's kind, as written.
    pub statement_kind: Option<String>,
    /// A packet's or recompute result's facts, for the checks across documents.
    pub facts: Option<Facts>,
}

/// The options of a check.
#[derive(Clone, Copy, Debug)]
pub struct Policy<'a> {
    pub trust: Option<&'a Trust>,
    /// Distinct trusted keys required (at least 1).
    pub threshold: usize,
    /// The art id the envelope was filed under (from its file name), if any.
    pub expected_art: Option<&'a str>,
    pub limits: &'a Limits,
    /// Where the envelope came from, for findings across documents.
    pub source: &'a crate::streams::Origin,
    /// The statement kind the caller expects (`--kind`), if any.
    pub expected_kind: Option<&'a str>,
}

pub fn check(doc: &crate::Doc, policy: &Policy) -> Checked {
    let mut report = Report::new("envelope");
    let Some(env) = Envelope::read(doc, &mut report) else {
        return Checked {
            report,
            ids: None,
            statement_kind: None,
            facts: None,
        };
    };
    let pae = env.pae();
    let ids = Ids::of_pae(&pae);

    // 2. Signatures: the distinct trusted keys that signed.
    let signers: Vec<crate::keys::PublicKey> = if let Some(trust) = policy.trust {
        env.signers(&pae, trust.public_keys(), &mut report)
            .into_iter()
            .copied()
            .collect()
    } else {
        report.error(
            "trust",
            "",
            "no trusted keys, so no signature can be checked: name the keys you trust with --trust FILE \
             (a TOML file of [[key]] tables with name and public_key)",
        );
        Vec::new()
    };

    // 3. Art id.
    if let Some(want) = policy.expected_art {
        if want != ids.artifact_id {
            report.error(
                "art",
                "",
                format!(
                    "filed as {want}, but the envelope's art id is {}",
                    ids.artifact_id
                ),
            );
        }
    }

    // 4. Statement. Another payload type is carried, signed, but unchecked.
    let statement = if env.payload_type == TREESHIP_RECEIPT {
        match json::parse(&env.payload, policy.limits) {
            Ok(s) => Some(s),
            Err(e) => {
                report.error(
                    "statement",
                    "/payload",
                    format!("the payload is not JSON: {e}"),
                );
                None
            }
        }
    } else {
        report.warning(
            "statement",
            "/payloadType",
            format!(
                "payload type {} is not a Treeship receipt; its payload is not checked",
                env.payload_type
            ),
        );
        None
    };
    let kind = statement
        .as_ref()
        .and_then(|s| statement_shape(s, &mut report));
    if let Some(want) = policy.expected_kind {
        if kind.as_deref() != Some(want) {
            report.error(
                "statement",
                "/kind",
                format!(
                    "the statement's kind is {}, but --kind asked for {want}",
                    kind.as_deref().unwrap_or("missing")
                ),
            );
        }
    }

    // 5. Trust: each signer allowed this kind, and enough of them. Always,
    // whatever the payload type: a key limited to some kinds may sign no
    // payload that is not a statement of one of them.
    let mut signer = None;
    if let Some(trust) = policy.trust {
        let mut allowed = 0;
        for key in &signers {
            let entries: Vec<&crate::trust::TrustedKey> =
                trust.keys.iter().filter(|e| e.key == *key).collect();
            let name: std::sync::Arc<str> = entries.first().map_or("?".into(), |e| e.name.clone());
            signer.get_or_insert_with(|| name.clone());
            let ok = entries.iter().any(|e| match &kind {
                Some(kind) => e.may_sign(kind),
                None => e.kinds.is_none(),
            });
            if ok {
                allowed += 1;
            } else {
                report.error(
                    "trust",
                    "",
                    match &kind {
                        Some(kind) => format!("key {name} signed a {kind}, which the trust file does not let it sign"),
                        None => format!(
                            "key {name} may sign only the kinds the trust file lists, and this envelope carries no statement of a kind"
                        ),
                    },
                );
            }
        }
        if allowed < policy.threshold {
            report.error(
                "threshold",
                "/signatures",
                format!(
                    "{allowed} distinct trusted key(s) signed; {} required",
                    policy.threshold
                ),
            );
        }
    }

    // 6. The payload under its kind; a payload that declares a kind of its
    // own is checked under it, whatever the statement says.
    let mut facts = None;
    if let Some(statement) = &statement {
        let root = statement.root();
        match (&kind, root.get("payload")) {
            (Some(kind), Some(payload)) => {
                let named = Kind::from_name(kind);
                let declared = Kind::detect_val(payload);
                if let (None, Some(d)) = (named, declared) {
                    report.error(
                        "statement",
                        "/kind",
                        format!(
                            "the statement's kind {kind} is not the kind its payload declares ({})",
                            d.name()
                        ),
                    );
                }
                match named.or(declared) {
                    Some(k) => {
                        report.kind = k.name();
                        let inner = k.check_val(payload);
                        if named.is_some() {
                            facts = Facts::of(
                                k,
                                payload,
                                &inner,
                                policy.source.clone(),
                                signer,
                                Some(ids.artifact_id.as_str().into()),
                            );
                        }
                        report.absorb(inner, "/payload");
                        if k == Kind::Recompute {
                            r1_subject_is_the_packet(root, payload, &mut report);
                        }
                    }
                    None => report.warning(
                        "kind",
                        "/payload",
                        format!("payload of kind {kind} not checked: chit does not know this kind"),
                    ),
                }
            }
            (Some(_), None) => report.warning(
                "statement",
                "/payload",
                "the statement carries no payload to check",
            ),
            _ => {}
        }
    }
    Checked {
        report,
        ids: Some(ids),
        statement_kind: kind,
        facts,
    }
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
        (Some(p), Some(s)) if p != s => report.error(
            "R1",
            "/payload/packet",
            format!("the result checks {p}, but its statement's subject is {s}"),
        ),
        (Some(_), None) => report.error(
            "R1",
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
        report.error("statement", "", "the statement is not a JSON object");
        return None;
    }
    let text = |k: &str| s.get(k).and_then(|v| v.as_str());
    if text("type") != Some(STATEMENT_TYPE) {
        report.error(
            "statement",
            "/type",
            format!("the statement type must be {STATEMENT_TYPE}"),
        );
    }
    match text("timestamp") {
        Some(t) if is_rfc3339(t) => {}
        _ => report.error(
            "statement",
            "/timestamp",
            "the timestamp must be an RFC 3339 time",
        ),
    }
    if text("system").is_none() {
        report.error(
            "statement",
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
                "statement",
                "/subject",
                "the subject holds only digest, uri and artifactId strings",
            );
        }
    }
    if let Some(p) = s.get("payload") {
        if !p.is_object() {
            report.error("statement", "/payload", "the payload must be a JSON object");
        }
    }
    let kind = text("kind").map(str::to_owned);
    if kind.is_none() {
        report.error("statement", "/kind", "the statement needs a kind");
    }
    kind
}
