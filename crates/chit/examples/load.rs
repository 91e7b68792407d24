//! A load generator for `chit serve` (bench/serve.sh runs it as a process
//! of its own): CLIENTS concurrent clients POST each line of FILE to
//! /v1/entries, one receipt a request, and the rate and the latency
//! percentiles are printed.
//!
//!   cargo run --release -p chit --example load -- URL[,URL...] TOKEN FILE CLIENTS
//!
//! With several URLs, client i sends to URL i mod n (several servers on one
//! log).
//!
//! With LOAD_LINES=K (K > 1), each request is K lines of FILE as one JSON
//! Lines body (`Content-Type: application/jsonl`), the way a gateway
//! sends what it gathered: the rate printed is receipts a second, the
//! latency a request's, and the statuses each line's answer's `status`.
//!
//! Each client is one keep-alive HTTP/1.1 connection on a single-threaded
//! runtime, written by hand (like wrk, a load generator should cost the
//! machine it shares as little as it can): each request is one write of
//! prepared headers and the body; each answer is read to the end of its
//! Content-Length, and its status counted. A connection the server closes
//! is opened again. Latency is from the request's first byte written to its
//! answer's last byte read. With LOAD_PERCENTILES set, more percentiles
//! of it are written to standard error.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [urls, token, file, clients] = &args[..] else {
        eprintln!("usage: load URL[,URL...] TOKEN FILE CLIENTS");
        std::process::exit(2);
    };
    let hosts: Vec<String> = urls
        .split(',')
        .map(|u| {
            u.trim_start_matches("http://")
                .trim_end_matches('/')
                .to_string()
        })
        .collect();
    let clients: usize = clients.parse().expect("a number of clients");
    let per: usize = std::env::var("LOAD_LINES")
        .ok()
        .map(|k| k.parse().expect("LOAD_LINES: a number of lines"))
        .unwrap_or(1)
        .max(1);
    let text = std::fs::read(file).expect("the input file");
    let lines: Arc<Vec<Vec<u8>>> = Arc::new(
        text.split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let token = token.clone();
    let (latencies, codes, secs) = runtime.block_on(async move {
        let next = Arc::new(AtomicUsize::new(0));
        let start = Instant::now();
        let mut tasks = Vec::new();
        for c in 0..clients {
            let (next, lines) = (next.clone(), lines.clone());
            let host = hosts[c % hosts.len()].clone();
            let ctype = if per > 1 {
                "application/jsonl"
            } else {
                "application/json"
            };
            let head = format!(
                "POST /v1/entries HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\
                 Content-Type: {ctype}\r\nContent-Length: "
            );
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut codes = std::collections::BTreeMap::new();
                let mut conn: Option<TcpStream> = None;
                let mut req = Vec::with_capacity(4096);
                let mut buf = Vec::with_capacity(8192);
                loop {
                    let i = next.fetch_add(per, Ordering::Relaxed);
                    if i >= lines.len() {
                        break;
                    }
                    let mine = &lines[i..(i + per).min(lines.len())];
                    let body = mine.join(&b'\n');
                    req.clear();
                    req.extend_from_slice(head.as_bytes());
                    req.extend_from_slice(format!("{}\r\n\r\n", body.len()).as_bytes());
                    req.extend_from_slice(&body);
                    let t = Instant::now();
                    match exchange(&mut conn, &host, &req, &mut buf).await {
                        Ok((code, answer)) if per > 1 && code == 200 => {
                            // Each line's answer: {"checkpoint":...,"status":"appended"}.
                            for line in answer.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                                *codes.entry(status_word(line)).or_insert(0u64) += 1;
                            }
                        }
                        Ok((code, _)) => {
                            *codes.entry(code.to_string()).or_insert(0u64) += mine.len() as u64;
                        }
                        Err(e) => {
                            if std::env::var_os("LOAD_DEBUG").is_some() {
                                eprintln!("{e}");
                            }
                            conn = None;
                            *codes.entry("0".into()).or_insert(0u64) += mine.len() as u64;
                        }
                    }
                    lat.push(t.elapsed().as_secs_f64());
                }
                (lat, codes)
            }));
        }
        let mut all = Vec::new();
        let mut codes = std::collections::BTreeMap::new();
        for t in tasks {
            let (l, c) = t.await.unwrap();
            all.extend(l);
            for (k, v) in c {
                *codes.entry(k).or_insert(0) += v;
            }
        }
        (all, codes, start.elapsed().as_secs_f64())
    });
    let mut l = latencies;
    l.sort_by(f64::total_cmp);
    let p = |q: f64| l[((l.len() as f64 - 1.0) * q) as usize] * 1e3;
    if std::env::var_os("LOAD_PERCENTILES").is_some() {
        let qs = [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999];
        let text: Vec<String> = qs
            .iter()
            .map(|&q| format!("p{}={:.1}", q * 100.0, p(q)))
            .collect();
        eprintln!("latency (ms): {}", text.join(" "));
    }
    let receipts: u64 = codes.values().sum();
    let shape = if per > 1 {
        format!("{receipts} receipts in {} requests of {per} lines", l.len())
    } else {
        format!("{} requests", l.len())
    };
    println!(
        "{shape} from {clients} clients in {secs:.2} s = {:.0}/s; latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; statuses {codes:?}",
        receipts as f64 / secs,
        p(0.5),
        p(0.99),
        p(1.0)
    );
}

