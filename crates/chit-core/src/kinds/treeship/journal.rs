//! Treeship's Approval Use Journal (a `journal/` folder: `records/`,
//! `heads/current.json`), checked as treeship-core 0.32's
//! `verify_integrity` walks it: records in the order of the index their
//! file names carry (`<10-digit index>.<kind>.<digest>.json`), each
//! record's `record_digest` recomputed, each `previous_record_digest` the
//! one before it, and the head naming the last.
//!
//! A record's digest is the SHA-256 of its JSON as treeship-core writes the
//! record type (its members in their declared order, absent optional ones
//! left out, `record_digest` empty), so it is recomputed from that order,
//! not from the file's: members Treeship does not read are not covered,
//! and reordering the file's members changes nothing, as in Treeship.

use super::rule;
use crate::checked::Checked;
use crate::context::Context;
use crate::doc::Val;
use crate::report::Report;
use sha2::{Digest, Sha256};

/// The kind chit reports for a journal.
pub const KIND: &str = "treeship.journal";

/// A journal's files, read by the caller.
#[derive(Default)]
pub struct Journal<'a> {
    /// `heads/current.json` (`None`: absent).
    pub head: Option<Result<&'a [u8], String>>,
    /// `records/*.json`, each file's name and bytes (or why not).
    pub records: Vec<(String, Result<&'a [u8], String>)>,
}

/// What a member holds.
#[derive(Clone, Copy)]
enum Shape {
    Text,
    /// A `u64`; `Whole32` a `u32`.
    Whole,
    Whole32,
    Texts,
    CheckpointKind,
}

/// When a member is written: always (required), only when present and not
/// null (an `Option` skipped when `None`), always with its default when
/// absent (`#[serde(default)]`), or only when not empty.
#[derive(Clone, Copy, PartialEq)]
enum When {
    Required,
    Optional,
    /// An `Option` written as `null` when absent.
    Nullable,
    Default,
    NotEmpty,
}

