//! The HTTP front end: request parsing, failure injection, response
//! formatting and timing records.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use crate::model::{piece, render_chat, tokenize, Model};
use crate::scheduler::{self, NewSeq};
use crate::{Api, Config, Fail, Mode, Timing};

/// Shared between a server and whoever started it: the clock, the finished
/// requests' timings and step counters.
pub struct Recorder {
    epoch: Instant,
    timings: Mutex<Vec<Timing>>,
    pub steps: AtomicUsize,
    pub max_batch: AtomicUsize,
    /// Sequences in the latest decoding step (what `/slots` and `/metrics`
    /// report as running).
    pub running: AtomicUsize,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder {
            epoch: Instant::now(),
            timings: Mutex::new(Vec::new()),
            steps: AtomicUsize::new(0),
            max_batch: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
        }
    }

    fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    pub fn timings(&self) -> Vec<Timing> {
        self.timings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn push(&self, timing: Timing) {
        self.timings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(timing);
    }
}

struct Server {
    config: Config,
    recorder: Arc<Recorder>,
    requests: AtomicUsize,
    submit: UnboundedSender<NewSeq>,
}

type Shared = Arc<Server>;

/// Serves `config` on `listener`, recording into `recorder`.
pub async fn serve_with(
    config: Config,
    listener: TcpListener,
    recorder: Arc<Recorder>,
) -> std::io::Result<()> {
    let (submit, incoming) = mpsc::unbounded_channel();
    let model = Model::new(config.seed);
    let (mode, max_batch, step) = (config.mode, config.max_batch, config.step);
    let rec = recorder.clone();
    std::thread::Builder::new()
        .name("chit-fixture-scheduler".into())
        .spawn(move || scheduler::run(model, mode, max_batch, step, incoming, rec))?;
    let api = config.api;
    let server = Arc::new(Server {
        config,
        recorder,
        requests: AtomicUsize::new(0),
        submit,
    });
    let mut router = Router::new()
        .route("/v1/models", get(models))
        .route("/v1/completions", post(openai_completions))
        .route("/completion", post(llama_completion))
        .route("/fixture/timings", get(timings))
        .route("/fixture/stats", get(stats))
        .route("/metrics", get(metrics));
    router = router.route("/generate", post(sglang_generate));
    if api == Api::OpenAi {
        router = router.route("/v1/chat/completions", post(openai_chat));
    }
    if api == Api::LlamaCpp {
        router = router
            .route("/props", get(props))
            .route("/slots", get(slots))
            .route("/apply-template", post(apply_template));
    }
    if api == Api::SGLang {
        router = router
            .route("/get_model_info", get(model_info))
            .route("/v1/tokenize", post(sglang_tokenize));
    }
    // Tokens are small writes: without TCP_NODELAY each waits for the
    // client's delayed ACK, and the timings would blame the client for it.
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router.with_state(server)).await
}

fn error(status: StatusCode, message: &str) -> Response {
    let kind = if status.is_server_error() {
        "server_error"
    } else if status == StatusCode::NOT_FOUND {
        "not_found_error"
    } else {
        "invalid_request_error"
    };
    let body = json!({"error": {"message": message, "type": kind, "code": status.as_u16()}});
    (status, json_body(&body)).into_response()
}

