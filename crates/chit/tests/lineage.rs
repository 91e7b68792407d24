//! `chit lineage` end to end against the fixture server, which really
//! batches and computes its tokens in float32: each mode gives its class,
//! the receipt verifies with its transcript, and every bad condition keeps
//! the transcript, marks it incomplete and signs nothing.

mod common;

use chit_fixture::{Api, Config, Fail, Fixture, Mode};
use common::{chit_in, Run};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A folder with a key, a bound committed in the past and a request set.
fn setup(requests: usize, max_tokens: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    assert_eq!(chit_in(p, &["keygen", "--out", "k.pem"], None).code, 0);
    // A bound committed well before now (as 'chit lineage bound' writes it).
    let bound = chit_core::kinds::numeric_lineage::arithmetic::Bound {
        committed_at: "2026-01-01T00:00:00Z".into(),
        max_differing_positions: 0,
        min_first_divergent_index: 0,
        max_distinct_sequences_per_level: 1,
        required_repetitions_per_level: 2,
    };
    let text = serde_json::json!({
        "committed_at": bound.committed_at,
        "max_differing_positions": 0,
        "min_first_divergent_index": 0,
        "max_distinct_sequences_per_level": 1,
        "required_repetitions_per_level": 2,
        "bound_digest_sha256": bound.digest(),
    });
    std::fs::write(p.join("b.json"), text.to_string()).unwrap();
    let set: String = (0..requests)
        .map(|i| format!("{{\"prompt\": \"prompt {i}: tell me about the sea\", \"max_tokens\": {max_tokens}}}\n"))
        .collect();
    std::fs::write(p.join("req.jsonl"), set).unwrap();
    dir
}

/// `chit lineage measure` against `url` with the files [`setup`] writes.
fn measure_args<'a>(url: &'a str, levels: &'a str, repetitions: &'a str) -> Vec<&'a str> {
    vec![
        "lineage",
        "measure",
        "--endpoint",
        url,
        "--model",
        "fixture-model",
        "--requests",
        "req.jsonl",
        "--levels",
        levels,
        "--repetitions",
        repetitions,
        "--bound",
        "b.json",
        "--key",
        "k.pem",
        "--out",
        "r.json",
        "--transcript",
        "t.jsonl",
        "--gateway-name",
        "chit-test-gateway",
    ]
}

fn measure(dir: &Path, url: &str, levels: &str, extra: &[&str]) -> Run {
    let mut args = measure_args(url, levels, "2");
    args.extend_from_slice(extra);
    chit_in(dir, &args, None)
}

fn fixture(mode: Mode, api: Api, fail: Fail) -> Fixture {
    Fixture::start(Config {
        mode,
        api,
        fail,
        ..Config::default()
    })
    .unwrap()
}

fn receipt(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap()
}

fn verify(dir: &Path) -> Run {
    chit_in(
        dir,
        &["verify", "--json", "r.json", "--transcript", "t.jsonl"],
        None,
    )
}

fn last_line(path: PathBuf) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

