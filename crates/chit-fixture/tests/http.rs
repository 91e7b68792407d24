//! End-to-end tests over HTTP, with a small hand-written HTTP/1.1 client.

use std::time::{Duration, Instant};

use chit_fixture::{decode_batch, Api, Config, Fail, Fixture, Mode, Timing};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Response {
    status: u16,
    headers: String,
    body: Vec<u8>,
}

impl Response {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!("{e}: {:?}", String::from_utf8_lossy(&self.body));
        })
    }

    /// The `data:` payloads of an event stream.
    fn events(&self) -> Vec<String> {
        String::from_utf8(self.body.clone())
            .unwrap()
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| {
                e.strip_prefix("data: ")
                    .unwrap_or_else(|| panic!("not a data event: {e:?}"))
                    .to_string()
            })
            .collect()
    }
}

fn addr(fixture: &Fixture) -> String {
    fixture.url().strip_prefix("http://").unwrap().to_string()
}

fn request_bytes(addr: &str, method: &str, path: &str, body: &str) -> Vec<u8> {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n").unwrap();
        let size_text = std::str::from_utf8(&data[..line_end]).unwrap();
        let size_text = size_text.split(';').next().unwrap().trim();
        let size = usize::from_str_radix(size_text, 16).unwrap();
        data = &data[line_end + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&data[..size]);
        data = &data[size + 2..];
    }
}

fn parse_response(raw: &[u8]) -> Response {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("no end of headers");
    let headers = String::from_utf8(raw[..split].to_vec()).unwrap();
    let status = headers.split(' ').nth(1).unwrap().parse().unwrap();
    let body = &raw[split + 4..];
    let chunked = headers
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_vec()
    };
    Response {
        status,
        headers,
        body,
    }
}

async fn http(addr: &str, method: &str, path: &str, body: Option<&Value>) -> Response {
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(&request_bytes(addr, method, path, &body))
        .await
        .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    parse_response(&raw)
}

async fn post(addr: &str, path: &str, body: Value) -> Response {
    http(addr, "POST", path, Some(&body)).await
}

fn config(mode: Mode, api: Api, fail: Fail) -> Config {
    Config {
        mode,
        api,
        fail,
        ..Config::default()
    }
}

fn openai_body(prompt: &str, max_tokens: usize, stream: bool) -> Value {
    json!({
        "model": "fixture-model",
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": stream,
        "return_token_ids": true,
        "some_unknown_field": {"ignored": true},
    })
}

fn llama_body(prompt: &str, n_predict: usize, stream: bool) -> Value {
    json!({
        "prompt": prompt,
        "n_predict": n_predict,
        "temperature": 0.0,
        "stream": stream,
        "return_tokens": true,
        "cache_prompt": true,
    })
}

/// Token ids of an OpenAI event stream; checks its framing.
fn openai_stream_tokens(response: &Response) -> Vec<u32> {
    assert_eq!(response.status, 200);
    assert!(response.headers.contains("text/event-stream"));
    let events = response.events();
    assert_eq!(events.last().unwrap(), "[DONE]");
    let last: Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "length");
    assert_eq!(last["choices"][0]["text"], "");
    assert_eq!(last["choices"][0]["token_ids"], json!([]));
    let mut tokens = Vec::new();
    for event in &events[..events.len() - 2] {
        let event: Value = serde_json::from_str(event).unwrap();
        assert_eq!(event["object"], "text_completion");
        assert_eq!(event["model"], "fixture-model");
        assert!(event["id"].as_str().unwrap().starts_with("cmpl-"));
        let choice = &event["choices"][0];
        assert_eq!(choice["finish_reason"], Value::Null);
        let ids = choice["token_ids"].as_array().unwrap();
        assert_eq!(ids.len(), 1);
        let t = ids[0].as_u64().unwrap() as u32;
        assert_eq!(choice["text"], format!("t{t} "));
        tokens.push(t);
    }
    tokens
}

fn llama_stream_tokens(response: &Response) -> Vec<u32> {
    assert_eq!(response.status, 200);
    let events = response.events();
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert_eq!(last["stop"], true);
    assert_eq!(last["stop_type"], "limit");
    assert_eq!(last["content"], "");
    let mut tokens = Vec::new();
    for event in &events[..events.len() - 1] {
        let event: Value = serde_json::from_str(event).unwrap();
        assert_eq!(event["stop"], false);
        assert_eq!(event["id_slot"], 0);
        let t = event["tokens"][0].as_u64().unwrap() as u32;
        assert_eq!(event["content"], format!("t{t} "));
        tokens.push(t);
    }
    tokens
}

