//! `chit lineage`: commit a bound, measure an endpoint, open commitments.

use crate::cli::{BoundArgs, MeasureArgs, OpenArgs};
use crate::exit::{CmdResult, Exit, Failure};
use crate::files::write_new;
use crate::inputs;
use crate::output::Output;
use crate::shared::transcripts::read_transcript;
use anstream::eprintln;
use chit_core::kinds::numeric_lineage::arithmetic::{self as math, Bound, BoundError, Class};
use chit_gateway::{Api, Endpoint, Input, LevelSummary, NumericsFile, Observer, Plan, Request};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

pub fn bound(a: &BoundArgs, out: &mut Output) -> CmdResult {
    let b = Bound {
        committed_at: chit_core::time::format_unix_utc(now_secs()),
        max_differing_positions: a.max_differing_positions,
        min_first_divergent_index: a.min_first_divergent_index,
        max_distinct_sequences_per_level: a.max_distinct_sequences,
        required_repetitions_per_level: a.repetitions,
    };
    let digest = b.digest();
    let v = serde_json::json!({
        "schema": chit_core::kinds::lineage_bound::KIND,
        "committed_at": b.committed_at,
        "max_differing_positions": b.max_differing_positions,
        "min_first_divergent_index": b.min_first_divergent_index,
        "max_distinct_sequences_per_level": b.max_distinct_sequences_per_level,
        "required_repetitions_per_level": b.required_repetitions_per_level,
        "bound_digest_sha256": digest,
    });
    let text = serde_json::to_string_pretty(&v).unwrap_or_default() + "\n";
    // Logged before it is written: a bound file that exists was logged
    // (when --log is given), and a failed append leaves nothing behind.
    let logged = match &a.log {
        None => None,
        Some(store) => {
            if std::fs::symlink_metadata(&a.out).is_ok() {
                return Err(Failure::error(format!(
                    "{} exists; chit never overwrites it (choose another name)",
                    a.out.display()
                )));
            }
            let mut log =
                crate::shared::logs::open_for_append(store, a.log_signing_key.as_deref())?;
            let index = crate::shared::logs::append_one(&mut log, text.as_bytes(), "the bound")?;
            Some((index, log.meta().origin.clone()))
        }
    };
    write_new(&a.out, text.as_bytes())?;
    let _ = writeln!(out, "committed {} at {}", a.out.display(), b.committed_at);
    let _ = writeln!(out, "bound_digest_sha256 {digest}");
    if let Some((index, origin)) = logged {
        let _ = writeln!(out, "logged at index {index} in {origin}");
    }
    Ok(Exit::Ok)
}

/// Reads a bound file, checked by the core.
fn read_bound(path: &Path) -> Result<Bound, Failure> {
    let bytes =
        inputs::read(&inputs::Source::File(path.to_path_buf()), 1 << 20).map_err(|why| {
            Failure::error(format!("cannot read the bound {}: {why}", path.display()))
        })?;
    Bound::read_committed(&bytes, &Default::default()).map_err(|e| match e {
        BoundError::Unreadable(e) => {
            Failure::error(format!("cannot read the bound {}: {e}", path.display()))
        }
        BoundError::NotABound => Failure::error(format!("{} is {e}", path.display())),
        e => Failure::error(format!("{}: {e}", path.display())),
    })
}