/// Every line of the transcript `t.jsonl` in `dir`.
fn transcript(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("t.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The transcript edited by `edit` no longer verifies with the receipt:
/// L14, a recorded figure does not recompute.
fn edited_transcript_breaks_l14(dir: &Path, edit: impl FnOnce(String) -> String) {
    let t = std::fs::read_to_string(dir.join("t.jsonl")).unwrap();
    std::fs::write(dir.join("t.jsonl"), edit(t)).unwrap();
    let v = verify(dir);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("\"rule\":\"L14\""), "{}", v.stdout);
}

#[test]
fn each_mode_gives_its_class_and_the_receipt_verifies() {
    for (mode, api, levels, class) in [
        (Mode::Coupled, Api::OpenAi, "1,8", "occupancy_coupled"),
        (Mode::Invariant, Api::OpenAi, "1,8", "occupancy_invariant"),
        (Mode::Coupled, Api::LlamaCpp, "1,4,8", "occupancy_coupled"),
        (Mode::Invariant, Api::SGLang, "1,8", "occupancy_invariant"),
        (Mode::Coupled, Api::SGLang, "1,8", "occupancy_coupled"),
        (Mode::OneSlot, Api::OpenAi, "1,4", "indeterminate"),
    ] {
        let dir = setup(4, 16);
        let p = dir.path();
        let fx = fixture(mode, api, Fail::None);
        let run = measure(p, &fx.url(), levels, &["--fill-timeout", "1"]);
        assert_eq!(run.code, 0, "{mode:?}: {}", run.stderr);
        assert!(run.stdout.contains(class), "{mode:?}: {}", run.stdout);
        let r = receipt(p);
        let body = &r["signed_body"];
        assert_eq!(body["divergence"]["class"], class, "{mode:?}");
        let levels_n = levels.split(',').count();
        assert_eq!(body["levels"].as_array().unwrap().len(), levels_n);
        // The occupancy was observed: induced in both batching modes, not in
        // the one-slot mode, whose message says so.
        let top = &body["levels"][levels_n - 1];
        if mode == Mode::OneSlot {
            assert_eq!(top["observed_in_flight_at_accept"], 1);
            assert!(
                run.stderr.contains("cannot be brought to 4"),
                "{}",
                run.stderr
            );
        } else {
            assert_eq!(
                top["observed_in_flight_at_accept"],
                top["induced_concurrency"]
            );
        }
        // The fixture really saw batches of the top concurrency.
        if mode != Mode::OneSlot {
            assert!(fx.max_batch_seen() >= 8, "{}", fx.max_batch_seen());
        } else {
            assert_eq!(fx.max_batch_seen(), 1);
        }
        let v = verify(p);
        assert_eq!(v.code, 0, "{mode:?}: {}{}", v.stdout, v.stderr);
        assert!(v
            .stdout
            .contains("\"kind\":\"numeric.lineage\",\"valid\":true"));
        assert_eq!(last_line(p.join("t.jsonl"))["end"], "complete");
        // Issue 15, item 3: the server's own occupancy, sampled while each
        // level ran, is in the transcript beside the gateway's count.
        let occupancy: Vec<serde_json::Value> = transcript(p)
            .into_iter()
            .filter_map(|v| v.get("server_occupancy").cloned())
            .collect();
        assert_eq!(occupancy.len(), levels_n, "{mode:?}");
        let want_source = if api == Api::LlamaCpp {
            "/slots"
        } else {
            "/metrics"
        };
        for (i, o) in occupancy.iter().enumerate() {
            assert_eq!(o["level"], i, "{mode:?}");
            assert!(o["source"].as_str().unwrap().ends_with(want_source), "{o}");
            assert!(!o["samples"].as_array().unwrap().is_empty(), "{o}");
        }
        let top_max = occupancy[levels_n - 1]["max"].as_u64().unwrap();
        if mode == Mode::OneSlot {
            // One slot: the server never ran 4 at once, and says so (L16).
            assert_eq!(top_max, 1, "{occupancy:?}");
            assert!(v.stdout.contains("\"rule\":\"L16\""), "{}", v.stdout);
            assert!(
                run.stderr.contains("the server reported at most 1"),
                "{}",
                run.stderr
            );
        } else {
            assert!(top_max >= 2, "{occupancy:?}");
        }

        // One token changed in the transcript: L14 (and L15 where it moves the divergence).
        edited_transcript_breaks_l14(p, |t| {
            let mut lines: Vec<String> = t.lines().map(str::to_owned).collect();
            let mut line: serde_json::Value = serde_json::from_str(&lines[2]).unwrap();
            let first = line["token_ids"][0].as_u64().unwrap();
            line["token_ids"][0] = (first + 1).into();
            lines[2] = line.to_string();
            lines.join("\n")
        });
    }
}

#[test]
fn open_prints_what_opens_the_commitments() {
    let dir = setup(2, 4);
    let p = dir.path();
    let fx = fixture(Mode::Coupled, Api::OpenAi, Fail::None);
    assert_eq!(
        measure(p, &fx.url(), "1,2", &["--reroute", "http://10.0.0.9/v1"]).code,
        0
    );
    let r = receipt(p);
    let run = chit_in(
        p,
        &["lineage", "open", "--transcript", "t.jsonl", "--json"],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let opened: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let items = opened["commitments"].as_array().unwrap();
    let find = |what: &str| {
        items
            .iter()
            .find(|i| i["what"] == what)
            .unwrap_or_else(|| panic!("{what}"))
    };
    use sha2::Digest;
    for (what, want) in [
        ("salt", &r["signed_body"]["salt"]["commitment_sha256"]),
        ("gateway", &r["signed_body"]["gateway_ref"]["commitment"]),
        ("endpoint", &r["signed_body"]["endpoint_ref"]["commitment"]),
    ] {
        let item = find(what);
        assert_eq!(&item["commitment_sha256"], want, "{what}");
        let pre = item["preimage"].as_str().unwrap();
        let sum = sha2::Sha256::digest(pre.as_bytes());
        let hex: String = sum.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(want.as_str().unwrap(), hex, "{what}");
    }
    // The endpoint committed is the URL measured (an OpenAI fixture:
    // its completions route).
    assert_eq!(
        find("endpoint")["value"],
        format!("{}/v1/completions", fx.url())
    );
    // A coupled endpoint with a declared-invariant reroute target names it.
    if r["signed_body"]["divergence"]["class"] == "occupancy_coupled" {
        assert_eq!(
            r["signed_body"]["effect"]["reroute_target_commitment"],
            find("reroute target")["commitment_sha256"]
        );
    }
}

/// A failed run: exit 2, the message names the cause, the transcript is
/// kept and marked incomplete, and no receipt exists.
fn assert_failed(p: &Path, run: &Run, says: &str) {
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(says),
        "wanted {says:?} in {}",
        run.stderr
    );
    assert!(
        run.stderr.contains("no receipt was signed"),
        "{}",
        run.stderr
    );
    assert!(!p.join("r.json").exists());
    let end = last_line(p.join("t.jsonl"));
    assert_eq!(end["end"], "incomplete", "{end}");
}

#[test]
fn bad_conditions_keep_the_transcript_and_sign_nothing() {
    // The endpoint is down.
    let dir = setup(2, 4);
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", free.local_addr().unwrap());
    drop(free);
    let run = measure(dir.path(), &url, "1,4", &["--api", "openai"]);
    assert_failed(dir.path(), &run, "cannot connect");

    // HTTP 500 after a few requests: some sequences are already recorded.
    let dir = setup(2, 4);
    let fx = fixture(Mode::Coupled, Api::OpenAi, Fail::Http500AfterRequests(3));
    let run = measure(dir.path(), &fx.url(), "1,4", &[]);
    assert_failed(dir.path(), &run, "HTTP 500");
    let t = std::fs::read_to_string(dir.path().join("t.jsonl")).unwrap();
    assert!(t.lines().any(|l| l.contains("\"token_ids\"")), "{t}");

    let dir = setup(2, 4);
    let fx = fixture(Mode::Coupled, Api::OpenAi, Fail::MalformedAfterRequests(1));
    let run = measure(dir.path(), &fx.url(), "1,4", &[]);
    assert_failed(dir.path(), &run, "malformed JSON");

    let dir = setup(2, 4);
    let fx = fixture(Mode::Coupled, Api::LlamaCpp, Fail::NoTokenIds);
    let run = measure(dir.path(), &fx.url(), "1,4", &[]);
    assert_failed(dir.path(), &run, "no token ids");

    // The endpoint stops answering: the token timeout ends the run.
    let dir = setup(2, 4);
    let fx = fixture(Mode::Coupled, Api::OpenAi, Fail::StallAfterRequests(2));
    let run = measure(dir.path(), &fx.url(), "1,4", &["--timeout", "1"]);
    assert_failed(dir.path(), &run, "timed out");
}

#[test]
fn refusals_before_anything_is_sent() {
    let fx = fixture(Mode::Coupled, Api::OpenAi, Fail::None);
    // A bound committed now or later is refused, and nothing is written.
    let dir = setup(2, 4);
    let p = dir.path();
    let b: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("b.json")).unwrap()).unwrap();
    let future = chit_core::kinds::numeric_lineage::arithmetic::Bound {
        committed_at: "2099-01-01T00:00:00Z".into(),
        max_differing_positions: 0,
        min_first_divergent_index: 0,
        max_distinct_sequences_per_level: 1,
        required_repetitions_per_level: 2,
    };
    let mut b2 = b.clone();
    b2["committed_at"] = future.committed_at.clone().into();
    b2["bound_digest_sha256"] = future.digest().into();
    std::fs::write(p.join("b.json"), b2.to_string()).unwrap();
    let run = measure(p, &fx.url(), "1,4", &[]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("not before now"), "{}", run.stderr);
    assert!(!p.join("t.jsonl").exists() && !p.join("r.json").exists());

    // A bound edited after it was committed.
    let mut b3 = b.clone();
    b3["max_differing_positions"] = 5.into();
    std::fs::write(p.join("b.json"), b3.to_string()).unwrap();
    let run = measure(p, &fx.url(), "1,4", &[]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("edited after it was committed"),
        "{}",
        run.stderr
    );

    // An existing receipt or transcript is never overwritten.
    std::fs::write(p.join("b.json"), b.to_string()).unwrap();
    std::fs::write(p.join("r.json"), "keep me").unwrap();
    let run = measure(p, &fx.url(), "1,4", &[]);
    assert_eq!(run.code, 2);
    assert_eq!(
        std::fs::read_to_string(p.join("r.json")).unwrap(),
        "keep me"
    );
    std::fs::remove_file(p.join("r.json")).unwrap();
    std::fs::write(p.join("t.jsonl"), "keep me too").unwrap();
    let run = measure(p, &fx.url(), "1,4", &[]);
    assert_eq!(run.code, 2);
    assert_eq!(
        std::fs::read_to_string(p.join("t.jsonl")).unwrap(),
        "keep me too"
    );

    // Levels that do not increase, and a request set with chat messages.
    std::fs::remove_file(p.join("t.jsonl")).unwrap();
    let run = measure(p, &fx.url(), "8,8", &[]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("strictly increasing"), "{}", run.stderr);
    std::fs::remove_file(p.join("t.jsonl")).ok();
    std::fs::write(p.join("req.jsonl"), "{\"messages\": []}\n").unwrap();
    let run = measure(p, &fx.url(), "1,4", &[]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("req.jsonl:1"), "{}", run.stderr);
    // Chat lines chit cannot measure as asked, each named by its line.
    let user = r#"{"role": "user", "content": "hi"}"#;
    for (set, says) in [
        (
            format!("{{\"messages\": [{user}]}}\n{{\"prompt\": \"hi\"}}\n"),
            "req.jsonl:2: this line is a prompt but the set's first is chat messages",
        ),
        (
            format!("{{\"prompt\": \"hi\", \"messages\": [{user}]}}\n"),
            "req.jsonl:1: a line holds a \"prompt\" or \"messages\", not both",
        ),
        (
            r#"{"messages": [{"role": "user", "content": "hi", "name": "x"}]}"#.to_owned(),
            "messages[0] has \"name\"",
        ),
        (
            r#"{"messages": [{"role": "user", "content": ["hi"]}]}"#.to_owned(),
            "messages[0] needs a \"content\" string",
        ),
        (
            r#"{"messages": {"role": "user"}}"#.to_owned(),
            "\"messages\" must be a list",
        ),
    ] {
        std::fs::write(p.join("req.jsonl"), set).unwrap();
        let run = measure(p, &fx.url(), "1,4", &[]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.contains(says), "{says}: {}", run.stderr);
        assert!(!p.join("t.jsonl").exists());
    }

    // 'chit lineage bound' writes a bound that measures accept.
    let bound = || bound_to(p, "b2.json", None);
    let run = bound();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("b2.json")).unwrap()).unwrap();
    let text = written.to_string();
    let doc = chit_core::json::parse(text.as_bytes(), &Default::default()).unwrap();
    let back = chit_core::kinds::numeric_lineage::arithmetic::Bound::from_val(doc.root()).unwrap();
    assert_eq!(written["bound_digest_sha256"], back.digest());
    let again = bound();
    assert_eq!(again.code, 2, "a bound is never overwritten");
}

