//! `zerker.reason.authorization.v1`: a certificate binding a proposed tool
//! call (`action`) under a `mission` to a reasoning result, alone or in a
//! `zerker.reason.authorization-bundle.v1` with its request.
//!
//! On a certificate alone chit checks the portable rules: A1 (the schema),
//! A2 (the status mapping) and A3 (which evidence is present). With the
//! request (bundled, or `--request`) it does what Reason's own
//! `verify-authorization` does, in this folder's own code:
//!
//! - [`model`]: Reason's documents as types, and its digest encoding;
//! - [`value`]: values (numbers above all) read as Reason reads them;
//! - [`engine`]: the program validated and the reasoning re-run;
//! - [`replay`]: proofs and disproofs replayed (A9);
//! - [`authorize`]: the request validated, the program rebuilt from it, and
//!   the certificate held to the re-run (A5, A7, A8).
//!
//! A6 holds the certified action to the concrete call an enforcement point
//! is about to make.

pub mod authorize;
pub mod engine;
pub mod model;
pub mod replay;
pub mod value;

use crate::canon::{self, Profile};
use crate::doc::Val;
use crate::json::short_quoted;
use crate::report::{pointer_token, Report};
use crate::schema;

use self::authorize::Verification;
use self::model::{Certificate, CertificateBundle, Request};
use self::replay::RuleFailure;

pub const KIND: &str = crate::kind::Kind::ReasonAuthorization.name();
pub const BUNDLE: &str = "zerker.reason.authorization-bundle.v1";
pub const REQUEST: &str = "zerker.reason.action.v1";

/// The rule ids of a Zerker Reason certificate. A1, the schema, is reported
/// under [`SCHEMA`](crate::rule::SCHEMA) as for every kind. A4 is retired:
/// Reason itself writes `insufficient_evidence` with nothing missing when
/// the evidence lies outside its time window.
pub mod rule {
    pub use crate::rule::{AUTHORIZED, SCHEMA};

    /// The schema (reported as [`SCHEMA`]).
    pub const A1: &str = "A1";
    /// The status is the one the reasoning status maps to.
    pub const A2: &str = "A2";
    /// `proof`, `disproof` and `conflict` are present exactly when the
    /// reasoning status calls for them.
    pub const A3: &str = "A3";
    /// The mission id, action id, tool, arguments and effects are the
    /// request's.
    pub const A5: &str = "A5";
    /// The call about to be made is the certified action.
    pub const A6: &str = "A6";
    /// Every digest the certificate carries is the one recomputed from the
    /// request in Reason's encoding.
    pub const A7: &str = "A7";
    /// The reasoning re-run from the request equals the certificate's:
    /// status, reasoning, metrics, missing premises, issues.
    pub const A8: &str = "A8";
    /// Proofs and disproofs replay against the rebuilt program.
    pub const A9: &str = "A9";
}

/// What a check may use beyond the certificate: the one
/// [`crate::check::Context`] every kind is given. This kind reads its
/// `request` (`zerker.reason.action.v1`, A5, A7-A9) and `call` (the concrete
/// call `{tool, arguments}` about to run, A6).
pub use crate::context::Context;

/// The certificate's status and the reasoning status it must carry (A2).
const STATUSES: &[(&str, &str)] = &[
    ("authorized", "proved"),
    ("denied", "disproved"),
    ("conflicted", "inconsistent"),
    ("insufficient_evidence", "unknown"),
];

/// The members a bundle holds, each exactly once and nothing else.
const BUNDLE_KEYS: &[&str] = &["schema", "request", "certificate"];

/// What `--require-authorized` says of a certificate it could not
/// recompute.
pub const NEEDS_REQUEST: &str = "the certificate alone cannot be recomputed, and its status alone proves nothing: give the request (--request REQUEST.json) or a bundle (zerker.reason.authorization-bundle.v1)";

pub fn check(v: Val) -> Report {
    check_with(v, Context::default())
}

/// A bundle (its `schema` is [`BUNDLE`]): its shape, then its certificate
/// (A1-A3, and A6 with a call) with paths under `/certificate`, then
/// A5 and A7-A9 against the bundled request and against `ctx.request`
/// where given. Anything else is checked as a certificate: A1-A3; A5 and
/// A7-A9 with `ctx.request`; A6 with `ctx.call`.
pub fn check_with(v: Val, ctx: Context) -> Report {
    let mut r = Report::new(KIND);
    if text(v, "schema") == Some(BUNDLE) {
        check_bundle(v, ctx, &mut r);
    } else {
        let mut requests = Vec::new();
        given_request(ctx, &mut requests, &mut r);
        check_certificate(v, 0, &requests, ctx.call, None, &mut r);
    }
    r
}

