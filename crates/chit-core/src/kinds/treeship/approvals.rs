//! A Treeship 0.32 package's approval evidence (`approvals/`: the grants
//! its actions consumed, `grants/<art id>.json`; the journal's use records,
//! `uses/`; the checkpoints covering them, `checkpoints/`), checked as
//! treeship-core 0.32's package verify checks it, each rule named as
//! Treeship names its row:
//!
//! - `replay-package-local`: no use recorded twice, none past the
//!   `max_uses` its record gives;
//! - `replay-included-checkpoint`, `approval-use-record-digest`: each
//!   checkpoint's and use's `record_digest` recomputes;
//! - `approval-use-nonce-binding`: each use names a carried grant, filed
//!   under its own art id, whose signed nonce digests to the use's;
//! - `approval-use-action-binding`: each sealed action that consumed an
//!   approval names its use (`meta.approval_use_id`), whose nonce, actor
//!   and action are the action's signed ones;
//! - `approval-use-chain-continuity`: the records form one chain from one
//!   genesis (or from the `approval_chain_anchor` the signed close record
//!   names), no fork, no cycle, none left over;
//! - `approval_evidence`: every sealed action that consumed an approval
//!   has its use record;
//! - `approval-use-limit`: no approval used more often than its signed
//!   scope allows (`maxActions`), every consuming action with a use record
//!   of its own, each carried grant signed under the key the package names.
//!
//! Stricter than Treeship in one place: a use or checkpoint file that does
//! not read as its record fails the package (Treeship then reads no
//! approval evidence at all, and checks none of it).

use super::rule;
use super::shape::{object, Field, Has, Ty, RETRY, SUBJECT};
use crate::context::Context;
use crate::envelope::{Envelope, Ids};
use crate::keys::PublicKey;
use crate::report::Report;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// A package's `approvals/` files, read by the caller: each file's name
/// (its stem is what Treeship reads of it) and bytes, or why not.
#[derive(Default)]
pub struct Approvals<'a> {
    pub grants: Vec<(String, Result<&'a [u8], String>)>,
    pub uses: Vec<(String, Result<&'a [u8], String>)>,
    pub checkpoints: Vec<(String, Result<&'a [u8], String>)>,
}

impl Approvals<'_> {
    fn is_empty(&self) -> bool {
        self.grants.is_empty() && self.uses.is_empty() && self.checkpoints.is_empty()
    }
}

/// `ApprovalScope`.
const SCOPE: &[Field] = &[
    ("maxActions", Ty::U32, Has::Opt),
    ("validUntil", Ty::Str, Has::Opt),
    ("allowedActors", Ty::Strs, Has::Dflt),
    ("allowedActions", Ty::Strs, Has::Dflt),
    ("allowedSubjects", Ty::Strs, Has::Dflt),
    ("extra", Ty::Any, Has::Opt),
];

/// `ApprovalStatement`.
const APPROVAL: &[Field] = &[
    ("type", Ty::Str, Has::Req),
    ("timestamp", Ty::Str, Has::Req),
    ("approver", Ty::Str, Has::Req),
    ("subject", Ty::Obj(SUBJECT), Has::Dflt),
    ("parentId", Ty::Str, Has::Opt),
    ("description", Ty::Str, Has::Opt),
    ("expiresAt", Ty::Str, Has::Opt),
    ("delegatable", Ty::Bool, Has::Req),
    ("nonce", Ty::Str, Has::Req),
    ("scope", Ty::Obj(SCOPE), Has::Opt),
    ("policyRef", Ty::Str, Has::Opt),
    ("irreversibility", Ty::Str, Has::Opt),
    ("quarantineReceipt", Ty::Str, Has::Opt),
    ("meta", Ty::Any, Has::Opt),
];

/// `ActionStatement` (v1).
const ACTION: &[Field] = &[
    ("type", Ty::Str, Has::Req),
    ("timestamp", Ty::Str, Has::Req),
    ("actor", Ty::Str, Has::Req),
    ("action", Ty::Str, Has::Req),
    ("subject", Ty::Obj(SUBJECT), Has::Dflt),
    ("parentId", Ty::Str, Has::Opt),
    ("approvalNonce", Ty::Str, Has::Opt),
    ("policyRef", Ty::Str, Has::Opt),
    ("meta", Ty::Any, Has::Opt),
    ("retry", Ty::Obj(RETRY), Has::Opt),
    ("idempotencyKey", Ty::Str, Has::Opt),
];

const ACTION_TYPE: &str = "application/vnd.treeship.action.v1+json";
const APPROVAL_TYPE: &str = "application/vnd.treeship.approval.v1+json";

/// `sha256:<hex>` of a raw nonce, as Treeship digests one.
fn nonce_digest(nonce: &str) -> String {
    format!(
        "sha256:{}",
        crate::digest::hex(&Sha256::digest(nonce.as_bytes()))
    )
}

/// A journal record carried in the package.
struct Record {
    label: String,
    digest: String,
    previous: String,
    recomputed: String,
    /// A hub-org checkpoint's: whether its hub signature verified under a
    /// trusted hub key, and the uses it covers.
    hub: Option<(bool, Vec<String>)>,
}

/// A use record, as Treeship reads `ApprovalUse`.
struct Use {
    record: Record,
    use_id: String,
    grant_id: String,
    nonce_digest: String,
    actor: String,
    action: String,
    max_uses: Option<u32>,
}

/// What the approval rules read of an envelope: its art id re-derived
/// from its signed bytes, and the members of its statement they use.
struct Read {
    derived: String,
    payload_type: String,
    /// Whether its statement reads as an approval, or as an action (v1),
    /// as Treeship's serde types read them.
    reads_as_approval: bool,
    reads_as_action: bool,
    approval_nonce: Option<String>,
    nonce: Option<String>,
    /// `scope.maxActions`: absent, a whole number, or why not.
    max_actions: Result<Option<u32>, String>,
    use_id: Option<String>,
    actor: String,
    action: String,
    first_keyid: Option<String>,
    signed_by_named_key: bool,
}

/// A package's sealed artifact (`artifacts/<id>.json`): whether the
/// receipt lists it, its bytes, and whether its checks passed.
pub(crate) struct SealedArt<'a> {
    pub id: &'a str,
    pub listed: bool,
    pub bytes: Option<&'a [u8]>,
    pub verified: bool,
}

