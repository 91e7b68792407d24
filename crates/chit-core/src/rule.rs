//! The rule ids every kind shares. Each kind's own ids are constants in its
//! module's `rule` (the string is always the specification's id).

/// The input is not JSON chit can read (exit status 2).
pub const READ: &str = "read";
/// The document breaks its kind's JSON Schema.
pub const SCHEMA: &str = "schema";
/// No kind chit knows could be told.
pub const KIND: &str = "kind";