/// The `status` word of one JSON Lines answer line, as written by the
/// server (`"status":"appended"`), or "?" when it has none.
fn status_word(line: &[u8]) -> String {
    let key = b"\"status\":\"";
    line.windows(key.len())
        .position(|w| w == key)
        .and_then(|at| {
            let rest = &line[at + key.len()..];
            let end = rest.iter().position(|&b| b == b'"')?;
            std::str::from_utf8(&rest[..end]).ok().map(str::to_string)
        })
        .unwrap_or_else(|| "?".into())
}

/// One request on the client's connection (opened when it has none): the
/// answer's status and body. The connection is kept unless the server
/// closes it.
async fn exchange<'b>(
    conn: &mut Option<TcpStream>,
    host: &str,
    req: &[u8],
    buf: &'b mut Vec<u8>,
) -> std::io::Result<(u16, &'b [u8])> {
    if conn.is_none() {
        let s = TcpStream::connect(host).await?;
        s.set_nodelay(true)?;
        *conn = Some(s);
    }
    let s = conn.as_mut().expect("connected");
    tokio::time::timeout(Duration::from_secs(60), async {
        s.write_all(req).await?;
        buf.clear();
        // The head.
        let head_end = loop {
            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            if s.read_buf(buf).await? == 0 {
                return Err(std::io::Error::other("the server closed the connection"));
            }
        };
        let head = std::str::from_utf8(&buf[..head_end])
            .map_err(|_| std::io::Error::other("a head that is not UTF-8"))?;
        let code: u16 = head
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| std::io::Error::other("no status"))?;
        let mut length = None;
        let mut close = false;
        for line in head.split("\r\n").skip(1) {
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse::<usize>().ok();
                } else if k.eq_ignore_ascii_case("connection") && v.trim() == "close" {
                    close = true;
                }
            }
        }
        let length =
            length.ok_or_else(|| std::io::Error::other("an answer without Content-Length"))?;
        while buf.len() < head_end + length {
            if s.read_buf(buf).await? == 0 {
                return Err(std::io::Error::other("the answer was cut short"));
            }
        }
        Ok((code, close, head_end..head_end + length))
    })
    .await
    .map_err(|_| std::io::Error::other("no answer within 60 s"))?
    .map(|(code, close, body)| {
        if close {
            *conn = None;
        }
        (code, &buf[body])
    })
}