/// Reads the request set: one `{"prompt", "max_tokens"?}` or
/// `{"messages": [{"role", "content"}, ...], "max_tokens"?}` a line; a set
/// is all prompts or all chats (it is measured at one URL).
fn read_requests(path: &Path, default_max: u64) -> Result<Vec<Request>, Failure> {
    let bytes = inputs::read(&inputs::Source::File(path.to_path_buf()), 64 << 20)
        .map_err(|why| Failure::error(format!("cannot read {}: {why}", path.display())))?;
    let mut out: Vec<Request> = Vec::new();
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let at = format!("{}:{}", path.display(), n + 1);
        let doc = chit_core::json::parse(line, &Default::default())
            .map_err(|e| Failure::error(format!("{at}: {}", e.starting_at_line(n + 1))))?;
        let v = doc.root();
        let input = match (v.get("prompt"), v.get("messages")) {
            (Some(_), Some(_)) => {
                return Err(Failure::error(format!(
                    "{at}: a line holds a \"prompt\" or \"messages\", not both"
                )))
            }
            (Some(p), None) => Input::Prompt(
                p.as_str()
                    .ok_or_else(|| Failure::error(format!("{at}: \"prompt\" must be a string")))?
                    .to_owned(),
            ),
            (None, Some(m)) => {
                Input::Chat(read_messages(m).map_err(|why| Failure::error(format!("{at}: {why}")))?)
            }
            (None, None) => {
                return Err(Failure::error(format!(
                    "{at}: each line needs a \"prompt\" string or chat \"messages\""
                )))
            }
        };
        let max_tokens = match v.get("max_tokens") {
            None => default_max,
            Some(m) => m
                .as_i64()
                .and_then(|x| u64::try_from(x).ok())
                .filter(|x| *x >= 1)
                .ok_or_else(|| {
                    Failure::error(format!("{at}: max_tokens must be a whole number ≥ 1"))
                })?,
        };
        let request = Request { input, max_tokens };
        if let Some(first) = out.first() {
            if first.is_chat() != request.is_chat() {
                let (this, that) = if request.is_chat() {
                    ("chat messages", "a prompt")
                } else {
                    ("a prompt", "chat messages")
                };
                return Err(Failure::error(format!(
                    "{at}: this line is {this} but the set's first is {that}; a set is measured at one URL, so give all prompts or all chats"
                )));
            }
        }
        out.push(request);
    }
    if out.is_empty() {
        return Err(Failure::error(format!(
            "{} holds no requests",
            path.display()
        )));
    }
    Ok(out)
}

/// A chat's messages: a non-empty list of `{"role": "...", "content":
/// "..."}`, nothing else in them (what every server's template takes).
fn read_messages(m: chit_core::doc::Val<'_>) -> Result<Vec<serde_json::Value>, String> {
    let items = m
        .as_array()
        .ok_or("\"messages\" must be a list of {\"role\", \"content\"} objects")?;
    let mut out = Vec::new();
    for (i, msg) in items.enumerate() {
        let field = |k: &str| {
            msg.get(k)
                .and_then(|x| x.as_str())
                .ok_or_else(|| format!("messages[{i}] needs a \"{k}\" string"))
        };
        let (role, content) = (field("role")?, field("content")?);
        if role.is_empty() {
            return Err(format!("messages[{i}] has an empty role"));
        }
        if let Some((other, _)) = msg.members().find(|(k, _)| *k != "role" && *k != "content") {
            return Err(format!(
                "messages[{i}] has \"{other}\": chit measures messages of a role and text content only"
            ));
        }
        out.push(serde_json::json!({"role": role, "content": content}));
    }
    if out.is_empty() {
        return Err("\"messages\" is empty".into());
    }
    Ok(out)
}

/// Progress bars per level on a terminal; elsewhere (a log file, CI) one
/// plain line a level on standard error as it ends: its number,
/// concurrency, requests done and elapsed time. Warnings always.
struct Shown {
    multi: Option<MultiProgress>,
    bars: Mutex<Vec<ProgressBar>>,
    /// How many levels the run has.
    levels: usize,
    /// Each level's concurrency, requests to measure, requests measured
    /// and start (for the plain lines).
    plain: Mutex<Vec<(u64, u64, u64, std::time::Instant)>>,
}

/// The plain progress line of a level that ended.
fn level_line(index: usize, levels: usize, level: (u64, u64, u64, std::time::Instant)) -> String {
    let (concurrency, total, done, started) = level;
    format!(
        "level {}/{levels}: concurrency {concurrency}, {done}/{total} requests, {:.1} s",
        index + 1,
        started.elapsed().as_secs_f64()
    )
}

