//! `chit serve`: the receipt log and the verifier over HTTP (axum on
//! tokio). One thread sequences ([`sequencer`]); requests check their
//! submissions on the blocking pool and wait for their batch; reads use a
//! store connection of their own. See [`api`] for the routes.

pub mod api;
pub mod budget;
pub mod health;
pub mod lines;
pub mod metrics;
pub mod sequencer;
pub mod tokens;
pub mod web;
pub mod wire;
pub mod witnessing;

use crate::cli::ServeArgs;
use crate::exit::{CmdResult, Exit, Failure};
use crate::output::Output;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// Most bytes a request body may hold (a JSON Lines body, a /v1/verify
/// body): chit's reading limit for one input.
pub(crate) const MAX_BODY: usize = 64 << 20;

/// Most values in a document `/v1/verify` reads (`chit verify` has no such
/// limit): a reader's memory grows by tens of bytes a value however short
/// its text, so a large body of `0,` would take gigabytes to read
/// (docs/decisions/serve-memory.md). A log entry holds far fewer.
pub(crate) const MAX_VALUES: usize = 200_000;

/// The bytes of request bodies held at once, across every connection
/// (with what `/v1/verify`'s checks of them may take), unless
/// `--max-in-flight` says otherwise: one JSON Lines body of the largest
/// size and 16 MiB beside it (so `/v1/verify` takes documents of about
/// 4.9 MB). Chosen for the memory test (64 clients of the largest bodies,
/// peak RSS under 256 MB): docs/decisions/serve-memory.md.
pub(crate) const IN_FLIGHT: usize = 80 << 20;

/// Receipts one JSON Lines request may carry, unless `--max-lines` says.
pub(crate) const MAX_LINES: usize = 10_000;

/// Where receipts are posted: a route of the [`router`], and the one
/// request [`Front`] answers without it.
const ENTRIES: &str = "/v1/entries";

/// The routes over a shared state.
pub fn router(state: Arc<api::AppState>, request_timeout: std::time::Duration) -> Router {
    Router::new()
        .route(ENTRIES, post(api::post_entries))
        .route("/v1/entries/{which}", get(api::get_entry))
        .route("/v1/verify", post(api::post_verify))
        .route("/v1/search", get(api::search))
        .route("/v1/streams/{stream_id}", get(api::get_stream))
        .route("/v1/rebinds", get(api::get_rebinds))
        .route("/v1/consistency", get(api::get_consistency))
        .route("/checkpoint", get(api::get_checkpoint))
        .route("/tile/{*rest}", get(api::get_tile))
        .route("/healthz", get(health::healthz))
        .route("/metrics", get(api::metrics))
        .route("/", get(web::index))
        .route("/assets/app.js", get(web::script))
        .route("/assets/verify.js", get(web::verify_script))
        .route("/assets/app.css", get(web::style))
        .route("/assets/favicon.svg", get(web::icon))
        .method_not_allowed_fallback(api::wrong_method)
        .fallback(api::not_found)
        .layer(axum::middleware::from_fn_with_state(
            (state.clone(), request_timeout),
            api::around,
        ))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
}

/// What answers each request: `POST /v1/entries`, every write a busy log
/// gets, goes straight to its handler ([`api::post_entries_direct`]:
/// observed, timed, limited, logged and counted as [`api::around`] does
/// for the routes); everything else goes through the [`router`] (which
/// has the route too, for 405 and for anything else that serves it).
/// Under load the router's layers around that one handler (the
/// middleware's boxed futures, the request's conversions) cost a share of
/// the HTTP thread's CPU worth saving
/// (docs/decisions/serve-writes-front.md).
#[derive(Clone)]
struct Front {
    routed: hyper_util::service::TowerToHyperService<Router>,
    state: Arc<api::AppState>,
    timeout: std::time::Duration,
}

impl Front {
    /// Answers one request of a connection; `note` is what [`wire`]
    /// learnt of that connection, left on the request for its handler.
    async fn answer(
        self,
        mut req: hyper::Request<hyper::body::Incoming>,
        note: Arc<wire::FramingNote>,
    ) -> Result<axum::response::Response, std::convert::Infallible> {
        // Only a chunked body's framing can be found wrong there.
        if req.headers().contains_key(hyper::header::TRANSFER_ENCODING) {
            req.extensions_mut().insert(note);
        }
        if req.method() == hyper::Method::POST && req.uri().path() == ENTRIES {
            let req = req.map(axum::body::Body::new);
            return Ok(api::post_entries_direct(self.state, self.timeout, req).await);
        }
        hyper::service::Service::call(&self.routed, req).await
    }
}

