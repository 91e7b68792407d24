//! `chit serve` end to end on loopback: appends with tokens, refusals and
//! their status codes, the verifier, bundles proven offline, tlog-tiles
//! audited over HTTP by `chit log audit URL`, metrics, and SIGTERM.

mod common;

use base64::Engine;
use common::chit_in;
use common::serving::{self, http, json, receipt, try_http, Server};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn serve(dir: &Path, extra: &[&str]) -> Server {
    serve_store(dir, "s.db", extra)
}

fn serve_store(dir: &Path, store: &str, extra: &[&str]) -> Server {
    serve_args(
        dir,
        &["serve", "--store", store, "--listen", "127.0.0.1:0"],
        extra,
    )
}

/// `chit serve --demo` (its log in a folder of its own, `dir` for the
/// access log).
fn serve_demo(dir: &Path) -> Server {
    serve_args(dir, &["serve", "--demo", "--listen", "127.0.0.1:0"], &[])
}

/// `chit serve` with its access log (one JSON line a request) in
/// `serve.log`.
fn serve_args(dir: &Path, args: &[&str], extra: &[&str]) -> Server {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("serve.log"))
        .unwrap();
    serving::start(dir, args, extra, log.into())
}

/// What an answer to a POST acknowledged: its index and content address
/// (201 appended, 200 already there); nothing otherwise.
fn acknowledged(code: u16, body: &[u8]) -> Option<(u64, String)> {
    (code == 200 || code == 201).then(|| {
        let v = json(body);
        (
            v["index"].as_u64().unwrap(),
            v["sha256"].as_str().unwrap().to_string(),
        )
    })
}

/// A logged submission's answer proves it: the checkpoint is signed by
/// the log's key `vkey` under `origin`, and the inclusion proof takes
/// `entry`'s leaf hash at `index` to that checkpoint's root.
fn assert_proven(answer: &Value, entry: &[u8], origin: &str, vkey: &str) {
    let log = chit_log::note::NoteVerifier::from_verifier_key(vkey).unwrap();
    let note = answer["checkpoint"].as_str().expect("a checkpoint");
    let c = chit_log::checkpoint::open_checkpoint(note.as_bytes(), origin, &log, &[])
        .unwrap()
        .checkpoint;
    assert_eq!(answer["size"], c.size, "{answer}");
    let b64 = base64::engine::general_purpose::STANDARD;
    let proof: Vec<[u8; 32]> = answer["inclusion_proof"]
        .as_array()
        .expect("an inclusion proof")
        .iter()
        .map(|h| b64.decode(h.as_str().unwrap()).unwrap().try_into().unwrap())
        .collect();
    assert_eq!(
        answer["sha256"],
        chit_core::digest::sha256_hex(entry),
        "{answer}"
    );
    let leaf = chit_log::tree::leaf_hash(entry);
    assert_eq!(answer["leaf_hash"], b64.encode(leaf), "{answer}");
    let index = answer["index"].as_u64().unwrap();
    chit_log::tree::verify_inclusion(&leaf, index, c.size, &proof, &c.root).unwrap();
}

fn token_line(name: &str, token: &str, kinds: Option<&str>) -> String {
    let hex = chit_core::digest::sha256_hex(token.as_bytes());
    let kinds = kinds
        .map(|k| format!("kinds = [\"{k}\"]\n"))
        .unwrap_or_default();
    format!("[[token]]\nname = \"{name}\"\nsha256 = \"{hex}\"\n{kinds}")
}