impl Observer for Shown {
    fn level_started(&self, _index: usize, concurrency: u64, measured: u64) {
        self.plain.lock().unwrap_or_else(|p| p.into_inner()).push((
            concurrency,
            measured,
            0,
            std::time::Instant::now(),
        ));
        if let Some(m) = &self.multi {
            let bar = m.add(ProgressBar::new(measured));
            bar.set_style(
                ProgressStyle::with_template(
                    "level c={prefix:<5} {bar:30.cyan/blue} {pos}/{len} requests  {elapsed}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_prefix(concurrency.to_string());
            self.bars
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(bar);
        }
    }
    fn measured(&self, index: usize) {
        if let Some(l) = self
            .plain
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(index)
        {
            l.2 += 1;
        }
        if let Some(b) = self
            .bars
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(index)
        {
            b.inc(1);
        }
    }
    fn level_done(&self, index: usize, _s: &LevelSummary) {
        if let Some(b) = self
            .bars
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(index)
        {
            b.finish();
        }
        if self.multi.is_none() {
            let level = self
                .plain
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(index)
                .copied();
            if let Some(l) = level {
                eprintln!("{}", level_line(index, self.levels, l));
            }
        }
    }
    fn warn(&self, message: &str) {
        let line = format!("warning: {message}");
        match &self.multi {
            Some(m) => {
                let _ = m.println(line);
            }
            None => eprintln!("{line}"),
        }
    }
}

/// Checks every argument of `lineage measure` that can be checked without
/// the endpoint, so that nothing is created for a run that cannot start.
fn check_measure_args(a: &MeasureArgs) -> Result<(), Failure> {
    let levels = a
        .levels
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    if a.levels.len() < 2 {
        return Err(Failure::error(format!(
            "--levels {levels}: give at least two levels, e.g. --levels 1,8,32"
        )));
    }
    if a.levels[0] == 0 || a.levels.windows(2).any(|w| w[1] <= w[0]) {
        return Err(Failure::error(format!(
            "--levels {levels}: levels must be positive and strictly increasing, e.g. --levels 1,8,32"
        )));
    }
    for (flag, url) in [
        ("--endpoint", Some(&a.endpoint)),
        ("--reroute", a.reroute.as_ref()),
    ] {
        if let Some(url) = url {
            let lower = url.to_ascii_lowercase();
            let rest = lower
                .strip_prefix("http://")
                .or_else(|| lower.strip_prefix("https://"));
            if rest.is_none_or(|r| r.is_empty() || r.starts_with('/')) {
                return Err(Failure::error(format!(
                    "{flag} {url}: give an http:// or https:// URL, e.g. http://127.0.0.1:8000/v1"
                )));
            }
        }
    }
    if a.max_tokens == 0 {
        return Err(Failure::error(
            "--max-tokens 0: a request must ask for at least one token",
        ));
    }
    if a.out == a.transcript {
        return Err(Failure::error(format!(
            "--out and --transcript are both {}: give two files",
            a.out.display()
        )));
    }
    for (what, path) in [("receipt", &a.out), ("transcript", &a.transcript)] {
        if std::fs::symlink_metadata(path).is_ok() {
            return Err(Failure::error(format!(
                "{} exists; chit never overwrites a {what} (choose another name)",
                path.display()
            )));
        }
    }
    Ok(())
}

/// `chit lineage measure`: the bound committed (and logged, with --log)
/// before anything is sent, the endpoint measured level by level into the
/// transcript, the receipt signed, written and logged, and what it found
/// said.
pub fn measure(a: &MeasureArgs, out: &mut Output) -> CmdResult {
    check_measure_args(a)?;
    let bound = read_bound(&a.bound)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as i128;
    bound
        .committed_before(now)
        .map_err(|e| Failure::error(format!("the bound in {}: {e}", a.bound.display())))?;
    let requests = read_requests(&a.requests, a.max_tokens)?;
    let key = crate::shared::keys::read_key(&a.key)?;
    // With --log, the bound must be in the log before anything is sent.
    let mut logged = match &a.log {
        None => None,
        Some(store) => Some(bound_in_log(store, a)?),
    };
    let numerics = read_numerics(a.numerics.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::error(format!("cannot start the async runtime: {e}")))?;
    let chat = chit_gateway::is_chat_set(&requests);
    let (api, measured_url) = resolve_endpoint(a, &runtime, chat)?;
    let plan = Plan {
        endpoint: Endpoint {
            url: a.endpoint.clone(),
            api: Some(api),
        },
        model: a.model.clone(),
        requests,
        levels: a.levels.clone(),
        repetitions: a.repetitions,
        bound,
        numerics,
        reroute: a.reroute.clone(),
        gateway: gateway_name(a),
        lineage_id: a
            .lineage_id
            .clone()
            .unwrap_or_else(|| format!("lineage-{}", now_secs())),
        timeout: Duration::from_secs(a.timeout.max(1)),
        fill_timeout: Duration::from_secs(a.fill_timeout.max(1)),
        filler_max_tokens: a.filler_max_tokens.max(1),
    };
    let log_header = logged.as_ref().map(|(_, b)| b);
    let mut transcript = open_transcript(a, &plan, api, &measured_url, log_header)?;
    let shown = Shown {
        multi: std::io::stderr().is_terminal().then(MultiProgress::new),
        bars: Mutex::new(Vec::new()),
        levels: plan.levels.len(),
        plain: Mutex::new(Vec::new()),
    };
    let measured = run_until_stopped(&runtime, &plan, &key, &mut transcript, &shown);
    runtime.shutdown_timeout(Duration::from_millis(200));
    let measured = measured.map_err(|(f, signal)| no_receipt(f, signal, &a.transcript))?;
    let text = serde_json::to_string_pretty(&measured.receipt).unwrap_or_default() + "\n";
    write_new(&a.out, text.as_bytes())?;
    let receipt_index = match logged.as_mut() {
        Some((log, _)) => Some(crate::shared::logs::append_one(
            log,
            text.as_bytes(),
            "the receipt",
        )?),
        None => None,
    };
    table(out, &measured.levels)?;
    say_measured(out, a, &measured)?;
    if let (Some((log, bound)), Some(index)) = (&logged, receipt_index) {
        writeln!(
            out,
            "logged      receipt at index {index}, after its bound at {} in {}; prove the order with chit log bundle {} {index}",
            bound.index,
            log.meta().origin,
            bound.index
        )
        .map_err(Failure::write)?;
    }
    Ok(Exit::Ok)
}

/// The numerics file (`--numerics`), or none.
fn read_numerics(path: Option<&Path>) -> Result<NumericsFile, Failure> {
    let Some(p) = path else {
        return Ok(NumericsFile::default());
    };
    let text = std::fs::read_to_string(p)
        .map_err(|e| Failure::error(format!("cannot read {}: {e}", p.display())))?;
    NumericsFile::parse(&text).map_err(|e| Failure::error(format!("{}: {e}", p.display())))
}

/// The gateway's own name: `--gateway-name`, or chit-gateway@ this host.
fn gateway_name(a: &MeasureArgs) -> String {
    a.gateway_name.clone().unwrap_or_else(|| {
        let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
        format!("chit-gateway@{}", host.trim())
    })
}

/// The API and the URL measured, found before anything is written or sent,
/// and said: the transcript and the receipt commit to that URL.
fn resolve_endpoint(
    a: &MeasureArgs,
    runtime: &tokio::runtime::Runtime,
    chat: bool,
) -> Result<(Api, String), Failure> {
    let endpoint = Endpoint {
        url: a.endpoint.clone(),
        api: a.api.as_deref().and_then(Api::parse),
    };
    let (api, measured_url) = runtime
        .block_on(endpoint.resolve(chat))
        .map_err(|f| Failure::error(f.message))?;
    let rendered = match endpoint.template_url(api) {
        Some(url) if chat => format!(", chat messages rendered by the server's template at {url}"),
        _ => String::new(),
    };
    eprintln!(
        "measuring {} through the {} API at {measured_url}{rendered}{}",
        a.model,
        api.name(),
        if endpoint.api.is_some() {
            ""
        } else {
            " (found by asking the server; --api names it)"
        }
    );
    Ok((api, measured_url))
}

/// The transcript, created (never overwritten) with its header: what is
/// measured, against which bound, and where the bound is logged.
fn open_transcript(
    a: &MeasureArgs,
    plan: &Plan,
    api: Api,
    measured_url: &str,
    logged: Option<&chit_logstore::Bundle>,
) -> Result<chit_gateway::TranscriptWriter, Failure> {
    let salt = chit_gateway::fresh_salt().map_err(|f| Failure::error(f.message))?;
    let header = serde_json::json!({
        "transcript": "chit numeric.lineage transcript 1",
        "lineage_id": plan.lineage_id,
        "endpoint": measured_url,
        "gateway": plan.gateway,
        "reroute": plan.reroute,
        "model": plan.model,
        "api": api.name(),
        "levels": plan.levels,
        "repetitions": plan.repetitions,
        "bound": {
            "committed_at": plan.bound.committed_at,
            "bound_digest_sha256": plan.bound.digest(),
        },
        "started_at": chit_gateway::rfc3339_micros(SystemTime::now()),
        "log": logged.map(|b| serde_json::json!({
            "origin": b.origin,
            "bound_index": b.index,
            "checkpoint": String::from_utf8_lossy(&b.checkpoint),
        })),
    });
    let objects = chit_gateway::request_objects(&plan.model, &plan.requests);
    chit_gateway::TranscriptWriter::create(&a.transcript, salt, header, &objects).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Failure::error(format!(
                "{} exists; chit never overwrites a transcript",
                a.transcript.display()
            ))
        } else {
            Failure::error(format!("cannot write {}: {e}", a.transcript.display()))
        }
    })
}

