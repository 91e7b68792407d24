//! `zerker.reason.authorization.v1`: a certificate binding a proposed tool
//! call (`action`) under a `mission` to a reasoning result, alone or in a
//! `zerker.reason.authorization-bundle.v1` with its request. A1-A4 hold for
//! a certificate alone; A5 needs the request (`zerker.reason.action.v1`,
//! given or bundled); A6 the concrete call an enforcement point is about to
//! make.
//!
//! Reason's own digests (`request_digest`, the mission's and the action's)
//! are `serde_json` output over Rust types, not a portable canonical form,
//! so they are not recomputed here.

use crate::canon::{self, Profile};
use crate::doc::Val;
use crate::json::short_quoted;
use crate::report::{pointer_token, Report};
use crate::schema;

pub const KIND: &str = "zerker.reason.authorization.v1";
pub const BUNDLE: &str = "zerker.reason.authorization-bundle.v1";
pub const REQUEST: &str = "zerker.reason.action.v1";

/// The rule ids of a Zerker Reason certificate. A1, the schema, is reported
/// under [`SCHEMA`](crate::rule::SCHEMA) as for every kind.
pub mod rule {
    pub use crate::rule::{AUTHORIZED, SCHEMA};

    /// The schema (reported as [`SCHEMA`]).
    pub const A1: &str = "A1";
    /// The status is the one the reasoning status maps to.
    pub const A2: &str = "A2";
    /// `proof`, `disproof` and `conflict` are present exactly when the
    /// reasoning status calls for them.
    pub const A3: &str = "A3";
    /// (Warning) Insufficient evidence says what is missing.
    pub const A4: &str = "A4";
    /// The mission id, action id, tool, arguments and effects are the
    /// request's.
    pub const A5: &str = "A5";
    /// The call about to be made is the certified action.
    pub const A6: &str = "A6";
}

/// What a check may use beyond the certificate: the one
/// [`crate::check::Context`] every kind is given. This kind reads its
/// `request` (`zerker.reason.action.v1`, A5) and `call` (the concrete call
/// `{tool, arguments}` about to run, A6).
pub use crate::check::Context;

/// The certificate's status and the reasoning status it must carry (A2).
const STATUSES: &[(&str, &str)] = &[
    ("authorized", "proved"),
    ("denied", "disproved"),
    ("conflicted", "inconsistent"),
    ("insufficient_evidence", "unknown"),
];

/// The members a bundle holds, each exactly once and nothing else.
const BUNDLE_KEYS: &[&str] = &["schema", "request", "certificate"];

/// What A5 compares: the certificate's pointer, the request's path to the
/// same value, and its name in messages.
const BOUND: &[(&str, [&str; 2], &str)] = &[
    ("/mission/id", ["mission", "id"], "mission id"),
    ("/action/id", ["action", "id"], "action id"),
    ("/action/tool", ["action", "tool"], "tool"),
    ("/action/arguments", ["action", "arguments"], "arguments"),
    ("/action/effects", ["action", "effects"], "effects"),
];

pub fn check(v: Val) -> Report {
    check_with(v, Context::default())
}

/// A bundle (its `schema` is [`BUNDLE`]): its shape, then its certificate
/// (A1-A4, and A6 with a call) with paths under `/certificate`, then A5
/// against the bundled request and against `ctx.request` where given.
/// Anything else is checked as a certificate: A1-A4, A5 with
/// `ctx.request`, A6 with `ctx.call`.
pub fn check_with(v: Val, ctx: Context) -> Report {
    let mut r = Report::new(KIND);
    if text(v, "schema") == Some(BUNDLE) {
        check_bundle(v, ctx, &mut r);
    } else {
        check_certificate(v, None, ctx.request, ctx.call, &mut r);
    }
    r
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

fn text<'d>(v: Val<'d>, key: &str) -> Option<&'d str> {
    v.get(key).and_then(|x| x.as_str())
}

