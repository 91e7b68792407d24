//! The HTTP API: the log's writes (with a token) and reads, the verifier,
//! and C2SP tlog-tiles, so any tiles client can audit the server.
//!
//! | route | answer |
//! | --- | --- |
//! | `POST /v1/entries` | 201 appended, 200 already logged, 422 invalid (the findings `chit verify --json` gives), 400 unreadable, 401/403 token, 413 too large; JSON Lines in (`Content-Type: application/jsonl`), one answer a line out |
//! | `POST /v1/verify` | the verdict line `chit verify --json` gives; 200 valid, 422 not |
//! | `GET /v1/entries/{index}`, `GET /v1/entries/sha256:{hex}` | the entry's log bundle (`chit verify --log-key` proves it) |
//! | `GET /v1/consistency?from=&to=` | a consistency proof (as `chit log consistency`) |
//! | `GET /checkpoint`, `GET /tile/…` | C2SP tlog-tiles |
//! | `GET /healthz`, `GET /metrics` | liveness; Prometheus text |

// A refusal is an HTTP response, built once where it is found and returned
// as is: boxing every one would only add noise to each handler.
#![allow(clippy::result_large_err)]

use super::sequencer::{Appended, Job};
use super::tokens::Tokens;
use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use chit_log::tiles::Tile;
use chit_logstore::policy::Compiled;
use chit_logstore::{Log, Outcome, Verdict};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// What every handler shares.
pub struct AppState {
    /// A log on its own store connection, for reads.
    pub reader: Mutex<Log>,
    pub checker: Arc<Compiled>,
    pub jobs: mpsc::UnboundedSender<Job>,
    /// Requests being checked on their way to `jobs`.
    pub checking: super::sequencer::Checking,
    pub tokens: Tokens,
    pub buckets: super::tokens::Buckets,
    pub metrics: Metrics,
    /// Most bytes a JSON Lines body or a /v1/verify body may hold.
    pub max_body: usize,
}

/// A request's submissions once handled: each one's refusal where its
/// token may not submit its kind, and what the batch of the others gave
/// (none when every one was refused so).
struct Handled {
    forbidden: Vec<Option<String>>,
    appended: Option<Result<Appended, String>>,
}

/// Counters for `/metrics`.
#[derive(Default)]
pub struct Metrics {
    pub appended: AtomicU64,
    pub present: AtomicU64,
    pub refused: AtomicU64,
    pub unreadable: AtomicU64,
    pub size: AtomicU64,
    pub responses: Mutex<BTreeMap<u16, u64>>,
}

type Shared = Arc<AppState>;

fn error(code: StatusCode, why: impl Into<String>) -> Response {
    (code, axum::Json(json!({ "error": why.into() }))).into_response()
}

/// Runs blocking work (checks, store reads) off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

/// Runs CPU-bound work (checking receipts) on the rayon pool, one thread
/// per core: many requests at once queue there instead of starting a
/// thread each.
async fn on_cores<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    let (tx, rx) = oneshot::channel();
    rayon::spawn(move || {
        let _ = tx.send(f());
    });
    rx.await.map_err(|_| {
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the check did not finish",
        )
    })
}

/// The bearer token, if the request carries one the file lists.
fn token<'a>(
    state: &'a AppState,
    headers: &HeaderMap,
) -> Result<&'a super::tokens::Token, Response> {
    if state.tokens.is_empty() {
        return Err(error(
            StatusCode::UNAUTHORIZED,
            "this server takes no writes: start it with --tokens FILE",
        ));
    }
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| {
            error(
                StatusCode::UNAUTHORIZED,
                "a write needs Authorization: Bearer TOKEN",
            )
        })?;
    state.tokens.find(presented.trim()).ok_or_else(|| {
        error(
            StatusCode::UNAUTHORIZED,
            "that token is not one this server knows",
        )
    })
}

fn is_lines(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.contains("jsonl") || t.contains("ndjson"))
}

/// Where a submission is in the log (appended, or there already): its
/// HTTP status, `status` word, index, content address and leaf hash.
type Placed<'a> = (
    StatusCode,
    &'static str,
    u64,
    &'a chit_log::Hash,
    &'a chit_log::Hash,
);

fn placed(o: &Outcome) -> Option<Placed<'_>> {
    match o {
        Outcome::Appended {
            index,
            sha256,
            leaf,
            ..
        } => Some((StatusCode::CREATED, "appended", *index, sha256, leaf)),
        Outcome::Duplicate {
            index,
            sha256,
            leaf,
        } => Some((StatusCode::OK, "present", *index, sha256, leaf)),
        Outcome::Refused(_) | Outcome::Unreadable(_) => None,
    }
}

