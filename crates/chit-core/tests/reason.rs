//! zerker.reason.authorization.v1: certificates of each status, each rule
//! broken (A1-A6), and bundles.

use chit_core::kinds::reason::{check, check_with, status, Context, BUNDLE, KIND, REQUEST};
use chit_core::{json, Kind, Report};
use serde_json::{json, Value};

const STATUSES: [(&str, &str); 4] = [
    ("authorized", "proved"),
    ("denied", "disproved"),
    ("conflicted", "inconsistent"),
    ("insufficient_evidence", "unknown"),
];

const PLACEHOLDER: &str = "__RAW__";

fn digest(c: char) -> String {
    format!("sha256:{}", c.to_string().repeat(64))
}

fn arguments() -> Value {
    json!({
        "path": "/srv/reports/q3.csv",
        "count": 1,
        "options": {"mode": "append", "recursive": false, "limits": {"bytes": 4096, "files": 2}},
    })
}

fn effects() -> Value {
    json!([
        {"kind": "write", "target": "/srv/reports/q3.csv"},
        {"kind": "notify", "target": "ops"},
    ])
}

/// A valid certificate whose reasoning status is `reasoning` (and whose
/// status is the one it maps to).
fn certificate(reasoning: &str) -> Value {
    let status = STATUSES.iter().find(|(_, r)| *r == reasoning).unwrap().0;
    let proved = matches!(reasoning, "proved" | "inconsistent");
    let disproved = matches!(reasoning, "disproved" | "inconsistent");
    let conflicted = reasoning == "inconsistent";
    let missing = if reasoning == "unknown" {
        json!([{"fact": "owner_approval", "about": "q3.csv"}])
    } else {
        json!([])
    };
    json!({
        "schema": KIND,
        "status": status,
        "request_digest": digest('a'),
        "mission": {"id": "mission-7", "digest": digest('b')},
        "action": {
            "id": "action-42",
            "digest": digest('c'),
            "tool": "fs.write",
            "arguments": arguments(),
            "effects": effects(),
        },
        "reasoning": {
            "schema": "zerker.reason.result.v1",
            "status": reasoning,
            "query": {"goal": "authorized(action-42)"},
            "program_digest": digest('d'),
            "ontology": {"name": "ops"},
            "authority": {"issuer": "policy"},
            "proof": if proved { json!({"steps": [1, 2]}) } else { Value::Null },
            "disproof": if disproved { json!({"steps": [3]}) } else { Value::Null },
            "conflict": if conflicted { json!({"rules": ["r1", "r2"]}) } else { Value::Null },
            "missing": missing,
            "assumptions": [],
            "metrics": {"steps": 3},
        },
        "issues": [],
    })
}

/// The request every certificate above was made for.
fn request() -> Value {
    json!({
        "schema": REQUEST,
        "mission": {"id": "mission-7", "goal": "publish the quarter's report"},
        "action": {
            "id": "action-42",
            "tool": "fs.write",
            "proposed_at": "2025-01-01T00:00:00Z",
            "arguments": arguments(),
            "effects": effects(),
        },
        "policy": {"rules": []},
    })
}

fn call() -> Value {
    json!({"tool": "fs.write", "arguments": arguments()})
}

fn bundle(cert: Value, req: Value) -> Value {
    json!({"schema": BUNDLE, "request": req, "certificate": cert})
}

/// `v` as text, with the string [`PLACEHOLDER`] (which must occur once)
/// replaced by `raw` verbatim: how key order is written by hand.
fn with_raw(v: &Value, raw: &str) -> String {
    let text = v.to_string();
    let quoted = format!("\"{PLACEHOLDER}\"");
    assert_eq!(text.matches(&quoted).count(), 1);
    text.replace(&quoted, raw)
}

/// Sets the value at JSON Pointer `pointer` in `v`.
fn set(mut v: Value, pointer: &str, to: Value) -> Value {
    *v.pointer_mut(pointer).unwrap() = to;
    v
}

fn run(doc: &str, req: Option<&str>, call: Option<&str>) -> Report {
    let limits = Default::default();
    let doc = json::parse(doc.as_bytes(), &limits).unwrap();
    let req = req.map(|t| json::parse(t.as_bytes(), &limits).unwrap());
    let call = call.map(|t| json::parse(t.as_bytes(), &limits).unwrap());
    let r = check_with(
        doc.root(),
        Context {
            request: req.as_ref().map(|d| d.root()),
            call: call.as_ref().map(|d| d.root()),
            ..Default::default()
        },
    );
    assert_eq!(r.kind, KIND);
    r
}