fn at<'d>(v: Val<'d>, path: &[&str]) -> Option<Val<'d>> {
    path.iter().try_fold(v, |x, k| x.get(k))
}

fn jcs(v: Val) -> Vec<u8> {
    canon::to_vec(v, Profile::Jcs)
}

/// A value for a one-line message: its canonical JSON, cut short.
fn shown(v: Option<Val>) -> String {
    const MAX: usize = 60;
    let Some(v) = v else {
        return "nothing".into();
    };
    let bytes = jcs(v);
    let s = String::from_utf8_lossy(&bytes);
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.into_owned(),
    }
}

/// The certificate: A1, and only if the schema holds, A2-A6. `bundled` is
/// the request its bundle holds (already known to be one); `given`, the
/// request from outside the document (checked to be one here).
fn check_certificate(
    cert: Val,
    bundled: Option<Val>,
    given: Option<Val>,
    call: Option<Val>,
    r: &mut Report,
) {
    if !a1_schema(cert, r) {
        return;
    }
    a2_status(cert, r);
    a3_evidence(cert, r);
    a4_missing(cert, r);
    if let Some(req) = bundled {
        a5_request(cert, req, r);
    }
    if let Some(req) = given {
        if is_request(req, "", "the request given", r) {
            a5_request(cert, req, r);
        }
    }
    if let Some(call) = call {
        a6_call(cert, call, r);
    }
}

/// A bundle: exactly `schema`, `request` and `certificate`; a request
/// whose schema is [`REQUEST`]; then its certificate, held to the bundled
/// request and to `ctx.request` (paths under `/certificate`).
fn check_bundle(v: Val, ctx: Context, r: &mut Report) {
    bundle_shape(v, r);
    let bundled = v
        .get("request")
        .filter(|&req| is_request(req, "/request", "the bundled request", r));
    let Some(cert) = v.get("certificate") else {
        return;
    };
    let mut inner = Report::new(KIND);
    check_certificate(cert, bundled, ctx.request, ctx.call, &mut inner);
    r.absorb(inner, "/certificate");
}

/// The bundle's members (reported as `schema`): each of [`BUNDLE_KEYS`],
/// and nothing else.
fn bundle_shape(v: Val, r: &mut Report) {
    for (key, _) in v.members() {
        if !BUNDLE_KEYS.contains(&key) {
            r.error(
                rule::SCHEMA,
                format!("/{}", pointer_token(key)),
                format!(
                    "a bundle holds only schema, request and certificate, not {}",
                    short_quoted(key)
                ),
            );
        }
    }
    for key in BUNDLE_KEYS {
        if v.get(key).is_none() {
            r.error(
                rule::SCHEMA,
                "",
                format!("the bundle has no {key}: a bundle holds schema, request and certificate"),
            );
        }
    }
}

/// Whether `req` is a request: an object whose `schema` is [`REQUEST`]. If
/// not, an A5 error at `path` (where `what` sits) says so.
fn is_request(req: Val, path: &str, what: &str, r: &mut Report) -> bool {
    if req.is_object() && text(req, "schema") == Some(REQUEST) {
        return true;
    }
    let got = if req.is_object() {
        format!("its schema is {}", shown(req.get("schema")))
    } else {
        format!("it is {}", shown(Some(req)))
    };
    r.error(
        rule::A5,
        path,
        format!(
            "{what} is not a {REQUEST} object ({got}), so the certificate cannot be held to it"
        ),
    );
    false
}

/// A1: the schema, reported under the rule id `schema` as for every kind.
fn a1_schema(cert: Val, r: &mut Report) -> bool {
    schema::REASON_AUTHORIZATION.check(cert, r)
}

