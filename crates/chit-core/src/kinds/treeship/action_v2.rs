//! Treeship 0.32's mandate receipt (`treeship/action/v2`, payload type
//! `application/vnd.treeship.action.v2+json`): an action signed with the
//! grant it was exercised under (`mandate`) and, optionally, the chain of
//! grants that grant descends from (`mandate.chain`), each signed by its
//! grantor over a pipe-delimited text of its own.
//!
//! Judged as treeship-core 0.32.0's `verify_mandate` and the CLI's holder
//! check judge it, read as serde reads its `ActionStatementV2`: a layer
//! that fails is an error (rule `mandate`, or `grant_chain` for the carried
//! grants); a layer that cannot be checked offline is a warning and leaves
//! the receipt SIGNED, never valid. Revocation is one such layer always:
//! Treeship resolves it from outside the receipt (a revocation source), and
//! chit consults none.

use super::rule;
use super::shape::{object, Field, Has, Ty, RETRY, SUBJECT};
use crate::context::Context;
use crate::doc::Val;
use crate::keys::PublicKey;
use crate::report::Report;
use sha2::{Digest, Sha256};

/// The kind chit reports for a mandate receipt.
pub const KIND: &str = "treeship.action.v2";
/// Its payload type.
pub const PAYLOAD_TYPE: &str = "application/vnd.treeship.action.v2+json";
/// The statement type its payload must carry.
const TYPE: &str = "treeship/action/v2";

const GRANT: &[Field] = &[
    ("grant_id", Ty::Str, Has::Req),
    ("grantor", Ty::Str, Has::Req),
    ("scope", Ty::Strs, Has::Dflt),
    ("audience", Ty::Str, Has::Req),
    ("parent_request_id", Ty::Str, Has::Opt),
    ("delegation_depth", Ty::U32, Has::Dflt),
    ("issued_at", Ty::Str, Has::Req),
    ("expiry", Ty::Str, Has::Req),
    ("max_delegation", Ty::U32, Has::Dflt),
    ("objective_hash", Ty::Str, Has::Opt),
    ("issuer_sig", Ty::Str, Has::Opt),
    ("parent_grant_id", Ty::Str, Has::Opt),
    ("grantee", Ty::Str, Has::Opt),
];

const REVOCATION: &[Field] = &[
    ("path", Ty::Str, Has::Req),
    ("revoked_at", Ty::Str, Has::Opt),
];

const MANDATE: &[Field] = &[
    ("grant_id", Ty::Str, Has::Req),
    ("grantor", Ty::Str, Has::Req),
    ("issuer_sig", Ty::Str, Has::Opt),
    ("objective_hash", Ty::Str, Has::Opt),
    ("scope", Ty::Strs, Has::Dflt),
    ("audience", Ty::Str, Has::Req),
    ("parent_request_id", Ty::Str, Has::Opt),
    ("delegation_depth", Ty::U32, Has::Dflt),
    ("issued_at", Ty::Str, Has::Req),
    ("expiry", Ty::Str, Has::Req),
    ("max_delegation", Ty::U32, Has::Dflt),
    ("revocation", Ty::Obj(REVOCATION), Has::Req),
    ("grantee", Ty::Str, Has::Opt),
    ("chain", Ty::Objs(GRANT), Has::Dflt),
];

const COST: &[Field] = &[("unit", Ty::Str, Has::Req), ("amount", Ty::U64, Has::Req)];

const WITNESS: &[Field] = &[
    ("observer", Ty::Str, Has::Req),
    ("observation", Ty::Str, Has::Req),
    ("observed_at", Ty::Str, Has::Opt),
    ("signature", Ty::Str, Has::Opt),
];

const RESOLUTION: &[Field] = &[
    ("deadline", Ty::Str, Has::Req),
    (
        "on_deadline",
        Ty::OneOf(&["timeout", "escalate", "tombstone", "inherit"]),
        Has::Req,
    ),
];