fn ids(value: &Value) -> Vec<u32> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect()
}

async fn wait_for_timings(fixture: &Fixture, count: usize) -> Vec<Timing> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let timings = fixture.timings();
        if timings.len() >= count || Instant::now() > deadline {
            return timings;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn alone_a_request_gets_the_batch_one_tokens() {
    let cfg = Config::default();
    let fixture = Fixture::start(cfg.clone()).unwrap();
    let addr = addr(&fixture);
    let prompt = "Tell me about numerics";
    let expected = decode_batch(&cfg, &[prompt], 16).swap_remove(0);

    let models = http(&addr, "GET", "/v1/models", None).await.json();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "fixture-model");
    assert_eq!(models["data"][0]["owned_by"], "chit-fixture");

    let streamed = post(&addr, "/v1/completions", openai_body(prompt, 16, true)).await;
    assert_eq!(openai_stream_tokens(&streamed), expected);

    let whole = post(&addr, "/v1/completions", openai_body(prompt, 16, false)).await;
    assert_eq!(whole.status, 200);
    let whole = whole.json();
    assert_eq!(whole["object"], "text_completion");
    assert_eq!(whole["id"], "cmpl-1");
    let choice = &whole["choices"][0];
    assert_eq!(ids(&choice["token_ids"]), expected);
    assert_eq!(choice["finish_reason"], "length");
    let text: String = expected.iter().map(|t| format!("t{t} ")).collect();
    assert_eq!(choice["text"], text);
    assert_eq!(whole["usage"]["prompt_tokens"], prompt.len());
    assert_eq!(whole["usage"]["completion_tokens"], 16);
    assert_eq!(whole["usage"]["total_tokens"], prompt.len() + 16);

    // Without return_token_ids there are no ids.
    let mut body = openai_body(prompt, 4, false);
    body["return_token_ids"] = json!(false);
    let plain = post(&addr, "/v1/completions", body).await.json();
    assert!(plain["choices"][0].get("token_ids").is_none());

    // The llama.cpp route runs the same model.
    let streamed = post(&addr, "/completion", llama_body(prompt, 16, true)).await;
    assert_eq!(llama_stream_tokens(&streamed), expected);
    let whole = post(&addr, "/completion", llama_body(prompt, 16, false))
        .await
        .json();
    assert_eq!(ids(&whole["tokens"]), expected);
    assert_eq!(whole["content"], text);
    assert_eq!(whole["stop"], true);

    // Timings, over HTTP and directly.
    let timings = wait_for_timings(&fixture, 5).await;
    assert_eq!(timings.len(), 5);
    let over_http = http(&addr, "GET", "/fixture/timings", None).await.json();
    assert_eq!(over_http.as_array().unwrap().len(), 5);
    for (t, h) in timings.iter().zip(over_http.as_array().unwrap()) {
        assert_eq!(h["id"], t.id);
        assert_eq!(h["received_us"], t.received_us);
        assert_eq!(h["first_token_us"], json!(t.first_token_us));
        assert_eq!(h["last_token_us"], json!(t.last_token_us));
        assert_eq!(h["tokens"], t.tokens);
        assert_eq!(h["disconnected"], false);
        let (first, last) = (t.first_token_us.unwrap(), t.last_token_us.unwrap());
        assert!(t.received_us <= first && first <= last, "{t:?}");
    }
    assert_eq!(timings[0].tokens, 16);
    assert_eq!(fixture.max_batch_seen(), 1);
}

#[tokio::test]
async fn concurrent_requests_share_steps() {
    let cfg = Config::default();
    let fixture = Fixture::start(cfg.clone()).unwrap();
    let addr = addr(&fixture);
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let addr = addr.clone();
            tokio::spawn(async move {
                let prompt = format!("concurrent prompt {i}");
                let response = post(&addr, "/v1/completions", openai_body(&prompt, 32, true)).await;
                openai_stream_tokens(&response)
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().len(), 32);
    }
    let timings = wait_for_timings(&fixture, 8).await;
    assert_eq!(timings.len(), 8);
    let latest_first = timings.iter().map(|t| t.first_token_us.unwrap()).max();
    let earliest_last = timings.iter().map(|t| t.last_token_us.unwrap()).min();
    assert!(
        latest_first < earliest_last,
        "decoding windows do not overlap: {timings:?}"
    );
    assert_eq!(fixture.max_batch_seen(), 8);
    let stats = http(&addr, "GET", "/fixture/stats", None).await.json();
    assert_eq!(stats["max_batch_seen"], 8);
}

