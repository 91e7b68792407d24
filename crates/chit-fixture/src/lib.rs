//! A test fixture for chit's numeric-lineage gateway: an OpenAI-compatible
//! (and llama.cpp-compatible) completion server that really batches the
//! requests in flight and computes every token with a small float32 network,
//! so that whether outputs change with batch size comes out of real
//! floating-point arithmetic, never scripted answers.
//!
//! # The network
//!
//! * **Tokenizer.** Each prompt byte is one token, `byte % 64`; the
//!   vocabulary is `0..64`. Token `t`'s text is `"t{t} "`.
//! * **State.** A context (prompt tokens, then generated tokens) is summarised
//!   by a 32-wide f32 vector updated per token as `s = 0.75 * s + E[t]`
//!   (elementwise, so it never depends on the batch). The prompt is read
//!   when the request is admitted.
//! * **Hidden layer.** `h = tanh(W1 · s + b1)`, 128 units.
//! * **Output layer.** The logits are a length-256 reduction over the hidden
//!   units, each unit appearing twice: once (positions `0..128`) with weight
//!   `B + s` and once (positions `128..256`, in a seeded shuffled order) with
//!   weight `-B`, where `|B|` is up to 8192 and `|s|` up to 0.35. In exact
//!   arithmetic the `B` parts cancel and the logits are `O(1)`; in f32 the
//!   running sum climbs to ~1e5, where one rounding step is ~1e-2, so the
//!   leftover error (catastrophic cancellation) depends on the summation
//!   order and regularly decides near-ties between the top two logits.
//! * **Decoding.** Greedy: argmax of the logits, lowest index wins ties.
//!   Only `temperature: 0` is accepted.
//!
//! All weights come from a splitmix64 generator seeded by [`Config::seed`].
//!
//! # How the reduction split couples numerics to occupancy
//!
//! Every dot product (hidden layer and output layer) is computed as
//! `splits` contiguous chunks of the reduction dimension, each summed left to
//! right in f32 from zero, then the chunk sums added left to right.
//!
//! * [`Mode::Coupled`]: `splits` = the number of sequences decoded in that
//!   step, like a GPU kernel whose split-K factor follows the batch. It is
//!   clamped to half the reduction length (16 for the hidden layer, 128 for
//!   the output layer) so that every chunk keeps at least two terms: chunks
//!   of one term would add back up to the unsplit sum. A prompt's tokens
//!   therefore depend on how many other requests were in flight when each
//!   token was made: with seed 7, 16 tokens and 64 test prompts, about
//!   70–85% of prompts decode differently at batch 2, 4, 8, 32 or 256 than
//!   at batch 1, first diverging after ~5 tokens on average.
//! * [`Mode::Invariant`]: `splits` is always 1, whatever the batch: outputs
//!   are identical for every batch size (and equal Coupled at batch 1).
//! * [`Mode::OneSlot`]: at most one sequence decodes at a time; the others
//!   wait in a FIFO queue and receive nothing until they get the slot.
//!   Numerically it is Invariant (its batch is always 1, where Coupled and
//!   Invariant agree anyway).
//!
//! # Scheduler
//!
//! One scheduler thread runs a step every [`Config::step`] (sleeping the
//! remainder of the step after computing). Each step admits newly arrived
//! requests, drops finished and disconnected sequences, takes the first
//! `max_batch` active sequences in arrival order (1 for OneSlot), computes
//! one token for each with batch size = that count, and sends each token to
//! its request's response stream. A sequence leaves after `max_tokens`
//! tokens or as soon as its response stream is gone (client disconnected).
//! [`decode_batch`] runs the same arithmetic without HTTP, with a constant
//! batch.
//!
//! Cost: one token is ~20k multiply-adds, so a step at a large batch is
//! milliseconds in a release build and some thirty times more in an
//! unoptimised (debug) build, which keeps a short step only at small
//! batches (measure with the ignored `step_cost` test).
//!
//! # HTTP API
//!
//! * `GET /v1/models` → `{"object":"list","data":[{"id":MODEL,...}]}`.
//! * `GET /props` (only with [`Api::LlamaCpp`]; how clients detect
//!   llama.cpp) → `{"default_generation_settings":{"n_ctx":4096},
//!   "total_slots":N,"model_path":MODEL}`.
//! * `POST /v1/completions` (vLLM style): `model` (must match, else 404 —
//!   may be omitted), `prompt` (string), `max_tokens` (default 16),
//!   `temperature` (required, must be 0, else 400), `stream`,
//!   `return_token_ids`. Streams one `text_completion` chunk per token, a
//!   final chunk with `"finish_reason":"length"`, then `data: [DONE]`.
//!   `token_ids` appear (in the stream and the whole response) only when
//!   `return_token_ids` is true.
//! * `POST /completion` (llama.cpp): `prompt`, `n_predict` (default 16),
//!   `temperature` (must be 0), `stream`, `return_tokens`; events
//!   `{"content","tokens","stop":false,"id_slot":0}` and a final
//!   `{"content":"","tokens":[],"stop":true,"stop_type":"limit","id"}`.
//! * `POST /generate` (SGLang's native API): `text`, `sampling_params`
//!   (`max_new_tokens`, `temperature` 0), `stream`; every event carries the
//!   whole `text` and `output_ids` so far and `meta_info` (`id`,
//!   `finish_reason`, `completion_tokens`), then `data: [DONE]`.
//!   `GET /get_model_info` exists only with [`Api::SGLang`].
//! * `GET /fixture/timings` → every finished or disconnected completion
//!   request as a [`Timing`], in microseconds since the server started, on
//!   one monotonic clock. `received_us` is taken at handler entry (body
//!   read); for streams `first_token_us`/`last_token_us` are taken as each
//!   event's bytes are handed to the response body, and `end_us` as the
//!   final events are; for whole responses the
//!   first is when the first token reached the handler and the last when the
//!   body was handed over.
//! * `GET /fixture/stats` → `{"steps":N,"max_batch_seen":M}`: decoding steps
//!   run and the largest batch any step had.
//! * `GET /metrics` → Prometheus text with the sequences in the latest
//!   decoding step under the imitated server's gauge
//!   (`vllm:num_requests_running`, `llamacpp:requests_processing`,
//!   `sglang:num_running_reqs`), and, only with [`Api::LlamaCpp`],
//!   `GET /slots` → one `{"id","is_processing"}` a slot: the server's own
//!   occupancy, as the gateway samples it.
//!
//! Failure injection: see [`Fail`]. Requests are counted from 0 in arrival
//! order over both completion routes; ids are `cmpl-<count>`.