/// The shipped examples a demo log starts with: run receipts, a signed
/// packet stream, a Lattice packet, a numeric lineage receipt and a Reason
/// bundle, as the repository has them.
const DEMO: &[(&str, &[u8])] = &[
    (
        "run-receipts/agreed-verified.json",
        include_bytes!("../../../../examples/run-receipts/agreed-verified.json"),
    ),
    (
        "run-receipts/not-unanimous-failing.json",
        include_bytes!("../../../../examples/run-receipts/not-unanimous-failing.json"),
    ),
    (
        "packets/p0.env.json",
        include_bytes!("../../../../examples/packets/p0.env.json"),
    ),
    (
        "packets/p1.env.json",
        include_bytes!("../../../../examples/packets/p1.env.json"),
    ),
    (
        "packets/p2.env.json",
        include_bytes!("../../../../examples/packets/p2.env.json"),
    ),
    (
        "lattice/packet.json",
        include_bytes!("../../../../examples/lattice/packet.json"),
    ),
    (
        "lattice/rebind.json",
        include_bytes!("../../../../examples/lattice/rebind.json"),
    ),
    (
        "lineage/receipt.json",
        include_bytes!("../../../../examples/lineage/receipt.json"),
    ),
    (
        "reason/bundle.json",
        include_bytes!("../../../../examples/reason/bundle.json"),
    ),
];

/// A demo log in a new temporary folder: a key, a SQLite store whose
/// policy trusts the examples' packet key (and takes unsigned documents by
/// their own rules), the examples appended, and a write token. Returns the
/// folder (removed when dropped), the store's path and the token.
fn demo(out: &mut Output) -> Result<(tempfile::TempDir, String, String), Failure> {
    let dir = tempfile::Builder::new()
        .prefix("chit-demo-")
        .tempdir()
        .map_err(|e| Failure::error(format!("cannot make a folder for the demo: {e}")))?;
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| Failure::error(format!("no randomness: {e}")))?;
    let pem = chit_core::keys::SecretKey::from_seed(&seed)
        .to_pem()
        .map_err(|e| Failure::error(e.to_string()))?;
    seed.fill(0);
    let key_path = dir.path().join("log.pem");
    crate::files::write_private(&key_path, pem.as_bytes())
        .map_err(|e| Failure::error(format!("cannot write {}: {e}", key_path.display())))?;
    let signer = chit_log::NoteSigner::from_pkcs8_pem("demo.chit.localhost/log", &pem)
        .map_err(|e| Failure::error(e.to_string()))?;
    let store_path = dir.path().join("demo.db");
    let policy = chit_logstore::Policy {
        trust: Some(
            [
                include_str!("../../../../examples/packets/trust.toml"),
                include_str!("../../../../examples/lineage/trust.toml"),
            ]
            .join("\n"),
        ),
        threshold: 1,
        accept_unsigned: true,
        allow_unchecked: false,
    };
    let mut log = chit_logstore::Log::create(
        &store_path.display().to_string(),
        signer,
        &policy,
        Some(key_path.display().to_string()),
    )
    .map_err(|e| Failure::error(e.to_string()))?;
    let bytes: Vec<&[u8]> = DEMO.iter().map(|(_, b)| *b).collect();
    let sub = log
        .submit(&bytes)
        .map_err(|e| Failure::error(e.to_string()))?;
    for ((name, _), o) in DEMO.iter().zip(&sub.outcomes) {
        let what = match o {
            chit_logstore::Outcome::Appended { index, .. } => format!("logged at {index}"),
            chit_logstore::Outcome::Duplicate { index, .. } => format!("already at {index}"),
            chit_logstore::Outcome::Refused(r) => format!(
                "not logged ({})",
                r.errors.first().map(|f| f.rule).unwrap_or("partial")
            ),
            chit_logstore::Outcome::Unreadable(_) => "not logged (unreadable)".to_string(),
        };
        writeln!(out, "  examples/{name}: {what}").map_err(Failure::write)?;
    }
    let mut raw = [0u8; 24];
    getrandom::fill(&mut raw).map_err(|e| Failure::error(format!("no randomness: {e}")))?;
    let token = chit_core::digest::hex(&raw);
    let tokens = format!(
        "[[token]]\nname = \"demo\"\nsha256 = \"{}\"\n",
        chit_core::digest::sha256_hex(token.as_bytes())
    );
    // Private, as a tokens file must be (the server warns of one others
    // may read).
    crate::files::write_private(&dir.path().join("tokens.toml"), tokens.as_bytes())
        .map_err(|e| Failure::error(format!("cannot write the demo's tokens: {e}")))?;
    writeln!(
        out,
        "demo log in {} (removed when the server stops)\nlog key: {}\nwrite token: {token}",
        dir.path().display(),
        log.meta().verifier_key
    )
    .map_err(Failure::write)?;
    Ok((dir, store_path.display().to_string(), token))
}

