//! The endpoints people run, and how each gives token ids while streaming.
//!
//! - `openai`: OpenAI-style `POST /v1/completions` with
//!   `"return_token_ids": true`, as vLLM serves it: each streamed chunk's
//!   `choices[0].token_ids` holds the new tokens.
//! - `llamacpp`: llama.cpp's native `POST /completion` with
//!   `"return_tokens": true`: each streamed event's `tokens`. The gateway
//!   sends `"cache_prompt": false`, so a repetition never reuses another's
//!   prompt cache (a cached prefix would change what the batch computes).
//!
//! - `sglang`: SGLang's native `POST /generate` (its OpenAI API carries no
//!   token ids): each streamed event's `output_ids`, which SGLang sends
//!   whole (every token so far) unless it runs with `--stream-output`; the
//!   event's `meta_info.completion_tokens` tells which, and a cumulative
//!   list must extend the tokens already read.
//!
//! Detection: `GET /props` answering llama.cpp's shape means `llamacpp`;
//! `GET /get_model_info` answering means `sglang`; otherwise
//! `GET /v1/models` answering means `openai`.

use crate::{Decoding, Input, Occupancy, Request, Stopped};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    LlamaCpp,
    SGLang,
}

impl Api {
    pub fn parse(s: &str) -> Option<Api> {
        match s {
            "openai" | "vllm" => Some(Api::OpenAi),
            "llamacpp" | "llama.cpp" => Some(Api::LlamaCpp),
            "sglang" => Some(Api::SGLang),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::LlamaCpp => "llamacpp",
            Api::SGLang => "sglang",
        }
    }
}

/// An endpoint: its URL as the operator gave it (that is what is
/// committed) and its API, if named.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub url: String,
    pub api: Option<Api>,
}

impl Endpoint {
    /// The server's root: the URL without a trailing `/v1`.
    fn root(&self) -> &str {
        let u = self.url.trim_end_matches('/');
        u.strip_suffix("/v1").unwrap_or(u)
    }

    /// The URL requests go to under `api`, for prompts or for chat
    /// messages: what is measured, and so what the receipt commits to and
    /// the transcript records. Chats go to vLLM's chat endpoint, which
    /// streams token ids; llama.cpp's chat endpoint gives none and SGLang's
    /// gives them only once the stream has ended, so there chats are
    /// rendered by the server's own template first
    /// ([`Endpoint::template_url`]) and decoded natively.
    pub fn route(&self, api: Api, chat: bool) -> String {
        match api {
            Api::OpenAi if chat => format!("{}/v1/chat/completions", self.root()),
            Api::OpenAi => format!("{}/v1/completions", self.root()),
            Api::LlamaCpp => format!("{}/completion", self.root()),
            Api::SGLang => format!("{}/generate", self.root()),
        }
    }

    /// Where chat messages are rendered by the server's own template, under
    /// an API whose chat endpoint does not stream token ids: llama.cpp's
    /// `/apply-template` (the prompt text), SGLang's `/v1/tokenize` with
    /// messages (the prompt's token ids, sent to `/generate` as
    /// `input_ids`).
    pub fn template_url(&self, api: Api) -> Option<String> {
        match api {
            Api::OpenAi => None,
            Api::LlamaCpp => Some(format!("{}/apply-template", self.root())),
            Api::SGLang => Some(format!("{}/v1/tokenize", self.root())),
        }
    }

    /// The API (named, or asked of the server) and the URL it is measured
    /// at, for prompts or chats, found before anything is measured.
    pub async fn resolve(&self, chat: bool) -> Result<(Api, String), Stopped> {
        let client = client(Duration::from_secs(10))?;
        let api = self.api(&client).await?;
        Ok((api, self.route(api, chat)))
    }