#![forbid(unsafe_code)]

mod model;
mod scheduler;
mod server;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

pub use model::{render_chat, tokenize, VOCAB};

/// How a step's batch size reaches the arithmetic. See the crate docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Reductions are split into as many partial sums as the step has
    /// sequences.
    Coupled,
    /// Reductions are never split.
    Invariant,
    /// One sequence at a time; the rest queue. Numerically Invariant.
    OneSlot,
}

/// Which server the fixture imitates. Both completion routes are always
/// served; only `LlamaCpp` serves `GET /props`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    LlamaCpp,
    /// SGLang: its native `/generate`, detected by `/get_model_info`.
    SGLang,
}

/// Failure injection. Completion requests are counted from 0, so
/// `…AfterRequests(n)` lets the first `n` requests through and fails the
/// rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fail {
    None,
    /// HTTP 500 with a JSON error body.
    Http500AfterRequests(usize),
    /// Every token event (and a whole, non-streamed body) is invalid JSON,
    /// `{"choices":[{`; from request 0, the chat template endpoints'
    /// answers too.
    MalformedAfterRequests(usize),
    /// Token ids are never returned, even when asked for (nor by SGLang's
    /// `/v1/tokenize`).
    NoTokenIds,
    /// The request is accepted and never answered; the connection stays
    /// open.
    StallAfterRequests(usize),
    /// A hostile endpoint: from request `after` on, streams `tokens` token
    /// ids whatever `max_tokens` asked for, `per_event` ids to an event,
    /// then ends the stream properly (`u64::MAX` tokens: never ends). No
    /// model runs; the ids count up from 0 modulo the vocabulary. Only the
    /// OpenAI and llama.cpp formats (SGLang's route answers in OpenAI's).
    TooManyTokens {
        after: usize,
        tokens: u64,
        per_event: u64,
    },
    /// A hostile endpoint: from request `after` on, answers a stream with
    /// one `data:` line that never ends.
    EndlessLineAfterRequests(usize),
}