pub fn run(a: &ServeArgs, out: &mut Output) -> CmdResult {
    let mut a = ServeArgs {
        store: a.store.clone(),
        demo: a.demo,
        quiet: a.quiet,
        key: a.key.clone(),
        origin: a.origin.clone(),
        policy: a.policy.clone(),
        listen: a.listen.clone(),
        tokens: a.tokens.clone(),
        header_timeout: a.header_timeout,
        request_timeout: a.request_timeout,
        max_lines: a.max_lines,
        max_in_flight: a.max_in_flight,
        witness_policy: a.witness_policy.clone(),
        witness_timeout: a.witness_timeout,
        witness_interval: a.witness_interval,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(http_threads())
        .enable_all()
        .build()
        .map_err(|e| Failure::error(format!("cannot start the async runtime: {e}")))?;
    // Bound before a log is made (a new one, or the demo's): a server that
    // cannot listen makes nothing, and prints no write token.
    let listener = runtime
        .block_on(crate::shared::net::listen(&a.listen))
        .map_err(|e| Failure::error(format!("cannot listen on {}: {e}", a.listen)))?;
    let demo_dir = if a.demo {
        let (dir, store, _token) = demo(out)?;
        a.store = Some(store);
        a.tokens = Some(dir.path().join("tokens.toml"));
        Some(dir)
    } else {
        None
    };
    let store = a.store.clone().unwrap_or_default();
    let a = &a;
    let mut warnings = Vec::new();
    let tokens = match &a.tokens {
        None => tokens::Tokens::default(),
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| Failure::error(format!("cannot read {}: {e}", p.display())))?;
            let tokens = tokens::Tokens::parse(&text)
                .map_err(|e| Failure::error(format!("{}: {e}", p.display())))?;
            warnings.extend(tokens::check_permissions(p).map_err(Failure::error)?);
            tokens
        }
    };
    let made = demo_dir.is_none() && new_log_if_fresh(a, &store, out)?;
    let mut writer = crate::shared::logs::open_with_key(&store, a.key.as_deref())?;
    if demo_dir.is_none() && !made {
        the_log_asked_for(a, &store, &writer)?;
    }
    // Signing new checkpoints over a store changed behind chit's back
    // would vouch for the change.
    writer.quick_check().map_err(|e| {
        Failure::error(format!(
            "{store} cannot be served: {e}; find what changed with chit log audit {store}"
        ))
    })?;
    writer
        .store()
        .housekeep_in_background()
        .map_err(|e| Failure::error(e.to_string()))?;
    check_threads();
    let reader = crate::shared::logs::open_store_log(&store)?;
    let prover = crate::shared::logs::open_store_log(&store)?;
    let checker = writer.checker();
    let origin = writer.meta().origin.clone();
    let log_keys = chit_core::kinds::log_bundle::LogKeys {
        policy: writer.own_policy().clone(),
    };
    let witness_policy = match &a.witness_policy {
        None => None,
        Some(p) => {
            let policy = crate::shared::logs::read_policy(p)?;
            if policy.quorum_is_none() {
                warnings.push(format!(
                    "--witness-policy {}: its quorum is none, so every checkpoint counts as cosigned",
                    p.display()
                ));
            }
            if policy.logs_of(&writer.meta().origin).is_empty() {
                warnings.push(format!(
                    "--witness-policy {} does not list this log ({}): readers with it will not trust its checkpoints",
                    p.display(),
                    writer.meta().verifier_key
                ));
            }
            Some(policy)
        }
    };
    let logging = crate::shared::logging::init(a.quiet);
    for w in &warnings {
        tracing::warn!(target: "chit::serve", "{w}");
    }
    let (jobs, queue) = tokio::sync::mpsc::unbounded_channel();
    let checking = sequencer::Checking::default();
    let sequencer = sequencer::start(writer, prover, queue, checking.clone())
        .map_err(|e| Failure::error(format!("cannot start the sequencer: {e}")))?;
    let witnessing = match witness_policy {
        None => None,
        Some(policy) => {
            let log = crate::shared::logs::open_store_log(&store)?;
            let _guard = runtime.enter();
            Some(
                witnessing::start(
                    policy,
                    log,
                    std::time::Duration::from_secs(a.witness_timeout),
                    std::time::Duration::from_millis(a.witness_interval),
                )
                .map_err(|e| Failure::error(format!("cannot start the witnessing: {e}")))?,
            )
        }
    };
    let state = Arc::new(api::AppState {
        reader: Mutex::new(reader),
        checker,
        jobs,
        checking,
        tokens,
        buckets: tokens::Buckets::default(),
        metrics: metrics::Metrics::default(),
        budget: budget::Budget::new(a.max_in_flight),
        max_lines: a.max_lines,
        health: health::Writes::default(),
        verify_limits: chit_core::Limits {
            max_values: MAX_VALUES,
            ..chit_core::Limits::default()
        },
        log_keys,
        verify_max: api::largest_verified(a.max_in_flight),
        request_timeout: std::time::Duration::from_secs(a.request_timeout),
        witnessing,
    });
    // Kept until the runtime is gone: the state's last owner drops its
    // store connections, and a PostgreSQL client may not be dropped on
    // the runtime (its own blocking runtime panics there).
    let kept = state.clone();
    let timeout = std::time::Duration::from_secs(a.request_timeout);
    let front = Front {
        routed: hyper_util::service::TowerToHyperService::new(router(state.clone(), timeout)),
        state,
        timeout,
    };
    let header_timeout = std::time::Duration::from_secs(a.header_timeout);
    let served = runtime.block_on(async {
        let addr = listener
            .local_addr()
            .map_err(|e| Failure::error(e.to_string()))?;
        tracing::info!(target: "chit::serve", origin = %origin, addr = %addr, "listening");
        writeln!(out, "chit serve: log {origin} at http://{addr}/").map_err(Failure::write)?;
        out.flush().map_err(Failure::write)?;
        serve_connections(listener, front, header_timeout).await;
        Ok(())
    });
    // Every request has been answered; the sequencer ends with its queue.
    runtime.shutdown_timeout(std::time::Duration::from_secs(10));
    // The queue's last sender goes with the state: the sequencer ends.
    drop(kept);
    let _ = sequencer.join();
    tracing::info!(target: "chit::serve", "stopped");
    logging.flush();
    served.map(|()| Exit::Ok)
}