fn alone(v: &Value) -> Report {
    run(&v.to_string(), None, None)
}

fn with_request(v: &Value, req: &Value) -> Report {
    run(&v.to_string(), Some(&req.to_string()), None)
}

fn with_call(v: &Value, call: &str) -> Report {
    run(&v.to_string(), None, Some(call))
}

fn rules(r: &Report) -> Vec<&'static str> {
    r.errors.iter().map(|f| f.rule).collect()
}

fn paths(r: &Report, rule: &str) -> Vec<String> {
    r.errors
        .iter()
        .filter(|f| f.rule == rule)
        .map(|f| f.path.clone())
        .collect()
}

#[test]
fn every_status_is_valid_alone_with_its_request_call_and_bundle() {
    for (status_name, reasoning) in STATUSES {
        let c = certificate(reasoning);
        let text = c.to_string();
        let doc = json::parse(text.as_bytes(), &Default::default()).unwrap();
        assert_eq!(Kind::detect(&doc), Some(Kind::ReasonAuthorization));
        assert_eq!(status(doc.root()), Some(status_name));
        let r = check(doc.root());
        assert_eq!(r, Report::new(KIND), "{reasoning}");
        let r = run(
            &text,
            Some(&request().to_string()),
            Some(&call().to_string()),
        );
        assert_eq!(r, Report::new(KIND), "{reasoning}");
        let b = bundle(c, request());
        let r = run(&b.to_string(), None, Some(&call().to_string()));
        assert_eq!(r, Report::new(KIND), "{reasoning}");
        let text = b.to_string();
        let doc = json::parse(text.as_bytes(), &Default::default()).unwrap();
        assert_eq!(Kind::detect(&doc), Some(Kind::ReasonAuthorization));
        assert_eq!(status(doc.root()), Some(status_name));
    }
}

#[test]
fn a3_fires_exactly_when_proof_disproof_or_conflict_is_wrongly_present_or_absent() {
    let fields = ["proof", "disproof", "conflict"];
    let mut cases = 0;
    for (_, reasoning) in STATUSES {
        let want = [
            matches!(reasoning, "proved" | "inconsistent"),
            matches!(reasoning, "disproved" | "inconsistent"),
            reasoning == "inconsistent",
        ];
        for mask in 0..8u8 {
            let has: Vec<bool> = (0..3).map(|i| mask & (1 << i) != 0).collect();
            let mut c = certificate(reasoning);
            for (i, field) in fields.iter().enumerate() {
                let to = if has[i] {
                    json!({"note": field})
                } else {
                    Value::Null
                };
                c = set(c, &format!("/reasoning/{field}"), to);
            }
            let r = alone(&c);
            let wrong: Vec<String> = fields
                .iter()
                .enumerate()
                .filter(|&(i, _)| has[i] != want[i])
                .map(|(_, f)| format!("/reasoning/{f}"))
                .collect();
            assert_eq!(paths(&r, "A3"), wrong, "{reasoning} {has:?}");
            assert!(
                r.errors.iter().all(|f| f.rule == "A3"),
                "{reasoning} {has:?}: {:?}",
                r.errors
            );
            assert_eq!(r.valid(), wrong.is_empty());
            cases += 1;
        }
    }
    assert_eq!(cases, 32);
}

#[test]
fn a2_fires_for_every_wrong_pairing_and_no_right_one() {
    let mut wrong = 0;
    for (reasoning_of_status, _) in STATUSES {
        for (_, reasoning) in STATUSES {
            let c = set(
                certificate(reasoning),
                "/status",
                json!(reasoning_of_status),
            );
            let right = STATUSES.contains(&(reasoning_of_status, reasoning));
            let r = alone(&c);
            if right {
                assert!(
                    r.valid(),
                    "{reasoning_of_status} {reasoning}: {:?}",
                    r.errors
                );
            } else {
                wrong += 1;
                assert_eq!(rules(&r), vec!["A2"], "{reasoning_of_status} {reasoning}");
                assert_eq!(paths(&r, "A2"), vec!["/status"]);
            }
        }
    }
    assert_eq!(wrong, 12);
}

