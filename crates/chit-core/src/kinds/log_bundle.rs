//! Log bundles (`chit.log.bundle.v1`, [`chit_log::bundle`]): each proven
//! logged by the log whose key the [`Context`] gives, then its entry
//! checked as any input is. A file may hold several (a numeric lineage
//! bound and its receipt): they are one verdict, their entries' findings
//! under `/N`, and the order among them is proven: a lineage receipt's
//! bound must be logged before it (here for a bound in the same file,
//! across inputs for one in another file, [`LineageFacts`]).
//!
//! The steps, each a rule id below:
//!
//! 1. [`rule::LOG_BUNDLE`]: the file holds bundles and nothing else
//!    (strictly read);
//! 2. [`rule::LOG_CHECKPOINT`]: each checkpoint is signed by the log's key
//!    and names the bundle's origin;
//! 3. [`rule::LOG_WITNESSES`]: enough of the given witnesses cosigned it;
//! 4. [`rule::LOG_INCLUSION`]: the entry is at its index in that tree;
//! 5. the entry, checked as any input ([`crate::check()`]);
//! 6. [`rule::LINEAGE_ORDER`]: each lineage receipt's bound came first.

use crate::checked::Checked;
use crate::context::Context;
pub use crate::context::LogKeys;
use crate::doc::Val;
use crate::envelope::Envelope;
use crate::facts::Facts;
pub use crate::facts::{BundleFacts, Entry, LineageFacts};
use crate::json::Limits;
use crate::report::Report;
use chit_log::bundle::{Bundle, BundleError};

/// The kind a file of bundles is reported as (one bundle takes its
/// entry's kind).
pub const KIND: &str = "log bundle";

/// The rule ids a log bundle is checked by.
pub mod rule {
    /// The file is one bundle or a list of them, and nothing else.
    pub const LOG_BUNDLE: &str = "log-bundle";
    /// The checkpoint is the log's, signed by its key.
    pub const LOG_CHECKPOINT: &str = "log-checkpoint";
    /// Enough of the given witnesses cosigned the checkpoint.
    pub const LOG_WITNESSES: &str = "log-witnesses";
    /// The entry is in the tree the checkpoint signs, at its index.
    pub const LOG_INCLUSION: &str = "log-inclusion";
    /// A numeric lineage receipt's bound was logged before it.
    pub const LINEAGE_ORDER: &str = "lineage-order";
}

/// The rule a proof step's refusal breaks (a bundle's or a tlog-proof's).
fn rule_of(e: &BundleError) -> &'static str {
    match e {
        BundleError::Read(_) => rule::LOG_BUNDLE,
        BundleError::Checkpoint(_) => rule::LOG_CHECKPOINT,
        BundleError::Witnesses(_) => rule::LOG_WITNESSES,
        BundleError::Inclusion(_) => rule::LOG_INCLUSION,
    }
}

/// Holds a checked input to its C2SP tlog-proof: the proof's checkpoint
/// is signed by a log of the policy ([`rule::LOG_CHECKPOINT`]), its
/// cosignatures meet the quorum ([`rule::LOG_WITNESSES`]), and the
/// input's exact bytes are the leaf at the proof's index
/// ([`rule::LOG_INCLUSION`]). Without a policy nothing can be proven: an
/// error, never a pass. A proven numeric lineage bound or receipt leaves
/// its log index for the order across inputs ([`rule::LINEAGE_ORDER`]), as
/// a bundle of it would.
pub(crate) fn prove(
    checked: &mut Checked,
    input: &[u8],
    proof: &chit_log::proof::TlogProof,
    keys: Option<&LogKeys>,
    limits: &Limits,
) {
    let Some(keys) = keys else {
        checked.report.error(
            rule::LOG_CHECKPOINT,
            "",
            "a tlog-proof: give the trust policy to prove it with (chit verify --policy FILE, or \
             --log-key KEY)",
        );
        return;
    };
    let leaf = chit_log::tree::leaf_hash(input);
    if let Err(e) = proof.verify(&leaf, &keys.policy) {
        checked
            .report
            .error(rule_of(&e), "", format!("the tlog-proof: {e}"));
        return;
    }
    let mut lineage = LineageFacts::default();
    match lineage_role(input, checked.report.kind, limits) {
        Role::Bound(d) => lineage.bounds.push((d, proof.index)),
        Role::Receipt(Some(d)) => lineage.waiting.push((d, proof.index)),
        Role::Receipt(None) => {
            checked.report.error(
                rule::LINEAGE_ORDER,
                "",
                "a numeric lineage receipt whose bound_ref.bound_digest_sha256 could not be \
                 read: its order cannot be proven",
            );
            return;
        }
        Role::Neither => return,
    }
    let entry = Entry {
        at: String::new(),
        status: checked.status(),
        facts: checked.facts.take(),
        artifact: checked.artifact.take(),
    };
    checked.facts = Some(Facts::Bundle(Box::new(BundleFacts {
        entries: vec![entry],
        lineage,
    })));
}

