//! chit-gateway, the numeric-lineage measurement gateway: sends one request
//! set to an LLM endpoint at two or more induced batch occupancy levels,
//! records the token ids it gets back, and builds the `numeric.lineage`
//! receipt from what it saw (with `chit_core::kinds::numeric_lineage`).
//!
//! How a level is measured (concurrency c, repetitions R, N requests):
//!
//! 1. c − 1 *fillers* (other prompts, not measured) are started and kept
//!    decoding for the whole level; a filler that ends is started again.
//! 2. Once all c − 1 are decoding (each has received its first token), one
//!    measured request is sent, so it joins a batch that is already full;
//!    it is streamed to its end, and the next one follows. Every request is
//!    streamed, because occupancy is observed, not assumed: a request counts
//!    as decoding from its first token to its last.
//! 3. If the fillers are not all decoding within the fill timeout, the
//!    endpoint cannot be brought to c (it serialises, or has fewer slots):
//!    the fillers are stopped, the level is measured as it is, and its
//!    observed in-flight count makes the receipt `indeterminate`.
//!
//! Every measured sequence is written to the transcript as soon as it is
//! complete, so an interrupted run keeps what it measured; the transcript
//! is then marked incomplete and no receipt is signed.

#![forbid(unsafe_code)]

mod api;
mod transcript;

pub use api::{Api, Endpoint};
pub use transcript::TranscriptWriter;

use chit_core::keys::SecretKey;
use chit_core::kinds::numeric_lineage::arithmetic::{self, Bound, Class, Runs};
use chit_core::kinds::numeric_lineage::receipt::{self, LevelRecord, Measurement, Numerics};
use chit_core::kinds::numeric_lineage::transcript::ServerOccupancy;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::Notify;

/// One request of the set: what is committed and sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub input: Input,
    pub max_tokens: u64,
}

/// What a request asks the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// A prompt, sent as it is.
    Prompt(String),
    /// Chat messages, each `{"role", "content"}`: sent to the server's
    /// chat endpoint, or rendered into a prompt by the server's own
    /// template first where its API gives token ids only for prompts
    /// (llama.cpp's `/apply-template`, then `/completion`).
    Chat(Vec<serde_json::Value>),
    /// Only as sent, never in a set as asked: a chat the server's template
    /// rendered into the prompt's token ids (SGLang's `/v1/tokenize`, then
    /// `/generate` with `input_ids`).
    TokenIds(Vec<u64>),
}

impl Request {
    pub fn prompt(prompt: impl Into<String>, max_tokens: u64) -> Request {
        Request {
            input: Input::Prompt(prompt.into()),
            max_tokens,
        }
    }

    /// Asked as chat messages (whether or not rendered since).
    pub fn is_chat(&self) -> bool {
        matches!(self.input, Input::Chat(_) | Input::TokenIds(_))
    }
}

/// Whether a request set is chat messages (then every request is): a set
/// is measured at one URL, so it is all prompts or all chats.
pub fn is_chat_set(requests: &[Request]) -> bool {
    requests.first().is_some_and(Request::is_chat)
}

/// Per-level numerics declarations: a default, and overrides by concurrency.
#[derive(Clone, Debug, Default)]
pub struct NumericsFile {
    pub default: Numerics,
    pub by_concurrency: Vec<(u64, Numerics)>,
}

impl NumericsFile {
    pub fn for_level(&self, concurrency: u64) -> Numerics {
        self.by_concurrency
            .iter()
            .find(|(c, _)| *c == concurrency)
            .map(|(_, n)| n.clone())
            .unwrap_or_else(|| self.default.clone())
    }