fn json_body(value: &Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

async fn models(State(s): State<Shared>) -> Response {
    json_body(&json!({
        "object": "list",
        "data": [{"id": s.config.model, "object": "model", "owned_by": "chit-fixture"}],
    }))
}

async fn props(State(s): State<Shared>) -> Response {
    let slots = match s.config.mode {
        Mode::OneSlot => 1,
        _ => s.config.max_batch,
    };
    json_body(&json!({
        "default_generation_settings": {"n_ctx": 4096},
        "total_slots": slots,
        "model_path": s.config.model,
    }))
}

/// llama.cpp's `GET /slots`: one object a slot, `is_processing` for as
/// many as the latest decoding step ran.
async fn slots(State(s): State<Shared>) -> Response {
    let total = match s.config.mode {
        Mode::OneSlot => 1,
        _ => s.config.max_batch,
    };
    let running = s.recorder.running.load(Ordering::Relaxed);
    let list: Vec<Value> = (0..total)
        .map(|id| json!({"id": id, "is_processing": id < running}))
        .collect();
    json_body(&Value::Array(list))
}

/// Prometheus text, with the running-requests gauge under the name the
/// imitated server uses: vLLM's `vllm:num_requests_running`, llama.cpp's
/// `llamacpp:requests_processing`, SGLang's `sglang:num_running_reqs`.
async fn metrics(State(s): State<Shared>) -> Response {
    let running = s.recorder.running.load(Ordering::Relaxed);
    let model = &s.config.model;
    let text = match s.config.api {
        Api::OpenAi => format!(
            "# HELP vllm:num_requests_running Number of requests in model execution batches.\n\
             # TYPE vllm:num_requests_running gauge\n\
             vllm:num_requests_running{{model_name=\"{model}\"}} {running}.0\n"
        ),
        Api::LlamaCpp => format!(
            "# HELP llamacpp:requests_processing Number of requests processing.\n\
             # TYPE llamacpp:requests_processing gauge\n\
             llamacpp:requests_processing {running}\n"
        ),
        Api::SGLang => format!(
            "# HELP sglang:num_running_reqs The number of running requests.\n\
             # TYPE sglang:num_running_reqs gauge\n\
             sglang:num_running_reqs{{model_name=\"{model}\"}} {running}.0\n"
        ),
    };
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        text,
    )
        .into_response()
}

/// The messages of a chat body, rendered with the fixture's template; or
/// why not.
fn rendered(body: &[u8]) -> Result<String, String> {
    let body: Value =
        serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))?;
    body.get("messages").and_then(render_chat).ok_or_else(|| {
        "`messages` must be a non-empty list of {\"role\", \"content\"} strings".into()
    })
}

/// Under `malformed:0`, the template endpoints answer what is not JSON too.
fn malformed_template(s: &Server) -> Option<Response> {
    (s.config.fail == Fail::MalformedAfterRequests(0)).then(|| {
        (
            [(header::CONTENT_TYPE, "application/json")],
            "{\"prompt\": ",
        )
            .into_response()
    })
}

/// llama.cpp's `POST /apply-template`: the chat body's prompt, rendered.
async fn apply_template(State(s): State<Shared>, body: Bytes) -> Response {
    if let Some(r) = malformed_template(&s) {
        return r;
    }
    match rendered(&body) {
        Ok(prompt) => json_body(&json!({ "prompt": prompt })),
        Err(why) => error(StatusCode::BAD_REQUEST, &why),
    }
}

/// SGLang's `POST /v1/tokenize` with `messages`: the rendered prompt's
/// token ids (with the generation prompt, as asked); under `no-token-ids`,
/// the count alone.
async fn sglang_tokenize(State(s): State<Shared>, body: Bytes) -> Response {
    if let Some(r) = malformed_template(&s) {
        return r;
    }
    match rendered(&body) {
        Ok(prompt) => {
            let tokens = tokenize(&prompt);
            if s.config.fail == Fail::NoTokenIds {
                return json_body(&json!({"count": tokens.len(), "max_model_len": 4096}));
            }
            json_body(&json!({"tokens": tokens, "count": tokens.len(), "max_model_len": 4096}))
        }
        Err(why) => error(StatusCode::BAD_REQUEST, &why),
    }
}

async fn model_info(State(s): State<Shared>) -> Response {
    json_body(&json!({"model_path": s.config.model, "is_generation": true}))
}

async fn timings(State(s): State<Shared>) -> Response {
    let list: Vec<Value> = s
        .recorder
        .timings()
        .iter()
        .map(|t| {
            json!({
                "id": t.id,
                "received_us": t.received_us,
                "first_token_us": t.first_token_us,
                "last_token_us": t.last_token_us,
                "end_us": t.end_us,
                "tokens": t.tokens,
                "disconnected": t.disconnected,
            })
        })
        .collect();
    json_body(&Value::Array(list))
}

async fn stats(State(s): State<Shared>) -> Response {
    json_body(&json!({
        "steps": s.recorder.steps.load(Ordering::Relaxed),
        "max_batch_seen": s.recorder.max_batch.load(Ordering::Relaxed),
    }))
}

