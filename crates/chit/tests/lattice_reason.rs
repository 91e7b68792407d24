//! The command line on Lattice executor packets and Zerker Reason
//! certificates: verify, digest, seal, canon --profile lattice, epoch
//! rebinds across files, --request, --call and --require-authorized.

mod common;

use common::chit_in;
use serde_json::json;
use std::path::Path;

const PRETTY: &str = r#"{
  "schema": "lattice.executor_packet.v1",
  "packet_id": "pkt-1", "todo_id": "todo-1", "task_ref": "t1",
  "scope": {"z": [1, 2.50], "\ud83d\ude00": "\udc00 lone", "ｱ": null},
  "base_sha": "89abcdef0123456789abcdef0123456789abcdef",
  "plan_ref": "plan-a", "plan_epoch": 1,
  "verifier_refs": ["cargo test"], "forbidden_operations": [],
  "context_content_digest": "0000000000000000000000000000000000000000000000000000000000000000",
  "packet_digest": "0000000000000000000000000000000000000000000000000000000000000000"
}"#;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

#[test]
fn lattice_packets_seal_digest_canon_and_rebind() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(p, "a.json", PRETTY);
    let run = chit_in(p, &["verify", "a.json"], None);
    assert_eq!(run.code, 1);
    for rule in ["X2", "X3", "X4"] {
        assert!(
            run.stdout.contains(&format!("error {rule}:")),
            "{}",
            run.stdout
        );
    }
    let digest = chit_in(p, &["digest", "a.json"], None);
    assert_eq!(digest.code, 0, "{}", digest.stderr);
    assert!(
        digest.stdout.starts_with("context_content_digest "),
        "{}",
        digest.stdout
    );
    let seal = chit_in(p, &["seal", "a.json"], None);
    assert_eq!(seal.code, 0, "{}", seal.stderr);
    let sealed = std::fs::read_to_string(p.join("a.json")).unwrap();
    assert!(
        sealed.ends_with("}\n") && sealed.contains("\"\\udc00 lone\""),
        "{sealed}"
    );
    // The digests 'chit digest' printed are the ones sealed in.
    for line in digest.stdout.lines() {
        let hex = line.split_whitespace().last().unwrap();
        assert!(sealed.contains(hex), "{line}");
    }
    assert_eq!(chit_in(p, &["verify", "a.json"], None).code, 0);
    // canon --profile lattice of the pretty packet is the sealed bytes but for
    // the digests; of the sealed packet, exactly its bytes.
    let canon = chit_in(p, &["canon", "--profile", "lattice", "a.json"], None);
    assert_eq!(format!("{}\n", canon.stdout), sealed);
    write(p, "z.json", "[-0]");
    let canon = chit_in(p, &["canon", "--profile", "lattice", "z.json"], None);
    assert_eq!(canon.code, 2);
    assert!(canon.stderr.contains("-0"), "{}", canon.stderr);
    assert_eq!(chit_in(p, &["canon", "z.json"], None).stdout, "[0]");

    // A rebind: the same content under a new plan and a later epoch.
    let b = PRETTY
        .replace(
            "\"plan-a\", \"plan_epoch\": 1",
            "\"plan-b\", \"plan_epoch\": 2",
        )
        .replace("pkt-1", "pkt-2");
    assert_ne!(b, PRETTY);
    write(p, "b.json", &b);
    assert_eq!(chit_in(p, &["seal", "b.json"], None).code, 0);
    let run = chit_in(p, &["verify", "--json", "a.json", "b.json"], None);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("{\"rebind\":\"todo-1\",\"valid\":true,\"errors\":[],\"warnings\":[]}"),
        "{}",
        run.stdout
    );
    // The content changed under the new plan: X6.
    let c = b.replace("\"t1\"", "\"t2\"").replace("pkt-2", "pkt-3");
    write(p, "c.json", &c);
    assert_eq!(chit_in(p, &["seal", "c.json"], None).code, 0);
    let run = chit_in(p, &["verify", "--json", "a.json", "c.json"], None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("\"rule\":\"X6\""), "{}", run.stdout);

    // JSON Lines of sealed packets, lone surrogates included.
    let lines = format!(
        "{}{}",
        std::fs::read_to_string(p.join("a.json")).unwrap(),
        std::fs::read_to_string(p.join("b.json")).unwrap()
    );
    write(p, "all.jsonl", &lines);
    let run = chit_in(p, &["verify", "--lines", "--quiet", "all.jsonl"], None);
    assert_eq!(run.code, 0, "{}", run.stdout);
    // A packet that is not JSON at all is unreadable.
    write(p, "bad.json", "{\"schema\":\"lattice.executor_packet.v1\",");
    assert_eq!(chit_in(p, &["verify", "bad.json"], None).code, 2);
}