const EFFECT: &[Field] = &[
    ("input_hash", Ty::Str, Has::Opt),
    ("output_hash", Ty::Str, Has::Opt),
    ("readback", Ty::Str, Has::Opt),
    ("bytes_moved", Ty::U64, Has::Opt),
    ("cost", Ty::Obj(COST), Has::Opt),
    ("side_effects", Ty::Strs, Has::Dflt),
    ("context_snapshot", Ty::Str, Has::Opt),
    (
        "effect_confidence",
        Ty::OneOf(&[
            "verified",
            "partial",
            "ambiguous",
            "unknown",
            "not_verified",
        ]),
        Has::Opt,
    ),
    ("witnesses", Ty::Objs(WITNESS), Has::Dflt),
    (
        "finality",
        Ty::OneOf(&[
            "not_attempted",
            "initiated",
            "finalized",
            "failed",
            "indeterminate",
        ]),
        Has::Opt,
    ),
    ("resolution", Ty::Obj(RESOLUTION), Has::Opt),
];

const RUNTIME: &[Field] = &[
    ("provider", Ty::Str, Has::Opt),
    ("model", Ty::Str, Has::Opt),
    ("tool_schema_hash", Ty::Str, Has::Opt),
    ("system_prompt_hash", Ty::Str, Has::Opt),
];

/// `ActionStatementV2`'s members.
const ACTION: &[Field] = &[
    ("type", Ty::Str, Has::Req),
    ("timestamp", Ty::Str, Has::Req),
    ("actor", Ty::Str, Has::Req),
    ("action", Ty::Str, Has::Req),
    ("audience", Ty::Str, Has::Opt),
    ("subject", Ty::Obj(SUBJECT), Has::Dflt),
    ("parentId", Ty::Str, Has::Opt),
    ("mandate", Ty::Obj(MANDATE), Has::Req),
    ("effect", Ty::Obj(EFFECT), Has::Opt),
    ("runtime", Ty::Obj(RUNTIME), Has::Opt),
    ("meta", Ty::Any, Has::Opt),
    ("retry", Ty::Obj(RETRY), Has::Opt),
    ("idempotency_key", Ty::Str, Has::Opt),
];

/// A grant as carried in a mandate's chain (members already shape-checked).
struct Grant<'d> {
    v: Val<'d>,
}

impl<'d> Grant<'d> {
    fn text(&self, k: &str) -> Option<&'d str> {
        self.v.get(k).and_then(|x| x.as_str())
    }
    fn id(&self) -> &'d str {
        self.text("grant_id").unwrap_or_default()
    }
    fn number(&self, k: &str) -> u64 {
        self.v
            .get(k)
            .and_then(|x| x.number_text())
            .and_then(|t| t.parse().ok())
            .unwrap_or(0)
    }
    fn scope(&self) -> Vec<&'d str> {
        strings(self.v.get("scope"))
    }
    /// A present, non-empty grantee.
    fn grantee(&self) -> Option<&'d str> {
        self.text("grantee").filter(|g| !g.is_empty())
    }

    /// `v3|grant|…`, the text its grantor signs; its id is `grn_` and the
    /// first 16 hex digits of the text's SHA-256.
    fn canonical(&self) -> String {
        let t = |k| self.text(k).unwrap_or_default();
        let mut scope = b"[".to_vec();
        for (i, s) in self.scope().into_iter().enumerate() {
            if i > 0 {
                scope.push(b',');
            }
            crate::canon::write_string(s, &mut scope);
        }
        scope.push(b']');
        format!(
            "v3|grant|{}|sha256:{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
            t("grantor"),
            crate::digest::hex(&Sha256::digest(&scope)),
            t("audience"),
            t("parent_request_id"),
            t("parent_grant_id"),
            t("grantee"),
            self.number("delegation_depth"),
            t("issued_at"),
            t("expiry"),
            self.number("max_delegation"),
            t("objective_hash"),
        )
    }

    fn derived_id(&self) -> String {
        let sum = Sha256::digest(self.canonical().as_bytes());
        format!("grn_{}", crate::digest::hex(&sum[..8]))
    }

    /// The grantor's signature over the canonical text, as Treeship checks
    /// it: the key and signature in base64url without padding, verified
    /// strictly.
    fn signed(&self, sig: &str) -> bool {
        use base64::Engine;
        let e = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let Some(key) = self.text("grantor").and_then(PublicKey::from_base64url) else {
            return false;
        };
        e.decode(sig)
            .is_ok_and(|s| key.verify_strict(self.canonical().as_bytes(), &s))
    }
}

