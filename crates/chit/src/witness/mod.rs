//! `chit witness serve`: a C2SP tlog-witness over HTTP (axum on tokio).
//!
//! What a request is judged by is `chit_log::witness` (no I/O); here are
//! its state and its door:
//!
//! - each origin's latest cosigned checkpoint is in memory behind its own
//!   lock, held from the check of a request's old size until the new
//!   latest checkpoint is stored, so one origin's submissions are judged
//!   one at a time and two from one old size cannot both be cosigned;
//! - one thread ([`writer`]) stores what every origin's requests advance,
//!   many in one transaction (one sync), before any of them is answered;
//! - a request is bounded: its head by `--header-timeout`, the whole of it
//!   by `--request-timeout` (408), its body by the largest request the
//!   protocol allows (413), and the requests held at once by
//!   [`MAX_REQUESTS`] (503 past it).

mod writer;

use crate::cli::WitnessServeArgs;
use crate::exit::{CmdResult, Exit, Failure};
use crate::output::Output;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use chit_log::cosignature::Cosigner;
use chit_log::note::Note;
use chit_log::policy::Policy;
use chit_log::witness::{self, AddCheckpoint, Refusal};
use chit_logstore::witness::{Advance, Latest, WitnessState};
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Requests held at once (each up to the largest body the protocol
/// allows, about 1 MiB); past it, 503.
pub const MAX_REQUESTS: usize = 128;

/// The statuses counted in `/metrics`.
const STATUSES: [u16; 9] = [200, 400, 403, 404, 408, 409, 413, 422, 500];

/// The witness: its key, its policy, each origin's latest checkpoint.
pub struct Witness {
    cosigner: Cosigner,
    policy: Policy,
    origins: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<Latest>>>>>,
    writer: writer::Writer,
    permits: Arc<tokio::sync::Semaphore>,
    answered: [AtomicU64; STATUSES.len()],
}

type Shared = Arc<Witness>;

impl Witness {
    fn origin(&self, origin: &str) -> Arc<tokio::sync::Mutex<Option<Latest>>> {
        self.origins
            .lock()
            .expect("origins")
            .entry(origin.to_string())
            .or_default()
            .clone()
    }

    fn count(&self, status: u16) {
        if let Some(i) = STATUSES.iter().position(|&s| s == status) {
            self.answered[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Judges one request and, when it passes, stores the new latest
    /// checkpoint and returns the cosignature lines.
    async fn add_checkpoint(&self, body: &[u8]) -> Result<String, Answer> {
        let req = AddCheckpoint::parse(body)?;
        let signed = witness::check_signed(&req, &self.policy)?;
        let slot = self.origin(&signed.checkpoint.origin);
        let mut latest = slot.lock().await;
        witness::check_consistent(&req, &signed, latest.as_ref().map(|l| (l.size, l.root)))?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
            .max(1);
        let cosignature = self
            .cosigner
            .cosign(&signed.text, now)
            .map_err(|e| Answer::Failed(format!("cannot cosign: {e}")))?;
        // What GET .../checkpoint serves: the log's signatures this
        // witness verified, and its own.
        let mut signatures = signed.log_signatures.clone();
        signatures.push(cosignature.clone());
        let next = Latest {
            origin: signed.checkpoint.origin.clone(),
            size: signed.checkpoint.size,
            root: signed.checkpoint.root,
            note: Note {
                text: signed.text.clone(),
                signatures,
            }
            .to_bytes(),
        };
        self.writer
            .advance(Advance {
                old_size: req.old_size,
                latest: next.clone(),
            })
            .await
            .map_err(|e| Answer::Failed(format!("cannot store the checkpoint: {e}")))?;
        *latest = Some(next);
        Ok(cosignature.line())
    }
}

/// What a request is answered, other than a cosignature.
enum Answer {
    Refused(Refusal),
    Failed(String),
}

impl From<Refusal> for Answer {
    fn from(r: Refusal) -> Self {
        Answer::Refused(r)
    }
}

fn text(status: StatusCode, content_type: &'static str, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn post_add_checkpoint(
    State(w): State<Shared>,
    axum::Extension(permit): axum::Extension<Arc<tokio::sync::OwnedSemaphorePermit>>,
    body: Bytes,
) -> Response {
    // Judged, stored and remembered on a task of its own: a request
    // dropped halfway (its client gone, its deadline passed) cannot leave
    // the stored checkpoint ahead of the one in memory. The task keeps the
    // request's permit until it ends.
    let judge = w.clone();
    let judged = tokio::spawn(async move {
        let _permit = permit;
        judge.add_checkpoint(&body).await
    })
    .await
    .unwrap_or_else(|e| Err(Answer::Failed(format!("the request's task failed: {e}"))));
    let (status, response) = match judged {
        Ok(lines) => (
            200,
            text(StatusCode::OK, "text/plain; charset=utf-8", lines),
        ),
        Err(Answer::Refused(Refusal::Conflict(size))) => (
            409,
            text(
                StatusCode::CONFLICT,
                witness::SIZE_CONTENT_TYPE,
                witness::size_body(size),
            ),
        ),
        Err(Answer::Refused(r)) => {
            let code = r.status();
            tracing::info!(target: "chit::witness", status = code, reason = %r, "refused");
            (
                code,
                text(
                    StatusCode::from_u16(code).expect("a status"),
                    "text/plain; charset=utf-8",
                    format!("{r}\n"),
                ),
            )
        }
        Err(Answer::Failed(m)) => {
            tracing::error!(target: "chit::witness", error = %m, "failed");
            (
                500,
                text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "text/plain; charset=utf-8",
                    format!("{m}\n"),
                ),
            )
        }
    };
    w.count(status);
    response
}

/// `GET /<sha256 of the origin, lower-case hex>/checkpoint`.
async fn get_checkpoint(State(w): State<Shared>, Path(hash): Path<String>) -> Response {
    let slots: Vec<_> = w
        .origins
        .lock()
        .expect("origins")
        .iter()
        .filter(|(o, _)| chit_core::digest::sha256_hex(o.as_bytes()) == hash)
        .map(|(_, s)| s.clone())
        .collect();
    for slot in slots {
        if let Some(l) = slot.lock().await.as_ref() {
            return text(StatusCode::OK, "text/plain; charset=utf-8", {
                String::from_utf8_lossy(&l.note).into_owned()
            });
        }
    }
    text(
        StatusCode::NOT_FOUND,
        "text/plain; charset=utf-8",
        "this witness has cosigned no checkpoint of that log\n".into(),
    )
}

/// `GET /metrics`: answers by status, in Prometheus's text format.
async fn metrics(State(w): State<Shared>) -> Response {
    let mut out = String::from(
        "# HELP chit_witness_requests add-checkpoint requests answered, by status.\n\
         # TYPE chit_witness_requests counter\n",
    );
    for (i, s) in STATUSES.iter().enumerate() {
        out.push_str(&format!(
            "chit_witness_requests_total{{status=\"{s}\"}} {}\n",
            w.answered[i].load(Ordering::Relaxed)
        ));
    }
    text(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        out,
    )
}

/// Every request: at most [`MAX_REQUESTS`] at once (503), each within
/// the request timeout (408), one access line each.
async fn around(
    State((w, timeout)): State<(Shared, std::time::Duration)>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let started = std::time::Instant::now();
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let mut req = req;
    let Ok(permit) = w.permits.clone().try_acquire_owned() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
            "the witness is busy; try again\n",
        )
            .into_response();
    };
    // Held by the request, and by the task that judges it when it
    // outlives its deadline: the limit bounds the work, not the answers.
    req.extensions_mut().insert(Arc::new(permit));
    let response = match tokio::time::timeout(timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => {
            w.count(408);
            text(
                StatusCode::REQUEST_TIMEOUT,
                "text/plain; charset=utf-8",
                "the request took too long\n".into(),
            )
        }
    };
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        w.count(413);
    }
    tracing::info!(
        target: "chit::access",
        method = %method,
        path = %path,
        status = response.status().as_u16(),
        ms = started.elapsed().as_secs_f64() * 1e3,
    );
    response
}