    /// The API, named or detected.
    pub async fn api(&self, client: &reqwest::Client) -> Result<Api, Stopped> {
        if let Some(a) = self.api {
            return Ok(a);
        }
        let root = self.root();
        let get = |path: &str| {
            let url = format!("{root}{path}");
            let client = client.clone();
            async move {
                let resp = client
                    .get(&url)
                    .timeout(Duration::from_secs(10))
                    .send()
                    .await
                    .map_err(|e| describe(&url, &e))?;
                if !resp.status().is_success() {
                    return Ok(None);
                }
                // A server's self-description is small; a larger one is
                // not one of these APIs.
                let body = read_capped(resp, ANSWER_MAX).await.ok();
                Ok::<_, Stopped>(
                    body.and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok()),
                )
            }
        };
        if let Some(props) = get("/props").await? {
            if props.get("default_generation_settings").is_some() {
                return Ok(Api::LlamaCpp);
            }
        }
        if let Some(info) = get("/get_model_info").await? {
            if info.get("model_path").is_some() {
                return Ok(Api::SGLang);
            }
        }
        if get("/v1/models").await?.is_some() {
            return Ok(Api::OpenAi);
        }
        Err(Stopped::new(format!(
            "cannot tell {}'s API (none of /props, /get_model_info and /v1/models answered); name it with --api openai, llamacpp or sglang",
            self.url
        )))
    }

    /// Where the server under `api` reports the requests it is running, in
    /// the order they are tried: llama.cpp's `/slots` (on by default) then
    /// its `/metrics` (with `--metrics`); vLLM's and SGLang's Prometheus
    /// `/metrics` (SGLang with `--enable-metrics`).
    pub fn occupancy_sources(&self, api: Api) -> Vec<String> {
        let root = self.root();
        match api {
            Api::LlamaCpp => vec![format!("{root}/slots"), format!("{root}/metrics")],
            Api::OpenAi | Api::SGLang => vec![format!("{root}/metrics")],
        }
    }
}

/// The gauge of running requests each server's Prometheus text carries.
fn running_gauge(api: Api) -> &'static str {
    match api {
        Api::OpenAi => "vllm:num_requests_running",
        Api::LlamaCpp => "llamacpp:requests_processing",
        Api::SGLang => "sglang:num_running_reqs",
    }
}

/// One reading of `url` (a `/slots` list or Prometheus text): the requests
/// the server says it is running, or None where it says nothing usable.
pub async fn server_running(client: &reqwest::Client, url: &str, api: Api) -> Option<u64> {
    let resp = client
        .get(url)
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let body = read_capped(resp, ANSWER_MAX).await.ok()?;
    parse_running(url, &body, api)
}

/// The running-request count in a `/slots` list (slots processing) or in
/// Prometheus text (the API's gauge, summed over its series).
fn parse_running(url: &str, body: &[u8], api: Api) -> Option<u64> {
    if url.ends_with("/slots") {
        let v: serde_json::Value = serde_json::from_slice(body).ok()?;
        let slots = v.as_array()?;
        return Some(
            slots
                .iter()
                .filter(|s| s.get("is_processing").and_then(|p| p.as_bool()) == Some(true))
                .count() as u64,
        );
    }
    let text = std::str::from_utf8(body).ok()?;
    let name = running_gauge(api);
    let mut total: Option<f64> = None;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        if !(rest.starts_with('{') || rest.starts_with(' ')) {
            continue;
        }
        // The value is the first field after the labels.
        let after = match rest.rfind('}') {
            Some(at) if rest.starts_with('{') => &rest[at + 1..],
            _ => rest,
        };
        let value: f64 = after.split_whitespace().next()?.parse().ok()?;
        // One series per model (or engine): their sum.
        *total.get_or_insert(0.0) += value;
    }
    total
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| v.round() as u64)
}

/// A chat request set rendered into prompts by the server's own template.
pub struct Rendered {
    /// Where: the template endpoint.
    pub source: String,
    /// The requests as sent: each chat's rendered prompt, same max_tokens.
    pub requests: Vec<Request>,
}

/// The most bytes a rendered prompt's answer may take.
const RENDERED_MAX: usize = 16 << 20;

/// The most bytes a server's description of itself or of its load may
/// take (`/props`, `/v1/models`, `/slots`, `/metrics`): read no further.
const ANSWER_MAX: usize = 4 << 20;

/// Renders each chat request of `requests` into a prompt with the server's
/// own template, where `api` decodes chats only as prompts; None where
/// nothing needs rendering (prompts, or an API whose chat endpoint gives
/// token ids).
pub async fn render_chats(
    client: &reqwest::Client,
    endpoint: &Endpoint,
    api: Api,
    requests: &[Request],
) -> Result<Option<Rendered>, Stopped> {
    if !crate::is_chat_set(requests) {
        return Ok(None);
    }
    let Some(url) = endpoint.template_url(api) else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(requests.len());
    for (i, r) in requests.iter().enumerate() {
        let Input::Chat(messages) = &r.input else {
            return Err(Stopped::new(format!(
                "request {i} is not chat messages: a set is all prompts or all chats"
            )));
        };
        let input = render(client, &url, api, messages)
            .await
            .map_err(|f| Stopped::new(format!("request {i}: {}", f.message)))?;
        out.push(Request {
            input,
            max_tokens: r.max_tokens,
        });
    }
    Ok(Some(Rendered {
        source: url,
        requests: out,
    }))
}

