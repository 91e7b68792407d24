//! numeric.lineage against the public vector: the receipt alone (L1-L12),
//! with its sequences as transcript (L13-L15), and each rule broken.

use chit_core::kinds::numeric_lineage::transcript::Transcript;
use chit_core::kinds::numeric_lineage::{check_with, Context};
use chit_core::{json, Kind, Limits};

const RECEIPT: &str = include_str!("data/lineage/coupled.receipt.json");
const SEQUENCES: &str = include_str!("data/lineage/coupled.sequences.jsonl");

/// The receipt `text` checked, with `transcript` if given.
fn report(text: &str, transcript: Option<&Transcript>) -> chit_core::Report {
    let doc = json::parse(text.as_bytes(), &Limits::default()).unwrap();
    assert_eq!(Kind::detect(&doc), Some(Kind::Lineage));
    check_with(
        doc.root(),
        Context {
            trust: None,
            transcript,
            ..Default::default()
        },
    )
}

fn rules(text: &str, transcript: Option<&Transcript>) -> Vec<&'static str> {
    report(text, transcript)
        .errors
        .iter()
        .map(|f| f.rule)
        .collect()
}

fn transcript(text: &str) -> Transcript {
    Transcript::read(text.as_bytes(), &Limits::default()).unwrap()
}

#[test]
fn the_vector_is_valid_alone_and_with_its_sequences() {
    assert_eq!(rules(RECEIPT, None), Vec::<&str>::new());
    let t = transcript(SEQUENCES);
    assert_eq!(t.request_count, 3);
    assert_eq!(rules(RECEIPT, Some(&t)), Vec::<&str>::new());
}

/// Edits the receipt's JSON text: `from` must occur exactly once.
fn edit(from: &str, to: &str) -> String {
    assert_eq!(RECEIPT.matches(from).count(), 1, "{from}");
    RECEIPT.replace(from, to)
}

#[test]
fn each_receipt_rule_fires() {
    // Changing the body breaks the digest (L2) and the signature (L3).
    let e = rules(&edit("\"lineage-test-coupled\"", "\"lineage-x\""), None);
    assert_eq!(e, vec!["L2", "L3"]);
    let e = rules(&edit("\"sig_b64u\": \"XL-2", "\"sig_b64u\": \"YL-2"), None);
    assert_eq!(e, vec!["L3"]);
    let e = rules(&edit("_b53ba222cc9f\"", "_b53ba222cc9e\""), None);
    assert_eq!(e, vec!["L4"]);
    let e = rules(
        &edit("\"schema\": \"r1.0.0\"", "\"schema\": \"r1.0.1\""),
        None,
    );
    assert_eq!(e, vec!["schema"]);
    let e = rules(
        &edit(
            "Numeric Lineage record. Attests",
            "Numeric lineage record. Attests",
        ),
        None,
    );
    assert_eq!(e, vec!["L12"]);
}

#[test]
fn the_transcript_rules_fire() {
    // Another salt: no commitment opens.
    let t = transcript(&SEQUENCES.replacen("5a5a", "5a5b", 1));
    let e = rules(RECEIPT, Some(&t));
    assert!(e.iter().all(|r| *r == "L13") && e.len() == 4, "{e:?}");
    // One token changed at level 1: its digest and count, and the divergence.
    let changed = SEQUENCES.replacen(
        "{\"level\": 1, \"repetition\": 0, \"request\": 1, \"token_ids\": [101, 201, 300, 301, 302, 999, 998]}",
        "{\"level\": 1, \"repetition\": 0, \"request\": 1, \"token_ids\": [101, 201, 300, 301, 302, 999, 997]}",
        1,
    );
    assert_ne!(changed, SEQUENCES);
    let e = rules(RECEIPT, Some(&transcript(&changed)));
    assert!(e.contains(&"L14"), "{e:?}");
    // A level-2 token changed: the pair with the most differing positions moves.
    let changed = SEQUENCES.replacen(
        "{\"level\": 2, \"repetition\": 0, \"request\": 0, \"token_ids\": [100, 200, 300, 301, 302, 303, 304, 305]}",
        "{\"level\": 2, \"repetition\": 0, \"request\": 0, \"token_ids\": [100, 200, 300, 301, 302, 303, 304, 306]}",
        1,
    );
    assert_ne!(changed, SEQUENCES);
    let e = rules(RECEIPT, Some(&transcript(&changed)));
    assert!(e.contains(&"L14") && e.contains(&"L15"), "{e:?}");
    // A missing line.
    let mut lines: Vec<&str> = SEQUENCES.lines().collect();
    lines.remove(5);
    let e = rules(RECEIPT, Some(&transcript(&lines.join("\n"))));
    assert!(e.contains(&"L14"), "{e:?}");
    // Marked incomplete.
    let e = rules(
        RECEIPT,
        Some(&transcript(&format!(
            "{SEQUENCES}\n{{\"end\": \"incomplete\", \"reason\": \"interrupted\"}}\n"
        ))),
    );
    assert!(e.contains(&"L14"), "{e:?}");
    // A duplicated line is refused when reading.
    let dup = format!("{SEQUENCES}\n{}\n", SEQUENCES.lines().nth(3).unwrap());
    assert!(Transcript::read(dup.as_bytes(), &Limits::default())
        .unwrap_err()
        .to_string()
        .contains("recorded twice"));
}

