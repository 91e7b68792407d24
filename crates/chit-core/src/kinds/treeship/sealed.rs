//! What a Treeship 0.32 package seals beside its receipt, so that it
//! verifies from its own bytes as `treeship package verify` does: the
//! session's signed close record (`record.json`, a `session.v1` receipt
//! signed over the digest of `receipt.json`), the public key of every
//! signer (`keys.json`, `treeship/package-keys/v1`) and every sealed
//! artifact's envelope (`artifacts/<art id>.json`).
//!
//! Each envelope is checked as any envelope: under the trust file, else
//! under the keys the package names (a warning says no trust file pins
//! them). Each artifact copy must carry the art id its file is named by,
//! and each signature must verify under the key `keys.json` names for its
//! `keyid`, as Treeship checks it. The envelopes then stand among the
//! inputs, for the session check across inputs, under `PKG/FILE`.

use super::records::SignedParent;
use super::rule;
use crate::context::Context;
use crate::envelope::Envelope;
use crate::facts::{ArtifactFacts, Entry, Facts, Listed, SessionFacts};
use crate::keys::PublicKey;
use crate::report::Report;
use crate::report::Status;
use crate::trust::Trust;
use std::collections::BTreeMap;

/// The schema `keys.json` names.
pub const KEYS_SCHEMA: &str = "treeship/package-keys/v1";

/// A package's sealed files, read by the caller (`None`: absent).
#[derive(Default)]
pub struct Sealed<'a> {
    pub record: Option<Result<&'a [u8], String>>,
    pub keys: Option<Result<&'a [u8], String>>,
    /// `redaction.json`: the producer's signed statement of what it
    /// withholds.
    pub redaction: Option<Result<&'a [u8], String>>,
    /// `artifacts/*.json`, each file's name and bytes (or why not).
    pub artifacts: Vec<(String, Result<&'a [u8], String>)>,
}

impl Sealed<'_> {
    fn is_empty(&self) -> bool {
        self.record.is_none()
            && self.keys.is_none()
            && self.redaction.is_none()
            && self.artifacts.is_empty()
    }
}

/// One envelope a package carries, checked, named by its file in the
/// package, with what binding the package reads of it.
struct Carried {
    at: String,
    status: Status,
    artifact: ArtifactFacts,
    facts: Option<Facts>,
    /// The parent its statement signs, by Treeship 0.32's rule.
    link: Link,
    /// What binding the package's close record reads of it.
    close: CloseFacts,
}

/// What a package's close record is bound by: an action's name and the
/// session its `meta` names, the art id its statement names as subject, a
/// `session.close`'s record key, and the key id of its first signature.
#[derive(Default)]
struct CloseFacts {
    action: Option<Box<str>>,
    session: Option<Box<str>>,
    subject: Option<Box<str>>,
    /// `meta.record_key`: its `key_id` and `public_key`.
    record_key: Option<(Box<str>, Box<str>)>,
    keyid: Option<Box<str>>,
}

/// The parent a signed statement names, owned (see
/// [`SignedParent`]).
enum Link {
    Named(Box<str>),
    LegacyEndorsement,
    None,
}

/// The payload type of a Treeship action.
const ACTION: &str = "application/vnd.treeship.action.v1+json";

/// Checks the sealed files, their findings in `r` (the package's report),
/// against the package's receipt (`session`: what it lists, its digest).
/// Returns each envelope checked, to stand among the inputs.
pub(crate) fn check(
    s: &Sealed,
    session: Option<&SessionFacts>,
    ctx: &Context,
    r: &mut Report,
) -> (Vec<Entry>, Option<Redaction>) {
    if s.is_empty() {
        return (Vec::new(), None);
    }
    let keys = s.keys.as_ref().and_then(|k| package_keys(k, ctx, r));
    if s.keys.is_none() {
        // As in Treeship, which checks each sealed signature under the key
        // the package names: without keys.json, none holds.
        r.error(
            rule::PACKAGE,
            "",
            "the package seals envelopes (record.json, artifacts/) but carries no keys.json naming \
             the keys that signed them",
        );
    }
    let Some(carried) = envelopes(s, keys.as_ref(), ctx, r) else {
        return (Vec::new(), None);
    };
    let redaction = session.and_then(|f| redaction(s, f, keys.as_ref(), ctx, r));
    if let Some(f) = session {
        close_record_binds(f, s, &carried, keys.as_ref(), redaction.as_ref(), r);
        every_listed_is_sealed(&f.artifacts, &carried, redaction.as_ref(), r);
        chain_linkage(&f.artifacts, &carried, redaction.as_ref(), r);
    }
    let entries = carried
        .into_iter()
        .map(|c| Entry {
            at: format!("/{}", c.at),
            status: c.status,
            facts: c.facts,
            artifact: Some(c.artifact),
        })
        .collect();
    (entries, redaction)
}