/// One chat's messages through the server's template: `POST url` with
/// `{"messages": [...]}`, answered `{"prompt": "..."}` (llama.cpp) or
/// `{"tokens": [...]}` (SGLang, asked for the generation prompt).
async fn render(
    client: &reqwest::Client,
    url: &str,
    api: Api,
    messages: &[serde_json::Value],
) -> Result<Input, Stopped> {
    let mut ask = serde_json::json!({ "messages": messages });
    if api == Api::SGLang {
        ask["add_generation_prompt"] = true.into();
    }
    let resp = client
        .post(url)
        .timeout(Duration::from_secs(30))
        .json(&ask)
        .send()
        .await
        .map_err(|e| describe(url, &e))?;
    let status = resp.status();
    let body = read_capped(resp, RENDERED_MAX)
        .await
        .map_err(|why| Stopped::new(format!("{url}: {why}")))?;
    if !status.is_success() {
        let hint = if status == reqwest::StatusCode::NOT_FOUND {
            " (the server has no such endpoint: is it the API chit took it for? --api names it)"
        } else {
            ""
        };
        return Err(Stopped::new(format!(
            "{url} answered HTTP {status} when asked to render chat messages with the server's template{}{hint}",
            said(&body)
        )));
    }
    let v: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
        Stopped::new(format!(
            "{url} answered what is not JSON when asked to render chat messages: {e}"
        ))
    })?;
    if api == Api::SGLang {
        let ids = v
            .get("tokens")
            .and_then(|t| t.as_array())
            .and_then(|t| t.iter().map(|x| x.as_u64()).collect::<Option<Vec<u64>>>())
            .filter(|t| !t.is_empty());
        return ids.map(Input::TokenIds).ok_or_else(|| {
            Stopped::new(format!(
                "{url} answered without a \"tokens\" list of token ids when asked to render chat messages (an SGLang whose /v1/tokenize takes no messages cannot measure chat requests; give prompts)"
            ))
        });
    }
    match v.get("prompt").and_then(|p| p.as_str()) {
        Some(p) if !p.is_empty() => Ok(Input::Prompt(p.to_owned())),
        _ => Err(Stopped::new(format!(
            "{url} answered without a \"prompt\" string when asked to render chat messages"
        ))),
    }
}

/// What an error response said, for a message: `: ` and its first 200
/// characters, or nothing when it said nothing.
fn said(body: &[u8]) -> String {
    let text: String = String::from_utf8_lossy(body).chars().take(200).collect();
    // The server's words, its control characters (a terminal's escapes)
    // written as escapes.
    match text.trim() {
        "" => String::new(),
        t => format!(": {}", chit_core::report::escape_controls(t)),
    }
}

/// Why a response's body was not read whole.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error("{0}")]
    Read(#[from] reqwest::Error),
    #[error("the answer is over {0} bytes; chit stopped reading it")]
    TooLarge(usize),
}