    /// Reads `{"accumulator_width_id": ..., ..., "levels": {"8": {...}}}`:
    /// top-level fields apply to every level, `levels` overrides them for a
    /// concurrency.
    pub fn parse(text: &str) -> Result<NumericsFile, NumericsError> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(NumericsError::NotJson)?;
        let obj = v.as_object().ok_or(NumericsError::NotAnObject)?;
        let default = numerics_from(obj, &Numerics::default())?;
        let mut by_concurrency = Vec::new();
        if let Some(levels) = obj.get("levels") {
            let levels = levels.as_object().ok_or(NumericsError::Levels)?;
            for (c, fields) in levels {
                let level: u64 = c.parse().map_err(|_| NumericsError::LevelKey(c.clone()))?;
                let fields = fields
                    .as_object()
                    .ok_or(NumericsError::LevelNotAnObject(level))?;
                by_concurrency.push((level, numerics_from(fields, &default)?));
            }
        }
        Ok(NumericsFile {
            default,
            by_concurrency,
        })
    }
}

/// Why a numerics file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum NumericsError {
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("the numerics file must be a JSON object")]
    NotAnObject,
    #[error("'levels' must map a concurrency to its fields")]
    Levels,
    #[error("'levels' key '{0}' is not a concurrency")]
    LevelKey(String),
    #[error("levels.{0} must be an object")]
    LevelNotAnObject(u64),
    #[error("{field} must be {wants}")]
    Field { field: String, wants: &'static str },
    #[error("unknown numerics field '{0}'")]
    Unknown(String),
}

fn numerics_from(
    obj: &serde_json::Map<String, serde_json::Value>,
    base: &Numerics,
) -> Result<Numerics, NumericsError> {
    let mut n = base.clone();
    for (k, v) in obj {
        let wrong = |wants: &'static str| NumericsError::Field {
            field: k.clone(),
            wants,
        };
        let s = || {
            v.as_str()
                .filter(|s| !s.is_empty() && s.len() <= 128)
                .map(str::to_owned)
                .ok_or_else(|| wrong("a non-empty string"))
        };
        let b = || v.as_bool().ok_or_else(|| wrong("true or false"));
        match k.as_str() {
            "accumulator_width_id" => n.accumulator_width_id = s()?,
            "operand_width_id" => n.operand_width_id = s()?,
            "reduction_order_id" => n.reduction_order_id = s()?,
            "parameter_region_id" => n.parameter_region_id = s()?,
            "reduction_split_count" => {
                n.reduction_split_count = v
                    .as_u64()
                    .filter(|x| *x >= 1)
                    .ok_or_else(|| wrong("a whole number ≥ 1"))?
            }
            "page_layout_fixed_before_kernel" => n.page_layout_fixed_before_kernel = b()?,
            "batch_invariant_declared" => n.batch_invariant_declared = b()?,
            "levels" => {}
            other => return Err(NumericsError::Unknown(other.to_string())),
        }
    }
    Ok(n)
}

/// Everything a measurement needs.
pub struct Plan {
    pub endpoint: Endpoint,
    pub model: String,
    pub requests: Vec<Request>,
    pub levels: Vec<u64>,
    pub repetitions: u64,
    pub bound: Bound,
    pub numerics: NumericsFile,
    /// A reroute target the operator declares batch invariant.
    pub reroute: Option<String>,
    /// The gateway's own name (committed, never shown).
    pub gateway: String,
    pub lineage_id: String,
    /// The longest a measured request may take, from sending it to its
    /// last token (the whole request, however its tokens trickle in); also
    /// the longest wait for any request's next bytes.
    pub timeout: Duration,
    /// Longest wait for the fillers of a level to be decoding.
    pub fill_timeout: Duration,
    /// Tokens a filler asks for (it is started again when it ends).
    pub filler_max_tokens: u64,
}

/// What a caller is told while a measurement runs.
pub trait Observer: Send + Sync {
    fn level_started(&self, _index: usize, _concurrency: u64, _measured: u64) {}
    fn measured(&self, _index: usize) {}
    fn level_done(&self, _index: usize, _summary: &LevelSummary) {}
    fn warn(&self, _message: &str) {}
}

