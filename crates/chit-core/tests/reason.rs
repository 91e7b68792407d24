//! zerker.reason.authorization.v1: certificates of each status made from
//! the example request and recomputed (A5, A7-A9), each portable rule
//! broken (A1-A3), the call (A6), bundles, and a tampered variant of each
//! kind the verifier must catch, each rejected naming what failed.
//!
//! The certificates here are made by chit's own `authorize`; that it gives
//! Reason's certificates byte for byte (every digest) is pinned against
//! Reason's published conformance suite in `tests/reason_conformance.rs`.

use chit_core::kinds::reason::model::{digest, Atom, Proof};
use chit_core::kinds::reason::{
    authorize_request, check, check_with, status, Context, BUNDLE, KIND, NEEDS_REQUEST,
};
use chit_core::{json, Report};
use serde_json::{json, Value};

const REQUEST: &str = include_str!("../../../examples/reason/request.json");

fn request() -> Value {
    serde_json::from_str(REQUEST).unwrap()
}

/// Reason's certificate for `req`, as chit's `authorize` makes it.
fn certify(req: &Value) -> Value {
    let text = req.to_string();
    let doc = json::parse(text.as_bytes(), &Default::default()).unwrap();
    let (_, cert) = authorize_request(doc.root()).unwrap();
    serde_json::to_value(cert).unwrap()
}

fn bundle(cert: &Value, req: &Value) -> Value {
    json!({"schema": BUNDLE, "request": req, "certificate": cert})
}

/// The request with the fact `id` changed by `f`.
fn with_fact(mut req: Value, id: &str, f: impl FnOnce(&mut Value)) -> Value {
    let facts = req
        .pointer_mut("/policy/facts")
        .unwrap()
        .as_array_mut()
        .unwrap();
    f(facts.iter_mut().find(|x| x["id"] == id).unwrap());
    req
}

/// The four statuses, each from a small change to the example request.
fn variants() -> Vec<(&'static str, Value)> {
    let freeze_on = |f: &mut Value| f["negated"] = json!(false);
    let conflicted = {
        let mut req = request();
        let facts = req
            .pointer_mut("/policy/facts")
            .unwrap()
            .as_array_mut()
            .unwrap();
        facts.push(json!({
            "id": "fact_freeze_announced",
            "predicate": "change_freeze",
            "arguments": ["production"],
            "authority": "human-authorized",
            "observed_at": "2026-11-30T11:50:00Z"
        }));
        req
    };
    vec![
        ("authorized", request()),
        ("denied", with_fact(request(), "fact_no_freeze", freeze_on)),
        ("conflicted", conflicted),
        (
            "insufficient_evidence",
            with_fact(request(), "fact_approval", |f| {
                f["authority"] = json!("agent-proposed")
            }),
        ),
    ]
}

fn parse(v: &Value) -> String {
    v.to_string()
}