/// A2: the certificate's status is the one its reasoning status maps to.
fn a2_status(cert: Val, r: &mut Report) {
    let status = text(cert, "status").unwrap_or("");
    let reasoning = cert
        .get("reasoning")
        .and_then(|x| text(x, "status"))
        .unwrap_or("");
    let Some(&(want, _)) = STATUSES.iter().find(|(_, rs)| *rs == reasoning) else {
        return;
    };
    if status != want {
        let paired = STATUSES
            .iter()
            .find(|(s, _)| *s == status)
            .map_or("", |(_, rs)| *rs);
        r.error(
            rule::A2,
            "/status",
            format!(
                "status {status} pairs with reasoning status {paired}, but the reasoning is {reasoning}: its status should be {want}"
            ),
        );
    }
}

/// A3: `proof` is present exactly when the reasoning is `proved` or
/// `inconsistent`, `disproof` exactly when `disproved` or `inconsistent`,
/// `conflict` exactly when `inconsistent`.
fn a3_evidence(cert: Val, r: &mut Report) {
    let Some(reasoning) = cert.get("reasoning") else {
        return;
    };
    let status = text(reasoning, "status").unwrap_or("");
    let rules: [(&str, &[&str]); 3] = [
        ("proof", &["proved", "inconsistent"]),
        ("disproof", &["disproved", "inconsistent"]),
        ("conflict", &["inconsistent"]),
    ];
    for (field, when) in rules {
        let want = when.contains(&status);
        let has = reasoning.get(field).is_some_and(|x| !x.is_null());
        let path = format!("/reasoning/{field}");
        if want && !has {
            r.error(
                rule::A3,
                path,
                format!("reasoning status {status} needs a {field}, but {field} is null"),
            );
        } else if has && !want {
            r.error(
                rule::A3,
                path,
                format!(
                    "reasoning status {status} carries no {field}: {field} must be null (only {} has one)",
                    when.join(" or ")
                ),
            );
        }
    }
}

/// A4 (a warning): insufficient evidence should say what is missing.
fn a4_missing(cert: Val, r: &mut Report) {
    if text(cert, "status") != Some("insufficient_evidence") {
        return;
    }
    let missing = cert.get("reasoning").and_then(|x| x.get("missing"));
    if missing.is_some_and(|m| m.is_empty()) {
        r.warning(
            rule::A4,
            "/reasoning/missing",
            "insufficient_evidence with an empty missing list: it should name the evidence that is missing",
        );
    }
}

/// A5: the mission id, action id, tool, arguments and effects are the
/// request's (compared as RFC 8785 bytes, so key order does not matter).
fn a5_request(cert: Val, req: Val, r: &mut Report) {
    for &(pointer, path, label) in BOUND {
        let here = cert.get(path[0]).and_then(|x| x.get(path[1]));
        let Some(here) = here else { continue };
        let Some(there) = at(req, &path) else {
            r.error(
                rule::A5,
                pointer,
                format!(
                    "the request has no {}.{} to compare the certificate's {label} with",
                    path[0], path[1]
                ),
            );
            continue;
        };
        if jcs(here) == jcs(there) {
            if let Some(suffix) = inexact(here).or_else(|| inexact(there)) {
                r.error(
                    rule::A5,
                    format!("{pointer}{suffix}"),
                    format!("{label}: {INEXACT}"),
                );
            }
            continue;
        }
        let (suffix, a, b) = first_difference(here, there, 0);
        let message = if suffix.is_empty() {
            format!("{label} is {}, but the request's is {}", shown(a), shown(b))
        } else {
            format!(
                "{label} differ from the request's at {suffix}: {} here, {} in the request",
                shown(a),
                shown(b)
            )
        };
        r.error(rule::A5, format!("{pointer}{suffix}"), message);
    }
}