/// The measurement, run until it ends or Ctrl-C (SIGINT) or SIGTERM stops
/// it; a stopped run says which signal stopped it, and its transcript ends
/// with its end line before chit exits.
fn run_until_stopped(
    runtime: &tokio::runtime::Runtime,
    plan: &Plan,
    key: &chit_core::keys::SecretKey,
    transcript: &mut chit_gateway::TranscriptWriter,
    shown: &Shown,
) -> Result<chit_gateway::Measured, (chit_gateway::Stopped, &'static str)> {
    let stop = Arc::new(tokio::sync::Notify::new());
    let signal: Arc<Mutex<&'static str>> = Arc::new(Mutex::new("Ctrl-C"));
    let result = runtime.block_on(async {
        let s = stop.clone();
        let which = signal.clone();
        #[cfg(unix)]
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::spawn(async move {
            #[cfg(unix)]
            let terminated = async {
                match term.as_mut() {
                    Some(t) => t.recv().await,
                    None => std::future::pending().await,
                }
            };
            #[cfg(not(unix))]
            let terminated = std::future::pending::<Option<()>>();
            tokio::select! {
                r = tokio::signal::ctrl_c() => {
                    if r.is_err() {
                        return;
                    }
                }
                _ = terminated => {
                    *which.lock().unwrap_or_else(|p| p.into_inner()) = "SIGTERM";
                }
            }
            s.notify_one();
        });
        chit_gateway::measure(plan, key, transcript, shown, stop).await
    });
    let which = *signal.lock().unwrap_or_else(|p| p.into_inner());
    result.map_err(|f| (f, which))
}