/// Checks the approval evidence; `sealed` are the listed artifacts' sealed
/// copies, `keys` those `keys.json` names, `anchor` the
/// `approval_chain_anchor` of the signed close record.
pub(crate) fn check(
    a: &Approvals,
    sealed: &[SealedArt],
    keys: Option<&BTreeMap<String, PublicKey>>,
    anchor: Option<&str>,
    ctx: &Context,
    r: &mut Report,
) {
    let no_keys = BTreeMap::new();
    let keys = keys.unwrap_or(&no_keys);
    // Every sealed copy, for which action consumed which use; the listed
    // ones, for what consumes an approval and what an approval allows.
    let files: Vec<(&str, bool, Read)> = sealed
        .iter()
        .filter_map(|s| {
            let mut read = read_envelope(s.bytes?, keys, ctx)?;
            read.signed_by_named_key &= s.verified;
            Some((s.id, s.listed, read))
        })
        .collect();
    let all: Vec<(&str, &Read)> = files.iter().map(|(id, _, x)| (*id, x)).collect();
    let arts: Vec<(&str, &Read)> = files
        .iter()
        .filter(|(_, listed, _)| *listed)
        .map(|(id, _, x)| (*id, x))
        .collect();
    evidence(&arts, a, r);
    if a.is_empty() && !arts.iter().any(|(_, x)| x.approval_nonce.is_some()) {
        return;
    }
    let Some((uses, checkpoints)) = records(a, ctx, r) else {
        return;
    };
    let grants: Vec<(String, Option<Read>)> = a
        .grants
        .iter()
        .filter_map(|(name, bytes)| {
            let id = name.strip_suffix(".json")?.to_owned();
            let read = match bytes {
                Ok(b) => read_envelope(b, keys, ctx),
                Err(_) => None,
            };
            Some((id, read))
        })
        .collect();
    if !uses.is_empty() || !checkpoints.is_empty() {
        replay_package_local(&uses, r);
        record_digests(&uses, &checkpoints, r);
        if !uses.is_empty() {
            nonce_binding(&uses, &grants, r);
            action_binding(&uses, &all, r);
        }
        chain_continuity(&uses, &checkpoints, anchor, r);
        hub_coverage(&uses, &checkpoints, r);
    }
    use_limit(&arts, &uses, &grants, r);
}