/// `chit serve --store FILE` on a SQLite file that does not exist yet
/// makes a new log there, as `chit log init` would (so a fresh store just
/// works), and says whether it did. An existing file is opened as it is,
/// never replaced (nor a link written through).
fn new_log_if_fresh(a: &ServeArgs, store: &str, out: &mut Output) -> Result<bool, Failure> {
    let fresh = !chit_logstore::is_postgres(store)
        && matches!(std::fs::symlink_metadata(store), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    if !fresh {
        return Ok(false);
    }
    let Some(key) = a.key.as_deref() else {
        return Err(Failure::error(format!(
            "{store} does not exist: give --key FILE (chit keygen --out FILE makes one) to make a \
             new log there, or name an existing log"
        )));
    };
    let origin = match &a.origin {
        Some(o) => o.clone(),
        None => default_origin(store),
    };
    crate::shared::logs::create_log(store, key, &origin, &a.policy, out)?;
    Ok(true)
}

/// For an existing log, the options that make a new one must say what it
/// already is, or they are refused rather than ignored: a log's name and
/// policy are fixed when it is made (so the command that made a log runs
/// again as it was, and one that asks for another log does not serve
/// this one).
fn the_log_asked_for(a: &ServeArgs, store: &str, log: &chit_logstore::Log) -> Result<(), Failure> {
    let fixed = "a log's name and policy are fixed when it is made; chit log info shows them";
    if let Some(o) = &a.origin {
        if *o != log.meta().origin {
            return Err(Failure::error(format!(
                "{store} holds the log {}, not {o} ({fixed})",
                log.meta().origin
            )));
        }
    }
    if a.policy.given() {
        let asked = crate::shared::logs::policy_from(&a.policy)?;
        let differs = log.policy().differences(&asked);
        if !differs.is_empty() {
            return Err(Failure::error(format!(
                "{store} accepts {}; the options given differ: {} ({fixed})",
                log.policy().describe(),
                differs.join(", ")
            )));
        }
    }
    Ok(())
}

/// `chit.localhost/` and the file's name without its extension, each
/// character other than a letter, a digit, '.', '_' or '-' made '-' (a
/// log's name has no spaces or '+'); `chit.localhost/log` for no name.
fn default_origin(store: &str) -> String {
    let stem: String = std::path::Path::new(store)
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!(
        "chit.localhost/{}",
        if stem.is_empty() { "log" } else { &stem }
    )
}

/// The threads that check submissions: rayon's pool, one a core, named
/// (`chit-check-N`) so that a profile or `top -H` tells them from the
/// threads that answer (`tokio-rt-worker`) and sequence (`chit-sequencer`).
fn check_threads() {
    let _ = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("chit-check-{i}"))
        .build_global();
}

