//! A Treeship export bundle (`treeship bundle export`, `treeship-export/v1`):
//! `{version, bundle, artifacts, anchors?}`, the signed bundle envelope (a
//! `treeship/bundle/v1` statement listing each artifact's id, digest and
//! payload type) and every artifact's envelope.
//!
//! Checked as Treeship's import checks it (the version, and every envelope
//! signed by a trusted key) and more: the bundle's statement must list
//! exactly the envelopes the file carries, each with its own art id, digest
//! and payload type. The envelopes then stand among the inputs (`FILE/
//! artifacts/N`); a parent one names outside the bundle is said, not an
//! error, as in treeship-core. `anchors` (witness proofs, unsigned by the
//! bundle on purpose) are not checked.

use super::rule;
use crate::checked::Checked;
use crate::context::Context;
use crate::doc::{Doc, Val};
use crate::envelope::{Envelope, Ids};
use crate::facts::{BundleFacts, Entry, Facts};
use crate::report::Report;

/// The kind chit reports for an export bundle.
pub const KIND: &str = "treeship.export-bundle";
/// The format version Treeship writes and reads.
pub const VERSION: &str = "treeship-export/v1";
/// The bundle envelope's payload type, and its statement's type.
const BUNDLE_PAYLOAD: &str = "application/vnd.treeship.bundle.v1+json";
const BUNDLE_TYPE: &str = "treeship/bundle/v1";

/// Whether a document is an export bundle: a `version` naming Treeship's
/// export format, with a `bundle`.
pub fn looks_like_export_bundle(doc: &Doc) -> bool {
    let root = doc.root();
    root.get("bundle").is_some()
        && root
            .get("version")
            .and_then(|v| v.as_str())
            .is_some_and(|v| v.starts_with("treeship-export/"))
}

/// One envelope of the file, read and checked.
struct Member {
    ids: Option<(Ids, String)>,
    checked: Checked,
}

/// Checks an export bundle: its version, its bundle envelope and statement,
/// every artifact envelope, and the statement's list against them.
pub(crate) fn check(doc: &Doc, ctx: &Context) -> Checked {
    let root = doc.root();
    let mut r = Report::new(KIND);
    let version = root.get("version").and_then(|v| v.as_str());
    if version != Some(VERSION) {
        r.error(
            rule::EXPORT,
            "/version",
            format!(
                "export version {} is not one chit reads ({VERSION})",
                version.unwrap_or("missing")
            ),
        );
        return Checked::of(r);
    }
    let bundle = root.get("bundle").map(|b| member(b, ctx));
    let Some(bundle) = bundle.filter(|b| b.ids.is_some()) else {
        r.error(
            rule::EXPORT,
            "/bundle",
            "the export carries no readable bundle envelope",
        );
        return Checked::of(r);
    };
    for f in &bundle.checked.report.errors {
        r.error(f.rule, format!("/bundle{}", f.path), f.message.clone());
    }
    let listed = statement(root.get("bundle"), &bundle, ctx, &mut r);
    let Some(items) = root.get("artifacts").and_then(|a| a.as_array()) else {
        r.error(
            rule::EXPORT,
            "/artifacts",
            "the export needs an artifacts array",
        );
        return Checked::of(r);
    };
    let members: Vec<Member> = items.map(|v| member(v, ctx)).collect();
    let mut unchecked = Vec::new();
    for (i, m) in members.iter().enumerate() {
        for f in &m.checked.report.errors {
            r.error(
                f.rule,
                format!("/artifacts/{i}{}", f.path),
                f.message.clone(),
            );
        }
        if m.checked.report.unchecked && m.checked.report.errors.is_empty() {
            unchecked.push(i.to_string());
        }
    }
    if let Some(listed) = listed {
        lists_what_it_carries(&listed, &members, &mut r);
    }
    if !unchecked.is_empty() {
        r.unchecked = true;
        r.warning(
            rule::EXPORT,
            "/artifacts",
            format!(
                "signature and art id only for artifacts {}: payloads chit does not check",
                unchecked.join(", ")
            ),
        );
    }
    if root.get("anchors").is_some() {
        r.warning(
            rule::EXPORT,
            "/anchors",
            "the witness proofs (anchors) are not checked",
        );
    }
    let entries = members
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            let mut artifact = m.checked.artifact;
            if let Some(a) = artifact.as_mut() {
                a.alone = true;
            }
            Entry {
                at: format!("/artifacts/{i}"),
                status: m.checked.report.status(),
                facts: m.checked.facts,
                artifact,
            }
        })
        .collect();
    Checked {
        facts: Some(Facts::Bundle(Box::new(BundleFacts {
            entries,
            lineage: Default::default(),
        }))),
        ..Checked::of(r)
    }
}

