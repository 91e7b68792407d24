//! The receipt kinds chit knows: one module each, holding that kind's rules
//! and nothing else.

pub mod executor_packet;
pub mod intent;
pub mod lineage_bound;
pub mod log_bundle;
pub mod numeric_lineage;
pub mod packet;
pub mod reason;
pub mod recompute;
pub mod run_receipt;
pub mod treeship;

use crate::context::Context;
use crate::doc::{Doc, Val};
use crate::keys::PublicKey;
pub use crate::kind::Kind;
use crate::report::Report;

impl Kind {
    /// The kind `name` names: chit's name for it, or the name Treeship
    /// registers it under as a statement's kind.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.is_named(name))
    }

    /// The kind `name` names, or a message naming every kind chit knows.
    pub fn parse(name: &str) -> Result<Kind, String> {
        Kind::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
            format!("unknown kind '{name}'; chit knows: {}", known.join(", "))
        })
    }

    /// The kind a document declares by its shape, if any.
    pub fn detect(doc: &Doc) -> Option<Kind> {
        Kind::detect_val(doc.root())
    }

    /// The kind a value declares by its shape, if any.
    pub fn detect_val(v: Val) -> Option<Kind> {
        if v.get("receiptVersion").is_some() {
            return Some(Kind::RunReceipt);
        }
        if v.get("signed_body")
            .and_then(|b| b.get("receipt_type"))
            .and_then(|t| t.as_str())
            == Some(numeric_lineage::KIND)
        {
            return Some(Kind::Lineage);
        }
        match v.get("schema").and_then(|s| s.as_str()) {
            Some(packet::KIND) => Some(Kind::Packet),
            Some(recompute::KIND) => Some(Kind::Recompute),
            Some(reason::KIND | reason::BUNDLE) => Some(Kind::ReasonAuthorization),
            Some(executor_packet::KIND) => Some(Kind::LatticePacket),
            Some(lineage_bound::KIND) => Some(Kind::LineageBound),
            _ => None,
        }
    }

    /// Checks `doc` under this kind's schema and rules.
    pub fn check(self, doc: &Doc) -> Report {
        self.check_val(doc.root())
    }

    /// Checks one value (a whole document, or a payload inside one).
    pub fn check_val(self, v: Val) -> Report {
        match self {
            Kind::RunReceipt => run_receipt::check(v),
            Kind::Packet => packet::check(v),
            Kind::Recompute => recompute::check(v),
            Kind::Lineage => numeric_lineage::check(v),
            Kind::LineageBound => lineage_bound::check(v),
            Kind::LatticePacket => executor_packet::check(v),
            Kind::ReasonAuthorization => reason::check(v),
        }
    }

    /// A document, or a statement's payload, as this kind, with everything
    /// the context adds (the check's step 4): a payload in an envelope gets
    /// exactly the checks the same document gets bare. Returns the
    /// findings, and the document's own trusted signer where its kind
    /// carries a signature of its own (a numeric lineage receipt).
    pub fn check_in(self, v: Val, ctx: &Context) -> (Report, Option<PublicKey>) {
        match self {
            // Its key may resolve through the trust file; its transcript adds L13-L15.
            Kind::Lineage => numeric_lineage::check_signed(v, *ctx),
            Kind::ReasonAuthorization => (reason::check_in(v, ctx), None),
            k => (k.check_val(v), None),
        }
    }

    /// The digest `doc` should carry, where this kind has one.
    pub fn digest(self, doc: &Doc) -> Option<String> {
        match self {
            Kind::RunReceipt => run_receipt::digest(doc.root()),
            Kind::Packet
            | Kind::Recompute
            | Kind::Lineage
            | Kind::LineageBound
            | Kind::LatticePacket
            | Kind::ReasonAuthorization => None,
        }
    }
}

pub use crate::kind::ENVELOPE;

/// Every kind a report on one input can carry, so every kind a log entry
/// can be labelled with: the receipt kinds ([`Kind::ALL`]), an envelope
/// of an unknown payload, a Treeship session receipt, a Treeship store's
/// index and a Treeship export.
pub const LABELS: &[&str] = &[
    run_receipt::KIND,
    packet::KIND,
    recompute::KIND,
    numeric_lineage::KIND,
    lineage_bound::KIND,
    executor_packet::KIND,
    reason::KIND,
    ENVELOPE,
    treeship::session::KIND,
    treeship::records::INDEX_KIND,
    treeship::records::EXPORT_KIND,
    treeship::export_bundle::KIND,
    treeship::command::KIND,
    treeship::journal::KIND,
];

/// Whether a report on one input can carry the kind `name`.
pub fn is_label(name: &str) -> bool {
    LABELS.contains(&name)
}

/// The report for a document whose kind cannot be told: what it is where
/// chit can say (a Zerker Reason request or call, which a certificate is
/// checked against, not receipts themselves), else how to name its kind.
pub fn unknown_kind(v: Val) -> Report {
    let mut r = Report::new("");
    let message = if v.get("schema").and_then(|s| s.as_str()) == Some(reason::REQUEST) {
        format!(
            "a Zerker Reason request ({}), not a receipt: give it to --request when you check \
             the certificate made for it",
            reason::REQUEST
        )
    } else if v.is_object()
        && v.len() == 2
        && v.get("tool").and_then(|t| t.as_str()).is_some()
        && v.get("arguments").is_some()
    {
        "a concrete call ({tool, arguments}), not a receipt: give it to --call when you check \
         the certificate for it"
            .to_string()
    } else {
        let known: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        format!(
            "not a receipt chit recognises (a run receipt has receiptVersion, a packet or recompute result its schema, a numeric lineage receipt its signed_body.receipt_type); name its kind with --kind ({})",
            known.join(", ")
        )
    };
    r.error(crate::rule::KIND, "", message);
    r
}