/// Nothing is shown.
pub struct Quiet;
impl Observer for Quiet {}

/// One level, as the end-of-run table shows it.
#[derive(Clone, Debug)]
pub struct LevelSummary {
    pub concurrency: u64,
    pub observed_at_accept: u64,
    pub observed_at_complete: u64,
    pub distinct_sequences: u64,
    pub tokens: u64,
}

/// A measurement that ended with a signed receipt.
pub struct Measured {
    pub receipt: serde_json::Value,
    pub class: Class,
    pub divergence: arithmetic::Divergence,
    pub levels: Vec<LevelSummary>,
}

/// Why a measurement stopped without a receipt.
#[derive(Debug)]
pub struct Stopped {
    pub message: String,
    pub interrupted: bool,
}

impl Stopped {
    fn new(message: impl Into<String>) -> Stopped {
        Stopped {
            message: message.into(),
            interrupted: false,
        }
    }
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// RFC 3339 UTC with microseconds.
pub fn rfc3339_micros(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let whole = chit_core::time::format_unix_utc(d.as_secs());
    format!("{}.{:06}Z", &whole[..whole.len() - 1], d.subsec_micros())
}

/// Fresh salt: 32 random bytes, hex.
pub fn fresh_salt() -> Result<String, Stopped> {
    let mut salt = [0u8; 32];
    getrandom::fill(&mut salt)
        .map_err(|e| Stopped::new(format!("no randomness for the salt: {e}")))?;
    Ok(chit_core::digest::hex(&salt))
}

/// The request objects exactly as committed: model, prompt or messages,
/// max_tokens, temperature 0 (the chat request as the gateway was asked to
/// send it, whatever API carries it).
pub fn request_objects(model: &str, requests: &[Request]) -> Vec<serde_json::Value> {
    requests
        .iter()
        .map(|r| {
            let mut o = serde_json::json!({
                "model": model,
                "max_tokens": r.max_tokens,
                "temperature": 0,
            });
            match &r.input {
                Input::Prompt(p) => o["prompt"] = p.clone().into(),
                Input::Chat(m) => o["messages"] = m.clone().into(),
                Input::TokenIds(ids) => o["input_ids"] = ids.clone().into(),
            }
            o
        })
        .collect()
}

/// Who is decoding now: the gateway's requests between their first and
/// last token.
#[derive(Default)]
struct Occupancy {
    decoding: AtomicU64,
    changed: Notify,
}

impl Occupancy {
    fn enter(&self) -> u64 {
        let n = self.decoding.fetch_add(1, Ordering::SeqCst) + 1;
        self.changed.notify_waiters();
        n
    }
    fn leave(&self) {
        self.decoding.fetch_sub(1, Ordering::SeqCst);
        self.changed.notify_waiters();
    }
    fn now(&self) -> u64 {
        self.decoding.load(Ordering::SeqCst)
    }
}

/// Keeps a request counted as decoding until dropped.
struct Decoding<'a>(Option<&'a Occupancy>);

impl<'a> Decoding<'a> {
    fn start(&mut self, occ: &'a Occupancy) -> u64 {
        self.0 = Some(occ);
        occ.enter()
    }
}

impl Drop for Decoding<'_> {
    fn drop(&mut self) {
        if let Some(o) = self.0.take() {
            o.leave();
        }
    }
}

/// One measured request's record.
struct Sequence {
    tokens: Vec<u64>,
    at_accept: u64,
    at_complete: u64,
    id: Option<String>,
    elapsed_us: u64,
}

