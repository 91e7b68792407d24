//! Treeship: what it writes, read as Treeship reads it. A signed
//! statement in a DSSE envelope ([`statement`]); a store's records, its
//! index, chains of artifacts by their parents and `treeship receipt
//! export` output ([`records`]); a session package ([`session`]) and what
//! a 0.32 package seals beside its receipt ([`sealed`]); an export bundle
//! ([`export_bundle`]); an action under a mandate ([`action_v2`]). Every
//! rule id they report is in [`rule`].

pub mod action_v2;
pub mod approvals;
pub mod command;
pub mod export_bundle;
pub mod journal;
pub mod participant;
pub mod records;
pub mod rule;
pub mod sealed;
pub mod session;
pub(crate) mod shape;
pub mod statement;