/// An envelope's art id and statement, as the approval rules read them;
/// `None` when it is not an envelope.
fn read_envelope(bytes: &[u8], keys: &BTreeMap<String, PublicKey>, ctx: &Context) -> Option<Read> {
    let doc = crate::json::parse(bytes, &ctx.limits).ok()?;
    let env = Envelope::read_val(doc.root(), &mut Report::default())?;
    let pae = env.pae();
    let first = env.signatures.first();
    let mut read = Read {
        derived: Ids::of_pae(&pae).artifact_id,
        payload_type: env.payload_type.clone(),
        max_actions: Ok(None),
        first_keyid: first.and_then(|s| s.keyid.clone()),
        signed_by_named_key: first.is_some_and(|s| {
            s.keyid
                .as_deref()
                .and_then(|k| keys.get(k))
                .is_some_and(|k| k.verify_strict(&pae, &s.sig))
        }),
        reads_as_approval: false,
        reads_as_action: false,
        approval_nonce: None,
        nonce: None,
        use_id: None,
        actor: String::new(),
        action: String::new(),
    };
    let Ok(statement) = crate::json::parse(&env.payload, &ctx.limits) else {
        return Some(read);
    };
    let v = statement.root();
    let text = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_owned);
    read.reads_as_approval = object(v, APPROVAL, "").is_ok();
    read.reads_as_action = object(v, ACTION, "").is_ok();
    read.approval_nonce = text("approvalNonce");
    read.nonce = text("nonce");
    read.actor = text("actor").unwrap_or_default();
    read.action = text("action").unwrap_or_default();
    read.use_id = v
        .get("meta")
        .and_then(|m| m.get("approval_use_id"))
        .and_then(|u| u.as_str())
        .map(str::to_owned);
    read.max_actions = match v.get("scope").and_then(|s| s.get("maxActions")) {
        None => Ok(None),
        Some(m) => match m
            .number_text()
            .filter(|t| t.bytes().all(|b| b.is_ascii_digit()))
        {
            None => Err(format!(
                "scope.maxActions is {}, not a whole number",
                m.to_value()
            )),
            Some(t) => t
                .parse::<u32>()
                .map(Some)
                .map_err(|_| format!("scope.maxActions {t} is beyond the supported range")),
        },
    };
    Some(read)
}