#[tokio::test]
async fn a_dropped_client_is_removed() {
    let fixture = Fixture::start(Config::default()).unwrap();
    let addr = addr(&fixture);
    let body = openai_body("never finishes", 1_000_000, true).to_string();
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(&request_bytes(&addr, "POST", "/v1/completions", &body))
        .await
        .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while seen.windows(6).filter(|w| w == b"data: ").count() < 3 {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0);
        seen.extend_from_slice(&buf[..n]);
    }
    drop(stream);
    let dropped = Instant::now();
    let timings = wait_for_timings(&fixture, 1).await;
    // Noticed within a few steps.
    let noticed = dropped.elapsed();
    assert!(noticed < Duration::from_millis(500), "took {noticed:?}");
    assert_eq!(timings.len(), 1, "the dropped request was not recorded");
    assert!(timings[0].disconnected);
    assert!(
        timings[0].tokens >= 3 && timings[0].tokens < 1000,
        "{timings:?}"
    );
    // The scheduler has stopped decoding it: no more steps run.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let before = http(&addr, "GET", "/fixture/stats", None).await.json()["steps"].clone();
    tokio::time::sleep(Duration::from_millis(30)).await;
    let after = http(&addr, "GET", "/fixture/stats", None).await.json()["steps"].clone();
    assert_eq!(before, after);
}

#[tokio::test]
async fn props_only_under_llamacpp() {
    let openai = Fixture::start(Config::default()).unwrap();
    let response = http(&addr(&openai), "GET", "/props", None).await;
    assert_eq!(response.status, 404);

    let llama = Fixture::start(config(Mode::Coupled, Api::LlamaCpp, Fail::None)).unwrap();
    let response = http(&addr(&llama), "GET", "/props", None).await;
    assert_eq!(response.status, 200);
    let props = response.json();
    assert_eq!(props["default_generation_settings"]["n_ctx"], 4096);
    assert_eq!(props["total_slots"], 512);
    assert_eq!(props["model_path"], "fixture-model");

    let one = Fixture::start(config(Mode::OneSlot, Api::LlamaCpp, Fail::None)).unwrap();
    let props = http(&addr(&one), "GET", "/props", None).await.json();
    assert_eq!(props["total_slots"], 1);
}

#[tokio::test]
async fn bad_requests_get_json_errors() {
    let fixture = Fixture::start(Config::default()).unwrap();
    let addr = addr(&fixture);
    let mut hot = openai_body("x", 4, false);
    hot["temperature"] = json!(0.7);
    let response = post(&addr, "/v1/completions", hot).await;
    assert_eq!(response.status, 400);
    assert!(response.json()["error"]["message"].is_string());

    let mut hot = llama_body("x", 4, true);
    hot["temperature"] = json!(1);
    assert_eq!(post(&addr, "/completion", hot).await.status, 400);

    let mut other = openai_body("x", 4, false);
    other["model"] = json!("some-other-model");
    let response = post(&addr, "/v1/completions", other).await;
    assert_eq!(response.status, 404);
    assert!(response.json()["error"]["message"].is_string());

    let response = http(&addr, "POST", "/v1/completions", None).await;
    assert_eq!(response.status, 400);
    assert!(response.json()["error"].is_object());
}

#[tokio::test]
async fn one_slot_decodes_one_sequence_at_a_time() {
    let fixture = Fixture::start(config(Mode::OneSlot, Api::OpenAi, Fail::None)).unwrap();
    let addr = addr(&fixture);
    let tasks: Vec<_> = (0..4)
        .map(|i| {
            let addr = addr.clone();
            tokio::spawn(async move {
                let prompt = format!("queued prompt {i}");
                let response = post(&addr, "/v1/completions", openai_body(&prompt, 8, true)).await;
                (prompt, openai_stream_tokens(&response))
            })
        })
        .collect();
    let cfg = config(Mode::OneSlot, Api::OpenAi, Fail::None);
    for task in tasks {
        let (prompt, tokens) = task.await.unwrap();
        assert_eq!(tokens, decode_batch(&cfg, &[&prompt], 8)[0]);
    }
    let mut timings = wait_for_timings(&fixture, 4).await;
    assert_eq!(timings.len(), 4);
    timings.sort_by_key(|t| t.first_token_us);
    for pair in timings.windows(2) {
        assert!(
            pair[0].last_token_us < pair[1].first_token_us,
            "overlapping windows: {pair:?}"
        );
    }
    assert_eq!(fixture.max_batch_seen(), 1);
}