/// One submission's answer, as JSON, and its HTTP status.
fn answer(o: &Outcome, appended: &Appended) -> (StatusCode, Value) {
    if let Some((code, status, index, sha256, leaf)) = placed(o) {
        return (
            code,
            json!({"status": status, "index": index, "sha256": chit_core::digest::hex(sha256),
                   "leaf_hash": B64.encode(leaf), "size": appended.size}),
        );
    }
    match o {
        Outcome::Refused(r) => (StatusCode::UNPROCESSABLE_ENTITY, refused(r)),
        Outcome::Unreadable(why) => (
            StatusCode::BAD_REQUEST,
            json!({"status": "unreadable", "error": why}),
        ),
        Outcome::Appended { .. } | Outcome::Duplicate { .. } => unreachable!("placed above"),
    }
}

/// The answer to the submission at `at` of a request (with its JSON
/// Lines `line`, if any), as JSON text: [`logged`]'s where it is in the
/// log with its proof, else [`answer`]'s.
fn answered(a: &Appended, at: usize, line: Option<usize>) -> (StatusCode, String) {
    if let Some(done) = logged(a, at, line) {
        return done;
    }
    let (code, mut v) = answer(&a.outcomes[at], a);
    if let Some(n) = line {
        v["line"] = json!(n);
    }
    (code, v.to_string())
}

/// One receipt's answer where it is in the log, with its proof: the
/// members [`answer`] gives, then `inclusion_proof`, the `leaf_hash` it
/// starts from and the `checkpoint` whose root it reaches (and a JSON
/// Lines answer's `line`), in the order serde_json writes an object's
/// (sorted), written straight into one string (the answer every write of
/// a busy log gets: its JSON built as a tree cost more than the rest of
/// the response).
fn logged(a: &Appended, at: usize, line: Option<usize>) -> Option<(StatusCode, String)> {
    let (code, status, index, sha256, leaf) = placed(a.outcomes.get(at)?)?;
    let proof = a.proofs.get(at)?.as_ref()?;
    let mut out = String::with_capacity(160 + proof.len() * 48 + a.checkpoint.len());
    out.push_str("{\"checkpoint\":");
    out.push_str(&a.checkpoint);
    out.push_str(",\"inclusion_proof\":[");
    for (i, h) in proof.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        B64.encode_string(h, &mut out);
        out.push('"');
    }
    use std::fmt::Write as _;
    let _ = write!(out, "],\"index\":{index},\"leaf_hash\":\"");
    B64.encode_string(leaf, &mut out);
    out.push_str("\",");
    if let Some(n) = line {
        let _ = write!(out, "\"line\":{n},");
    }
    let _ = write!(
        out,
        "\"sha256\":\"{}\",\"size\":{},\"status\":\"{status}\"}}",
        chit_core::digest::hex(sha256),
        a.size
    );
    Some((code, out))
}

/// A refusal: the verdict line `chit verify --json` gives, with a status.
fn refused(r: &chit_core::Report) -> Value {
    let mut line = Vec::new();
    chit_core::report::json::verdict_line("request", None, None, Ok(r), &mut line);
    let mut v: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.insert("status".into(), "refused".into());
    }
    v
}

fn count(state: &AppState, o: &Outcome) {
    let c = match o {
        Outcome::Appended { .. } => &state.metrics.appended,
        Outcome::Duplicate { .. } => &state.metrics.present,
        Outcome::Refused(_) => &state.metrics.refused,
        Outcome::Unreadable(_) => &state.metrics.unreadable,
    };
    c.fetch_add(1, Ordering::Relaxed);
}

/// The name of the token a write was made with, left on its response for
/// the access log (so the token is looked up once a request).
#[derive(Clone)]
pub struct TokenName(pub String);

/// `POST /v1/entries`.
pub async fn post_entries(State(state): State<Shared>, req: axum::extract::Request) -> Response {
    let tok = match token(&state, req.headers()) {
        Ok(t) => t.clone(),
        Err(r) => return r,
    };
    let lines = is_lines(req.headers());
    let name = TokenName(tok.name.clone());
    // The body is read only for a token this server knows.
    let body = match Body::from_request(req, &()).await {
        Ok(Body(b)) => b,
        Err(r) => return r,
    };
    let mut r = append(state, lines, body, tok).await;
    r.extensions_mut().insert(name);
    r
}

