//! Mutations that break a run receipt's schema or rules.

use crate::receipt::STANCES;
use crate::Rng;
use serde_json::{json, Value};

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