/// Whether the input can be held to a request (A7-A9): a bundle, or a
/// certificate checked with `ctx.request`.
pub fn recomputable(v: Val, ctx: &Context) -> bool {
    ctx.request.is_some() || text(v, "schema") == Some(BUNDLE)
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

/// A request read as Reason reads it, and whether it came in the bundle
/// (its findings then sit under `/request`) or beside the document.
struct Held {
    request: Request,
    bundled: bool,
}

/// Reads a value as Reason's type `T`, as strictly as Reason's CLI (no
/// member its types do not declare; numbers as [`value`] reads them).
/// `depth` is how many containers hold the value.
///
/// A whole document is read by `serde_json` straight from its text (the
/// strict reader has already refused duplicate keys, which `serde_json`
/// would let through), after its number literals are checked; a value
/// inside a document goes through [`value::convert`].
fn typed<T: serde::de::DeserializeOwned>(v: Val, depth: usize) -> Result<T, value::ValueError> {
    let unreadable = |e: serde_json::Error| value::ValueError {
        path: String::new(),
        message: e.to_string(),
    };
    if let Some((text, mut literals)) = v.as_whole_document() {
        if let Some(Err(e)) = literals
            .find(|lit| value::needs_check(lit))
            .map(|lit| value::number(lit, ""))
        {
            return Err(e);
        }
        return serde_json::from_str(text).map_err(unreadable);
    }
    serde_json::from_value(value::convert(v, depth)?).map_err(unreadable)
}

/// The request given beside the document (`ctx.request`), if it reads as
/// one; an error otherwise.
fn given_request(ctx: Context, into: &mut Vec<Held>, r: &mut Report) {
    let Some(req) = ctx.request else { return };
    if !is_request(req, "", "the request given", r) {
        return;
    }
    match typed::<Request>(req, 0) {
        Ok(request) => into.push(Held {
            request,
            bundled: false,
        }),
        Err(e) => r.error(
            rule::SCHEMA,
            "",
            format!(
                "the request given does not read as Reason reads a request{}: {}",
                at_path(&e.path),
                e.message
            ),
        ),
    }
}

fn at_path(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" (at {path})")
    }
}

/// The certificate: A1, and only if the schema holds, A2, A3, then A5 and
/// A7-A9 against each request, and A6 against the call. `depth` is how
/// many containers hold the certificate (one in a bundle). Returns the
/// failures found in a bundled request (paths relative to it).
fn check_certificate(
    cert: Val,
    depth: usize,
    requests: &[Held],
    call: Option<Val>,
    read: Option<Certificate>,
    r: &mut Report,
) -> Vec<RuleFailure> {
    let mut in_bundled = Vec::new();
    if !a1_schema(cert, r) {
        return in_bundled;
    }
    a2_status(cert, r);
    a3_evidence(cert, r);
    if !requests.is_empty() {
        match read.map_or_else(|| typed::<Certificate>(cert, depth), Ok) {
            Ok(certificate) => {
                for held in requests {
                    let outcome = authorize::verify(&held.request, &certificate);
                    for f in outcome.certificate {
                        r.error(f.rule, f.path, f.message);
                    }
                    for f in outcome.request {
                        if held.bundled {
                            in_bundled.push(f);
                        } else {
                            r.error(f.rule, "", format!("the request given: {}", f.message));
                        }
                    }
                }
            }
            Err(e) => r.error(
                rule::SCHEMA,
                e.path.clone(),
                format!(
                    "the certificate does not read as Reason reads one, so it cannot be held to the request: {}",
                    e.message
                ),
            ),
        }
    }
    if let Some(call) = call {
        a6_call(cert, call, r);
    }
    in_bundled
}

/// A bundle: exactly `schema`, `request` and `certificate`; a request
/// whose schema is [`REQUEST`]; then its certificate, held to the bundled
/// request and to `ctx.request` (paths under `/certificate`, the bundled
/// request's own under `/request`).
fn check_bundle(v: Val, ctx: Context, r: &mut Report) {
    bundle_shape(v, r);
    let mut requests = Vec::new();
    // The whole bundle read at once where it reads (the common case), each
    // part on its own otherwise, so that each failure is placed.
    let is_one = v
        .get("request")
        .filter(|&req| is_request(req, "/request", "the bundled request", r));
    let whole = match (is_one, v.as_whole_document()) {
        (Some(_), Some(_)) => typed::<CertificateBundle>(v, 0).ok(),
        _ => None,
    };
    let (bundled, read) = match whole {
        Some(b) => (Some(Ok(b.request)), Some(b.certificate)),
        None => (is_one.map(|req| typed::<Request>(req, 1)), None),
    };
    match bundled {
        Some(Ok(request)) => requests.push(Held {
            request,
            bundled: true,
        }),
        Some(Err(e)) => r.error(
            rule::SCHEMA,
            format!("/request{}", e.path),
            format!(
                "the bundled request does not read as Reason reads a request: {}",
                e.message
            ),
        ),
        None => {}
    }
    let Some(cert) = v.get("certificate") else {
        return;
    };
    let mut inner = Report::new(KIND);
    given_request(ctx, &mut requests, &mut inner);
    let in_bundled = check_certificate(cert, 1, &requests, ctx.call, read, &mut inner);
    r.absorb(inner, "/certificate");
    for f in in_bundled {
        r.error(f.rule, format!("/request{}", f.path), f.message);
    }
}