fn strings<'d>(v: Option<Val<'d>>) -> Vec<&'d str> {
    v.map(|v| v.items().filter_map(|i| i.as_str()).collect())
        .unwrap_or_default()
}

/// Checks a mandate receipt's payload; `signers` are the trusted keys that
/// signed its envelope.
pub(crate) fn check(payload: &[u8], signers: &[PublicKey], ctx: &Context, r: &mut Report) {
    let doc = match crate::json::parse(payload, &ctx.limits) {
        Ok(d) => d,
        Err(e) => {
            r.error(
                rule::STATEMENT,
                "/payload",
                format!("the statement is not JSON: {e}"),
            );
            return;
        }
    };
    let root = doc.root();
    if let Err((path, what)) = object(root, ACTION, "/payload") {
        r.error(
            rule::STATEMENT,
            path.clone(),
            format!("{path} {what}, as Treeship reads an action/v2 statement"),
        );
        return;
    }
    let text = |v: Val<'_>, k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_owned);
    let m = root.get("mandate").expect("shape-checked");
    let mut layers = Layers { r, unverified: 0 };
    if !statement_type(root, &mut layers) {
        return;
    }
    let Some(signed_at) = signed_at(root, &mut layers) else {
        return;
    };
    let action = text(root, "action").unwrap_or_default();
    let scope = strings(m.get("scope"));
    scope_layer(&action, &scope, &mut layers);
    audience_layer(root, m, &mut layers);
    window_layer(signed_at, m, &mut layers);
    layers.unverified(format!(
        "revocation could not be checked: chit consults no revocation source (the grant names {})",
        text(m.get("revocation").expect("shape-checked"), "path").unwrap_or_default()
    ));
    chain_layer(m, &scope, &mut layers);
    holder_layer(m, signers, &mut layers);
    if layers.unverified > 0 {
        layers.r.unchecked = true;
    }
}

/// The findings of a mandate's layers: a violation is an error, a layer
/// that could not be checked a warning.
struct Layers<'r> {
    r: &'r mut Report,
    unverified: usize,
}

impl Layers<'_> {
    fn fail(&mut self, path: &str, message: String) {
        self.r
            .error(rule::MANDATE, format!("/payload{path}"), message);
    }
    fn chain(&mut self, message: String) {
        self.r
            .error(rule::GRANT_CHAIN, "/payload/mandate/chain", message);
    }
    fn unverified(&mut self, message: String) {
        self.unverified += 1;
        self.r.warning(rule::MANDATE, "/payload/mandate", message);
    }
}

/// `mandate`: the statement is an action/v2.
fn statement_type(root: Val, l: &mut Layers) -> bool {
    let ty = root
        .get("type")
        .and_then(|t| t.as_str())
        .unwrap_or_default();
    if ty != TYPE {
        l.fail("/type", format!("statement type '{ty}' is not {TYPE}"));
    }
    ty == TYPE
}

/// `mandate`: the instant the grant is judged at, its `timestamp`.
fn signed_at(root: Val, l: &mut Layers) -> Option<u64> {
    let ts = root
        .get("timestamp")
        .and_then(|t| t.as_str())
        .unwrap_or_default();
    let at = seconds(ts);
    if at.is_none() {
        l.fail("/timestamp", format!("timestamp '{ts}' is not RFC 3339"));
    }
    at
}

/// `mandate`: the action is one the scope authorizes.
fn scope_layer(action: &str, scope: &[&str], l: &mut Layers) {
    if scope.is_empty() {
        l.fail(
            "/mandate/scope",
            "mandate.scope is empty: it authorizes no action".to_owned(),
        );
    } else if !scope.iter().any(|e| in_scope(e, action)) {
        l.fail(
            "/action",
            format!("action '{action}' is not in mandate scope {scope:?}"),
        );
    }
}

/// `mandate`: the action's audience is the grant's.
fn audience_layer(root: Val, m: Val, l: &mut Layers) {
    let want = m
        .get("audience")
        .and_then(|a| a.as_str())
        .unwrap_or_default();
    if want.trim().is_empty() {
        l.fail(
            "/mandate/audience",
            "mandate.audience is empty: the grant is not bound to an audience".to_owned(),
        );
        return;
    }
    match root.get("audience").and_then(|a| a.as_str()) {
        Some(a) if a == want => {}
        Some(a) => l.fail(
            "/audience",
            format!("action audience '{a}' does not match mandate audience '{want}'"),
        ),
        None => l.unverified(
            "action recorded no audience; cannot confirm it matched the mandate".to_owned(),
        ),
    }
}