/// A SQLite file that does not exist yet is made a new log (a fresh store
/// just works), named after the file unless --origin says; what exists is
/// never replaced or written through, and for an existing log the options
/// that make one must say what it is (refused otherwise, not ignored).
#[test]
fn a_new_sqlite_file_is_made_a_log_and_nothing_else_is_replaced() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    assert_eq!(chit_in(dir, &["keygen", "--out", "log.pem"], None).code, 0);
    std::fs::write(dir.join("tokens.toml"), token_line("ci", "tok-ci", None)).unwrap();
    // `chit serve ARGS` (on any free port unless ARGS say where) refused
    // before it serves: exit 2, its stderr.
    let refused = |args: &[&str]| -> String {
        let listen: &[&str] = if args.contains(&"--listen") {
            &[]
        } else {
            &["--listen", "127.0.0.1:0"]
        };
        let args = [&["serve"][..], args, listen].concat();
        let r = chit_in(dir, &args, None);
        assert_eq!(r.code, 2, "{args:?}: {}{}", r.stdout, r.stderr);
        r.stderr
    };

    // Without a key nothing is made.
    let why = refused(&["--store", "new.db"]);
    assert!(
        why.contains("new.db does not exist") && why.contains("--key FILE"),
        "{why}"
    );
    assert!(!dir.join("new.db").exists());
    // Nor when the server could not start for another reason it knew first.
    refused(&[
        "--store",
        "new.db",
        "--key",
        "log.pem",
        "--tokens",
        "none.toml",
    ]);
    assert!(!dir.join("new.db").exists());

    // With one: made, named after the file, serving, appending.
    let server = serve_store(
        dir,
        "new.db",
        &["--key", "log.pem", "--tokens", "tokens.toml"],
    );
    assert!(
        server
            .before
            .contains("created log chit.localhost/new in new.db"),
        "{}",
        server.before
    );
    let auth = [("Authorization", "Bearer tok-ci")];
    let (code, body) = http(&server.addr, "POST", "/v1/entries", &auth, &receipt(0));
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    let note = json(&body)["checkpoint"].as_str().unwrap().to_string();
    assert!(note.starts_with("chit.localhost/new\n1\n"), "{note}");
    drop(server);

    // Served again: the same log, opened, not made (its key as recorded).
    let server = serve_store(dir, "new.db", &[]);
    assert!(!server.before.contains("created"), "{}", server.before);
    let (code, body) = http(&server.addr, "GET", "/checkpoint", &[], b"");
    assert_eq!(code, 200);
    assert!(body.starts_with(b"chit.localhost/new\n1\n"));
    drop(server);

    // A new log's options for an existing one: what it already is passes
    // (the command that made it runs again as it was); anything else is
    // refused, not ignored.
    let server = serve_store(
        dir,
        "new.db",
        &["--origin", "chit.localhost/new", "--threshold", "1"],
    );
    assert!(!server.before.contains("created"), "{}", server.before);
    drop(server);
    std::fs::write(
        dir.join("trust.toml"),
        "[[key]]\nname = \"prover\"\npublic_key = \"ed25519:4lRZdz0JUGd6_Ac_D48nLN1Q2AtnycLbHIe-nj9KHAA\"\n",
    )
    .unwrap();
    for (extra, want) in [
        (
            &["--origin", "other.example/log"][..],
            "holds the log chit.localhost/new, not other.example/log",
        ),
        (
            &["--trust", "trust.toml"][..],
            "the options given differ: --trust (the log has no trust file)",
        ),
        (
            &["--allow-unchecked"][..],
            "the options given differ: --allow-unchecked (the log refuses",
        ),
        (
            &["--threshold", "2"][..],
            "differ: --threshold 2 (the log's is 1)",
        ),
    ] {
        let why = refused(&[&["--store", "new.db"][..], extra].concat());
        assert!(why.contains(want), "{extra:?}: {why}");
    }

    // A log made to need two trusted keys: the same options serve it
    // again; `--threshold 1`, said outright, is refused, not taken for
    // the default.
    let made = ["--trust", "trust.toml", "--threshold", "2"];
    let server = serve_store(dir, "two.db", &[&["--key", "log.pem"][..], &made].concat());
    assert!(
        server.before.contains("created log chit.localhost/two"),
        "{}",
        server.before
    );
    drop(server);
    let server = serve_store(dir, "two.db", &made);
    assert!(!server.before.contains("created"), "{}", server.before);
    drop(server);
    let why = refused(&[
        "--store",
        "two.db",
        "--trust",
        "trust.toml",
        "--threshold",
        "1",
    ]);
    assert!(
        why.contains("differ: --threshold 1 (the log's is 2)"),
        "{why}"
    );
    // Nor is a server that cannot listen left having made a log.
    let why = refused(&[
        "--store",
        "nolisten.db",
        "--key",
        "log.pem",
        "--listen",
        "nonsense",
    ]);
    assert!(why.contains("cannot listen on nonsense"), "{why}");
    assert!(!dir.join("nolisten.db").exists());

    // A file that is not a log is left as it was; a dangling link is not
    // written through.
    std::fs::write(dir.join("notes.txt"), b"mine").unwrap();
    std::os::unix::fs::symlink(dir.join("elsewhere.db"), dir.join("link.db")).unwrap();
    for store in ["notes.txt", "link.db"] {
        refused(&["--store", store, "--key", "log.pem"]);
    }
    assert_eq!(std::fs::read(dir.join("notes.txt")).unwrap(), b"mine");
    // A new file whose SQLite companion is already there (a link, another
    // database's) is not made: it would be taken over or written through.
    std::os::unix::fs::symlink(dir.join("nowhere/x"), dir.join("comp.db-shm")).unwrap();
    let why = refused(&["--store", "comp.db", "--key", "log.pem"]);
    assert!(why.contains("comp.db-shm is already there"), "{why}");
    assert!(!dir.join("comp.db").exists() && !dir.join("nowhere").exists());
    refused(&["--store", ""]);
    assert!(!dir.join("elsewhere.db").exists());
    assert!(dir
        .join("link.db")
        .symlink_metadata()
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn the_server_appends_verifies_proves_and_is_audited_over_http() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = common::log_init(dir, "s.db", "log.pem", "serve.example/log");
    std::fs::write(
        dir.join("tokens.toml"),
        token_line("ci", "tok-ci", None)
            + &token_line("packets", "tok-p", Some("verification.packet.v1")),
    )
    .unwrap();
    let server = serve(dir, &["--tokens", "tokens.toml"]);
    let a = server.addr.as_str();
    let auth = [("Authorization", "Bearer tok-ci")];

    // Appended: 201, with a proof that verifies against its checkpoint.
    let r0 = receipt(0);
    let (code, body) = http(a, "POST", "/v1/entries", &auth, &r0);
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    let v = json(&body);
    assert_eq!(v["index"], 0);
    let note = v["checkpoint"].as_str().unwrap();
    assert!(note.starts_with("serve.example/log\n1\n"), "{note}");
    assert_proven(&v, &r0, "serve.example/log", &key);
    // Again: 200, its index.
    let (code, body) = http(a, "POST", "/v1/entries", &auth, &r0);
    assert_eq!(code, 200);
    assert_eq!(json(&body)["status"], "present");
    // Invalid: 422 with the findings chit verify gives, nothing appended.
    let mut broken: Value = serde_json::from_slice(&receipt(1)).unwrap();
    broken["agreement"] = "maybe".into();
    let (code, body) = http(
        a,
        "POST",
        "/v1/entries",
        &auth,
        broken.to_string().as_bytes(),
    );
    assert_eq!(code, 422);
    assert!(!json(&body)["errors"].as_array().unwrap().is_empty());
    // Not JSON: 400. No token, a wrong one: 401. A kind the token may not
    // submit: 403. Too large for an entry: 413.
    assert_eq!(http(a, "POST", "/v1/entries", &auth, b"{\"trunc").0, 400);
    assert_eq!(http(a, "POST", "/v1/entries", &[], &receipt(2)).0, 401);
    assert_eq!(
        http(
            a,
            "POST",
            "/v1/entries",
            &[("Authorization", "Bearer nope")],
            &receipt(2)
        )
        .0,
        401
    );
    assert_eq!(
        http(
            a,
            "POST",
            "/v1/entries",
            &[("Authorization", "Bearer tok-p")],
            &receipt(2)
        )
        .0,
        403
    );
    assert_eq!(
        http(a, "POST", "/v1/entries", &auth, &vec![b' '; 70_000]).0,
        413
    );
    // JSON Lines under a token for packets only: each line of a kind it may
    // not submit is answered "forbidden" in its place, and the packet
    // between them is still checked and answered; a body of forbidden lines
    // only is answered too (none of it reaches the log).
    let packet = std::fs::read(common::repo().join("examples/packets/p0.env.json")).unwrap();
    let packet: Vec<u8> = packet.into_iter().filter(|&b| b != b'\n').collect();
    let jsonl_p = [
        ("Authorization", "Bearer tok-p"),
        ("Content-Type", "application/jsonl"),
    ];
    let mixed = [receipt(6), packet, receipt(7)].join(&b'\n');
    let (code, body) = http(a, "POST", "/v1/entries", &jsonl_p, &mixed);
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let answers: Vec<Value> = body
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(json)
        .collect();
    let seen: Vec<(&str, u64)> = answers
        .iter()
        .map(|v| (v["status"].as_str().unwrap(), v["line"].as_u64().unwrap()))
        .collect();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!((seen[0], seen[2]), (("forbidden", 1), ("forbidden", 3)));
    assert_eq!(seen[1].1, 2);
    assert_ne!(seen[1].0, "forbidden");
    assert!(answers[0]["error"]
        .as_str()
        .unwrap()
        .contains("token packets may not submit"));
    let only = [receipt(8), receipt(9)].join(&b'\n');
    let (code, body) = http(a, "POST", "/v1/entries", &jsonl_p, &only);
    assert_eq!(code, 200);
    let statuses: Vec<String> = body
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| json(l)["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(statuses, ["forbidden", "forbidden"]);

    // JSON Lines: each line answered, in order; the valid ones appended.
    let mut lines = receipt(3);
    lines.push(b'\n');
    lines.extend_from_slice(broken.to_string().as_bytes());
    lines.push(b'\n');
    lines.extend_from_slice(&receipt(4));
    lines.push(b'\n');
    let mut h = auth.to_vec();
    h.push(("Content-Type", "application/jsonl"));
    let (code, body) = http(a, "POST", "/v1/entries", &h, &lines);
    assert_eq!(code, 200);
    let answers: Vec<Value> = body
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(json)
        .collect();
    let statuses: Vec<&str> = answers
        .iter()
        .map(|v| v["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["appended", "refused", "appended"]);
    assert_eq!(answers[2]["index"], 2);
    // Each logged line is answered as a single submission is, with its
    // line number: its inclusion proof and the checkpoint covering it.
    let lines_answered: Vec<u64> = answers
        .iter()
        .map(|v| v["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines_answered, [1, 2, 3]);
    assert_proven(&answers[0], &receipt(3), "serve.example/log", &key);
    assert_proven(&answers[2], &receipt(4), "serve.example/log", &key);
    assert!(answers[1].get("inclusion_proof").is_none());
    // A line already logged is answered "present", with its proof too.
    let (code, body) = http(a, "POST", "/v1/entries", &h, &receipt(4));
    assert_eq!(code, 200);
    let again = json(&body);
    assert_eq!(
        (again["status"].as_str(), again["line"].as_u64()),
        (Some("present"), Some(1))
    );
    assert_proven(&again, &receipt(4), "serve.example/log", &key);

    // The verifier: the verdict, nothing appended.
    let (code, body) = http(a, "POST", "/v1/verify", &[], &receipt(5));
    assert_eq!(code, 200);
    assert_eq!(json(&body)["valid"], true);
    assert_eq!(
        http(a, "POST", "/v1/verify", &[], broken.to_string().as_bytes()).0,
        422
    );

    // Reads: the bundle proves itself offline; by content address too.
    let (code, bundle) = http(a, "GET", "/v1/entries/2", &[], b"");
    assert_eq!(code, 200);
    std::fs::write(dir.join("b2.json"), &bundle).unwrap();
    let v = chit_in(dir, &["verify", "--log-key", &key, "b2.json"], None);
    assert_eq!(v.code, 0, "{}", v.stdout);
    let sha = chit_core::digest::sha256_hex(&r0);
    let (code, body) = http(a, "GET", &format!("/v1/entries/sha256:{sha}"), &[], b"");
    assert_eq!(code, 200);
    let entry = base64::engine::general_purpose::STANDARD
        .decode(json(&body)["entry"].as_str().unwrap())
        .unwrap();
    assert_eq!(entry, r0);
    assert_eq!(http(a, "GET", "/v1/entries/99", &[], b"").0, 404);
    let (code, body) = http(a, "GET", "/v1/consistency?from=1&to=3", &[], b"");
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(json(&body)["new"], 3);

    // Any tiles client can audit it: chit log audit URL.
    let url = format!("http://{a}");
    let r = chit_in(
        dir,
        &["log", "audit", &url, "--log-key", &key, "--state", "a.json"],
        None,
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.starts_with("CONSISTENT"), "{}", r.stdout);

    // Search: by kind, and on from where a page ended.
    let (code, body) = http(a, "GET", "/v1/search?kind=run-receipt&limit=2", &[], b"");
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let v = json(&body);
    assert_eq!(v["hits"].as_array().unwrap().len(), 2);
    assert_eq!(v["next"], 1);
    let (size, _) =
        chit_logstore::Log::open(chit_logstore::open(&dir.join("s.db").to_string_lossy()).unwrap())
            .unwrap()
            .head()
            .unwrap();
    assert_eq!(v["indexed_upto"], size, "{v}");
    let (_, body) = http(a, "GET", "/v1/search?kind=run-receipt&after=1", &[], b"");
    assert_eq!(json(&body)["hits"][0]["index"], 2);
    let (_, body) = http(
        a,
        "GET",
        "/v1/search?since=2000-01-01T00:00:00Z&until=2001-01-01T00:00:00Z",
        &[],
        b"",
    );
    assert_eq!(json(&body)["hits"].as_array().unwrap().len(), 0);
    assert_eq!(
        http(a, "GET", "/v1/search?since=yesterday", &[], b"").0,
        400
    );
    // A parameter the route does not take (art_id for art) is an error
    // naming it, not a search without it (every entry).
    let (code, body) = http(a, "GET", "/v1/search?art_id=art_00", &[], b"");
    assert_eq!(code, 400, "{}", String::from_utf8_lossy(&body));
    let why = json(&body)["error"].as_str().unwrap().to_string();
    assert!(why.contains("art_id") && why.contains("`art`"), "{why}");
    assert_eq!(
        http(a, "GET", "/v1/consistency?from=1&to=3&tree=2", &[], b"").0,
        400
    );
    // A kind chit does not know is an error naming the kinds, not an
    // empty page.
    let (code, body) = http(a, "GET", "/v1/search?kind=packet", &[], b"");
    assert_eq!(code, 400, "{}", String::from_utf8_lossy(&body));
    let why = json(&body)["error"].as_str().unwrap().to_string();
    assert!(
        why.contains("unknown kind 'packet'") && why.contains("verification.packet.v1"),
        "{why}"
    );

    let (code, body) = http(a, "GET", "/metrics", &[], b"");
    assert_eq!(code, 200);
    let m = String::from_utf8_lossy(&body);
    assert!(m.contains("chit_entries_appended_total 3"), "{m}");
    assert!(
        m.contains("chit_http_responses_total{code=\"401\"} 2"),
        "{m}"
    );
    assert_eq!(http(a, "GET", "/healthz", &[], b"").0, 200);
}

/// SIGTERM, then the server's exit status (within 20 s).
#[cfg(unix)]
fn terminate(server: &mut Server) -> std::process::ExitStatus {
    let pid = server.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let start = std::time::Instant::now();
    loop {
        if let Some(s) = server.child.try_wait().unwrap() {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the server did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[cfg(unix)]
fn sigterm_stops_the_server_after_answering() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    common::log_init(dir, "s.db", "log.pem", "serve.example/log");
    std::fs::write(dir.join("tokens.toml"), token_line("ci", "tok-ci", None)).unwrap();
    let mut server = serve(dir, &["--tokens", "tokens.toml"]);
    let (code, _) = http(
        &server.addr,
        "POST",
        "/v1/entries",
        &[("Authorization", "Bearer tok-ci")],
        &receipt(0),
    );
    assert_eq!(code, 201);
    assert_eq!(terminate(&mut server).code(), Some(0));
    // Its access log: one JSON line a request.
    let log = std::fs::read_to_string(dir.join("serve.log")).unwrap();
    let line: Value =
        serde_json::from_str(log.lines().find(|l| l.contains("/v1/entries")).unwrap()).unwrap();
    assert_eq!(line["target"], "chit::access");
    assert_eq!(line["level"], "INFO");
    assert_eq!(line["method"], "POST");
    assert_eq!(line["status"], 201);
    assert_eq!(line["token"], "ci");
    // And the server's own events: listening, the batch, stopping.
    let messages: Vec<String> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["message"].as_str().map(str::to_string))
        .collect();
    for m in ["listening", "batch written", "stopped"] {
        assert!(messages.iter().any(|x| x == m), "no {m:?} in {messages:?}");
    }
    // What it acknowledged is in the log.
    let r = chit_in(dir, &["log", "info", "--store", "s.db"], None);
    assert!(r.stdout.contains("size: 1"), "{}", r.stdout);
}

/// Two servers on one PostgreSQL log: both take writes, one sequences at a
/// time; one killed with SIGKILL mid-load; one consistent tree, no index
/// given twice, nothing acknowledged lost.
#[test]
fn two_servers_one_postgres_log_one_killed_mid_load() {
    let Some(pg) = common::pg_schema("chit_srv") else {
        return;
    };
    let url = pg.url.clone();
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = common::log_init(dir, &url, "log.pem", "two.example/log");
    std::fs::write(dir.join("tokens.toml"), token_line("ci", "tok", None)).unwrap();
    let mut a = serve_store(dir, &url, &["--tokens", "tokens.toml"]);
    let b = serve_store(dir, &url, &["--tokens", "tokens.toml"]);
    let (addr_a, addr_b) = (a.addr.clone(), b.addr.clone());
    const CLIENTS: usize = 4;
    const EACH: usize = 60;
    let receipts: Vec<Vec<u8>> = (0..CLIENTS * EACH).map(|n| receipt(1000 + n)).collect();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let acked: Vec<(u64, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let (addr_a, addr_b, done) = (addr_a.clone(), addr_b.clone(), done.clone());
                let receipts = &receipts;
                s.spawn(move || {
                    let mut acked = Vec::new();
                    for i in 0..EACH {
                        let body = &receipts[c * EACH + i];
                        let first = if i % 2 == 0 { &addr_a } else { &addr_b };
                        let h = [("Authorization", "Bearer tok")];
                        // A server gone: the other one takes the write.
                        let r = try_http(first, "POST", "/v1/entries", &h, body)
                            .ok()
                            .filter(|(code, _)| *code == 200 || *code == 201)
                            .or_else(|| try_http(&addr_b, "POST", "/v1/entries", &h, body).ok());
                        if let Some((code, body)) = r {
                            acked.extend(acknowledged(code, &body));
                        }
                        done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    acked
                })
            })
            .collect();
        // Kill A a third of the way in.
        while done.load(std::sync::atomic::Ordering::SeqCst) < CLIENTS * EACH / 3 {
            std::thread::sleep(Duration::from_millis(2));
        }
        a.child.kill().unwrap();
        let _ = a.child.wait();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    // No index given twice to different bytes; each acknowledged entry is
    // at its index with its bytes.
    let mut by_index = std::collections::HashMap::new();
    for (i, sha) in &acked {
        if let Some(other) = by_index.insert(*i, sha.clone()) {
            assert_eq!(&other, sha, "index {i} given to two entries");
        }
    }
    let mut log = chit_logstore::Log::open(chit_logstore::open(&url).unwrap()).unwrap();
    for (i, sha) in &acked {
        let e = log.store().entry(*i).unwrap().unwrap();
        assert_eq!(chit_core::digest::hex(&e.sha256), *sha);
    }
    // Everything again through B: all of it in the log, exactly once.
    for r in &receipts {
        let (code, _) = http(
            &addr_b,
            "POST",
            "/v1/entries",
            &[("Authorization", "Bearer tok")],
            r,
        );
        assert!(code == 200 || code == 201, "{code}");
    }
    let audit = chit_in(
        dir,
        &[
            "log",
            "audit",
            &url,
            "--log-key",
            &key,
            "--state",
            "s.json",
            "--json",
        ],
        None,
    );
    assert_eq!(audit.code, 0, "{}{}", audit.stdout, audit.stderr);
    let v = json(audit.stdout.as_bytes());
    assert_eq!(v["size"].as_u64(), Some((CLIENTS * EACH) as u64));
    // The survivor stops on SIGTERM as a SQLite server does: exit 0 (its
    // PostgreSQL connections closed off the runtime; it once panicked).
    let mut b = b;
    assert_eq!(terminate(&mut b).code(), Some(0));
    drop(pg);
}

/// Two sequencers on one PostgreSQL log, one paused with SIGSTOP while it
/// holds the lease (a `chit log append` reading standard input holds it
/// for its run): the server's write waits a few seconds at most, and the
/// paused one, resumed, commits nothing and says why.
#[test]
fn a_paused_sequencer_stalls_the_others_a_few_seconds_at_most() {
    let Some(mut pg) = common::pg_schema("chit_stop") else {
        return;
    };
    let url = pg.url.clone();
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = common::log_init(dir, &url, "log.pem", "stop.example/log");
    std::fs::write(dir.join("tokens.toml"), token_line("ci", "tok", None)).unwrap();
    let server = serve_store(dir, &url, &["--tokens", "tokens.toml"]);
    let mut append = Command::new(env!("CARGO_BIN_EXE_chit"))
        .current_dir(dir)
        .args(["log", "append", "--store", &url, "--lines", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let holding = "SELECT count(*) FROM chit_log_lease WHERE pid IS NOT NULL";
    let started = std::time::Instant::now();
    while !(pg.number("SELECT count(*) FROM pg_tables WHERE tablename = 'chit_log_lease'") > 0
        && pg.number(holding) == 1)
    {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no lease taken"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = append.id().to_string();
    // Killed if the test fails while it is stopped.
    struct Reap(String);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = Command::new("kill")
                .args(["-KILL", &self.0])
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
    let _reap = Reap(pid.clone());
    let signal = |sig: &str| {
        let s = Command::new("kill").args([sig, &pid]).status().unwrap();
        assert!(s.success(), "kill {sig}");
    };
    signal("-STOP");
    let waited = std::time::Instant::now();
    let (code, body) = http(
        &server.addr,
        "POST",
        "/v1/entries",
        &[("Authorization", "Bearer tok")],
        &receipt(1),
    );
    let waited = waited.elapsed();
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    assert!(
        waited < Duration::from_secs(6),
        "the write waited {waited:?}"
    );
    signal("-CONT");
    let mut stdin = append.stdin.take().unwrap();
    stdin.write_all(&receipt(2)).unwrap();
    stdin.write_all(b"\n").unwrap();
    drop(stdin);
    let out = append.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("another sequencer took the lease"),
        "{stderr}"
    );
    assert_eq!(pg.number("SELECT size FROM chit_log_head"), 1);
    let audit = chit_in(dir, &["log", "audit", &url, "--log-key", &key], None);
    assert_eq!(audit.code, 0, "{}{}", audit.stdout, audit.stderr);
    drop(server);
}

/// Full tiles and bundles are answered as immutable, the right edge's
/// partial ones and the checkpoint as not to be cached; the same log
/// exported as files and served by a plain static server (Python's
/// http.server) is audited over HTTP, and a damaged entry bundle there is
/// named (exit 1), not taken for a source that cannot be read.
#[test]
fn tiles_are_cached_as_they_may_be_and_a_static_copy_is_audited() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = common::log_init(dir, "s.db", "log.pem", "tiles.example/log");
    let mut lines = Vec::new();
    for n in 0..257 {
        lines.extend(receipt(n));
        lines.push(b'\n');
    }
    std::fs::write(dir.join("in.jsonl"), lines).unwrap();
    common::log_append_lines(dir, "s.db", "in.jsonl");
    let server = serve(dir, &[]);
    let cache = |path: &str| {
        let (code, head) = serving::get_head(&server.addr, path);
        assert_eq!(code, 200, "{path}: {head}");
        head.lines()
            .find_map(|l| l.strip_prefix("cache-control: ").map(str::to_string))
            .unwrap_or_default()
    };
    let forever = "public, max-age=31536000, immutable";
    assert_eq!(cache("/tile/0/000"), forever);
    assert_eq!(cache("/tile/entries/000"), forever);
    assert_eq!(cache("/tile/0/001.p/1"), "no-cache");
    assert_eq!(cache("/tile/entries/001.p/1"), "no-cache");
    assert_eq!(cache("/tile/1/000.p/1"), "no-cache");
    assert_eq!(cache("/checkpoint"), "no-cache");
    drop(server);

    let r = chit_in(
        dir,
        &["log", "export-tiles", "--store", "s.db", "public"],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let web = common::StaticWeb::start(&dir.join("public"));
    let url = web.url.clone();
    let audit = |state: &str| {
        chit_in(
            dir,
            &[
                "log",
                "audit",
                &url,
                "--log-key",
                &key,
                "--state",
                state,
                "--json",
            ],
            None,
        )
    };
    let r = audit("a.json");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(json(r.stdout.as_bytes())["size"], 257);
    // A length prefix damaged: the bundle is named.
    let bundle = dir.join("public/tile/entries/000");
    let mut bytes = std::fs::read(&bundle).unwrap();
    bytes[0] = 0xff;
    std::fs::write(&bundle, &bytes).unwrap();
    let r = audit("b.json");
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let v = json(r.stdout.as_bytes());
    let said = v["problems"][0]["message"].as_str().unwrap();
    assert!(
        said.contains("tile/entries/000 is not a valid entry bundle"),
        "{v}"
    );
    drop(web);
}

/// A server killed with SIGKILL under load: every entry it acknowledged is
/// in the log when it starts again.
#[test]
fn kill_nine_under_load_loses_nothing_acknowledged() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = common::log_init(dir, "s.db", "log.pem", "kill.example/log");
    std::fs::write(dir.join("tokens.toml"), token_line("ci", "tok", None)).unwrap();
    let receipts: Vec<Vec<u8>> = (0..400).map(|n| receipt(5000 + n)).collect();
    let mut server = serve(dir, &["--tokens", "tokens.toml"]);
    let addr = server.addr.clone();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let acked: Vec<(u64, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|c| {
                let (addr, done, receipts) = (addr.clone(), done.clone(), &receipts);
                s.spawn(move || {
                    let mut acked = Vec::new();
                    for i in (c..receipts.len()).step_by(8) {
                        let h = [("Authorization", "Bearer tok")];
                        if let Ok((code, body)) =
                            try_http(&addr, "POST", "/v1/entries", &h, &receipts[i])
                        {
                            acked.extend(acknowledged(code, &body));
                        }
                        done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    acked
                })
            })
            .collect();
        while done.load(std::sync::atomic::Ordering::SeqCst) < receipts.len() / 2 {
            std::thread::sleep(Duration::from_millis(1));
        }
        server.child.kill().unwrap(); // SIGKILL
        let _ = server.child.wait();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(!acked.is_empty());
    let audit = chit_in(
        dir,
        &[
            "log",
            "audit",
            "s.db",
            "--log-key",
            &key,
            "--state",
            "a.json",
            "--json",
        ],
        None,
    );
    assert_eq!(audit.code, 0, "{}", audit.stdout);
    let mut log = chit_logstore::Log::open(
        chit_logstore::open(&dir.join("s.db").display().to_string()).unwrap(),
    )
    .unwrap();
    for (i, sha) in &acked {
        let e = log
            .store()
            .entry(*i)
            .unwrap()
            .unwrap_or_else(|| panic!("acknowledged {i} lost"));
        assert_eq!(chit_core::digest::hex(&e.sha256), *sha);
    }
    // It starts again on the same store and goes on.
    let again = serve(dir, &["--tokens", "tokens.toml"]);
    let (code, _) = http(
        &again.addr,
        "POST",
        "/v1/entries",
        &[("Authorization", "Bearer tok")],
        &receipts[0],
    );
    assert!(code == 200 || code == 201);
}

/// Hostile requests are answered, and counted: a body announced as 1 GB,
/// malformed JSON, a document of no kind chit knows; and 2,000 connections
/// opened at once (this test raises its own open-file limit).
#[test]
#[cfg(unix)]
fn hostile_requests_are_answered() {
    // Room for 2,000 connections on both ends (the server inherits it).
    raise_open_files(8192);
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    common::log_init(dir, "s.db", "log.pem", "hostile.example/log");
    std::fs::write(dir.join("tokens.toml"), token_line("ci", "tok", None)).unwrap();
    let server = serve(dir, &["--tokens", "tokens.toml"]);
    let a = server.addr.as_str();
    let auth = [("Authorization", "Bearer tok")];
    // 1 GB announced: refused from its length, without reading it.
    let mut s = TcpStream::connect(a).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(
        format!("POST /v1/verify HTTP/1.1\r\nHost: {a}\r\nContent-Length: 1073741824\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
    .unwrap();
    s.write_all(&[b'x'; 65536]).unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 413");
    // A body sent without its length, past the limit: 413 in JSON once the
    // limit is reached; on /v1/entries too (JSON Lines), which the server
    // answers without its router. (/v1/verify's limit is what the server's
    // budget lets it check: smaller than a JSON Lines body's.)
    for (path, more, says) in [
        ("/v1/verify", "", "{\"error\":\"a body of at most "),
        (
            "/v1/entries",
            "Authorization: Bearer tok\r\nContent-Type: application/jsonl\r\n",
            "{\"error\":\"a body of at most 67108864 bytes\"}",
        ),
    ] {
        let mut s = TcpStream::connect(a).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.write_all(
            format!("POST {path} HTTP/1.1\r\nHost: {a}\r\n{more}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
        let chunk = [b' '; 1 << 20];
        for _ in 0..65 {
            // The server may answer and close before all is sent.
            if s.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                .and_then(|()| s.write_all(&chunk))
                .and_then(|()| s.write_all(b"\r\n"))
                .is_err()
            {
                break;
            }
        }
        let _ = s.write_all(b"0\r\n\r\n");
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer).to_string();
        assert!(answer.starts_with("HTTP/1.1 413"), "{path}: {answer}");
        assert!(answer.contains(says), "{path}: {answer}");
    }
    // A write with a token the server does not know is refused before its
    // body is read: the answer comes while the body is still unsent.
    let mut s = TcpStream::connect(a).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(
        format!("POST /v1/entries HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer wrong\r\nContent-Length: 60000\r\nConnection: close\r\n\r\n{{")
            .as_bytes(),
    )
    .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 401");
    assert_eq!(
        http(a, "POST", "/v1/entries", &auth, b"{\"a\": [1, 2,").0,
        400
    );
    assert_eq!(http(a, "POST", "/v1/verify", &[], b"{\"a\": ]").0, 400);
    let (code, body) = http(a, "POST", "/v1/entries", &auth, b"{\"what\": \"no kind\"}");
    assert_eq!(code, 422, "{}", String::from_utf8_lossy(&body));
    assert_eq!(json(&body)["errors"][0]["rule"], "kind");
    // A path or a method the server does not serve: JSON saying what to
    // do instead (a 405 with its Allow header).
    let (code, body) = http(a, "GET", "/v1/nope", &[], b"");
    assert_eq!(code, 404);
    let why = json(&body)["error"].as_str().unwrap().to_string();
    assert!(
        why.contains("/v1/nope") && why.contains("/v1/search"),
        "{why}"
    );
    let mut s = TcpStream::connect(a).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(
        format!("GET /v1/entries HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer).to_string();
    assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("\r\nallow: post\r\n"),
        "{answer}"
    );
    assert!(answer.contains("POST a receipt here"), "{answer}");
    // Parameters that do not parse, tiles past any tree: JSON, not a panic.
    let (code, body) = http(a, "GET", "/v1/consistency?from=2", &[], b"");
    assert_eq!(code, 400);
    let why = json(&body)["error"].as_str().unwrap().to_string();
    assert!(why.contains("`to`"), "{why}");
    let (code, body) = http(a, "GET", "/v1/search?limit=many", &[], b"");
    assert_eq!(code, 400);
    assert!(json(&body)["error"].as_str().unwrap().contains("limit"));
    for path in ["/v1/entries/%ff", "/v1/streams/%C0%AF", "/tile/0/%ff"] {
        let (code, body) = http(a, "GET", path, &[], b"");
        assert_eq!(code, 400, "{path}");
        let why = json(&body)["error"].as_str().unwrap().to_string();
        assert!(why.contains("UTF-8"), "{path}: {why}");
    }
    for path in ["/tile/9/000", "/tile/63/x001/000", "/tile/7/000"] {
        let (code, body) = http(a, "GET", path, &[], b"");
        assert_eq!(code, 404, "{path}: {}", String::from_utf8_lossy(&body));
        assert_eq!(
            json(&body)["error"],
            "no such tile in the log yet",
            "{path}"
        );
    }
    // 2,000 connections at once, then a request still answered.
    let conns: Vec<TcpStream> = (0..2000)
        .filter_map(|_| TcpStream::connect(a).ok())
        .collect();
    assert!(
        conns.len() >= 1900,
        "only {} connections opened",
        conns.len()
    );
    assert_eq!(http(a, "GET", "/healthz", &[], b"").0, 200);
    drop(conns);
    let (code, body) = http(a, "GET", "/metrics", &[], b"");
    assert_eq!(code, 200);
    let m = String::from_utf8_lossy(&body);
    assert!(
        m.contains("chit_http_responses_total{code=\"400\"} 7"),
        "{m}"
    );
    assert!(
        m.contains("chit_http_responses_total{code=\"422\"} 1"),
        "{m}"
    );
    assert!(
        m.contains("chit_http_responses_total{code=\"404\"} 4"),
        "{m}"
    );
    assert!(
        m.contains("chit_http_responses_total{code=\"405\"} 1"),
        "{m}"
    );
}

/// Raises this process's open-file limit to `want` (or its hard limit).
#[cfg(unix)]
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not everywhere
fn raise_open_files(want: u64) {
    // SAFETY: getrlimit and setrlimit on a struct of this process.
    unsafe {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && (r.rlim_cur as u64) < want {
            r.rlim_cur = (want as libc::rlim_t).min(r.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

/// A token over its rate is answered 429 with Retry-After; others are not
/// held back by it.
#[test]
fn a_token_over_its_rate_waits() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    common::log_init(dir, "s.db", "log.pem", "rate.example/log");
    let hex = chit_core::digest::sha256_hex(b"slow");
    std::fs::write(
        dir.join("tokens.toml"),
        format!("[[token]]\nname = \"slow\"\nsha256 = \"{hex}\"\nrate = 2\n")
            + &token_line("fast", "fast", None),
    )
    .unwrap();
    let server = serve(dir, &["--tokens", "tokens.toml"]);
    let a = server.addr.as_str();
    let codes: Vec<u16> = (0..6)
        .map(|n| {
            http(
                a,
                "POST",
                "/v1/entries",
                &[("Authorization", "Bearer slow")],
                &receipt(7000 + n),
            )
            .0
        })
        .collect();
    // A burst of 2, then 2 a second (a slow machine may refill one or two).
    let created = codes.iter().filter(|&&c| c == 201).count();
    assert!((2..=4).contains(&created), "{codes:?}");
    assert!(codes.contains(&429), "{codes:?}");
    let (code, _) = http(
        a,
        "POST",
        "/v1/entries",
        &[("Authorization", "Bearer fast")],
        &receipt(7100),
    );
    assert_eq!(code, 201);
    std::thread::sleep(Duration::from_millis(600));
    let (code, _) = http(
        a,
        "POST",
        "/v1/entries",
        &[("Authorization", "Bearer slow")],
        &receipt(7200),
    );
    assert_eq!(code, 201);
}

/// A slow client is cut off, not waited on: headers that never end (a
/// slowloris) close the connection at the header deadline; a body that
/// never ends is answered 408 at the request deadline.
#[test]
fn slow_clients_are_cut_off() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    common::log_init(dir, "s.db", "log.pem", "slow.example/log");
    let server = serve(dir, &["--header-timeout", "1", "--request-timeout", "2"]);
    let a = server.addr.as_str();
    let started = std::time::Instant::now();
    let mut slow = TcpStream::connect(a).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    slow.write_all(b"POST /v1/verify HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest); // ends when the server closes it
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let started = std::time::Instant::now();
    let mut body = TcpStream::connect(a).unwrap();
    body.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    body.write_all(b"POST /v1/verify HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a\":")
        .unwrap();
    let mut head = [0u8; 12];
    body.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 408");
    assert!(started.elapsed() < Duration::from_secs(10));
    // Others are served all the while.
    assert_eq!(http(a, "GET", "/healthz", &[], b"").0, 200);
}

/// Every route that reads a parameter, given hostile values (out of any
/// range, not numbers, not UTF-8, not dates, empty): a refusal in JSON
/// that says what is wrong, never a server error; and every hash tile
/// level tlog-tiles allows past this log's (8 to 63) is simply not there.
#[test]
fn hostile_parameters_are_refused_in_json_never_a_server_error() {
    let t = tempfile::tempdir().unwrap();
    let server = serve_demo(t.path());
    let a = server.addr.as_str();
    let values = [
        "-1",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999",
        "1e3",
        "0x10",
        "",
        "%00",
        "%ff",
        "%C0%AF",
        "abc",
        "1.5",
        "9999-12-31T23:59:59Z",
        "2026-02-30T00:00:00Z",
    ];
    let routes = [
        "/v1/entries/{v}",
        "/v1/entries/sha256:{v}",
        "/v1/consistency?from={v}&to={v}",
        "/v1/consistency?from=0&to={v}",
        "/v1/search?limit={v}",
        "/v1/search?after={v}",
        "/v1/search?since={v}",
        "/v1/search?until={v}",
        "/v1/search?kind={v}&art={v}&stream={v}",
        "/v1/streams/{v}?limit={v}",
        "/v1/rebinds?todo_id={v}",
        "/tile/{v}/000",
        "/tile/0/{v}",
        "/tile/0/x{v}/000",
        "/tile/0/000.p/{v}",
        "/tile/entries/{v}",
        "/tile/entries/000.p/{v}",
    ];
    let mut refused = 0;
    for route in routes {
        for v in values {
            let path = route.replace("{v}", v);
            let (code, body) = http(a, "GET", &path, &[], b"");
            assert!(
                code < 500,
                "{path}: {code} {}",
                String::from_utf8_lossy(&body)
            );
            if code >= 400 {
                refused += 1;
                let e: Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
                    panic!(
                        "{path}: {code} not JSON ({e}): {}",
                        String::from_utf8_lossy(&body)
                    )
                });
                assert!(
                    e["error"].as_str().is_some_and(|s| !s.is_empty()),
                    "{path}: {code} {e}"
                );
            }
        }
    }
    // Most are refused; the rest are reads that find nothing (a search).
    assert!(refused > routes.len() * values.len() / 2, "{refused}");
    for level in 8..=63 {
        let path = format!("/tile/{level}/000");
        let (code, body) = http(a, "GET", &path, &[], b"");
        assert_eq!(code, 404, "{path}: {}", String::from_utf8_lossy(&body));
    }
}

/// `chit serve --demo`: a log of the shipped examples, searchable at once,
/// its folder removed when the server stops.
#[test]
fn the_demo_serves_the_shipped_examples() {
    let t = tempfile::tempdir().unwrap();
    let mut server = serve_demo(t.path());
    let a = server.addr.clone();
    let a = a.as_str();
    let (code, body) = http(a, "GET", "/healthz", &[], b"");
    assert_eq!(code, 200);
    assert!(
        json(&body)["size"].as_u64().unwrap() >= 7,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let (_, body) = http(a, "GET", "/v1/search?kind=run-receipt", &[], b"");
    assert_eq!(json(&body)["hits"].as_array().unwrap().len(), 2);
    let (_, body) = http(a, "GET", "/v1/search?stream=demo-stream", &[], b"");
    assert_eq!(json(&body)["hits"].as_array().unwrap().len(), 3);
    // Its own tokens file is private: no warning about it (the log read
    // once the server has stopped and written it all).
    assert!(terminate(&mut server).success());
    let log = std::fs::read_to_string(t.path().join("serve.log")).unwrap();
    assert!(log.contains("\"stopped\""), "{log}");
    assert!(!log.contains("can be read by other users"), "{log}");
}

/// `chit serve --demo` on an address already taken fails before it makes
/// its log: one line saying why, and no write token (a token for a server
/// that never ran would only mislead).
#[test]
fn the_demo_on_a_taken_address_prints_no_token() {
    let t = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_chit"));
    cmd.args(["serve", "--demo", "--listen", &addr])
        .env("TMPDIR", t.path());
    let r = common::run_raw(cmd, t.path(), None);
    let stdout = String::from_utf8_lossy(&r.stdout);
    assert_eq!(r.code, 2, "{stdout}{}", r.stderr);
    assert!(!stdout.contains("write token"), "{stdout}");
    assert!(!stdout.contains("logged at"), "{stdout}");
    let why: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(why.len(), 1, "{}", r.stderr);
    assert!(
        why[0].starts_with("chit: cannot listen on ") && why[0].contains(&addr),
        "{}",
        r.stderr
    );
    drop(taken);
}

/// An entry's answer gives its content address (the SHA-256 of its exact
/// bytes) in `Chit-Content-Address`, beside the bundle, which keeps only
/// its own fields; that address finds the same entry.
#[test]
fn an_entry_answer_names_its_content_address() {
    use sha2::Digest;
    let t = tempfile::tempdir().unwrap();
    let server = serve_demo(t.path());
    let a = server.addr.as_str();
    let get = |path: &str| -> (String, Value) {
        let mut s = TcpStream::connect(a).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        let split = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let head = String::from_utf8_lossy(&out[..split]).to_ascii_lowercase();
        assert!(head.starts_with("http/1.1 200"), "{head}");
        let address = head
            .lines()
            .find_map(|l| l.strip_prefix("chit-content-address: "))
            .unwrap_or_else(|| panic!("no content address in {head}"))
            .trim()
            .to_string();
        (address, json(&out[split + 4..]))
    };
    let (address, bundle) = get("/v1/entries/1");
    let entry = base64::engine::general_purpose::STANDARD
        .decode(bundle["entry"].as_str().unwrap())
        .unwrap();
    let hex: String = sha2::Sha256::digest(&entry)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(address, format!("sha256:{hex}"));
    let mut keys: Vec<&String> = bundle.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "checkpoint",
            "entry",
            "inclusion_proof",
            "index",
            "origin",
            "type"
        ]
    );
    let (again, found) = get(&format!("/v1/entries/{address}"));
    assert_eq!((again, found["index"].clone()), (address, Value::from(1)));
}

/// `GET /v1/rebinds`: a todo's Lattice packets in X6's order, each with
/// what X6 finds against the one before it, and X6's findings, as `chit
/// verify` gives them over the same files.
#[test]
fn rebinds_are_answered_as_x6_reads_them() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    common::log_init(dir, "s.db", "log.pem", "serve.example/log");
    std::fs::write(dir.join("tokens.toml"), token_line("ci", "tok-ci", None)).unwrap();
    let server = serve(dir, &["--tokens", "tokens.toml"]);
    let a = server.addr.as_str();
    let auth = [("Authorization", "Bearer tok-ci")];
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lattice");
    let first = std::fs::read(root.join("packet.json")).unwrap();
    let rebind = std::fs::read(root.join("rebind.json")).unwrap();
    // A third packet of the same todo that keeps the first's plan: sealed
    // (its digests right), so only X6 can object to it.
    let text = String::from_utf8(rebind.clone()).unwrap();
    let same_plan = text
        .replace("\"plan_ref\":\"plan-1\"", "\"plan_ref\":\"plan-0\"")
        .replace("\"packet_id\":\"pkt-1\"", "\"packet_id\":\"pkt-2\"")
        .replace("\"plan_epoch\":1", "\"plan_epoch\":2");
    assert_ne!(same_plan, text);
    std::fs::write(dir.join("same-plan.json"), &same_plan).unwrap();
    let sealed = chit_in(dir, &["seal", "same-plan.json"], None);
    assert_eq!(sealed.code, 0, "{}", sealed.stderr);
    let same_plan = std::fs::read(dir.join("same-plan.json")).unwrap();
    // Eight other receipts first, so that the packets' entries run past 9
    // (a tie is ordered by entry index as a number, not as text).
    for n in 0..8 {
        assert_eq!(http(a, "POST", "/v1/entries", &auth, &receipt(n)).0, 201);
    }
    // Logged out of order: the answer is in X6's (by epoch).
    for body in [&same_plan, &rebind, &first] {
        let (code, b) = http(a, "POST", "/v1/entries", &auth, body);
        assert_eq!(code, 201, "{}", String::from_utf8_lossy(&b));
    }

    let (code, body) = http(a, "GET", "/v1/rebinds?todo_id=todo-0", &[], b"");
    assert_eq!(code, 200);
    let v = json(&body);
    let packets = v["packets"].as_array().unwrap();
    let ids: Vec<&str> = packets
        .iter()
        .map(|p| p["packet_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["pkt-0", "pkt-1", "pkt-2"]);
    let indexes: Vec<u64> = packets
        .iter()
        .map(|p| p["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indexes, [10, 9, 8]);
    assert!(packets.iter().all(|p| p["valid"] == true));
    // Each against the one before it: pkt-1 rebinds pkt-0 (plan-1, epoch
    // 1), pkt-2 rebinds pkt-1 (plan-0 again, but not pkt-1's plan; epoch
    // 2); the content is the same in all three. X6 finds nothing.
    assert_eq!(packets[0]["flagged"], serde_json::json!([]));
    assert_eq!(packets[1]["flagged"], serde_json::json!([]));
    assert_eq!(packets[2]["flagged"], serde_json::json!([]));
    assert_eq!(v["findings"], serde_json::json!([]));
    assert_eq!(v["complete"], true);
    // What chit verify says over the same three files.
    std::fs::write(dir.join("first.json"), &first).unwrap();
    std::fs::write(dir.join("rebind.json"), &rebind).unwrap();
    let r = chit_in(
        dir,
        &["verify", "first.json", "rebind.json", "same-plan.json"],
        None,
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);

    // Another packet at pkt-1's epoch with pkt-1's plan: X6 names it.
    let twin = text.replace("\"packet_id\":\"pkt-1\"", "\"packet_id\":\"pkt-9\"");
    std::fs::write(dir.join("twin.json"), &twin).unwrap();
    assert_eq!(chit_in(dir, &["seal", "twin.json"], None).code, 0);
    let twin = std::fs::read(dir.join("twin.json")).unwrap();
    assert_eq!(http(a, "POST", "/v1/entries", &auth, &twin).0, 201);
    let (_, body) = http(a, "GET", "/v1/rebinds?todo_id=todo-0", &[], b"");
    let v = json(&body);
    let packets = v["packets"].as_array().unwrap();
    let ids: Vec<&str> = packets
        .iter()
        .map(|p| p["packet_id"].as_str().unwrap())
        .collect();
    // Epochs 0, 1, 1, 2; the two at epoch 1 by entry: 9, then 11.
    assert_eq!(ids, ["pkt-0", "pkt-1", "pkt-9", "pkt-2"]);
    let flagged: Vec<Value> = packets.iter().map(|p| p["flagged"].clone()).collect();
    assert_eq!(
        flagged,
        [
            serde_json::json!([]),
            serde_json::json!([]),
            serde_json::json!(["/plan_ref", "/plan_epoch"]),
            serde_json::json!([]),
        ]
    );
    let rules: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["X6", "X6"]);
    std::fs::write(dir.join("twin.json"), &twin).unwrap();
    let r = chit_in(
        dir,
        &[
            "verify",
            "first.json",
            "rebind.json",
            "same-plan.json",
            "twin.json",
        ],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_eq!(r.stdout.matches("error X6").count(), 2, "{}", r.stdout);
    // Another todo: nothing.
    let (_, body) = http(a, "GET", "/v1/rebinds?todo_id=todo-x", &[], b"");
    assert_eq!(json(&body)["packets"], serde_json::json!([]));
    // No todo named: 400, said as JSON like every other error.
    let (code, body) = http(a, "GET", "/v1/rebinds", &[], b"");
    assert_eq!(code, 400);
    assert!(json(&body)["error"].as_str().unwrap().contains("todo_id"));
}

/// Many clients connecting in the same instant are queued by the kernel
/// until the server accepts them, not dropped: a dropped connection is
/// tried again only after a second (the load test's clients all connect at
/// once).
#[test]
fn a_burst_of_connections_is_queued_not_dropped() {
    #[cfg(unix)]
    raise_open_files(4096);
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    common::log_init(dir, "s.db", "log.pem", "serve.example/log");
    let server = serve(dir, &[]);
    let a = server.addr.clone();
    // Within what this kernel queues at all (its own caps on both queues).
    let cap = |f: &str| {
        std::fs::read_to_string(f)
            .ok()
            .and_then(|t| t.trim().parse::<usize>().ok())
            .unwrap_or(4096)
    };
    let n = 600
        .min(cap("/proc/sys/net/core/somaxconn") / 2)
        .min(cap("/proc/sys/net/ipv4/tcp_max_syn_backlog") / 2);
    let go = std::sync::Arc::new(std::sync::Barrier::new(n));
    let waits: Vec<Duration> = (0..n)
        .map(|_| {
            let (a, go) = (a.clone(), go.clone());
            std::thread::spawn(move || {
                go.wait();
                let t = std::time::Instant::now();
                let s = TcpStream::connect(&a).unwrap();
                let took = t.elapsed();
                // Held until every thread has connected.
                std::thread::sleep(Duration::from_millis(300));
                drop(s);
                took
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    let slowest = waits.iter().max().unwrap();
    assert!(
        *slowest < Duration::from_millis(900),
        "a connection took {slowest:?}: it was dropped and tried again"
    );
}

/// A server on a log folder (made for it here): what it commits reaches
/// the folder's `public/` within a second or two though no one writes
/// after it, and `public/` holds what the server serves.
#[test]
fn a_served_log_folder_publishes_its_last_batch() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    assert_eq!(chit_in(dir, &["keygen", "--out", "log.pem"], None).code, 0);
    std::fs::write(dir.join("tokens.toml"), token_line("ci", "tok-ci", None)).unwrap();
    let server = serve_store(
        dir,
        "folder",
        &["--key", "log.pem", "--tokens", "tokens.toml"],
    );
    assert!(dir.join("folder/index.db").is_file());
    let auth = [("Authorization", "Bearer tok-ci")];
    for n in 0..3 {
        let (code, body) = http(&server.addr, "POST", "/v1/entries", &auth, &receipt(n));
        assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    }
    let (_, served) = http(&server.addr, "GET", "/checkpoint", &[], b"");
    let public = dir.join("folder/public");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::fs::read(public.join("checkpoint")).ok().as_deref() != Some(&served[..]) {
        assert!(
            std::time::Instant::now() < deadline,
            "public/checkpoint is not the served one"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (code, bundle) = http(&server.addr, "GET", "/tile/entries/000.p/3", &[], b"");
    assert_eq!(code, 200);
    assert_eq!(
        std::fs::read(public.join("tile/entries/000.p/3")).unwrap(),
        bundle
    );
    drop(server);
}