/// Whether a document read already is a log bundle, or a list that
/// starts with one (by its `type`).
pub fn looks_like_bundle(root: Val) -> bool {
    let first = root.as_array().and_then(|mut i| i.next()).unwrap_or(root);
    first.get("type").and_then(|t| t.as_str()) == Some(chit_log::bundle::BUNDLE_TYPE)
}

/// A file's bundles, read strictly (a duplicate key, a lone surrogate,
/// too deep a nesting refused, as for every input): one, or a list.
pub fn read_bundles(bytes: &[u8], limits: &Limits) -> Result<Vec<Bundle>, BundleError> {
    crate::json::parse(bytes, limits).map_err(chit_log::bundle::unreadable)?;
    let v: serde_json::Value =
        serde_json::from_slice(bytes).map_err(chit_log::bundle::unreadable)?;
    chit_log::bundle::bundles_of(&v)
}

/// Checks a file of log bundles against `keys`: the steps above. `ctx`
/// is what each entry is checked under, by `check_entry` (the core's one
/// check: an entry is any input).
pub(crate) fn check(
    bytes: &[u8],
    keys: &LogKeys,
    ctx: &Context,
    check_entry: impl Fn(&[u8], &Context) -> Result<Checked, crate::checked::Unreadable>,
) -> Checked {
    let entry_ctx = Context {
        log: None,
        bundles_only: false,
        proof: None,
        ..*ctx
    };
    let mut report = Report::new(KIND);
    let mut facts = BundleFacts::default();
    let bundles = match read_bundles(bytes, &ctx.limits) {
        Ok(b) => b,
        Err(e) => {
            report.error(
                rule_of(&e),
                "",
                format!("{e}; with --log-key every input is a log bundle (chit log bundle INDEX)"),
            );
            return Checked::of(report);
        }
    };
    let many = bundles.len() > 1;
    // Bounds logged (digest, index), receipts logged (their bound's
    // digest, index, where in the file).
    let mut bounds: Vec<(String, u64)> = Vec::new();
    let mut receipts: Vec<(String, u64, String)> = Vec::new();
    for (i, b) in bundles.iter().enumerate() {
        let at = if many { format!("/{i}") } else { String::new() };
        if let Err(e) = b.verify(&keys.policy) {
            report.error(rule_of(&e), at, e.to_string());
            continue;
        }
        let here = format!("{at}/entry");
        match check_entry(&b.entry, &entry_ctx) {
            Err(e) => report.error(
                crate::rule::READ,
                here,
                format!("log entry {}: {e}", b.index),
            ),
            Ok(checked) => {
                if !many {
                    report.kind = checked.report.kind;
                }
                match lineage_role(&b.entry, checked.report.kind, &ctx.limits) {
                    Role::Bound(d) => bounds.push((d, b.index)),
                    Role::Receipt(Some(d)) => receipts.push((d, b.index, here.clone())),
                    Role::Receipt(None) => report.error(
                        rule::LINEAGE_ORDER,
                        here.clone(),
                        "a numeric lineage receipt whose bound_ref.bound_digest_sha256 could not \
                         be read: its order cannot be proven",
                    ),
                    Role::Neither => {}
                }
                facts.entries.push(Entry {
                    at,
                    status: checked.status(),
                    facts: checked.facts,
                    artifact: checked.artifact,
                });
                report.absorb(checked.report, &here);
            }
        }
    }
    facts.lineage.waiting = order_in_file(&bounds, &receipts, &mut report);
    facts.lineage.bounds = bounds;
    Checked {
        facts: Some(Facts::Bundle(Box::new(facts))),
        ..Checked::of(report)
    }
}