#[test]
fn a4_warns_on_insufficient_evidence_with_nothing_missing() {
    let c = set(certificate("unknown"), "/reasoning/missing", json!([]));
    let r = alone(&c);
    assert!(r.valid());
    assert_eq!(r.warnings.len(), 1);
    assert_eq!(r.warnings[0].rule, "A4");
    assert_eq!(r.warnings[0].path, "/reasoning/missing");
    // Only insufficient_evidence is held to it.
    for (_, reasoning) in STATUSES {
        let r = alone(&certificate(reasoning));
        assert!(r.warnings.is_empty(), "{reasoning}");
    }
}

#[test]
fn a5_fires_for_each_mismatch_with_the_request() {
    let cases = [
        ("/mission/id", json!("mission-8"), "/mission/id"),
        ("/action/id", json!("action-43"), "/action/id"),
        ("/action/tool", json!("fs.delete"), "/action/tool"),
        (
            "/action/arguments/path",
            json!("/srv/reports/q4.csv"),
            "/action/arguments/path",
        ),
        (
            "/action/arguments/options/limits/files",
            json!(3),
            "/action/arguments/options/limits/files",
        ),
        (
            "/action/effects/1/target",
            json!("everyone"),
            "/action/effects/1/target",
        ),
    ];
    for (pointer, to, at) in cases {
        let req = set(request(), pointer, to);
        for (_, reasoning) in STATUSES {
            let r = with_request(&certificate(reasoning), &req);
            assert_eq!(rules(&r), vec!["A5"], "{pointer}");
            assert_eq!(paths(&r, "A5"), vec![at.to_string()], "{pointer}");
        }
    }
    // An extra argument, or one effect fewer, is a mismatch too.
    let mut req = request();
    req["action"]["arguments"]["extra"] = json!(true);
    let r = with_request(&certificate("proved"), &req);
    assert_eq!(paths(&r, "A5"), vec!["/action/arguments/extra"]);
    let req = set(request(), "/action/effects", json!([effects()[0].clone()]));
    let r = with_request(&certificate("proved"), &req);
    assert_eq!(paths(&r, "A5"), vec!["/action/effects/1"]);
}

#[test]
fn a5_ignores_key_order_at_every_level() {
    let raw = r#"{"options":{"recursive":false,"limits":{"files":2,"bytes":4096},"mode":"append"},"path":"/srv/reports/q3.csv","count":1.0}"#;
    let req = with_raw(
        &set(request(), "/action/arguments", json!(PLACEHOLDER)),
        raw,
    );
    let effects_raw =
        r#"[{"target":"/srv/reports/q3.csv","kind":"write"},{"target":"ops","kind":"notify"}]"#;
    let req_value: Value = serde_json::from_str(&req).unwrap();
    let req2 = with_raw(
        &set(req_value, "/action/effects", json!(PLACEHOLDER)),
        effects_raw,
    );
    for text in [&req, &req2] {
        let r = run(&certificate("proved").to_string(), Some(text), None);
        assert_eq!(r, Report::new(KIND));
    }
    // Effects are a list: their order matters.
    let swapped = json!([effects()[1].clone(), effects()[0].clone()]);
    let r = with_request(
        &certificate("proved"),
        &set(request(), "/action/effects", swapped),
    );
    assert_eq!(rules(&r), vec!["A5"]);
}

#[test]
fn a5_refuses_what_is_not_a_request() {
    let c = certificate("proved");
    for bad in [
        set(request(), "/schema", json!("zerker.reason.action.v2")),
        json!([request()]),
        json!("request"),
    ] {
        let r = with_request(&c, &bad);
        assert_eq!(rules(&r), vec!["A5"], "{bad}");
    }
    // A request missing what it should hold.
    let mut req = request();
    req["action"].as_object_mut().unwrap().remove("tool");
    let r = with_request(&c, &req);
    assert_eq!(paths(&r, "A5"), vec!["/action/tool"]);
}

