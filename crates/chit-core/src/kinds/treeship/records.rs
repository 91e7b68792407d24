//! What Treeship writes besides bare envelopes, read as Treeship reads it:
//!
//! - a stored artifact record (`.treeship/artifacts/<art id>.json`:
//!   `{artifact_id, digest, payload_type, key_id, signed_at, parent_id?,
//!   envelope, hub_url?, anchors?}`) is checked as its envelope, and every
//!   field that says something about the envelope must agree with it
//!   (rule `record`);
//! - the store's `index.json` (`{"entries": [{id, payload_type, signed_at,
//!   parent_id?}]}`) must list exactly the records beside it, as they are
//!   (rule `index`, across inputs);
//! - `parentId` chains: every artifact whose record (or statement) names a
//!   parent needs that parent among the inputs, verified (rule `chain`,
//!   across inputs), as `treeship verify` walks them without `--no-chain`;
//! - `treeship receipt export` output (`message_b64`, the DSSE PAE;
//!   `signature_b64`; `public_key_b64`, the signer's own claim) is checked
//!   as the envelope it stands for, under the trust file (rule `export`);
//! - session packages are in [`super::session`].

use super::rule;
use crate::checked::Checked;
use crate::context::Context;
use crate::doc::{Doc, Val};
use crate::envelope::{Envelope, Ids, Sig};
use crate::facts::Origin;
pub use crate::facts::{ArtifactFacts, IndexEntry, IndexFacts, RecordFacts, SessionClaim};
use crate::report::Report;

impl ArtifactFacts {
    /// The facts of an envelope, from its decoded statement (any payload
    /// type whose payload is a JSON object; others name no parent).
    pub(crate) fn of(env: &Envelope, ids: &Ids, statement: Option<Val>) -> ArtifactFacts {
        let text = |v: Option<Val>| v.and_then(|x| x.as_str()).map(str::to_owned);
        let parent = statement
            .and_then(|s| text(s.get("parentId").or_else(|| s.get("parent_id"))))
            .map(String::into_boxed_str);
        let session = statement
            .filter(|s| s.get("kind").and_then(|k| k.as_str()) == Some("session.v1"))
            .and_then(|s| s.get("payload"))
            .and_then(|p| {
                Some(Box::new(SessionClaim {
                    session_id: text(p.get("session_id"))?,
                    receipt_digest: text(p.get("receipt_digest")),
                    merkle_root: text(p.get("receipt_merkle_root")),
                }))
            });
        ArtifactFacts {
            art_id: ids.artifact_id.as_str().into(),
            sha256: ids
                .digest
                .strip_prefix("sha256:")
                .and_then(unhex32)
                .unwrap_or_default(),
            payload_type: env.payload_type.as_str().into(),
            parent,
            record: None,
            session,
            alone: false,
            role: None,
            source: Origin::unknown(),
        }
    }
}

/// The parent a signed statement names, read as Treeship 0.32's
/// `verify::signed_parent` reads it, for every record whichever version
/// wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignedParent<'a> {
    /// The statement signs this artifact id as its parent.
    Named(&'a str),
    /// An endorsement without `parentId` (every endorsement Treeship 0.31.9
    /// or earlier made): its subject is what it endorses, not where it sits,
    /// so its place in a chain is the store's claim only.
    LegacyEndorsement,
    /// The statement names no parent.
    None,
}

/// The statement type of a Treeship endorsement.
pub const ENDORSEMENT_TYPE: &str = "treeship/endorsement/v1";

