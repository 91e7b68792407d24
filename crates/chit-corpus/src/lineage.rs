//! Synthetic `numeric.lineage` runs: a gateway transcript and its signed
//! receipt.

use crate::Rng;
use serde_json::{json, Value};
use std::fmt::Write;

/// A synthetic `numeric.lineage` run of at least `target_bytes` of
/// transcript: the transcript's text (JSON Lines, as the gateway writes it)
/// and the receipt signed with `key`, built with the gateway's arithmetic
/// ([`chit_core::kinds::numeric_lineage::receipt::Measurement`]). Four levels (1, 8, 64, 256), three
/// repetitions, 256 tokens a request with ids below `vocab`; at each level
/// above the first, half the requests diverge from the first level after a
/// few tokens, so the receipt is `occupancy_coupled`. The same arguments
/// give the same bytes.
pub fn lineage_run(
    key: &chit_core::keys::SecretKey,
    target_bytes: u64,
    vocab: u64,
) -> (String, Value) {
    let vocab = vocab.max(2);
    // A sequence line is about 256 tokens of (digits + comma) and ~140
    // bytes more: start from that estimate, then add requests until the
    // transcript is big enough.
    let digits: u64 = (0..vocab.min(1 << 20))
        .map(|t| t.to_string().len() as u64 + 1)
        .sum();
    let line = 256 * digits / vocab.min(1 << 20) + 140;
    let mut requests = target_bytes.div_ceil(line * 12).max(1);
    loop {
        let (text, receipt) = lineage_requests(key, requests, vocab);
        if text.len() as u64 >= target_bytes {
            return (text, receipt);
        }
        let short = target_bytes - text.len() as u64;
        requests += short.div_ceil(line * 12);
    }
}

fn lineage_requests(
    key: &chit_core::keys::SecretKey,
    requests: u64,
    vocab: u64,
) -> (String, Value) {
    use chit_core::kinds::numeric_lineage::arithmetic::{Bound, Runs};
    use chit_core::kinds::numeric_lineage::receipt::{LevelRecord, Measurement, Numerics};
    const LEVELS: [u64; 4] = [1, 8, 64, 256];
    const REPS: u64 = 3;
    const TOKENS: u64 = 256;
    const START: u64 = 1_796_025_600; // 2026-11-30T09:00:00Z
    let mut rng = Rng::new(vocab ^ (requests << 20));
    let salt: String = (0..32).map(|_| format!("{:02x}", rng.below(256))).collect();
    let (endpoint, gateway, model) = (
        "http://127.0.0.1:8000/v1",
        "chit-gateway@bench",
        "bench-model",
    );
    let bound = Bound {
        committed_at: chit_core::time::format_unix_utc(START),
        max_differing_positions: 0,
        min_first_divergent_index: 0,
        max_distinct_sequences_per_level: 1,
        required_repetitions_per_level: REPS,
    };
    let objects: Vec<Value> = (0..requests)
        .map(|i| {
            json!({
                "max_tokens": TOKENS,
                "model": model,
                "prompt": format!("Request {i}: describe the sea in plain words."),
                "temperature": 0,
            })
        })
        .collect();
    let base: Vec<Vec<u64>> = (0..requests)
        .map(|_| (0..TOKENS).map(|_| rng.below(vocab)).collect())
        .collect();
    let mut levels = Vec::new();
    for &c in &LEVELS {
        let seqs: Vec<Vec<u64>> = base
            .iter()
            .map(|b| {
                let mut s = b.clone();
                if c > 1 && rng.chance(0.5) {
                    let from = 2 + rng.below(TOKENS - 2) as usize;
                    for t in &mut s[from..] {
                        *t = rng.below(vocab);
                    }
                }
                s
            })
            .collect();
        let runs: Runs = (0..REPS).map(|_| seqs.clone()).collect();
        levels.push(LevelRecord {
            induced_concurrency: c,
            observed_in_flight_at_accept: c,
            observed_in_flight_at_complete: c,
            runs,
            numerics: Numerics::default(),
        });
    }
    let lineage_id = "lineage-bench";
    let measured_at = chit_core::time::format_unix_utc(START + 60);
    let mut out = String::new();
    let header = json!({
        "transcript": "chit numeric.lineage transcript 1",
        "api": "openai",
        "bound": {"bound_digest_sha256": bound.digest(), "committed_at": bound.committed_at},
        "endpoint": endpoint,
        "gateway": gateway,
        "levels": LEVELS,
        "lineage_id": lineage_id,
        "model": model,
        "repetitions": REPS,
        "reroute": null,
        "salt": salt,
        "started_at": measured_at,
    });
    let _ = writeln!(out, "{header}");
    let _ = writeln!(out, "{}", json!({ "requests": objects }));
    let mut id = 0u64;
    for (l, level) in levels.iter().enumerate() {
        for (r, reqs) in level.runs.iter().enumerate() {
            for (i, tokens) in reqs.iter().enumerate() {
                // Each level also starts c − 1 fillers, which take ids too.
                id += if r == 0 && i == 0 {
                    level.induced_concurrency
                } else {
                    1
                };
                let seq = json!({
                    "elapsed_us": 520_000 + rng.below(4_000),
                    "in_flight_at_accept": level.induced_concurrency,
                    "in_flight_at_complete": level.induced_concurrency,
                    "level": l,
                    "repetition": r,
                    "request": i,
                    "response_id": format!("cmpl-{id}"),
                    "token_ids": tokens,
                });
                let _ = writeln!(out, "{seq}");
            }
        }
    }
    let m = Measurement {
        lineage_id: lineage_id.into(),
        salt_hex: salt,
        gateway: gateway.into(),
        endpoint: endpoint.into(),
        model: model.into(),
        bound,
        request_set_canonical: chit_core::kinds::numeric_lineage::receipt::canonical_of(
            &Value::Array(objects),
        )
        .expect("the request set canonicalises"),
        request_count: requests,
        max_output_tokens: TOKENS,
        levels,
        measured_at,
        reroute: None,
    };
    let effected = START + 3600;
    let found = m
        .body(&chit_core::time::format_unix_utc(effected))
        .expect("a synthetic measurement has tokens and levels");
    let receipt = chit_core::kinds::numeric_lineage::receipt::sign(found.body, key, effected)
        .expect("the body canonicalises");
    let _ = writeln!(
        out,
        "{}",
        json!({"end": "complete", "receipt_id": receipt["receipt_id"]})
    );
    (out, receipt)
}
