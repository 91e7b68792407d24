//! Run receipts: consistent ones, the fixed case sequence for the parity
//! test, and the cases built to land on a documented difference from the
//! reference verifier.

use crate::{mutate, spell, Rng};
use chit_core::kinds::run_receipt;
use serde_json::{json, Map, Value};
use std::fmt::Write;

/// One generated case: the receipt's text and, for a case built to land on
/// a documented difference from the reference, that difference's tag.
pub struct Case {
    pub text: String,
    pub diff: Option<&'static str>,
}

/// The documented differences a case may be built to land on (see the
/// docs/compatibility.md).
pub const DIFFS: &[&str] = &[
    "calendar-day",
    "hour-24",
    "utf16-length",
    "prototype-key",
    "holdout-join",
];

/// `n` cases from `seed`. The same arguments give the same cases, byte for
/// byte, on every machine.
pub fn cases(seed: u64, n: usize) -> Vec<Case> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| {
            // One case in 50 lands on a documented difference.
            if i % 50 == 49 {
                let tag = DIFFS[(i / 50) % DIFFS.len()];
                let mut v = consistent(&mut rng);
                differ(&mut v, tag, &mut rng);
                Case {
                    text: spell(&v, &mut rng),
                    diff: Some(tag),
                }
            } else {
                let v = receipt(&mut rng);
                Case {
                    text: spell(&v, &mut rng),
                    diff: None,
                }
            }
        })
        .collect()
}

/// A receipt: consistent, or broken by up to three mutations.
pub fn receipt(rng: &mut Rng) -> Value {
    let mut v = consistent(rng);
    let digest_first = rng.chance(0.5);
    let with_digest = rng.chance(0.7);
    let mutations = match rng.below(10) {
        0..=2 => 0,
        3..=7 => 1,
        8 => 2,
        _ => 3,
    };
    if with_digest && digest_first {
        seal(&mut v);
    }
    for _ in 0..mutations {
        mutate(&mut v, rng);
    }
    if with_digest && !digest_first {
        seal(&mut v);
    }
    v
}

/// Sets the receipt's digest from its current contents.
pub fn seal(v: &mut Value) {
    if let Some(d) = run_receipt::digest(as_doc(v).root()) {
        if let Some(o) = v.as_object_mut() {
            o.insert("digest".into(), Value::String(d));
        }
    }
}

const NAMES: &[&str] = &[
    "Claude",
    "Gemini",
    "ChatGPT",
    "Grok",
    "Llama",
    "Mistral",
    "DeepSeek",
    "Qwen",
    "Zoë",
    "模型",
    "😂bot",
    "a\"b/c",
    "tab\tname",
    "Ω-7",
    "r\u{2028}x",
    "Kimi",
    "דּ",
    "\u{1F600}\u{FB33}",
    "10",
    "1",
];
const MODELS: &[&str] = &[
    "claude-sonnet-5-5",
    "gemini-3-pro",
    "gpt-5.2",
    "grok-4",
    "llama-5-70b",
    "local/qwen3:32b",
];
pub(crate) const STANCES: &[&str] = &[
    "agreed",
    "agreed",
    "agreed",
    "objected",
    "silent",
    "unavailable",
];
const COMMANDS: &[&str] = &[
    "npm test",
    "cargo test --workspace",
    "pytest -q",
    "curl -fsS https://staging.example.com/healthz",
    "make check",
    "go vet ./...",
    "echo \"done\" | tee log",
    "grep -r 'TODO' src/",
    "ls C:\\work",
];

fn money(rng: &mut Rng) -> f64 {
    match rng.below(5) {
        0 => 0.0,
        1 => rng.range(0, 300) as f64 / 100.0,
        _ => rng.range(0, 2_000_000) as f64 / 10_000.0,
    }
}

fn timestamp(rng: &mut Rng) -> String {
    let month = rng.range(1, 12);
    let dim = match month {
        4 | 6 | 9 | 11 => 30,
        2 => 28,
        _ => 31,
    };
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        rng.range(1990, 2099),
        month,
        rng.range(1, dim),
        rng.range(0, 23),
        rng.range(0, 59),
        rng.range(0, 59)
    );
    if rng.chance(0.2) {
        let digits = rng.range(1, 3) as usize;
        let frac = rng.range(0, 999);
        let _ = write!(
            s,
            ".{:0width$}",
            frac % 10i64.pow(digits as u32),
            width = digits
        );
    }
    s.push('Z');
    s
}