/// In order: a present `parentId` (or `parent_id`) decides, whatever its
/// value; a session participant's `invitation_ref`; an endorsement without
/// one is [`SignedParent::LegacyEndorsement`]; a `subject.artifactId` that
/// is an art id; a handoff's first `artifacts` entry.
pub fn signed_parent<'d>(statement: Val<'d>) -> SignedParent<'d> {
    let named = |v: Val<'d>| v.as_str().map_or(SignedParent::None, SignedParent::Named);
    if let Some(v) = statement
        .get("parentId")
        .or_else(|| statement.get("parent_id"))
        .or_else(|| statement.get("invitation_ref"))
    {
        return named(v);
    }
    if statement.get("type").and_then(|t| t.as_str()) == Some(ENDORSEMENT_TYPE) {
        return SignedParent::LegacyEndorsement;
    }
    if let Some(id) = statement
        .get("subject")
        .and_then(|s| s.get("artifactId").or_else(|| s.get("artifact_id")))
        .filter(|id| id.as_str().is_some_and(|x| x.starts_with("art_")))
    {
        return named(id);
    }
    match statement
        .get("artifacts")
        .and_then(|a| a.as_array())
        .and_then(|mut a| a.next())
        .and_then(|a| a.as_str())
    {
        Some(p) => SignedParent::Named(p),
        None => SignedParent::None,
    }
}

/// The statement type of a session liveness, the host's signed record that
/// a join answered its challenge.
pub const LIVENESS_TYPE: &str = "treeship/session-liveness/v1";

/// The parent a stored record's statement vouches for: its
/// [`signed_parent`], or, for a session liveness (from which
/// `signed_parent` reads none), the participant it attests: Treeship files
/// a liveness under that participant, and its `participant_ref` is signed.
fn filed_parent<'d>(statement: Val<'d>) -> SignedParent<'d> {
    match signed_parent(statement) {
        SignedParent::None
            if statement.get("type").and_then(|t| t.as_str()) == Some(LIVENESS_TYPE) =>
        {
            statement
                .get("participant_ref")
                .and_then(|p| p.as_str())
                .map_or(SignedParent::None, SignedParent::Named)
        }
        signed => signed,
    }
}

/// Whether a document is a Treeship store record: an object with an
/// `artifact_id` and an `envelope`.
pub fn looks_like_record(doc: &Doc) -> bool {
    let root = doc.root();
    root.get("artifact_id").is_some() && root.get("envelope").is_some()
}