/// The use and checkpoint records, read as Treeship's journal types;
/// `None` (and an error) when one does not read so.
fn records(a: &Approvals, ctx: &Context, r: &mut Report) -> Option<(Vec<Use>, Vec<Record>)> {
    let mut uses = Vec::new();
    let mut checkpoints = Vec::new();
    let mut ok = true;
    for (dir, files, kind) in [
        ("uses", &a.uses, "approval-use"),
        ("checkpoints", &a.checkpoints, "journal-checkpoint"),
    ] {
        for (name, bytes) in files {
            if !name.ends_with(".json") {
                continue;
            }
            let file = format!("approvals/{dir}/{name}");
            let read = bytes
                .as_ref()
                .map_err(|why| format!("could not be read: {why}"))
                .and_then(|b| {
                    crate::json::parse(b, &ctx.limits).map_err(|e| format!("is not JSON: {e}"))
                })
                .and_then(|doc| {
                    let v = doc.root();
                    let recomputed = super::journal::record_digest(kind, v).map_err(|why| {
                        format!(
                            "is not {} {kind} record: {why}",
                            crate::report::a_or_an(kind)
                        )
                    })?;
                    let text = |k: &str| {
                        v.get(k)
                            .and_then(|x| x.as_str())
                            .unwrap_or_default()
                            .to_owned()
                    };
                    let id = if kind == "approval-use" {
                        text("use_id")
                    } else {
                        text("checkpoint_id")
                    };
                    let hub = (kind == "journal-checkpoint"
                        && v.get("checkpoint_kind").and_then(|k| k.as_str()) == Some("hub-org"))
                    .then(|| {
                        let signed =
                            super::journal::hub_signed(v, &file, rule::REPLAY_HUB_ORG, ctx, r);
                        let covered = v
                            .get("covered_use_ids")
                            .map(|c| {
                                c.items()
                                    .filter_map(|i| i.as_str())
                                    .map(str::to_owned)
                                    .collect()
                            })
                            .unwrap_or_default();
                        (signed, covered)
                    });
                    let record = Record {
                        label: format!(
                            "{} {id}",
                            if kind == "approval-use" {
                                "use"
                            } else {
                                "checkpoint"
                            }
                        ),
                        digest: text("record_digest"),
                        previous: text("previous_record_digest"),
                        recomputed,
                        hub,
                    };
                    Ok(if kind == "approval-use" {
                        Some(Use {
                            record,
                            use_id: id,
                            grant_id: text("grant_id"),
                            nonce_digest: text("nonce_digest"),
                            actor: text("actor"),
                            action: text("action"),
                            max_uses: v
                                .get("max_uses")
                                .and_then(|m| m.number_text())
                                .and_then(|t| t.parse().ok()),
                        })
                    } else {
                        checkpoints.push(record);
                        None
                    })
                });
            match read {
                Ok(Some(u)) => uses.push(u),
                Ok(None) => {}
                Err(why) => {
                    ok = false;
                    r.error(rule::APPROVALS, "", format!("{file} {why}"));
                }
            }
        }
    }
    ok.then_some((uses, checkpoints))
}

/// `replay-package-local`.
fn replay_package_local(uses: &[Use], r: &mut Report) {
    let mut by_nonce: BTreeMap<(&str, &str), Vec<&Use>> = BTreeMap::new();
    let mut by_id: BTreeMap<&str, usize> = BTreeMap::new();
    for u in uses {
        by_nonce
            .entry((&u.grant_id, &u.nonce_digest))
            .or_default()
            .push(u);
        *by_id.entry(&u.use_id).or_default() += 1;
    }
    let mut found = Vec::new();
    for ((grant, _), group) in &by_nonce {
        if let Some(max) = group.iter().find_map(|u| u.max_uses) {
            if group.len() as u64 > u64::from(max) {
                found.push(format!(
                    "grant {grant} consumed {} times in this package (max_uses={max})",
                    group.len()
                ));
            }
        }
    }
    for (id, n) in by_id.iter().filter(|(_, n)| **n > 1) {
        found.push(format!("use_id {id} appears {n} times"));
    }
    if !found.is_empty() {
        r.error(
            rule::REPLAY_PACKAGE_LOCAL,
            "",
            format!("package-local replay: {}", found.join("; ")),
        );
    }
}

/// `replay-included-checkpoint`, `approval-use-record-digest`.
fn record_digests(uses: &[Use], checkpoints: &[Record], r: &mut Report) {
    for (rule, records) in [
        (
            rule::REPLAY_INCLUDED_CHECKPOINT,
            checkpoints.iter().collect::<Vec<_>>(),
        ),
        (
            rule::APPROVAL_USE_RECORD_DIGEST,
            uses.iter().map(|u| &u.record).collect(),
        ),
    ] {
        let changed: Vec<String> = records
            .iter()
            .filter(|x| x.recomputed != x.digest)
            .map(|x| {
                format!(
                    "{} was changed (stored {}, recomputed {})",
                    x.label, x.digest, x.recomputed
                )
            })
            .collect();
        if !changed.is_empty() {
            r.error(rule, "", changed.join("; "));
        }
    }
}