fn run(doc: &Value, req: Option<&Value>, call: Option<&Value>) -> Report {
    let limits = Default::default();
    let (d, r, c) = (parse(doc), req.map(parse), call.map(parse));
    let doc = json::parse(d.as_bytes(), &limits).unwrap();
    let req = r
        .as_ref()
        .map(|t| json::parse(t.as_bytes(), &limits).unwrap());
    let call = c
        .as_ref()
        .map(|t| json::parse(t.as_bytes(), &limits).unwrap());
    let ctx = Context {
        request: req.as_ref().map(|d| d.root()),
        call: call.as_ref().map(|d| d.root()),
        ..Context::default()
    };
    check_with(doc.root(), ctx)
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

/// The report must be invalid with `rule` at `path` among its errors.
fn rejects(r: &Report, rule: &str, path: &str) {
    assert!(
        r.errors.iter().any(|f| f.rule == rule && f.path == path),
        "expected {rule} at {path}, got {:?}",
        r.errors
    );
}

#[test]
fn every_status_recomputes_alone_with_its_request_and_in_a_bundle() {
    for (want, req) in variants() {
        let cert = certify(&req);
        assert_eq!(cert["status"], want);
        assert_eq!(cert["schema"], KIND);
        let text = parse(&cert);
        let alone = check(
            json::parse(text.as_bytes(), &Default::default())
                .unwrap()
                .root(),
        );
        assert!(alone.valid(), "{want} alone: {:?}", alone.errors);
        let held = run(&cert, Some(&req), None);
        assert!(held.valid(), "{want} with its request: {:?}", held.errors);
        let b = bundle(&cert, &req);
        let r = run(&b, None, None);
        assert!(r.valid(), "{want} bundled: {:?}", r.errors);
        let text = parse(&b);
        let doc = json::parse(text.as_bytes(), &Default::default()).unwrap();
        assert_eq!(status(doc.root()), Some(want));
    }
}

#[test]
fn a_certificate_made_for_one_status_never_verifies_for_another_request() {
    let all = variants();
    for (a, req_a) in &all {
        let cert = certify(req_a);
        for (b, req_b) in &all {
            if a == b {
                continue;
            }
            let r = run(&cert, Some(req_b), None);
            assert!(
                !r.valid(),
                "a {a} certificate passed against the {b} request"
            );
            rejects(&r, "A7", "/request_digest");
        }
    }
}

#[test]
fn a_policy_edited_after_certification_is_caught_by_its_digests() {
    let req = request();
    let cert = certify(&req);
    let mut edited = req.clone();
    edited["policy"]["ontology"]["version"] = json!("1.0.1");
    let r = run(&bundle(&cert, &edited), None, None);
    rejects(&r, "A7", "/certificate/request_digest");
    rejects(&r, "A7", "/certificate/reasoning/program_digest");
    rejects(&r, "A7", "/certificate/reasoning/ontology/digest");
    rejects(&r, "A8", "/certificate/reasoning/ontology");

    // The request digest re-fixed after the edit: the reasoning still
    // does not recompute.
    let mut refixed = cert.clone();
    refixed["request_digest"] = json!(digest(
        &serde_json::from_value::<chit_core::kinds::reason::model::Request>(edited.clone())
            .unwrap()
    ));
    let r = run(&bundle(&refixed, &edited), None, None);
    assert!(paths(&r, "A7")
        .iter()
        .all(|p| p != "/certificate/request_digest"));
    rejects(&r, "A7", "/certificate/reasoning/program_digest");
    rejects(&r, "A8", "/certificate/reasoning/ontology");
}

#[test]
fn swapped_mission_and_action_digests_are_caught() {
    let req = request();
    let cert = certify(&req);
    let other = certify(&variants()[1].1);
    let mut swapped = cert.clone();
    swapped["action"]["digest"] = json!(digest(&json!({"id": "another"})));
    let r = run(&bundle(&swapped, &req), None, None);
    assert_eq!(rules(&r), vec!["A7"]);
    rejects(&r, "A7", "/certificate/action/digest");

    let mut swapped = cert.clone();
    swapped["mission"]["digest"] = other["request_digest"].clone();
    let r = run(&bundle(&swapped, &req), None, None);
    assert_eq!(rules(&r), vec!["A7"]);
    rejects(&r, "A7", "/certificate/mission/digest");
}

/// The proof with its digest re-fixed after `f` edits its nodes.
fn reproof(cert: &mut Value, f: impl FnOnce(&mut Vec<Value>)) {
    let proof = cert.pointer_mut("/reasoning/proof").unwrap();
    f(proof["nodes"].as_array_mut().unwrap());
    let typed: Proof = serde_json::from_value(proof.clone()).unwrap();
    proof["digest"] = json!(Proof::recompute_digest(&typed.root, &typed.nodes));
}

fn node_of<'a>(nodes: &'a mut [Value], source: &str) -> &'a mut Value {
    nodes.iter_mut().find(|n| n["source_id"] == source).unwrap()
}