/// Checks a store record: its envelope as any envelope (findings under
/// `/envelope`), then each of its fields against the envelope.
pub(crate) fn check_record(doc: &Doc, ctx: &Context) -> (Checked, Option<usize>) {
    let root = doc.root();
    let env_v = root.get("envelope").filter(|e| e.is_object());
    let Some(env_v) = env_v else {
        let mut report = Report::new(crate::kind::ENVELOPE);
        report.error(
            rule::RECORD,
            "/envelope",
            "a Treeship store record carries its envelope as an object under envelope; this one does not",
        );
        return (Checked::of(report), None);
    };
    let (mut inner, signers) = crate::kinds::treeship::statement::check_val(env_v, ctx);
    let mut report = Report::new(inner.report.kind);
    report.absorb(std::mem::take(&mut inner.report), "/envelope");
    let Some(env) = Envelope::read_val(env_v, &mut Report::default()) else {
        inner.report = report;
        return (inner, signers);
    };
    let ids = env.ids();
    let statement = crate::json::parse(&env.payload, &ctx.limits).ok();
    let statement = statement.as_ref().map(Doc::root);

    let field = |name: &str, report: &mut Report, required: bool| -> Option<String> {
        match root.get(name) {
            None if required => {
                report.error(
                    rule::RECORD,
                    format!("/{name}"),
                    format!("the record has no {name}, which Treeship writes on every record"),
                );
                None
            }
            None => None,
            Some(v) => match v.as_str() {
                Some(s) => Some(s.to_owned()),
                None => {
                    report.error(
                        rule::RECORD,
                        format!("/{name}"),
                        format!("the record's {name} is not a string"),
                    );
                    None
                }
            },
        }
    };
    let mismatch = |report: &mut Report, name: &str, says: &str, is: &str| {
        report.error(
            rule::RECORD,
            format!("/{name}"),
            format!("the record's {name} is {says}, but its envelope's is {is}"),
        );
    };
    if let Some(a) = field("artifact_id", &mut report, true) {
        if a != ids.artifact_id {
            mismatch(&mut report, "artifact_id", &a, &ids.artifact_id);
        }
    }
    if let Some(d) = field("digest", &mut report, true) {
        if d != ids.digest {
            mismatch(&mut report, "digest", &d, &ids.digest);
        }
    }
    if let Some(t) = field("payload_type", &mut report, true) {
        if t != env.payload_type {
            mismatch(&mut report, "payload_type", &t, &env.payload_type);
        }
    }
    if let Some(k) = field("key_id", &mut report, true) {
        let keyids: Vec<&str> = env
            .signatures
            .iter()
            .filter_map(|s: &Sig| s.keyid.as_deref())
            .collect();
        if !keyids.contains(&k.as_str()) {
            report.error(
                rule::RECORD,
                "/key_id",
                format!(
                    "the record's key_id is {k}, but no signature of its envelope names that key ({})",
                    if keyids.is_empty() {
                        "none names any".to_owned()
                    } else {
                        keyids.join(", ")
                    }
                ),
            );
        }
    }
    let signed_at = field("signed_at", &mut report, true);
    if let Some(t) = &signed_at {
        if !crate::time::is_rfc3339(t) {
            report.error(
                rule::RECORD,
                "/signed_at",
                format!("the record's signed_at {t} is not an RFC 3339 time"),
            );
        } else if let Some(ts) = statement
            .and_then(|s| s.get("timestamp"))
            .and_then(|v| v.as_str())
        {
            if ts != t {
                report.warning(
                    rule::RECORD,
                    "/signed_at",
                    format!(
                        "the record's signed_at is {t}, but its statement's (signed) timestamp is {ts}: \
                         the record's is unsigned store metadata"
                    ),
                );
            }
        }
    }
    let parent_id = field("parent_id", &mut report, false);
    parent_link(parent_id.as_deref(), statement, &mut report);
    if let Some(a) = inner.artifact.as_mut() {
        a.record = Some(Box::new(RecordFacts {
            parent_id,
            signed_at,
        }));
    }
    // A record of another art id than its envelope's counts toward nothing.
    if report.breaks(rule::RECORD) {
        inner.facts = None;
        inner.artifact = None;
    }
    inner.report = report;
    (inner, signers)
}

/// A record's `parent_id` (the edge a chain walk follows, unsigned store
/// metadata) against the parent its statement signs, by Treeship 0.32's
/// rule: a named parent must be the record's; an endorsement that signs
/// none is accepted on its storage edge with a warning that says so; a
/// record placed after a parent its statement does not name fails.
fn parent_link(record: Option<&str>, statement: Option<Val>, report: &mut Report) {
    let signed = statement.map_or(SignedParent::None, filed_parent);
    match (record, signed) {
        (Some(p), SignedParent::Named(s)) if p != s => report.error(
            rule::RECORD,
            "/parent_id",
            format!("the record's parent_id is {p}, but its signed statement names {s} as its parent"),
        ),
        (Some(_), SignedParent::Named(_)) => {}
        (Some(p), SignedParent::LegacyEndorsement) => report.warning(
            rule::RECORD,
            "/parent_id",
            format!(
                "an endorsement made by Treeship 0.31.9 or earlier signs no parent: its place after {p} \
                 is the store's claim only, accepted for compatibility"
            ),
        ),
        (Some(p), SignedParent::None) => report.error(
            rule::RECORD,
            "/parent_id",
            format!("the record's parent_id is {p}, but its signed statement names no parent"),
        ),
        (None, _) => {
            let explicit = statement
                .and_then(|s| s.get("parentId").or_else(|| s.get("parent_id")))
                .and_then(|p| p.as_str());
            if let Some(e) = explicit {
                report.error(
                    rule::RECORD,
                    "/parent_id",
                    format!("the record has no parent_id, but its signed statement names {e} as its parent"),
                );
            }
        }
    }
}

/// Whether a document is a Treeship store index: an object of one member,
/// `entries`, an array.
pub fn looks_like_index(doc: &Doc) -> bool {
    let root = doc.root();
    root.is_object()
        && root.len() == 1
        && root.get("entries").is_some_and(|e| e.as_array().is_some())
}

