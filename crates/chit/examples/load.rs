//! A load generator for `chit serve` (bench/serve.sh runs it as a process
//! of its own): CLIENTS concurrent clients POST each line of FILE to
//! /v1/entries, one receipt a request, and the rate and the latency
//! percentiles are printed.
//!
//!   cargo run --release -p chit --example load -- URL[,URL...] TOKEN FILE CLIENTS
//!
//! With several URLs, client i sends to URL i mod n (several servers on one
//! log).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [urls, token, file, clients] = &args[..] else {
        eprintln!("usage: load URL[,URL...] TOKEN FILE CLIENTS");
        std::process::exit(2);
    };
    let urls: Vec<String> = urls
        .split(',')
        .map(|u| format!("{}/v1/entries", u.trim_end_matches('/')))
        .collect();
    let clients: usize = clients.parse().expect("a number of clients");
    let text = std::fs::read(file).expect("the input file");
    let lines: Arc<Vec<Vec<u8>>> = Arc::new(
        text.split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect(),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (latencies, codes, secs) = runtime.block_on(async move {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(clients)
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let next = Arc::new(AtomicUsize::new(0));
        let start = Instant::now();
        let mut tasks = Vec::new();
        for c in 0..clients {
            let (client, next, lines, token) =
                (client.clone(), next.clone(), lines.clone(), token.clone());
            let url = urls[c % urls.len()].clone();
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut codes = std::collections::BTreeMap::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(body) = lines.get(i) else { break };
                    let t = Instant::now();
                    let code = match client
                        .post(&url)
                        .bearer_auth(&token)
                        .body(body.clone())
                        .send()
                        .await
                    {
                        Ok(r) => {
                            let code = r.status().as_u16();
                            let _ = r.bytes().await;
                            code
                        }
                        Err(e) => {
                            if std::env::var_os("LOAD_DEBUG").is_some() {
                                eprintln!("{e:?}");
                            }
                            0
                        }
                    };
                    lat.push(t.elapsed().as_secs_f64());
                    *codes.entry(code).or_insert(0u64) += 1;
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
    println!(
        "{} requests from {clients} clients in {secs:.2} s = {:.0}/s; latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; statuses {codes:?}",
        l.len(),
        l.len() as f64 / secs,
        p(0.5),
        p(0.99),
        p(1.0)
    );
}
