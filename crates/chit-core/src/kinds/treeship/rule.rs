//! Every rule id a Treeship input is checked by: its envelope and
//! statement's (chit's own ids, shared with every signed input), a store's
//! records, index, chains and exports, and a session package's.

pub use crate::rule::{ART, BASE64URL, ENVELOPE, SIGNATURE, STATEMENT};

/// A store record's fields agree with its envelope.
pub const RECORD: &str = "record";
/// A store's `index.json` lists exactly the records beside it.
pub const INDEX: &str = "index";
/// Every parent an artifact names is among the inputs, verified.
pub const CHAIN: &str = "chain";
/// A `treeship receipt export`'s triple is what it claims.
pub const EXPORT: &str = "export";

/// A session package: its Merkle section, proofs, timeline and files.
pub const MERKLE_ROOT: &str = "merkle_root";
pub const LEAF_COUNT: &str = "leaf_count";
pub const INCLUSION: &str = "inclusion";
pub const TIMELINE: &str = "timeline_order";
pub const PACKAGE: &str = "package";
/// A 0.32 package's chained artifacts each sign the one before as parent.
pub const CHAIN_LINKAGE: &str = "chain_linkage";
/// Across inputs: the signed session record and the listed artifacts.
pub const SESSION: &str = "session";
/// An action/v2's mandate: scope, audience, window, holder, and what it
/// claims of its grant.
pub const MANDATE: &str = "mandate";
/// An action/v2's carried grants: they resolve and narrow at every hop.
pub const GRANT_CHAIN: &str = "grant_chain";
/// A package's approval evidence (`approvals/`), each rule as Treeship
/// names its row; `approvals` for a file that does not read.
pub const APPROVALS: &str = "approvals";
pub const REPLAY_PACKAGE_LOCAL: &str = "replay-package-local";
pub const REPLAY_INCLUDED_CHECKPOINT: &str = "replay-included-checkpoint";
pub const APPROVAL_USE_RECORD_DIGEST: &str = "approval-use-record-digest";
pub const APPROVAL_USE_NONCE_BINDING: &str = "approval-use-nonce-binding";
pub const APPROVAL_USE_ACTION_BINDING: &str = "approval-use-action-binding";
pub const APPROVAL_USE_CHAIN_CONTINUITY: &str = "approval-use-chain-continuity";
pub const APPROVAL_EVIDENCE: &str = "approval_evidence";
pub const APPROVAL_USE_LIMIT: &str = "approval-use-limit";
pub const REPLAY_HUB_ORG: &str = "replay-hub-org";
/// A journal's hash chain: each record's digest, link and the head.
pub const JOURNAL: &str = "journal";
