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
