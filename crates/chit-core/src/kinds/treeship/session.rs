//! Treeship session packages (`.treeship/sessions/<id>.treeship/`):
//! `receipt.json` (a `treeship/session-receipt/v1`), `merkle.json`,
//! `render.json` and `proofs/<art id>.proof.json`, checked as `treeship
//! verify PKG` checks them, and more:
//!
//! - `merkle_root`: the Merkle root over the listed artifacts' ids,
//!   recomputed under the receipt's `merkle_version` (1: `sha256(id)` and
//!   `sha256(L || R)`; 2, RFC 9162's domain separation: `sha256(0x00 ||
//!   id)` and `sha256(0x01 || L || R)`; an unpaired node is promoted);
//! - `leaf_count`: the count the Merkle section gives is the artifacts';
//! - `inclusion`: every inclusion proof verifies against the root, under the
//!   receipt's version, for the artifact at its leaf index;
//! - `timeline_order`: the timeline is ordered by (timestamp, sequence_no,
//!   event_id);
//! - `package`: `merkle.json`, `render.json` and each proof file are the
//!   receipt's own sections, and every inclusion proof has its file;
//! - across inputs (`session`): the package's `receipt.json` is the one its
//!   signed `session.v1` record binds (`receipt_digest`, the SHA-256 of its
//!   bytes, and `receipt_merkle_root`), and each artifact it lists agrees
//!   with its record among the inputs. The package itself carries no
//!   signature: under `--trust` the record and every listed artifact must
//!   be among the inputs and verified.

use super::rule;
use crate::checked::{Checked, Unreadable};
use crate::context::Context;
use crate::doc::{Doc, Val};
use crate::facts::ArtifactFacts;
use crate::facts::Origin;
pub use crate::facts::{Listed, SessionFacts};
use crate::report::Report;
use sha2::{Digest, Sha256};

/// The kind chit reports for a session receipt or package.
pub const KIND: &str = "treeship/session-receipt/v1";

/// The files of a package, read by the caller.
#[derive(Default)]
pub struct Package<'a> {
    pub receipt: &'a [u8],
    /// `merkle.json` and `render.json`: their bytes, or why they could not
    /// be read (`None`: absent).
    pub merkle: Option<Result<&'a [u8], String>>,
    pub render: Option<Result<&'a [u8], String>>,
    /// `proofs/*.json`: each file's name and bytes (or why not).
    pub proofs: Vec<(String, Result<&'a [u8], String>)>,
    /// `record.json`, `keys.json` and `artifacts/*.json` (Treeship 0.32).
    pub sealed: super::sealed::Sealed<'a>,
    /// The approval evidence under `approvals/`.
    pub approvals: super::approvals::Approvals<'a>,
    /// Files chit does not check (`approvals/index.json`, anything else
    /// there, and anything under `artifacts/` that is not an envelope's
    /// `.json`): Treeship binds none of them.
    pub unchecked: Vec<String>,
}

/// Whether a document is a session receipt.
pub fn looks_like_session_receipt(doc: &Doc) -> bool {
    doc.root().get("type").and_then(|t| t.as_str()) == Some(KIND)
}