#[tokio::test]
async fn fail_http500_after_requests() {
    let fixture = Fixture::start(config(
        Mode::Coupled,
        Api::OpenAi,
        Fail::Http500AfterRequests(1),
    ))
    .unwrap();
    let addr = addr(&fixture);
    assert_eq!(
        post(&addr, "/v1/completions", openai_body("a", 4, true))
            .await
            .status,
        200
    );
    for _ in 0..2 {
        let response = post(&addr, "/v1/completions", openai_body("a", 4, true)).await;
        assert_eq!(response.status, 500);
        assert!(response.json()["error"]["message"].is_string());
    }
    assert_eq!(
        post(&addr, "/completion", llama_body("a", 4, false))
            .await
            .status,
        500
    );
}

#[tokio::test]
async fn fail_malformed_after_requests() {
    let fixture = Fixture::start(config(
        Mode::Coupled,
        Api::OpenAi,
        Fail::MalformedAfterRequests(1),
    ))
    .unwrap();
    let addr = addr(&fixture);
    let good = post(&addr, "/v1/completions", openai_body("a", 4, true)).await;
    assert_eq!(openai_stream_tokens(&good).len(), 4);
    let bad = post(&addr, "/v1/completions", openai_body("a", 4, true)).await;
    assert_eq!(bad.status, 200);
    let events = bad.events();
    assert!(events.len() >= 4);
    for event in &events[..4] {
        assert!(serde_json::from_str::<Value>(event).is_err(), "{event}");
    }
    let bad = post(&addr, "/completion", llama_body("a", 4, false)).await;
    assert!(serde_json::from_slice::<Value>(&bad.body).is_err());
}

#[tokio::test]
async fn fail_no_token_ids() {
    let fixture = Fixture::start(config(Mode::Coupled, Api::LlamaCpp, Fail::NoTokenIds)).unwrap();
    let addr = addr(&fixture);
    let streamed = post(&addr, "/v1/completions", openai_body("a", 4, true)).await;
    let events = streamed.events();
    assert_eq!(events.len(), 6);
    for event in &events[..5] {
        let event: Value = serde_json::from_str(event).unwrap();
        assert!(event["choices"][0].get("token_ids").is_none());
    }
    let whole = post(&addr, "/v1/completions", openai_body("a", 4, false))
        .await
        .json();
    assert!(whole["choices"][0].get("token_ids").is_none());
    assert_eq!(whole["usage"]["completion_tokens"], 4);
    let streamed = post(&addr, "/completion", llama_body("a", 4, true)).await;
    for event in streamed.events() {
        let event: Value = serde_json::from_str(&event).unwrap();
        assert!(event.get("tokens").is_none());
    }
    let whole = post(&addr, "/completion", llama_body("a", 4, false))
        .await
        .json();
    assert!(whole.get("tokens").is_none());
}

#[tokio::test]
async fn fail_stall_after_requests() {
    let fixture = Fixture::start(config(
        Mode::Coupled,
        Api::OpenAi,
        Fail::StallAfterRequests(1),
    ))
    .unwrap();
    let addr = addr(&fixture);
    let good = post(&addr, "/v1/completions", openai_body("a", 4, true)).await;
    assert_eq!(openai_stream_tokens(&good).len(), 4);
    let body = openai_body("a", 4, true).to_string();
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(&request_bytes(&addr, "POST", "/v1/completions", &body))
        .await
        .unwrap();
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_millis(300), stream.read(&mut buf)).await;
    assert!(read.is_err(), "the stalled request answered: {read:?}");
    // Dropping the fixture with a stalled connection still returns.
    drop(fixture);
}

#[tokio::test]
async fn serve_runs_inside_a_runtime() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = tokio::spawn(chit_fixture::serve(
        config(Mode::Invariant, Api::LlamaCpp, Fail::None),
        listener,
    ));
    let response = post(&addr, "/completion", llama_body("inside", 5, true)).await;
    assert_eq!(llama_stream_tokens(&response).len(), 5);
    assert_eq!(http(&addr, "GET", "/props", None).await.status, 200);
    server.abort();
}