/// A measurement that stopped: no receipt, the transcript kept.
fn no_receipt(f: chit_gateway::Stopped, signal: &str, transcript: &Path) -> Failure {
    let (exit, why) = if f.interrupted {
        (Exit::Interrupted, format!("interrupted ({signal})"))
    } else {
        (Exit::Error, f.message)
    };
    Failure {
        exit,
        message: format!(
            "{why}; no receipt was signed. The transcript so far is kept in {}, marked incomplete",
            transcript.display()
        ),
    }
}

/// The divergence, the class and the receipt signed.
fn say_measured(out: &mut Output, a: &MeasureArgs, measured: &chit_gateway::Measured) -> CmdResult {
    let d = &measured.divergence;
    let c = &d.comparison;
    // The palette is empty where colour is not wanted (a pipe, --color
    // never, NO_COLOR): the class is coloured on a terminal only.
    let style = match measured.class {
        Class::Invariant => out.palette.good,
        Class::Coupled => out.palette.bad,
        Class::Indeterminate => out.palette.warn,
    };
    let io = Failure::write;
    writeln!(
        out,
        "divergence  levels 0 and {}: {} of {} positions differ{}",
        d.high,
        c.differing,
        c.compared,
        c.first
            .map(|f| format!(", first at position {f}"))
            .unwrap_or_default()
    )
    .map_err(io)?;
    writeln!(out, "class       {style}{}{style:#}", measured.class.name()).map_err(io)?;
    writeln!(
        out,
        "signed      {} ({})",
        a.out.display(),
        measured.receipt["receipt_id"].as_str().unwrap_or("")
    )
    .map_err(io)?;
    Ok(Exit::Ok)
}