/// `mandate`: signed within `[issued_at, expiry)`.
fn window_layer(signed_at: u64, m: Val, l: &mut Layers) {
    let t = |k| m.get(k).and_then(|x| x.as_str()).unwrap_or_default();
    let (issued_at, expiry) = (t("issued_at"), t("expiry"));
    let (Some(issued), Some(expires)) = (seconds(issued_at), seconds(expiry)) else {
        l.fail(
            "/mandate",
            format!("mandate issued_at '{issued_at}' / expiry '{expiry}' are not both RFC 3339"),
        );
        return;
    };
    if expires <= issued {
        l.fail(
            "/mandate/expiry",
            format!("mandate expiry '{expiry}' is not after issued_at '{issued_at}'"),
        );
    }
    if signed_at < issued {
        l.fail(
            "/timestamp",
            format!("the action was signed before its mandate's issued_at '{issued_at}'"),
        );
    }
    if signed_at >= expires {
        l.fail(
            "/timestamp",
            format!("the action was signed at or after its mandate's expiry '{expiry}'"),
        );
    }
}

/// `grant_chain`, then `mandate`: the carried grants resolve, from the
/// mandate's grant up their signed parent links, into a chain that narrows
/// at every hop, and the mandate claims no more than its grant gave.
fn chain_layer(m: Val, scope: &[&str], l: &mut Layers) {
    let Some(items) = m.get("chain").and_then(|c| c.as_array()) else {
        return;
    };
    let carried: Vec<Grant> = items.map(|v| Grant { v }).collect();
    if carried.is_empty() {
        return;
    }
    let leaf_id = m
        .get("grant_id")
        .and_then(|g| g.as_str())
        .unwrap_or_default();
    let chain = match resolve(&carried, leaf_id) {
        Ok(chain) => chain,
        Err(e) => return l.chain(format!("grant chain does not resolve: {e}")),
    };
    if let Err(e) = attenuates(&chain) {
        return l.chain(format!("grant chain attenuation: {e}"));
    }
    let leaf = chain.last().expect("a resolved chain has a leaf");
    let leaf_scope = leaf.scope();
    if !scope
        .iter()
        .all(|c| leaf_scope.iter().any(|p| covers(p, c)))
    {
        l.fail(
            "/mandate/scope",
            format!(
                "mandate scope {scope:?} exceeds the leaf grant's scope {leaf_scope:?}: the mandate \
                 claims authority the grantor did not give"
            ),
        );
    }
    let audience = m
        .get("audience")
        .and_then(|a| a.as_str())
        .unwrap_or_default();
    let leaf_audience = leaf.text("audience").unwrap_or_default();
    if audience != leaf_audience {
        l.fail(
            "/mandate/audience",
            format!(
                "mandate audience '{audience}' does not match the leaf grant's '{leaf_audience}'"
            ),
        );
    }
    let claimed = m
        .get("grantee")
        .and_then(|g| g.as_str())
        .filter(|g| !g.is_empty());
    if leaf.grantee() != claimed {
        l.fail(
            "/mandate/grantee",
            format!(
                "mandate holder '{}' does not match the leaf grant's grantee '{}'",
                claimed.unwrap_or("(none)"),
                leaf.grantee().unwrap_or("(none: bearer)")
            ),
        );
    }
    let objective = m.get("objective_hash").and_then(|o| o.as_str());
    match (leaf.text("objective_hash"), objective) {
        (Some(g), Some(o)) if g != o => l.fail(
            "/mandate/objective_hash",
            format!("mandate objective '{o}' does not match the leaf grant's '{g}'"),
        ),
        (Some(g), None) => l.fail(
            "/mandate/objective_hash",
            format!(
                "leaf grant is bound to objective '{g}' and the mandate declares none: dropping \
                 the binding removes the constraint"
            ),
        ),
        _ => {}
    }
}