/// The index kind's name, as chit reports it.
pub const INDEX_KIND: &str = "treeship.index";

/// Checks an index's shape; what it lists is checked across inputs.
pub(crate) fn check_index(doc: &Doc) -> (Report, Option<IndexFacts>) {
    let mut report = Report::new(INDEX_KIND);
    let mut entries = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, e) in doc
        .root()
        .get("entries")
        .and_then(|e| e.as_array())
        .into_iter()
        .flatten()
        .enumerate()
    {
        let text = |k: &str| e.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        let (Some(id), Some(payload_type), Some(signed_at)) =
            (text("id"), text("payload_type"), text("signed_at"))
        else {
            report.error(
                rule::INDEX,
                format!("/entries/{i}"),
                format!("entry {i} needs id, payload_type and signed_at strings, as Treeship writes them"),
            );
            continue;
        };
        if e.get("parent_id").is_some_and(|p| p.as_str().is_none()) {
            report.error(
                rule::INDEX,
                format!("/entries/{i}/parent_id"),
                format!("entry {i}'s parent_id is not a string"),
            );
            continue;
        }
        if !crate::envelope::is_art_id(&id) {
            report.error(
                rule::INDEX,
                format!("/entries/{i}/id"),
                format!("entry {i}'s id {id} is not an art id"),
            );
            continue;
        }
        if !seen.insert(id.clone()) {
            report.error(
                rule::INDEX,
                format!("/entries/{i}/id"),
                format!("{id} is listed twice"),
            );
            continue;
        }
        entries.push(IndexEntry {
            id,
            payload_type,
            signed_at,
            parent_id: text("parent_id"),
        });
    }
    let facts = report.valid().then(|| IndexFacts {
        entries,
        source: Origin::unknown(),
    });
    (report, facts)
}

/// The folder a file name is in ("" for none).
fn folder(file: &str) -> &str {
    file.rfind(['/', '\\']).map_or("", |at| &file[..at])
}

/// An index against the records among the inputs in its own folder: each
/// entry names a verified record there and agrees with it, and each such
/// record is listed.
pub(crate) fn index_against_records(index: &IndexFacts, artifacts: &[ArtifactFacts]) -> Report {
    let mut report = Report::new(INDEX_KIND);
    let here = folder(&index.source.file);
    let records: std::collections::BTreeMap<&str, &ArtifactFacts> = artifacts
        .iter()
        .filter(|a| a.record.is_some() && a.source.line.is_none() && folder(&a.source.file) == here)
        .map(|a| (&*a.art_id, a))
        .collect();
    let listed: std::collections::HashSet<&str> =
        index.entries.iter().map(|e| e.id.as_str()).collect();
    for (i, e) in index.entries.iter().enumerate() {
        let Some(a) = records.get(e.id.as_str()) else {
            report.error(
                rule::INDEX,
                format!("/entries/{i}"),
                format!(
                    "the index lists {}, but no record of it beside the index verified",
                    e.id
                ),
            );
            continue;
        };
        let r = a.record.as_ref();
        let differs = |report: &mut Report, field: &str, says: &str, is: &str| {
            report.error(
                rule::INDEX,
                format!("/entries/{i}/{field}"),
                format!(
                    "the index says {}'s {field} is {says}, but its record's is {is}",
                    e.id
                ),
            );
        };
        if *e.payload_type != *a.payload_type {
            differs(
                &mut report,
                "payload_type",
                &e.payload_type,
                &a.payload_type,
            );
        }
        if let Some(at) = r
            .and_then(|r| r.signed_at.as_deref())
            .filter(|&at| at != e.signed_at)
        {
            differs(&mut report, "signed_at", &e.signed_at, at);
        }
        let rp = r.and_then(|r| r.parent_id.as_deref());
        if e.parent_id.as_deref() != rp {
            differs(
                &mut report,
                "parent_id",
                e.parent_id.as_deref().unwrap_or("none"),
                rp.unwrap_or("none"),
            );
        }
    }
    for (id, a) in &records {
        if !listed.contains(id) {
            report.error(
                rule::INDEX,
                "/entries",
                format!(
                    "{} is a record beside the index ({}), but the index does not list it",
                    id, a.source
                ),
            );
        }
    }
    report
}

