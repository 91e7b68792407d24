//! Differential test: chit against the reference verifier (verify.mjs) over
//! 8,000 generated run receipts.
//!
//! The reference's verdicts were recorded once by tools/parity/record.sh and
//! are committed in tests/data/run-receipts-reference.jsonl; the corpus is
//! regenerated here from the same seed and checked against the recorded
//! SHA-256 of each case, so a changed generator cannot pass silently. Every
//! case must get the same verdict and the same set of error and warning rule
//! ids, except the cases built to land on a documented difference, which must
//! differ in exactly the documented way.

use chit_core::{json::Limits, Context, Kind};
use serde_json::Value;
use std::collections::BTreeSet;

const SEED: u64 = 2026;
const COUNT: usize = 8000;

struct Verdict {
    valid: bool,
    errors: BTreeSet<String>,
    warnings: BTreeSet<String>,
}

impl std::fmt::Debug for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "valid={} errors={:?} warnings={:?}",
            self.valid, self.errors, self.warnings
        )
    }
}

fn recorded() -> Vec<(String, Verdict)> {
    let text = include_str!("data/run-receipts-reference.jsonl");
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let set = |k: &str| {
                v[k].as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap().to_string())
                    .collect()
            };
            (
                v["sha256"].as_str().unwrap().to_string(),
                Verdict {
                    valid: v["valid"].as_bool().unwrap(),
                    errors: set("errors"),
                    warnings: set("warnings"),
                },
            )
        })
        .collect()
}

fn chit(text: &str) -> Verdict {
    let ctx = Context {
        kind: Some(Kind::RunReceipt),
        limits: Limits::default(),
        ..Context::default()
    };
    match chit_core::check(text.as_bytes(), &ctx).map(|c| c.report) {
        Err(e) => Verdict {
            valid: false,
            errors: ["read".to_string()].into(),
            warnings: [format!("({e})")].into(),
        },
        Ok(r) => Verdict {
            valid: r.valid(),
            errors: r.errors.iter().map(|f| f.rule.to_string()).collect(),
            warnings: r.warnings.iter().map(|f| f.rule.to_string()).collect(),
        },
    }
}

/// Whether `ours` differs from `theirs` exactly as the documented difference
/// `tag` says it should.
fn documented(tag: &str, ours: &Verdict, theirs: &Verdict) -> bool {
    let with = |set: &BTreeSet<String>, rule: &str| {
        let mut s = set.clone();
        s.insert(rule.to_string());
        s
    };
    match tag {
        // The reference takes 2026-02-30 and 24:00:00 as real dates.
        "calendar-day" | "hour-24" => {
            !theirs.errors.contains("M3")
                && ours.errors == with(&theirs.errors, "M3")
                && !ours.valid
        }
        // The reference counts string lengths in UTF-16 units.
        "utf16-length" => {
            theirs.errors == with(&BTreeSet::new(), "schema") && !ours.errors.contains("schema")
        }
        // The reference lets keys named like Object.prototype members through.
        "prototype-key" => {
            !theirs.errors.contains("schema") && ours.errors == with(&BTreeSet::new(), "schema")
        }
        // The reference compares holdouts as one joined string.
        "holdout-join" => {
            !theirs.errors.contains("V3") && ours.errors == with(&theirs.errors, "V3")
        }
        _ => false,
    }
}

#[test]
fn chit_agrees_with_the_reference_verifier() {
    let recorded = recorded();
    assert_eq!(
        recorded.len(),
        COUNT,
        "the recording has {} cases",
        recorded.len()
    );
    let cases = chit_corpus::cases(SEED, COUNT);
    let mut mismatches = Vec::new();
    let mut stale = 0;
    let mut differences = 0;
    let mut valid = 0;
    for (id, (case, (sha, theirs))) in cases.iter().zip(&recorded).enumerate() {
        let digest = chit_core::digest::sha256_tagged(case.text.as_bytes());
        if digest.strip_prefix("sha256:") != Some(sha.as_str()) {
            stale += 1;
            continue;
        }
        let ours = chit(&case.text);
        valid += usize::from(ours.valid);
        let ok = match case.diff {
            None => {
                ours.valid == theirs.valid
                    && ours.errors == theirs.errors
                    && ours.warnings == theirs.warnings
            }
            Some(tag) => {
                differences += 1;
                documented(tag, &ours, theirs)
            }
        };
        if !ok {
            mismatches.push(format!(
                "case {id} ({}):\n  chit:      {ours:?}\n  reference: {theirs:?}\n  text: {}",
                case.diff.unwrap_or("no documented difference"),
                case.text.chars().take(3000).collect::<String>()
            ));
        }
    }
    assert_eq!(
        stale, 0,
        "{stale} generated cases no longer match the recording: the generator changed. \
         Re-record with tools/parity/record.sh PATH/TO/verify.mjs"
    );
    assert!(
        differences >= 100,
        "only {differences} documented-difference cases"
    );
    assert!(
        valid > 2000 && valid < COUNT - 2000,
        "{valid} valid cases: the corpus is lopsided"
    );
    assert!(
        mismatches.is_empty(),
        "{} of {COUNT} cases differ from the reference:\n{}",
        mismatches.len(),
        mismatches
            .iter()
            .take(8)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Every rule id of the format appears in the corpus, so parity covers them all.
#[test]
fn the_corpus_exercises_every_rule() {
    let mut seen = BTreeSet::new();
    for (_, v) in recorded() {
        seen.extend(v.errors);
        seen.extend(v.warnings);
    }
    for rule in [
        "schema", "S1", "S2", "S3", "S4", "S5", "V1", "V2", "V3", "V4", "V5", "T1", "T2", "T3",
        "T4", "T5", "G1", "C1", "C2", "C3", "C4", "C5", "M1", "M2", "M3", "D1", "D2",
    ] {
        assert!(seen.contains(rule), "no case breaks {rule}");
    }
}