/// `mandate`: a grant that names its holder was exercised by that holder
/// (each trusted key that signed the envelope); one that names none is a
/// bearer grant, which anyone holding its bytes could have spent.
fn holder_layer(m: Val, signers: &[PublicKey], l: &mut Layers) {
    use base64::Engine;
    let Some(holder) = m
        .get("grantee")
        .and_then(|g| g.as_str())
        .filter(|g| !g.is_empty())
    else {
        return l.unverified(
            "grant names no grantee (bearer): any holder of the grant could have produced this"
                .to_owned(),
        );
    };
    if signers.is_empty() {
        return l.unverified(
            "grant names a holder, but the signing key could not be resolved to compare".to_owned(),
        );
    }
    let e = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    for key in signers {
        let signer = e.encode(key.bytes());
        if signer != holder {
            l.fail(
                "/mandate/grantee",
                format!(
                    "receipt was signed by {signer} but the grant names {holder} as its holder"
                ),
            );
        }
    }
}

/// The carried grants ordered root first by their signed parent links,
/// each self-consistent and signed by its grantor; every carried grant on
/// the walk.
fn resolve<'g, 'd>(carried: &'g [Grant<'d>], leaf: &str) -> Result<Vec<&'g Grant<'d>>, String> {
    for g in carried {
        if g.derived_id() != g.id() {
            return Err(format!(
                "grant {} declares an id that does not match its content",
                g.id()
            ));
        }
        match g.text("issuer_sig").filter(|s| !s.is_empty()) {
            None => return Err(format!("grant {} carries no issuer signature", g.id())),
            Some(sig) if !g.signed(sig) => {
                return Err(format!(
                    "grant {} has a signature that does not verify",
                    g.id()
                ))
            }
            Some(_) => {}
        }
    }
    // By id, the last carried of each id (as a map insert keeps it).
    let find = |id: &str| carried.iter().rev().find(|g| g.id() == id);
    let distinct = carried
        .iter()
        .enumerate()
        .filter(|(i, g)| !carried[i + 1..].iter().any(|h| h.id() == g.id()))
        .count();
    let mut walk: Vec<&Grant> = Vec::new();
    let mut cursor = Some(leaf);
    while let Some(id) = cursor {
        if walk.iter().any(|g| g.id() == id) {
            return Err(format!(
                "parent links revisit grant {id}: the chain is a cycle"
            ));
        }
        let Some(g) = find(id) else {
            return Err(if walk.is_empty() {
                format!("the mandate names grant {id}, which is not in the carried chain")
            } else {
                format!("parent grant {id} is missing from the chain")
            });
        };
        walk.push(g);
        cursor = g.text("parent_grant_id");
    }
    if walk.len() != distinct {
        return Err(format!(
            "{} carried grant(s) are not reachable from the mandate",
            distinct - walk.len()
        ));
    }
    walk.reverse();
    Ok(walk)
}

/// Every hop narrows: scope within the parent's, expiry no later, depth
/// one more and within the parent's `max_delegation`, the same audience,
/// issued by the parent's holder, the objective kept.
fn attenuates(chain: &[&Grant]) -> Result<(), String> {
    for (at, g) in chain.iter().enumerate() {
        if seconds(g.text("issued_at").unwrap_or_default()).is_none()
            || seconds(g.text("expiry").unwrap_or_default()).is_none()
        {
            return Err(format!(
                "grant at hop {at} has an unparseable issued_at/expiry"
            ));
        }
    }
    for (i, pair) in chain.windows(2).enumerate() {
        let (parent, child) = (pair[0], pair[1]);
        let hop = format!("hop {i}->{}", i + 1);
        let parent_scope = parent.scope();
        if !child
            .scope()
            .iter()
            .all(|c| parent_scope.iter().any(|p| covers(p, c)))
        {
            return Err(format!("scope widens at {hop}"));
        }
        let expiry = |g: &Grant| seconds(g.text("expiry").unwrap_or_default());
        if expiry(child) > expiry(parent) {
            return Err(format!("expiry extends past the parent at {hop}"));
        }
        let depth = child.number("delegation_depth");
        if depth != parent.number("delegation_depth") + 1 {
            return Err(format!(
                "delegation depth does not increment by one at {hop}"
            ));
        }
        if depth > parent.number("max_delegation") {
            return Err(format!(
                "delegation depth exceeds the parent's max_delegation at {hop}"
            ));
        }
        if child.text("audience") != parent.text("audience") {
            return Err(format!("audience changes at {hop}"));
        }
        let holder = parent.grantee().or(parent.text("grantor"));
        if child.text("grantor") != holder {
            return Err(format!(
                "{hop} is not linked: the child grant was not issued by the key the parent grant \
                 was issued to"
            ));
        }
        match (parent.text("objective_hash"), child.text("objective_hash")) {
            (Some(p), Some(c)) if p != c => {}
            (Some(_), None) => {}
            _ => continue,
        }
        return Err(format!(
            "objective changed or was dropped at {hop}: authority granted for one task cannot be \
             spent on another"
        ));
    }
    Ok(())
}