/// What a log entry is to the lineage order.
#[derive(Debug)]
enum Role {
    /// A committed bound, with its digest.
    Bound(String),
    /// A numeric lineage receipt, with its bound's digest where it can be read.
    Receipt(Option<String>),
    Neither,
}

/// A log entry's place in the lineage order: the document itself, or the
/// payload of its envelope (a receipt logged signed is held to its bound
/// just the same).
fn lineage_role(entry: &[u8], kind: &str, limits: &Limits) -> Role {
    let is_receipt = kind == super::numeric_lineage::KIND;
    let of = |v: Val| {
        if let Some(d) = super::lineage_bound::digest_of(v) {
            Role::Bound(d)
        } else if is_receipt {
            Role::Receipt(
                v.get("signed_body")
                    .and_then(|s| s.get("bound_ref"))
                    .and_then(|r| r.get("bound_digest_sha256"))
                    .and_then(|d| d.as_str())
                    .map(str::to_string),
            )
        } else {
            Role::Neither
        }
    };
    let unread = if is_receipt {
        Role::Receipt(None)
    } else {
        Role::Neither
    };
    let Ok(doc) = crate::json::parse(entry, limits) else {
        return unread;
    };
    if !crate::envelope::looks_like_envelope(&doc) {
        return of(doc.root());
    }
    let Some(env) = Envelope::read(&doc, &mut Report::new(crate::kind::ENVELOPE)) else {
        return unread;
    };
    let Ok(statement) = crate::json::parse(&env.payload, limits) else {
        return unread;
    };
    match statement.root().get("payload") {
        Some(p) => of(p),
        None => unread,
    }
}

/// The lineage order within one file: each receipt whose bound is in the
/// same file must come after it. The receipts whose bound is not are
/// returned (their bound's digest and their index), for the check across
/// files ([`across_files`]).
fn order_in_file(
    bounds: &[(String, u64)],
    receipts: &[(String, u64, String)],
    r: &mut Report,
) -> Vec<(String, u64)> {
    let mut waiting = Vec::new();
    for (digest, index, at) in receipts {
        match first_logged(bounds.iter(), digest) {
            None => waiting.push((digest.clone(), *index)),
            Some(b) if b >= *index => r.error(
                rule::LINEAGE_ORDER,
                at.clone(),
                format!("the bound was logged at index {b}, after the receipt (index {index})"),
            ),
            Some(_) => {}
        }
    }
    waiting
}

/// Where the bound of `digest` was first logged among `bounds`.
fn first_logged<'a>(bounds: impl Iterator<Item = &'a (String, u64)>, digest: &str) -> Option<u64> {
    bounds.filter(|(d, _)| d == digest).map(|(_, i)| *i).min()
}