/// The routes over a witness.
pub fn router(w: Shared, timeout: std::time::Duration) -> Router {
    Router::new()
        .route("/add-checkpoint", post(post_add_checkpoint))
        .route("/{hash}/checkpoint", get(get_checkpoint))
        .route("/metrics", get(metrics))
        .layer(DefaultBodyLimit::max(witness::MAX_REQUEST_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            (w.clone(), timeout),
            around,
        ))
        .with_state(w)
}

pub fn run(a: &WitnessServeArgs, out: &mut Output) -> CmdResult {
    let pem = crate::shared::keys::read_key_text(&a.key)?;
    let cosigner = Cosigner::from_pkcs8_pem(&a.name, &pem)
        .map_err(|e| Failure::error(format!("--key {}: {e}", a.key.display())))?;
    crate::shared::keys::warn_if_open(&a.key);
    let policy = crate::shared::logs::read_policy(&a.policy)?;
    if policy.logs.is_empty() {
        return Err(Failure::error(format!(
            "--policy {} lists no log (log <vkey> lines): this witness would witness nothing",
            a.policy.display()
        )));
    }
    if cosigner.alg() == chit_log::note::ALG_COSIGNATURE_MLDSA44 {
        if let Some(l) = policy.logs.iter().find(|l| l.origin.len() > 255) {
            return Err(Failure::error(format!(
                "--policy {}: the log {:?} has an origin longer than the 255 bytes an ML-DSA-44 \
                 cosignature can name",
                a.policy.display(),
                l.origin
            )));
        }
    }
    let store = a.store.display().to_string();
    let state =
        WitnessState::open(&store).map_err(|e| Failure::error(format!("--store {store}: {e}")))?;
    let mut origins = HashMap::new();
    for l in state
        .all()
        .map_err(|e| Failure::error(format!("--store {store}: {e}")))?
    {
        origins.insert(l.origin.clone(), Arc::new(tokio::sync::Mutex::new(Some(l))));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::error(format!("cannot start the async runtime: {e}")))?;
    let listener = runtime
        .block_on(crate::shared::net::listen(&a.listen))
        .map_err(|e| Failure::error(format!("cannot listen on {}: {e}", a.listen)))?;
    let logging = crate::shared::logging::init(a.quiet);
    let vkey = cosigner.verifier_key();
    let witness = Arc::new(Witness {
        cosigner,
        policy,
        origins: Mutex::new(origins),
        writer: writer::Writer::start(state),
        permits: Arc::new(tokio::sync::Semaphore::new(MAX_REQUESTS)),
        answered: Default::default(),
    });
    let timeout = std::time::Duration::from_secs(a.request_timeout);
    let app = router(witness, timeout);
    let header_timeout = std::time::Duration::from_secs(a.header_timeout);
    let served = runtime.block_on(async {
        let addr = listener
            .local_addr()
            .map_err(|e| Failure::error(e.to_string()))?;
        tracing::info!(target: "chit::witness", name = %a.name, addr = %addr, "listening");
        writeln!(
            out,
            "witness key: {vkey}\nchit witness: {} at http://{addr}/",
            a.name
        )
        .map_err(Failure::write)?;
        out.flush().map_err(Failure::write)?;
        serve(listener, app, header_timeout).await;
        Ok(())
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(10));
    logging.flush();
    served.map(|()| Exit::Ok)
}

/// Accepts connections until Ctrl-C or SIGTERM, each with a deadline for
/// its headers; then answers the requests in flight (at most 10 s more).
async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    header_timeout: std::time::Duration,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut stop = std::pin::pin!(crate::shared::net::shutdown());
    let svc = hyper_util::service::TowerToHyperService::new(app);
    while let Some(stream) = crate::shared::net::accept(&listener, stop.as_mut()).await {
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(header_timeout)
            .serve_connection(TokioIo::new(stream), svc.clone());
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), graceful.shutdown()).await;
}