#[test]
fn forged_proofs_are_caught_by_replay() {
    let req = request();
    let cert = certify(&req);

    // A wrong proof digest.
    let mut bad = cert.clone();
    bad["reasoning"]["proof"]["digest"] = json!(digest("forged"));
    let r = run(&bundle(&bad, &req), None, None);
    rejects(&r, "A7", "/certificate/reasoning/proof/digest");

    // A fact node citing a fact the program does not have.
    let mut bad = cert.clone();
    reproof(&mut bad, |nodes| {
        node_of(nodes, "fact_approval")["source_id"] = json!("fact_forged_approval")
    });
    let r = run(&bundle(&bad, &req), None, None);
    assert!(
        r.errors
            .iter()
            .any(|f| f.rule == "A9" && f.message.contains("fact_forged_approval")),
        "{:?}",
        r.errors
    );

    // A fact node claiming the withheld bot approval's authority.
    let mut bad = cert.clone();
    reproof(&mut bad, |nodes| {
        node_of(nodes, "fact_approval")["authority"] = json!("agent-proposed")
    });
    assert!(rules(&run(&bundle(&bad, &req), None, None)).contains(&"A9"));

    // A node whose id is not its atom's digest.
    let mut bad = cert.clone();
    reproof(&mut bad, |nodes| {
        let n = node_of(nodes, "fact_tests_rerun");
        n["atom"]["arguments"] = json!(["0000000"]);
    });
    let r = run(&bundle(&bad, &req), None, None);
    assert!(
        r.errors
            .iter()
            .any(|f| f.rule == "A9" && f.path.ends_with("/id")),
        "{:?}",
        r.errors
    );

    // A derivation that is its own premise.
    let mut bad = cert.clone();
    reproof(&mut bad, |nodes| {
        let n = node_of(nodes, "rule_deploy");
        let own = n["id"].clone();
        n["premises"][0] = own;
    });
    let r = run(&bundle(&bad, &req), None, None);
    assert!(
        r.errors
            .iter()
            .any(|f| f.rule == "A9" && f.message.contains("cycle")),
        "{:?}",
        r.errors
    );

    // Nodes out of order.
    let mut bad = cert.clone();
    reproof(&mut bad, |nodes| nodes.reverse());
    let r = run(&bundle(&bad, &req), None, None);
    assert!(
        r.errors
            .iter()
            .any(|f| f.rule == "A9" && f.message.contains("sorted")),
        "{:?}",
        r.errors
    );

    // A node nothing reaches.
    let mut bad = cert.clone();
    reproof(&mut bad, |nodes| {
        let atom = Atom {
            predicate: "tests_passed".into(),
            arguments: vec![json!("9f2c1e7")],
            negated: true,
        };
        let stray = json!({
            "id": atom.node_id(), "kind": "fact", "atom": atom,
            "source_id": "fact_tests_rerun", "authority": "ci", "premises": []
        });
        nodes.push(stray);
        nodes.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    });
    let r = run(&bundle(&bad, &req), None, None);
    assert!(r.errors.iter().any(|f| f.rule == "A9"), "{:?}", r.errors);
}

/// The approval downgraded to an agent's proposal, every digest re-fixed,
/// the old proof kept, the certificate still saying authorized: nothing
/// may pass it.
#[test]
fn a_downgraded_approval_with_every_digest_refixed_is_rejected() {
    let req = request();
    let cert = certify(&req);
    let downgraded = with_fact(req, "fact_approval", |f| {
        f["authority"] = json!("agent-proposed")
    });
    let honest = certify(&downgraded);
    assert_eq!(honest["status"], "insufficient_evidence");
    let mut forged = cert.clone();
    for field in ["/request_digest", "/mission/digest", "/action/digest"] {
        *forged.pointer_mut(field).unwrap() = honest.pointer(field).unwrap().clone();
    }
    for field in [
        "/reasoning/program_digest",
        "/reasoning/ontology",
        "/reasoning/authority",
    ] {
        *forged.pointer_mut(field).unwrap() = honest.pointer(field).unwrap().clone();
    }
    reproof(&mut forged, |nodes| {
        node_of(nodes, "fact_approval")["authority"] = json!("agent-proposed")
    });
    assert_eq!(forged["status"], "authorized");
    let r = run(&bundle(&forged, &downgraded), None, None);
    assert!(!r.valid());
    rejects(&r, "A8", "/certificate/status");
    rejects(&r, "A8", "/certificate/reasoning/status");
    assert!(rules(&r).contains(&"A9"), "{:?}", r.errors);

    // And through the one entry point, under --require-authorized.
    let text = bundle(&forged, &downgraded).to_string();
    let ctx = Context {
        require_authorized: true,
        ..Context::default()
    };
    let checked = chit_core::check(text.as_bytes(), &ctx).unwrap();
    assert!(!checked.report.valid());
}