/// A response's body, refused past `max` bytes.
async fn read_capped(mut resp: reqwest::Response, max: usize) -> Result<Vec<u8>, BodyError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if body.len() + chunk.len() > max {
            return Err(BodyError::TooLarge(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

pub fn client(read_timeout: Duration) -> Result<reqwest::Client, Stopped> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .read_timeout(read_timeout)
        .pool_max_idle_per_host(1024)
        .tcp_nodelay(true)
        .no_proxy()
        .build()
        .map_err(|e| Stopped::new(format!("cannot make an HTTP client: {e}")))
}

fn describe(url: &str, e: &reqwest::Error) -> Stopped {
    let why = if e.is_connect() {
        "cannot connect (is the endpoint running?)".to_owned()
    } else if e.is_timeout() {
        "timed out waiting for the endpoint".to_owned()
    } else {
        let mut s = e.to_string();
        let mut src = std::error::Error::source(e);
        while let Some(inner) = src {
            s = format!("{s}: {inner}");
            src = inner.source();
        }
        s
    };
    Stopped::new(format!("{url}: {why}"))
}

/// What one streamed request gave.
pub struct Streamed {
    pub tokens: Vec<u64>,
    pub at_accept: u64,
    pub at_complete: u64,
    pub id: Option<String>,
}

/// The most bytes one stream event may take: a fixed allowance plus
/// `EVENT_BYTES_PER_TOKEN` for each token the request may emit (SGLang
/// repeats every token so far in each event, with its text).
const EVENT_BYTES: u64 = 64 * 1024;
const EVENT_BYTES_PER_TOKEN: u64 = 64;

/// The most bytes one event may take for a request of `max_tokens`.
fn event_limit(max_tokens: u64) -> u64 {
    EVENT_BYTES.saturating_add(EVENT_BYTES_PER_TOKEN.saturating_mul(max_tokens))
}

/// The most tokens a filler's stream may carry: a filler's tokens are
/// counted from its events, not read, so it has room beyond its
/// max_tokens; past this the endpoint is not honouring max_tokens.
fn filler_limit(max_tokens: u64) -> u64 {
    max_tokens.saturating_mul(2).saturating_add(64)
}

/// How often a decoding filler's events are read.
const FILLER_READ_INTERVAL: std::time::Duration = std::time::Duration::from_millis(10);

/// Sets a filler's budget to 0 when its request ends, however it ends.
struct Budget<'a>(Option<&'a AtomicU64>);

impl Drop for Budget<'_> {
    fn drop(&mut self) {
        if let Some(b) = self.0 {
            b.store(0, Ordering::SeqCst);
        }
    }
}

/// Sends one request and streams it to its end, counting it as decoding
/// from its first token to its last. A measured request (`budget` None)
/// has its token ids read. A filler's events are only counted: `budget`
/// says how many tokens it has still to emit (0 when it is not decoding),
/// and it asks the endpoint to ignore end-of-sequence so it runs its whole
/// length.
pub async fn stream(
    client: &reqwest::Client,
    endpoint: &Endpoint,
    api: Api,
    model: &str,
    req: &Request,
    occ: &Occupancy,
    budget: Option<&AtomicU64>,
) -> Result<Streamed, Stopped> {
    let measured = budget.is_none();
    let url = endpoint.route(api, req.is_chat());
    let body = request_body(api, model, req, measured, &url)?;
    let mut resp = client
        .post(&url)
        .json(&body)
        .send()
        .await
        .map_err(|e| describe(&url, &e))?;
    let status = resp.status();
    if !status.is_success() {
        // Enough of an error's body to quote it.
        let body = read_capped(resp, 64 << 10).await.unwrap_or_default();
        return Err(Stopped::new(format!(
            "{url} answered HTTP {status}{}",
            said(&body)
        )));
    }
    let mut reading = Reading::new(&url, api, req.max_tokens, occ, budget);
    let mut buf: Vec<u8> = Vec::new();
    let mut ended = false;
    while !ended {
        // A filler that is decoding is read in batches: its events wait in
        // the socket, and the measured request's do not queue behind them.
        if !measured && reading.decoding.0.is_some() {
            tokio::time::sleep(FILLER_READ_INTERVAL).await;
        }
        let chunk = resp.chunk().await.map_err(|e| describe(&url, &e))?;
        let Some(chunk) = chunk else { break };
        ended = reading.chunk(&mut buf, &chunk)?;
    }
    if !ended {
        return Err(Stopped::new(format!(
            "{url} closed the stream before its end (no [DONE] or stop event)"
        )));
    }
    reading.finish()
}