#[test]
fn ctrl_c_keeps_the_transcript_and_signs_nothing() {
    let dir = setup(6, 32);
    let p = dir.path();
    let fx = Fixture::start(Config {
        step: Duration::from_millis(10),
        ..Config::default()
    })
    .unwrap();
    let url = fx.url();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_chit"))
        .args(measure_args(&url, "1,4", "3"))
        .current_dir(p)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until two sequences are recorded, then interrupt.
    let start = std::time::Instant::now();
    loop {
        let t = std::fs::read_to_string(p.join("t.jsonl")).unwrap_or_default();
        if t.matches("\"token_ids\"").count() >= 2 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no progress: {t}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(!p.join("r.json").exists());
    let t = std::fs::read_to_string(p.join("t.jsonl")).unwrap();
    assert!(t.matches("\"token_ids\"").count() >= 2);
    assert_eq!(last_line(p.join("t.jsonl"))["end"], "incomplete");
}

/// Issue 10, item 12: a hostile endpoint cannot make `lineage measure`
/// grow without limit. Tokens past max_tokens that never end, one SSE line
/// that never ends, one event of two million token ids for max_tokens 8,
/// and 200,000 tokens for max_tokens 8 in a stream that then ends properly:
/// each stops the run with a clear error, keeps a small transcript marked
/// incomplete, and signs nothing.
#[test]
fn a_hostile_endpoint_is_bounded_and_gets_no_receipt() {
    let cases: [(Fail, &str); 4] = [
        (
            Fail::TooManyTokens {
                after: 0,
                tokens: u64::MAX,
                per_event: 1,
            },
            "more than the 8 tokens (max_tokens) it was asked for",
        ),
        (
            Fail::EndlessLineAfterRequests(0),
            "a stream event over the limit of",
        ),
        (
            Fail::TooManyTokens {
                after: 0,
                tokens: 2_000_000,
                per_event: 2_000_000,
            },
            "a stream event over the limit of",
        ),
        (
            Fail::TooManyTokens {
                after: 0,
                tokens: 200_000,
                per_event: 1000,
            },
            "more than the 8 tokens (max_tokens) it was asked for",
        ),
    ];
    for (fail, says) in cases {
        let dir = setup(1, 8);
        let p = dir.path();
        let fx = fixture(Mode::Coupled, Api::OpenAi, fail);
        let run = measure(p, &fx.url(), "1,2", &["--api", "openai"]);
        assert_failed(p, &run, says);
        let size = std::fs::metadata(p.join("t.jsonl")).unwrap().len();
        assert!(size < 64 * 1024, "{fail:?}: the transcript is {size} bytes");
    }
}

/// Issue 10, item 12: `--timeout` bounds a whole request, not the wait for
/// each token: an endpoint that sends a token every 150 ms never trips a
/// per-token wait of 1 s, but a request of 16 tokens takes 2.4 s.
#[test]
fn the_timeout_bounds_the_whole_request() {
    let dir = setup(1, 16);
    let p = dir.path();
    let fx = Fixture::start(Config {
        step: Duration::from_millis(150),
        ..Config::default()
    })
    .unwrap();
    let run = measure(p, &fx.url(), "1,2", &["--api", "openai", "--timeout", "1"]);
    assert_failed(p, &run, "timed out");
    assert!(run.stderr.contains("--timeout"), "{}", run.stderr);
}

/// Issue 10, item 12: SIGTERM ends the transcript with its `end` line, as
/// Ctrl-C does.
#[test]
fn sigterm_keeps_the_transcript_and_signs_nothing() {
    let dir = setup(6, 32);
    let p = dir.path();
    let fx = Fixture::start(Config {
        step: Duration::from_millis(10),
        ..Config::default()
    })
    .unwrap();
    let url = fx.url();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_chit"))
        .args(measure_args(&url, "1,4", "3"))
        .current_dir(p)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    loop {
        let t = std::fs::read_to_string(p.join("t.jsonl")).unwrap_or_default();
        if t.matches("\"token_ids\"").count() >= 2 {
            break;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("no progress: {t}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("chit did not end after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stderr = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(130), "{status:?} {stderr}");
    assert!(stderr.contains("SIGTERM"), "{stderr}");
    assert!(!p.join("r.json").exists());
    let end = last_line(p.join("t.jsonl"));
    assert_eq!(end["end"], "incomplete", "{end}");
}

fn bound_to(p: &Path, out: &str, log: Option<&str>) -> Run {
    let mut args = vec![
        "lineage",
        "bound",
        "--max-differing-positions",
        "0",
        "--min-first-divergent-index",
        "0",
        "--max-distinct-sequences",
        "1",
        "--repetitions",
        "2",
        "--out",
        out,
    ];
    if let Some(store) = log {
        args.extend(["--log", store]);
    }
    chit_in(p, &args, None)
}

/// Issue 13, item 6: a bound logged before the measurement, the receipt
/// after it, and `chit verify --log-key` proving that order from the two
/// log bundles alone.
#[test]
fn a_logged_bound_proves_it_came_before_the_receipt() {
    let dir = setup(2, 8);
    let p = dir.path();
    let key = common::log_init(p, "l.db", "log.pem", "test.example/lineage");
    let run = bound_to(p, "b3.json", Some("l.db"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("logged at index 0"), "{}", run.stdout);
    // The bound is a document chit recognises, and verifies.
    let v = chit_in(p, &["verify", "--json", "b3.json"], None);
    assert_eq!(v.code, 0, "{}", v.stdout);
    assert!(
        v.stdout.contains("numeric.lineage.bound.v1"),
        "{}",
        v.stdout
    );

    // A bound the log does not hold: nothing is sent, no transcript.
    let fx = fixture(Mode::Coupled, Api::OpenAi, Fail::None);
    let run = measure(p, &fx.url(), "1,4", &["--log", "l.db"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("is not in the log"), "{}", run.stderr);
    assert!(!p.join("t.jsonl").exists());

    std::thread::sleep(Duration::from_millis(1100)); // committed before now
    let url = fx.url();
    let mut args = measure_args(&url, "1,4", "2");
    let at = args.iter().position(|a| *a == "b.json").unwrap();
    args[at] = "b3.json";
    args.extend(["--log", "l.db", "--fill-timeout", "1"]);
    let run = chit_in(p, &args, None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("receipt at index 1, after its bound at 0"),
        "{}",
        run.stdout
    );
    let header: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(p.join("t.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["log"]["bound_index"], 0);
    assert!(header["log"]["checkpoint"]
        .as_str()
        .unwrap()
        .starts_with("test.example/lineage\n1\n"));

    // Both bundles in one file: valid, whatever their order in it.
    let both = common::chit_raw(p, &["log", "bundle", "--store", "l.db", "1", "0"], None);
    assert_eq!(both.code, 0, "{}", both.stderr);
    std::fs::write(p.join("both.json"), &both.stdout).unwrap();
    let v = chit_in(p, &["verify", "--log-key", &key, "both.json"], None);
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    // The receipt alone proves no order.
    let one = common::chit_raw(p, &["log", "bundle", "--store", "l.db", "1"], None);
    std::fs::write(p.join("one.json"), &one.stdout).unwrap();
    let v = chit_in(p, &["verify", "--log-key", &key, "one.json"], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(
        v.stdout.contains("INVALID lineage one.json"),
        "{}",
        v.stdout
    );
    assert!(v.stdout.contains("lineage-order"), "{}", v.stdout);
    // Its bound's bundle in another file: the order is checked across them.
    let bound = common::chit_raw(p, &["log", "bundle", "--store", "l.db", "0"], None);
    std::fs::write(p.join("bound.json"), &bound.stdout).unwrap();
    let v = chit_in(
        p,
        &["verify", "--log-key", &key, "one.json", "bound.json"],
        None,
    );
    assert_eq!(v.code, 0, "{}", v.stdout);
    assert!(
        v.stdout
            .contains("VALID lineage one.json (log index 1) (bound at 0, receipt at 1)"),
        "{}",
        v.stdout
    );

    // The same with C2SP tlog-proofs beside the receipt and the bound as
    // logged: each proven, and the order proven across them.
    for (i, name) in [("1", "r1"), ("0", "b0")] {
        let e = common::chit_raw(p, &["log", "get", "--store", "l.db", i], None);
        assert_eq!(e.code, 0);
        std::fs::write(p.join(format!("{name}.json")), &e.stdout).unwrap();
        let pr = common::chit_raw(p, &["log", "proof", "--store", "l.db", i], None);
        assert_eq!(pr.code, 0);
        std::fs::write(p.join(format!("{name}.tlog-proof")), &pr.stdout).unwrap();
    }
    let v = chit_in(
        p,
        &[
            "verify",
            "--log-key",
            &key,
            "--proof",
            "r1.tlog-proof",
            "--proof",
            "b0.tlog-proof",
            "r1.json",
            "b0.json",
        ],
        None,
    );
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    assert!(
        v.stdout
            .contains("VALID lineage r1.json (log index 1) (bound at 0, receipt at 1)"),
        "{}",
        v.stdout
    );
    // The receipt alone with its proof proves no order; proofs in the
    // wrong places prove nothing.
    let v = chit_in(
        p,
        &[
            "verify",
            "--log-key",
            &key,
            "--proof",
            "r1.tlog-proof",
            "r1.json",
        ],
        None,
    );
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("lineage-order"), "{}", v.stdout);
    let v = chit_in(
        p,
        &[
            "verify",
            "--log-key",
            &key,
            "--proof",
            "b0.tlog-proof",
            "--proof",
            "r1.tlog-proof",
            "r1.json",
            "b0.json",
        ],
        None,
    );
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("log-inclusion"), "{}", v.stdout);

    // A receipt logged before its bound: refused, naming both indexes.
    assert_eq!(bound_to(p, "b5.json", None).code, 0);
    std::thread::sleep(Duration::from_millis(1100));
    let mut args = measure_args(&url, "1,4", "2");
    for (from, to) in [
        ("b.json", "b5.json"),
        ("r.json", "r5.json"),
        ("t.jsonl", "t5.jsonl"),
    ] {
        let at = args.iter().position(|a| *a == from).unwrap();
        args[at] = to;
    }
    args.extend(["--fill-timeout", "1"]);
    assert_eq!(chit_in(p, &args, None).code, 0);
    for f in ["r5.json", "b5.json"] {
        let r = chit_in(p, &["log", "append", "--store", "l.db", f], None);
        assert_eq!(r.code, 0, "{}", r.stdout);
    }
    let late = common::chit_raw(p, &["log", "bundle", "--store", "l.db", "2", "3"], None);
    std::fs::write(p.join("late.json"), &late.stdout).unwrap();
    let v = chit_in(p, &["verify", "--log-key", &key, "late.json"], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(
        v.stdout
            .contains("logged at index 3, after the receipt (index 2)"),
        "{}",
        v.stdout
    );
}

/// Issue 15, item 4: given `--endpoint …/v1` and no `--api`, chit finds
/// llama.cpp, says before the first request which API and which URL it
/// measures, and commits that URL (the transcript records it, and the
/// receipt's endpoint commitment opens to it). Item 5: where standard
/// error is not a terminal, one plain line a level.
#[test]
fn the_api_and_url_measured_are_said_and_committed() {
    let dir = setup(2, 4);
    let p = dir.path();
    let fx = fixture(Mode::Coupled, Api::LlamaCpp, Fail::None);
    let given = format!("{}/v1", fx.url());
    let run = measure(p, &given, "1,2", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Piped: plain text, the class without colour codes.
    assert!(
        run.stdout.contains("class       occupancy_coupled"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains('\x1b'), "{:?}", run.stdout);
    let used = format!("{}/completion", fx.url());
    let said = format!("through the llamacpp API at {used} (found by asking the server");
    assert!(run.stderr.contains(&said), "{}", run.stderr);
    // Said before the first level's line.
    let first_level = run.stderr.find("level 1/2").expect("a line for level 1");
    assert!(
        run.stderr.find(&said).unwrap() < first_level,
        "{}",
        run.stderr
    );
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("level "))
        .collect();
    assert_eq!(lines.len(), 2, "{}", run.stderr);
    assert!(
        lines[0].starts_with("level 1/2: concurrency 1, 4/4 requests, "),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("level 2/2: concurrency 2, 4/4 requests, "),
        "{}",
        lines[1]
    );
    assert!(lines[1].ends_with(" s"), "{}", lines[1]);
    // The transcript's header records the URL measured and the API.
    let header = transcript(p).remove(0);
    assert_eq!(header["endpoint"], used.as_str());
    assert_eq!(header["api"], "llamacpp");
    // The receipt commits to it, and verifies against the transcript.
    let opened = chit_in(
        p,
        &["lineage", "open", "--transcript", "t.jsonl", "--json"],
        None,
    );
    let opened: serde_json::Value = serde_json::from_str(&opened.stdout).unwrap();
    let endpoint = opened["commitments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["what"] == "endpoint")
        .unwrap()
        .clone();
    assert_eq!(endpoint["value"], used.as_str());
    assert_eq!(
        endpoint["commitment_sha256"],
        receipt(p)["signed_body"]["endpoint_ref"]["commitment"]
    );
    assert_eq!(verify(p).code, 0);
}

/// Issue 15, item 2: chat requests on each API. The committed request is
/// the chat as asked; vLLM decodes it on its chat endpoint, llama.cpp and
/// SGLang after their own template renders it (recorded beside the set);
/// and the tokens measured are the model's for the rendered prompt.
#[test]
fn chat_requests_are_measured_on_each_api() {
    for (api, route, template) in [
        (Api::OpenAi, "/v1/chat/completions", None),
        (Api::LlamaCpp, "/completion", Some("/apply-template")),
        (Api::SGLang, "/generate", Some("/v1/tokenize")),
    ] {
        let dir = setup(1, 8);
        let p = dir.path();
        let chats: Vec<serde_json::Value> = (0..3)
            .map(|i| {
                serde_json::json!([
                    {"role": "system", "content": "Answer briefly."},
                    {"role": "user", "content": format!("question {i}: what is the sea? \u{1F30A}")},
                ])
            })
            .collect();
        let set: String = chats
            .iter()
            .map(|m| format!("{}\n", serde_json::json!({"messages": m, "max_tokens": 8})))
            .collect();
        std::fs::write(p.join("req.jsonl"), set).unwrap();
        let fx = fixture(Mode::Coupled, api, Fail::None);
        let run = measure(p, &fx.url(), "1,8", &[]);
        assert_eq!(run.code, 0, "{api:?}: {}", run.stderr);
        let used = format!("{}{route}", fx.url());
        assert!(
            run.stderr.contains(&format!("API at {used}")),
            "{api:?}: {}",
            run.stderr
        );
        if let Some(t) = template {
            let said = format!(
                "chat messages rendered by the server's template at {}{t}",
                fx.url()
            );
            assert!(run.stderr.contains(&said), "{api:?}: {}", run.stderr);
        }
        let v = verify(p);
        assert_eq!(v.code, 0, "{api:?}: {}{}", v.stdout, v.stderr);
        let lines = transcript(p);
        assert_eq!(lines[0]["endpoint"], used.as_str());
        // The committed set: the chats as asked, whatever API carried them.
        for (i, m) in chats.iter().enumerate() {
            let q = &lines[1]["requests"][i];
            assert_eq!(&q["messages"], m, "{api:?}");
            assert_eq!(q["max_tokens"], 8);
            assert_eq!(q["temperature"], 0);
            assert!(q.get("prompt").is_none(), "{q}");
        }
        let rendered: Vec<String> = chats
            .iter()
            .map(|m| chit_fixture::render_chat(m).unwrap())
            .collect();
        let beside = lines.iter().find_map(|l| l.get("rendered_prompts"));
        match api {
            Api::OpenAi => assert!(beside.is_none(), "{beside:?}"),
            Api::LlamaCpp => {
                let b = beside.expect("the rendered prompts beside the set");
                assert_eq!(b["source"], format!("{}/apply-template", fx.url()));
                assert_eq!(b["prompts"], serde_json::json!(rendered));
            }
            Api::SGLang => {
                let b = beside.expect("the rendered token ids beside the set");
                assert_eq!(b["source"], format!("{}/v1/tokenize", fx.url()));
                let ids: Vec<Vec<u32>> =
                    rendered.iter().map(|r| chit_fixture::tokenize(r)).collect();
                assert_eq!(b["token_ids"], serde_json::json!(ids));
            }
        }
        // The tokens measured alone are the model's for the rendered prompt.
        let config = Config {
            mode: Mode::Coupled,
            api,
            ..Config::default()
        };
        for (i, r) in rendered.iter().enumerate() {
            let want = chit_fixture::decode_batch(&config, &[r.as_str()], 8).remove(0);
            let got = lines
                .iter()
                .find(|l| l["level"] == 0 && l["repetition"] == 0 && l["request"] == i)
                .unwrap();
            assert_eq!(
                got["token_ids"],
                serde_json::json!(want),
                "{api:?} request {i}"
            );
        }
        // A changed message no longer opens the committed set (L14).
        edited_transcript_breaks_l14(p, |t| t.replacen("Answer briefly.", "Answer at length.", 1));
    }
}

/// A server that cannot render chats (here an OpenAI-style one taken for
/// llama.cpp) is said, with what to do; nothing is signed.
#[test]
fn a_server_without_the_template_endpoint_is_said() {
    let dir = setup(1, 4);
    let p = dir.path();
    std::fs::write(
        p.join("req.jsonl"),
        "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n",
    )
    .unwrap();
    let fx = fixture(Mode::Coupled, Api::OpenAi, Fail::None);
    let run = measure(p, &fx.url(), "1,2", &["--api", "llamacpp"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let said = format!(
        "request 0: {}/apply-template answered HTTP 404 Not Found when asked to render chat messages with the server's template (the server has no such endpoint: is it the API chit took it for? --api names it)",
        fx.url()
    );
    assert!(run.stderr.contains(&said), "{}", run.stderr);
    assert!(!p.join("r.json").exists());
    assert_eq!(last_line(p.join("t.jsonl"))["end"], "incomplete");
    // A template endpoint that answers what is not JSON, or no token ids.
    for (api, fail, says) in [
        (
            Api::LlamaCpp,
            Fail::MalformedAfterRequests(0),
            "/apply-template answered what is not JSON when asked to render chat messages",
        ),
        (
            Api::SGLang,
            Fail::MalformedAfterRequests(0),
            "/v1/tokenize answered what is not JSON when asked to render chat messages",
        ),
        (
            Api::SGLang,
            Fail::NoTokenIds,
            "/v1/tokenize answered without a \"tokens\" list of token ids",
        ),
    ] {
        std::fs::remove_file(p.join("t.jsonl")).unwrap();
        let fx = fixture(Mode::Coupled, api, fail);
        let run = measure(p, &fx.url(), "1,2", &[]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.contains(says), "{says}: {}", run.stderr);
        assert!(!p.join("r.json").exists());
    }
}

/// Issue 15, item 6: counts below their least are refused in words.
#[test]
fn too_few_repetitions_are_refused_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let bound = |distinct: &str, repetitions: &str| {
        chit_in(
            dir.path(),
            &[
                "lineage",
                "bound",
                "--max-differing-positions",
                "0",
                "--min-first-divergent-index",
                "0",
                "--max-distinct-sequences",
                distinct,
                "--repetitions",
                repetitions,
                "--out",
                "b.json",
            ],
            None,
        )
    };
    let run = bound("1", "1");
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("1 is too few: give at least 2"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("18446744073709551615"),
        "{}",
        run.stderr
    );
    let run = bound("0", "2");
    assert!(
        run.stderr.contains("0 is too few: give at least 1"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("b.json").exists());
}