/// Reason's own verdict on a bundle (`reason verify-authorization-bundle`):
/// the bundle read as Reason reads it, its schema, then the certificate
/// held to its request. `Err` is the first failure, as one line.
pub fn verify_bundle(v: Val) -> Result<Verification, String> {
    let bundle: CertificateBundle = typed(v, 0).map_err(unreadable)?;
    if bundle.schema != BUNDLE {
        return Err(format!(
            "schema /schema: a bundle's schema is {BUNDLE}, not {:?}",
            bundle.schema
        ));
    }
    verified(&bundle.request, &bundle.certificate)
}

/// Reason's own verdict on a request and its certificate
/// (`reason verify-authorization REQUEST CERTIFICATE`).
pub fn verify_pair(request: Val, certificate: Val) -> Result<Verification, String> {
    let request: Request = typed(request, 0).map_err(|e| format!("request: {}", unreadable(e)))?;
    let certificate: Certificate = typed(certificate, 0).map_err(unreadable)?;
    verified(&request, &certificate)
}

/// Reason's `authorize`: the request read as Reason reads it, reasoned
/// over, and its certificate (with the request, for a bundle). `Err` says
/// why there is none, in one line.
pub fn authorize_request(v: Val) -> Result<(Request, Certificate), String> {
    let request: Request = typed(v, 0).map_err(unreadable)?;
    let certificate = authorize::authorize(&request)?;
    Ok((request, certificate))
}

/// A bundle of a request and its certificate, as Reason writes one.
pub fn bundle(request: Request, certificate: Certificate) -> CertificateBundle {
    CertificateBundle {
        schema: BUNDLE.into(),
        request,
        certificate,
    }
}

fn unreadable(e: value::ValueError) -> String {
    format!(
        "schema {}: {}",
        if e.path.is_empty() { "/" } else { &e.path },
        e.message
    )
}

fn verified(request: &Request, certificate: &Certificate) -> Result<Verification, String> {
    let outcome = authorize::verify(request, certificate);
    if let Some(v) = outcome.verification {
        return Ok(v);
    }
    let line = |f: &RuleFailure, under: &str| {
        let path = format!("{under}{}", f.path);
        format!(
            "{} {}: {}",
            f.rule,
            if path.is_empty() { "/" } else { &path },
            f.message
        )
    };
    Err(
        match (outcome.request.first(), outcome.certificate.first()) {
            (Some(f), _) => line(f, "/request"),
            (None, Some(f)) => line(f, "/certificate"),
            (None, None) => "the certificate could not be verified".into(),
        },
    )
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

/// A6: the call about to be made is the certified action: the same tool
/// and the same arguments (compared as Reason compares values: see [`same`]). A call that is not an
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
    let (certified_args, call_args) = match (value::convert(here, 0), value::convert(args, 0)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) => {
            return r.error(rule::A6, format!("/action/arguments{}", e.path), e.message);
        }
        (_, Err(e)) => {
            return r.error(
                rule::A6,
                format!("/action/arguments{}", e.path),
                format!("the call's arguments: {}", e.message),
            );
        }
    };
    if certified_args != call_args {
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

/// Two values equal as Reason compares them (numbers by their literal's
/// exact reading: `1` and `1.0` differ, as do 9007199254740993 and
/// 9007199254740992).
fn same(a: Val, b: Val) -> bool {
    match (value::convert(a, 0), value::convert(b, 0)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
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
            if !matches!((x, y), (Some(x), Some(y)) if same(x, y)) {
                return step(pointer_token(k), x, y);
            }
        }
    } else if let (Some(xs), Some(ys)) = (a.as_array(), b.as_array()) {
        let (xs, ys): (Vec<Val>, Vec<Val>) = (xs.collect(), ys.collect());
        for i in 0..xs.len().max(ys.len()) {
            let (x, y) = (xs.get(i).copied(), ys.get(i).copied());
            if !matches!((x, y), (Some(x), Some(y)) if same(x, y)) {
                return step(i.to_string(), x, y);
            }
        }
    }
    here
}

/// A Reason certificate (or bundle) against the request and call given,
/// and under `require_authorized`, its status, which counts only once the
/// certificate was held to its request (A7-A9): a status alone proves
/// nothing. Without the request, the certificate's portable rules still
/// run, a warning says what could not be checked, and the report is
/// partial ([`crate::report::Status::Unchecked`]): not valid unless the
/// user lets unchecked inputs pass.
pub(crate) fn check_in(v: Val, ctx: &Context) -> Report {
    let mut r = check_with(v, *ctx);
    let recomputable = recomputable(v, ctx);
    if ctx.require_authorized {
        if !recomputable {
            r.error(crate::rule::AUTHORIZED, "", NEEDS_REQUEST);
        }
        match status(v) {
            Some("authorized") => {}
            status => r.error(
                crate::rule::AUTHORIZED,
                "/status",
                format!(
                    "the certificate's status is {}; --require-authorized accepts only authorized",
                    status.unwrap_or("missing")
                ),
            ),
        }
    } else if !recomputable {
        r.partial = true;
        r.warning(
            rule::A7,
            "",
            "not recomputed (A7-A9): the certificate's digests, reasoning and proofs were not checked; give the request (--request) or a bundle",
        );
    }
    r
}
