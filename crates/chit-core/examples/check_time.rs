//! Times `chit_core::check` alone on one file, for the bindings' per-call
//! overhead (bench/python.sh): the best of ROUNDS rounds of N checks, in
//! nanoseconds per check.
//!
//!   cargo run --release -p chit-core --example check_time -- FILE [N] [ROUNDS]

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: check_time FILE [N] [ROUNDS]");
        std::process::exit(2);
    };
    let number = |i: usize, default: u32| {
        args.get(i)
            .map(|s| s.parse().expect("a count"))
            .unwrap_or(default)
    };
    let (n, rounds) = (number(1, 20_000), number(2, 5));
    let bytes = std::fs::read(path).expect("the file reads");
    let ctx = chit_core::Context::default();
    let mut best = f64::MAX;
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..n {
            let checked = chit_core::check(bytes.as_slice(), &ctx);
            std::hint::black_box(&checked);
        }
        best = best.min(start.elapsed().as_nanos() as f64 / f64::from(n));
    }
    println!("{best:.0}");
}