/// `POST /v1/entries` once its token is known.
async fn append(state: Shared, lines: bool, body: Bytes, tok: super::tokens::Token) -> Response {
    if let Err(wait) = state.buckets.take(&tok) {
        let mut r = error(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "token {} is over its rate; try again in {wait:.1} s",
                tok.name
            ),
        );
        if let Ok(v) = header::HeaderValue::from_str(&format!("{}", wait.ceil().max(1.0) as u64)) {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return r;
    }
    let inputs: Vec<Vec<u8>> = if lines {
        body.split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
            .map(<[u8]>::to_vec)
            .collect()
    } else {
        if body.len() > chit_log::tiles::MAX_ENTRY_BYTES {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "{} bytes: a log entry is at most 65,535 bytes (tlog-tiles' entry bundles)",
                    body.len()
                ),
            );
        }
        vec![body.to_vec()]
    };
    if inputs.is_empty() {
        return error(StatusCode::BAD_REQUEST, "an empty body: send a receipt");
    }
    // Checked on the check threads, which hand what is to be appended
    // straight to the sequencer: this task wakes once, for the answer.
    let checker = state.checker.clone();
    let jobs = state.jobs.clone();
    // Counted until its job is queued: a short batch waits for it.
    let checking = state.checking.enter();
    let (tx, rx) = oneshot::channel::<Handled>();
    rayon::spawn(move || {
        let checked = checker.check_all(inputs);
        // A kind this token may not submit is answered, never appended.
        let mut forbidden = vec![None; checked.len()];
        let mut send = Vec::new();
        for (i, c) in checked.into_iter().enumerate() {
            if let Verdict::Accept { kind, .. } = c.verdict() {
                if !tok.may_submit(kind) {
                    forbidden[i] = Some(format!("token {} may not submit {kind}", tok.name));
                    continue;
                }
            }
            send.push(c);
        }
        if send.is_empty() {
            let _ = tx.send(Handled {
                forbidden,
                appended: None,
            });
            return;
        }
        let job = Job {
            checked: send,
            reply: Box::new(move |r| {
                let _ = tx.send(Handled {
                    forbidden,
                    appended: Some(r),
                });
            }),
        };
        if let Err(mpsc::error::SendError(job)) = jobs.send(job) {
            (job.reply)(Err("the server is shutting down".into()));
        }
        drop(checking);
    });
    let Ok(Handled {
        mut forbidden,
        appended,
    }) = rx.await
    else {
        // Its job was dropped unanswered, still queued: the server stopped.
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server stopped before the batch was written; nothing of it was acknowledged",
        );
    };
    let appended = match appended {
        None => None,
        Some(Ok(a)) => Some(a),
        Some(Err(why)) => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("{why}; nothing of it was acknowledged"),
            )
        }
    };
    if let Some(a) = &appended {
        state.metrics.size.store(a.size, Ordering::Relaxed);
        for o in &a.outcomes {
            count(&state, o);
        }
    }
    if !lines {
        if let Some(why) = forbidden[0].take() {
            return error(StatusCode::FORBIDDEN, why);
        }
        let a = appended.expect("one submission sent");
        let (code, body) = answered(&a, 0, None);
        return (code, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    }
    // JSON Lines: one answer a line, in order, each as a single
    // submission's would be (a logged line with its inclusion proof and
    // the checkpoint that covers it), with its line number.
    let mut out = String::new();
    let mut sent = 0;
    for (i, f) in forbidden.iter().enumerate() {
        if let Some(why) = f {
            let v = json!({"status": "forbidden", "error": why, "line": i + 1});
            out.push_str(&v.to_string());
        } else {
            let a = appended.as_ref().expect("a line not forbidden was sent");
            out.push_str(&answered(a, sent, Some(i + 1)).1);
            sent += 1;
        }
        out.push('\n');
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/jsonl")],
        out,
    )
        .into_response()
}

/// A request's body, at most [`super::MAX_BODY`] bytes, refused in JSON:
/// 413 past the limit (a body sent without its length, so not refused
/// before it was read), 400 when it cannot be read. It reads its own limit
/// (not `DefaultBodyLimit`'s), so a request answered without the router
/// is held to the same one.
pub struct Body(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = Response;
    async fn from_request(req: axum::extract::Request, _: &S) -> Result<Body, Response> {
        use http_body_util::BodyExt;
        let max = super::MAX_BODY;
        match http_body_util::Limited::new(req.into_body(), max)
            .collect()
            .await
        {
            Ok(all) => Ok(Body(all.to_bytes())),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large(max)),
            Err(e) => Err(error(
                StatusCode::BAD_REQUEST,
                format!("the body could not be read: {e}"),
            )),
        }
    }
}

/// Query parameters (axum's `Query`), refused with 400 in JSON that names
/// the one that does not parse.
pub struct Params<T>(pub T);