/// The request's body in the API's own words; a filler's asks the endpoint
/// to ignore end-of-sequence.
fn request_body(
    api: Api,
    model: &str,
    req: &Request,
    measured: bool,
    url: &str,
) -> Result<serde_json::Value, Stopped> {
    let mut body = match (api, &req.input) {
        (Api::OpenAi, Input::Chat(messages)) => serde_json::json!({
            "model": model,
            "messages": messages,
            "max_tokens": req.max_tokens,
            "temperature": 0,
            "stream": true,
            "return_token_ids": true,
        }),
        (Api::SGLang, Input::TokenIds(ids)) => serde_json::json!({
            "input_ids": ids,
            "sampling_params": {"max_new_tokens": req.max_tokens, "temperature": 0},
            "stream": true,
        }),
        (_, Input::Chat(_) | Input::TokenIds(_)) => {
            return Err(Stopped::new(format!(
            "{url} takes chat messages only rendered into a prompt by the server's template first"
        )))
        }
        (Api::OpenAi, Input::Prompt(prompt)) => serde_json::json!({
            "model": model,
            "prompt": prompt,
            "max_tokens": req.max_tokens,
            "temperature": 0,
            "stream": true,
            "return_token_ids": true,
        }),
        (Api::LlamaCpp, Input::Prompt(prompt)) => serde_json::json!({
            "prompt": prompt,
            "n_predict": req.max_tokens,
            "temperature": 0,
            "stream": true,
            "return_tokens": true,
            "cache_prompt": false,
        }),
        (Api::SGLang, Input::Prompt(prompt)) => serde_json::json!({
            "text": prompt,
            "sampling_params": {"max_new_tokens": req.max_tokens, "temperature": 0},
            "stream": true,
        }),
    };
    if !measured {
        match api {
            Api::SGLang => body["sampling_params"]["ignore_eos"] = true.into(),
            _ => body["ignore_eos"] = true.into(),
        }
    }
    Ok(body)
}

/// One response being read. A response is bounded by what it was asked
/// for: each event by `event_limit`, the whole by that for each token it
/// may carry, and its tokens by max_tokens; a stream past any of them is
/// refused.
struct Reading<'a> {
    url: &'a str,
    api: Api,
    measured: bool,
    max_tokens: u64,
    event_max: u64,
    total_max: u64,
    total: u64,
    emitted: u64,
    out: Streamed,
    // Before `decoding`, so dropped before it: the budget is 0 before the
    // occupancy change is announced.
    budget: Budget<'a>,
    decoding: Decoding<'a>,
    occ: &'a Occupancy,
}