/// Checks a whole package: its receipt, then its other files against it.
pub fn check_package(p: &Package, ctx: &Context) -> Result<Checked, Unreadable> {
    let doc = crate::json::parse(p.receipt, &ctx.limits).map_err(Unreadable::Json)?;
    let mut checked = check_receipt(&doc, Some(p.receipt), ctx);
    let r = &mut checked.report;
    let same = |file: &str,
                bytes: &Option<Result<&[u8], String>>,
                section: Option<Val>,
                r: &mut Report| {
        match bytes {
            None => r.error(
                rule::PACKAGE,
                "",
                format!("the package has no {file}, which Treeship writes in every package"),
            ),
            Some(Err(why)) => r.error(
                rule::PACKAGE,
                "",
                format!("{file} could not be read: {why}"),
            ),
            Some(Ok(b)) => {
                match crate::json::parse(b, &ctx.limits) {
                    Err(e) => r.error(rule::PACKAGE, "", format!("{file} is not JSON: {e}")),
                    Ok(d) => {
                        if section.map(|s| canon(s)) != Some(canon(d.root())) {
                            r.error(
                            rule::PACKAGE,
                            "",
                            format!("{file} is not the receipt's own section: one of them was changed"),
                        );
                        }
                    }
                }
            }
        }
    };
    let root = doc.root();
    same("merkle.json", &p.merkle, root.get("merkle"), r);
    same("render.json", &p.render, root.get("render"), r);
    // Each inclusion proof in the receipt has its file, equal to it.
    let mut by_art: std::collections::BTreeMap<String, Val> = std::collections::BTreeMap::new();
    for e in root
        .get("merkle")
        .and_then(|m| m.get("inclusion_proofs"))
        .and_then(|l| l.as_array())
        .into_iter()
        .flatten()
    {
        if let Some(a) = e.get("artifact_id").and_then(|a| a.as_str()) {
            by_art.insert(a.to_owned(), e);
        }
    }
    let mut filed = std::collections::HashSet::new();
    for (name, bytes) in &p.proofs {
        let file = format!("proofs/{name}");
        let Some(art) = name.strip_suffix(".proof.json") else {
            r.error(
                rule::PACKAGE,
                "",
                format!("{file} is not named <art id>.proof.json"),
            );
            continue;
        };
        let Some(bytes) = super::sealed::readable(&file, bytes, r) else {
            continue;
        };
        match (by_art.get(art), crate::json::parse(bytes, &ctx.limits)) {
            (_, Err(e)) => r.error(rule::PACKAGE, "", format!("{file} is not JSON: {e}")),
            (None, Ok(_)) => r.error(
                rule::PACKAGE,
                "",
                format!("{file} proves {art}, which the receipt has no inclusion proof for (an added artifact?)"),
            ),
            (Some(e), Ok(d)) => {
                filed.insert(art.to_owned());
                if canon(*e) != canon(d.root()) {
                    r.error(
                        rule::PACKAGE,
                        "",
                        format!("{file} is not the receipt's inclusion proof for {art}: one of them was changed"),
                    );
                }
            }
        }
    }
    for art in by_art.keys() {
        if !filed.contains(art) {
            r.error(
                rule::PACKAGE,
                "",
                format!("the receipt's inclusion proof for {art} has no file proofs/{art}.proof.json (a dropped artifact?)"),
            );
        }
    }
    if !p.unchecked.is_empty() {
        r.warning(
            rule::PACKAGE,
            "",
            format!("not checked by chit: {}", p.unchecked.join(", ")),
        );
    }
    let Checked { facts, report, .. } = &mut checked;
    let session = match facts {
        Some(crate::facts::Facts::Session(f)) => Some(&mut **f),
        _ => None,
    };
    let (carried, redaction) = super::sealed::check(&p.sealed, session.as_deref(), ctx, report);
    let listed: Vec<&str> = session
        .as_deref()
        .map(|f| f.artifacts.iter().map(|l| l.artifact_id.as_str()).collect())
        .unwrap_or_default();
    super::sealed::approvals(p, &carried, &listed, ctx, report);
    if let Some(f) = session {
        f.carried = carried;
        if let Some(red) = redaction {
            f.withheld = red.withheld.into_iter().map(|(id, _)| id).collect();
            f.redacted_from = red.source_receipt_digest;
        }
    }
    Ok(checked)
}

fn canon(v: Val) -> Vec<u8> {
    crate::canon::to_vec(v, crate::canon::Profile::Jcs)
}

