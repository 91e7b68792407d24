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
            .contains("{\"rebind\":\"todo-1\",\"valid\":true,\"status\":\"valid\",\"errors\":[],\"warnings\":[]}"),
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

/// A change to one fact: its id, and what to do to it.
type FactChange<'a> = Option<(&'a str, &'a dyn Fn(&mut serde_json::Value))>;

/// The example request, with the fact `id` changed by `f` where given.
fn request_with(fact: FactChange) -> serde_json::Value {
    let text =
        std::fs::read_to_string(common::repo().join("examples/reason/request.json")).unwrap();
    let mut req: serde_json::Value = serde_json::from_str(&text).unwrap();
    if let Some((id, f)) = fact {
        for x in req["policy"]["facts"].as_array_mut().unwrap() {
            if x["id"] == id {
                f(x);
            }
        }
    }
    req
}

#[test]
fn reason_certificates_requests_calls_and_require_authorized() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let request = request_with(None);
    write(p, "request.json", &request.to_string());
    let deny = |f: &mut serde_json::Value| f["negated"] = json!(false);
    write(
        p,
        "denied-request.json",
        &request_with(Some(("fact_no_freeze", &deny))).to_string(),
    );
    // chit reason authorize writes the certificate and the bundle, and
    // exits as Reason's authorize does.
    let run = chit_in(
        p,
        &[
            "reason",
            "authorize",
            "request.json",
            "--certificate-out",
            "ok.json",
            "--bundle-out",
            "ok.bundle.json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.starts_with("AUTHORIZED"), "{}", run.stdout);
    let again = chit_in(
        p,
        &[
            "reason",
            "authorize",
            "request.json",
            "--certificate-out",
            "ok.json",
        ],
        None,
    );
    assert_eq!(
        again.code, 2,
        "an existing file is never replaced without --force"
    );
    let run = chit_in(
        p,
        &[
            "reason",
            "authorize",
            "denied-request.json",
            "--certificate-out",
            "denied.json",
        ],
        None,
    );
    assert_eq!(run.code, 3, "{}", run.stdout);

    let mut other = request.clone();
    other["action"]["arguments"]["environment"] = json!("staging");
    write(p, "other-request.json", &other.to_string());
    write(
        p,
        "call.json",
        r#"{"arguments": {"ticket": 9007199254740993, "environment": "production", "replicas": 3, "commit": "9f2c1e7"}, "tool": "deploy_release"}"#,
    );
    write(
        p,
        "wrong-call.json",
        r#"{"tool": "deploy_release", "arguments": {"ticket": 9007199254740992, "environment": "production", "replicas": 3, "commit": "9f2c1e7"}}"#,
    );

    // Alone: the portable rules hold, but nothing was recomputed, so it is
    // UNCHECKED: not valid unless --allow-unchecked.
    let run = chit_in(p, &["verify", "ok.json", "denied.json"], None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("UNCHECKED ok.json"), "{}", run.stdout);
    assert!(run.stdout.contains("warning A7:"), "{}", run.stdout);
    assert!(
        run.stdout.contains("2 unchecked (not recomputed)"),
        "{}",
        run.stdout
    );
    let run = chit_in(
        p,
        &["verify", "--allow-unchecked", "ok.json", "denied.json"],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let run = chit_in(p, &["verify", "--json", "ok.json"], None);
    assert!(
        run.stdout
            .contains("\"valid\":false,\"status\":\"unchecked\""),
        "{}",
        run.stdout
    );
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
    assert!(run.stdout.contains("error A7:"), "{}", run.stdout);
    let run = chit_in(p, &["verify", "ok.json", "--call", "wrong-call.json"], None);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("error A6:"), "{}", run.stdout);
    // --require-authorized: 0 only for authorized, and only recomputed.
    let run = chit_in(p, &["verify", "--require-authorized", "ok.json"], None);
    assert_eq!(run.code, 1, "a certificate alone proves nothing");
    assert!(run.stdout.contains("give the request"), "{}", run.stdout);
    let ok = [
        "verify",
        "--require-authorized",
        "--request",
        "request.json",
        "ok.json",
    ];
    assert_eq!(chit_in(p, &ok, None).code, 0);
    assert_eq!(
        chit_in(
            p,
            &["verify", "--require-authorized", "ok.bundle.json"],
            None
        )
        .code,
        0
    );
    let run = chit_in(
        p,
        &[
            "verify",
            "--require-authorized",
            "--request",
            "denied-request.json",
            "denied.json",
        ],
        None,
    );
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("status is denied"), "{}", run.stdout);
    // A bundle of the other request: every failure named, under --json.
    let bundle = json!({
        "schema": "zerker.reason.authorization-bundle.v1",
        "request": other,
        "certificate": serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(p.join("ok.json")).unwrap()).unwrap(),
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
    assert!(run.stdout.contains("\"rule\":\"A7\""), "{}", run.stdout);
    // A request that cannot be read stops the command.
    write(p, "broken.json", "{");
    assert_eq!(
        chit_in(p, &["verify", "ok.json", "--request", "broken.json"], None).code,
        2
    );
}

/// `chit reason` as a drop-in for Reason's CLI: its objects, its exit
/// statuses, on files and on standard input.
#[test]
fn chit_reason_speaks_reasons_cli() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let cases: [(&str, &str, FactChange, i32); 3] = [
        ("authorized", "authorized", None, 0),
        (
            "denied",
            "denied",
            Some(("fact_no_freeze", &|f| f["negated"] = json!(false))),
            3,
        ),
        (
            "unknown",
            "insufficient_evidence",
            Some(("fact_approval", &|f| {
                f["authority"] = json!("agent-proposed")
            })),
            2,
        ),
    ];
    for (name, status, change, code) in cases {
        let req = format!("{name}-request.json");
        write(p, &req, &request_with(change).to_string());
        let bundle = format!("{name}.bundle.json");
        let run = chit_in(
            p,
            &[
                "reason",
                "--format",
                "json",
                "authorize",
                &req,
                "--bundle-out",
                &bundle,
            ],
            None,
        );
        assert_eq!(run.code, code, "{}", run.stdout);
        let cert: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(cert["status"], status);
        let bytes = std::fs::read(p.join(&bundle)).unwrap();
        let args = common::REASON_BUNDLE_GATE;
        let run = common::chit_raw(p, &args, Some(&bytes));
        assert_eq!(run.code, code, "{name}");
        let out: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(out["schema"], "zerker.reason.authorization-verification.v1");
        assert_eq!(out["status"], "verified");
        assert_eq!(out["authorization_status"], status);
        assert_eq!(out["request_digest"], cert["request_digest"]);
        // Without --require-authorized, verified is 0 whatever the status.
        let run = common::chit_raw(p, &args[..5], Some(&bytes));
        assert_eq!(run.code, 0, "{name}");
        // The two-file form.
        let b: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        write(p, "c.json", &b["certificate"].to_string());
        let run = chit_in(p, &["reason", "verify-authorization", &req, "c.json"], None);
        assert_eq!(run.code, 0, "{}", run.stdout);
        assert!(run.stdout.starts_with("VERIFIED"), "{}", run.stdout);
    }
    // Errors: Reason's error object, exit 1, unreadable input included.
    let mut forged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.join("unknown.bundle.json")).unwrap()).unwrap();
    forged["certificate"]["status"] = json!("authorized");
    for (name, text) in [
        ("forged", forged.to_string()),
        ("truncated", "{\"schema\"".to_string()),
    ] {
        let args = common::REASON_BUNDLE_GATE;
        let run = common::chit_raw(p, &args, Some(text.as_bytes()));
        assert_eq!(run.code, 1, "{name}");
        let out: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(out["schema"], "zerker.reason.error.v1");
        assert_eq!(out["status"], "error");
        let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["error", "schema", "status"]);
        // Text: the error on standard error, nothing on standard output.
        let text_args = [
            "reason",
            "verify-authorization-bundle",
            "-",
            "--require-authorized",
        ];
        let run = common::chit_raw(p, &text_args, Some(text.as_bytes()));
        assert_eq!(run.code, 1, "{name}");
        assert!(run.stdout.is_empty());
        assert!(run.stderr.starts_with("chit: "), "{}", run.stderr);
    }
    let forged_path = p.join("forged.json");
    std::fs::write(&forged_path, forged.to_string()).unwrap();
    let run = chit_in(
        p,
        &[
            "reason",
            "--format",
            "json",
            "verify-authorization-bundle",
            "forged.json",
        ],
        None,
    );
    assert!(
        run.stdout.contains("A8 /certificate/status"),
        "{}",
        run.stdout
    );
}