/// A6: the call about to be made is the certified action: the same tool
/// and the same arguments (as RFC 8785 bytes). A call that is not an
/// object with a string `tool` and an object `arguments` never passes.
fn a6_call(cert: Val, call: Val, r: &mut Report) {
    let tool = call.get("tool").and_then(|t| t.as_str());
    let args = call.get("arguments").filter(|a| a.is_object());
    let (true, Some(tool), Some(args)) = (call.is_object(), tool, args) else {
        return r.error(
            rule::A6,
            "/action",
            format!(
                "the call must be an object with a string tool and an object arguments, not {}",
                shown(Some(call))
            ),
        );
    };
    let Some(action) = cert.get("action") else {
        return;
    };
    let certified = text(action, "tool").unwrap_or("");
    if tool != certified {
        r.error(
            rule::A6,
            "/action/tool",
            format!(
                "the call is to tool {}, but the certificate authorizes {}",
                short_quoted(tool),
                short_quoted(certified)
            ),
        );
    }
    let Some(here) = action.get("arguments") else {
        return;
    };
    if jcs(here) == jcs(args) {
        if let Some(suffix) = inexact(here).or_else(|| inexact(args)) {
            r.error(
                rule::A6,
                format!("/action/arguments{suffix}"),
                format!("the call's arguments: {INEXACT}"),
            );
        }
    } else {
        let (suffix, a, b) = first_difference(here, args, 0);
        r.error(
            rule::A6,
            format!("/action/arguments{suffix}"),
            format!(
                "the call's arguments differ from the certified ones at {}: {} certified, {} in the call",
                if suffix.is_empty() { "/" } else { &suffix },
                shown(a),
                shown(b)
            ),
        );
    }
}

/// Why a whole number past 2^53 - 1 fails A5 and A6.
const INEXACT: &str = "a whole number past 2^53 - 1 is read as the nearest double, which several spellings share (9007199254740993 reads as 9007199254740992), so the certified and the given values cannot be told equal; write such a number as a string";

/// Where `v` holds a whole number past 2^53 - 1 (a JSON Pointer relative
/// to `v`), if anywhere: such a number is read as a double that other
/// numbers round to as well, so equal canonical bytes do not show the same
/// number was written (Reason, reading it as an `i64` or `u64`, would see
/// two).
fn inexact(v: Val) -> Option<String> {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if let Some(x) = v.as_f64() {
        return (x.fract() == 0.0 && x.abs() > MAX_SAFE).then(String::new);
    }
    if let Some(items) = v.as_array() {
        return items
            .enumerate()
            .find_map(|(i, x)| inexact(x).map(|rest| format!("/{i}{rest}")));
    }
    v.members()
        .find_map(|(k, x)| inexact(x).map(|rest| format!("/{}{rest}", pointer_token(k))))
}

/// Where two values that differ first differ: a JSON Pointer relative to
/// them, and the two values there (`None` where one side has none).
/// Descends through objects (keys in byte order) and arrays, at most a
/// few dozen levels.
fn first_difference<'d>(
    a: Val<'d>,
    b: Val<'d>,
    depth: usize,
) -> (String, Option<Val<'d>>, Option<Val<'d>>) {
    const DEEPEST: usize = 32;
    let here = (String::new(), Some(a), Some(b));
    if depth >= DEEPEST || a.json_type() != b.json_type() {
        return here;
    }
    let step = |token: String, x: Option<Val<'d>>, y: Option<Val<'d>>| match (x, y) {
        (Some(x), Some(y)) => {
            let (rest, p, q) = first_difference(x, y, depth + 1);
            (format!("/{token}{rest}"), p, q)
        }
        _ => (format!("/{token}"), x, y),
    };
    if a.is_object() {
        let mut keys: Vec<&str> = a.members().chain(b.members()).map(|(k, _)| k).collect();
        keys.sort_unstable();
        keys.dedup();
        for k in keys {
            let (x, y) = (a.get(k), b.get(k));
            if x.map(jcs) != y.map(jcs) {
                return step(pointer_token(k), x, y);
            }
        }
    } else if let (Some(xs), Some(ys)) = (a.as_array(), b.as_array()) {
        let (xs, ys): (Vec<Val>, Vec<Val>) = (xs.collect(), ys.collect());
        for i in 0..xs.len().max(ys.len()) {
            let (x, y) = (xs.get(i).copied(), ys.get(i).copied());
            if x.map(jcs) != y.map(jcs) {
                return step(i.to_string(), x, y);
            }
        }
    }
    here
}