type Member = (&'static str, Shape, When);

/// Each record type, its file name kind and its members in declared order.
const RECORDS: &[(&str, &str, &[Member])] = &[
    (
        "approval-use",
        "treeship/approval-use/v1",
        &[
            ("type", Shape::Text, When::Required),
            ("use_id", Shape::Text, When::Required),
            ("grant_id", Shape::Text, When::Required),
            ("grant_digest", Shape::Text, When::Required),
            ("nonce_digest", Shape::Text, When::Required),
            ("actor", Shape::Text, When::Required),
            ("action", Shape::Text, When::Required),
            ("subject", Shape::Text, When::Required),
            ("session_id", Shape::Text, When::Optional),
            ("action_artifact_id", Shape::Text, When::Optional),
            ("receipt_digest", Shape::Text, When::Optional),
            ("use_number", Shape::Whole32, When::Required),
            ("max_uses", Shape::Whole32, When::Optional),
            ("idempotency_key", Shape::Text, When::Optional),
            ("created_at", Shape::Text, When::Required),
            ("expires_at", Shape::Text, When::Optional),
            ("previous_record_digest", Shape::Text, When::Default),
            ("record_digest", Shape::Text, When::Default),
            ("signature", Shape::Text, When::Optional),
            ("signature_alg", Shape::Text, When::Optional),
            ("signing_key_id", Shape::Text, When::Optional),
        ],
    ),
    (
        "approval-revocation",
        "treeship/approval-revocation/v1",
        &[
            ("type", Shape::Text, When::Required),
            ("revocation_id", Shape::Text, When::Required),
            ("grant_id", Shape::Text, When::Required),
            ("grant_digest", Shape::Text, When::Required),
            ("revoker", Shape::Text, When::Required),
            ("reason", Shape::Text, When::Nullable),
            ("created_at", Shape::Text, When::Required),
            ("previous_record_digest", Shape::Text, When::Default),
            ("record_digest", Shape::Text, When::Default),
            ("signature", Shape::Text, When::Optional),
            ("signature_alg", Shape::Text, When::Optional),
            ("signing_key_id", Shape::Text, When::Optional),
        ],
    ),
    (
        "journal-checkpoint",
        "treeship/journal-checkpoint/v1",
        &[
            ("type", Shape::Text, When::Required),
            ("checkpoint_id", Shape::Text, When::Required),
            ("checkpoint_kind", Shape::CheckpointKind, When::Default),
            ("from_record_index", Shape::Whole, When::Required),
            ("to_record_index", Shape::Whole, When::Required),
            ("merkle_root", Shape::Text, When::Required),
            ("leaf_count", Shape::Whole, When::Required),
            ("journal_id", Shape::Text, When::Required),
            ("created_at", Shape::Text, When::Required),
            ("hub_id", Shape::Text, When::NotEmpty),
            ("hub_public_key", Shape::Text, When::NotEmpty),
            ("hub_signature", Shape::Text, When::NotEmpty),
            ("signed_at", Shape::Text, When::NotEmpty),
            ("covered_use_ids", Shape::Texts, When::NotEmpty),
            ("covered_grant_ids", Shape::Texts, When::NotEmpty),
            ("previous_record_digest", Shape::Text, When::Default),
            ("record_digest", Shape::Text, When::Default),
            ("signature", Shape::Text, When::Optional),
            ("signature_alg", Shape::Text, When::Optional),
            ("signing_key_id", Shape::Text, When::Optional),
        ],
    ),
];

/// What a hub signs of a hub-org checkpoint, as treeship-core writes it:
/// every member but `hub_signature`, `record_digest` and the record's own
/// signature, none left out.
const HUB_SIGNED: &[Member] = &[
    ("type", Shape::Text, When::Required),
    ("checkpoint_id", Shape::Text, When::Required),
    ("checkpoint_kind", Shape::CheckpointKind, When::Default),
    ("from_record_index", Shape::Whole, When::Required),
    ("to_record_index", Shape::Whole, When::Required),
    ("merkle_root", Shape::Text, When::Required),
    ("leaf_count", Shape::Whole, When::Required),
    ("journal_id", Shape::Text, When::Required),
    ("created_at", Shape::Text, When::Required),
    ("hub_id", Shape::Text, When::Default),
    ("hub_public_key", Shape::Text, When::Default),
    ("signed_at", Shape::Text, When::Default),
    ("covered_use_ids", Shape::Texts, When::Default),
    ("covered_grant_ids", Shape::Texts, When::Default),
    ("previous_record_digest", Shape::Text, When::Default),
];

/// A record's `record_digest` recomputed (`sha256:<hex>` of its JSON as
/// treeship-core writes its type), or why it does not read as `kind`
/// (`approval-use`, `approval-revocation`, `journal-checkpoint`).
pub(crate) fn record_digest(kind: &str, v: Val) -> Result<String, String> {
    let (_, _, members) = RECORDS
        .iter()
        .find(|(k, ..)| *k == kind)
        .ok_or_else(|| format!("{kind} is not a record kind Treeship writes"))?;
    let json = written(v, members)?;
    Ok(format!(
        "sha256:{}",
        crate::digest::hex(&Sha256::digest(&json))
    ))
}

/// Checks a journal as one input.
pub fn check_journal(j: &Journal, ctx: &Context) -> Checked {
    let mut r = Report::new(KIND);
    let mut records: Vec<(u64, &str, &str, &[u8])> = Vec::new();
    for (name, bytes) in &j.records {
        // As Treeship lists them: `<index>.<kind>.<…>.json`, others passed over.
        let mut parts = name.splitn(3, '.');
        let (Some(index), Some(kind)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Ok(index) = index.parse::<u64>() else {
            continue;
        };
        match bytes {
            Ok(b) => records.push((index, kind, name, b)),
            Err(why) => r.error(
                rule::JOURNAL,
                "",
                format!("records/{name} could not be read: {why}"),
            ),
        }
    }
    records.sort_by_key(|(i, ..)| *i);
    let mut prior = String::new();
    let mut count = 0usize;
    for (index, kind, name, bytes) in records {
        let Some((_, ty, members)) = RECORDS.iter().find(|(k, ..)| *k == kind) else {
            // A record kind Treeship does not know: it walks past it.
            continue;
        };
        let at = format!("records/{name}");
        let doc = match crate::json::parse(bytes, &ctx.limits) {
            Ok(d) => d,
            Err(e) => {
                r.error(rule::JOURNAL, "", format!("{at} is not JSON: {e}"));
                return Checked::of(r);
            }
        };
        let root = doc.root();
        let json = match written(root, members) {
            Ok(j) => j,
            Err(why) => {
                r.error(
                    rule::JOURNAL,
                    "",
                    format!(
                        "{at} is not {} {kind} record: {why}",
                        crate::report::a_or_an(kind)
                    ),
                );
                return Checked::of(r);
            }
        };
        if root.get("type").and_then(|t| t.as_str()) != Some(ty) {
            r.warning(
                rule::JOURNAL,
                "",
                format!("{at} is filed as {kind}, but its type is not {ty}"),
            );
        }
        let text = |k: &str| root.get(k).and_then(|v| v.as_str()).unwrap_or("");
        let previous = text("previous_record_digest");
        if previous != prior {
            r.error(
                rule::JOURNAL,
                "",
                format!(
                    "the chain is broken at record {index} ({at}): it follows {}, but the record before it is {}",
                    if previous.is_empty() { "nothing" } else { previous },
                    if prior.is_empty() { "none" } else { &prior }
                ),
            );
            return Checked::of(r);
        }
        let recomputed = format!("sha256:{}", crate::digest::hex(&Sha256::digest(&json)));
        let stored = text("record_digest");
        if recomputed != stored {
            r.error(
                rule::JOURNAL,
                "",
                format!(
                    "record {index} ({at}) was changed after it was written: its record_digest is {stored}, \
                     but it digests to {recomputed}"
                ),
            );
            return Checked::of(r);
        }
        if kind == "journal-checkpoint"
            && root.get("checkpoint_kind").and_then(|k| k.as_str()) == Some("hub-org")
        {
            hub_signed(root, &at, rule::JOURNAL, ctx, &mut r);
        }
        prior = stored.to_owned();
        count += 1;
    }
    head_is_the_last(j, &prior, ctx, &mut r);
    r.warning(
        rule::JOURNAL,
        "",
        "a journal is signed by no one: its chain shows no record was changed alone, not who wrote it \
         (under --trust it passes only with --accept-unsigned)",
    );
    if count == 0 {
        r.warning(rule::JOURNAL, "", "the journal holds no records");
    }
    Checked::of(r)
}

/// A hub-org checkpoint vouches for single use only under a signature by
/// a hub the trust file lists, over its members as treeship-core signs
/// them (every member but `hub_signature` and `record_digest`, none
/// skipped); as in Treeship, a missing member, an untrusted hub key or a
/// signature that does not verify fails it.
pub(crate) fn hub_signed(
    cp: Val,
    at: &str,
    rule: &'static str,
    ctx: &Context,
    r: &mut Report,
) -> bool {
    let mut fail = |why: String| {
        r.error(rule, "", format!("{at}: {why}"));
        false
    };
    let text = |k: &str| cp.get(k).and_then(|v| v.as_str()).unwrap_or("");
    for field in ["hub_id", "hub_public_key", "hub_signature", "signed_at"] {
        if text(field).is_empty() {
            return fail(format!("a hub-org checkpoint needs {field}"));
        }
    }
    let key = crate::keys::PublicKey::from_base64url(text("hub_public_key"));
    let sig = Some(text("hub_signature"))
        .filter(|s| crate::keys::is_base64url_unpadded(s))
        .and_then(crate::keys::decode_base64);
    let (Some(key), Some(sig)) = (key, sig) else {
        return fail("its hub key or signature is not base64url Ed25519".to_owned());
    };
    let Some(trust) = ctx.trust else {
        return fail(
            "a hub-org checkpoint is taken only from a hub the trust file lists: give --trust"
                .to_owned(),
        );
    };
    if trust.entries_for(&key).is_empty() {
        return fail(format!(
            "its hub key {} is not in the trust file",
            key.treeship()
        ));
    }
    let signed = match written(cp, HUB_SIGNED) {
        Ok(b) => b,
        Err(why) => return fail(why),
    };
    if !key.verify_strict(&signed, &sig) {
        return fail("its hub signature does not verify under the hub key it names".to_owned());
    }
    true
}

/// The head names the last record: records deleted off the end leave it
/// stale.
fn head_is_the_last(j: &Journal, last: &str, ctx: &Context, r: &mut Report) {
    let Some(head) = &j.head else {
        // Treeship checks nothing here either; said, since a verdict
        // without it cannot tell a journal cut short.
        r.warning(
            rule::JOURNAL,
            "",
            "the journal has no heads/current.json: records deleted off its end would not be noticed",
        );
        return;
    };
    let head = match head {
        Ok(b) => crate::json::parse(b, &ctx.limits),
        Err(why) => {
            r.error(
                rule::JOURNAL,
                "",
                format!("heads/current.json could not be read: {why}"),
            );
            return;
        }
    };
    let Ok(head) = head else {
        r.error(rule::JOURNAL, "", "heads/current.json is not JSON");
        return;
    };
    let index = head.root().get("index").and_then(|i| i.as_i64());
    let digest = head.root().get("digest").and_then(|d| d.as_str());
    if index != Some(0) && digest != Some(last) {
        r.error(
            rule::JOURNAL,
            "",
            format!(
                "the head names record {} ({}), but the last record is {}: records are missing off the end",
                index.map_or("?".to_owned(), |i| i.to_string()),
                digest.unwrap_or("no digest"),
                if last.is_empty() { "none" } else { last }
            ),
        );
    }
}

/// A record's JSON as treeship-core writes it (`members` in their order),
/// `record_digest` empty.
fn written(v: Val, members: &[Member]) -> Result<Vec<u8>, String> {
    if !v.is_object() {
        return Err("not a JSON object".to_owned());
    }
    let mut out = b"{".to_vec();
    let mut first = true;
    for &(name, shape, when) in members {
        let value = v
            .get(name)
            .filter(|x| !(x.is_null() && when != When::Required));
        let mut key = |out: &mut Vec<u8>| {
            if !first {
                out.push(b',');
            }
            first = false;
            crate::canon::write_string(name, out);
            out.push(b':');
        };
        if name == "record_digest" {
            if value.is_some_and(|x| x.as_str().is_none()) {
                return Err(format!("{name} is not a string"));
            }
            key(&mut out);
            out.extend_from_slice(b"\"\"");
            continue;
        }
        let Some(value) = value else {
            match when {
                When::Required => return Err(format!("it has no {name}")),
                When::Nullable => {
                    key(&mut out);
                    out.extend_from_slice(b"null");
                }
                When::Default => {
                    key(&mut out);
                    out.extend_from_slice(match shape {
                        Shape::Text => b"\"\"",
                        Shape::CheckpointKind => b"\"local-journal\"",
                        Shape::Texts => b"[]",
                        Shape::Whole | Shape::Whole32 => b"0",
                    });
                }
                When::Optional | When::NotEmpty => {}
            }
            continue;
        };
        let mut body = Vec::new();
        let empty = match shape {
            Shape::Text => {
                let s = value.as_str().ok_or(format!("{name} is not a string"))?;
                crate::canon::write_string(s, &mut body);
                s.is_empty()
            }
            Shape::CheckpointKind => match value.as_str() {
                Some(s @ ("local-journal" | "hub-org")) => {
                    crate::canon::write_string(s, &mut body);
                    false
                }
                _ => return Err(format!("{name} is not local-journal or hub-org")),
            },
            Shape::Whole | Shape::Whole32 => {
                let n = value
                    .number_text()
                    .and_then(|t| t.parse::<u64>().ok())
                    .filter(|&n| !matches!(shape, Shape::Whole32) || n <= u64::from(u32::MAX))
                    .ok_or(format!("{name} is not a whole number in range"))?;
                body.extend_from_slice(n.to_string().as_bytes());
                false
            }
            Shape::Texts => {
                let items = value.as_array().ok_or(format!("{name} is not an array"))?;
                body.push(b'[');
                let mut n = 0;
                for item in items {
                    if n > 0 {
                        body.push(b',');
                    }
                    let s = item.as_str().ok_or(format!("{name} holds a non-string"))?;
                    crate::canon::write_string(s, &mut body);
                    n += 1;
                }
                body.push(b']');
                n == 0
            }
        };
        if when == When::NotEmpty && empty {
            continue;
        }
        key(&mut out);
        out.extend_from_slice(&body);
    }
    out.push(b'}');
    Ok(out)
}