/// Runs the measurement, writing the transcript as it goes, and signs the
/// receipt. `stop` ends it early (Ctrl-C): the transcript is kept and marked
/// incomplete, and no receipt is signed.
pub async fn measure(
    plan: &Plan,
    key: &SecretKey,
    transcript: &mut TranscriptWriter,
    observer: &dyn Observer,
    stop: Arc<Notify>,
) -> Result<Measured, Stopped> {
    let result = tokio::select! {
        r = run(plan, key, transcript, observer) => r,
        _ = stop.notified() => Err(Stopped {
            message: "interrupted".into(),
            interrupted: true,
        }),
    };
    match &result {
        Ok(m) => {
            let id = m.receipt["receipt_id"].as_str().unwrap_or("").to_owned();
            transcript
                .end(None, Some(&id))
                .map_err(|e| Stopped::new(format!("cannot write the transcript: {e}")))?;
        }
        Err(f) => {
            let _ = transcript.end(Some(&f.message), None);
        }
    }
    result
}

async fn run(
    plan: &Plan,
    key: &SecretKey,
    transcript: &mut TranscriptWriter,
    observer: &dyn Observer,
) -> Result<Measured, Stopped> {
    if plan.levels.len() < 2 {
        return Err(Stopped::new("give at least two levels (--levels 1,8,32)"));
    }
    if plan.levels.windows(2).any(|w| w[1] <= w[0]) || plan.levels[0] == 0 {
        return Err(Stopped::new(
            "levels must be positive and strictly increasing",
        ));
    }
    if plan.repetitions < plan.bound.required_repetitions_per_level {
        observer.warn(&format!(
            "{} repetitions, but the bound requires {}: the class will be indeterminate",
            plan.repetitions, plan.bound.required_repetitions_per_level
        ));
    }
    let committed = chit_core::time::rfc3339_nanos(&plan.bound.committed_at)
        .ok_or_else(|| Stopped::new("the bound's committed_at is not a UTC time"))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as i128;
    if committed >= now {
        return Err(Stopped::new(format!(
            "the bound was committed at {}, not before now: a bound must be fixed before the measurement starts",
            plan.bound.committed_at
        )));
    }
    let chat = is_chat_set(&plan.requests);
    if plan.requests.iter().any(|r| r.is_chat() != chat) {
        return Err(Stopped::new(
            "the request set mixes prompts and chat messages; a set is measured at one URL, so give all prompts or all chats",
        ));
    }
    let client = api::client(plan.timeout)?;
    let endpoint = &plan.endpoint;
    let api = endpoint.api(&client).await?;
    transcript.set_api(api.name());
    // Chat requests the server's API cannot decode with token ids are
    // rendered by the server's own template first, and the rendered
    // prompts recorded beside the request set.
    let sent = match api::render_chats(&client, endpoint, api, &plan.requests).await? {
        Some(rendered) => {
            transcript
                .rendered_prompts(&rendered.source, &rendered.requests)
                .map_err(|e| Stopped::new(format!("cannot write the transcript: {e}")))?;
            rendered.requests
        }
        None => plan.requests.clone(),
    };
    let lane = Lane::start(plan, api)?;
    let salt = transcript.salt().to_owned();
    let objects = request_objects(&plan.model, &plan.requests);
    let mut measured_at: Option<String> = None;
    let mut levels = Vec::new();
    let mut summaries = Vec::new();
    for (index, &c) in plan.levels.iter().enumerate() {
        observer.level_started(index, c, plan.repetitions * plan.requests.len() as u64);
        // The server's own count, sampled while the level runs (where it
        // reports one): recorded, never believed, and said when it never
        // reaches the level's concurrency.
        let sampling = Arc::new(Notify::new());
        let sampler = tokio::spawn(sample_server(
            client.clone(),
            endpoint.occupancy_sources(api),
            api,
            sampling.clone(),
        ));
        let runs = measure_level(
            plan,
            &sent,
            &client,
            api,
            &lane,
            index,
            c,
            transcript,
            observer,
            &mut measured_at,
        )
        .await;
        sampling.notify_one();
        let samples = sampler.await.ok().flatten();
        let (runs, accept, complete) = runs?;
        if let Some(s) = samples {
            let max = transcript
                .server_occupancy(index, &s.source, &s.samples)
                .map_err(|e| Stopped::new(format!("cannot write the transcript: {e}")))?;
            let seen = ServerOccupancy {
                max,
                source: s.source,
                samples: s.samples.len(),
            };
            if let Some(why) = seen.short_of(c, index as u64) {
                observer.warn(&why);
            }
        }
        let summary = LevelSummary {
            concurrency: c,
            observed_at_accept: accept,
            observed_at_complete: complete,
            distinct_sequences: arithmetic::distinct_count(&runs),
            tokens: arithmetic::token_count(&runs),
        };
        observer.level_done(index, &summary);
        summaries.push(summary);
        levels.push(LevelRecord {
            induced_concurrency: c,
            observed_in_flight_at_accept: accept,
            observed_in_flight_at_complete: complete,
            runs,
            numerics: plan.numerics.for_level(c),
        });
    }
    let set_canonical = receipt::canonical_of(&serde_json::Value::Array(objects))
        .map_err(|e| Stopped::new(format!("cannot canonicalise the request set: {e}")))?;
    let m = Measurement {
        lineage_id: plan.lineage_id.clone(),
        salt_hex: salt,
        gateway: plan.gateway.clone(),
        // What was measured: the URL the requests went to.
        endpoint: endpoint.route(api, chat),
        model: plan.model.clone(),
        bound: plan.bound.clone(),
        request_set_canonical: set_canonical,
        request_count: plan.requests.len() as u64,
        max_output_tokens: plan
            .requests
            .iter()
            .map(|r| r.max_tokens)
            .max()
            .unwrap_or(1),
        levels,
        measured_at: measured_at.unwrap_or_default(),
        reroute: plan.reroute.clone(),
    };
    let effected = SystemTime::now();
    let found = m
        .body(&rfc3339_micros(effected))
        .map_err(|e| Stopped::new(e.to_string()))?;
    let ts = effected
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let receipt = receipt::sign(found.body, key, ts).map_err(|e| Stopped::new(e.to_string()))?;
    Ok(Measured {
        receipt,
        class: found.class,
        divergence: found.divergence,
        levels: summaries,
    })
}

