//! `chit serve` against clients that push it: the memory it holds is what
//! it allows (JSON Lines answers streamed and capped, bodies held within
//! one budget), JSON Lines answers carry the body's line numbers, health
//! says what the server can do now, every refusal is JSON (hyper's own
//! included), auth and Host by the RFCs, and a tokens file checked before
//! the server starts. Loopback only; each test bounded in time.

#![cfg(unix)]

mod common;

use common::serving::{self, http, json, receipt, Server};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn serve(dir: &Path, extra: &[&str]) -> Server {
    serving::start(
        dir,
        &["serve", "--store", "s.db", "--listen", "127.0.0.1:0"],
        extra,
        std::process::Stdio::null(),
    )
}

fn token_line(name: &str, token: &str, extra: &str) -> String {
    let hex = chit_core::digest::sha256_hex(token.as_bytes());
    format!("[[token]]\nname = \"{name}\"\nsha256 = \"{hex}\"\n{extra}")
}

/// A log in `dir` (s.db) with a tokens file (token "tok", every kind),
/// served with `extra`.
fn logged_server(dir: &Path, extra: &[&str]) -> Server {
    common::log_init(dir, "s.db", "log.pem", "limits.example/log");
    private(dir, "tokens.toml", &token_line("ci", "tok", ""));
    let mut args = vec!["--tokens", "tokens.toml"];
    args.extend_from_slice(extra);
    serve(dir, &args)
}

/// Writes a file only its owner may read (as a tokens file should be).
fn private(dir: &Path, name: &str, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
}

const AUTH: (&str, &str) = ("Authorization", "Bearer tok");
const LINES: (&str, &str) = ("Content-Type", "application/jsonl");

/// Sends `raw` as is and reads until the server closes: the answer(s).
fn exchange(addr: &str, raw: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let _ = s.write_all(raw);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// An answer's head, lower-cased, and its body.
fn split(answer: &str) -> (String, &str) {
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((answer, ""));
    (head.to_ascii_lowercase(), body)
}

/// An answer that refuses, to be tried again later: `status`, with
/// Retry-After, the connection closed (its body unread), and an error
/// that says `says`.
fn refused_to_retry(answer: &str, status: u16, says: &str) {
    let (head, body) = split(answer);
    assert!(head.starts_with(&format!("http/1.1 {status} ")), "{answer}");
    assert!(
        head.contains("retry-after: ") && head.contains("connection: close"),
        "{head}"
    );
    let why = json(body.as_bytes())["error"].as_str().unwrap().to_string();
    assert!(why.contains(says), "{why}");
}

/// The JSON lines of a JSON Lines answer.
fn answers(body: &[u8]) -> Vec<Value> {
    body.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(json)
        .collect()
}

/// The server process's peak resident memory (VmHWM), in bytes.
fn peak_rss(server: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

fn metric(addr: &str, line: &str) -> bool {
    let (_, body) = http(addr, "GET", "/metrics", &[], b"");
    String::from_utf8_lossy(&body).lines().any(|l| l == line)
}

/// Item 1: 700,000 lines in a 2 MB body are answered a line each, as the
/// answer streams (the server holds some megabytes, not the 350 MB answer):
/// the first 10,000 (the default cap) checked, every one after it refused
/// in place with the reason, none of them appended.
#[test]
fn a_huge_json_lines_body_is_answered_streaming_and_capped() {
    let t = tempfile::tempdir().unwrap();
    let server = logged_server(t.path(), &[]);
    let a = server.addr.as_str();
    let n = 700_000;
    let body = b"{}\n".repeat(n);
    let mut s = TcpStream::connect(a).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "POST /v1/entries HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n\
         Content-Type: application/jsonl\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(&body).unwrap();
    // Read as it comes, a line at a time, keeping only counts.
    let mut r = std::io::BufReader::new(s);
    let mut line = String::new();
    let mut head = String::new();
    while std::io::BufRead::read_line(&mut r, &mut line).unwrap() > 2 {
        head.push_str(&line);
        line.clear();
    }
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{head}"
    );
    let mut rest = Vec::new();
    r.read_to_end(&mut rest).unwrap();
    let rest = serving::dechunk(&rest);
    let mut count = 0;
    let mut capped = 0;
    for l in rest.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        count += 1;
        let v = json(l);
        assert_eq!(v["line"], count, "{v}");
        assert_eq!(v["status"], "refused", "{v}");
        if count > 10_000 {
            capped += 1;
            let why = v["error"].as_str().unwrap();
            assert!(
                why.contains("past the 10000 receipts") && why.contains("--max-lines"),
                "{why}"
            );
        } else {
            assert_eq!(v["errors"][0]["rule"], "kind", "{v}");
        }
    }
    assert_eq!((count, capped), (n, n - 10_000));
    let peak = peak_rss(&server);
    assert!(peak < 200 << 20, "peak RSS {} MB", peak >> 20);
    let (_, c) = http(a, "GET", "/checkpoint", &[], b"");
    assert!(
        c.starts_with(b"limits.example/log\n0\n"),
        "nothing appended"
    );
}