/// `approval-use-nonce-binding`.
fn nonce_binding(uses: &[Use], grants: &[(String, Option<Read>)], r: &mut Report) {
    let mut signed: HashMap<&str, String> = HashMap::new();
    let mut found = Vec::new();
    for (id, read) in grants {
        match read {
            None => found.push(format!("grant {id} envelope unparseable")),
            Some(g) if g.derived != *id => found.push(format!(
                "grant {id} envelope content derives to {} (substituted or changed)",
                g.derived
            )),
            Some(g) => match g.nonce.as_deref().filter(|_| g.reads_as_approval) {
                None => found.push(format!("grant {id} payload is not an approval statement")),
                Some(n) => {
                    signed.insert(id, nonce_digest(n));
                }
            },
        }
    }
    for u in uses {
        match signed.get(u.grant_id.as_str()) {
            Some(d) if *d != u.nonce_digest => found.push(format!(
                "use {} claims nonce_digest {} but grant {} signed a nonce that digests to {d}",
                u.use_id, u.nonce_digest, u.grant_id
            )),
            Some(_) => {}
            None => found.push(format!(
                "use {} references grant {}, whose envelope the package does not carry (usable)",
                u.use_id, u.grant_id
            )),
        }
    }
    if !found.is_empty() {
        r.error(rule::APPROVAL_USE_NONCE_BINDING, "", found.join("; "));
    }
}

/// `approval-use-action-binding`.
fn action_binding(uses: &[Use], arts: &[(&str, &Read)], r: &mut Report) {
    if arts.is_empty() {
        r.warning(
            rule::APPROVAL_USE_ACTION_BINDING,
            "",
            "the package carries no action envelopes, so which action consumed each use is not asserted by it",
        );
        return;
    }
    let by_id: HashMap<&str, &Use> = uses.iter().map(|u| (u.use_id.as_str(), u)).collect();
    let mut found = Vec::new();
    for (id, a) in arts.iter().filter(|(_, a)| a.payload_type == ACTION_TYPE) {
        if a.derived != *id {
            found.push(format!(
                "action {id} envelope content derives to {} (substituted or changed)",
                a.derived
            ));
            continue;
        }
        if !a.reads_as_action {
            found.push(format!("action {id} is not an action statement"));
            continue;
        }
        let Some(nonce) = &a.approval_nonce else {
            continue;
        };
        let Some(use_id) = &a.use_id else {
            found.push(format!(
                "action {id} consumed an approval but its meta names no approval_use_id"
            ));
            continue;
        };
        match by_id.get(use_id.as_str()) {
            None => found.push(format!(
                "action {id} names approval_use_id {use_id}, which the package does not carry"
            )),
            Some(u) if u.nonce_digest != nonce_digest(nonce) => found.push(format!(
                "action {id}'s approvalNonce digests to {} but use {use_id} records {}",
                nonce_digest(nonce),
                u.nonce_digest
            )),
            Some(u) if u.actor != a.actor || u.action != a.action => found.push(format!(
                "use {use_id} records {} doing {}, but the signed action {id} is {} doing {}",
                u.actor, u.action, a.actor, a.action
            )),
            Some(_) => {}
        }
    }
    if !found.is_empty() {
        r.error(rule::APPROVAL_USE_ACTION_BINDING, "", found.join("; "));
    }
}