/// Checks a session receipt alone (`raw`: its bytes, for the digest its
/// signed record binds): its artifacts, its Merkle root, leaf count and
/// inclusion proofs, its timeline's order and what it says it left out.
pub(crate) fn check_receipt(doc: &Doc, raw: Option<&[u8]>, _ctx: &Context) -> Checked {
    let root = doc.root();
    let mut r = Report::new(KIND);
    let session_id = root.get("session").and_then(|s| text(s, "id"));
    if session_id.is_none() {
        r.error(
            crate::rule::SCHEMA,
            "/session/id",
            "the receipt needs session.id, a string",
        );
    }
    let listed = listed_artifacts(root, &mut r);
    let merkle = root.get("merkle");
    let root_claim = merkle.and_then(|m| text(m, "root"));
    if let Some(m) = merkle {
        if let Some(version) = merkle_version(m, &mut r) {
            let computed = merkle_root_matches(version, &listed, root_claim.as_deref(), &mut r);
            leaf_count(m, &listed, &mut r);
            let root_hex = computed.map(|h| crate::digest::hex(&h)).unwrap_or_default();
            inclusion_proofs(m, version, &root_hex, &listed, &mut r);
        }
    } else {
        r.error(
            crate::rule::SCHEMA,
            "/merkle",
            "the receipt needs a merkle section",
        );
    }
    timeline_order(root, &mut r);
    left_out(root, &mut r);
    let facts = session_id.map(|session_id| SessionFacts {
        session_id,
        receipt_digest: raw.map(crate::digest::sha256_tagged),
        merkle_root: root_claim,
        artifacts: listed,
        carried: Vec::new(),
        withheld: Vec::new(),
        redacted_from: None,
        source: Origin::unknown(),
    });
    Checked {
        // Even for a package that fails on its own: what its signed record
        // binds is still worth saying.
        facts: facts.map(|f| crate::facts::Facts::Session(Box::new(f))),
        ..Checked::of(r)
    }
}

/// A string member of an object.
fn text(v: Val, k: &str) -> Option<String> {
    v.get(k).and_then(|x| x.as_str()).map(str::to_owned)
}

/// The artifacts the receipt lists, each with an id and a payload type.
fn listed_artifacts(root: Val, r: &mut Report) -> Vec<Listed> {
    let Some(items) = root.get("artifacts").and_then(|a| a.as_array()) else {
        r.error(
            crate::rule::SCHEMA,
            "/artifacts",
            "the receipt needs an artifacts array",
        );
        return Vec::new();
    };
    let mut listed = Vec::new();
    for (i, a) in items.enumerate() {
        let (Some(artifact_id), Some(payload_type)) =
            (text(a, "artifact_id"), text(a, "payload_type"))
        else {
            r.error(
                crate::rule::SCHEMA,
                format!("/artifacts/{i}"),
                format!("artifact {i} needs artifact_id and payload_type strings"),
            );
            continue;
        };
        listed.push(Listed {
            artifact_id,
            payload_type,
            digest: text(a, "digest"),
            signed_at: text(a, "signed_at"),
            unchained: a.get("unchained").and_then(|u| u.as_bool()) == Some(true),
        });
    }
    listed
}

/// The tree's version: Treeship reads a missing one as 1.
fn merkle_version(merkle: Val, r: &mut Report) -> Option<u8> {
    let Some(v) = merkle.get("merkle_version") else {
        return Some(1);
    };
    match v.as_i64() {
        Some(1) => Some(1),
        Some(2) => Some(2),
        _ => {
            r.error(
                rule::MERKLE_ROOT,
                "/merkle/merkle_version",
                "merkle_version must be 1 or 2, the versions Treeship knows",
            );
            None
        }
    }
}

/// The root the listed artifacts give is the one claimed; returns it.
fn merkle_root_matches(
    version: u8,
    listed: &[Listed],
    claim: Option<&str>,
    r: &mut Report,
) -> Option<[u8; 32]> {
    let ids: Vec<&str> = listed.iter().map(|a| a.artifact_id.as_str()).collect();
    let computed = merkle_root(version, &ids);
    let want = computed.map(|h| format!("mroot_{}", crate::digest::hex(&h)));
    if want.as_deref() != claim {
        r.error(
            rule::MERKLE_ROOT,
            "/merkle/root",
            format!(
                "the Merkle root is {}, but the listed artifacts give {}: an artifact was changed, dropped \
                 or added",
                claim.unwrap_or("null"),
                want.as_deref().unwrap_or("null (no artifacts)")
            ),
        );
    }
    computed
}