/// What the server said of its own load while a level ran.
struct ServerSamples {
    source: String,
    /// (milliseconds since the level started, requests running).
    samples: Vec<(u64, u64)>,
}

/// Samples the server's own count of running requests every 25 ms until
/// `stop`: from the first of `sources` that answers; None where none does.
async fn sample_server(
    client: reqwest::Client,
    sources: Vec<String>,
    api: Api,
    stop: Arc<Notify>,
) -> Option<ServerSamples> {
    let started = Instant::now();
    let mut source: Option<String> = None;
    let mut samples = Vec::new();
    loop {
        let reading = match &source {
            Some(url) => api::server_running(&client, url, api).await,
            None => {
                let mut found = None;
                for url in &sources {
                    if let Some(n) = api::server_running(&client, url, api).await {
                        found = Some((url.clone(), n));
                        break;
                    }
                }
                match found {
                    Some((url, n)) => {
                        source = Some(url);
                        Some(n)
                    }
                    // The server reports no load: nothing to sample.
                    None => return None,
                }
            }
        };
        if let Some(n) = reading {
            samples.push((started.elapsed().as_millis() as u64, n));
        }
        tokio::select! {
            _ = stop.notified() => break,
            _ = tokio::time::sleep(Duration::from_millis(25)) => {}
        }
    }
    source.map(|source| ServerSamples { source, samples })
}

