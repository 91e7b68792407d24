//! Measurements for `bench/log.sh` that need to run in-process.
//!
//!   logbench limits FILE DIR     SHA-256 throughput over FILE's lines (as
//!                                leaf hashes) and the median latency of
//!                                one 4 KiB write + fsync in DIR
//!   logbench prove STORE COUNT   COUNT inclusion proofs of random indexes
//!                                against the latest checkpoint, each
//!                                verified: mean and worst time per proof

use chit_log::tree::{leaf_hash, verify_inclusion};
use chit_logstore::Log;
use std::io::{BufRead, Write};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["limits", file, dir] => limits(file, dir),
        ["prove", store, count] => prove(store, count.parse().expect("a count")),
        _ => {
            eprintln!("usage: logbench limits FILE DIR | logbench prove STORE COUNT");
            std::process::exit(2);
        }
    }
}

fn limits(file: &str, dir: &str) {
    let lines: Vec<Vec<u8>> = std::io::BufReader::new(std::fs::File::open(file).unwrap())
        .split(b'\n')
        .map(Result::unwrap)
        .filter(|l| !l.is_empty())
        .collect();
    let bytes: usize = lines.iter().map(Vec::len).sum();
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let mut x = 0u8;
        for l in &lines {
            x ^= leaf_hash(l)[0];
        }
        std::hint::black_box(x);
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "sha256 (one core, leaf hashes of the {} entries, {:.1} MB): {:.0} MB/s = {:.0} entries/s",
        lines.len(),
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / best,
        lines.len() as f64 / best
    );
    let path = std::path::Path::new(dir).join(".fsync-probe");
    let mut f = std::fs::File::create(&path).unwrap();
    let block = [0x5au8; 4096];
    let mut times = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        f.write_all(&block).unwrap();
        f.sync_data().unwrap();
        times.push(t.elapsed().as_secs_f64());
    }
    drop(f);
    let _ = std::fs::remove_file(&path);
    times.sort_by(f64::total_cmp);
    println!(
        "fsync (4 KiB write + fdatasync in {dir}): median {:.3} ms, p99 {:.3} ms",
        times[100] * 1e3,
        times[198] * 1e3
    );
}

fn prove(store: &str, count: u64) {
    let mut log = Log::open(chit_logstore::open(store).unwrap()).unwrap();
    let (size, note) = log.head().unwrap();
    let cp = log.open_checkpoint(&note, &[]).unwrap().checkpoint;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut total = 0.0f64;
    let mut worst = 0.0f64;
    for _ in 0..count {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let index = seed % size;
        let data = log.store().entry(index).unwrap().unwrap().data;
        let t = Instant::now();
        let proof = log.inclusion_proof(index, size).unwrap();
        let dt = t.elapsed().as_secs_f64();
        verify_inclusion(&leaf_hash(&data), index, size, &proof, &cp.root).unwrap();
        total += dt;
        worst = worst.max(dt);
    }
    println!(
        "inclusion proof from a log of {size} entries: mean {:.3} ms, worst {:.3} ms over {count} random indexes (each verified)",
        total / count as f64 * 1e3,
        worst * 1e3
    );
}