/// `leaf_count` is the number of artifacts listed.
fn leaf_count(merkle: Val, listed: &[Listed], r: &mut Report) {
    match merkle.get("leaf_count").and_then(|n| n.as_i64()) {
        Some(n) if n == listed.len() as i64 => {}
        n => r.error(
            rule::LEAF_COUNT,
            "/merkle/leaf_count",
            format!(
                "leaf_count is {}, but the receipt lists {} artifacts",
                n.map_or("missing".to_owned(), |n| n.to_string()),
                listed.len()
            ),
        ),
    }
}

/// Each inclusion proof is of the artifact at its leaf index, and verifies
/// to the root.
fn inclusion_proofs(merkle: Val, version: u8, root_hex: &str, listed: &[Listed], r: &mut Report) {
    let proofs = merkle
        .get("inclusion_proofs")
        .and_then(|l| l.as_array())
        .into_iter()
        .flatten();
    for (i, e) in proofs.enumerate() {
        let art = text(e, "artifact_id").unwrap_or_default();
        let index = e.get("leaf_index").and_then(|n| n.as_i64());
        let proof = e.get("proof");
        let at_index = index
            .and_then(|n| usize::try_from(n).ok())
            .and_then(|n| listed.get(n))
            .map(|a| a.artifact_id.as_str());
        let why = if at_index != Some(art.as_str()) {
            Some("it is not the artifact at its leaf index".to_owned())
        } else if proof
            .and_then(|p| p.get("leaf_index"))
            .and_then(|n| n.as_i64())
            != index
        {
            Some("its proof's leaf_index is not its own".to_owned())
        } else {
            proof.and_then(|p| verify_proof(version, root_hex, &art, p).err())
        };
        if let Some(why) = why {
            r.error(
                rule::INCLUSION,
                format!("/merkle/inclusion_proofs/{i}"),
                format!(
                    "the inclusion proof for {} does not verify: {why}",
                    if art.is_empty() { "?" } else { &art }
                ),
            );
        }
    }
}

/// The timeline is in Treeship's order: (timestamp, sequence_no,
/// event_id).
fn timeline_order(root: Val, r: &mut Report) {
    let key = |e: Val| {
        (
            text(e, "timestamp").unwrap_or_default(),
            e.get("sequence_no").and_then(|n| n.as_i64()).unwrap_or(-1),
            text(e, "event_id").unwrap_or_default(),
        )
    };
    let timeline: Vec<_> = root
        .get("timeline")
        .and_then(|t| t.as_array())
        .into_iter()
        .flatten()
        .map(key)
        .collect();
    if let Some(i) = timeline.windows(2).position(|w| w[0] > w[1]) {
        r.error(
            rule::TIMELINE,
            format!("/timeline/{}", i + 1),
            format!(
                "timeline entry {} comes before entry {} in (timestamp, sequence_no, event_id)",
                i + 1,
                i
            ),
        );
    }
}

/// What the receipt says it left out when the session closed.
fn left_out(root: Val, r: &mut Report) {
    let Some(p) = root.get("proofs") else {
        return;
    };
    let skipped = p
        .get("event_log_skipped")
        .and_then(|v| v.as_i64())
        .unwrap_or(0);
    if skipped > 0 {
        r.warning(
            rule::TIMELINE,
            "/proofs/event_log_skipped",
            format!("{skipped} event(s) were skipped when the session closed: the receipt is not the whole event log"),
        );
    }
    if p.get("reconcile_degraded").and_then(|b| b.as_bool()) == Some(true) {
        r.warning(
            rule::TIMELINE,
            "/proofs/reconcile_degraded",
            "git reconcile was unavailable when the session closed: its list of changed files may be incomplete",
        );
    }
}

fn leaf(version: u8, id: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    if version == 2 {
        h.update([0u8]);
    }
    h.update(id.as_bytes());
    h.finalize().into()
}

fn node(version: u8, l: &[u8; 32], r: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    if version == 2 {
        h.update([1u8]);
    }
    h.update(l);
    h.update(r);
    h.finalize().into()
}