/// Which wire format a completion request speaks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    OpenAi,
    /// vLLM's `/v1/chat/completions`: chat chunks, each with its delta's
    /// token ids (`return_token_ids`), the first only the role.
    OpenAiChat,
    Llama,
    /// SGLang's native `/generate`: `output_ids` and `text` are cumulative.
    SGLang,
}

/// Everything needed to format one request's responses.
struct Format {
    route: Route,
    id: String,
    created: u64,
    model: String,
    with_ids: bool,
    malformed: bool,
    /// The tokens sent so far (SGLang repeats them all in every event).
    sent: Vec<u32>,
}

impl Format {
    /// An OpenAI completion object (a whole response, or one stream chunk)
    /// with one choice: its text, its token ids where asked for, and its
    /// finish reason (null while streaming).
    fn openai(&self, text: &str, tokens: &[u32], finish: Value) -> Value {
        let mut choice = json!({"index": 0, "text": text, "finish_reason": finish});
        if self.with_ids {
            choice["token_ids"] = json!(tokens);
        }
        json!({
            "id": self.id,
            "object": "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        })
    }

    /// A chat completion chunk (or, with `whole`, a chat completion) with
    /// one choice.
    fn openai_chat(&self, text: &str, tokens: &[u32], finish: Value, whole: bool) -> Value {
        let mut choice = if whole {
            json!({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish})
        } else {
            json!({"index": 0, "delta": {"content": text}, "logprobs": null, "finish_reason": finish})
        };
        if self.with_ids {
            choice["token_ids"] = json!(tokens);
        }
        json!({
            "id": self.id,
            "object": if whole { "chat.completion" } else { "chat.completion.chunk" },
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        })
    }

    /// What a stream opens with before its first token: vLLM's chat
    /// streams send the assistant's role first, with no tokens.
    fn opening_event(&self) -> Option<Bytes> {
        if self.route != Route::OpenAiChat || self.malformed {
            return None;
        }
        let mut event = self.openai_chat("", &[], Value::Null, false);
        event["choices"][0]["delta"] = json!({"role": "assistant", "content": ""});
        if let Some(c) = event["choices"][0].as_object_mut() {
            c.remove("token_ids");
        }
        Some(Bytes::from(format!("data: {event}\n\n")))
    }

    fn sglang_event(&self, finish: Value) -> Value {
        let text: String = self.sent.iter().map(|&t| piece(t)).collect();
        let mut event = json!({
            "text": text,
            "meta_info": {
                "id": self.id,
                "finish_reason": finish,
                "prompt_tokens": 0,
                "completion_tokens": self.sent.len(),
            },
        });
        if self.with_ids {
            event["output_ids"] = json!(self.sent);
        }
        event
    }

    fn token_event(&mut self, token: u32) -> Bytes {
        if self.malformed {
            return Bytes::from_static(b"data: {\"choices\":[{\n\n");
        }
        let text = piece(token);
        let event = match self.route {
            Route::OpenAi => self.openai(&text, &[token], Value::Null),
            Route::OpenAiChat => self.openai_chat(&text, &[token], Value::Null, false),
            Route::Llama => {
                let mut event = json!({"content": text, "stop": false, "id_slot": 0});
                if self.with_ids {
                    event["tokens"] = json!([token]);
                }
                event
            }
            Route::SGLang => {
                self.sent.push(token);
                self.sglang_event(Value::Null)
            }
        };
        Bytes::from(format!("data: {event}\n\n"))
    }

    fn final_events(&self) -> Bytes {
        match self.route {
            Route::OpenAi => {
                let event = self.openai("", &[], json!("length"));
                Bytes::from(format!("data: {event}\n\ndata: [DONE]\n\n"))
            }
            Route::OpenAiChat => {
                let event = self.openai_chat("", &[], json!("length"), false);
                Bytes::from(format!("data: {event}\n\ndata: [DONE]\n\n"))
            }
            Route::Llama => {
                let mut event =
                    json!({"content": "", "stop": true, "stop_type": "limit", "id": self.id});
                if self.with_ids {
                    event["tokens"] = json!([]);
                }
                Bytes::from(format!("data: {event}\n\n"))
            }
            Route::SGLang => {
                let finish = json!({"type": "length", "length": self.sent.len()});
                let event = self.sglang_event(finish);
                Bytes::from(format!("data: {event}\n\ndata: [DONE]\n\n"))
            }
        }
    }

    fn whole(&self, tokens: &[u32], prompt_tokens: usize) -> Response {
        if self.malformed {
            return (
                [(header::CONTENT_TYPE, "application/json")],
                "{\"choices\":[{",
            )
                .into_response();
        }
        let text: String = tokens.iter().map(|&t| piece(t)).collect();
        let body = match self.route {
            Route::OpenAi | Route::OpenAiChat => {
                let mut body = if self.route == Route::OpenAi {
                    self.openai(&text, tokens, json!("length"))
                } else {
                    self.openai_chat(&text, tokens, json!("length"), true)
                };
                body["usage"] = json!({
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": tokens.len(),
                    "total_tokens": prompt_tokens + tokens.len(),
                });
                body
            }
            Route::SGLang => {
                let mut body = json!({
                    "text": text,
                    "meta_info": {
                        "id": self.id,
                        "finish_reason": {"type": "length", "length": tokens.len()},
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": tokens.len(),
                    },
                });
                if self.with_ids {
                    body["output_ids"] = json!(tokens);
                }
                body
            }
            Route::Llama => {
                let mut body = json!({
                    "content": text,
                    "stop": true,
                    "stop_type": "limit",
                    "id": self.id,
                    "tokens_evaluated": prompt_tokens,
                    "tokens_predicted": tokens.len(),
                });
                if self.with_ids {
                    body["tokens"] = json!(tokens);
                }
                body
            }
        };
        json_body(&body)
    }
}

/// One request's timing record; recorded exactly once, as disconnected if
/// dropped before [`Tracker::finish`].
struct Tracker {
    recorder: Arc<Recorder>,
    timing: Option<Timing>,
}

impl Tracker {
    fn token(&mut self) {
        let now = self.recorder.now_us();
        if let Some(t) = &mut self.timing {
            t.first_token_us.get_or_insert(now);
            t.last_token_us = Some(now);
            t.tokens += 1;
        }
    }

    fn finish(&mut self, disconnected: bool) {
        if let Some(mut t) = self.timing.take() {
            if !disconnected {
                t.end_us = Some(self.recorder.now_us());
            }
            t.disconnected = disconnected;
            self.recorder.push(t);
        }
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        self.finish(true);
    }
}

/// The response body of a streaming request: one event per token, as the
/// scheduler produces them.
struct TokenStream {
    tokens: UnboundedReceiver<u32>,
    format: Format,
    tracker: Tracker,
    /// Sent before anything else (a chat stream's role chunk).
    opening: Option<Bytes>,
    done: bool,
}

impl futures_core::Stream for TokenStream {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(bytes) = this.opening.take() {
            return Poll::Ready(Some(Ok(bytes)));
        }
        match this.tokens.poll_recv(cx) {
            Poll::Ready(Some(token)) => {
                let bytes = this.format.token_event(token);
                this.tracker.token();
                Poll::Ready(Some(Ok(bytes)))
            }
            Poll::Ready(None) => {
                this.done = true;
                let bytes = this.format.final_events();
                this.tracker.finish(false);
                Poll::Ready(Some(Ok(bytes)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A hostile endpoint's stream: more tokens than asked for, or one line
/// that never ends. See [`Fail::TooManyTokens`].
struct Hostile {
    llama: bool,
    /// Token ids still to send (`u64::MAX`: never stop).
    left: u64,
    per_event: u64,
    /// The next id to send.
    next: u64,
    endless_line: bool,
    done: bool,
}

fn hostile(stream: Hostile) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

impl futures_core::Stream for Hostile {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if this.endless_line {
            // The line's start once, then 64 KiB of its text at a time.
            let bytes = if this.next == 0 {
                this.next = 1;
                Bytes::from_static(b"data: {\"choices\":[{\"text\":\"")
            } else {
                Bytes::from(vec![b'a'; 1 << 16])
            };
            return Poll::Ready(Some(Ok(bytes)));
        }
        if this.left == 0 {
            this.done = true;
            let end: &'static [u8] = if this.llama {
                b"data: {\"content\":\"\",\"tokens\":[],\"stop\":true,\"stop_type\":\"limit\"}\n\n"
            } else {
                b"data: {\"choices\":[{\"text\":\"\",\"token_ids\":[],\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"
            };
            return Poll::Ready(Some(Ok(Bytes::from_static(end))));
        }
        let count = this.per_event.min(this.left);
        if this.left != u64::MAX {
            this.left -= count;
        }
        let ids: Vec<String> = (0..count)
            .map(|k| ((this.next + k) % crate::VOCAB as u64).to_string())
            .collect();
        this.next += count;
        let ids = ids.join(",");
        let event = if this.llama {
            format!("data: {{\"content\":\"x\",\"tokens\":[{ids}],\"stop\":false}}\n\n")
        } else {
            format!(
                "data: {{\"choices\":[{{\"text\":\"x\",\"token_ids\":[{ids}],\"finish_reason\":null}}]}}\n\n"
            )
        };
        Poll::Ready(Some(Ok(Bytes::from(event))))
    }
}

async fn openai_completions(State(s): State<Shared>, body: Bytes) -> Response {
    complete(s, Route::OpenAi, body).await
}

async fn openai_chat(State(s): State<Shared>, body: Bytes) -> Response {
    complete(s, Route::OpenAiChat, body).await
}

async fn llama_completion(State(s): State<Shared>, body: Bytes) -> Response {
    complete(s, Route::Llama, body).await
}

async fn sglang_generate(State(s): State<Shared>, body: Bytes) -> Response {
    complete(s, Route::SGLang, body).await
}

/// What a completion request asked for.
struct Request {
    prompt: Vec<u32>,
    max_tokens: usize,
    stream: bool,
    with_ids: bool,
}

/// A request refused before it reaches the scheduler.
type Rejection = (StatusCode, String);

fn reject(status: StatusCode, message: &str) -> Rejection {
    (status, message.to_string())
}

fn parse(s: &Server, route: Route, body: &[u8]) -> Result<Request, Rejection> {
    let body: Value = serde_json::from_slice(body)
        .map_err(|e| reject(StatusCode::BAD_REQUEST, &format!("invalid JSON body: {e}")))?;
    if !body.is_object() {
        return Err(reject(
            StatusCode::BAD_REQUEST,
            "body must be a JSON object",
        ));
    }
    let flag = |name: &str| -> Result<bool, Rejection> {
        match body.get(name) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(reject(
                StatusCode::BAD_REQUEST,
                &format!("`{name}` must be a boolean"),
            )),
        }
    };
    if matches!(route, Route::OpenAi | Route::OpenAiChat) {
        match body.get("model") {
            None | Some(Value::Null) => {}
            Some(Value::String(m)) if *m == s.config.model => {}
            Some(other) => {
                return Err(reject(
                    StatusCode::NOT_FOUND,
                    &format!("The model `{other}` does not exist."),
                ))
            }
        }
    }
    // SGLang keeps its sampling parameters in an object of their own.
    let params = match route {
        Route::SGLang => body.get("sampling_params").cloned().unwrap_or(json!({})),
        _ => body.clone(),
    };
    if params.get("temperature").and_then(Value::as_f64) != Some(0.0) {
        return Err(reject(
            StatusCode::BAD_REQUEST,
            "this fixture decodes greedily: `temperature` must be 0",
        ));
    }
    let prompt_name = match route {
        Route::SGLang => "text",
        Route::OpenAiChat => "messages",
        _ => "prompt",
    };
    let prompt = match (route, body.get(prompt_name)) {
        (Route::OpenAiChat, Some(m)) => match render_chat(m) {
            Some(p) => tokenize(&p),
            None => {
                return Err(reject(
                    StatusCode::BAD_REQUEST,
                    "`messages` must be a non-empty list of {\"role\", \"content\"} strings",
                ))
            }
        },
        (_, Some(Value::String(p))) if route != Route::OpenAiChat => tokenize(p),
        // SGLang takes the prompt's token ids instead of its text.
        (Route::SGLang, None) if body.get("input_ids").is_some() => body["input_ids"]
            .as_array()
            .and_then(|ids| {
                ids.iter()
                    .map(|x| x.as_u64().and_then(|x| u32::try_from(x).ok()))
                    .collect::<Option<Vec<u32>>>()
            })
            .filter(|ids| !ids.is_empty())
            .ok_or_else(|| {
                reject(
                    StatusCode::BAD_REQUEST,
                    "`input_ids` must be a non-empty list of token ids",
                )
            })?,
        _ => {
            return Err(reject(
                StatusCode::BAD_REQUEST,
                &format!("`{prompt_name}` must be a string"),
            ))
        }
    };
    let (limit_name, ids_name) = match route {
        Route::OpenAi | Route::OpenAiChat => ("max_tokens", "return_token_ids"),
        Route::Llama => ("n_predict", "return_tokens"),
        // SGLang always returns output_ids.
        Route::SGLang => ("max_new_tokens", ""),
    };
    let max_tokens = match params.get(limit_name) {
        None | Some(Value::Null) => 16,
        Some(v) => match v.as_u64() {
            Some(n) => n as usize,
            None => {
                return Err(reject(
                    StatusCode::BAD_REQUEST,
                    &format!("`{limit_name}` must be a non-negative integer"),
                ))
            }
        },
    };
    Ok(Request {
        prompt,
        max_tokens,
        stream: flag("stream")?,
        with_ids: (route == Route::SGLang || flag(ids_name)?) && s.config.fail != Fail::NoTokenIds,
    })
}

async fn complete(s: Shared, route: Route, body: Bytes) -> Response {
    let received_us = s.recorder.now_us();
    let n = s.requests.fetch_add(1, Ordering::SeqCst);
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let id = format!("cmpl-{n}");
    let mut malformed = false;
    match s.config.fail {
        Fail::Http500AfterRequests(k) if n >= k => {
            return error(StatusCode::INTERNAL_SERVER_ERROR, "injected failure");
        }
        Fail::StallAfterRequests(k) if n >= k => {
            // Accept and never answer, holding the connection open.
            return std::future::pending().await;
        }
        Fail::MalformedAfterRequests(k) if n >= k => malformed = true,
        Fail::TooManyTokens {
            after,
            tokens,
            per_event,
        } if n >= after => {
            return hostile(Hostile {
                llama: route == Route::Llama,
                left: tokens,
                per_event: per_event.max(1),
                next: 0,
                endless_line: false,
                done: false,
            })
        }
        Fail::EndlessLineAfterRequests(k) if n >= k => {
            return hostile(Hostile {
                llama: route == Route::Llama,
                left: 0,
                per_event: 1,
                next: 0,
                endless_line: true,
                done: false,
            })
        }
        _ => {}
    }
    let req = match parse(&s, route, &body) {
        Ok(r) => r,
        Err((status, message)) => return error(status, &message),
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let prompt_tokens = req.prompt.len();
    let new = NewSeq {
        prompt: req.prompt,
        max_tokens: req.max_tokens,
        tokens: tx,
    };
    let mut tracker = Tracker {
        recorder: s.recorder.clone(),
        timing: Some(Timing {
            id: id.clone(),
            received_us,
            first_token_us: None,
            last_token_us: None,
            end_us: None,
            tokens: 0,
            disconnected: false,
        }),
    };
    if s.submit.send(new).is_err() {
        tracker.timing = None;
        return error(StatusCode::SERVICE_UNAVAILABLE, "scheduler stopped");
    }
    let format = Format {
        route,
        id,
        created,
        model: s.config.model.clone(),
        with_ids: req.with_ids,
        malformed,
        sent: Vec::new(),
    };
    if req.stream {
        let stream = TokenStream {
            tokens: rx,
            opening: format.opening_event(),
            format,
            tracker,
            done: false,
        };
        return (
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            Body::from_stream(stream),
        )
            .into_response();
    }
    let mut tokens = Vec::with_capacity(req.max_tokens.min(1 << 16));
    while let Some(t) = rx.recv().await {
        tracker.token();
        tokens.push(t);
    }
    let response = format.whole(&tokens, prompt_tokens);
    // The whole body is handed over now: that is when the last token leaves.
    if let Some(t) = &mut tracker.timing {
        if t.tokens > 0 {
            t.last_token_us = Some(s.recorder.now_us());
        }
    }
    tracker.finish(false);
    response
}