/// Item 1: past `--max-lines`, and past what the token's rate gives (a
/// request's receipts each count), receipts are answered "refused" in
/// place and never appended; a token with nothing left waits (429).
#[test]
fn receipts_past_the_cap_or_the_rate_are_refused_in_place() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    common::log_init(dir, "s.db", "log.pem", "limits.example/log");
    private(
        dir,
        "tokens.toml",
        &(token_line("ci", "tok", "") + &token_line("slow", "slow", "rate = 3\n")),
    );
    let server = serve(dir, &["--tokens", "tokens.toml", "--max-lines", "2"]);
    let a = server.addr.as_str();
    let body = [receipt(1), receipt(2), receipt(3)].join(&b'\n');
    let (code, out) = http(a, "POST", "/v1/entries", &[AUTH, LINES], &body);
    assert_eq!(code, 200);
    let got = answers(&out);
    let statuses: Vec<&str> = got.iter().map(|v| v["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["appended", "appended", "refused"], "{got:?}");
    assert!(got[2]["error"]
        .as_str()
        .unwrap()
        .contains("past the 2 receipts"));
    assert_eq!(got[2]["line"], 3);
    // The slow token: 3 a second, here with a cap of 2 a request.
    let slow = ("Authorization", "Bearer slow");
    let body = [receipt(4), receipt(5), receipt(6)].join(&b'\n');
    let (_, out) = http(a, "POST", "/v1/entries", &[slow, LINES], &body);
    let got = answers(&out);
    let statuses: Vec<&str> = got.iter().map(|v| v["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["appended", "appended", "refused"], "{got:?}");
    // One receipt left in its bucket: the next request's first goes on,
    // its second is refused for the rate, in place.
    let body = [receipt(7), receipt(8)].join(&b'\n');
    let (_, out) = http(a, "POST", "/v1/entries", &[slow, LINES], &body);
    let got = answers(&out);
    assert_eq!(got[0]["status"], "appended", "{got:?}");
    assert_eq!(got[1]["status"], "refused", "{got:?}");
    assert!(
        got[1]["error"].as_str().unwrap().contains("over its rate"),
        "{got:?}"
    );
    // Nothing left: 429 with Retry-After, the body unread.
    let answer = exchange(
        a,
        b"POST /v1/entries HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer slow\r\n\
          Content-Type: application/jsonl\r\nContent-Length: 100000\r\n\r\n{",
    );
    refused_to_retry(&answer, 429, "over its rate");
    // What was appended is what was answered appended: 2 + 2 + 1.
    let (_, c) = http(a, "GET", "/checkpoint", &[], b"");
    assert!(
        c.starts_with(b"limits.example/log\n5\n"),
        "{}",
        String::from_utf8_lossy(&c)
    );
}

/// Item 2: bodies held across connections are bounded by --max-in-flight:
/// past it, a request is answered 503 with Retry-After, before its body
/// is read when it announces its length, else once the budget is passed;
/// when the held bodies are gone, it goes through. A /v1/verify body
/// counts with what its check may take: one the budget could never hold
/// is 413, saying so.
#[test]
fn bodies_held_at_once_are_bounded() {
    let t = tempfile::tempdir().unwrap();
    let server = logged_server(t.path(), &["--max-in-flight", "1048576"]);
    let a = server.addr.as_str();
    let lines = "POST /v1/entries HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n\
                 Content-Type: application/jsonl\r\n";
    // A body announced and never sent holds nothing.
    let mut idle = TcpStream::connect(a).unwrap();
    write!(idle, "{lines}Content-Length: 1000000\r\n\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(metric(a, "chit_request_bytes_held 0"));
    // One client holds 800 kB of the budget: what it sent of its body.
    let mut holder = TcpStream::connect(a).unwrap();
    holder
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(holder, "{lines}Content-Length: 900000\r\n\r\n").unwrap();
    holder.write_all(&vec![b' '; 800_000]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(metric(a, "chit_request_bytes_held 800000"));
    // 300 kB announced: more than is free, refused unread.
    let answer = exchange(
        a,
        format!("{lines}Content-Length: 300000\r\n\r\n").as_bytes(),
    );
    refused_to_retry(&answer, 503, "--max-in-flight");
    // Sent without its length: refused once it passes the budget.
    let mut s = TcpStream::connect(a).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "{lines}Transfer-Encoding: chunked\r\n\r\n").unwrap();
    for _ in 0..40 {
        let chunk = format!("{:x}\r\n{}\r\n", 10_000, " ".repeat(10_000));
        if s.write_all(chunk.as_bytes()).is_err() {
            break;
        }
    }
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    refused_to_retry(&String::from_utf8_lossy(&answer), 503, "--max-in-flight");
    // Reads go on all the while.
    assert_eq!(http(a, "GET", "/checkpoint", &[], b"").0, 200);
    // The holder finishes: its bytes are given back, and the same request
    // now goes through.
    holder.write_all(&vec![b' '; 99_998]).unwrap();
    holder.write_all(b"{}").unwrap();
    let mut head = [0u8; 12];
    holder.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    drop(holder);
    std::thread::sleep(Duration::from_millis(200));
    let (code, _) = http(
        a,
        "POST",
        "/v1/entries",
        &[AUTH, LINES],
        &vec![b' '; 300_000],
    );
    assert_eq!(code, 400, "an empty body, read");
    assert!(metric(a, "chit_request_bytes_held 0"));
    // /v1/verify: a body and its check's memory. A document this budget
    // could never check is 413 at once, naming the flag.
    let answer = exchange(
        a,
        b"POST /v1/verify HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n",
    );
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("--max-in-flight"), "{answer}");
    let (code, body) = http(a, "POST", "/v1/verify", &[], &receipt(1));
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    drop(idle);
}

/// A client that stops reading a JSON Lines answer holds nothing past the
/// request's deadline: the body and its budget are let go, the answer is
/// cut short (an unfinished chunked answer), and the connection is ended
/// once the client has read nothing for as long.
#[test]
fn a_client_that_stops_reading_is_let_go() {
    let t = tempfile::tempdir().unwrap();
    let server = logged_server(t.path(), &["--request-timeout", "2"]);
    let a = server.addr.as_str();
    let body = b"{}\n".repeat(2_000_000);
    // Its answer (some 200 MB) is far more than the sockets' buffers hold.
    let mut s = TcpStream::connect(a).unwrap();
    write!(
        s,
        "POST /v1/entries HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n\
         Content-Type: application/jsonl\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(&body).unwrap();
    // Read nothing for a while: by then the deadline has passed.
    std::thread::sleep(Duration::from_secs(5));
    assert!(metric(a, "chit_request_bytes_held 0"));
    let mut got = Vec::new();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let _ = s.read_to_end(&mut got);
    assert!(got.starts_with(b"HTTP/1.1 200"));
    assert!(
        !got.ends_with(b"0\r\n\r\n"),
        "the answer ends as a whole one"
    );
    assert!(got.len() < 100 << 20, "{} bytes", got.len());
}

/// A document of `size` bytes: a long string with escapes (a reader
/// decodes it) or a long array of zeros (a reader's values), two of the
/// costliest shapes.
fn largest(kind: usize, size: usize) -> Vec<u8> {
    let mut b = Vec::with_capacity(size);
    if kind.is_multiple_of(2) {
        b.extend_from_slice(b"{\"receiptVersion\":\"0.1\",\"id\":\"");
        while b.len() + 2 <= size - 2 {
            b.extend_from_slice(b"\\n");
        }
        b.resize(size - 2, b'x');
        b.extend_from_slice(b"\"}");
    } else {
        b.push(b'[');
        while b.len() + 3 < size {
            b.extend_from_slice(b"0,");
        }
        b.push(b'0');
        b.resize(size - 1, b' ');
        b.push(b']');
    }
    assert_eq!(b.len(), size);
    b
}

/// JSON Lines of the largest body `/v1/entries` takes: lines of about 60
/// kB, each as large as an entry may be.
fn largest_lines() -> Vec<u8> {
    let line = format!(
        "{{\"receiptVersion\":\"0.1\",\"id\":\"{}\"}}\n",
        "x".repeat(60_000)
    );
    let mut b = Vec::with_capacity(64 << 20);
    while b.len() + line.len() <= 64 << 20 {
        b.extend_from_slice(line.as_bytes());
    }
    b
}

/// Item 3: 64 clients at once send the largest bodies each route takes
/// (`/v1/verify`, as large as its budget lets it check, and 64 MiB of JSON
/// Lines on `/v1/entries`; their length announced and not), again and
/// again for some seconds: the server's peak RSS stays under 256 MB, and
/// another client's reads are answered within a second throughout.
#[test]
fn sixty_four_clients_of_the_largest_bodies_leave_memory_and_reads_alone() {
    let t = tempfile::tempdir().unwrap();
    let server = logged_server(t.path(), &[]);
    let addr = server.addr.clone();
    assert_eq!(
        http(&addr, "POST", "/v1/entries", &[AUTH], &receipt(1)).0,
        201
    );
    // The largest /v1/verify takes: what its 413 names.
    let answer = exchange(
        &addr,
        b"POST /v1/verify HTTP/1.1\r\nHost: x\r\nContent-Length: 67108864\r\n\r\n",
    );
    let (_, body) = split(&answer);
    let why = json(body.as_bytes())["error"].as_str().unwrap().to_string();
    let most: usize = why
        .strip_prefix("a body of at most ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{why}"));
    assert!(most > 4_000_000 && most < 64 << 20, "{most}");
    let docs = std::sync::Arc::new([largest(0, most), largest(1, most), largest_lines()]);
    let until = Instant::now() + Duration::from_secs(12);
    let clients: Vec<_> = (0..64)
        .map(|i| {
            let (addr, docs) = (addr.clone(), docs.clone());
            std::thread::spawn(move || {
                let mut codes = std::collections::BTreeMap::<u16, usize>::new();
                while Instant::now() < until {
                    let lines = i % 4 == 3;
                    let body = if lines { &docs[2] } else { &docs[i % 2] };
                    let chunked = i % 8 >= 4;
                    let code = send_large(&addr, lines, chunked, body);
                    *codes.entry(code).or_default() += 1;
                    if code == 503 {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
                codes
            })
        })
        .collect();
    // Reads, all the while: each answered within a second.
    let mut slowest = Duration::ZERO;
    let mut reads = 0;
    while Instant::now() < until {
        for path in [
            "/checkpoint",
            "/healthz",
            "/v1/entries/0",
            "/tile/entries/000.p/1",
        ] {
            let started = Instant::now();
            let (code, _) = http(&addr, "GET", path, &[], b"");
            assert_eq!(code, 200, "{path}");
            slowest = slowest.max(started.elapsed());
            reads += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut all = std::collections::BTreeMap::<u16, usize>::new();
    for c in clients {
        for (code, n) in c.join().unwrap() {
            *all.entry(code).or_default() += n;
        }
    }
    let peak = peak_rss(&server);
    eprintln!(
        "64 clients: answers {all:?}; {reads} reads, the slowest {slowest:?}; peak RSS {} MB",
        peak >> 20
    );
    assert!(peak < 256 << 20, "peak RSS {} MB", peak >> 20);
    assert!(slowest < Duration::from_secs(1), "a read took {slowest:?}");
    // The budget refused what it could not hold; the load gone, the
    // largest bodies of each route are read and answered.
    assert!(all.get(&503).is_some_and(|&n| n > 0), "{all:?}");
    for (lines, body, want) in [(false, &docs[0], 422), (true, &docs[2], 200)] {
        for chunked in [false, true] {
            assert_eq!(
                send_large(&addr, lines, chunked, body),
                want,
                "chunked {chunked}"
            );
        }
    }
    assert!(metric(&addr, "chit_request_bytes_held 0"));
}

/// One large request: its answer's status, or 0 when the connection was
/// cut before one came.
fn send_large(addr: &str, lines: bool, chunked: bool, body: &[u8]) -> u16 {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return 0;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
    let (path, more) = if lines {
        (
            "/v1/entries",
            "Authorization: Bearer tok\r\nContent-Type: application/jsonl\r\n",
        )
    } else {
        ("/v1/verify", "")
    };
    let framing = if chunked {
        "Transfer-Encoding: chunked\r\n".to_string()
    } else {
        format!("Content-Length: {}\r\n", body.len())
    };
    let head =
        format!("POST {path} HTTP/1.1\r\nHost: x\r\n{more}{framing}Connection: close\r\n\r\n");
    let reader = s.try_clone().unwrap();
    // The answer may come before the body is all sent (a refusal).
    let answer = std::thread::spawn(move || {
        let mut r = reader;
        let mut head = [0u8; 12];
        let code = r
            .read_exact(&mut head)
            .ok()
            .and_then(|()| std::str::from_utf8(&head[9..12]).ok()?.parse().ok())
            .unwrap_or(0);
        let _ = std::io::copy(&mut r, &mut std::io::sink());
        code
    });
    let _ = s.write_all(head.as_bytes()).and_then(|()| {
        if chunked {
            for piece in body.chunks(1 << 20) {
                write!(s, "{:x}\r\n", piece.len())?;
                s.write_all(piece)?;
                s.write_all(b"\r\n")?;
            }
            s.write_all(b"0\r\n\r\n")
        } else {
            s.write_all(body)
        }
    });
    answer.join().unwrap_or(0)
}

/// Item 4: a JSON Lines answer's `line` is the receipt's line in the
/// body, blank lines counted, as in `chit verify --lines` and `chit log
/// append --lines`; so are the lines its messages name.
#[test]
fn json_lines_answers_carry_the_bodys_line_numbers() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let server = logged_server(dir, &[]);
    let a = server.addr.as_str();
    let body = [&receipt(1)[..], b"   ", b"", b"{bad", &receipt(2), b""].join(&b'\n');
    let (code, out) = http(a, "POST", "/v1/entries", &[AUTH, LINES], &body);
    assert_eq!(code, 200);
    let got = answers(&out);
    let lines: Vec<u64> = got.iter().map(|v| v["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [1, 4, 5]);
    assert_eq!(got[1]["status"], "unreadable");
    let why = got[1]["error"].as_str().unwrap();
    assert!(why.starts_with("line 4, column 2:"), "{why}");
    // The CLI, on the same body: the same numbers, the same message.
    std::fs::write(dir.join("b.jsonl"), &body).unwrap();
    let v = common::chit_in(dir, &["verify", "--lines", "--json", "b.jsonl"], None);
    let cli: Vec<Value> = v.stdout.lines().map(|l| json(l.as_bytes())).collect();
    let cli_lines: Vec<u64> = cli.iter().map(|v| v["line"].as_u64().unwrap()).collect();
    assert_eq!(cli_lines, lines);
    assert_eq!(cli[1]["errors"][0]["message"].as_str().unwrap(), why);
    drop(server);
    let r = common::chit_in(
        dir,
        &["log", "append", "--store", "s.db", "--lines", "b.jsonl"],
        None,
    );
    assert!(
        r.stdout.contains("UNREADABLE b.jsonl:4: line 4, column 2:"),
        "{}",
        r.stdout
    );
}

/// Item 5: health says what the server can do now.
#[test]
fn health_says_what_the_server_can_do() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    common::log_init(dir, "s.db", "log.pem", "limits.example/log");
    // No tokens: read-only by design, ok.
    let server = serve(dir, &[]);
    let (code, body) = http(&server.addr, "GET", "/healthz", &[], b"");
    let v = json(&body);
    assert_eq!(code, 200);
    assert_eq!(
        (v["status"].as_str(), v["writes"].as_bool()),
        (Some("ok"), Some(false)),
        "{v}"
    );
    assert!(v["reason"].as_str().unwrap().contains("--tokens"), "{v}");
    drop(server);
    // Tokens, a store it can write: ok, writes.
    private(dir, "tokens.toml", &token_line("ci", "tok", ""));
    let server = serve(dir, &["--tokens", "tokens.toml"]);
    let (code, body) = http(&server.addr, "GET", "/healthz", &[], b"");
    let v = json(&body);
    assert_eq!(code, 200, "{v}");
    assert_eq!(
        (v["status"].as_str(), v["writes"].as_bool()),
        (Some("ok"), Some(true)),
        "{v}"
    );
    assert!(v["reason"].is_null(), "{v}");
    drop(server);
    // A read-only file: degraded, 503, and writes are refused.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("s.db"), std::fs::Permissions::from_mode(0o444)).unwrap();
    let server = serve(dir, &["--tokens", "tokens.toml"]);
    let (code, body) = http(&server.addr, "GET", "/healthz", &[], b"");
    let v = json(&body);
    assert_eq!(code, 503, "{v}");
    assert_eq!(
        (v["status"].as_str(), v["writes"].as_bool()),
        (Some("degraded"), Some(false)),
        "{v}"
    );
    assert!(v["reason"].as_str().unwrap().contains("read-only"), "{v}");
    assert_eq!(v["size"], 0);
    assert_eq!(
        http(&server.addr, "POST", "/v1/entries", &[AUTH], &receipt(1)).0,
        503
    );
}

/// Item 5: a full disk. The server runs in a mount namespace of its own
/// on a small tmpfs (`unshare`); once its disk fills, health is degraded
/// (503) and says why, and writes are refused with one message.
#[test]
#[cfg(target_os = "linux")]
fn a_full_disk_is_degraded_health() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let disk = dir.join("disk");
    std::fs::create_dir(&disk).unwrap();
    private(dir, "tokens.toml", &token_line("ci", "tok", ""));
    let chit = env!("CARGO_BIN_EXE_chit");
    let script = format!(
        "set -e; mount -t tmpfs -o size=24m tmpfs '{d}'; \
         '{chit}' keygen --out '{d}/log.pem' > /dev/null; \
         '{chit}' log init --store '{d}/s.db' --key '{d}/log.pem' --origin full.example/log > /dev/null; \
         exec '{chit}' serve --store '{d}/s.db' --listen 127.0.0.1:0 --tokens tokens.toml --quiet",
        d = disk.display()
    );
    let mut cmd = Command::new("unshare");
    cmd.args(["--user", "--map-root-user", "--mount", "sh", "-c", &script]);
    let server = serving::start_command(cmd, dir, std::process::Stdio::null());
    let a = server.addr.as_str();
    let (code, body) = http(a, "GET", "/healthz", &[], b"");
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    // Fill it: batches of receipts until writes are refused.
    let mut refused = None;
    for round in 0..200 {
        let body: Vec<u8> = (0..500)
            .flat_map(|i| [receipt(round * 500 + i), b"\n".to_vec()].concat())
            .collect();
        let (code, out) = http(a, "POST", "/v1/entries", &[AUTH, LINES], &body);
        if code == 503 {
            refused = Some(String::from_utf8_lossy(&out).into_owned());
            break;
        }
        assert_eq!(code, 200);
    }
    let why = refused.expect("the disk filled");
    assert_eq!(why.matches("acknowledged").count(), 1, "{why}");
    let (code, body) = http(a, "GET", "/healthz", &[], b"");
    let v = json(&body);
    assert_eq!(code, 503, "{v}");
    assert_eq!(
        (v["status"].as_str(), v["writes"].as_bool()),
        (Some("degraded"), Some(false)),
        "{v}"
    );
    let reason = v["reason"].as_str().unwrap();
    assert!(
        reason.contains("free") || reason.contains("full"),
        "{reason}"
    );
    // Reads still work.
    assert_eq!(http(a, "GET", "/checkpoint", &[], b"").0, 200);
}

/// Item 6: what hyper would refuse with an empty answer of its own is
/// refused in JSON, counted in /metrics: too many or too large headers
/// (431), a malformed request line, `Content-Length: abc`, HTTP/0.9
/// (400), HTTP/2.0 (505); after a valid request on the same connection
/// too, whose answer comes first.
#[test]
fn every_refusal_is_json_hyper_s_own_included() {
    let t = tempfile::tempdir().unwrap();
    let server = logged_server(t.path(), &[]);
    let a = server.addr.as_str();
    let many: String = (0..150).map(|i| format!("X-{i}: 1\r\n")).collect();
    let large = format!("X-Large: {}\r\n", "a".repeat(100_000));
    let cases: Vec<(String, u16)> = vec![
        (
            format!("GET /healthz HTTP/1.1\r\nHost: x\r\n{many}\r\n"),
            431,
        ),
        (
            format!("GET /healthz HTTP/1.1\r\nHost: x\r\n{large}\r\n"),
            431,
        ),
        ("GET /healthz HTTP/1.1 extra\r\nHost: x\r\n\r\n".into(), 400),
        ("G\x01T / HTTP/1.1\r\nHost: x\r\n\r\n".into(), 400),
        (
            "POST /v1/verify HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n".into(),
            400,
        ),
        ("GET /\r\n".into(), 400),
        ("GET / HTTP/2.0\r\nHost: x\r\n\r\n".into(), 505),
        (
            "POST /v1/verify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\u{a0}\r\n\r\n"
                .into(),
            400,
        ),
        ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".into(), 505),
    ];
    for (raw, status) in &cases {
        let answer = exchange(a, raw.as_bytes());
        let (head, body) = split(&answer);
        assert!(
            head.starts_with(&format!("http/1.1 {status} ")),
            "{raw:.60?}: {answer}"
        );
        assert!(head.contains("content-type: application/json"), "{head}");
        assert!(head.contains("x-content-type-options: nosniff"), "{head}");
        assert!(!json(body.as_bytes())["error"].as_str().unwrap().is_empty());
    }
    // After a valid request, on one connection: its answer, then the
    // refusal.
    let answer = exchange(
        a,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nPOST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let second = answer.find("HTTP/1.1 400").expect("a second answer");
    assert!(
        answer[second..].contains("Content-Length is not a number"),
        "{answer}"
    );
    // Counted: 431 twice, 400 six times (five above, one here), 505 twice.
    assert!(metric(a, "chit_http_responses_total{code=\"431\"} 2"));
    assert!(metric(a, "chit_http_responses_total{code=\"505\"} 2"));
    assert!(metric(a, "chit_http_responses_total{code=\"400\"} 6"));
    // After an answer that closes the connection (a 401 before its body),
    // a refused head that followed it is not answered: the server reads
    // no further. After an upgrade request, hyper answers nothing more,
    // and the connection ends after its answer.
    for first in [
        "POST /v1/entries HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer no\r\nContent-Length: 0\r\n\r\n",
        "GET /healthz HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
    ] {
        let answer = exchange(a, format!("{first}GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n").as_bytes());
        assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "{answer}");
    }
    assert!(metric(a, "chit_http_responses_total{code=\"400\"} 6"));
}

/// Item 7: the Bearer scheme in any case; two Authorization headers and
/// an HTTP/1.1 request without Host refused (400); a 401 given before the
/// body is read closes the connection, saying so.
#[test]
fn auth_and_host_by_the_rfcs() {
    let t = tempfile::tempdir().unwrap();
    let server = logged_server(t.path(), &[]);
    let a = server.addr.as_str();
    for (n, scheme) in ["bearer", "BEARER", "Bearer", "bEaReR"].iter().enumerate() {
        let auth = format!("{scheme}  tok");
        let (code, body) = http(
            a,
            "POST",
            "/v1/entries",
            &[("Authorization", &auth)],
            &receipt(n),
        );
        assert_eq!(code, 201, "{scheme}: {}", String::from_utf8_lossy(&body));
    }
    let (code, body) = http(
        a,
        "POST",
        "/v1/entries",
        &[AUTH, ("Authorization", "Bearer other")],
        &receipt(9),
    );
    assert_eq!(code, 400);
    assert!(json(&body)["error"]
        .as_str()
        .unwrap()
        .contains("two Authorization"));
    for raw in [
        &b"GET /healthz HTTP/1.1\r\n\r\n"[..],
        b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    ] {
        let answer = exchange(a, raw);
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(answer.contains("Host"), "{answer}");
    }
    // HTTP/1.0 needs no Host.
    let answer = exchange(a, b"GET /healthz HTTP/1.0\r\n\r\n");
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
    // 401 before the body: Connection: close, and the connection ends.
    let mut s = TcpStream::connect(a).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"POST /v1/entries HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\nContent-Length: 50000\r\n\r\n{")
        .unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    let (head, _) = split(&answer);
    assert!(head.starts_with("http/1.1 401"), "{answer}");
    assert!(
        head.contains("connection: close") && head.contains("www-authenticate: bearer"),
        "{head}"
    );
}

/// Items 8 and 10: messages name this server's limits; /v1/verify reads
/// what chit verify reads, up to 64 MiB, and answers a body past its
/// limit 413 as /v1/entries does; JSON answers carry nosniff; every label
/// an entry can carry is searchable (item 11).
#[test]
fn messages_limits_and_headers_are_the_servers_own() {
    let t = tempfile::tempdir().unwrap();
    let server = logged_server(t.path(), &[]);
    let a = server.addr.as_str();
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let (code, body) = http(a, "POST", "/v1/verify", &[], deep.as_bytes());
    assert_eq!(code, 400);
    let why = json(&body)["errors"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        why.contains("nested deeper than 128 levels (this server's limit)"),
        "{why}"
    );
    assert!(!why.contains("--max-depth"), "{why}");
    let (_, body) = http(a, "POST", "/v1/entries", &[AUTH, LINES], deep.as_bytes());
    let why = answers(&body)[0]["error"].as_str().unwrap().to_string();
    assert!(
        why.contains("nested deeper than 128 levels") && !why.contains("--max"),
        "{why}"
    );
    // Larger than an entry: checked as chit verify would, not "unreadable".
    let mut big: Value = serde_json::from_slice(&receipt(1)).unwrap();
    big["extra"] = "x".repeat(200_000).into();
    let (code, body) = http(a, "POST", "/v1/verify", &[], big.to_string().as_bytes());
    assert_eq!(code, 422, "{}", String::from_utf8_lossy(&body));
    assert_eq!(json(&body)["status"], "invalid");
    // Past each route's limit: 413 from the announced length, for both.
    for (path, headers, size) in [
        ("/v1/verify", "", 70_000_000u64),
        (
            "/v1/entries",
            "Authorization: Bearer tok\r\nContent-Type: application/jsonl\r\n",
            70_000_000,
        ),
        ("/v1/entries", "Authorization: Bearer tok\r\n", 70_000),
    ] {
        let answer = exchange(
            a,
            format!("POST {path} HTTP/1.1\r\nHost: x\r\n{headers}Content-Length: {size}\r\n\r\n")
                .as_bytes(),
        );
        assert!(
            answer.starts_with("HTTP/1.1 413"),
            "{path} {size}: {answer}"
        );
    }
    // nosniff on JSON answers and refusals alike.
    for path in [
        "/healthz",
        "/v1/search",
        "/checkpoint",
        "/v1/nothing",
        "/metrics",
    ] {
        let answer = exchange(
            a,
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert!(
            split(&answer).0.contains("x-content-type-options: nosniff"),
            "{path}: {answer}"
        );
    }
    // Every label is searchable.
    for kind in chit_core::kinds::LABELS {
        let (code, body) = http(a, "GET", &format!("/v1/search?kind={kind}"), &[], b"");
        assert_eq!(code, 200, "{kind}: {}", String::from_utf8_lossy(&body));
    }
}

/// Item 11: an envelope of a kind chit does not know, logged under
/// --allow-unchecked, is labelled "envelope" and found by that kind.
#[test]
fn an_envelope_entry_is_found_by_its_label() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    assert_eq!(
        common::chit_in(dir, &["keygen", "--out", "log.pem"], None).code,
        0
    );
    assert_eq!(
        common::chit_in(dir, &["keygen", "--out", "me.pem"], None).code,
        0
    );
    let shown = common::chit_in(dir, &["key", "show", "me.pem"], None).stdout;
    let public = common::printed(&shown, "treeship").trim().to_string();
    std::fs::write(
        dir.join("trust.toml"),
        format!("[[key]]\nname = \"me\"\npublic_key = \"{public}\"\n"),
    )
    .unwrap();
    let init = common::chit_in(
        dir,
        &[
            "log",
            "init",
            "--store",
            "s.db",
            "--key",
            "log.pem",
            "--origin",
            "env.example/log",
            "--trust",
            "trust.toml",
            "--allow-unchecked",
        ],
        None,
    );
    assert_eq!(init.code, 0, "{}", init.stderr);
    std::fs::write(dir.join("p.json"), "{\"anything\": 1}").unwrap();
    let signed = common::chit_in(
        dir,
        &[
            "sign",
            "--key",
            "me.pem",
            "--kind",
            "my.own.kind",
            "--out",
            "p.env.json",
            "p.json",
        ],
        None,
    );
    assert_eq!(signed.code, 0, "{}", signed.stderr);
    private(
        dir,
        "tokens.toml",
        &token_line("ci", "tok", "kinds = [\"envelope\"]\n"),
    );
    let server = serve(dir, &["--tokens", "tokens.toml"]);
    let a = server.addr.as_str();
    let env = std::fs::read(dir.join("p.env.json")).unwrap();
    let (code, body) = http(a, "POST", "/v1/entries", &[AUTH], &env);
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    let (code, body) = http(a, "GET", "/v1/search?kind=envelope", &[], b"");
    assert_eq!(code, 200);
    let v = json(&body);
    assert_eq!(v["hits"][0]["kind"], "envelope", "{v}");
}

/// `chit serve` on s.db with tokens.toml.
const SERVE_TOKENS: &[&str] = &[
    "serve",
    "--store",
    "s.db",
    "--listen",
    "127.0.0.1:0",
    "--tokens",
    "tokens.toml",
];

/// Item 9: a tokens file is checked before the server starts: a kind chit
/// never logs under, an empty kinds, no token at all, and a file others
/// may write are refused; one others may read is warned about.
#[test]
fn a_tokens_file_is_checked_like_a_policy() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    common::log_init(dir, "s.db", "log.pem", "limits.example/log");
    let start = |tokens: &str, mode: u32| {
        let p = dir.join("tokens.toml");
        std::fs::write(&p, tokens).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        common::chit_in(dir, SERVE_TOKENS, None)
    };
    for (tokens, mode, says) in [
        (
            token_line("ci", "tok", "kinds = [\"no-such-kind\"]\n"),
            0o600,
            "\"no-such-kind\"",
        ),
        (
            token_line("ci", "tok", "kinds = []\n"),
            0o600,
            "kinds is empty",
        ),
        (String::new(), 0o600, "no [[token]]"),
        ("[[token]\nname = 1\n".to_string(), 0o600, "line 1, column"),
        (
            token_line("ci", "tok", ""),
            0o666,
            "can be written by other users",
        ),
        (
            token_line("ci", "tok", ""),
            0o620,
            "can be written by other users",
        ),
    ] {
        let r = start(&tokens, mode);
        assert_eq!(r.code, 2, "{tokens:?} {mode:o}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(says), "{says}: {}", r.stderr);
        assert_eq!(r.stderr.trim_end().lines().count(), 1, "{}", r.stderr);
        assert!(!r.stderr.contains("\\n"), "{}", r.stderr);
    }
    // Readable by others: served, with a warning.
    let p = dir.join("tokens.toml");
    std::fs::write(&p, token_line("ci", "tok", "")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    let log = std::fs::File::create(dir.join("serve.log")).unwrap();
    let server = serving::start(dir, SERVE_TOKENS, &[], log.into());
    assert_eq!(http(&server.addr, "GET", "/healthz", &[], b"").0, 200);
    // The log is written by a thread of its own: wait for the line.
    let started = Instant::now();
    let mut logged = String::new();
    while !logged.contains("can be read by other users")
        && started.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(50));
        logged = std::fs::read_to_string(dir.join("serve.log")).unwrap();
    }
    assert!(logged.contains("can be read by other users"), "{logged}");
}