impl<'a> Reading<'a> {
    fn new(
        url: &'a str,
        api: Api,
        max_tokens: u64,
        occ: &'a Occupancy,
        budget: Option<&'a AtomicU64>,
    ) -> Reading<'a> {
        let event_max = event_limit(max_tokens);
        Reading {
            url,
            api,
            measured: budget.is_none(),
            max_tokens,
            event_max,
            total_max: event_max.saturating_mul(max_tokens.saturating_add(8)),
            total: 0,
            emitted: 0,
            out: Streamed {
                tokens: Vec::new(),
                at_accept: 0,
                at_complete: 0,
                id: None,
            },
            budget: Budget(budget),
            decoding: Decoding(None),
            occ,
        }
    }

    /// Reads one chunk's whole events from `buf`; true once the stream
    /// said it ended.
    fn chunk(&mut self, buf: &mut Vec<u8>, chunk: &[u8]) -> Result<bool, Stopped> {
        self.total = self.total.saturating_add(chunk.len() as u64);
        if self.total > self.total_max {
            return Err(Stopped::new(format!(
                "{} sent more than {} bytes for a request of max_tokens {}; chit stopped reading it",
                self.url, self.total_max, self.max_tokens
            )));
        }
        buf.extend_from_slice(chunk);
        // Events end with a blank line; `start` walks the buffer, which is
        // compacted once a chunk is done.
        let mut start = 0;
        let mut ended = false;
        while let Some((text_end, next)) = find_event_end(&buf[start..]) {
            if text_end as u64 > self.event_max {
                return Err(self.over_event());
            }
            let event = &buf[start..start + text_end];
            start += next;
            let Some(data) = event_data(event) else {
                continue;
            };
            if self.event(&data)? {
                ended = true;
                break;
            }
        }
        buf.drain(..start);
        // What is left is the start of an event that has not ended.
        if buf.len() as u64 > self.event_max {
            return Err(self.over_event());
        }
        Ok(ended)
    }

    /// One event's data; true when it ends the stream.
    fn event(&mut self, data: &[u8]) -> Result<bool, Stopped> {
        if data == b"[DONE]" {
            return Ok(true);
        }
        let mut got = match filler_event(self.api, data, self.measured) {
            Some(got) => got,
            None => parse_event(self.api, data, self.measured).map_err(|why| {
                Stopped::new(format!(
                    "{} sent a stream event chit cannot use: {why}",
                    self.url
                ))
            })?,
        };
        if got.cumulative {
            // Every token so far: it must extend what was read.
            let seen = self.out.tokens.len();
            if got.ids.len() < seen || got.ids[..seen] != self.out.tokens[..] {
                return Err(Stopped::new(format!(
                    "{} sent an output_ids list that does not extend the tokens it sent before",
                    self.url
                )));
            }
            got.ids.drain(..seen);
            got.tokens = got.ids.len();
        }
        if let Some(id) = got.id {
            self.out.id.get_or_insert(id);
        }
        if got.tokens > 0 || got.has_tokens {
            self.tokens(got.tokens, &got.ids)?;
        }
        Ok(got.stop)
    }

    /// Tokens emitted: the first starts the request decoding.
    fn tokens(&mut self, count: usize, ids: &[u64]) -> Result<(), Stopped> {
        self.emitted += count.max(1) as u64;
        // The budget first: whoever wakes on the occupancy change below
        // reads it.
        if let Some(b) = self.budget.0 {
            b.store(
                self.max_tokens.saturating_sub(self.emitted).max(1),
                Ordering::SeqCst,
            );
        }
        if self.decoding.0.is_none() {
            self.out.at_accept = self.decoding.start(self.occ);
        }
        self.out.tokens.extend_from_slice(ids);
        let over = if self.measured {
            self.out.tokens.len() as u64 > self.max_tokens
        } else {
            self.emitted > filler_limit(self.max_tokens)
        };
        if over {
            return Err(Stopped::new(format!(
                "{} sent more than the {} tokens (max_tokens) it was asked for; an endpoint that does not honour max_tokens cannot be measured",
                self.url, self.max_tokens
            )));
        }
        Ok(())
    }

    fn over_event(&self) -> Stopped {
        Stopped::new(format!(
            "{} sent a stream event over the limit of {} bytes for a request of max_tokens {}; chit stopped reading it",
            self.url, self.event_max, self.max_tokens
        ))
    }

    /// The stream ended: the request stops decoding (its budget 0 first).
    fn finish(mut self) -> Result<Streamed, Stopped> {
        if self.decoding.0.is_some() {
            self.out.at_complete = self.occ.now();
        }
        let Reading {
            url,
            measured,
            out,
            budget,
            decoding,
            ..
        } = self;
        drop(budget);
        drop(decoding);
        if measured && out.tokens.is_empty() {
            return Err(Stopped::new(format!("{url} streamed no tokens")));
        }
        Ok(out)
    }
}

/// (end of the event's text, end including the blank line).
fn find_event_end(buf: &[u8]) -> Option<(usize, usize)> {
    use memchr::memmem;
    match memmem::find(buf, b"\n\n") {
        // A CR LF blank line can only end before an LF one does.
        Some(lf) => {
            let window = &buf[..(lf + 2).min(buf.len())];
            Some(match memmem::find(window, b"\r\n\r\n") {
                Some(crlf) if crlf < lf => (crlf, crlf + 4),
                _ => (lf, lf + 2),
            })
        }
        None => memmem::find(buf, b"\r\n\r\n").map(|i| (i, i + 4)),
    }
}

/// A filler's ordinary token event, told without parsing its JSON: it is
/// only counted. Anything else (an end, an error, a shape not recognised)
/// is parsed in full.
fn filler_event(api: Api, data: &[u8], measured: bool) -> Option<Event> {
    use memchr::memmem;
    if measured || memmem::find(data, b"\"error\"").is_some() {
        return None;
    }
    let (going, ids_key): (&[u8], &[u8]) = match api {
        Api::OpenAi => (b"\"finish_reason\":null", b"\"token_ids\":["),
        Api::LlamaCpp => (b"\"stop\":false", b"\"tokens\":["),
        // Cumulative lists: parsed in full.
        Api::SGLang => return None,
    };
    memmem::find(data, going)?;
    // Tokens in the event: the ids listed, or one when there is no list.
    let tokens = match memmem::find(data, ids_key) {
        Some(at) => {
            let rest = &data[at + ids_key.len()..];
            let end = memchr::memchr(b']', rest)?;
            let list = &rest[..end];
            if list.iter().all(u8::is_ascii_whitespace) {
                0
            } else {
                list.iter().filter(|&&b| b == b',').count() + 1
            }
        }
        None => 1,
    };
    Some(Event {
        ids: Vec::new(),
        tokens,
        has_tokens: tokens > 0,
        stop: false,
        id: None,
        cumulative: false,
    })
}