/// One chain of artifacts linked by their parents: named by its root (the
/// artifact with no parent, or the first parent missing), with every link
/// whose parent is not among the inputs.
pub(crate) struct Chain {
    pub root: String,
    pub artifacts: usize,
    pub report: Report,
    /// The art ids of its members.
    pub members: Vec<Box<str>>,
}

/// Every chain among the artifacts: each connected set of parent links.
/// `artifacts`: those kept whole (records, those naming a parent, session
/// records); `seen`: the key ([`art_key`]) of every signed artifact given.
pub(crate) fn chains(
    artifacts: &[ArtifactFacts],
    seen: &std::collections::HashSet<u128>,
) -> Vec<Chain> {
    use std::collections::{BTreeMap, HashMap};
    let mut present: HashMap<&str, &ArtifactFacts> = HashMap::new();
    for a in artifacts {
        present.entry(&*a.art_id).or_insert(a);
    }
    let given =
        |id: &str| present.contains_key(id) || art_key(id).is_some_and(|k| seen.contains(&k));
    // Union-find over the ids that take part in a link.
    let mut up: HashMap<&str, &str> = HashMap::new();
    fn find<'a>(up: &mut HashMap<&'a str, &'a str>, x: &'a str) -> &'a str {
        let mut r = x;
        while let Some(&p) = up.get(r) {
            if p == r {
                break;
            }
            r = p;
        }
        let mut y = x;
        while y != r {
            let next = up[y];
            up.insert(y, r);
            y = next;
        }
        r
    }
    let mut edges: Vec<(&ArtifactFacts, &str)> = Vec::new();
    for a in present.values() {
        if let Some(p) = a.edge() {
            edges.push((a, p));
            up.entry(&*a.art_id).or_insert(&*a.art_id);
            up.entry(p).or_insert(p);
            let (ra, rp) = (find(&mut up, &a.art_id), find(&mut up, p));
            if ra != rp {
                up.insert(ra, rp);
            }
        }
    }
    let ids: Vec<&str> = up.keys().copied().collect();
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for id in ids {
        let r = find(&mut up, id);
        groups.entry(r).or_default().push(id);
    }
    let mut out: Vec<Chain> = Vec::new();
    for members in groups.into_values() {
        let mut members = members;
        members.sort_unstable();
        // The root: a member that names no parent (present without an edge,
        // or missing); the first such, by id, for a name that does not
        // depend on order.
        let roots: Vec<&str> = members
            .iter()
            .copied()
            .filter(|m| present.get(m).is_none_or(|a| a.edge().is_none()))
            .collect();
        let mut report = Report::new("chain");
        let root = match roots.first() {
            Some(r) => (*r).to_owned(),
            None => {
                report.error(
                    rule::CHAIN,
                    "",
                    format!("the parent links among {} form a loop", members.join(", ")),
                );
                members[0].to_owned()
            }
        };
        let mut broken: Vec<(&ArtifactFacts, &str)> = edges
            .iter()
            .filter(|(a, p)| members.contains(&&*a.art_id) && !given(p))
            .copied()
            .collect();
        broken.sort_by(|x, y| x.0.art_id.cmp(&y.0.art_id));
        for (a, p) in broken {
            if a.alone {
                report.warning(
                    rule::CHAIN,
                    "",
                    format!(
                        "{} names {p} as its parent, which is not among the inputs: an export carries its \
                         artifacts, not the chain above them; give its parent too to check the link ({})",
                        a.art_id, a.source
                    ),
                );
                continue;
            }
            report.error(
                rule::CHAIN,
                "",
                format!(
                    "the chain is broken at {}: it names {p} as its parent, which is not among the inputs \
                     (or did not verify) ({})",
                    a.art_id, a.source
                ),
            );
        }
        joins(&members, &present, &mut report);
        out.push(Chain {
            root,
            artifacts: members.iter().filter(|m| given(m)).count(),
            report,
            members: members.iter().map(|&m| Box::from(m)).collect(),
        });
    }
    out.sort_by(|a, b| a.root.cmp(&b.root));
    out
}