/// chit's builder, fed the vector's sequences and parameters, writes the
/// vector's receipt: the same digest and the same signature.
#[test]
fn the_builder_reproduces_the_vector() {
    use chit_core::keys::SecretKey;
    use chit_core::kinds::numeric_lineage::arithmetic::Bound;
    use chit_core::kinds::numeric_lineage::receipt::{sign, LevelRecord, Measurement, Numerics};
    let t = transcript(SEQUENCES);
    let set = SEQUENCES.lines().nth(1).unwrap();
    let set_doc = json::parse(set.as_bytes(), &Limits::default()).unwrap();
    let set_canonical = chit_core::canon::to_vec(
        set_doc.root().get("requests").unwrap(),
        chit_core::canon::Profile::Jcs,
    );
    let levels = [1u64, 4, 8]
        .iter()
        .enumerate()
        .map(|(l, &c)| LevelRecord {
            induced_concurrency: c,
            observed_in_flight_at_accept: c,
            observed_in_flight_at_complete: c,
            runs: t.runs(l as u64, 3).unwrap(),
            numerics: Numerics {
                accumulator_width_id: "fp32".into(),
                operand_width_id: "bf16".into(),
                reduction_split_count: c,
                ..Numerics::default()
            },
        })
        .collect();
    let m = Measurement {
        lineage_id: "lineage-test-coupled".into(),
        salt_hex: t.salt.clone(),
        gateway: t.gateway.clone(),
        endpoint: t.endpoint.clone(),
        model: "m".into(),
        bound: Bound {
            committed_at: "2026-11-30T10:00:00Z".into(),
            max_differing_positions: 0,
            min_first_divergent_index: 0,
            max_distinct_sequences_per_level: 1,
            required_repetitions_per_level: 2,
        },
        request_set_canonical: set_canonical,
        request_count: 3,
        max_output_tokens: 8,
        levels,
        measured_at: "2026-11-30T10:01:00Z".into(),
        reroute: t.reroute.clone(),
    };
    let found = m.body("2026-11-30T10:05:00Z").unwrap();
    let seed: [u8; 32] = std::array::from_fn(|i| i as u8);
    let receipt = sign(found.body, &SecretKey::from_seed(&seed), 1796033130).unwrap();
    let want: serde_json::Value = serde_json::from_str(RECEIPT).unwrap();
    assert_eq!(receipt, want);
}

/// The vector's receipt with its `signed_body` edited by `f`, then signed
/// again with the vector's key: a forger's receipt whose digest, id and
/// signature all hold.
fn resigned(f: impl FnOnce(&mut serde_json::Value)) -> String {
    use chit_core::keys::SecretKey;
    let mut v: serde_json::Value = serde_json::from_str(RECEIPT).unwrap();
    let mut body = v["signed_body"].take();
    f(&mut body);
    let seed: [u8; 32] = std::array::from_fn(|i| i as u8);
    let ts = v["ts"].as_u64().unwrap();
    chit_core::kinds::numeric_lineage::receipt::sign(body, &SecretKey::from_seed(&seed), ts)
        .unwrap()
        .to_string()
}

#[test]
fn a_transcript_whose_end_line_names_another_receipt_is_refused() {
    let id = "r_numeric_lineage_1796033130_b53ba222cc9f";
    let end =
        |id: &str| format!("{SEQUENCES}\n{{\"end\": \"complete\", \"receipt_id\": \"{id}\"}}\n");
    assert_eq!(
        rules(RECEIPT, Some(&transcript(&end(id)))),
        Vec::<&str>::new()
    );
    let e = rules(
        RECEIPT,
        Some(&transcript(&end(
            "r_numeric_lineage_1796033130_000000000000",
        ))),
    );
    assert_eq!(e, vec!["L14"]);
}