impl<T: serde::de::DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = Response;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Params<T>, Response> {
        Query::from_request_parts(parts, state)
            .await
            .map(|Query(t)| Params(t))
            .map_err(|e: QueryRejection| {
                error(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "{}; the README's \"Serving the log\" lists each route's parameters",
                        e.body_text()
                    ),
                )
            })
    }
}

/// A route's one path parameter (axum's `Path<String>`), refused with 400
/// in JSON when it is not UTF-8.
pub struct PathText(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathText {
    type Rejection = Response;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<PathText, Response> {
        Path::from_request_parts(parts, state)
            .await
            .map(|Path(t)| PathText(t))
            .map_err(|e: PathRejection| error(StatusCode::BAD_REQUEST, e.body_text()))
    }
}

/// 413 for a body past `max` bytes; the connection ends with it (the rest
/// of the body is not read).
fn too_large(max: usize) -> Response {
    let mut r = error(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("a body of at most {max} bytes"),
    );
    r.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    r
}

/// A path no route serves: 404, with the routes there are.
pub async fn not_found(uri: axum::http::Uri) -> Response {
    error(
        StatusCode::NOT_FOUND,
        format!(
            "nothing is served at {}: the routes are / (the page), /v1/entries, \
             /v1/entries/{{index}}, /v1/verify, /v1/search, /v1/streams/{{id}}, \
             /v1/rebinds, /v1/consistency, /checkpoint, /tile/..., /healthz and /metrics",
            uri.path()
        ),
    )
}

/// A route asked with a method it does not take: 405, saying what to do
/// instead (axum adds the `Allow` header).
pub async fn wrong_method(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    let instead = match uri.path() {
        "/v1/entries" => {
            "POST a receipt here (with a token) to log it; read one with \
             GET /v1/entries/{index} or /v1/entries/sha256:{hex}, find them with GET /v1/search"
        }
        "/v1/verify" => "POST a receipt here to have it checked (nothing is logged)",
        _ => "the Allow header names the methods it takes",
    };
    error(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{} does not take {method}: {instead}", uri.path()),
    )
}

/// `POST /v1/verify`: the verdict, nothing appended.
pub async fn post_verify(State(state): State<Shared>, Body(body): Body) -> Response {
    if body.len() > state.max_body {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "larger than this server reads",
        );
    }
    let checker = state.checker.clone();
    let checked = match on_cores(move || checker.checked(&body)).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let mut line = Vec::new();
    let (code, result) = match &checked {
        Ok(c) => (
            if c.report.valid() {
                StatusCode::OK
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            },
            Ok(&c.report),
        ),
        Err(why) => (StatusCode::BAD_REQUEST, Err(why.as_str())),
    };
    let art = checked.as_ref().ok().and_then(|c| c.artifact_id.as_deref());
    chit_core::report::json::verdict_line("request", None, art, result, &mut line);
    (code, [(header::CONTENT_TYPE, "application/json")], line).into_response()
}