#[test]
fn a_changed_status_issue_metric_or_missing_list_is_caught() {
    let req = request();
    let cert = certify(&req);
    let mut bad = cert.clone();
    bad["status"] = json!("denied");
    let r = run(&bundle(&bad, &req), None, None);
    rejects(&r, "A2", "/certificate/status");
    rejects(&r, "A8", "/certificate/status");

    let mut bad = cert.clone();
    bad["issues"].as_array_mut().unwrap().remove(0);
    rejects(
        &run(&bundle(&bad, &req), None, None),
        "A8",
        "/certificate/issues/0",
    );

    let mut bad = cert.clone();
    bad["reasoning"]["metrics"]["rounds"] = json!(9);
    rejects(
        &run(&bundle(&bad, &req), None, None),
        "A8",
        "/certificate/reasoning/metrics",
    );

    // Reason lists only premises it can name whole: none here (the missing
    // approval's commit is a variable), so an invented one is caught.
    let (_, unknown_req) = variants().pop().unwrap();
    let mut bad = certify(&unknown_req);
    assert_eq!(bad["reasoning"]["missing"], json!([]));
    bad["reasoning"]["missing"] = json!([{"predicate": "tests_passed", "arguments": ["9f2c1e7"]}]);
    rejects(
        &run(&bundle(&bad, &unknown_req), None, None),
        "A8",
        "/certificate/reasoning/missing",
    );
}

#[test]
fn a2_fires_for_every_wrong_pairing() {
    let statuses = [
        "authorized",
        "denied",
        "conflicted",
        "insufficient_evidence",
    ];
    for (want, req) in variants() {
        let cert = certify(&req);
        for s in statuses {
            let mut c = cert.clone();
            c["status"] = json!(s);
            let r = run(&c, None, None);
            assert_eq!(r.valid(), s == want, "{want} certificate marked {s}");
            if s != want {
                assert_eq!(rules(&r), vec!["A2"]);
            }
        }
    }
}

#[test]
fn a3_fires_when_evidence_is_wrongly_present_or_absent() {
    let all = variants();
    let authorized = certify(&all[0].1);
    let mut c = authorized.clone();
    c["reasoning"]["proof"] = Value::Null;
    assert_eq!(paths(&run(&c, None, None), "A3"), vec!["/reasoning/proof"]);
    let mut c = authorized.clone();
    c["reasoning"]["conflict"] = json!({"query": {"predicate": "x"}, "complement": {"predicate": "x"}, "fact_ids": [], "proof_digests": []});
    assert_eq!(
        paths(&run(&c, None, None), "A3"),
        vec!["/reasoning/conflict"]
    );
    let denied = certify(&all[1].1);
    let mut c = denied.clone();
    c["reasoning"]["disproof"] = Value::Null;
    assert_eq!(
        paths(&run(&c, None, None), "A3"),
        vec!["/reasoning/disproof"]
    );
}

#[test]
fn a5_names_the_field_the_certificate_changed() {
    let req = request();
    let cert = certify(&req);
    let cases = [
        ("/mission/id", json!("mission_other")),
        ("/action/id", json!("action_other")),
        ("/action/tool", json!("rm_rf")),
        ("/action/arguments/environment", json!("staging")),
        ("/action/effects/0/resource", json!("service:db")),
    ];
    for (pointer, to) in cases {
        let mut c = cert.clone();
        *c.pointer_mut(pointer).unwrap() = to;
        let r = run(&c, Some(&req), None);
        assert!(rules(&r).contains(&"A5"), "{pointer}: {:?}", r.errors);
        let a5 = paths(&r, "A5");
        assert!(
            a5.iter().any(|p| pointer.starts_with(p.as_str())),
            "{pointer}: {a5:?}"
        );
    }
}

/// Whole numbers are read exactly, as Reason reads them: 9007199254740993
/// is not 9007199254740992 (their doubles are equal), and 3 is not 3.0.
#[test]
fn numbers_compare_exactly_as_reason_reads_them() {
    let req = request();
    let cert = certify(&req);
    let call = json!({"tool": "deploy_release", "arguments": req["action"]["arguments"]});
    assert!(run(&cert, Some(&req), Some(&call)).valid());

    let text = parse(&cert).replace("9007199254740993", "9007199254740992");
    let near: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        near["action"]["arguments"]["ticket"],
        json!(9007199254740992u64)
    );
    let r = run(&near, Some(&req), None);
    assert_eq!(paths(&r, "A5"), vec!["/action/arguments/ticket"]);

    let call_text = parse(&call).replace("9007199254740993", "9007199254740992");
    let near_call: Value = serde_json::from_str(&call_text).unwrap();
    let r = run(&cert, None, Some(&near_call));
    assert_eq!(paths(&r, "A6"), vec!["/action/arguments/ticket"]);

    let float_call = json!({"tool": "deploy_release", "arguments": {
        "commit": "9f2c1e7", "environment": "production", "replicas": 3.0, "ticket": 9007199254740993u64}});
    let r = run(&cert, None, Some(&float_call));
    assert_eq!(paths(&r, "A6"), vec!["/action/arguments/replicas"]);
}

