//! A load generator for `chit witness serve` (bench/witness.sh runs it as
//! a process of its own).
//!
//!   witness_load policy LOGS            # a tlog-policy listing LOGS logs
//!   witness_load run ADDR LOGS PER      # PER checkpoints of each log
//!
//! Each of LOGS logs (keys from fixed seeds, so `policy` and `run` agree)
//! grows one leaf at a time: its requests are `old N-1`, the consistency
//! proof and its checkpoint of size N, for N from 1 to PER, all signed
//! before the clock starts. One client a log, each one keep-alive HTTP/1.1
//! connection written by hand (like `load`), sends its log's requests in
//! order, each after the last was answered (a log's next checkpoint
//! follows its last cosigned one). Every answer must be 200. Printed: the
//! checkpoints cosigned a second, and the latency percentiles.

use chit_log::checkpoint::Checkpoint;
use chit_log::note::NoteSigner;
use chit_log::tree::{consistency_proof, MemoryTree};
use chit_log::witness::AddCheckpoint;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn signer(i: usize) -> NoteSigner {
    let mut seed = [7u8; 32];
    seed[..8].copy_from_slice(&(i as u64).to_be_bytes());
    NoteSigner::from_seed(&format!("bench.example/log{i}"), &seed).expect("a key")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["policy", logs] => {
            for i in 0..logs.parse::<usize>().expect("LOGS") {
                println!("log {}", signer(i).verifier_key());
            }
            println!("quorum none");
        }
        ["run", addr, logs, per] => run(
            addr.trim_start_matches("http://").trim_end_matches('/'),
            logs.parse().expect("LOGS"),
            per.parse().expect("PER"),
        ),
        _ => {
            eprintln!("usage: witness_load policy LOGS | witness_load run ADDR LOGS PER");
            std::process::exit(2);
        }
    }
}

fn run(addr: &str, logs: usize, per: u64) {
    // One tree serves every log (their origins and keys differ).
    let mut tree = MemoryTree::new();
    for i in 0..per {
        tree.push(format!("entry {i}").as_bytes());
    }
    let proofs: Vec<_> = (1..=per)
        .map(|n| {
            if n == 1 {
                Vec::new()
            } else {
                consistency_proof(&tree, n - 1, n).expect("a proof")
            }
        })
        .collect();
    let requests: Vec<Vec<Vec<u8>>> = (0..logs)
        .map(|i| {
            let key = signer(i);
            (1..=per)
                .map(|n| {
                    let note = Checkpoint::new(key.name(), n, tree.root(n).expect("a root"))
                        .sign(&key)
                        .expect("signed");
                    let body = AddCheckpoint {
                        old_size: n - 1,
                        proof: proofs[n as usize - 1].clone(),
                        note,
                    }
                    .to_bytes();
                    let mut req = format!(
                        "POST /add-checkpoint HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    req.extend_from_slice(&body);
                    req
                })
                .collect()
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let started = Instant::now();
    let latencies = runtime.block_on(async {
        let mut tasks = Vec::new();
        for reqs in requests {
            let addr = addr.to_string();
            tasks.push(tokio::spawn(async move { client(&addr, reqs).await }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.expect("a client"));
        }
        all
    });
    let secs = started.elapsed().as_secs_f64();
    let mut l = latencies;
    l.sort();
    let pct = |p: f64| l[((l.len() as f64 * p) as usize).min(l.len() - 1)].as_secs_f64() * 1e3;
    println!(
        "{} checkpoints of {logs} logs in {secs:.2} s = {:.0}/s, p50 {:.2} ms, p99 {:.2} ms",
        l.len(),
        l.len() as f64 / secs,
        pct(0.5),
        pct(0.99)
    );
}

async fn client(addr: &str, reqs: Vec<Vec<u8>>) -> Vec<Duration> {
    let mut s = TcpStream::connect(addr).await.expect("the witness");
    s.set_nodelay(true).expect("nodelay");
    let mut out = Vec::with_capacity(reqs.len());
    let mut buf = Vec::new();
    for req in reqs {
        let t = Instant::now();
        s.write_all(&req).await.expect("a write");
        let status = read_answer(&mut s, &mut buf).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&buf));
        out.push(t.elapsed());
    }
    out
}

/// Reads one answer (its head, then Content-Length bytes); its status.
async fn read_answer(s: &mut TcpStream, buf: &mut Vec<u8>) -> u16 {
    buf.clear();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().expect("a length"))
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = s.read(&mut chunk).await.expect("a read");
                assert!(n > 0, "the witness closed the connection");
                buf.extend_from_slice(&chunk[..n]);
            }
            let status = head
                .split(' ')
                .nth(1)
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            buf.drain(..end + 4);
            buf.truncate(len);
            return status;
        }
        let n = s.read(&mut chunk).await.expect("a read");
        assert!(n > 0, "the witness closed the connection");
        buf.extend_from_slice(&chunk[..n]);
    }
}