/// A redaction the producer signed for this package (`redaction.json`, a
/// Treeship receipt statement of kind `redaction.v1`): the artifacts it
/// withholds (each with the parent the producer asserts for it) and the
/// receipt digests before and after.
pub(crate) struct Redaction {
    pub withheld: Vec<(String, Option<String>)>,
    pub source_receipt_digest: Option<String>,
    pub receipt_digest: Option<String>,
}

/// `redaction.json`, honoured as Treeship honours it: signed by a key the
/// package names (`keys.json`), of kind `redaction.v1`, and bound to this
/// package (its session and Merkle root). One that is not is said in a
/// warning and excuses nothing.
fn redaction(
    s: &Sealed,
    f: &SessionFacts,
    keys: Option<&BTreeMap<String, PublicKey>>,
    ctx: &Context,
    r: &mut Report,
) -> Option<Redaction> {
    let bytes = s.redaction.as_ref()?;
    let mut ignored = |why: &str| {
        r.warning(
            rule::PACKAGE,
            "/redaction.json",
            format!("redaction.json is not honoured: {why}; it excuses no missing envelope"),
        );
        None
    };
    let Ok(bytes) = bytes else {
        return ignored("it could not be read");
    };
    let Ok(doc) = crate::json::parse(bytes, &ctx.limits) else {
        return ignored("it is not JSON");
    };
    let Some(env) = Envelope::read_val(doc.root(), &mut Report::default()) else {
        return ignored("it is not an envelope");
    };
    let pae = env.pae();
    let signed = env.signatures.iter().any(|sig| {
        sig.keyid
            .as_deref()
            .and_then(|k| keys.and_then(|keys| keys.get(k)))
            .is_some_and(|k| k.verify_strict(&pae, &sig.sig))
    });
    if !signed {
        return ignored("no key the package names (keys.json) signed it");
    }
    let Ok(statement) = crate::json::parse(&env.payload, &ctx.limits) else {
        return ignored("its statement is not JSON");
    };
    let st = statement.root();
    if st.get("kind").and_then(|k| k.as_str()) != Some("redaction.v1") {
        return ignored("it is not a redaction.v1 statement");
    }
    let Some(p) = st
        .get("payload")
        .filter(|p| super::shape::object(*p, REDACTION, "").is_ok())
    else {
        return ignored("its payload is not a redaction (session_id, merkle_root, withheld)");
    };
    let text = |v: crate::Val, k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_owned);
    if text(p, "session_id").as_deref() != Some(f.session_id.as_str()) {
        return ignored("it names another session");
    }
    if f.merkle_root.is_none() || text(p, "merkle_root") != f.merkle_root {
        return ignored("it names another Merkle root");
    }
    let withheld = p
        .get("withheld")
        .map(|w| {
            w.items()
                .map(|i| {
                    (
                        text(i, "artifact_id").unwrap_or_default(),
                        text(i, "parent_id"),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    Some(Redaction {
        withheld,
        source_receipt_digest: text(p, "source_receipt_digest"),
        receipt_digest: text(p, "receipt_digest"),
    })
}

/// `RedactionPayload`, as Treeship reads it.
const REDACTION: &[super::shape::Field] = {
    use super::shape::{Has, Ty};
    const WITHHELD: &[super::shape::Field] = &[
        ("artifact_id", Ty::Str, Has::Req),
        ("parent_id", Ty::Str, Has::Opt),
    ];
    &[
        ("session_id", Ty::Str, Has::Req),
        ("merkle_root", Ty::Str, Has::Req),
        ("withheld", Ty::Objs(WITHHELD), Has::Req),
        ("source_receipt_digest", Ty::Str, Has::Opt),
        ("receipt_digest", Ty::Str, Has::Opt),
        ("reason", Ty::Str, Has::Opt),
        ("redacted_at", Ty::Str, Has::Opt),
    ]
};

/// Each sealed envelope, checked (under the trust file, else under the
/// keys the package names); `None` when there is neither.
fn envelopes(
    s: &Sealed,
    keys: Option<&BTreeMap<String, PublicKey>>,
    ctx: &Context,
    r: &mut Report,
) -> Option<Vec<Carried>> {
    let own;
    let ctx = match (ctx.trust, keys) {
        (Some(_), _) => *ctx,
        (None, Some(keys)) => {
            own = Trust::named(keys.iter().map(|(id, k)| (id.clone(), *k)));
            // Signatures good under keys nobody pinned: who signed is not
            // known, so the package is not valid (--allow-unchecked accepts
            // signatures alone).
            r.unchecked = true;
            r.warning(
                rule::PACKAGE,
                "",
                "the sealed envelopes were checked under the keys the package names (keys.json), \
                 which no trust file pins: give --trust to know who signed",
            );
            Context {
                trust: Some(&own),
                ..*ctx
            }
        }
        (None, None) => {
            // Said above (no keys.json), or keys.json is unreadable.
            return None;
        }
    };
    let mut carried = Vec::new();
    let files = s
        .record
        .iter()
        .map(|b| ("record.json".to_owned(), None, b))
        .chain(s.artifacts.iter().map(|(name, b)| {
            let art = name.strip_suffix(".json");
            (format!("artifacts/{name}"), art, b)
        }));
    for (file, art, bytes) in files {
        let Some(bytes) = readable(&file, bytes, r) else {
            continue;
        };
        if let Some(c) = envelope(&file, art, bytes, keys, &ctx, r) {
            carried.push(c);
        }
    }
    Some(carried)
}

/// `keys.json`: key id to public key, or its problems in `r`.
fn package_keys(
    bytes: &Result<&[u8], String>,
    ctx: &Context,
    r: &mut Report,
) -> Option<BTreeMap<String, PublicKey>> {
    let mut bad = |why: String| {
        r.error(rule::PACKAGE, "", format!("keys.json {why}"));
        None
    };
    let bytes = match bytes {
        Ok(b) => b,
        Err(why) => return bad(format!("could not be read: {why}")),
    };
    let doc = match crate::json::parse(bytes, &ctx.limits) {
        Ok(d) => d,
        Err(e) => return bad(format!("is not JSON: {e}")),
    };
    let root = doc.root();
    if root.get("schema").and_then(|s| s.as_str()) != Some(KEYS_SCHEMA) {
        return bad(format!("does not name its schema, {KEYS_SCHEMA}"));
    }
    let Some(keys) = root.get("keys").filter(|k| k.is_object()) else {
        return bad("has no keys object (key id to ed25519:<base64url>)".to_owned());
    };
    let mut out = BTreeMap::new();
    for (id, v) in keys.members() {
        match v.as_str().map(PublicKey::parse) {
            Some(Ok(k)) => {
                out.insert(id.to_owned(), k);
            }
            _ => return bad(format!("names no Ed25519 public key for {id}")),
        }
    }
    Some(out)
}

/// One sealed envelope: checked as any envelope, filed under its own art
/// id, each signature by the key `keys.json` names for it.
fn envelope(
    file: &str,
    art: Option<&str>,
    bytes: &[u8],
    keys: Option<&BTreeMap<String, PublicKey>>,
    ctx: &Context,
    r: &mut Report,
) -> Option<Carried> {
    let doc = match crate::json::parse(bytes, &ctx.limits) {
        Ok(d) => d,
        Err(e) => {
            r.error(rule::PACKAGE, "", format!("{file} is not JSON: {e}"));
            return None;
        }
    };
    let ctx = Context {
        expected_art: art,
        ..*ctx
    };
    let checked = super::statement::carried(doc.root(), &ctx);
    for f in &checked.report.errors {
        r.error(f.rule, "", format!("{file}: {}", f.message));
    }
    let env = Envelope::read_val(doc.root(), &mut Report::default())?;
    if let Some(keys) = keys {
        named_keys_signed(file, &env, keys, r);
    }
    let mut artifact = checked.artifact?;
    // Its place is the package's chain (chain_linkage, below), not a
    // chain among the inputs: the first entry's parent may lie in an
    // earlier session.
    artifact.parent = None;
    let statement = crate::json::parse(&env.payload, &ctx.limits).ok();
    let statement = statement.as_ref().map(|s| s.root());
    let link = match statement.map(super::records::signed_parent) {
        Some(SignedParent::Named(p)) => Link::Named(p.into()),
        Some(SignedParent::LegacyEndorsement) => Link::LegacyEndorsement,
        _ => Link::None,
    };
    Some(Carried {
        at: file.to_owned(),
        status: checked.report.status(),
        artifact,
        facts: checked.facts,
        link,
        close: close_facts(&env, statement),
    })
}

/// What binding the close record reads of one sealed envelope.
fn close_facts(env: &Envelope, statement: Option<crate::Val>) -> CloseFacts {
    let text = |v: Option<crate::Val>| v.and_then(|x| x.as_str()).map(Box::from);
    let meta = statement.and_then(|s| s.get("meta"));
    let action = (env.payload_type == ACTION)
        .then(|| text(statement.and_then(|s| s.get("action"))))
        .flatten();
    let record_key = meta
        .and_then(|m| m.get("record_key"))
        .and_then(|k| Some((text(k.get("key_id"))?, text(k.get("public_key"))?)));
    CloseFacts {
        action,
        session: text(meta.and_then(|m| m.get("session_id"))),
        subject: text(
            statement
                .and_then(|s| s.get("subject"))
                .and_then(|s| s.get("artifactId")),
        ),
        record_key,
        keyid: env
            .signatures
            .first()
            .and_then(|s| s.keyid.as_deref())
            .map(Box::from),
    }
}

/// Each signature verifies under the key `keys.json` names for its keyid.
fn named_keys_signed(
    file: &str,
    env: &Envelope,
    keys: &BTreeMap<String, PublicKey>,
    r: &mut Report,
) {
    // A participant's signatures cover a text of its own, checked by the
    // participant step (its host's under the same keys).
    if env.payload_type == crate::envelope::TREESHIP_PARTICIPANT {
        return;
    }
    let pae = env.pae();
    for (i, s) in env.signatures.iter().enumerate() {
        let keyid = s.keyid.as_deref().unwrap_or("");
        match keys.get(keyid) {
            None => r.error(
                rule::PACKAGE,
                "",
                format!("{file}: signature {i} names key id {keyid:?}, which keys.json does not list"),
            ),
            Some(k) if !k.verify_strict(&pae, &s.sig) => r.error(
                rule::PACKAGE,
                "",
                format!(
                    "{file}: signature {i} does not verify under the key keys.json names for {keyid} ({})",
                    k.treeship()
                ),
            ),
            Some(_) => {}
        }
    }
}

/// Every artifact the receipt lists has its sealed envelope, with the
/// digest the receipt gives.
fn every_listed_is_sealed(
    listed: &[Listed],
    carried: &[Carried],
    redaction: Option<&Redaction>,
    r: &mut Report,
) {
    let withheld =
        |id: &str| redaction.is_some_and(|red| red.withheld.iter().any(|(w, _)| w == id));
    for l in listed {
        let copy = carried
            .iter()
            .find(|c| *c.artifact.art_id == *l.artifact_id && c.at.starts_with("artifacts/"));
        let absent = || {
            let file = format!("artifacts/{}.json", l.artifact_id);
            !carried.iter().any(|c| c.at == file)
        };
        match copy {
            None if withheld(&l.artifact_id) && absent() => {
                // Accounted for, as Treeship accounts for it, but not
                // checked: the package is then not valid, only its own
                // rules hold (--allow-unchecked lets it pass).
                r.partial = true;
                r.warning(
                    rule::PACKAGE,
                    "",
                    format!(
                        "{} is withheld under the producer's signed redaction: the Merkle tree commits \
                         to it, its envelope is not here, so it is not checked",
                        l.artifact_id
                    ),
                )
            }
            None => r.error(
                rule::PACKAGE,
                "",
                format!(
                    "the receipt lists {}, but the package seals no envelope of it that verifies \
                     (artifacts/{}.json)",
                    l.artifact_id, l.artifact_id
                ),
            ),
            Some(c) => {
                if let Some(d) = l.digest.as_deref().filter(|d| *d != c.artifact.digest()) {
                    r.error(
                        rule::PACKAGE,
                        "",
                        format!(
                            "the receipt gives {} the digest {d}, but its sealed envelope's is {}",
                            l.artifact_id,
                            c.artifact.digest()
                        ),
                    );
                }
            }
        }
    }
}

/// Treeship's `chain_linkage`: each chained artifact signs the one before
/// it as parent (the first one's parent may lie in an earlier session, so
/// it is not judged). An endorsement made by 0.31.9 or earlier signs none:
/// its place is the producer's claim, a warning.
fn chain_linkage(
    listed: &[Listed],
    carried: &[Carried],
    redaction: Option<&Redaction>,
    r: &mut Report,
) {
    let chained: Vec<&Listed> = listed.iter().filter(|l| !l.unchained).collect();
    let link = |id: &str| {
        carried
            .iter()
            .find(|c| *c.artifact.art_id == *id && c.at.starts_with("artifacts/"))
            .map(|c| &c.link)
    };
    let withheld = |id: &str| {
        redaction.and_then(|red| red.withheld.iter().find(|(w, _)| w == id).map(|(_, p)| p))
    };
    let mut legacy = Vec::new();
    let mut asserted = Vec::new();
    for w in chained.windows(2) {
        let (prev, cur) = (&w[0].artifact_id, &w[1].artifact_id);
        if link(cur).is_none() {
            // A step withheld under the redaction: the edge out of it is
            // the producer's word, the envelope that signs it being withheld.
            match withheld(cur) {
                Some(Some(p)) if p == prev => asserted.push(cur.as_str()),
                Some(Some(p)) => r.error(
                    rule::CHAIN_LINKAGE,
                    "",
                    format!("{cur} is withheld and asserts parent {p} but follows {prev}"),
                ),
                Some(None) => r.error(
                    rule::CHAIN_LINKAGE,
                    "",
                    format!("{cur} is withheld and the redaction asserts no parent for it, but it follows {prev}"),
                ),
                None => {}
            }
            continue;
        }
        match link(cur) {
            Some(Link::Named(p)) if **p == **prev => {}
            Some(Link::Named(p)) => r.error(
                rule::CHAIN_LINKAGE,
                "",
                format!("{cur} names parent {p} but follows {prev}"),
            ),
            Some(Link::LegacyEndorsement) => legacy.push(cur.as_str()),
            // No copy: said by every_listed_is_sealed.
            None => {}
            Some(Link::None) => r.error(
                rule::CHAIN_LINKAGE,
                "",
                format!("{cur} follows {prev}, but its signed statement names no parent"),
            ),
        }
    }
    if !asserted.is_empty() {
        r.warning(
            rule::CHAIN_LINKAGE,
            "",
            format!(
                "edges across withheld steps are the producer's assertion, not a signed link: {}",
                asserted.join(", ")
            ),
        );
    }
    if !legacy.is_empty() {
        r.warning(
            rule::CHAIN_LINKAGE,
            "",
            format!(
                "endorsements made by Treeship 0.31.9 or earlier sign no parent, so their place in \
                 the chain is the producer's claim only: {}",
                legacy.join(", ")
            ),
        );
    }
}

/// `record.json`, the session's close record, is what seals the package,
/// bound as Treeship binds it (`receipt_binding`): a `session.v1`
/// statement naming this session and the digest of this `receipt.json`,
/// whose subject is the one sealed, chained `session.close` of this
/// session, signed by the key that signed the chain's root
/// `session.start`, and whose own signer is the close's or the record key
/// the close names. A package that seals envelopes without one fails:
/// nothing signed would cover the sealed set.
fn close_record_binds(
    f: &SessionFacts,
    sealed: &Sealed,
    carried: &[Carried],
    keys: Option<&BTreeMap<String, PublicKey>>,
    redaction: Option<&Redaction>,
    r: &mut Report,
) {
    if sealed.artifacts.is_empty() && sealed.keys.is_none() {
        // A package from before 0.31.2: its record is among the inputs.
        return;
    }
    let fail = |r: &mut Report, why: String| r.error(rule::PACKAGE, "", why);
    if sealed.record.is_none() {
        return fail(
            r,
            "the package seals envelopes but carries no close record (record.json), so nothing \
             signed covers the sealed set: an artifact could be added or the receipt edited"
                .to_owned(),
        );
    }
    let Some(record) = carried.iter().find(|c| c.at == "record.json") else {
        // Its own errors are already said.
        return;
    };
    let Some(claim) = record.artifact.session.as_deref() else {
        return fail(
            r,
            "record.json is not a session.v1 close record (a Treeship receipt statement of kind \
             session.v1 naming session_id and receipt_digest)"
                .to_owned(),
        );
    };
    if claim.session_id != f.session_id {
        return fail(
            r,
            format!(
                "the close record names session {}, but this receipt is {}",
                claim.session_id, f.session_id
            ),
        );
    }
    match (&claim.receipt_digest, &f.receipt_digest) {
        (Some(signed), Some(actual))
            if signed != actual
                && redaction.is_some_and(|red| {
                    red.source_receipt_digest.as_ref() == Some(signed)
                        && red.receipt_digest.as_ref() == Some(actual)
                }) =>
        {
            // The receipt sealed at close is not here to check.
            r.partial = true;
            r.warning(
                rule::PACKAGE,
                "",
                format!(
                    "the close record binds the receipt as sealed ({signed}); this package carries a \
                     redacted receipt ({actual}) the producer signed a redaction for: a view derived \
                     from what was sealed"
                ),
            );
        }
        (Some(signed), Some(actual)) if signed != actual => {
            return fail(r, format!(
                "the close record signs receipt digest {signed}, but receipt.json digests to {actual}: \
                 the receipt was changed after it was sealed"
            ))
        }
        (None, _) => return fail(r, "the close record names no receipt_digest".to_owned()),
        _ => {}
    }
    let Some(subject) = record.close.subject.as_deref() else {
        return fail(
            r,
            "the close record names no subject: it must name the sealed session.close action"
                .to_owned(),
        );
    };
    let copies = || carried.iter().filter(|c| c.at.starts_with("artifacts/"));
    let of_session = |c: &&Carried| c.close.session.as_deref() == Some(f.session_id.as_str());
    let is = |c: &&Carried, action: &str| c.close.action.as_deref() == Some(action);
    let closes: Vec<&Carried> = copies()
        .filter(|c| is(c, "session.close") && of_session(c))
        .collect();
    if closes.len() > 1 {
        let ids: Vec<&str> = closes.iter().map(|c| &*c.artifact.art_id).collect();
        return fail(
            r,
            format!(
                "the package seals {} session.close actions for session {}: {}",
                closes.len(),
                f.session_id,
                ids.join(", ")
            ),
        );
    }
    let Some(close) = copies().find(|c| *c.artifact.art_id == *subject && is(c, "session.close"))
    else {
        return fail(r, format!(
            "the close record names {subject}, which is not a sealed session.close action in this package"
        ));
    };
    if !of_session(&close) {
        return fail(
            r,
            format!(
                "the session.close {subject} the record names does not close session {}",
                f.session_id
            ),
        );
    }
    let chained = |id: &str| {
        f.artifacts
            .iter()
            .any(|l| l.artifact_id == id && !l.unchained)
    };
    if !chained(subject) {
        return fail(
            r,
            format!(
            "session.close {subject} is not on the session's chain (unlisted, or sealed unchained)"
        ),
        );
    }
    let root_id = f
        .artifacts
        .iter()
        .find(|l| !l.unchained)
        .map(|l| l.artifact_id.as_str());
    let root = root_id.and_then(|id| {
        copies().find(|c| *c.artifact.art_id == *id && is(c, "session.start") && of_session(c))
    });
    let Some(root) = root else {
        return fail(
            r,
            format!(
                "the chain's first artifact ({}) is not a session.start for session {}",
                root_id.unwrap_or("none"),
                f.session_id
            ),
        );
    };
    if root.close.keyid != close.close.keyid {
        return fail(r, format!(
            "session.close {subject} is signed by {}, but the session.start that roots the chain ({}) \
             is signed by {}: the close is not the producer's",
            close.close.keyid.as_deref().unwrap_or("no key id"),
            root.artifact.art_id,
            root.close.keyid.as_deref().unwrap_or("no key id")
        ));
    }
    if record.close.keyid == close.close.keyid {
        return;
    }
    // Signed by another key: the record key the close names, and no other.
    let signer = record.close.keyid.as_deref().unwrap_or("");
    let vouched = close.close.record_key.as_ref().is_some_and(|(id, public)| {
        **id == *signer
            && PublicKey::parse(public).is_ok_and(|k| keys.and_then(|m| m.get(signer)) == Some(&k))
    });
    if !vouched {
        fail(r, format!(
            "record.json is signed by {signer}, which is neither the signer of session.close {subject} \
             nor the record key that session.close names"
        ));
    }
}

/// A package file's bytes, or why it could not be read (an error in `r`).
pub(crate) fn readable<'b>(
    file: &str,
    bytes: &'b Result<&[u8], String>,
    r: &mut Report,
) -> Option<&'b [u8]> {
    match bytes {
        Ok(b) => Some(b),
        Err(why) => {
            r.error(
                rule::PACKAGE,
                "",
                format!("{file} could not be read: {why}"),
            );
            None
        }
    }
}

/// The package's approval evidence ([`super::approvals`]), held against
/// its sealed copies (`carried`: each checked; `listed`: the art ids the
/// receipt lists), the keys `keys.json` names and the
/// `approval_chain_anchor` of its close record, when that verified.
pub(crate) fn approvals(
    p: &super::session::Package,
    carried: &[Entry],
    listed: &[&str],
    ctx: &Context,
    r: &mut Report,
) {
    let passed = |at: &str| {
        carried
            .iter()
            .any(|e| e.at == at && e.status != Status::Invalid)
    };
    let arts: Vec<super::approvals::SealedArt> = p
        .sealed
        .artifacts
        .iter()
        .filter_map(|(name, bytes)| {
            let id = name.strip_suffix(".json")?;
            Some(super::approvals::SealedArt {
                id,
                listed: listed.contains(&id),
                bytes: bytes.as_ref().ok().copied(),
                verified: passed(&format!("/artifacts/{name}")),
            })
        })
        .collect();
    let keys = p
        .sealed
        .keys
        .as_ref()
        .and_then(|k| package_keys(k, ctx, &mut Report::default()));
    let anchor = p
        .sealed
        .record
        .as_ref()
        .and_then(|b| b.as_ref().ok())
        .filter(|_| passed("/record.json"))
        .and_then(|b| chain_anchor(b, ctx));
    super::approvals::check(
        &p.approvals,
        &arts,
        keys.as_ref(),
        anchor.as_deref(),
        ctx,
        r,
    );
}

/// The `approval_chain_anchor` a close record's statement names.
fn chain_anchor(bytes: &[u8], ctx: &Context) -> Option<String> {
    let doc = crate::json::parse(bytes, &ctx.limits).ok()?;
    let env = Envelope::read_val(doc.root(), &mut Report::default())?;
    let statement = crate::json::parse(&env.payload, &ctx.limits).ok()?;
    let anchor = statement
        .root()
        .get("payload")?
        .get("approval_chain_anchor")?
        .as_str()?
        .to_owned();
    Some(anchor)
}