/// Each session participant among `members` is countersigned by the
/// issuer of the invitation it redeems, where that is among the inputs (a
/// missing one breaks the chain).
fn joins(
    members: &[&str],
    present: &std::collections::HashMap<&str, &ArtifactFacts>,
    report: &mut Report,
) {
    use crate::facts::Role;
    for m in members {
        let Some(Role::Participant {
            host,
            invitation,
            session,
        }) = present.get(m).and_then(|a| a.role.as_deref())
        else {
            continue;
        };
        let Some(inv) = present.get(&**invitation) else {
            continue;
        };
        match inv.role.as_deref() {
            Some(Role::Invitation { issuer, .. }) if issuer != host => report.error(
                rule::CHAIN,
                "",
                format!(
                    "participant {m} is countersigned by a key other than the issuer of the invitation it redeems ({invitation})"
                ),
            ),
            Some(Role::Invitation { session: to, .. }) if to != session => report.error(
                rule::CHAIN,
                "",
                format!("participant {m} joins session {session} by an invitation to {to} ({invitation})"),
            ),
            Some(Role::Invitation { .. }) => {}
            _ => report.error(
                rule::CHAIN,
                "",
                format!("participant {m} redeems {invitation}, which is not an invitation signed by its issuer"),
            ),
        }
    }
}

/// Whether a document is `treeship receipt export` output.
pub fn looks_like_export(doc: &Doc) -> bool {
    let root = doc.root();
    root.get("message_b64").is_some() && root.get("signature_b64").is_some()
}

/// The export kind's name before its payload is known.
pub const EXPORT_KIND: &str = "treeship.export";

/// Splits DSSE's pre-authentication encoding back into its payload type
/// and body: `"DSSEv1" SP len SP type SP len SP body`, lengths in decimal
/// bytes without leading zeros, the body exactly as long as it says.
pub fn parse_pae(pae: &[u8]) -> Option<(String, Vec<u8>)> {
    let rest = pae.strip_prefix(b"DSSEv1 ")?;
    let (len, rest) = decimal(rest)?;
    let rest = rest.strip_prefix(b" ")?;
    if rest.len() < len {
        return None;
    }
    let (ty, rest) = rest.split_at(len);
    let rest = rest.strip_prefix(b" ")?;
    let (blen, rest) = decimal(rest)?;
    let body = rest.strip_prefix(b" ")?;
    (body.len() == blen)
        .then(|| (String::from_utf8(ty.to_vec()).ok(), body.to_vec()))
        .and_then(|(t, b)| Some((t?, b)))
}

fn decimal(s: &[u8]) -> Option<(usize, &[u8])> {
    let n = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if n == 0 || n > 19 || (n > 1 && s[0] == b'0') {
        return None;
    }
    let v: usize = std::str::from_utf8(&s[..n]).ok()?.parse().ok()?;
    Some((v, &s[n..]))
}