/// Treeship's Merkle root over `ids` (none for no ids): leaves paired left
/// to right, an unpaired last node promoted unhashed.
pub fn merkle_root(version: u8, ids: &[&str]) -> Option<[u8; 32]> {
    let mut level: Vec<[u8; 32]> = ids.iter().map(|id| leaf(version, id)).collect();
    if level.is_empty() {
        return None;
    }
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|c| {
                if c.len() == 2 {
                    node(version, &c[0], &c[1])
                } else {
                    c[0]
                }
            })
            .collect();
    }
    Some(level[0])
}

/// An inclusion proof, as Treeship's `MerkleTree::verify_proof` checks it
/// under the receipt's version.
fn verify_proof(version: u8, root_hex: &str, art: &str, proof: Val) -> Result<(), String> {
    let pv = proof.get("merkle_version").map_or(Some(1), |v| v.as_i64());
    if pv != Some(i64::from(version)) {
        return Err(format!(
            "its merkle_version is not the receipt's ({version})"
        ));
    }
    if let Some(a) = proof.get("algorithm") {
        if !matches!(a.as_str(), Some("sha256-duplicate-last" | "sha256-rfc9162")) {
            return Err("its algorithm is unknown".into());
        }
    }
    let path: Vec<Val> = proof
        .get("path")
        .and_then(|p| p.as_array())
        .ok_or("it has no path")?
        .collect();
    if version == 2
        && path.is_empty()
        && proof.get("leaf_index").and_then(|n| n.as_i64()) != Some(0)
    {
        return Err("an empty path proves only leaf 0".into());
    }
    let mut cur = leaf(version, art);
    if proof.get("leaf_hash").and_then(|h| h.as_str()) != Some(crate::digest::hex(&cur).as_str()) {
        return Err("its leaf_hash is not the artifact's".into());
    }
    for step in path {
        let sib = step
            .get("hash")
            .and_then(|h| h.as_str())
            .and_then(crate::kinds::treeship::records::unhex32)
            .ok_or("a step's hash is not 32 bytes of hex")?;
        cur = match step.get("direction").and_then(|d| d.as_str()) {
            Some("Right") => node(version, &cur, &sib),
            Some("Left") => node(version, &sib, &cur),
            _ => return Err("a step's direction is neither Left nor Right".into()),
        };
    }
    if crate::digest::hex(&cur) == root_hex {
        Ok(())
    } else {
        Err("its path does not lead to the root".into())
    }
}

