//! Generated run receipts, for chit's parity test against the reference
//! verifier and for its benchmarks.
//!
//! [`cases`] is a fixed sequence for a given seed: random receipts that
//! satisfy every rule, then mutations that break rules one, two or three at
//! a time, written out with random key orders, whitespace, string escapes
//! and number spellings (`1.0`, `1e3`, `-0`, `4312e-4`). A few cases are
//! built to land on a documented difference from the reference verifier;
//! they carry its tag.

use chit_core::kinds::run_receipt;
use serde_json::{json, Map, Value};
use std::fmt::Write;

/// SplitMix64: small, fast and fixed forever for a given seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

/// One generated case: the receipt's text and, for a case built to land on
/// a documented difference from the reference, that difference's tag.
pub struct Case {
    pub text: String,
    pub diff: Option<&'static str>,
}

/// The documented differences a case may be built to land on (see the
/// README's Compatibility section).
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
const STANCES: &[&str] = &[
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

fn reviewer_indices(v: &Value) -> Vec<usize> {
    v["seats"]
        .as_array()
        .map(|s| {
            s.iter()
                .enumerate()
                .filter(|(_, s)| s["role"] == "reviewer")
                .map(|(i, _)| i)
                .collect()
        })
        .unwrap_or_default()
}

fn random_path(v: &Value, rng: &mut Rng) -> Vec<String> {
    // A random member somewhere in the document.
    let mut path = Vec::new();
    let mut at = v;
    loop {
        let next = match at {
            Value::Object(o) if !o.is_empty() && (path.is_empty() || rng.chance(0.6)) => {
                let k = o
                    .keys()
                    .nth(rng.below(o.len() as u64) as usize)
                    .cloned()
                    .unwrap_or_default();
                let child = &o[&k];
                path.push(k);
                child
            }
            Value::Array(a) if !a.is_empty() && rng.chance(0.7) => {
                let i = rng.below(a.len() as u64) as usize;
                path.push(i.to_string());
                &a[i]
            }
            _ => return path,
        };
        at = next;
    }
}

fn at_path<'a>(v: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut at = v;
    for p in path {
        at = match at {
            Value::Object(o) => o.get_mut(p)?,
            Value::Array(a) => a.get_mut(p.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

/// Breaks the receipt in one random way: a schema violation, a rule
/// violation, or a random change that may break anything or nothing.
pub fn mutate(v: &mut Value, rng: &mut Rng) {
    // An earlier mutation may have broken the structure the edits below
    // index into; such a receipt is broken enough already.
    if !shape_ok(v) {
        return;
    }
    let revs = reviewer_indices(v);
    let n_seats = v["seats"].as_array().map_or(0, Vec::len);
    let n_checks = v["checks"].as_array().map_or(0, Vec::len);
    let seat = rng.below(n_seats.max(1) as u64) as usize;
    let chk = rng.below(n_checks.max(1) as u64) as usize;
    let bump = |x: &Value, d: i64| json!(x.as_i64().unwrap_or(0) + d);
    match rng.below(44) {
        // ── schema ──
        0 => {
            let path = random_path(v, rng);
            if let Some((last, parent)) = path.split_last() {
                if let Some(Value::Object(o)) = at_path(v, parent) {
                    o.remove(last);
                }
            }
        }
        1 => {
            let path = random_path(v, rng);
            if let Some(Value::Object(o)) = at_path(v, &path) {
                o.insert(
                    (*rng.pick(&["extra", "prompt", "email", "Grade"])).into(),
                    json!(1),
                );
            }
        }
        2 => {
            let path = random_path(v, rng);
            if let Some(x) = at_path(v, &path) {
                *x = rng
                    .pick(&[
                        json!(-1),
                        json!("7"),
                        json!(1.5),
                        json!(null),
                        json!([]),
                        json!({}),
                        json!(true),
                        json!(1e9),
                        json!(""),
                        json!(100001),
                    ])
                    .clone();
            }
        }
        3 => v["durationMs"] = json!(86_400_001),
        4 => {
            v["endedAt"] = (*rng.pick(&[
                "2026-1-1T00:00:00Z",
                "2026-01-01 00:00:00Z",
                "2026-01-01T00:00:00+00:00",
                "2026-01-01T00:00:00.1234Z",
                "yesterday",
                "２０２６-01-01T00:00:00Z",
            ]))
            .into()
        }
        5 => v["grade"] = (*rng.pick(&["great", "Verified", ""])).into(),
        6 => v["receiptVersion"] = (*rng.pick(&["0.2", "1"])).into(),
        7 => v["seats"] = json!([]),
        8 => {
            if n_checks > 0 {
                v["checks"][chk]["command"] = "x".repeat(301).into();
            } else {
                v["gaps"] = json!([""]);
            }
        }
        9 => v["tokens"] = json!(2_000_000_001u64),
        // ── seats ──
        10 => {
            if n_seats > 1 {
                let other = (seat + 1) % n_seats;
                v["seats"][other]["name"] = v["seats"][seat]["name"].clone();
            }
        }
        11 => {
            v["seats"][0]["role"] = "reviewer".into();
            v["seats"][0]["stance"] = "agreed".into();
        }
        12 => {
            v["seats"][seat]["errors"] = json!(0);
            v["seats"][seat]["timeouts"] = json!(rng.range(1, 3));
        }
        13 => {
            if let Some(&r) = revs.first() {
                if let Some(o) = v["seats"][r].as_object_mut() {
                    o.remove("stance");
                }
            } else {
                v["seats"][0]["stance"] = "objected".into();
            }
        }
        14 => {
            v["seats"][seat]["costBasis"] = (*rng.pick(&["subscription", "unpriced"])).into();
            v["seats"][seat]["costUsd"] = json!(0.25);
        }
        // ── verdict ──
        15 => {
            v["verdict"] = if v["verdict"].is_null() {
                json!({"outcome": "none", "agreed": 0, "reviewers": 0, "holdouts": []})
            } else {
                Value::Null
            }
        }
        16 => {
            if v["verdict"].is_object() {
                v["verdict"]["agreed"] = bump(&v["verdict"]["agreed"], *rng.pick(&[1, -1]));
            }
        }
        17 => {
            let lead = v["seats"][0]["name"].clone();
            if let Some(h) = v["verdict"]["holdouts"].as_array_mut() {
                match (h.is_empty(), rng.below(3)) {
                    (false, 0) => {
                        h.pop();
                    }
                    (false, 1) => {
                        let stance = if h[0]["stance"] == "silent" {
                            "objected"
                        } else {
                            "silent"
                        };
                        h[0]["stance"] = stance.into();
                    }
                    _ => h.push(json!({"name": lead, "stance": "objected"})),
                }
            }
        }
        18 => {
            if v["verdict"].is_object() {
                v["verdict"]["outcome"] = (*rng.pick(&["agreed", "majority", "none"])).into();
            }
        }
        19 => {
            if v["verdict"].is_object() {
                v["verdict"]["reviewers"] = bump(&v["verdict"]["reviewers"], *rng.pick(&[1, -1]));
            }
        }
        20 => {
            // An unavailable reviewer and a failing check under an agreed outcome.
            if let Some(&r) = revs.last() {
                v["seats"][r]["stance"] = "unavailable".into();
                v["totals"]["failingNow"] = json!(1);
                v["totals"]["failed"] = json!(1);
            }
        }
        // ── totals ──
        21 => v["totals"]["reviewers"] = bump(&v["totals"]["reviewers"], *rng.pick(&[1, -1])),
        22 => v["totals"]["verifiers"] = bump(&v["totals"]["reviewers"], 1),
        23 => v["totals"]["notVisible"] = bump(&v["totals"]["reviewers"], rng.range(0, 1)),
        24 => v["totals"]["contradicted"] = bump(&v["totals"]["reviewers"], 1),
        25 => v["totals"]["passed"] = bump(&v["totals"]["ran"], 1),
        26 => v["totals"]["failingNow"] = bump(&v["totals"]["failed"], 1),
        27 => v["totals"]["resolved"] = bump(&v["totals"]["failed"], 1),
        28 => {
            if v["totals"]["ran"] == json!(0) {
                v["totals"]["ran"] = json!(3);
            } else {
                v["totals"]["verifiers"] = json!(0);
            }
        }
        // ── grade ──
        29 => {
            v["grade"] = (*rng.pick(&[
                "failed",
                "verified",
                "partial",
                "reviewed",
                "not-visible",
                "unverified",
            ]))
            .into()
        }
        // ── checks ──
        30 => {
            if n_checks > 0 {
                if rng.chance(0.5) {
                    v["checks"][chk]["by"] = "Nobody".into();
                } else {
                    v["checks"][chk]["alsoBy"] = json!(["Ghost"]);
                }
            }
        }
        31 => {
            if n_checks > 0 {
                v["checks"][chk]["exitCode"] = json!(0);
                v["checks"][chk]["state"] =
                    (*rng.pick(&["reproduced", "unknown", "blocked"])).into();
            }
        }
        32 => {
            if n_checks > 0 {
                let blocked = v["checks"][chk]["state"] == "blocked";
                v["checks"][chk]["missingSetup"] = if blocked {
                    Value::Null
                } else {
                    "a token".into()
                };
            }
        }
        33 => {
            if n_checks > 0 {
                v["checks"][chk]["state"] = (*rng.pick(&["unknown", "untested"])).into();
                v["checks"][chk]["exitCode"] = json!(rng.range(0, 2));
                v["checks"][chk]["missingSetup"] = Value::Null;
            }
        }
        34 => v["totals"]["ran"] = json!(0),
        // ── money and time ──
        35 => {
            v["costUsd"] = json!(
                v["costUsd"].as_f64().unwrap_or(0.0) + *rng.pick(&[0.011, 0.02, -0.009, 0.0101])
            )
        }
        36 => {
            let d = v["durationMs"].as_i64().unwrap_or(0);
            v["firstReplyMs"] = json!(d + rng.range(1, 10));
        }
        37 => {
            v["endedAt"] = (*rng.pick(&[
                "2026-13-01T00:00:00Z",
                "2026-00-10T10:00:00Z",
                "2026-01-32T00:00:00Z",
                "2026-01-01T25:00:00Z",
                "2026-01-01T23:60:00Z",
                "2026-01-01T23:59:60Z",
            ]))
            .into()
        }
        // ── digest ──
        38 => {
            v["digest"] =
                "sha256:0000000000000000000000000000000000000000000000000000000000000000".into()
        }
        39 => {
            if let Some(o) = v.as_object_mut() {
                o.remove("digest");
            }
        }
        40 => v["digest"] = (*rng.pick(&["sha256:ABC", "md5:00", "sha256:", ""])).into(),
        // ── random numbers anywhere ──
        41 => {
            let path = random_path(v, rng);
            if let Some(x) = at_path(v, &path) {
                if x.is_number() {
                    *x = json!(rng.range(0, 6));
                }
            }
        }
        42 => {
            // A stance change that the verdict does not follow.
            if let Some(&r) = revs.get(rng.below(revs.len().max(1) as u64) as usize) {
                v["seats"][r]["stance"] = (*rng.pick(STANCES)).into();
            }
        }
        _ => {
            // A plausible edit to the figures after the fact.
            v["totals"]["failingNow"] = json!(0);
            v["grade"] = "verified".into();
        }
    }
}

/// Whether `v` has the structure [`mutate`] indexes into: seats a non-empty
/// array of objects, checks an array of objects, totals an object, and a
/// verdict that is null or an object.
fn shape_ok(v: &Value) -> bool {
    let objects = |x: &Value, non_empty: bool| {
        x.as_array()
            .is_some_and(|a| (!non_empty || !a.is_empty()) && a.iter().all(Value::is_object))
    };
    v.is_object()
        && objects(&v["seats"], true)
        && objects(&v["checks"], false)
        && v["totals"].is_object()
        && (v["verdict"].is_null() || v["verdict"].is_object())
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

/// Writes `v` as JSON text with random key order, whitespace, escapes and
/// number spellings. The text always reads back to the same value.
pub fn spell(v: &Value, rng: &mut Rng) -> String {
    let mut out = String::with_capacity(2048);
    let pretty = rng.chance(0.3);
    write_value(v, rng, pretty, 0, &mut out);
    out
}

fn write_value(v: &Value, rng: &mut Rng, pretty: bool, level: usize, out: &mut String) {
    let nl = |out: &mut String, level: usize| {
        if pretty {
            out.push('\n');
            for _ in 0..level {
                out.push_str("  ");
            }
        }
    };
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(n, rng, out),
        Value::String(s) => write_string(s, rng, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                nl(out, level + 1);
                write_value(x, rng, pretty, level + 1, out);
            }
            if !a.is_empty() {
                nl(out, level);
            }
            out.push(']');
        }
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            if rng.chance(0.6) {
                for i in (1..keys.len()).rev() {
                    keys.swap(i, rng.below(i as u64 + 1) as usize);
                }
            }
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                nl(out, level + 1);
                write_string(k, rng, out);
                out.push_str(if pretty { ": " } else { ":" });
                write_value(&o[k.as_str()], rng, pretty, level + 1, out);
            }
            if !keys.is_empty() {
                nl(out, level);
            }
            out.push('}');
        }
    }
}

fn write_number(n: &serde_json::Number, rng: &mut Rng, out: &mut String) {
    if let Some(i) = n.as_i64() {
        if !rng.chance(0.15) {
            let _ = write!(out, "{i}");
            return;
        }
        let _ = match rng.below(5) {
            0 => write!(out, "{i}.0"),
            1 => write!(out, "{i}e0"),
            2 if i == 0 => write!(out, "-0"),
            2 => write!(out, "{i}00E-2"),
            3 if i % 10 == 0 && i != 0 => write!(out, "{}e1", i / 10),
            3 => write!(out, "{i}.000"),
            _ => write!(out, "{i}E+0"),
        };
        return;
    }
    let x = n.as_f64().unwrap_or(0.0);
    let plain = format!("{x:?}");
    if !rng.chance(0.2) {
        out.push_str(&plain);
        return;
    }
    let _ = match (rng.below(3), scaled_by_10k(x)) {
        (0, _) if plain.contains('.') && !plain.contains('e') => write!(out, "{plain}0"),
        (1, _) => write!(out, "{x:e}"),
        (_, Some(scaled)) => write!(out, "{scaled}E-4"),
        _ => write!(out, "{plain}"),
    };
}

/// `x` × 10⁴ written as an integer when `x` is a short plain decimal, so
/// that `{that}E-4` spells the same number (`0.4312` → `4312`).
fn scaled_by_10k(x: f64) -> Option<String> {
    let s = format!("{x:?}");
    let (sign, body) = match s.strip_prefix('-') {
        Some(b) => ("-", b),
        None => ("", s.as_str()),
    };
    let (int, frac) = body.split_once('.')?;
    if frac.len() > 4
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let digits = format!("{int}{frac:0<4}");
    let t = digits.trim_start_matches('0');
    Some(format!("{sign}{}", if t.is_empty() { "0" } else { t }))
}

fn write_string(s: &str, rng: &mut Rng, out: &mut String) {
    out.push('"');
    let escape_some = rng.chance(0.1);
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str(if escape_some { "\\u0009" } else { "\\t" }),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            '/' if escape_some => out.push_str("\\/"),
            c if escape_some && rng.chance(0.3) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{:04X}", u);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Packet `seq` of a stream, signed with `key` into a one-line DSSE envelope
/// carrying a Treeship receipt statement.
pub fn signed_packet(key: &chit_core::keys::SecretKey, stream: &str, seq: u64) -> String {
    let digest = |tag: u64| format!("sha256:{:064x}", tag);
    let prev = if seq == 0 {
        Value::Null
    } else {
        format!("pkt-{}", seq - 1).into()
    };
    let statement = json!({
        "type": "treeship/receipt/v1",
        "timestamp": "2026-11-30T09:00:00Z",
        "system": "system://bench",
        "kind": "verification.packet.v1",
        "payload": {
            "schema": "verification.packet.v1",
            "packet_id": format!("pkt-{seq}"),
            "stream_id": stream,
            "sequence": seq,
            "prev_packet_id": prev,
            "model_digest": digest(0xa1),
            "input_digest": digest(seq * 2),
            "output_digest": digest(seq * 2 + 1),
            "reproducibility": "bit_exact",
            "produced_at": chit_core::time::format_unix_utc(1_796_025_600 + seq),
            "token_count": 17
        }
    });
    let env = chit_core::envelope::Envelope::sign(
        chit_core::envelope::TREESHIP_RECEIPT,
        serde_json::to_vec(&statement).expect("a Value serialises"),
        key,
    );
    let compact: Value = serde_json::from_str(&env.to_json()).expect("an envelope reads back");
    compact.to_string()
}

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

/// Overhead figures for one level of a measured transcript, microseconds.
pub struct Overhead {
    pub level: u64,
    /// The smallest in-flight count at accept among the level's requests.
    pub in_flight: u64,
    /// gateway `elapsed_us` − (fixture `end_us` − `received_us`), sorted.
    pub overhead_us: Vec<i64>,
    /// fixture `end_us` − `received_us`, sorted.
    pub server_us: Vec<i64>,
}

/// The value at quantile `q` of sorted `xs` (nearest rank).
pub fn quantile(xs: &[i64], q: f64) -> i64 {
    if xs.is_empty() {
        return 0;
    }
    let rank = (q * xs.len() as f64).ceil() as usize;
    xs[rank.clamp(1, xs.len()) - 1]
}

/// Joins a gateway transcript's measured requests to the fixture's
/// `/fixture/timings` by response id, per level.
pub fn overhead(transcript: &str, timings: &str) -> Result<Vec<Overhead>, String> {
    let timings: Value = serde_json::from_str(timings).map_err(|e| format!("the timings: {e}"))?;
    let mut server = std::collections::HashMap::new();
    for t in timings.as_array().ok_or("the timings are not an array")? {
        // The end of the response (what the gateway waits for), or, from
        // an older fixture, its last token.
        let end = t["end_us"].as_i64().or_else(|| t["last_token_us"].as_i64());
        if let (Some(id), Some(rec), Some(last)) =
            (t["id"].as_str(), t["received_us"].as_i64(), end)
        {
            server.insert(id.to_owned(), (rec, last));
        }
    }
    let mut levels: Vec<Overhead> = Vec::new();
    for (n, line) in transcript.lines().enumerate() {
        let v: Value =
            serde_json::from_str(line).map_err(|e| format!("transcript line {}: {e}", n + 1))?;
        let (Some(level), Some(id), Some(elapsed)) = (
            v["level"].as_u64(),
            v["response_id"].as_str(),
            v["elapsed_us"].as_i64(),
        ) else {
            continue;
        };
        let &(rec, last) = server
            .get(id)
            .ok_or_else(|| format!("the fixture has no finished request {id}"))?;
        let at = match levels.iter().position(|o| o.level == level) {
            Some(at) => at,
            None => {
                levels.push(Overhead {
                    level,
                    in_flight: u64::MAX,
                    overhead_us: Vec::new(),
                    server_us: Vec::new(),
                });
                levels.len() - 1
            }
        };
        let o = &mut levels[at];
        o.in_flight = o
            .in_flight
            .min(v["in_flight_at_accept"].as_u64().unwrap_or(0));
        o.overhead_us.push(elapsed - (last - rec));
        o.server_us.push(last - rec);
    }
    for o in &mut levels {
        o.overhead_us.sort_unstable();
        o.server_us.sort_unstable();
    }
    Ok(levels)
}

/// A sealed `lattice.executor_packet.v1`, its canonical bytes without the
/// trailing LF (one JSON Lines line). Packet `i` of todo `i / 2` at epoch
/// `i % 2`: every second packet is a content-preserving rebind of the one
/// before. Scopes vary in size and carry non-ASCII text, astral
/// characters and, in one packet in eight, a lone surrogate.
pub fn lattice_packet(i: u64) -> Vec<u8> {
    use chit_core::lattice::Value;
    let s = |t: &str| Value::Str(t.encode_utf16().collect());
    let k = |t: &str| t.encode_utf16().collect::<Vec<u16>>();
    let todo = i / 2;
    let epoch = i % 2;
    let mut paths: Vec<Value> = (0..(todo % 5 + 1))
        .map(|n| s(&format!("src/module_{todo}/file_{n}.rs")))
        .collect();
    if todo % 8 == 3 {
        paths.push(Value::Str(vec![0x73, 0x72, 0x63, 0x2F, 0xD800]));
    }
    let scope = Value::Obj(vec![
        (k("paths"), Value::Arr(paths)),
        (k("note"), s("ｱ: keep the public API; 😀 tests first")),
        (
            k("limits"),
            Value::Obj(vec![
                (k("max_files"), Value::Num((todo % 40 + 1) as f64)),
                (k("ratio"), Value::Num((todo % 1000) as f64 / 8.0)),
            ]),
        ),
    ]);
    let sha: String = (0..40)
        .map(|n| b"0123456789abcdef"[((todo.wrapping_mul(31) + n) % 16) as usize] as char)
        .collect();
    let v = Value::Obj(vec![
        (k("schema"), s(chit_core::kinds::executor_packet::KIND)),
        (k("packet_id"), s(&format!("pkt-{i}"))),
        (k("todo_id"), s(&format!("todo-{todo}"))),
        (k("task_ref"), s(&format!("task-{}", todo % 97))),
        (k("scope"), scope),
        (k("base_sha"), s(&sha)),
        (k("plan_ref"), s(&format!("plan-{epoch}"))),
        (k("plan_epoch"), Value::Num(epoch as f64)),
        (
            k("verifier_refs"),
            Value::Arr(vec![s("cargo test"), s("cargo clippy")]),
        ),
        (k("forbidden_operations"), Value::Arr(vec![])),
    ]);
    let mut bytes = chit_core::kinds::executor_packet::seal(&v).expect("a generated packet seals");
    bytes.pop();
    bytes
}

/// One generated Lattice case: the packet text (possibly broken) and the
/// mutation applied.
pub struct LatticeCase {
    pub mutation: &'static str,
    pub text: String,
}

/// `n` Lattice cases from `seed`: sealed packets, and packets broken in
/// one way each (bytes, digests, -0, escapes, key order, duplicate keys,
/// schema violations under correct digests, trailing newlines, truncation).
pub fn lattice_cases(seed: u64, n: usize) -> Vec<LatticeCase> {
    use chit_core::kinds::executor_packet as xp;
    use chit_core::lattice::{self, Value};
    let mut rng = Rng::new(seed);
    let reseal =
        |v: &Value| -> String { String::from_utf8(xp::seal(v).expect("seals")).expect("utf-8") };
    let set = |v: &Value, key: &str, new: Value| -> Value {
        let Value::Obj(m) = v else { return v.clone() };
        let mut m = m.clone();
        match m.iter_mut().find(|(k, _)| lattice::key_is(k, key)) {
            Some(slot) => slot.1 = new,
            None => m.push((key.encode_utf16().collect(), new)),
        }
        Value::Obj(m)
    };
    let s = |t: &str| Value::Str(t.encode_utf16().collect());
    (0..n)
        .map(|i| {
            let base = String::from_utf8(lattice_packet(rng.below(1_000_000))).expect("utf-8");
            let v = lattice::parse(base.as_bytes()).expect("generated packets parse");
            let (mutation, text) = match rng.below(18) {
                0 | 1 => ("none", base.clone()),
                2 => ("trailing-lf", format!("{base}\n")),
                3 => ("two-lf", format!("{base}\n\n")),
                4 => ("space", base.replacen(':', ": ", 1)),
                5 => {
                    let at = base.find("\"packet_digest\":\"").expect("sealed") + 17;
                    let mut t = base.clone().into_bytes();
                    t[at] = if t[at] == b'0' { b'1' } else { b'0' };
                    ("packet-digest", String::from_utf8(t).expect("ascii"))
                }
                6 => (
                    "task-ref",
                    base.replacen("\"task_ref\":\"task-", "\"task_ref\":\"task-x", 1),
                ),
                7 => (
                    "minus-zero",
                    reseal(&set(&v, "scope", Value::Obj(vec![]))).replacen(
                        "\"scope\":{}",
                        "\"scope\":{\"z\":-0}",
                        1,
                    ),
                ),
                8 => (
                    "upper-escape",
                    reseal(&set(
                        &v,
                        "scope",
                        Value::Obj(vec![(
                            "p".encode_utf16().collect(),
                            Value::Str(vec![0xDABC]),
                        )]),
                    ))
                    .replace("\\udabc", "\\uDABC"),
                ),
                9 => (
                    "lone-surrogate",
                    reseal(&set(
                        &v,
                        "scope",
                        Value::Obj(vec![(
                            "p".encode_utf16().collect(),
                            Value::Str(vec![0x61, 0xDC01, 0x62]),
                        )]),
                    )),
                ),
                10 => {
                    // base_sha moved after forbidden_operations: same content, not canonical order.
                    let start = base.find("\"base_sha\":").expect("sealed");
                    let end = start + base[start..].find(',').expect("more members") + 1;
                    let member = base[start..end].to_owned();
                    let rest = format!("{}{}", &base[..start], &base[end..]);
                    (
                        "key-order",
                        rest.replacen(
                            "\"forbidden_operations\":[],",
                            &format!("\"forbidden_operations\":[],{member}"),
                            1,
                        ),
                    )
                }
                11 => (
                    "duplicate-key",
                    base.replacen("\"base_sha\":", "\"task_ref\":\"t\",\"base_sha\":", 1),
                ),
                12 => (
                    "forbidden-ops",
                    reseal(&set(
                        &v,
                        "forbidden_operations",
                        Value::Arr(vec![s("rm -rf")]),
                    )),
                ),
                13 => (
                    "epoch-fraction",
                    reseal(&set(&v, "plan_epoch", Value::Num(1.5))),
                ),
                14 => ("extra-key", reseal(&set(&v, "extra", Value::Bool(true)))),
                15 => ("bad-id", reseal(&set(&v, "packet_id", s("pkt 1")))),
                16 => (
                    "big-numbers",
                    reseal(&set(
                        &v,
                        "scope",
                        Value::Obj(vec![(
                            "n".encode_utf16().collect(),
                            Value::Arr(vec![
                                Value::Num(1e21),
                                Value::Num(1.5e300),
                                Value::Num(5e-324),
                                Value::Num(0.1),
                            ]),
                        )]),
                    )),
                ),
                _ => {
                    let mut cut = base.len() / 2;
                    while !base.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    ("truncated", base[..cut].to_owned())
                }
            };
            let _ = i;
            LatticeCase { mutation, text }
        })
        .collect()
}