/// Checks `treeship receipt export` output: the message is the PAE of an
/// envelope, whose art id the export names and whose signature it carries;
/// that envelope is checked as any other, under the trust file. The public
/// key in the export is only the signer's claim: it must be the trusted key
/// the signature verifies under, never a key to verify with.
pub(crate) fn check_export(doc: &Doc, ctx: &Context) -> (Checked, Option<usize>) {
    let root = doc.root();
    let mut report = Report::new(EXPORT_KIND);
    let text = |k: &str| root.get(k).and_then(|v| v.as_str());
    let std_b64 = |k: &str, report: &mut Report| -> Option<Vec<u8>> {
        let Some(t) = text(k) else {
            report.error(
                rule::EXPORT,
                format!("/{k}"),
                format!("the export needs a {k} string"),
            );
            return None;
        };
        let b = crate::keys::decode_base64(t);
        if b.is_none() {
            report.error(
                rule::EXPORT,
                format!("/{k}"),
                format!("{k} is not valid base64"),
            );
        }
        b
    };
    if let Some(a) = root
        .get("algorithm")
        .filter(|a| a.as_str() != Some("ed25519"))
    {
        let _ = a;
        report.error(
            rule::EXPORT,
            "/algorithm",
            "the export's algorithm must be ed25519",
        );
    }
    let message = std_b64("message_b64", &mut report);
    let sig = std_b64("signature_b64", &mut report);
    let public = std_b64("public_key_b64", &mut report);
    let parsed = message.as_deref().map(|m| (m, parse_pae(m)));
    if let Some((_, None)) = parsed {
        report.error(
            rule::EXPORT,
            "/message_b64",
            "the message is not a DSSE pre-authentication encoding (DSSEv1 LEN TYPE LEN BODY)",
        );
    }
    let (Some((pae, Some((payload_type, payload)))), Some(sig)) = (parsed, sig) else {
        return (Checked::of(report), None);
    };
    let ids = Ids::of_pae(pae);
    match text("artifact_id") {
        Some(a) if a != ids.artifact_id => report.error(
            rule::EXPORT,
            "/artifact_id",
            format!(
                "the export names {a}, but its message's art id is {}",
                ids.artifact_id
            ),
        ),
        None => report.error(
            rule::EXPORT,
            "/artifact_id",
            "the export needs an artifact_id string",
        ),
        _ => {}
    }
    let env = Envelope {
        payload,
        payload_type,
        signatures: vec![Sig {
            keyid: text("key_id").filter(|k| !k.is_empty()).map(str::to_owned),
            sig,
        }],
    };
    let (mut inner, signers) = crate::kinds::treeship::statement::check_envelope(
        env.clone(),
        Report::new(crate::kind::ENVELOPE),
        ctx,
    );
    // The key the export claims: the trusted key that verified, or a lie.
    if let (Some(public), Some(trust)) = (public, ctx.trust) {
        let verified: Vec<_> = env.signers(&env.pae(), trust.public_keys(), &mut Report::default());
        let claimed = format!("ed25519:{}", crate::keys::encode_base64url(&public));
        match verified.first() {
            _ if public.len() != 32 => report.error(
                rule::EXPORT,
                "/public_key_b64",
                "public_key_b64 is not 32 bytes, an Ed25519 public key",
            ),
            Some(v) if v.bytes()[..] != public[..] => report.error(
                rule::EXPORT,
                "/public_key_b64",
                format!(
                    "the export claims key {claimed}, but its signature verifies under trusted key {}",
                    v.treeship()
                ),
            ),
            None => report.error(
                rule::EXPORT,
                "/public_key_b64",
                format!(
                    "the export claims key {claimed}, which no trusted key that signed it is: the key in an \
                     export is only the signer's claim; pin it in the trust file to trust it"
                ),
            ),
            _ => {}
        }
    }
    let kind = inner.report.kind;
    report.kind = if kind == crate::kind::ENVELOPE {
        EXPORT_KIND
    } else {
        kind
    };
    report.absorb(std::mem::take(&mut inner.report), "");
    inner.report = report;
    if inner.report.breaks(rule::EXPORT) {
        inner.facts = None;
        inner.artifact = None;
    }
    if let Some(a) = inner.artifact.as_mut() {
        a.alone = true;
    }
    (inner, signers)
}