/// A receipt that satisfies the schema and every rule (it may carry the
/// warnings C5 and M1, and D2 since it has no digest yet).
pub fn consistent(rng: &mut Rng) -> Value {
    let n_rev = *rng.pick(&[0usize, 1, 1, 2, 2, 2, 3, 3, 4, 5, 7]);
    let mut pool: Vec<&str> = NAMES.to_vec();
    let mut take_name = |rng: &mut Rng| {
        let i = rng.below(pool.len() as u64) as usize;
        pool.swap_remove(i)
    };
    let mut seats = Vec::new();
    let lead_name = take_name(rng);
    for r in 0..=n_rev {
        let name = if r == 0 { lead_name } else { take_name(rng) };
        let errors = rng.range(0, 3);
        let mut s = Map::new();
        s.insert("name".into(), name.into());
        s.insert(
            "role".into(),
            if r == 0 { "lead" } else { "reviewer" }.into(),
        );
        s.insert("model".into(), (*rng.pick(MODELS)).into());
        if rng.chance(0.5) {
            s.insert(
                "family".into(),
                (*rng.pick(&["claude", "gemini", "openai", "xai"])).into(),
            );
        }
        s.insert("turns".into(), rng.range(0, 12).into());
        s.insert("errors".into(), errors.into());
        s.insert("timeouts".into(), rng.range(0, errors).into());
        s.insert("durationMs".into(), rng.range(0, 900_000).into());
        let basis = *rng.pick(&["", "metered", "subscription", "unpriced"]);
        let cost = if basis == "subscription" || basis == "unpriced" {
            0.0
        } else {
            money(rng)
        };
        s.insert("costUsd".into(), json!(cost));
        if !basis.is_empty() {
            s.insert("costBasis".into(), basis.into());
        }
        if r > 0 {
            s.insert("stance".into(), (*rng.pick(STANCES)).into());
        }
        if r > 0 && rng.chance(0.3) {
            s.insert("commandsVisible".into(), rng.chance(0.5).into());
        }
        seats.push(Value::Object(s));
    }
    let reviewers: Vec<&Value> = seats[1..].iter().collect();
    let stance = |s: &Value| s["stance"].as_str().unwrap_or("").to_string();
    let agreed = reviewers.iter().filter(|s| stance(s) == "agreed").count() as i64;
    let answered = reviewers
        .iter()
        .filter(|s| stance(s) != "unavailable")
        .count() as i64;
    let hidden = reviewers
        .iter()
        .filter(|s| s["commandsVisible"] == json!(false))
        .count() as i64;

    // Totals first: the verdict depends on failingNow.
    let verifiers = if answered > 0 && rng.chance(0.8) {
        rng.range(0, answered)
    } else {
        0
    };
    let ran = if verifiers > 0 { rng.range(1, 40) } else { 0 };
    let passed = rng.range(0, ran);
    let failed = rng.range(0, ran - passed);
    let expected = rng.range(0, ran - passed - failed);
    let failing_now = if rng.chance(0.6) {
        0
    } else {
        rng.range(0, failed)
    };
    let resolved = rng.range(0, failed - failing_now);
    let contradicted = if answered > 0 && rng.chance(0.1) {
        rng.range(1, answered)
    } else {
        0
    };
    let mut totals = Map::new();
    totals.insert("reviewers".into(), answered.into());
    totals.insert("verifiers".into(), verifiers.into());
    if rng.chance(0.6) {
        totals.insert(
            "notVisible".into(),
            rng.range(0, hidden.min(answered)).into(),
        );
    }
    totals.insert("contradicted".into(), contradicted.into());
    totals.insert("ran".into(), ran.into());
    totals.insert("passed".into(), passed.into());
    totals.insert("failed".into(), failed.into());
    totals.insert("failingNow".into(), failing_now.into());
    if rng.chance(0.5) {
        totals.insert("expected".into(), expected.into());
    }
    if rng.chance(0.5) {
        totals.insert("resolved".into(), resolved.into());
    }
    if rng.chance(0.6) {
        totals.insert("filesChanged".into(), (*rng.pick(&[0, 0, 1, 3, 12])).into());
    }

    let verdict = if n_rev == 0 {
        Value::Null
    } else {
        let may_agree =
            answered > 0 && agreed == answered && (answered == n_rev as i64 || failing_now == 0);
        let counted = if agreed * 2 > n_rev as i64 {
            "majority"
        } else {
            "none"
        };
        let outcome = if may_agree && rng.chance(0.85) {
            "agreed"
        } else {
            counted
        };
        let mut holdouts: Vec<Value> = reviewers
            .iter()
            .filter(|s| stance(s) != "agreed")
            .map(|s| json!({"name": s["name"], "stance": s["stance"]}))
            .collect();
        if rng.chance(0.5) {
            holdouts.reverse();
        }
        json!({
            "outcome": outcome,
            "agreed": agreed,
            "reviewers": if outcome == "agreed" { answered } else { n_rev as i64 },
            "holdouts": holdouts,
        })
    };

    let names: Vec<Value> = seats.iter().map(|s| s["name"].clone()).collect();
    let n_checks = if rng.chance(0.1) {
        ran + 1
    } else {
        rng.range(0, ran.min(12))
    };
    let checks: Vec<Value> = (0..n_checks).map(|_| check(rng, &names)).collect();

    let seat_sum = seats
        .iter()
        .fold(0.0, |n, s| n + s["costUsd"].as_f64().unwrap_or(0.0));
    let cost = if rng.chance(0.1) {
        seat_sum + 0.5
    } else {
        seat_sum
    };
    let duration = rng.range(0, 3_600_000);

    let mut o = Map::new();
    o.insert("receiptVersion".into(), "0.1".into());
    if rng.chance(0.5) {
        o.insert(
            "id".into(),
            format!("run-{}", rng.next_u64() % 1_000_000).into(),
        );
    }
    let mut producer = json!({"name": "chit-corpus"});
    if rng.chance(0.5) {
        producer["version"] = "0.1.0".into();
    }
    o.insert("producer".into(), producer);
    o.insert("endedAt".into(), timestamp(rng).into());
    match rng.below(3) {
        0 => {}
        1 => {
            o.insert("revision".into(), Value::Null);
        }
        _ => {
            o.insert("revision".into(), "4f1c2ab90d3e".into());
        }
    }
    o.insert("durationMs".into(), duration.into());
    if rng.chance(0.6) {
        o.insert("firstReplyMs".into(), rng.range(0, duration).into());
    }
    o.insert("tokens".into(), rng.range(0, 2_000_000).into());
    o.insert("costUsd".into(), json!(cost));
    o.insert("seats".into(), Value::Array(seats));
    o.insert("verdict".into(), verdict);
    o.insert("checks".into(), Value::Array(checks));
    o.insert("totals".into(), Value::Object(totals));
    let gaps: Vec<Value> = (0..rng.range(0, 4))
        .map(|_| {
            (*rng.pick(&[
                "Behaviour under production load",
                "Windows",
                "Nothing ran on ARM 🦾",
                "i18n: «ünïcödé»",
            ]))
            .into()
        })
        .collect();
    o.insert("grade".into(), "unverified".into());
    o.insert("gaps".into(), Value::Array(gaps));
    let mut v = Value::Object(o);
    v["grade"] = grade(&v).into();
    v
}

