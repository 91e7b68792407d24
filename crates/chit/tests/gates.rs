//! Gates fail closed, through the command line (issue 10, items 3-9): the
//! Reason gates accept only certificates, `--trust` trusts only the keys it
//! lists (for every kind, within `kinds` and `--threshold`), every check
//! holds inside an envelope, an unsigned input under `--trust` fails and
//! fills no gap, and a recompute `match` carries its evidence.

mod common;
use common::{chit_in, example_text, repo, Run};
use serde_json::{json, Value};
use std::path::Path;

const RECEIPT: &str = include_str!("../../chit-core/tests/data/lineage/coupled.receipt.json");
const SEQUENCES: &str = include_str!("../../chit-core/tests/data/lineage/coupled.sequences.jsonl");

fn write(d: &Path, name: &str, text: &str) {
    std::fs::write(d.join(name), text).unwrap();
}

fn run(d: &Path, args: &[&str]) -> Run {
    chit_in(d, args, None)
}

fn receipt_did() -> String {
    let v: Value = serde_json::from_str(RECEIPT).unwrap();
    v["key_id"].as_str().unwrap().to_owned()
}

/// `k.pem` and `other.pem`, and `k.toml` trusting k alone.
fn keys(d: &Path) -> String {
    assert_eq!(run(d, &["keygen", "--out", "k.pem"]).code, 0);
    assert_eq!(run(d, &["keygen", "--out", "other.pem"]).code, 0);
    let show = run(d, &["key", "show", "k.pem"]);
    let k = show
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("treeship    "))
        .unwrap()
        .to_string();
    write(
        d,
        "k.toml",
        &format!("[[key]]\nname = \"k\"\npublic_key = \"{k}\"\n"),
    );
    k
}

fn sign(d: &Path, pem: &str, kind: &str, input: &str, out: &str) {
    let r = run(
        d,
        &["sign", "--key", pem, "--kind", kind, "--out", out, input],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// A Reason certificate of `status` (authorized or denied), made from the
/// example request by chit's Reason authorizer, so it recomputes.
fn certificate(status: &str, _reasoning: &str) -> Value {
    let mut req = request("production");
    if status == "denied" {
        for fact in req["policy"]["facts"].as_array_mut().unwrap() {
            if fact["id"] == "fact_no_freeze" {
                fact["negated"] = json!(false);
            }
        }
    }
    let text = req.to_string();
    let doc = chit_core::json::parse(text.as_bytes(), &Default::default()).unwrap();
    let (_, cert) = chit_core::kinds::reason::authorize_request(doc.root()).unwrap();
    assert_eq!(cert.status.as_str(), status);
    serde_json::to_value(cert).unwrap()
}

/// The example request, its `environment` argument set to `env`, without
/// its whole number past 2^53 (a signed statement, RFC 8785, cannot carry
/// it unchanged, so chit refuses to sign it).
fn request(env: &str) -> Value {
    let mut req: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("examples/reason/request.json")).unwrap(),
    )
    .unwrap();
    req["action"]["arguments"]["environment"] = json!(env);
    req["action"]["arguments"]
        .as_object_mut()
        .unwrap()
        .remove("ticket");
    req
}

fn packet(seq: u64) -> Value {
    let mut p = json!({
        "schema": "verification.packet.v1",
        "stream_id": "s",
        "packet_id": format!("p{seq}"),
        "sequence": seq,
        "model_digest": format!("sha256:{}", "a".repeat(64)),
        "input_digest": format!("sha256:{}", "b".repeat(64)),
        "output_digest": format!("sha256:{:064x}", seq),
        "produced_at": "2026-11-30T09:00:00Z",
        "reproducibility": "bit_exact",
    });
    if seq > 0 {
        p["prev_packet_id"] = format!("p{}", seq - 1).into();
    }
    p
}