/// An art id as 128 bits, for sets of many: `art_` and 32 lower-case hex
/// digits.
pub fn art_key(art: &str) -> Option<u128> {
    let hex = art.strip_prefix("art_")?;
    (hex.len() == 32
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then(|| u128::from_str_radix(hex, 16).ok())
    .flatten()
}

/// 64 hex digits as 32 bytes.
pub(crate) fn unhex32(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Treeship 0.32's order: a present `parentId` decides whatever its
    /// value; `invitation_ref`; a legacy endorsement; an art id subject;
    /// a handoff's first artifact.
    #[test]
    fn signed_parent_reads_as_treeship_does() {
        let cases: &[(&str, SignedParent)] = &[
            (
                r#"{"parentId":"art_1","artifacts":["art_2"]}"#,
                SignedParent::Named("art_1"),
            ),
            (r#"{"parent_id":"art_1"}"#, SignedParent::Named("art_1")),
            (
                r#"{"parentId":null,"subject":{"artifactId":"art_2"}}"#,
                SignedParent::None,
            ),
            (
                r#"{"invitation_ref":"art_3"}"#,
                SignedParent::Named("art_3"),
            ),
            (
                r#"{"type":"treeship/endorsement/v1","subject":{"artifactId":"art_2"}}"#,
                SignedParent::LegacyEndorsement,
            ),
            (
                r#"{"subject":{"artifactId":"art_2"}}"#,
                SignedParent::Named("art_2"),
            ),
            (
                r#"{"subject":{"artifactId":"ord_12345"}}"#,
                SignedParent::None,
            ),
            (
                r#"{"artifacts":["art_4","art_5"]}"#,
                SignedParent::Named("art_4"),
            ),
            (r#"{"artifacts":[{"id":"art_4"}]}"#, SignedParent::None),
            (
                r#"{"type":"treeship/session-liveness/v1"}"#,
                SignedParent::None,
            ),
        ];
        for (json, want) in cases {
            let doc = crate::json::parse(json.as_bytes(), &crate::Limits::default()).unwrap();
            assert_eq!(signed_parent(doc.root()), *want, "{json}");
        }
    }

    /// A liveness is filed under the participant it signs; any other
    /// statement under the parent `signed_parent` reads.
    #[test]
    fn a_liveness_is_filed_under_its_participant() {
        let cases: &[(&str, SignedParent)] = &[
            (
                r#"{"type":"treeship/session-liveness/v1","participant_ref":"art_9"}"#,
                SignedParent::Named("art_9"),
            ),
            (
                r#"{"type":"treeship/session-liveness/v1","participant_ref":7}"#,
                SignedParent::None,
            ),
            (
                r#"{"type":"treeship/session-liveness/v1","parentId":"art_1","participant_ref":"art_9"}"#,
                SignedParent::Named("art_1"),
            ),
            (r#"{"participant_ref":"art_9"}"#, SignedParent::None),
        ];
        for (json, want) in cases {
            let doc = crate::json::parse(json.as_bytes(), &crate::Limits::default()).unwrap();
            assert_eq!(filed_parent(doc.root()), *want, "{json}");
        }
    }

    /// The PAE splits back into exactly what made it; anything else is
    /// refused.
    #[test]
    fn pae_splits_back() {
        let pae = crate::envelope::pae("application/x", b"{\"a\": 1} 7 x");
        assert_eq!(
            parse_pae(&pae),
            Some(("application/x".to_owned(), b"{\"a\": 1} 7 x".to_vec()))
        );
        assert_eq!(
            parse_pae(b"DSSEv1 0  0 "),
            Some((String::new(), Vec::new()))
        );
        for bad in [
            &b"DSSEv1 1 t 2 abc"[..],
            b"DSSEv1 1 t 4 abc",
            b"DSSEv1 01 t 3 abc",
            b"DSSEv2 1 t 3 abc",
            b"DSSEv1 2 t 3 abc",
            b"DSSEv1 1 t 3abc",
            b"DSSEv1 -1 t 3 abc",
            b"",
        ] {
            assert_eq!(parse_pae(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_or_an_by_the_first_letter() {
        use crate::report::a_or_an;
        assert_eq!(a_or_an("agent_card.v1"), "an");
        assert_eq!(a_or_an("Endorsement"), "an");
        assert_eq!(a_or_an("verification.packet.v1"), "a");
        assert_eq!(a_or_an(""), "a");
    }
}