fn member(v: Val, ctx: &Context) -> Member {
    let ids = Envelope::read_val(v, &mut Report::default()).map(|e| {
        let t = e.payload_type.clone();
        (e.ids(), t)
    });
    Member {
        ids,
        checked: super::statement::carried(v, ctx),
    }
}

/// The bundle's statement: its type and the artifacts it lists, `(id,
/// digest, payload type)`.
fn statement(
    v: Option<Val>,
    bundle: &Member,
    ctx: &Context,
    r: &mut Report,
) -> Option<Vec<(String, String, String)>> {
    let env = Envelope::read_val(v?, &mut Report::default())?;
    if env.payload_type != BUNDLE_PAYLOAD {
        r.error(
            rule::EXPORT,
            "/bundle/payloadType",
            format!(
                "the bundle envelope carries {}, not a bundle statement ({BUNDLE_PAYLOAD})",
                env.payload_type
            ),
        );
        return None;
    }
    if !bundle.checked.report.errors.is_empty() {
        return None;
    }
    let doc = match crate::json::parse(&env.payload, &ctx.limits) {
        Ok(d) => d,
        Err(e) => {
            r.error(
                rule::EXPORT,
                "/bundle/payload",
                format!("the bundle statement is not JSON: {e}"),
            );
            return None;
        }
    };
    let s = doc.root();
    if s.get("type").and_then(|t| t.as_str()) != Some(BUNDLE_TYPE) {
        r.error(
            rule::EXPORT,
            "/bundle/payload/type",
            format!("the bundle statement's type must be {BUNDLE_TYPE}"),
        );
    }
    let Some(items) = s.get("artifacts").and_then(|a| a.as_array()) else {
        r.error(
            rule::EXPORT,
            "/bundle/payload/artifacts",
            "the bundle statement lists no artifacts",
        );
        return None;
    };
    let mut out = Vec::new();
    for (i, a) in items.enumerate() {
        let text = |k: &str| a.get(k).and_then(|x| x.as_str()).map(str::to_owned);
        match (text("id"), text("digest"), text("type")) {
            (Some(id), Some(d), Some(t)) => out.push((id, d, t)),
            _ => r.error(
                rule::EXPORT,
                format!("/bundle/payload/artifacts/{i}"),
                "each artifact the bundle lists needs id, digest and type strings",
            ),
        }
    }
    Some(out)
}

/// The signed list and the envelopes carried are the same artifacts.
fn lists_what_it_carries(listed: &[(String, String, String)], members: &[Member], r: &mut Report) {
    let carried: Vec<(usize, &str, &str, &str)> = members
        .iter()
        .enumerate()
        .filter_map(|(i, m)| m.ids.as_ref().map(|(ids, t)| (i, ids, t)))
        .map(|(i, ids, t)| (i, ids.artifact_id.as_str(), ids.digest.as_str(), t.as_str()))
        .collect();
    for (id, digest, t) in listed {
        match carried.iter().find(|c| c.1 == id) {
            None => r.error(
                rule::EXPORT,
                "/artifacts",
                format!("the bundle lists {id}, but the export carries no envelope of it"),
            ),
            Some(c) if c.2 != digest || c.3 != t => r.error(
                rule::EXPORT,
                format!("/artifacts/{}", c.0),
                format!(
                    "the bundle lists {id} as {t} with digest {digest}, but its envelope is {} with digest {}",
                    c.3, c.2
                ),
            ),
            Some(_) => {}
        }
    }
    for c in &carried {
        if !listed.iter().any(|l| l.0 == c.1) {
            r.error(
                rule::EXPORT,
                format!("/artifacts/{}", c.0),
                format!(
                    "the export carries {}, which the signed bundle does not list",
                    c.1
                ),
            );
        }
    }
}
