//! Writes generated run receipts.
//!
//!   chit-corpus parity SEED N     N cases as JSON Lines: {"id", "diff", "text"}
//!   chit-corpus files DIR N SEED  N receipt files DIR/000000.json ... for benchmarks
//!   chit-corpus packets DIR N     one stream of N signed verification.packet.v1
//!                                 envelopes, DIR/packets.jsonl, and DIR/trust.toml
//!                                 trusting the (fixed, test-only) key
//!   chit-corpus read-floor DIR    how fast the *.json files in DIR can merely be
//!                                 listed and read, on all cores: a ceiling for
//!                                 any verifier that reads them
//!   chit-corpus lineage DIR BYTES [VOCAB]
//!                                 a synthetic numeric.lineage run: DIR/transcript.jsonl
//!                                 of at least BYTES and DIR/receipt.json, signed by
//!                                 the fixed key (token ids below VOCAB, default 50000)
//!   chit-corpus lattice FILE N    N sealed lattice.executor_packet.v1 packets as
//!                                 JSON Lines (pairs of content-preserving rebinds)
//!   chit-corpus lattice-cases SEED N
//!                                 N Lattice cases as JSON Lines: {"id", "mutation", "text"}
//!   chit-corpus overhead TRANSCRIPT TIMINGS
//!                                 the gateway's overhead per measured request, from a
//!                                 `chit lineage measure` transcript and the fixture's
//!                                 /fixture/timings: one line per level,
//!                                 `LEVEL IN_FLIGHT N MEDIAN P90 P99 MAX SERVER_MEDIAN`
//!                                 (microseconds)

#![forbid(unsafe_code)]

use rayon::prelude::*;
use std::io::Write;

const USAGE: &str = "usage: chit-corpus parity SEED N | chit-corpus files DIR N SEED | chit-corpus packets DIR N \
     | chit-corpus read-floor DIR | chit-corpus lineage DIR BYTES [VOCAB] \
     | chit-corpus overhead TRANSCRIPT TIMINGS | chit-corpus lattice FILE N | chit-corpus lattice-cases SEED N";

fn usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2)
}

fn num(s: Option<&String>) -> u64 {
    s.and_then(|s| s.parse().ok()).unwrap_or_else(|| usage())
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("-h" | "--help") => {
            println!("{USAGE}");
            Ok(())
        }
        Some("parity") => {
            let (seed, n) = (num(args.get(1)), num(args.get(2)));
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            for (id, case) in chit_corpus::cases(seed, n as usize).into_iter().enumerate() {
                let line = serde_json::json!({"id": id, "diff": case.diff, "text": case.text});
                writeln!(out, "{line}")?;
            }
            out.flush()
        }
        Some("files") => {
            let dir = std::path::PathBuf::from(args.get(1).unwrap_or_else(|| usage()));
            let (n, seed) = (num(args.get(2)), num(args.get(3)));
            std::fs::create_dir_all(&dir)?;
            for (id, case) in chit_corpus::cases(seed, n as usize).into_iter().enumerate() {
                std::fs::write(dir.join(format!("{id:06}.json")), case.text)?;
            }
            Ok(())
        }
        Some("lattice-cases") => {
            let (seed, n) = (num(args.get(1)), num(args.get(2)));
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            for (id, case) in chit_corpus::lattice_cases(seed, n as usize)
                .into_iter()
                .enumerate()
            {
                let line =
                    serde_json::json!({"id": id, "mutation": case.mutation, "text": case.text});
                writeln!(out, "{line}")?;
            }
            out.flush()
        }
        Some("lattice") => {
            let file = std::path::PathBuf::from(args.get(1).unwrap_or_else(|| usage()));
            let n = num(args.get(2));
            let lines: Vec<Vec<u8>> = (0..n)
                .into_par_iter()
                .map(chit_corpus::lattice_packet)
                .collect();
            let mut out = std::io::BufWriter::new(std::fs::File::create(file)?);
            for l in lines {
                out.write_all(&l)?;
                out.write_all(b"\n")?;
            }
            out.flush()
        }
        Some("packets") => {
            let dir = std::path::PathBuf::from(args.get(1).unwrap_or_else(|| usage()));
            let n = num(args.get(2));
            std::fs::create_dir_all(&dir)?;
            // A fixed key: these envelopes are benchmark data, not secrets.
            let key = chit_core::keys::SecretKey::from_seed(&[42; 32]);
            std::fs::write(
                dir.join("trust.toml"),
                format!(
                    "[[key]]\nname = \"bench\"\npublic_key = \"{}\"\n",
                    key.public().treeship()
                ),
            )?;
            let lines: Vec<String> = (0..n)
                .into_par_iter()
                .map(|i| chit_corpus::signed_packet(&key, "bench-stream", i))
                .collect();
            let mut out =
                std::io::BufWriter::new(std::fs::File::create(dir.join("packets.jsonl"))?);
            for l in lines {
                writeln!(out, "{l}")?;
            }
            out.flush()
        }
        Some("read-floor") => {
            let dir = std::path::PathBuf::from(args.get(1).unwrap_or_else(|| usage()));
            let mut best = f64::INFINITY;
            let mut count = 0;
            for _ in 0..5 {
                let t = std::time::Instant::now();
                let mut files: Vec<_> = std::fs::read_dir(&dir)?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|e| e == "json"))
                    .collect();
                files.sort();
                let bytes: usize = files
                    .par_iter()
                    .map(|f| std::fs::read(f).map_or(0, |b| b.len()))
                    .sum();
                best = best.min(t.elapsed().as_secs_f64());
                count = files.len();
                std::hint::black_box(bytes);
            }
            println!("{count} {best:.4}");
            Ok(())
        }
        Some("lineage") => {
            let dir = std::path::PathBuf::from(args.get(1).unwrap_or_else(|| usage()));
            let bytes = num(args.get(2));
            let vocab = args.get(3).map_or(50_000, |_| num(args.get(3)));
            std::fs::create_dir_all(&dir)?;
            // The same fixed key as `packets`: benchmark data, not a secret.
            let key = chit_core::keys::SecretKey::from_seed(&[42; 32]);
            let (transcript, receipt) = chit_corpus::lineage_run(&key, bytes, vocab);
            std::fs::write(dir.join("transcript.jsonl"), transcript)?;
            std::fs::write(dir.join("receipt.json"), format!("{receipt:#}\n"))
        }
        Some("overhead") => {
            let read = |i: usize| std::fs::read_to_string(args.get(i).unwrap_or_else(|| usage()));
            let levels = chit_corpus::overhead(&read(1)?, &read(2)?).unwrap_or_else(|e| {
                eprintln!("chit-corpus overhead: {e}");
                std::process::exit(1)
            });
            for o in levels {
                let q = |x| chit_corpus::quantile(&o.overhead_us, x);
                println!(
                    "{} {} {} {} {} {} {} {}",
                    o.level,
                    o.in_flight,
                    o.overhead_us.len(),
                    q(0.5),
                    q(0.9),
                    q(0.99),
                    q(1.0),
                    chit_corpus::quantile(&o.server_us, 0.5)
                );
            }
            Ok(())
        }
        _ => usage(),
    }
}