#[test]
fn max_output_tokens_must_be_the_recorded_sets_largest() {
    let t = transcript(SEQUENCES);
    assert_eq!(rules(&resigned(|_| {}), Some(&t)), Vec::<&str>::new());
    let forged = resigned(|b| b["request_set"]["max_output_tokens"] = 1.into());
    assert_eq!(rules(&forged, None), Vec::<&str>::new());
    assert_eq!(rules(&forged, Some(&t)), vec!["L14"]);
}

#[test]
fn a_coupled_receipt_that_drops_the_transcripts_reroute_target_is_refused() {
    let t = transcript(SEQUENCES);
    let forged = resigned(|b| {
        b["effect"]["reroute_target_commitment"] = serde_json::Value::Null;
        b["effect"]["reroute_target_batch_invariant_declared"] = serde_json::Value::Null;
    });
    assert_eq!(rules(&forged, None), Vec::<&str>::new());
    assert_eq!(rules(&forged, Some(&t)), vec!["L13"]);
}

#[test]
fn an_empty_request_set_is_unreadable_not_a_loop_over_the_claimed_repetitions() {
    let mut lines: Vec<&str> = SEQUENCES.lines().take(1).collect();
    lines.push("{\"requests\": []}");
    let err = Transcript::read(lines.join("\n").as_bytes(), &Limits::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 2") && err.contains("empty"), "{err}");
    // Without that refusal a receipt claiming 2^62 repetitions per level
    // would have been walked repetition by repetition.
    let forged = resigned(|b| {
        for l in b["levels"].as_array_mut().unwrap() {
            l["repetitions"] = (1u64 << 62).into();
        }
    });
    let e = rules(&forged, Some(&transcript(SEQUENCES)));
    assert!(e.contains(&"L14"), "{e:?}");
}

#[test]
fn many_repetitions_and_a_long_baseline_stay_linear() {
    use chit_core::kinds::numeric_lineage::arithmetic::{compare, distinct_count, Runs};
    // 40,000 distinct repetitions: quadratic counting took minutes.
    let runs: Runs = (0..40_000u64).map(|r| vec![vec![r]]).collect();
    let start = std::time::Instant::now();
    assert_eq!(distinct_count(&runs), 40_000);
    // A baseline of 2,000,000 tokens against 2,000 empty levels.
    let base: Runs = vec![vec![(0..2_000_000u64).collect()]];
    let empty: Runs = vec![vec![vec![]]];
    for _ in 0..2_000 {
        let c = compare(&base, &empty);
        assert_eq!(
            (c.compared, c.differing, c.first),
            (2_000_000, 2_000_000, Some(0))
        );
    }
    assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
}

/// In-flight counts recorded for some of a level's requests and not others
/// are refused: taking one away must not hide the request that kept the
/// level from its concurrency.
#[test]
fn in_flight_counts_are_all_or_none() {
    let with_counts: String = SEQUENCES
        .lines()
        .map(|l| {
            if l.contains("\"token_ids\"") {
                let level: u64 = l
                    .split("\"level\": ")
                    .nth(1)
                    .and_then(|x| x.split(',').next())
                    .and_then(|x| x.parse().ok())
                    .unwrap();
                let c = [1, 4, 8][level as usize];
                format!(
                    "{}, \"in_flight_at_accept\": {c}, \"in_flight_at_complete\": {c}}}",
                    l.trim_end_matches('}')
                )
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        rules(RECEIPT, Some(&transcript(&with_counts))),
        Vec::<&str>::new()
    );
    // One level-2 line loses its counts.
    let mut lines: Vec<String> = with_counts.lines().map(str::to_owned).collect();
    let at = lines
        .iter()
        .position(|l| l.contains("\"level\": 2"))
        .unwrap();
    lines[at] = lines[at]
        .split(", \"in_flight_at_accept\"")
        .next()
        .unwrap()
        .to_owned()
        + "}";
    let e = rules(RECEIPT, Some(&transcript(&lines.join("\n"))));
    assert_eq!(e, vec!["L14"], "{e:?}");
}

/// A receipt built and signed by chit's own builder from `sequences`
/// (the vector's parameters: levels 1, 4, 8, three repetitions).
fn built_from(sequences: &str) -> String {
    use chit_core::keys::SecretKey;
    use chit_core::kinds::numeric_lineage::arithmetic::Bound;
    use chit_core::kinds::numeric_lineage::receipt::{sign, LevelRecord, Measurement, Numerics};
    let t = transcript(sequences);
    let set = sequences.lines().nth(1).unwrap();
    let set_doc = json::parse(set.as_bytes(), &Limits::default()).unwrap();
    let set_canonical = chit_core::canon::to_vec(
        set_doc.root().get("requests").unwrap(),
        chit_core::canon::Profile::Jcs,
    );
    let levels = [1u64, 4, 8]
        .iter()
        .enumerate()
        .map(|(l, &c)| LevelRecord {
            induced_concurrency: c,
            observed_in_flight_at_accept: c,
            observed_in_flight_at_complete: c,
            runs: t.runs(l as u64, 3).unwrap(),
            numerics: Numerics::default(),
        })
        .collect();
    let m = Measurement {
        lineage_id: "lineage-test-long".into(),
        salt_hex: t.salt.clone(),
        gateway: t.gateway.clone(),
        endpoint: t.endpoint.clone(),
        model: "m".into(),
        bound: Bound {
            committed_at: "2026-11-30T10:00:00Z".into(),
            max_differing_positions: 0,
            min_first_divergent_index: 0,
            max_distinct_sequences_per_level: 1,
            required_repetitions_per_level: 2,
        },
        request_set_canonical: set_canonical,
        request_count: t.request_count,
        max_output_tokens: t.max_tokens,
        levels,
        measured_at: "2026-11-30T10:01:00Z".into(),
        reroute: t.reroute.clone(),
    };
    let found = m.body("2026-11-30T10:05:00Z").unwrap();
    let seed: [u8; 32] = std::array::from_fn(|i| i as u8);
    sign(found.body, &SecretKey::from_seed(&seed), 1796033130)
        .unwrap()
        .to_string()
}

/// Issue 10, item 12: a sequence longer than its request's max_tokens is
/// what a hostile endpoint streams; a receipt over it fails L14 with the
/// transcript, even when every figure recomputes.
#[test]
fn a_sequence_longer_than_its_requests_max_tokens_fails_l14() {
    let honest = built_from(SEQUENCES);
    assert_eq!(
        rules(&honest, Some(&transcript(SEQUENCES))),
        Vec::<&str>::new()
    );
    // Request 1 asked for 2 tokens; every one of its sequences has more.
    let long = SEQUENCES.replacen(
        "\"prompt\": \"p1\", \"max_tokens\": 8",
        "\"prompt\": \"p1\", \"max_tokens\": 2",
        1,
    );
    assert_ne!(long, SEQUENCES);
    let receipt = built_from(&long);
    let t = transcript(&long);
    assert_eq!(rules(&receipt, None), Vec::<&str>::new());
    assert_eq!(rules(&receipt, Some(&t)), vec!["L14"]);
    let r = report(&receipt, Some(&t));
    let message = &r.errors[0].message;
    assert!(
        message.contains("request 1")
            && message.contains("more than its request's max_tokens of 2"),
        "{message}"
    );
}

/// The server's own occupancy lines are read and checked by nothing but
/// the L16 warning: a level the server never ran at its induced
/// concurrency is named; one it did is not; a malformed line is an error
/// naming its line.
#[test]
fn server_occupancy_lines_warn_l16_and_nothing_else() {
    let with = |line: &str| {
        let mut lines: Vec<&str> = SEQUENCES.lines().collect();
        lines.push(line);
        lines.join("\n")
    };
    let warnings = |text: &str| {
        let t = transcript(text);
        let r = report(RECEIPT, Some(&t));
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        r.warnings
    };
    // Level 2 induced 8: over 8 samples the server said 3 at most.
    let low = with(
        r#"{"server_occupancy": {"level": 2, "source": "http://h/slots", "max": 3, "samples": [[0, 3], [25, 3], [50, 2], [75, 3], [100, 3], [125, 1], [150, 3], [175, 3]]}}"#,
    );
    let w = warnings(&low);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].rule, "L16");
    assert_eq!(w[0].path, "/signed_body/levels/2");
    assert!(
        w[0].message.contains("at most 3") && w[0].message.contains("concurrency 8"),
        "{}",
        w[0].message
    );
    // Too few samples to judge: recorded, not warned of.
    let brief = with(
        r#"{"server_occupancy": {"level": 2, "source": "http://h/slots", "max": 3, "samples": [[0, 3]]}}"#,
    );
    assert!(warnings(&brief).is_empty());
    // It said 8: nothing to say.
    let full = with(
        r#"{"server_occupancy": {"level": 2, "source": "http://h/slots", "max": 8, "samples": [[0, 8]]}}"#,
    );
    assert!(warnings(&full).is_empty());
    // A line without its max is an error naming the line.
    let bad = with(r#"{"server_occupancy": {"level": 2, "source": "http://h/slots"}}"#);
    let err = Transcript::read(bad.as_bytes(), &Limits::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("server_occupancy"), "{err}");
}