/// The log a measurement runs against (`--log`), ready to append the
/// receipt, and the bound's bundle: the bound's exact bytes must be in it.
fn bound_in_log(
    store: &str,
    a: &MeasureArgs,
) -> Result<(chit_logstore::Log, chit_logstore::Bundle), Failure> {
    let mut log = crate::shared::logs::open_for_append(store, a.log_signing_key.as_deref())?;
    let bytes = inputs::read(&inputs::Source::File(a.bound.clone()), 1 << 20).map_err(|why| {
        Failure::error(format!(
            "cannot read the bound {}: {why}",
            a.bound.display()
        ))
    })?;
    let sha: [u8; 32] = chit_core::digest::sha256(&bytes);
    let index = log
        .locate(chit_logstore::EntryName::Address(sha))
        .map_err(|e| Failure::error(e.to_string()))?
        .ok_or_else(|| {
            Failure::invalid(format!(
                "the bound {} is not in the log {store}: log it before measuring (chit lineage bound --log, or chit log append {})",
                a.bound.display(),
                a.bound.display()
            ))
        })?;
    let bundle = log
        .bundle(index)
        .map_err(|e| Failure::error(e.to_string()))?;
    Ok((log, bundle))
}

fn table(out: &mut Output, levels: &[LevelSummary]) -> Result<(), Failure> {
    let io = Failure::write;
    writeln!(
        out,
        "{:>5}  {:>11}  {:>8}  {:>10}  {:>8}  {:>8}",
        "level", "concurrency", "accept", "complete", "distinct", "tokens"
    )
    .map_err(io)?;
    for (i, l) in levels.iter().enumerate() {
        writeln!(
            out,
            "{:>5}  {:>11}  {:>8}  {:>10}  {:>8}  {:>8}",
            i,
            l.concurrency,
            l.observed_at_accept,
            l.observed_at_complete,
            l.distinct_sequences,
            l.tokens
        )
        .map_err(io)?;
    }
    Ok(())
}

pub fn open(a: &OpenArgs, out: &mut Output) -> CmdResult {
    let t = read_transcript(&a.transcript, &a.limits.limits())?;
    let mut items = vec![(
        "salt",
        None,
        math::salt_commitment(&t.salt),
        math::salt_preimage(&t.salt),
    )];
    for (what, value) in [
        ("gateway", Some(&t.gateway)),
        ("endpoint", Some(&t.endpoint)),
        ("reroute target", t.reroute.as_ref()),
    ] {
        if let Some(v) = value {
            items.push((
                what,
                Some(v.clone()),
                math::identity_commitment(&t.salt, v),
                math::identity_preimage(&t.salt, v),
            ));
        }
    }
    let io = Failure::write;
    if a.json {
        let v = serde_json::json!({
            "salt": t.salt,
            "commitments": items.iter().map(|(what, value, c, pre)| serde_json::json!({
                "what": what,
                "value": value,
                "commitment_sha256": c,
                "preimage": String::from_utf8_lossy(pre),
            })).collect::<Vec<_>>(),
        });
        writeln!(out, "{v}").map_err(io)?;
        return Ok(Exit::Ok);
    }
    writeln!(out, "salt  {}", t.salt).map_err(io)?;
    for (what, value, c, pre) in &items {
        writeln!(out).map_err(io)?;
        match value {
            Some(v) => writeln!(out, "{what}  {v}").map_err(io)?,
            None => writeln!(out, "{what}").map_err(io)?,
        }
        writeln!(out, "  commitment  {c}").map_err(io)?;
        writeln!(out, "  preimage    {}", String::from_utf8_lossy(pre)).map_err(io)?;
    }
    writeln!(
        out,
        "\nEach commitment is the SHA-256 of its preimage's bytes (RFC 8785 JSON), e.g.\n  printf '%s' 'PREIMAGE' | sha256sum"
    )
    .map_err(io)?;
    Ok(Exit::Ok)
}
