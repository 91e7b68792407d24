//! The rule ids this kind reports, as constants so that a misspelt id fails
//! to compile. Each string is the spec's id for the rule. L1 (the schema)
//! is reported as `schema`, as for every kind; L12 is the schema's constant
//! `boundary` text.

pub const L1: &str = "L1";
pub const L2: &str = "L2";
pub const L3: &str = "L3";
pub const L4: &str = "L4";
pub const L5: &str = "L5";
pub const L6: &str = "L6";
pub const L7: &str = "L7";
pub const L8: &str = "L8";
pub const L9: &str = "L9";
pub const L10: &str = "L10";
pub const L11: &str = "L11";
pub const L12: &str = "L12";
pub const L13: &str = "L13";
pub const L14: &str = "L14";
pub const L15: &str = "L15";
/// chit's own (a warning; the spec has no id for it): with a transcript
/// that records the server's own occupancy, a level where the server
/// never reported as many requests running as the level induced.
pub const L16: &str = "L16";