fn certificate(status: &str, reasoning: &str, args: serde_json::Value) -> serde_json::Value {
    let d = format!("sha256:{}", "a".repeat(64));
    json!({
        "schema": "zerker.reason.authorization.v1",
        "status": status,
        "request_digest": d,
        "mission": {"id": "mission-1", "digest": d},
        "action": {"id": "action-1", "digest": d, "tool": "deploy", "arguments": args,
                   "effects": [{"kind": "deploy", "resource": "r", "value": "prod"}]},
        "reasoning": {
            "schema": "zerker.reason.result.v2", "status": reasoning, "query": {},
            "program_digest": d, "ontology": {}, "authority": {},
            "proof": if reasoning == "proved" { json!({"root": 1}) } else { json!(null) },
            "disproof": if reasoning == "disproved" { json!({"root": 2}) } else { json!(null) },
            "conflict": null, "missing": [], "assumptions": [], "metrics": {}
        },
        "issues": []
    })
}

#[test]
fn reason_certificates_requests_calls_and_require_authorized() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let args = json!({"env": "prod", "opts": {"a": 1, "b": [true, null]}});
    write(
        p,
        "ok.json",
        &certificate("authorized", "proved", args.clone()).to_string(),
    );
    write(
        p,
        "denied.json",
        &certificate("denied", "disproved", args.clone()).to_string(),
    );
    write(
        p,
        "bad.json",
        &certificate("authorized", "disproved", args.clone()).to_string(),
    );
    let request = json!({
        "schema": "zerker.reason.action.v1",
        "mission": {"id": "mission-1", "principal": "user:x"},
        "action": {"id": "action-1", "tool": "deploy", "proposed_at": "2026-11-30T10:00:00Z",
                   "arguments": {"opts": {"b": [true, null], "a": 1}, "env": "prod"},
                   "effects": [{"value": "prod", "resource": "r", "kind": "deploy"}]},
        "policy": {}
    });
    write(p, "request.json", &request.to_string());
    let mut other = request.clone();
    other["action"]["arguments"]["env"] = json!("staging");
    write(p, "other-request.json", &other.to_string());
    write(
        p,
        "call.json",
        r#"{"tool": "deploy", "arguments": {"opts": {"b": [true, null], "a": 1.0}, "env": "prod"}}"#,
    );
    write(
        p,
        "wrong-call.json",
        r#"{"tool": "deploy", "arguments": {"opts": {"b": [true, null], "a": 2}, "env": "prod"}}"#,
    );

    assert_eq!(
        chit_in(p, &["verify", "ok.json", "denied.json"], None).code,
        0
    );
    let run = chit_in(p, &["verify", "bad.json"], None);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("error A2:"), "{}", run.stdout);
    let run = chit_in(
        p,
        &[
            "verify",
            "ok.json",
            "--request",
            "request.json",
            "--call",
            "call.json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let run = chit_in(
        p,
        &["verify", "ok.json", "--request", "other-request.json"],
        None,
    );
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("error A5:"), "{}", run.stdout);
    let run = chit_in(p, &["verify", "ok.json", "--call", "wrong-call.json"], None);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("error A6:"), "{}", run.stdout);
    // --require-authorized: 0 only for authorized; the status is named.
    assert_eq!(
        chit_in(p, &["verify", "--require-authorized", "ok.json"], None).code,
        0
    );
    let run = chit_in(p, &["verify", "--require-authorized", "denied.json"], None);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("status is denied"), "{}", run.stdout);
    // A bundle is detected and checked against its own request.
    let bundle = json!({
        "schema": "zerker.reason.authorization-bundle.v1",
        "request": other,
        "certificate": certificate("authorized", "proved", args),
    });
    write(p, "bundle.json", &bundle.to_string());
    let run = chit_in(p, &["verify", "--json", "bundle.json"], None);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .contains("\"kind\":\"zerker.reason.authorization.v1\""),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("\"rule\":\"A5\""), "{}", run.stdout);
    // A request that cannot be read stops the command.
    write(p, "broken.json", "{");
    assert_eq!(
        chit_in(p, &["verify", "ok.json", "--request", "broken.json"], None).code,
        2
    );
}