#[test]
fn a6_accepts_the_call_in_any_key_order_and_refuses_another() {
    let cert = certify(&request());
    let raw = r#"{"arguments":{"ticket":9007199254740993,"replicas":3,"environment":"production","commit":"9f2c1e7"},"tool":"deploy_release"}"#;
    let call: Value = serde_json::from_str(raw).unwrap();
    assert!(run(&cert, None, Some(&call)).valid());
    let other = json!({"tool": "deploy_release", "arguments": {"commit": "9f2c1e7"}});
    assert_eq!(rules(&run(&cert, None, Some(&other))), vec!["A6"]);
    let tool = json!({"tool": "rm_rf", "arguments": call["arguments"]});
    assert_eq!(
        paths(&run(&cert, None, Some(&tool)), "A6"),
        vec!["/action/tool"]
    );
    for bad in [
        json!(null),
        json!({"tool": 1, "arguments": {}}),
        json!({"tool": "x"}),
    ] {
        assert_eq!(rules(&run(&cert, None, Some(&bad))), vec!["A6"], "{bad}");
    }
}

#[test]
fn without_the_request_require_authorized_fails_closed() {
    let cert = certify(&request());
    let text = cert.to_string();
    // No rule fails, but nothing was recomputed: unchecked, not valid.
    let plain = chit_core::check(text.as_bytes(), &Context::default()).unwrap();
    assert!(plain.report.errors.is_empty());
    assert!(!plain.report.valid());
    assert_eq!(plain.report.status(), chit_core::report::Status::Unchecked);
    assert_eq!(plain.report.warnings[0].rule, "A7");
    let gated = chit_core::check(
        text.as_bytes(),
        &Context {
            require_authorized: true,
            ..Context::default()
        },
    )
    .unwrap();
    assert!(!gated.report.valid());
    assert_eq!(gated.report.errors[0].rule, "authorized");
    assert_eq!(gated.report.errors[0].message, NEEDS_REQUEST);
}

#[test]
fn a_bundle_has_exactly_its_three_members_and_a_real_request() {
    let req = request();
    let cert = certify(&req);
    let mut b = bundle(&cert, &req);
    b["extra"] = json!(1);
    assert_eq!(paths(&run(&b, None, None), "schema"), vec!["/extra"]);
    let mut b = bundle(&cert, &req);
    b.as_object_mut().unwrap().remove("request");
    let r = run(&b, None, None);
    assert_eq!(rules(&r), vec!["schema"]);
    let b = bundle(&cert, &json!({"schema": "something else"}));
    assert_eq!(paths(&run(&b, None, None), "A5"), vec!["/request"]);
}

#[test]
fn members_reason_does_not_read_are_refused_not_ignored() {
    let req = request();
    let cert = certify(&req);
    let mut r2 = req.clone();
    r2["action"]["bypass"] = json!(true);
    let r = run(&bundle(&cert, &r2), None, None);
    assert!(
        r.errors
            .iter()
            .any(|f| f.rule == "schema" && f.message.contains("bypass")),
        "{:?}",
        r.errors
    );
    let mut c2 = cert.clone();
    c2["reasoning"]["metrics"]["extra"] = json!(0);
    let r = run(&bundle(&c2, &req), None, None);
    assert!(!r.valid());
}

#[test]
fn a_request_reason_would_refuse_cannot_certify_anything() {
    let req = request();
    let cert = certify(&req);
    // A policy fact claiming the system's own authority.
    let spoofed = with_fact(req.clone(), "fact_approval", |f| {
        f["authority"] = json!("system-bound")
    });
    let r = run(&bundle(&cert, &spoofed), None, None);
    assert!(
        r.errors
            .iter()
            .any(|f| f.rule == "A8" && f.path == "/request" && f.message.contains("system-bound")),
        "{:?}",
        r.errors
    );
    // A timestamp not in Reason's one form.
    let mut late = req.clone();
    late["policy"]["evaluation_time"] = json!("2026-11-30T12:00:00+00:00");
    let r = run(&bundle(&cert, &late), None, None);
    assert!(
        r.errors
            .iter()
            .any(|f| f.rule == "A8" && f.message.contains("canonical UTC")),
        "{:?}",
        r.errors
    );
}