/// The `data:` lines of an event, joined.
fn event_data(event: &[u8]) -> Option<Vec<u8>> {
    let mut data: Option<Vec<u8>> = None;
    for line in event.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(rest) = line.strip_prefix(b"data:") {
            let rest = rest.strip_prefix(b" ").unwrap_or(rest);
            let d = data.get_or_insert_with(Vec::new);
            if !d.is_empty() {
                d.push(b'\n');
            }
            d.extend_from_slice(rest);
        }
    }
    data
}

struct Event {
    ids: Vec<u64>,
    tokens: usize,
    has_tokens: bool,
    stop: bool,
    id: Option<String>,
    /// `ids` holds every token so far, not only the new ones (SGLang).
    cumulative: bool,
}

/// Why a streamed event cannot be read.
#[derive(Debug, thiserror::Error)]
enum EventError {
    #[error("malformed JSON ({source}) in {excerpt:?}")]
    Malformed {
        source: serde_json::Error,
        excerpt: String,
    },
    #[error("the endpoint reported an error: {0}")]
    Reported(serde_json::Value),
    #[error("a token id that is not a whole number: {0}")]
    TokenId(serde_json::Value),
    #[error("token ids that are not a list: {0}")]
    TokenIds(serde_json::Value),
    #[error("no choices[0] in a completion chunk")]
    NoChoice,
    #[error(
        "it carries text but no token ids ({0}); chit needs the endpoint's token ids: vLLM \
         needs a version that supports return_token_ids, llama.cpp its native /completion \
         (--api llamacpp)"
    )]
    NoTokenIds(&'static str),
}

