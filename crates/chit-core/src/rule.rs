//! The rule ids every kind shares. A [`crate::Finding`] names the rule it
//! breaks by id; each kind's own ids (the specification's, `S1`, `P3`,
//! `X6`, …) are in that kind's `rule` module (for example
//! [`crate::kinds::run_receipt::rule`]), these are chit's own. Naming a rule
//! by its constant, never by a string literal, makes a misspelt id fail to
//! compile; the string stays the id reports show.

/// The document breaks its kind's JSON Schema (and the rules that are the
/// schema: X1, A1).
pub const SCHEMA: &str = "schema";
/// The input could not be read (not strict JSON, past a limit, no file).
pub const READ: &str = "read";
/// A document (or an envelope's payload, as a warning) of no kind chit
/// knows.
pub const KIND: &str = "kind";
/// A DSSE envelope's shape: its members and their base64.
pub const ENVELOPE: &str = "envelope";
/// Each signature verifies under a trusted key (the `keyid` is only a hint).
pub const SIGNATURE: &str = "signature";
/// The art id a file name carries is the one its envelope's bytes give.
pub const ART: &str = "art";
/// The Treeship receipt statement an envelope carries.
pub const STATEMENT: &str = "statement";
/// (Warning) The payload or a signature is base64 that DSSE allows but
/// Treeship 0.25.1 refuses: it reads only URL-safe base64 without padding.
pub const BASE64URL: &str = "base64url";
/// The signers are trusted and allowed the statement's kind.
pub const TRUST: &str = "trust";
/// At least `--threshold` distinct trusted keys signed.
pub const THRESHOLD: &str = "threshold";
/// One packet stream, one signer: every packet signed, by the same key.
pub const SIGNER: &str = "signer";
/// Under `--require-authorized`, a Zerker Reason certificate whose status is
/// not `authorized`.
pub const AUTHORIZED: &str = "authorized";
/// (Warning) A check across inputs whose members did not all verify: it
/// is `unchecked`, whatever its own findings say.
pub const MEMBERS: &str = "members";