#[test]
fn hostile_values_fail_closed_with_a_reason() {
    let req = request();
    let cert = certify(&req);
    // Nested past serde_json's limit (127), within chit's reader's (128).
    let mut deep = json!("x");
    for _ in 0..124 {
        deep = json!([deep]);
    }
    let mut r2 = req.clone();
    r2["action"]["arguments"]["deep"] = deep;
    let r = run(&bundle(&cert, &r2), None, None);
    assert!(
        r.errors
            .iter()
            .any(|f| f.message.contains("nested more than 127")),
        "{:?}",
        r.errors
    );
    // A double whose value depends on the parser.
    let text = bundle(&cert, &req).to_string().replacen(
        "\"replicas\":3",
        "\"replicas\":0.1000000000000000055511151231257827",
        1,
    );
    let doc = json::parse(text.as_bytes(), &Default::default()).unwrap();
    let r = check_with(doc.root(), Context::default());
    assert!(
        r.errors
            .iter()
            .any(|f| f.message.contains("depends on the JSON parser")),
        "{:?}",
        r.errors
    );
    // A rule joining large relations: refused, not run for minutes.
    let mut big = req.clone();
    let facts = big
        .pointer_mut("/policy/facts")
        .unwrap()
        .as_array_mut()
        .unwrap();
    for i in 0..400 {
        facts.push(json!({"id": format!("fact_bulk_{i}"), "predicate": "tests_passed",
            "arguments": [format!("c{i}")], "authority": "ci", "observed_at": "2026-11-30T09:00:00Z"}));
    }
    let rules = big
        .pointer_mut("/policy/rules")
        .unwrap()
        .as_array_mut()
        .unwrap();
    rules.push(json!({"id": "rule_join", "when": [
        {"predicate": "tests_passed", "arguments": ["$x"]},
        {"predicate": "tests_passed", "arguments": ["$y"]},
        {"predicate": "tests_passed", "arguments": ["$z"]}],
        "then": {"predicate": "action_authorized", "arguments": ["$x"]}}));
    let r = run(&bundle(&cert, &big), None, None);
    assert!(
        r.errors
            .iter()
            .any(|f| f.rule == "A8" && f.message.contains("refuses to spend")),
        "{:?}",
        r.errors
    );
}

#[test]
fn schema_failures_stop_the_rules() {
    let cert = certify(&request());
    let mut c = cert.clone();
    c.as_object_mut().unwrap().remove("reasoning");
    let r = run(&c, Some(&request()), None);
    assert_eq!(rules(&r), vec!["schema"]);
}

/// A signed statement is RFC 8785 canonical JSON, whose numbers are
/// doubles: chit refuses to sign a certificate whose whole number past 2^53
/// it would change (9007199254740993 would become ...992), naming it.
#[test]
fn signing_refuses_a_whole_number_canonical_json_would_change() {
    use chit_core::kinds::treeship::statement::{sign_checked, Claim, SignError};
    let key = chit_core::keys::SecretKey::from_seed(&[7; 32]);
    let claim = |kind| Claim {
        kind,
        system: "chit-test",
        subject: None,
        at_unix_secs: 1_700_000_000,
    };
    let cert = certify(&request()).to_string();
    let doc = json::parse(cert.as_bytes(), &Default::default()).unwrap();
    match sign_checked(&key, claim(KIND), doc.root()) {
        Err(SignError::Inexact {
            path,
            literal,
            written,
        }) => {
            assert_eq!(path, "/action/arguments/ticket");
            assert_eq!(
                (literal.as_str(), written.as_str()),
                ("9007199254740993", "9007199254740992")
            );
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    // Without it the certificate signs.
    let mut req = request();
    req["action"]["arguments"]["ticket"] = json!(12);
    let cert = certify(&req).to_string();
    let doc = json::parse(cert.as_bytes(), &Default::default()).unwrap();
    assert!(sign_checked(&key, claim(KIND), doc.root()).is_ok());
}