/// A level: R repetitions of the N measured requests, each sent once c − 1
/// fillers are decoding. Returns the runs and the smallest in-flight counts
/// at accept and at completion.
#[allow(clippy::too_many_arguments)]
async fn measure_level(
    plan: &Plan,
    sent: &[Request],
    client: &reqwest::Client,
    api: Api,
    lane: &Lane,
    index: usize,
    c: u64,
    transcript: &mut TranscriptWriter,
    observer: &dyn Observer,
    measured_at: &mut Option<String>,
) -> Result<(Runs, u64, u64), Stopped> {
    let occ = Arc::new(Occupancy::default());
    let level_done = Arc::new(AtomicBool::new(false));
    let stop_fillers = Arc::new(Notify::new());
    let mut fillers = tokio::task::JoinSet::new();
    let filler_error: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
    // A filler must outlast any measured request that joins it.
    let longest = plan
        .requests
        .iter()
        .map(|r| r.max_tokens)
        .max()
        .unwrap_or(1);
    // Twice the longest measured request, plus a margin: the gateway may
    // read a filler's tokens later than the endpoint emits them.
    let need = 2 * longest + FILLER_MARGIN;
    let filler_max = plan.filler_max_tokens.max(2 * need);
    let slots: Vec<Arc<FillerSlot>> = (0..c.saturating_sub(1))
        .map(|_| Arc::new(FillerSlot::default()))
        .collect();
    for (k, slot) in slots.iter().enumerate() {
        let (client, occ, done, stop, err, slot) = (
            client.clone(),
            occ.clone(),
            level_done.clone(),
            stop_fillers.clone(),
            filler_error.clone(),
            slot.clone(),
        );
        let endpoint = plan.endpoint.clone();
        let model = plan.model.clone();
        fillers.spawn(async move {
            let mut round = 0u64;
            while !done.load(Ordering::SeqCst) {
                let prompt = format!(
                    "Filler {k}.{round}: keep the batch busy while the measured request decodes."
                );
                // Staggered lengths, so fillers do not all end (and restart)
                // at the same step.
                let req = Request::prompt(
                    prompt,
                    filler_max + (k as u64 * 7 + round * 3) % (filler_max / 2 + 1),
                );
                slot.budget.store(0, Ordering::SeqCst);
                let run = api::stream(
                    &client,
                    &endpoint,
                    api,
                    &model,
                    &req,
                    &occ,
                    Some(&slot.budget),
                );
                tokio::select! {
                    r = run => {
                        if let Err(e) = r {
                            if !done.load(Ordering::SeqCst) {
                                *err.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.message);
                            }
                            return;
                        }
                    }
                    _ = slot.refresh.notified() => {}
                    _ = stop.notified() => return,
                }
                slot.budget.store(0, Ordering::SeqCst);
                round += 1;
            }
        });
    }
    let result = async {
        let mut runs: Runs = Vec::new();
        let mut accept = u64::MAX;
        let mut complete = u64::MAX;
        let mut induced = c > 1;
        for rep in 0..plan.repetitions {
            let mut reqs = Vec::new();
            for (i, req) in sent.iter().enumerate() {
                if let Some(e) = filler_error.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    return Err(Stopped::new(format!("a filler request failed: {e}")));
                }
                if induced && !fillers_ready(&slots, &occ, need, plan.fill_timeout).await {
                    observer.warn(&format!(
                        "level {index} (concurrency {c}): only {} of {} fillers decoding after {:.0?}; the endpoint cannot be brought to {c} in flight, so this level is measured as it is and the class will be indeterminate",
                        occ.now(),
                        c - 1,
                        plan.fill_timeout
                    ));
                    level_done.store(true, Ordering::SeqCst);
                    stop_fillers.notify_waiters();
                    while fillers.join_next().await.is_some() {}
                    induced = false;
                }
                if measured_at.is_none() {
                    *measured_at = Some(rfc3339_micros(SystemTime::now()));
                }
                let (got, elapsed_us) = lane
                    .send(req.clone(), occ.clone())
                    .await
                    .map_err(|e| {
                        Stopped::new(format!(
                            "level {index} (concurrency {c}), repetition {rep}, request {i}: {}",
                            e.message
                        ))
                    })?;
                let seq = Sequence {
                    elapsed_us,
                    tokens: got.tokens,
                    at_accept: got.at_accept,
                    at_complete: got.at_complete,
                    id: got.id,
                };
                accept = accept.min(seq.at_accept);
                complete = complete.min(seq.at_complete);
                transcript
                    .sequence(index as u64, rep, i as u64, &seq.tokens, seq.at_accept, seq.at_complete, seq.id.as_deref(), seq.elapsed_us)
                    .map_err(|e| Stopped::new(format!("cannot write the transcript: {e}")))?;
                observer.measured(index);
                reqs.push(seq.tokens);
            }
            runs.push(reqs);
        }
        Ok((runs, accept, complete))
    }
    .await;
    level_done.store(true, Ordering::SeqCst);
    stop_fillers.notify_waiters();
    fillers.abort_all();
    while fillers.join_next().await.is_some() {}
    result
}

