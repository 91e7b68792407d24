//! chit against Lattice's own validator over 6,000 generated cases (seed
//! 2026): sealed packets and packets broken one way each. Lattice's
//! verdicts were recorded once by `tools/parity/lattice-record.sh` from a
//! checkout of kitepon/Lattice (its code is not in this repository) into
//! `tests/data/lattice-reference.jsonl`. chit must give the same verdict on
//! every case, and the rule that decides it must be the one the mutation
//! breaks.

use chit_core::across::Origin;
use chit_core::kinds::executor_packet as xp;
use std::collections::BTreeMap;

const SEED: u64 = 2026;
const REFERENCE: &str = include_str!("data/lattice-reference.jsonl");

#[test]
fn chit_and_lattice_agree_on_every_case() {
    let reference: Vec<serde_json::Value> = REFERENCE
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let cases = chit_corpus::lattice_cases(SEED, reference.len());
    assert_eq!(cases.len(), 6000);
    let mut seen: BTreeMap<&str, (usize, bool)> = BTreeMap::new();
    let mut mismatches = Vec::new();
    for (case, want) in cases.iter().zip(&reference) {
        assert_eq!(
            want["mutation"], case.mutation,
            "the generator changed: re-record with tools/parity/lattice-record.sh"
        );
        let checked = xp::check_bytes(case.text.as_bytes(), Origin::new("case", None));
        let (valid, rules): (bool, Vec<&str>) = match &checked {
            Ok(c) => (
                c.report.valid(),
                c.report.errors.iter().map(|f| f.rule).collect(),
            ),
            Err(_) => (false, vec!["read"]),
        };
        if Some(valid) != want["valid"].as_bool() {
            mismatches.push(format!(
                "{} {}: chit {valid} {rules:?}",
                want["id"], case.mutation
            ));
        }
        // The rule that decides each mutation.
        let expected: &[&str] = match case.mutation {
            "none" | "trailing-lf" | "lone-surrogate" | "forbidden-ops" | "big-numbers" => &[],
            "two-lf" | "space" | "key-order" | "minus-zero" | "upper-escape" => &["X2"],
            "packet-digest" => &["X4"],
            "task-ref" => &["X3", "X4"],
            "epoch-fraction" | "extra-key" | "bad-id" => &["schema"],
            "duplicate-key" | "truncated" => &["read"],
            other => panic!("unknown mutation {other}"),
        };
        assert!(
            expected.iter().all(|r| rules.contains(r)) && (valid == expected.is_empty()),
            "{} {}: {rules:?}",
            want["id"],
            case.mutation
        );
        seen.entry(case.mutation).or_default().0 += 1;
        seen.entry(case.mutation).or_default().1 |= valid;
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches: {:?}",
        mismatches.len(),
        &mismatches[..mismatches.len().min(10)]
    );
    // Every mutation occurs often.
    assert_eq!(seen.len(), 17, "{seen:?}");
    assert!(seen.values().all(|(n, _)| *n > 100), "{seen:?}");
}