/// The fixture's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub mode: Mode,
    pub api: Api,
    /// The model name served and required in `/v1/completions`.
    pub model: String,
    /// Time per decoding step.
    pub step: Duration,
    /// Most sequences decoded in one step (OneSlot: always 1).
    pub max_batch: usize,
    pub fail: Fail,
    /// Seed for the network's weights.
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            mode: Mode::Coupled,
            api: Api::OpenAi,
            model: "fixture-model".to_string(),
            step: Duration::from_millis(2),
            max_batch: 512,
            fail: Fail::None,
            seed: 7,
        }
    }
}

/// When one completion request was served, in microseconds since the server
/// started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timing {
    pub id: String,
    pub received_us: u64,
    pub first_token_us: Option<u64>,
    pub last_token_us: Option<u64>,
    /// When the response's end (the final events, or the whole body) was
    /// handed over: what a client waits for before it knows a request is
    /// done.
    pub end_us: Option<u64>,
    pub tokens: usize,
    /// The client went away before the last token.
    pub disconnected: bool,
}

/// A server running on its own thread with its own tokio runtime, bound to
/// 127.0.0.1:0; stops when dropped.
pub struct Fixture {
    addr: std::net::SocketAddr,
    recorder: Arc<server::Recorder>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Fixture {
    /// Binds 127.0.0.1:0 and starts serving.
    pub fn start(config: Config) -> std::io::Result<Fixture> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("chit-fixture-http")
            .enable_all()
            .build()?;
        let recorder = Arc::new(server::Recorder::new());
        let rec = recorder.clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("chit-fixture".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            eprintln!("chit-fixture: {e}");
                            return;
                        }
                    };
                    tokio::select! {
                        result = server::serve_with(config, listener, rec) => {
                            if let Err(e) = result {
                                eprintln!("chit-fixture: {e}");
                            }
                        }
                        _ = stopped => {}
                    }
                });
                // Drops stalled connections and in-flight streams.
                runtime.shutdown_timeout(Duration::from_secs(1));
            })?;
        Ok(Fixture {
            addr,
            recorder,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every finished or disconnected completion request so far, in the
    /// order they ended; the same data as `GET /fixture/timings`.
    pub fn timings(&self) -> Vec<Timing> {
        self.recorder.timings()
    }

    /// The largest number of sequences any decoding step has had.
    pub fn max_batch_seen(&self) -> usize {
        self.recorder.max_batch.load(Ordering::Relaxed)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Serves `config` on `listener`, for use inside an existing tokio runtime.
/// Runs until the future is dropped (or the listener fails).
pub async fn serve(config: Config, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    server::serve_with(config, listener, Arc::new(server::Recorder::new())).await
}

/// The model itself, without HTTP: greedy tokens for `prompts` decoded
/// together as one batch of `prompts.len()` sequences for every step
/// (OneSlot: one at a time), `max_tokens` each.
pub fn decode_batch(config: &Config, prompts: &[&str], max_tokens: usize) -> Vec<Vec<u32>> {
    model::decode_batch(config, prompts, max_tokens)
}