fn grade(v: &Value) -> &'static str {
    let doc = as_doc(v);
    let view = run_receipt::Receipt::view(doc.root())
        .expect("a consistent receipt has the schema's shape");
    run_receipt::grade_of(&view.totals)
}

/// `v` as chit reads it: written out and parsed back (leaked, so the
/// document can borrow its text; the generator runs briefly).
fn as_doc(v: &Value) -> chit_core::Doc<'static> {
    let text: &'static [u8] = Box::leak(
        serde_json::to_vec(v)
            .expect("a Value serialises")
            .into_boxed_slice(),
    );
    chit_core::json::parse(text, &chit_core::Limits::default()).expect("a Value reads back")
}

fn check(rng: &mut Rng, names: &[Value]) -> Value {
    let mut c = Map::new();
    c.insert(
        "by".into(),
        if rng.chance(0.1) {
            Value::Null
        } else {
            rng.pick(names).clone()
        },
    );
    if rng.chance(0.2) {
        let k = rng.range(1, 4);
        c.insert(
            "alsoBy".into(),
            Value::Array((0..k).map(|_| rng.pick(names).clone()).collect()),
        );
    }
    if rng.chance(0.5) {
        c.insert("purpose".into(), "Run the unit tests".into());
    }
    c.insert("command".into(), (*rng.pick(COMMANDS)).into());
    let (exit, state): (Value, &str) = match rng.below(6) {
        0 | 1 => (json!(0), "checked"),
        2 => {
            // Now and then an exit code past 2^53, where a digest depends on
            // writing the double as ECMAScript does.
            let code = match rng.below(8) {
                0 => json!(rng.range(1 << 53, i64::MAX)),
                1 => json!(u64::MAX - rng.below(1 << 20)),
                2 => json!(1e300),
                _ => json!(rng.range(1, 255)),
            };
            (code, *rng.pick(&["checked", "reproduced", "blocked"]))
        }
        3 => (Value::Null, *rng.pick(&["unknown", "untested"])),
        4 => (
            Value::Null,
            *rng.pick(&["checked", "blocked", "reproduced"]),
        ),
        _ => (json!(-rng.range(1, 9)), "reproduced"),
    };
    c.insert("exitCode".into(), exit);
    if rng.chance(0.4) {
        c.insert(
            "result".into(),
            (*rng.pick(&["42 passing", "", "error: E0425", "ok"])).into(),
        );
    }
    if rng.chance(0.3) {
        c.insert(
            "revision".into(),
            if rng.chance(0.5) {
                Value::Null
            } else {
                "4f1c2ab".into()
            },
        );
    }
    c.insert(
        "where".into(),
        (*rng.pick(&["local", "ci", "cloud", "other"])).into(),
    );
    c.insert("deployed".into(), rng.chance(0.2).into());
    c.insert(
        "missingSetup".into(),
        if state == "blocked" {
            "a database".into()
        } else {
            Value::Null
        },
    );
    c.insert("state".into(), state.into());
    if rng.chance(0.4) {
        c.insert("durationMs".into(), rng.range(0, 60_000).into());
    }
    Value::Object(c)
}