/// The threads that answer HTTP (`tokio-rt-worker`): half the cores, at
/// least one. They only parse requests and write answers: the checks run
/// on [`check_threads`] (one a core) and store reads on tokio's blocking
/// pool. Under load an answer costs these threads about half what its
/// check costs; one a core competed with the checks for the same cores
/// (less CPU an entry with half, at the same rate, in paired runs).
fn http_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get().div_ceil(2))
        .unwrap_or(1)
}

/// Accepts connections until Ctrl-C or SIGTERM, each served by hyper with a
/// deadline for its headers (a slowloris client is cut off); then answers
/// the requests in flight (at most 30 s more) and returns.
async fn serve_connections(
    listener: tokio::net::TcpListener,
    front: Front,
    header_timeout: std::time::Duration,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut stop = std::pin::pin!(crate::shared::net::shutdown());
    while let Some(stream) = crate::shared::net::accept(&listener, stop.as_mut()).await {
        let front = front.clone();
        let note = Arc::new(wire::FramingNote::default());
        let io = wire::Vetted::new(
            stream,
            MAX_BODY as u64,
            front.timeout,
            front.state.clone(),
            note.clone(),
        );
        let svc = hyper::service::service_fn(move |req| front.clone().answer(req, note.clone()));
        // hyper's own limits lie past wire's, which refuses in JSON
        // first. Half-closed: a connection whose next head was refused
        // still gets the answers it is owed, then the refusal.
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(header_timeout)
            .max_headers(wire::MAX_HEADERS + 28)
            .half_close(true)
            .serve_connection(TokioIo::new(io), svc);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
    drop(listener);
    tracing::info!(target: "chit::serve", "stopping: answering the requests in flight");
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), graceful.shutdown()).await;
}

#[cfg(test)]
mod tests {
    use super::default_origin;

    /// A new log's default name is the file's, made a valid log name.
    #[test]
    fn a_default_origin_is_a_valid_name() {
        for (store, origin) in [
            ("receipts.db", "chit.localhost/receipts"),
            ("/var/lib/chit/my log.db", "chit.localhost/my-log"),
            ("x+y.sqlite", "chit.localhost/x-y"),
            ("ünïcode.db", "chit.localhost/-n-code"),
            ("", "chit.localhost/log"),
            ("..", "chit.localhost/log"),
        ] {
            let o = default_origin(store);
            assert_eq!(o, origin, "{store:?}");
            assert!(chit_log::note::is_valid_name(&o), "{o:?}");
        }
    }
}