/// `GET /v1/entries/{index}` and `GET /v1/entries/sha256:{hex}`: the log
/// bundle.
pub async fn get_entry(State(state): State<Shared>, PathText(which): PathText) -> Response {
    let r = blocking(move || -> Result<Value, Response> {
        let mut log = state.reader.lock().unwrap_or_else(|p| p.into_inner());
        let index = if let Some(h) = which.strip_prefix("sha256:") {
            let d = chit_core::digest::unhex32(h)
                .ok_or_else(|| error(StatusCode::BAD_REQUEST, "sha256: takes 64 hex digits"))?;
            log.store()
                .find(&[d])
                .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
                .first()
                .copied()
                .flatten()
                .ok_or_else(|| error(StatusCode::NOT_FOUND, "no entry has that content address"))?
        } else {
            which
                .parse::<u64>()
                .map_err(|_| error(StatusCode::BAD_REQUEST, "give an index or sha256:HEX"))?
        };
        match log.bundle(index) {
            Ok(b) => Ok(b.to_json()),
            Err(chit_logstore::LogError::Proof(chit_log::ProofError::IndexOutOfRange {
                ..
            })) => Err(error(StatusCode::NOT_FOUND, format!("no entry {index}"))),
            Err(e) => Err(error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
        }
    })
    .await;
    match r {
        Ok(Ok(v)) => axum::Json(v).into_response(),
        Ok(Err(r)) | Err(r) => r,
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    kind: Option<String>,
    art: Option<String>,
    stream: Option<String>,
    /// RFC 3339 times: integrated at or after `since`, before `until`.
    since: Option<String>,
    until: Option<String>,
    after: Option<u64>,
    limit: Option<u32>,
}

/// `GET /v1/search?kind=&art=&stream=&since=&until=&after=&limit=`:
/// entries by the kind they were checked as, art id, packet stream and
/// integration time (labels kept beside the tree, not proven by it), in
/// index order; `next` continues the list.
pub async fn search(State(state): State<Shared>, Params(p): Params<SearchParams>) -> Response {
    let millis = |t: &Option<String>, what: &str| -> Result<Option<i64>, Response> {
        match t {
            None => Ok(None),
            Some(t) => chit_core::time::rfc3339_nanos(t)
                .map(|n| Some((n / 1_000_000) as i64))
                .ok_or_else(|| {
                    error(
                        StatusCode::BAD_REQUEST,
                        format!("{what} is not an RFC 3339 time"),
                    )
                }),
        }
    };
    let (since, until) = match (millis(&p.since, "since"), millis(&p.until, "until")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    // A kind chit does not know matches nothing: say so rather than
    // answer an empty page that reads as "not logged".
    if let Some(Err(why)) = p.kind.as_deref().map(chit_core::Kind::parse) {
        return error(StatusCode::BAD_REQUEST, why);
    }
    let limit = p.limit.unwrap_or(100).clamp(1, 1000);
    let q = chit_logstore::store::Query {
        kind: p.kind,
        art_id: p.art,
        stream_id: p.stream,
        since,
        until,
        after: p.after,
        limit,
    };
    let r = blocking(move || {
        let mut log = state.reader.lock().unwrap_or_else(|p| p.into_inner());
        log.store().search(&q)
    })
    .await;
    match r {
        Ok(Ok(hits)) => {
            let next = (hits.len() == limit as usize)
                .then(|| hits.last().map(|h| h.label.index))
                .flatten();
            let hits: Vec<Value> = hits
                .iter()
                .map(|h| {
                    json!({
                        "index": h.label.index,
                        "kind": h.label.kind,
                        "art_id": h.label.art_id,
                        "stream_id": h.label.stream_id,
                        "integrated_at": chit_core::time::format_unix_utc((h.integrated_at / 1000) as u64),
                    })
                })
                .collect();
            axum::Json(json!({"hits": hits, "next": next})).into_response()
        }
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(r) => r,
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RebindParams {
    todo_id: Option<String>,
}

/// Lattice executor packets read for one rebind answer, at most.
const REBIND_SCAN: u32 = 5_000;

/// `GET /v1/rebinds?todo_id=`: the Lattice executor packets of one todo in
/// this log, as chit-core's X6 reads them (sorted by epoch), each with what
/// X6 finds against the packet before it (the fields it names, `valid`
/// whether the packet is valid on its own), and X6's findings over all of
/// them. The page draws its rebind table from this answer, so that what is
/// red there is what `chit verify` says. At most the first 5,000 executor
/// packets of the log are read (`complete` says whether that was all).
pub async fn get_rebinds(State(state): State<Shared>, Params(p): Params<RebindParams>) -> Response {
    use chit_core::across::Origin;
    use chit_core::kinds::executor_packet::{rebinds, RebindFacts};
    let Some(todo_id) = p.todo_id else {
        return error(
            StatusCode::BAD_REQUEST,
            "name the todo: /v1/rebinds?todo_id=ID",
        );
    };
    let checker = state.checker.clone();
    let r = blocking(move || -> Result<Value, String> {
        // Each packet's facts, its packet_digest and its entry index.
        let mut found: Vec<(RebindFacts, Option<String>, u64)> = Vec::new();
        const PAGE: u32 = 500;
        // One page of the log's executor packets after `after`: how many
        // the search found, the last one's index, and the entries read.
        type Page = (usize, Option<u64>, Vec<chit_logstore::store::Entry>);
        let page = |after: Option<u64>, limit: u32| -> Result<Page, String> {
            let mut log = state.reader.lock().unwrap_or_else(|p| p.into_inner());
            let store = log.store();
            let hits = store
                .search(&chit_logstore::store::Query {
                    kind: Some(chit_core::kinds::executor_packet::KIND.to_string()),
                    art_id: None,
                    stream_id: None,
                    since: None,
                    until: None,
                    after,
                    limit,
                })
                .map_err(|e| e.to_string())?;
            let mut entries = Vec::with_capacity(hits.len());
            for h in &hits {
                if let Some(e) = store.entry(h.label.index).map_err(|e| e.to_string())? {
                    entries.push(e);
                }
            }
            Ok((hits.len(), hits.last().map(|h| h.label.index), entries))
        };
        let mut after = None;
        let mut read = 0u32;
        let complete = loop {
            let (hits, last, entries) = page(after, PAGE)?;
            after = last.or(after);
            read += hits as u32;
            for e in &entries {
                // Only this todo's packets are checked: a packet whose
                // todo_id reads, as plain JSON, as another todo's is not it
                // (one that does not read is checked, and chit-core decides).
                let plain = serde_json::from_slice::<Value>(&e.data).ok();
                let todo = plain.as_ref().and_then(|v| v.get("todo_id")?.as_str());
                if todo.is_some_and(|t| t != todo_id) {
                    continue;
                }
                let Ok(checked) = checker.checked(&e.data) else {
                    continue;
                };
                let Some(mut f) = checked.facts.and_then(|f| f.into_rebind()) else {
                    continue;
                };
                if f.todo_id != todo_id {
                    continue;
                }
                // By entry index, as numbers (X6 orders a tie by source).
                f.source = Origin::new("entry", Some(e.index as usize));
                let digest = plain
                    .as_ref()
                    .and_then(|v| v["packet_digest"].as_str().map(str::to_string));
                found.push((f, digest, e.index));
            }
            if hits < PAGE as usize {
                break true;
            }
            if read >= REBIND_SCAN {
                // Complete only if the search has nothing after the last.
                break page(after, 1)?.0 == 0;
            }
        };
        // In X6's order; each against the one before it, by X6 itself.
        found.sort_by(|(a, ..), (b, ..)| {
            a.plan_epoch
                .cmp(&b.plan_epoch)
                .then_with(|| a.source.cmp(&b.source))
        });
        let packets: Vec<Value> = found
            .iter()
            .enumerate()
            .map(|(i, (f, digest, index))| {
                let flagged: Vec<String> = match i.checked_sub(1) {
                    Some(j) => {
                        let pair = vec![
                            RebindFacts {
                                valid: true,
                                ..found[j].0.clone()
                            },
                            RebindFacts {
                                valid: true,
                                ..f.clone()
                            },
                        ];
                        rebinds(pair)
                            .into_iter()
                            .flat_map(|(_, _, r)| r.errors.into_iter().map(|e| e.path))
                            .collect()
                    }
                    None => Vec::new(),
                };
                json!({
                    "index": index,
                    "packet_id": f.packet_id,
                    "plan_epoch": f.plan_epoch,
                    "plan_ref": f.plan_ref,
                    "context_content_digest": f.context_content_digest,
                    "packet_digest": digest,
                    "valid": f.valid,
                    "flagged": flagged,
                })
            })
            .collect();
        let findings: Vec<Value> = rebinds(found.into_iter().map(|(f, ..)| f).collect())
            .into_iter()
            .flat_map(|(_, _, r)| r.errors)
            .map(|e| json!({"rule": e.rule, "path": e.path, "message": e.message}))
            .collect();
        Ok(json!({
            "todo_id": todo_id,
            "packets": packets,
            "findings": findings,
            "complete": complete,
        }))
    })
    .await;
    match r {
        Ok(Ok(v)) => axum::Json(v).into_response(),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
        Err(r) => r,
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamParams {
    limit: Option<u32>,
}

/// `GET /v1/streams/{stream_id}?limit=`: a packet stream as the log holds
/// it, by sequence (at most `limit`, 2,000 by default and at most): each
/// packet's sequence, packet id, previous packet id and entry index. Read
/// from the log's stream table, entries unread: what the page draws a
/// stream from.
pub async fn get_stream(
    State(state): State<Shared>,
    PathText(stream_id): PathText,
    Params(p): Params<StreamParams>,
) -> Response {
    let limit = p.limit.unwrap_or(STREAM_LIMIT).clamp(1, STREAM_LIMIT);
    let id = stream_id.clone();
    let r = blocking(move || {
        let mut log = state.reader.lock().unwrap_or_else(|p| p.into_inner());
        log.store().stream(&id, limit)
    })
    .await;
    match r {
        Ok(Ok(rows)) => {
            let packets: Vec<Value> = rows
                .iter()
                .map(|p| {
                    json!({
                        "sequence": p.sequence,
                        "packet_id": p.packet_id,
                        "prev_packet_id": p.prev_packet_id,
                        "index": p.index,
                    })
                })
                .collect();
            axum::Json(json!({"stream_id": stream_id, "packets": packets})).into_response()
        }
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(r) => r,
    }
}

/// The most packets `GET /v1/streams/{id}` answers.
const STREAM_LIMIT: u32 = 2000;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sizes {
    from: u64,
    to: u64,
}

/// `GET /v1/consistency?from=&to=`.
pub async fn get_consistency(State(state): State<Shared>, Params(q): Params<Sizes>) -> Response {
    let r = blocking(move || -> Result<Value, Response> {
        let mut log = state.reader.lock().unwrap_or_else(|p| p.into_inner());
        let (size, _) = log
            .head()
            .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        if q.from > q.to || q.to > size {
            return Err(error(
                StatusCode::BAD_REQUEST,
                format!("need from <= to <= {size} (the log's size)"),
            ));
        }
        let fail =
            |e: chit_logstore::LogError| error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
        let proof = log.consistency_proof(q.from, q.to).map_err(fail)?;
        let (a, b) = (
            log.root(q.from).map_err(fail)?,
            log.root(q.to).map_err(fail)?,
        );
        Ok(json!({
            "old": q.from,
            "new": q.to,
            "old_root": B64.encode(a),
            "new_root": B64.encode(b),
            "consistency_proof": proof.iter().map(|h| B64.encode(h)).collect::<Vec<_>>(),
        }))
    })
    .await;
    match r {
        Ok(Ok(v)) => axum::Json(v).into_response(),
        Ok(Err(r)) | Err(r) => r,
    }
}

/// `GET /checkpoint`: the latest signed checkpoint, as signed.
pub async fn get_checkpoint(State(state): State<Shared>) -> Response {
    let r = blocking(move || {
        let mut log = state.reader.lock().unwrap_or_else(|p| p.into_inner());
        log.head()
    })
    .await;
    match r {
        Ok(Ok((_, note))) => (
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            note,
        )
            .into_response(),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(r) => r,
    }
}

/// `GET /tile/…`: a hash tile or an entry bundle of the current tree; a
/// partial tile by its width (`N.p/W`), as tlog-tiles asks.
pub async fn get_tile(State(state): State<Shared>, PathText(rest): PathText) -> Response {
    let Some(t) = Tile::parse_path(&format!("tile/{rest}")) else {
        return error(StatusCode::NOT_FOUND, "not a tile path");
    };
    let r = blocking(move || -> Result<Vec<u8>, Response> {
        let mut log = state.reader.lock().unwrap_or_else(|p| p.into_inner());
        let (size, _) = log
            .head()
            .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        if !t.in_tree(size) {
            return Err(error(StatusCode::NOT_FOUND, "no such tile in the log yet"));
        }
        super::super::commands::log::tile_bytes(&mut log, &t)
            .map_err(|f| error(StatusCode::INTERNAL_SERVER_ERROR, f.message))
    })
    .await;
    match r {
        Ok(Ok(data)) => {
            let cache = if t.width == chit_log::tiles::TILE_WIDTH {
                "public, max-age=31536000, immutable"
            } else {
                "public, max-age=60"
            };
            (
                [
                    (header::CONTENT_TYPE, "application/octet-stream"),
                    (header::CACHE_CONTROL, cache),
                ],
                data,
            )
                .into_response()
        }
        Ok(Err(r)) | Err(r) => r,
    }
}

/// `GET /healthz`.
pub async fn healthz(State(state): State<Shared>) -> Response {
    let r = blocking(move || {
        let mut log = state.reader.lock().unwrap_or_else(|p| p.into_inner());
        log.head().map(|(s, _)| s)
    })
    .await;
    match r {
        Ok(Ok(size)) => axum::Json(json!({"status": "ok", "size": size})).into_response(),
        Ok(Err(e)) => error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        Err(r) => r,
    }
}

/// `GET /metrics`: Prometheus text.
pub async fn metrics(State(state): State<Shared>) -> Response {
    let m = &state.metrics;
    let mut s = String::new();
    let mut counter = |name: &str, help: &str, v: u64| {
        s.push_str(&format!(
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}\n"
        ));
    };
    counter(
        "chit_entries_appended_total",
        "Submissions appended.",
        m.appended.load(Ordering::Relaxed),
    );
    counter(
        "chit_entries_present_total",
        "Submissions already in the log.",
        m.present.load(Ordering::Relaxed),
    );
    counter(
        "chit_entries_refused_total",
        "Submissions refused as invalid.",
        m.refused.load(Ordering::Relaxed),
    );
    counter(
        "chit_entries_unreadable_total",
        "Submissions that could not be read.",
        m.unreadable.load(Ordering::Relaxed),
    );
    s.push_str(&format!(
        "# HELP chit_log_size Entries in the log at the last append.\n# TYPE chit_log_size gauge\nchit_log_size {}\n",
        m.size.load(Ordering::Relaxed)
    ));
    s.push_str("# HELP chit_http_responses_total HTTP responses by status.\n# TYPE chit_http_responses_total counter\n");
    for (code, n) in m.responses.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        s.push_str(&format!(
            "chit_http_responses_total{{code=\"{code}\"}} {n}\n"
        ));
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], s).into_response()
}

/// What every request goes through, in one layer (each layer costs a busy
/// server a little on every request):
///
/// - a body announced larger than the server reads is refused from its
///   Content-Length, before a byte of it is read, and the connection ends
///   (a body that grows past the limit without announcing it is cut off by
///   the body limit);
/// - the request, its body included, is given `timeout` to be answered;
/// - every response is counted by status (for `/metrics`) and logged, one
///   event a request (target `chit::access`: method, path, status,
///   milliseconds, and the token's name where one was given and known).
pub async fn around(
    State((state, timeout)): State<(Shared, std::time::Duration)>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    observed(&state, timeout, req, |req| next.run(req)).await
}

/// `POST /v1/entries` as the server answers it: observed as [`around`]
/// observes every routed request, and answered by the route's handler,
/// [`post_entries`], but not through the router (see `serve::Front`).
pub async fn post_entries_direct(
    state: Shared,
    timeout: std::time::Duration,
    req: axum::extract::Request,
) -> Response {
    let handler = state.clone();
    observed(&state, timeout, req, move |req| {
        post_entries(State(handler), req)
    })
    .await
}

/// [`around`]'s work around `run`, which answers the request unless its
/// announced body is too large or it takes longer than `timeout`.
async fn observed<F, A>(
    state: &AppState,
    timeout: std::time::Duration,
    req: axum::extract::Request,
    run: F,
) -> Response
where
    F: FnOnce(axum::extract::Request) -> A,
    A: std::future::Future<Output = Response>,
{
    let logged = tracing::enabled!(target: "chit::access", tracing::Level::INFO);
    let started = std::time::Instant::now();
    let seen = logged.then(|| (req.method().clone(), req.uri().path().to_string()));
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let r = if announced.is_some_and(|n| n > state.max_body as u64) {
        too_large(state.max_body)
    } else {
        match tokio::time::timeout(timeout, run(req)).await {
            Ok(r) => r,
            Err(_) => error(
                StatusCode::REQUEST_TIMEOUT,
                "the request took too long (its body, or its answer)",
            ),
        }
    };
    if let Some((method, path)) = seen {
        tracing::info!(
            target: "chit::access",
            method = %method,
            path = %path,
            status = r.status().as_u16(),
            ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
            token = r.extensions().get::<TokenName>().map(|t| t.0.as_str()),
        );
    }
    *state
        .metrics
        .responses
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(r.status().as_u16())
        .or_default() += 1;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer written by hand is, byte for byte, the one serde_json
    /// writes from the same members.
    #[test]
    fn a_logged_answer_is_the_json_of_its_members() {
        let proof: Vec<chit_log::Hash> = (0..17u8).map(|i| [i.wrapping_mul(37); 32]).collect();
        for (outcome, proofs) in [
            (
                Outcome::Appended {
                    index: 41,
                    sha256: [7; 32],
                    leaf: [0xfe; 32],
                    status: chit_core::report::Status::Valid,
                },
                vec![Some(proof.clone())],
            ),
            (
                Outcome::Duplicate {
                    index: 0,
                    sha256: [255; 32],
                    leaf: [0xfe; 32],
                },
                vec![Some(Vec::new())],
            ),
        ] {
            let a = Appended {
                outcomes: vec![outcome],
                proofs,
                size: 42,
                checkpoint: super::super::sequencer::json_string(
                    b"log.example/\"x\"\n42\nabc=\n\n\xe2\x80\x94 log.example/ sig\n\x01\xff",
                ),
            };
            for line in [None, Some(1), Some(4096)] {
                let (code, body) = logged(&a, 0, line).unwrap();
                let (want_code, mut v) = answer(&a.outcomes[0], &a);
                let p = a.proofs[0].as_ref().unwrap();
                v["inclusion_proof"] = json!(p.iter().map(|h| B64.encode(h)).collect::<Vec<_>>());
                assert_eq!(v["leaf_hash"], json!(B64.encode([0xfe; 32])));
                v["checkpoint"] = json!(String::from_utf8_lossy(
                    b"log.example/\"x\"\n42\nabc=\n\n\xe2\x80\x94 log.example/ sig\n\x01\xff"
                ));
                if let Some(n) = line {
                    v["line"] = json!(n);
                }
                assert_eq!(code, want_code);
                assert_eq!(body, serde_json::to_string(&v).unwrap());
            }
        }
    }
}
