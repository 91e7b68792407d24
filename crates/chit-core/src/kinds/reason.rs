//! `zerker.reason.authorization.v1`: being written.

use crate::doc::Val;
use crate::report::Report;

pub const KIND: &str = "zerker.reason.authorization.v1";
pub const BUNDLE: &str = "zerker.reason.authorization-bundle.v1";
pub const REQUEST: &str = "zerker.reason.action.v1";

/// What a check may use beyond the certificate.
#[derive(Clone, Copy, Default)]
pub struct Context<'a> {
    /// The `zerker.reason.action.v1` request (`--request`): A5.
    pub request: Option<Val<'a>>,
    /// The concrete call `{tool, arguments}` about to run (`--call`): A6.
    pub call: Option<Val<'a>>,
}

pub fn check(v: Val) -> Report {
    check_with(v, Context::default())
}

pub fn check_with(_v: Val, _ctx: Context) -> Report {
    Report::new(KIND)
}

/// The certificate's status (a bundle's certificate's), if it has one.
pub fn status<'d>(v: Val<'d>) -> Option<&'d str> {
    let cert = if v.get("schema").and_then(|s| s.as_str()) == Some(BUNDLE) {
        v.get("certificate")?
    } else {
        v
    };
    cert.get("status")?.as_str()
}