/// `approval-use-chain-continuity`: one chain, from one genesis or from
/// the anchor the signed close record names.
fn chain_continuity(uses: &[Use], checkpoints: &[Record], anchor: Option<&str>, r: &mut Report) {
    let nodes: Vec<&Record> = uses.iter().map(|u| &u.record).chain(checkpoints).collect();
    let anchor = anchor.filter(|a| !a.is_empty());
    let mut owned: HashSet<&str> = std::iter::once("")
        .chain(nodes.iter().map(|n| n.digest.as_str()))
        .collect();
    if let Some(a) = anchor.filter(|a| nodes.iter().any(|n| n.previous == *a)) {
        owned.insert(a);
    }
    let mut found: Vec<String> = nodes
        .iter()
        .filter(|n| !owned.contains(n.previous.as_str()))
        .map(|n| {
            format!(
                "{} follows {}, which is not in the package",
                n.label, n.previous
            )
        })
        .collect();
    let genesis: Vec<&&Record> = nodes.iter().filter(|n| n.previous.is_empty()).collect();
    if genesis.len() > 1 {
        found.push(format!(
            "{} records begin a chain: {}",
            genesis.len(),
            genesis
                .iter()
                .map(|n| n.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut by_previous: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for n in &nodes {
        by_previous
            .entry(n.previous.as_str())
            .or_default()
            .push(&n.label);
    }
    for (previous, group) in &by_previous {
        if group.len() > 1 && !previous.is_empty() {
            found.push(format!(
                "fork: {} records follow {previous}: {}",
                group.len(),
                group.join(", ")
            ));
        }
    }
    if found.is_empty() {
        let next: HashMap<&str, &Record> = nodes
            .iter()
            .filter(|n| !n.previous.is_empty())
            .map(|n| (n.previous.as_str(), *n))
            .collect();
        let start = match (genesis.first(), anchor) {
            (Some(g), _) => Some(**g),
            (None, Some(a)) => {
                let heads: Vec<&&Record> = nodes.iter().filter(|n| n.previous == a).collect();
                (heads.len() == 1).then(|| *heads[0])
            }
            (None, None) => None,
        };
        let mut seen: HashSet<&str> = HashSet::new();
        let mut at = start;
        while let Some(n) = at {
            if !seen.insert(&n.digest) {
                found.push(format!("a cycle at {}", n.label));
                break;
            }
            at = next.get(n.digest.as_str()).copied();
        }
        if found.is_empty() && seen.len() != nodes.len() {
            let left: Vec<&str> = nodes
                .iter()
                .filter(|n| !seen.contains(n.digest.as_str()))
                .map(|n| n.label.as_str())
                .collect();
            if !left.is_empty() {
                found.push(format!(
                    "{} record(s) not reached from the start of the chain: {}",
                    left.len(),
                    left.join(", ")
                ));
            }
        }
    }
    if !found.is_empty() {
        r.error(rule::APPROVAL_USE_CHAIN_CONTINUITY, "", found.join("; "));
    }
}

/// `replay-hub-org`: a hub checkpoint whose signature verified covers
/// every use the package carries (one that did not verify failed when it
/// was read).
fn hub_coverage(uses: &[Use], checkpoints: &[Record], r: &mut Report) {
    for cp in checkpoints {
        let Some((true, covered)) = &cp.hub else {
            continue;
        };
        let missing: Vec<&str> = uses
            .iter()
            .map(|u| u.use_id.as_str())
            .filter(|u| !covered.iter().any(|c| c == u))
            .collect();
        if !missing.is_empty() {
            r.warning(
                rule::REPLAY_HUB_ORG,
                "",
                format!(
                    "{} verifies but does not cover {} use(s): {}",
                    cp.label,
                    missing.len(),
                    missing.join(", ")
                ),
            );
        }
    }
}

/// `approval_evidence`: each sealed action that consumed an approval has
/// a use record for its nonce.
fn evidence(arts: &[(&str, &Read)], a: &Approvals, r: &mut Report) {
    let consuming: Vec<(&str, String)> = arts
        .iter()
        .filter_map(|(id, x)| Some((*id, nonce_digest(x.approval_nonce.as_deref()?))))
        .collect();
    if consuming.is_empty() {
        return;
    }
    // The use records' nonce digests, read leniently: a record that does
    // not read is failed by the rules after this one.
    let covered: BTreeSet<String> = a
        .uses
        .iter()
        .filter_map(|(_, b)| {
            let b = b.as_ref().ok()?;
            let v: serde_json::Value = serde_json::from_slice(b).ok()?;
            Some(v.get("nonce_digest")?.as_str()?.to_owned())
        })
        .collect();
    let missing: Vec<&str> = consuming
        .iter()
        .filter(|(_, d)| !covered.contains(d))
        .map(|(id, _)| *id)
        .collect();
    if !missing.is_empty() {
        r.error(
            rule::APPROVAL_EVIDENCE,
            "",
            format!(
                "{} sealed action(s) consume an approval but the package carries no use record for them in approvals/ ({})",
                missing.len(),
                missing.join(", ")
            ),
        );
    }
}

/// `approval-use-limit`: the limit an approval's signed scope sets, held
/// against the sealed actions that consume it and the uses recorded.
fn use_limit(
    arts: &[(&str, &Read)],
    uses: &[Use],
    grants: &[(String, Option<Read>)],
    r: &mut Report,
) {
    let mut signed: BTreeMap<String, (String, Option<u32>)> = BTreeMap::new();
    let mut consumers: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let mut problems: Vec<String> = Vec::new();
    for (id, x) in arts {
        if x.payload_type == APPROVAL_TYPE {
            if !x.signed_by_named_key {
                continue;
            }
            let Some(n) = &x.nonce else { continue };
            let max = match &x.max_actions {
                Ok(m) => *m,
                Err(why) => {
                    problems.push(format!("approval {id}: {why}"));
                    continue;
                }
            };
            let d = nonce_digest(n);
            if let Some((other, _)) = signed.get(&d).filter(|(o, _)| o != id) {
                problems.push(format!("approvals {other} and {id} share one nonce"));
            }
            signed.insert(d, ((*id).to_owned(), max));
        } else if let Some(n) = &x.approval_nonce {
            consumers.entry(nonce_digest(n)).or_default().push(id);
        }
    }
    for (id, read) in grants {
        let g = match read {
            None => {
                problems.push(format!("carried grant {id}: envelope does not parse"));
                continue;
            }
            Some(g) => g,
        };
        if !g.signed_by_named_key {
            problems.push(format!(
                "carried grant {id}: not signed under the key keys.json names for {}",
                g.first_keyid.as_deref().unwrap_or("its key id")
            ));
            continue;
        }
        if g.derived != *id {
            problems.push(format!(
                "carried grant {id}: the signed bytes re-derive to {}",
                g.derived
            ));
            continue;
        }
        let max = match &g.max_actions {
            Ok(m) => *m,
            Err(why) => {
                problems.push(format!("carried grant {id}: {why}"));
                continue;
            }
        };
        let Some(n) = &g.nonce else { continue };
        let d = nonce_digest(n);
        match signed.get(&d) {
            Some((other, _)) if other != id => {
                problems.push(format!("approvals {other} and {id} share one nonce"));
            }
            Some(_) => {}
            None => {
                signed.insert(d, (id.clone(), max));
            }
        }
    }
    let nonces: BTreeSet<&str> = consumers
        .keys()
        .map(String::as_str)
        .chain(uses.iter().map(|u| u.nonce_digest.as_str()))
        .collect();
    let mut unsigned: Vec<String> = Vec::new();
    for d in nonces {
        let acts = consumers.get(d).map_or(0, Vec::len);
        let of = |u: &&Use| u.nonce_digest == d;
        let recorded = uses.iter().filter(of).count();
        let distinct: BTreeSet<&str> = uses.iter().filter(of).map(|u| u.use_id.as_str()).collect();
        match signed.get(d) {
            Some((grant, Some(max))) => {
                for u in uses.iter().filter(of).filter(|u| u.max_uses != Some(*max)) {
                    problems.push(format!(
                        "use {} records max_uses {} but the signed scope says {max}",
                        u.use_id,
                        u.max_uses.map_or("none".to_owned(), |m| m.to_string())
                    ));
                }
                if acts as u64 > u64::from(*max) {
                    problems.push(format!(
                        "approval {grant} is signed for {max} use(s) but {acts} sealed action(s) consume it"
                    ));
                }
                if recorded as u64 > u64::from(*max) {
                    problems.push(format!(
                        "approval {grant} is signed for {max} use(s) but the package records {recorded} use(s)"
                    ));
                }
            }
            Some((_, None)) => {}
            None if acts > 0 => unsigned.push(consumers[d].join(", ")),
            None => {}
        }
        if acts > distinct.len() {
            problems.push(format!(
                "{acts} sealed action(s) consume one approval but only {} distinct use record(s) cover them",
                distinct.len()
            ));
        }
    }
    if !problems.is_empty() {
        r.error(rule::APPROVAL_USE_LIMIT, "", problems.join("; "));
    } else if !unsigned.is_empty() {
        r.warning(
            rule::APPROVAL_USE_LIMIT,
            "",
            format!(
                "action(s) {} consume an approval that is not sealed (signed) in this package, so its use limit cannot be checked here",
                unsigned.join("; ")
            ),
        );
    }
}