/// Tokens a filler must have left, beyond the longest measured request,
/// before a measured request may join it.
const FILLER_MARGIN: u64 = 32;

/// Measured requests run on a thread and runtime of their own, so that the
/// token events of hundreds of fillers never queue in front of theirs.
struct Lane {
    jobs: std::sync::mpsc::Sender<Job>,
}

type Job = (
    Request,
    Arc<Occupancy>,
    tokio::sync::oneshot::Sender<Result<(api::Streamed, u64), Stopped>>,
);

impl Lane {
    fn start(plan: &Plan, api: Api) -> Result<Lane, Stopped> {
        let (jobs, incoming) = std::sync::mpsc::channel::<Job>();
        let client = api::client(plan.timeout)?;
        let timeout = plan.timeout;
        let endpoint = plan.endpoint.clone();
        let model = plan.model.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Stopped::new(format!("cannot start the measuring thread: {e}")))?;
        std::thread::Builder::new()
            .name("chit-measured".into())
            .spawn(move || {
                for (req, occ, reply) in incoming {
                    let r = runtime.block_on(async {
                        let started = Instant::now();
                        let run = api::stream(&client, &endpoint, api, &model, &req, &occ, None);
                        let got = tokio::time::timeout(timeout, run).await.map_err(|_| {
                            Stopped::new(format!(
                                "timed out: the request did not end within the --timeout of {} s (it bounds the whole request)",
                                timeout.as_secs()
                            ))
                        })??;
                        Ok((got, started.elapsed().as_micros() as u64))
                    });
                    let _ = reply.send(r);
                }
            })
            .map_err(|e| Stopped::new(format!("cannot start the measuring thread: {e}")))?;
        Ok(Lane { jobs })
    }

    async fn send(
        &self,
        req: Request,
        occ: Arc<Occupancy>,
    ) -> Result<(api::Streamed, u64), Stopped> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.jobs
            .send((req, occ, reply))
            .map_err(|_| Stopped::new("the measuring thread stopped"))?;
        answer
            .await
            .map_err(|_| Stopped::new("the measuring thread stopped"))?
    }
}

/// One filler's state, shared with the measuring loop.
#[derive(Default)]
struct FillerSlot {
    /// Tokens the filler's current request has still to emit; 0 while it
    /// is not decoding.
    budget: AtomicU64,
    /// Ends the current request so that a fresh one starts.
    refresh: Notify,
}

/// Waits until every filler is decoding with at least `need` tokens to go,
/// so none ends while the next measured request decodes; a filler with
/// fewer is restarted. False on timeout.
async fn fillers_ready(
    slots: &[Arc<FillerSlot>],
    occ: &Occupancy,
    need: u64,
    timeout: Duration,
) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let changed = occ.changed.notified();
        let mut ready = true;
        for s in slots {
            let b = s.budget.load(Ordering::SeqCst);
            if b < need {
                ready = false;
                if b > 0 {
                    s.refresh.notify_one();
                }
            }
        }
        if ready {
            return true;
        }
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            return false;
        }
    }
}
