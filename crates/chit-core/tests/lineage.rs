//! numeric.lineage against the public vector: the receipt alone (L1-L12),
//! with its sequences as transcript (L13-L15), and each rule broken.

use chit_core::kinds::lineage::{check_with, Context, Transcript};
use chit_core::{json, Kind, Limits};

const RECEIPT: &str = include_str!("data/lineage/coupled.receipt.json");
const SEQUENCES: &str = include_str!("data/lineage/coupled.sequences.jsonl");

fn rules(text: &str, transcript: Option<&Transcript>) -> Vec<&'static str> {
    let doc = json::parse(text.as_bytes(), &Limits::default()).unwrap();
    assert_eq!(Kind::detect(&doc), Some(Kind::Lineage));
    let r = check_with(
        doc.root(),
        Context {
            trust: None,
            transcript,
        },
    );
    r.errors.iter().map(|f| f.rule).collect()
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
        .contains("recorded twice"));
}

/// chit's builder, fed the vector's sequences and parameters, writes the
/// vector's receipt: the same digest and the same signature.
#[test]
fn the_builder_reproduces_the_vector() {
    use chit_core::keys::SecretKey;
    use chit_core::lineage::{sign, Bound, LevelRecord, Measurement, Numerics};
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