#[test]
fn item3_reason_gates_refuse_what_is_not_a_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "r.json", &example_text("agreed-verified.json"));
    write(d, "request.json", &request("production").to_string());
    write(
        d,
        "call.json",
        &json!({"tool": "deploy_release", "arguments": request("production")["action"]["arguments"]})
            .to_string(),
    );
    write(d, "p.json", &packet(0).to_string());
    for gate in [
        vec!["--require-authorized", "--call", "call.json"],
        vec!["--request", "request.json"],
        vec!["--call", "call.json"],
    ] {
        for input in ["r.json", "p.json"] {
            let mut args = vec!["verify"];
            args.extend(&gate);
            args.push(input);
            let r = run(d, &args);
            assert_eq!(r.code, 1, "{args:?}: {}", r.stdout);
            assert!(r.stdout.contains("error authorized:"), "{}", r.stdout);
            assert!(r.stdout.contains("Reason certificate"), "{}", r.stdout);
        }
    }
    // The certificate itself still opens the gate.
    write(
        d,
        "ok.json",
        &certificate("authorized", "proved").to_string(),
    );
    let r = run(
        d,
        &[
            "verify",
            "--require-authorized",
            "--request",
            "request.json",
            "--call",
            "call.json",
            "ok.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stdout);
}

#[test]
fn item4_an_unlisted_did_key_fails_under_trust() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keys(d);
    write(d, "receipt.json", RECEIPT);
    let r = run(d, &["verify", "--trust", "k.toml", "receipt.json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout.contains("error trust:") && r.stdout.contains("does not list"),
        "{}",
        r.stdout
    );
    write(
        d,
        "lab.toml",
        &format!(
            "[[key]]\nname = \"lab\"\npublic_key = \"{}\"\n",
            receipt_did()
        ),
    );
    let r = run(d, &["verify", "--trust", "lab.toml", "receipt.json"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    // Documented.
    let help = run(d, &["verify", "--help"]);
    let words: Vec<&str> = help.stdout.split_whitespace().collect();
    assert!(
        words
            .join(" ")
            .contains("Only the keys it lists are trusted, for every kind"),
        "{}",
        help.stdout
    );
}

#[test]
fn item5_sign_refuses_a_kind_its_payload_contradicts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keys(d);
    write(d, "r.json", &example_text("agreed-verified.json"));
    let r = run(
        d,
        &[
            "sign",
            "--key",
            "k.pem",
            "--kind",
            "my.custom.kind",
            "--out",
            "e.json",
            "r.json",
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("refusing to sign r.json") && r.stderr.contains("--kind run-receipt"),
        "{}",
        r.stderr
    );
    assert!(!d.join("e.json").exists());
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}

#[test]
fn item6_every_check_holds_inside_an_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keys(d);
    write(
        d,
        "denied.json",
        &certificate("denied", "disproved").to_string(),
    );
    write(
        d,
        "ok.json",
        &certificate("authorized", "proved").to_string(),
    );
    sign(
        d,
        "k.pem",
        "zerker.reason.authorization.v1",
        "denied.json",
        "denied.env.json",
    );
    sign(
        d,
        "k.pem",
        "zerker.reason.authorization.v1",
        "ok.json",
        "ok.env.json",
    );
    write(d, "other-request.json", &request("staging").to_string());
    write(d, "request.json", &request("production").to_string());
    write(
        d,
        "wrong-call.json",
        r#"{"tool": "deploy", "arguments": {"env": "staging"}}"#,
    );
    let t = ["verify", "--trust", "k.toml"];
    let with = |extra: &[&str]| {
        let mut a = t.to_vec();
        a.extend(extra);
        run(d, &a)
    };
    let r = with(&["ok.env.json"]);
    assert_eq!(
        r.code, 1,
        "a certificate without its request is not recomputed"
    );
    assert!(r.stdout.starts_with("UNCHECKED"), "{}", r.stdout);
    assert_eq!(with(&["--allow-unchecked", "ok.env.json"]).code, 0);
    assert_eq!(with(&["--request", "request.json", "ok.env.json"]).code, 0);
    let r = with(&["--require-authorized", "denied.env.json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("status is denied"), "{}", r.stdout);
    let r = with(&["--call", "wrong-call.json", "ok.env.json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("error A6:"), "{}", r.stdout);
    let r = with(&["--request", "other-request.json", "ok.env.json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("error A5:"), "{}", r.stdout);

    // A lineage receipt in an envelope, against a transcript that does not
    // match it, and its own signer against the trust file.
    write(d, "receipt.json", RECEIPT);
    write(d, "right.jsonl", SEQUENCES);
    write(d, "wrong.jsonl", &SEQUENCES.replacen("5a5a", "5a5b", 1));
    sign(
        d,
        "k.pem",
        "numeric.lineage",
        "receipt.json",
        "receipt.env.json",
    );
    let k = std::fs::read_to_string(d.join("k.toml")).unwrap();
    write(
        d,
        "both.toml",
        &format!(
            "{k}\n[[key]]\nname = \"lab\"\npublic_key = \"{}\"\n",
            receipt_did()
        ),
    );
    let r = run(
        d,
        &[
            "verify",
            "--trust",
            "both.toml",
            "--transcript",
            "wrong.jsonl",
            "receipt.env.json",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("error L13:"), "{}", r.stdout);
    let r = run(
        d,
        &[
            "verify",
            "--trust",
            "both.toml",
            "--transcript",
            "right.jsonl",
            "receipt.env.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stdout);
    // The receipt's own signer is not in k.toml.
    let r = run(d, &["verify", "--trust", "k.toml", "receipt.env.json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("error trust:"), "{}", r.stdout);
}

#[test]
fn item7_threshold_and_kinds_hold_for_lineage_receipts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keys(d);
    write(d, "receipt.json", RECEIPT);
    let lab = |kinds: &str| {
        write(
            d,
            "lab.toml",
            &format!(
                "[[key]]\nname = \"lab\"\npublic_key = \"{}\"\n{kinds}",
                receipt_did()
            ),
        )
    };
    lab("");
    assert_eq!(
        run(d, &["verify", "--trust", "lab.toml", "receipt.json"]).code,
        0
    );
    let r = run(
        d,
        &[
            "verify",
            "--trust",
            "lab.toml",
            "--threshold",
            "2",
            "receipt.json",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("error threshold:"), "{}", r.stdout);
    for kinds in ["kinds = [\"verification.packet.v1\"]\n", "kinds = []\n"] {
        lab(kinds);
        let r = run(d, &["verify", "--trust", "lab.toml", "receipt.json"]);
        assert_eq!(r.code, 1, "{kinds}: {}", r.stdout);
        assert!(r.stdout.contains("error trust:"), "{}", r.stdout);
    }
    // In an envelope signed by k: k and the receipt's signer make two.
    lab("");
    let k = std::fs::read_to_string(d.join("k.toml")).unwrap();
    let l = std::fs::read_to_string(d.join("lab.toml")).unwrap();
    write(d, "both.toml", &format!("{k}\n{l}"));
    sign(
        d,
        "k.pem",
        "numeric.lineage",
        "receipt.json",
        "receipt.env.json",
    );
    let two = run(
        d,
        &[
            "verify",
            "--trust",
            "both.toml",
            "--threshold",
            "2",
            "receipt.env.json",
        ],
    );
    assert_eq!(two.code, 0, "{}", two.stdout);
    let three = run(
        d,
        &[
            "verify",
            "--trust",
            "both.toml",
            "--threshold",
            "3",
            "receipt.env.json",
        ],
    );
    assert_eq!(three.code, 1, "{}", three.stdout);
}

#[test]
fn item8_under_trust_unsigned_inputs_fail_and_fill_no_gap() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keys(d);
    for seq in 0..3 {
        write(d, &format!("p{seq}.json"), &packet(seq).to_string());
    }
    sign(
        d,
        "k.pem",
        "verification.packet.v1",
        "p0.json",
        "p0.env.json",
    );
    sign(
        d,
        "k.pem",
        "verification.packet.v1",
        "p2.json",
        "p2.env.json",
    );
    sign(
        d,
        "other.pem",
        "verification.packet.v1",
        "p1.json",
        "p1.forged.json",
    );
    // A bare packet under --trust --threshold 2.
    let r = run(
        d,
        &["verify", "--trust", "k.toml", "--threshold", "2", "p1.json"],
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    // An unsigned packet does not fill the gap, even with --quiet.
    let r = run(
        d,
        &[
            "verify",
            "--trust",
            "k.toml",
            "--quiet",
            "p0.env.json",
            "p1.json",
            "p2.env.json",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("p1.json"), "{}", r.stdout);
    assert!(r.stdout.contains("error P3:"), "{}", r.stdout);
    // Nor does a forged one.
    let r = run(
        d,
        &[
            "verify",
            "--trust",
            "k.toml",
            "p0.env.json",
            "p1.forged.json",
            "p2.env.json",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("error P3:"), "{}", r.stdout);
    // An unsigned recompute result claiming match.
    let result = json!({
        "schema": "verification.recompute.v1", "packet": "art_x", "packet_id": "p1",
        "method": "bit_exact", "verdict": "match",
        "output_digest_recomputed": format!("sha256:{:064x}", 1),
        "recomputed_at": "2026-11-30T09:05:00Z",
    });
    write(d, "result.json", &result.to_string());
    let r = run(d, &["verify", "--trust", "k.toml", "result.json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("error threshold:"), "{}", r.stdout);
    // Signed, the stream is whole.
    sign(
        d,
        "k.pem",
        "verification.packet.v1",
        "p1.json",
        "p1.env.json",
    );
    let r = run(
        d,
        &[
            "verify",
            "--trust",
            "k.toml",
            "p0.env.json",
            "p1.env.json",
            "p2.env.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stdout);
}

#[test]
fn item9_recompute_results_carry_and_meet_their_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let result = |method: &str, digest: Option<String>| {
        let mut r = json!({
            "schema": "verification.recompute.v1", "packet": format!("art_{}", "0".repeat(32)),
            "packet_id": "p1", "method": method, "verdict": "match",
            "recomputed_at": "2026-11-30T09:05:00Z",
        });
        if let Some(o) = digest {
            r["output_digest_recomputed"] = o.into();
        }
        r.to_string()
    };
    write(d, "none.json", &result("bit_exact", None));
    assert_eq!(run(d, &["verify", "none.json"]).code, 1);
    // A packet claiming no reproducibility; the result claims bit_exact
    // with another digest, and names an art id not among the inputs.
    let mut p = packet(1);
    p["reproducibility"] = "none".into();
    write(d, "p1.json", &p.to_string());
    write(
        d,
        "r.json",
        &result("bit_exact", Some(format!("sha256:{:064x}", 99))),
    );
    let r = run(d, &["verify", "p1.json", "r.json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("error R2:"), "{}", r.stdout);
}