fn parse_event(api: Api, data: &[u8], measured: bool) -> Result<Event, EventError> {
    let v: serde_json::Value =
        serde_json::from_slice(data).map_err(|source| EventError::Malformed {
            source,
            excerpt: String::from_utf8_lossy(data).chars().take(80).collect(),
        })?;
    if let Some(err) = v.get("error") {
        return Err(EventError::Reported(err.clone()));
    }
    let ids_of = |a: Option<&serde_json::Value>| -> Result<Option<Vec<u64>>, EventError> {
        match a {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .map(|x| x.as_u64().ok_or_else(|| EventError::TokenId(x.clone())))
                .collect::<Result<Vec<u64>, EventError>>()
                .map(Some),
            Some(other) => Err(EventError::TokenIds(other.clone())),
        }
    };
    let missing = EventError::NoTokenIds;
    match api {
        Api::OpenAi => {
            let choice = v
                .get("choices")
                .and_then(|c| c.get(0))
                .ok_or(EventError::NoChoice)?;
            let ids = ids_of(choice.get("token_ids"))?;
            // A completion chunk's text, or a chat chunk's delta.
            let text = choice
                .get("text")
                .or_else(|| choice.get("delta").and_then(|d| d.get("content")))
                .and_then(|t| t.as_str())
                .unwrap_or("");
            if measured && ids.is_none() && !text.is_empty() {
                return Err(missing("choices[0].token_ids"));
            }
            let ids = ids.unwrap_or_default();
            let finish = choice.get("finish_reason").is_some_and(|f| !f.is_null());
            Ok(Event {
                tokens: ids.len(),
                has_tokens: !measured && !text.is_empty(),
                ids,
                stop: finish,
                id: v.get("id").and_then(|i| i.as_str()).map(str::to_owned),
                cumulative: false,
            })
        }
        Api::LlamaCpp => {
            let ids = ids_of(v.get("tokens"))?;
            let text = v.get("content").and_then(|t| t.as_str()).unwrap_or("");
            if measured && ids.is_none() && !text.is_empty() {
                return Err(missing("tokens"));
            }
            let ids = ids.unwrap_or_default();
            Ok(Event {
                tokens: ids.len(),
                has_tokens: !measured && !text.is_empty(),
                ids,
                stop: v.get("stop").and_then(|s| s.as_bool()).unwrap_or(false),
                id: v.get("id").and_then(|i| i.as_str()).map(str::to_owned),
                cumulative: false,
            })
        }
        Api::SGLang => {
            let ids = ids_of(v.get("output_ids"))?;
            let text = v.get("text").and_then(|t| t.as_str()).unwrap_or("");
            let meta = v.get("meta_info");
            if measured && ids.is_none() && !text.is_empty() {
                return Err(missing("output_ids"));
            }
            let ids = ids.unwrap_or_default();
            let completion = meta
                .and_then(|m| m.get("completion_tokens"))
                .and_then(|c| c.as_u64());
            Ok(Event {
                tokens: ids.len(),
                has_tokens: !measured && !text.is_empty(),
                cumulative: completion == Some(ids.len() as u64),
                ids,
                stop: meta
                    .and_then(|m| m.get("finish_reason"))
                    .is_some_and(|f| !f.is_null()),
                id: meta
                    .and_then(|m| m.get("id"))
                    .and_then(|i| i.as_str())
                    .map(str::to_owned),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_on_blank_lines_and_join_data_lines() {
        let buf = b"data: {\"a\":1}\n\ndata: [DONE]\r\n\r\n";
        let (end, next) = find_event_end(buf).unwrap();
        assert_eq!(event_data(&buf[..end]).unwrap(), b"{\"a\":1}");
        assert_eq!(next, 15);
        let rest = &buf[next..];
        let (end, _) = find_event_end(rest).unwrap();
        assert_eq!(event_data(&rest[..end]).unwrap(), b"[DONE]");
        assert!(event_data(b": comment").is_none());
    }

    #[test]
    fn token_ids_are_read_or_their_absence_named() {
        let e = parse_event(
            Api::OpenAi,
            br#"{"id":"c1","choices":[{"text":"x","token_ids":[5,6],"finish_reason":null}]}"#,
            true,
        )
        .unwrap();
        assert_eq!(e.ids, vec![5, 6]);
        assert_eq!(e.id.as_deref(), Some("c1"));
        assert!(!e.stop);
        let err = parse_event(
            Api::OpenAi,
            br#"{"choices":[{"text":"x","finish_reason":null}]}"#,
            true,
        )
        .err()
        .unwrap();
        assert!(matches!(err, EventError::NoTokenIds(_)), "{err}");
        assert!(err.to_string().contains("no token ids"), "{err}");
        let err = parse_event(Api::LlamaCpp, br#"{"content":"#, true)
            .err()
            .unwrap();
        assert!(matches!(err, EventError::Malformed { .. }), "{err}");
        assert!(err.to_string().contains("malformed JSON"), "{err}");
        let e = parse_event(
            Api::LlamaCpp,
            br#"{"content":"","tokens":[],"stop":true}"#,
            true,
        )
        .unwrap();
        assert!(e.stop && e.ids.is_empty());
    }
}

#[cfg(test)]
mod server_load {
    use super::*;

    #[test]
    fn running_requests_are_read_as_each_server_writes_them() {
        let vllm = "# HELP vllm:num_requests_running Number of requests\n\
            # TYPE vllm:num_requests_running gauge\n\
            vllm:num_requests_running_total 99\n\
            vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n\
            vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 2.0\n\
            vllm:num_requests_waiting{model_name=\"m\"} 7.0\n";
        assert_eq!(
            parse_running("http://h/metrics", vllm.as_bytes(), Api::OpenAi),
            Some(5)
        );
        let llama = "llamacpp:requests_processing 8\nllamacpp:requests_deferred 1\n";
        assert_eq!(
            parse_running("http://h/metrics", llama.as_bytes(), Api::LlamaCpp),
            Some(8)
        );
        let sglang = "sglang:num_running_reqs{model_name=\"m\"} 6.0\n";
        assert_eq!(
            parse_running("http://h/metrics", sglang.as_bytes(), Api::SGLang),
            Some(6)
        );
        // Another server's gauge is not this one's.
        assert_eq!(
            parse_running("http://h/metrics", sglang.as_bytes(), Api::OpenAi),
            None
        );
        let slots = r#"[{"id":0,"is_processing":true},{"id":1,"is_processing":false},{"id":2,"is_processing":true}]"#;
        assert_eq!(
            parse_running("http://h/slots", slots.as_bytes(), Api::LlamaCpp),
            Some(2)
        );
        assert_eq!(
            parse_running("http://h/slots", b"not json", Api::LlamaCpp),
            None
        );
        assert_eq!(
            parse_running("http://h/metrics", b"x 1\n", Api::LlamaCpp),
            None
        );
    }
}