/// Builds the case for a documented difference `tag` from a consistent receipt.
fn differ(v: &mut Value, tag: &str, rng: &mut Rng) {
    match tag {
        "calendar-day" => {
            v["endedAt"] = (*rng.pick(&[
                "2026-02-30T12:00:00Z",
                "2026-04-31T00:00:00Z",
                "2025-02-29T08:30:00Z",
                "2026-11-31T23:59:59.9Z",
            ]))
            .into()
        }
        "hour-24" => {
            v["endedAt"] = (*rng.pick(&["2026-01-01T24:00:00Z", "2026-06-30T24:00:00.000Z"])).into()
        }
        "utf16-length" => {
            // 150 emoji: 150 code points (JSON Schema: within 200), 300 UTF-16 units.
            v["gaps"] = json!(["🦾".repeat(rng.range(101, 200) as usize)]);
        }
        "prototype-key" => {
            let key = *rng.pick(&[
                "constructor",
                "toString",
                "hasOwnProperty",
                "valueOf",
                "__proto__",
            ]);
            if let Some(o) = v.as_object_mut() {
                o.insert(key.into(), json!("x"));
            }
        }
        _ => {
            // "holdout-join": holdouts that only match the reviewers once
            // joined into one string.
            let seats = json!([
                {"name": "Lead", "role": "lead", "model": "m", "turns": 1, "errors": 0, "timeouts": 0, "durationMs": 1, "costUsd": 0},
                {"name": "x", "role": "reviewer", "model": "m", "turns": 1, "errors": 0, "timeouts": 0, "durationMs": 1, "costUsd": 0, "stance": "objected"},
                {"name": "y", "role": "reviewer", "model": "m", "turns": 1, "errors": 0, "timeouts": 0, "durationMs": 1, "costUsd": 0, "stance": "silent"}
            ]);
            v["seats"] = seats;
            v["costUsd"] = json!(0);
            v["checks"] = json!([]);
            v["verdict"] = json!({"outcome": "none", "agreed": 0, "reviewers": 2,
                "holdouts": [{"name": "x\u{0}objected\ny", "stance": "silent"}]});
            v["totals"] = json!({"reviewers": 2, "verifiers": 0, "contradicted": 0, "ran": 0, "passed": 0, "failed": 0, "failingNow": 0});
            v["grade"] = "unverified".into();
        }
    }
    if rng.chance(0.5) {
        seal(v);
    }
}