#[test]
fn a6_accepts_the_same_call_in_another_key_order() {
    let c = certificate("proved");
    let raw = r#"{"arguments":{"options":{"mode":"append","limits":{"files":2,"bytes":4096},"recursive":false},"count":1,"path":"/srv/reports/q3.csv"},"tool":"fs.write"}"#;
    assert_eq!(with_call(&c, raw), Report::new(KIND));
    // RFC 8785 writes 1.0 as 1: the same number.
    let raw = raw.replace(r#""count":1,"#, r#""count":1.0,"#);
    assert_eq!(with_call(&c, &raw), Report::new(KIND));
    let raw = raw.replace(r#""count":1.0,"#, r#""count":10e-1,"#);
    assert_eq!(with_call(&c, &raw), Report::new(KIND));
}

#[test]
fn a6_refuses_a_different_call() {
    let c = certificate("proved");
    let cases = [
        ("/arguments/count", json!("1"), "/action/arguments/count"),
        ("/arguments/count", json!(2), "/action/arguments/count"),
        (
            "/arguments/options/limits/bytes",
            json!(4097),
            "/action/arguments/options/limits/bytes",
        ),
        (
            "/arguments/options/recursive",
            json!(null),
            "/action/arguments/options/recursive",
        ),
        ("/tool", json!("fs.delete"), "/action/tool"),
    ];
    for (pointer, to, at) in cases {
        let r = with_call(&c, &set(call(), pointer, to).to_string());
        assert_eq!(rules(&r), vec!["A6"], "{pointer}");
        assert_eq!(paths(&r, "A6"), vec![at.to_string()], "{pointer}");
    }
    let mut extra = call();
    extra["arguments"]["sudo"] = json!(true);
    let r = with_call(&c, &extra.to_string());
    assert_eq!(paths(&r, "A6"), vec!["/action/arguments/sudo"]);
    let r = with_call(&c, r#"{"tool":"fs.write","arguments":{}}"#);
    assert_eq!(rules(&r), vec!["A6"]);
}

#[test]
fn a6_refuses_a_malformed_call() {
    let c = certificate("proved");
    let args = arguments().to_string();
    for bad in [
        "null".to_string(),
        "[]".to_string(),
        r#""fs.write""#.to_string(),
        format!(r#"{{"arguments":{args}}}"#),
        format!(r#"{{"tool":null,"arguments":{args}}}"#),
        format!(r#"{{"tool":["fs.write"],"arguments":{args}}}"#),
        r#"{"tool":"fs.write"}"#.to_string(),
        r#"{"tool":"fs.write","arguments":null}"#.to_string(),
        r#"{"tool":"fs.write","arguments":[]}"#.to_string(),
        r#"{"tool":"fs.write","arguments":"{}"}"#.to_string(),
    ] {
        let r = with_call(&c, &bad);
        assert_eq!(rules(&r), vec!["A6"], "{bad}");
        assert!(!r.valid());
    }
}

#[test]
fn a_bundle_with_a_mismatched_request_breaks_a5_under_certificate() {
    let req = set(request(), "/action/arguments/path", json!("/etc/passwd"));
    let r = alone(&bundle(certificate("proved"), req));
    assert_eq!(rules(&r), vec!["A5"]);
    assert_eq!(
        paths(&r, "A5"),
        vec!["/certificate/action/arguments/path".to_string()]
    );
    // A request given beside the bundle is held to as well.
    let b = bundle(certificate("proved"), request());
    let other = set(request(), "/mission/id", json!("mission-9"));
    let r = with_request(&b, &other);
    assert_eq!(paths(&r, "A5"), vec!["/certificate/mission/id".to_string()]);
    // A call beside a bundle is held to its certificate.
    let r = with_call(&b, &set(call(), "/tool", json!("sh")).to_string());
    assert_eq!(
        paths(&r, "A6"),
        vec!["/certificate/action/tool".to_string()]
    );
}

#[test]
fn a_bundle_has_exactly_its_three_members() {
    let mut b = bundle(certificate("disproved"), request());
    b["signature"] = json!("zzz");
    let r = alone(&b);
    assert_eq!(rules(&r), vec!["schema"]);
    assert_eq!(paths(&r, "schema"), vec!["/signature"]);
    assert!(r.errors[0].message.contains("signature"));
    for key in ["certificate", "request"] {
        let mut b = bundle(certificate("disproved"), request());
        b.as_object_mut().unwrap().remove(key);
        let r = alone(&b);
        assert_eq!(rules(&r), vec!["schema"], "{key}");
        assert!(r.errors[0].message.contains(key));
    }
}

#[test]
fn a_bundle_request_must_be_a_request() {
    let req = set(request(), "/schema", json!(KIND));
    let r = alone(&bundle(certificate("proved"), req));
    assert_eq!(rules(&r), vec!["A5"]);
    assert_eq!(paths(&r, "A5"), vec!["/request"]);
    let r = alone(&bundle(certificate("proved"), json!(null)));
    assert_eq!(rules(&r), vec!["A5"]);
}

#[test]
fn a_bundled_certificate_is_checked_under_certificate() {
    let c = set(certificate("proved"), "/reasoning/proof", Value::Null);
    let r = alone(&bundle(c, request()));
    assert_eq!(paths(&r, "A3"), vec!["/certificate/reasoning/proof"]);
    let c = set(certificate("proved"), "/status", json!("maybe"));
    let r = alone(&bundle(c, request()));
    assert_eq!(rules(&r), vec!["schema"]);
    assert!(r.errors[0].path.starts_with("/certificate/status"));
    let c = set(certificate("unknown"), "/reasoning/missing", json!([]));
    let r = alone(&bundle(c, request()));
    assert!(r.valid());
    assert_eq!(r.warnings[0].path, "/certificate/reasoning/missing");
}

#[test]
fn schema_failures_are_reported_as_schema_and_stop_the_rules() {
    let bad = [
        set(certificate("proved"), "/status", json!("allowed")),
        set(
            certificate("proved"),
            "/request_digest",
            json!("sha256:xyz"),
        ),
        set(certificate("proved"), "/action/arguments", json!([1])),
        set(certificate("proved"), "/reasoning/status", json!("maybe")),
        set(certificate("proved"), "/schema", json!(REQUEST)),
        json!({"schema": KIND}),
        json!([]),
        json!("certificate"),
    ];
    for v in bad {
        let r = alone(&v);
        assert!(!r.errors.is_empty(), "{v}");
        assert!(
            r.errors.iter().all(|f| f.rule == "schema"),
            "{v}: {:?}",
            r.errors
        );
    }
    let mut c = certificate("proved");
    c["mission"]["extra"] = json!(1);
    let r = alone(&c);
    assert_eq!(rules(&r), vec!["schema"]);
    // Nothing else is checked once the schema fails, even a call that
    // differs.
    let c = set(certificate("proved"), "/issues", json!({}));
    let r = with_call(&c, r#"{"tool":"rm","arguments":{}}"#);
    assert_eq!(rules(&r), vec!["schema"]);
}

/// A whole number past 2^53 - 1 reads as a double other spellings share:
/// 9007199254740993 and 9007199254740992 have the same RFC 8785 bytes, but
/// a tool (and Reason, reading integers exactly) sees two calls. A6 and A5
/// refuse such numbers rather than pass a changed call; safe integers,
/// 1.0 for 1, and -0 for 0 still compare equal.
#[test]
fn a5_a6_refuse_numbers_past_the_safe_integers() {
    let c = set(
        certificate("proved"),
        "/action/arguments/count",
        json!(9_007_199_254_740_992u64),
    );
    let spelled = |n: &str| {
        call()
            .to_string()
            .replace(r#""count":1"#, &format!(r#""count":{n}"#))
    };
    for n in [
        "9007199254740993",
        "9007199254740992",
        "9.007199254740993e15",
    ] {
        let r = with_call(&c, &spelled(n));
        assert_eq!(rules(&r), vec!["A6"], "{n}");
        assert_eq!(paths(&r, "A6"), vec!["/action/arguments/count"], "{n}");
    }
    let req = set(
        request(),
        "/action/arguments/options/limits/bytes",
        json!(-9_007_199_254_740_993i64),
    );
    let c = set(
        certificate("proved"),
        "/action/arguments/options/limits/bytes",
        json!(-9_007_199_254_740_992i64),
    );
    let r = with_request(&c, &req);
    assert_eq!(
        paths(&r, "A5"),
        vec!["/action/arguments/options/limits/bytes"]
    );
    // The largest safe integer, and spellings of one double, are fine.
    let c = set(
        certificate("proved"),
        "/action/arguments/count",
        json!(9_007_199_254_740_991u64),
    );
    assert!(with_call(&c, &spelled("9007199254740991")).valid());
    assert!(with_call(&c, &spelled("9.007199254740991e15")).valid());
    let c = set(certificate("proved"), "/action/arguments/count", json!(0));
    assert!(with_call(&c, &spelled("-0")).valid());
    assert!(with_call(&c, &spelled("0.0e5")).valid());
}