/// A package against the signed artifacts among the inputs: its signed
/// `session.v1` record binds its `receipt.json` and root, and each artifact
/// it lists agrees with its record. Under `--trust` (`trusted`) the record
/// and every listed artifact must be there, verified.
pub fn package_against_inputs(
    pkg: &SessionFacts,
    artifacts: &[ArtifactFacts],
    seen: &std::collections::HashSet<u128>,
    trusted: bool,
) -> Report {
    let mut r = Report::new(KIND);
    let records: Vec<&ArtifactFacts> = artifacts
        .iter()
        .filter(|a| {
            a.session
                .as_ref()
                .is_some_and(|s| s.session_id == pkg.session_id)
        })
        .collect();
    if records.is_empty() {
        let msg = format!(
            "no signed session.v1 record of {} is among the inputs, so nothing binds this receipt to a \
             signature: give the store's records (.treeship/artifacts) with the package",
            pkg.session_id
        );
        if trusted {
            r.error(rule::SESSION, "", msg);
        } else {
            r.warning(rule::SESSION, "", msg);
        }
    }
    for rec in &records {
        let s = rec.session.as_ref().expect("filtered");
        if let (Some(bound), Some(have)) = (&s.receipt_digest, &pkg.receipt_digest) {
            if pkg.redacted_from.as_ref() == Some(bound) {
                r.warning(
                    rule::SESSION,
                    "",
                    format!(
                        "the signed session record {} binds the receipt as sealed ({bound}); this package \
                         carries a redacted receipt ({have}) the producer signed a redaction for",
                        rec.art_id
                    ),
                );
            } else if bound != have {
                r.error(
                    rule::SESSION,
                    "",
                    format!(
                        "the signed session record {} binds receipt.json {bound}, but this package's is {have}: \
                         the receipt was changed after the session closed",
                        rec.art_id
                    ),
                );
            }
        } else if s.receipt_digest.is_none() {
            r.error(
                rule::SESSION,
                "",
                format!("the session record {} binds no receipt_digest", rec.art_id),
            );
        }
        if s.merkle_root != pkg.merkle_root {
            r.error(
                rule::SESSION,
                "",
                format!(
                    "the signed session record {} binds Merkle root {}, but this package's is {}",
                    rec.art_id,
                    s.merkle_root.as_deref().unwrap_or("null"),
                    pkg.merkle_root.as_deref().unwrap_or("null")
                ),
            );
        }
    }
    let by_id: std::collections::HashMap<&str, &ArtifactFacts> =
        artifacts.iter().map(|a| (&*a.art_id, a)).collect();
    let mut missing = Vec::new();
    for (i, l) in pkg.artifacts.iter().enumerate() {
        let Some(a) = by_id.get(l.artifact_id.as_str()) else {
            // Given as a bare envelope: there, verified; its art id binds
            // its payload type and digest.
            if !crate::kinds::treeship::records::art_key(&l.artifact_id)
                .is_some_and(|k| seen.contains(&k))
                && !pkg.withheld.contains(&l.artifact_id)
            {
                missing.push(l.artifact_id.as_str());
            }
            continue;
        };
        let at = format!("/artifacts/{i}");
        if *l.payload_type != *a.payload_type {
            r.error(
                rule::SESSION,
                format!("{at}/payload_type"),
                format!(
                    "the receipt lists {} as {}, but it is {}",
                    l.artifact_id, l.payload_type, a.payload_type
                ),
            );
        }
        if let Some(d) = l.digest.as_deref().filter(|d| *d != a.digest()) {
            r.error(
                rule::SESSION,
                format!("{at}/digest"),
                format!(
                    "the receipt lists {} with digest {d}, but its envelope's is {}",
                    l.artifact_id,
                    a.digest()
                ),
            );
        }
        let rec_at = a.record.as_ref().and_then(|x| x.signed_at.as_deref());
        if let (Some(l_at), Some(rec_at)) = (l.signed_at.as_deref(), rec_at) {
            if l_at != rec_at {
                r.error(
                    rule::SESSION,
                    format!("{at}/signed_at"),
                    format!(
                        "the receipt lists {} as signed at {l_at}, but its record says {rec_at}",
                        l.artifact_id
                    ),
                );
            }
        }
    }
    if trusted && !missing.is_empty() {
        r.error(
            rule::SESSION,
            "/artifacts",
            format!(
                "listed but not among the inputs, verified: {} (give the store's records with the package)",
                missing.join(", ")
            ),
        );
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Roots and proofs Treeship 0.25.1 wrote (tests/data/treeship-session).
    #[test]
    fn two_leaves_v2_as_treeship_writes_them() {
        let ids = [
            "art_62741c5bce003d85ad95f60b513f4830",
            "art_823718981afdf6ecb40dcfce564e4691",
        ];
        let root = merkle_root(2, &ids).unwrap();
        assert_eq!(
            crate::digest::hex(&root),
            "70a656b4f7de860a7cccecfc06edb7554b0f9d741d9be172e4d969bcd0afbcf1"
        );
        assert_eq!(
            crate::digest::hex(&leaf(2, ids[0])),
            "a1636c4242cdac81f6e7b4f31158b77b1b6444c76761fda5c99993b8ff38251b"
        );
        assert_eq!(merkle_root(2, &[]), None);
        // Three leaves: the third is promoted, then hashed with the pair.
        let three = merkle_root(1, &["a", "b", "c"]).unwrap();
        let ab = node(1, &leaf(1, "a"), &leaf(1, "b"));
        assert_eq!(three, node(1, &ab, &leaf(1, "c")));
    }
}