/// The lineage order of a receipt whose bound was in another file:
/// `bounds` are every bound logged among the inputs. Returns the report
/// and a few words on what was found.
pub(crate) fn across_files(digest: &str, index: u64, bounds: &[(String, u64)]) -> (Report, String) {
    let mut r = Report::new(super::numeric_lineage::KIND);
    let detail = match first_logged(bounds.iter(), digest) {
        None => {
            r.error(
                rule::LINEAGE_ORDER,
                "",
                format!(
                    "the receipt was measured against bound {digest}, whose log bundle is not \
                     among the inputs: give it too (chit log bundle --store STORE BOUND_INDEX \
                     {index})"
                ),
            );
            "bound not given".to_string()
        }
        Some(b) if b >= index => {
            r.error(
                rule::LINEAGE_ORDER,
                "",
                format!("the bound was logged at index {b}, after the receipt (index {index})"),
            );
            format!("bound at {b}")
        }
        Some(b) => format!("bound at {b}, receipt at {index}"),
    };
    (r, detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document signed into a one-line envelope, as `chit sign` makes it.
    fn signed(kind: &str, payload: serde_json::Value) -> Vec<u8> {
        let statement = serde_json::json!({
            "type": "treeship/receipt/v1",
            "timestamp": "2026-11-30T09:00:00Z",
            "system": "system://test",
            "kind": kind,
            "payload": payload,
        });
        crate::envelope::Envelope::sign(
            crate::envelope::TREESHIP_RECEIPT,
            serde_json::to_vec(&statement).unwrap(),
            &crate::keys::SecretKey::from_seed(&[5; 32]),
        )
        .to_json()
        .into_bytes()
    }

    #[test]
    fn a_lineage_receipt_or_bound_in_an_envelope_keeps_its_place_in_the_order() {
        let receipt: serde_json::Value =
            serde_json::from_str(include_str!("../../../../examples/lineage/receipt.json"))
                .unwrap();
        let digest = receipt["signed_body"]["bound_ref"]["bound_digest_sha256"]
            .as_str()
            .unwrap()
            .to_string();
        let limits = Limits::default();
        let lineage = super::super::numeric_lineage::KIND;
        let bare = serde_json::to_vec(&receipt).unwrap();
        let env = signed(lineage, receipt.clone());
        for entry in [&bare, &env] {
            match lineage_role(entry, lineage, &limits) {
                Role::Receipt(Some(d)) => assert_eq!(d, digest),
                other => panic!("not read as a receipt: {other:?}"),
            }
        }
        // Its bound, bare and signed.
        let bound_kind = super::super::lineage_bound::KIND;
        let mut bound = receipt["signed_body"]["bound_ref"].clone();
        bound["schema"] = bound_kind.into();
        let env = signed(bound_kind, bound.clone());
        for entry in [serde_json::to_vec(&bound).unwrap(), env] {
            match lineage_role(&entry, bound_kind, &limits) {
                Role::Bound(d) => assert_eq!(d, digest),
                other => panic!("not read as a bound: {other:?}"),
            }
        }
        // A receipt whose bound cannot be read: no order, not a pass.
        assert!(matches!(
            lineage_role(b"{\"signed_body\":{}}", lineage, &limits),
            Role::Receipt(None)
        ));
    }

    /// Within a file, a receipt after its bound passes, one before it
    /// fails, one whose bound is elsewhere waits for the check across
    /// files, which finds it, or finds it late, or not at all.
    #[test]
    fn the_lineage_order_is_proven_within_and_across_files() {
        let bounds = vec![("b1".to_string(), 3)];
        let receipts = vec![
            ("b1".to_string(), 5, "/1/entry".to_string()),
            ("b1".to_string(), 2, "/2/entry".to_string()),
            ("b2".to_string(), 7, "/3/entry".to_string()),
        ];
        let mut r = Report::new(KIND);
        let waiting = order_in_file(&bounds, &receipts, &mut r);
        assert_eq!(waiting, vec![("b2".to_string(), 7)]);
        assert_eq!(r.errors.len(), 1);
        assert_eq!(r.errors[0].path, "/2/entry");
        assert!(r.breaks(rule::LINEAGE_ORDER));
        let all = vec![("b2".to_string(), 4), ("b2".to_string(), 9)];
        assert!(across_files("b2", 7, &all).0.valid());
        assert!(!across_files("b2", 3, &all).0.valid());
        assert!(!across_files("b3", 7, &all).0.valid());
    }
}