/// Whether a scope entry authorizes an action: an exact label, or a family
/// `foo.*` (which covers `foo` and everything under `foo.`). A bare `*` is
/// not a wildcard.
fn in_scope(entry: &str, action: &str) -> bool {
    match entry.strip_suffix(".*") {
        Some(family) => action == family || under(action, family),
        None => entry == action,
    }
}

/// Whether a parent scope entry covers a child's: equal, or a family that
/// holds the child (a narrower family included).
fn covers(parent: &str, child: &str) -> bool {
    if parent == child {
        return true;
    }
    let Some(family) = parent.strip_suffix(".*") else {
        return false;
    };
    let core = child.strip_suffix(".*").unwrap_or(child);
    core == family || under(core, family)
}

fn under(name: &str, family: &str) -> bool {
    name.strip_prefix(family)
        .is_some_and(|rest| rest.starts_with('.'))
}

/// Seconds since 1970 of a time in the one form Treeship writes,
/// `YYYY-MM-DDTHH:MM:SSZ`, read as Treeship reads it: each field as Rust
/// reads an integer (a leading `+` allowed), the year from 1970 to 9999,
/// the day 1 to 31 in any month, the second up to 60.
pub fn seconds(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
    {
        return None;
    }
    let field = |r: std::ops::Range<usize>| -> Option<u64> {
        let f = &b[r];
        let digits = f.strip_prefix(b"+").unwrap_or(f);
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(digits).ok()?.parse().ok()
    };
    let (year, month, day) = (field(0..4)?, field(5..7)?, field(8..10)?);
    let (hour, min, sec) = (field(11..13)?, field(14..16)?, field(17..19)?);
    if !(1970..=9999).contains(&year)
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || min > 59
        || sec > 60
    {
        return None;
    }
    let leap = |y: u64| (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
    let mut days: u64 = (1970..year).map(|y| if leap(y) { 366 } else { 365 }).sum();
    let lengths = [
        31,
        if leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    days += lengths[..month as usize - 1].iter().sum::<u64>();
    days += day - 1;
    Some(days * 86_400 + hour * 3600 + min * 60 + sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_treeship_reads_them() {
        assert_eq!(seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(seconds("2026-12-04T21:41:13Z"), Some(1_796_420_473));
        // Day 31 in any month, second 60, a leading plus: as Treeship.
        assert_eq!(
            seconds("2026-02-31T00:00:00Z"),
            seconds("2026-03-03T00:00:00Z")
        );
        assert_eq!(
            seconds("2026-01-01T00:00:60Z"),
            seconds("2026-01-01T00:01:00Z")
        );
        assert_eq!(
            seconds("2026-+1-01T00:00:00Z"),
            seconds("2026-01-01T00:00:00Z")
        );
        for bad in [
            "2026-01-01T00:00:00.5Z",
            "2026-01-01T00:00:00+00:00",
            "1969-12-31T23:59:59Z",
            "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z",
            "2026-01-32T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01 00:00:00Z",
            "2026-01-01T00:00:-1Z",
            "2026-01-01T00:00:+Z ",
        ] {
            assert_eq!(seconds(bad), None, "{bad}");
        }
    }

    #[test]
    fn scopes_match_as_treeships_do() {
        assert!(in_scope("payments.*", "payments"));
        assert!(in_scope("payments.*", "payments.charge"));
        assert!(!in_scope("payments.*", "paymentsx.charge"));
        assert!(!in_scope("*", "payments.charge"));
        assert!(in_scope("a.b", "a.b"));
        assert!(covers("payments.*", "payments.refund.*"));
        assert!(covers("payments.*", "payments.*"));
        assert!(!covers("payments.charge", "payments.*"));
        assert!(!covers("payments.*", "pay.*"));
    }
}
