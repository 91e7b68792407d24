//! Keys, signing and signed receipts through the command line, with
//! Treeship's own envelopes (chit-core/tests/data/treeship, Apache-2.0).

mod common;
use common::{chit_in, example_text, Run};
use serde_json::Value;
use std::path::{Path, PathBuf};

const TREESHIP_KEY: &str = "ed25519:SeVxSanX9yDn1yvX3DdaNsLaqXcy2X3FUHSyz8QRHFY";

fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../chit-core/tests/data/treeship")
}

/// `chit verify --trust TRUST ARGS...` in `d`.
fn verify_trusted(d: &Path, trust: &Path, args: &[&str]) -> Run {
    let mut all = vec!["verify", "--trust", trust.to_str().unwrap()];
    all.extend_from_slice(args);
    chit_in(d, &all, None)
}

fn trust(dir: &Path, name: &str, key: &str, kinds: Option<&str>) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    let kinds = kinds
        .map(|k| format!("kinds = [\"{k}\"]\n"))
        .unwrap_or_default();
    std::fs::write(
        &path,
        format!("[[key]]\nname = \"{name}\"\npublic_key = \"{key}\"\n{kinds}"),
    )
    .unwrap();
    path
}

fn public_key(dir: &Path, key: &str) -> String {
    let run = chit_in(dir, &["key", "show", key], None);
    run.stdout
        .lines()
        .find_map(|l| l.strip_prefix("treeship    "))
        .unwrap()
        .to_string()
}

#[test]
fn keygen_writes_a_private_key_once() {
    let dir = tempfile::tempdir().unwrap();
    let run = chit_in(dir.path(), &["keygen", "--out", "k.pem"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("did:key     did:key:z6Mk"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("PRIVATE"),
        "the private key is never printed"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("k.pem"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let before = std::fs::read(dir.path().join("k.pem")).unwrap();
    let again = chit_in(dir.path(), &["keygen", "--out", "k.pem"], None);
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("never overwrites"));
    assert_eq!(std::fs::read(dir.path().join("k.pem")).unwrap(), before);
    let show = chit_in(dir.path(), &["key", "show", "k.pem"], None);
    assert_eq!(
        show.stdout,
        run.stdout
            .lines()
            .skip(1)
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    );
}

#[test]
fn sign_then_verify_under_trust() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    chit_in(d, &["keygen", "--out", "k.pem"], None);
    chit_in(d, &["keygen", "--out", "other.pem"], None);
    std::fs::write(d.join("r.json"), example_text("agreed-verified.json")).unwrap();
    let run = chit_in(
        d,
        &[
            "sign",
            "--key",
            "k.pem",
            "--kind",
            "run-receipt",
            "--out",
            "r.env.json",
            "r.json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("signed r.env.json art_"),
        "{}",
        run.stdout
    );

    // Without trust: never valid, and the message says how to fix it.
    let run = chit_in(d, &["verify", "r.env.json"], None);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("error trust: no trusted keys") && run.stdout.contains("--trust FILE"),
        "{}",
        run.stdout
    );

    let me = public_key(d, "k.pem");
    let t = trust(d, "me", &me, None);
    let run = verify_trusted(d, &t, &["--json", "r.env.json"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["kind"], "run-receipt");
    assert!(v["artifact_id"].as_str().unwrap().starts_with("art_"));

    // Another key's trust: the signature names its keyid.
    let other = trust(d, "other", &public_key(d, "other.pem"), None);
    let run = verify_trusted(d, &other, &["r.env.json"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .contains("error signature: signature 0 (keyid key_"),
        "{}",
        run.stdout
    );

    // A key allowed other kinds only.
    let narrow = trust(d, "narrow", &me, Some("verification.packet.v1"));
    let run = verify_trusted(d, &narrow, &["r.env.json"]);
    assert!(
        run.stdout
            .contains("key narrow signed a run-receipt, which the trust file does not let it sign"),
        "{}",
        run.stdout
    );

    // A threshold of two distinct keys: one key is not enough.
    let run = verify_trusted(d, &t, &["--threshold", "2", "r.env.json"]);
    assert!(
        run.stdout
            .contains("error threshold: 1 distinct trusted key(s) signed; 2 required"),
        "{}",
        run.stdout
    );
}

#[test]
fn an_invalid_payload_is_not_signed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    chit_in(d, &["keygen", "--out", "k.pem"], None);
    let bad = example_text("agreed-verified.json").replacen(
        "\"grade\": \"verified\"",
        "\"grade\": \"failed\"",
        1,
    );
    std::fs::write(d.join("bad.json"), bad).unwrap();
    let run = chit_in(
        d,
        &[
            "sign",
            "--key",
            "k.pem",
            "--kind",
            "run-receipt",
            "bad.json",
        ],
        None,
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("refusing to sign bad.json: as a run-receipt it breaks D1, G1"),
        "{}",
        run.stderr
    );
    // An unknown kind is signed as given, with a warning; verify warns too.
    std::fs::write(d.join("x.json"), "{\"anything\": 1}").unwrap();
    let run = chit_in(
        d,
        &[
            "sign",
            "--key",
            "k.pem",
            "--kind",
            "example.unknown.v1",
            "--out",
            "x.env.json",
            "x.json",
        ],
        None,
    );
    assert_eq!(run.code, 0);
    assert!(
        run.stderr.contains("signed as given, unchecked"),
        "{}",
        run.stderr
    );
    let t = trust(d, "me", &public_key(d, "k.pem"), None);
    // Signed by a trusted key, but nobody read the payload: SIGNED, which
    // fails closed (exit 1) unless --allow-unchecked lets it pass.
    let run = verify_trusted(d, &t, &["x.env.json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.starts_with("SIGNED x.env.json\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("warning kind: payload of kind example.unknown.v1 not checked"),
        "{}",
        run.stdout
    );
    let run = verify_trusted(d, &t, &["--allow-unchecked", "x.env.json"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.starts_with("SIGNED x.env.json\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn treeship_envelopes_verify_as_a_stream() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = trust(d, "treeship", TREESHIP_KEY, None);
    let run = verify_trusted(d, &t, &["--expect-count", "5", vectors().to_str().unwrap()]);
    // artifact-ids.json in the same folder is no receipt: rule kind.
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(
        run.stdout.matches("\nVALID ").count() + usize::from(run.stdout.starts_with("VALID ")),
        8,
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("VALID stream stream-α (5 packets)\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("VALID recompute "), "{}", run.stdout);
}

/// Copies the Treeship packets into `d`, leaving out those named.
fn packets_without(d: &Path, skip: &[&str]) {
    for e in std::fs::read_dir(vectors()).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".envelope.json") && !skip.iter().any(|s| name.starts_with(s)) {
            std::fs::copy(&p, d.join(&name)).unwrap();
        }
    }
}

#[test]
fn a_dropped_packet_and_a_forged_one_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("in");
    std::fs::create_dir(&d).unwrap();
    packets_without(&d, &["pkt-2", "recompute"]);
    let t = trust(dir.path(), "treeship", TREESHIP_KEY, None);
    let run = verify_trusted(dir.path(), &t, &["in"]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("INVALID stream stream-α (4 packets)\n  error P3: 1 packet(s) dropped: sequence 2 missing"), "{}", run.stdout);

    // Forge pkt-3's signature, and file pkt-4 under another art id.
    let p3 = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("pkt-3"))
        .unwrap();
    let mut env: Value = serde_json::from_str(&std::fs::read_to_string(&p3).unwrap()).unwrap();
    let sig = env["signatures"][0]["sig"].as_str().unwrap().to_string();
    let flipped = match sig.strip_prefix('A') {
        Some(rest) => format!("B{rest}"),
        None => format!("A{}", &sig[1..]),
    };
    env["signatures"][0]["sig"] = flipped.into();
    std::fs::write(&p3, serde_json::to_string(&env).unwrap()).unwrap();
    let p4 = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("pkt-4"))
        .unwrap();
    std::fs::rename(
        &p4,
        d.join("pkt-4__art_00000000000000000000000000000000.envelope.json"),
    )
    .unwrap();
    let run = verify_trusted(dir.path(), &t, &["in"]);
    assert!(
        run.stdout.contains("pkt-3__")
            && run.stdout.contains(
                "error signature: signature 0 (keyid key_0392421668c57f3a) does not verify"
            ),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("error art: filed as art_00000000000000000000000000000000, but the envelope's art id is art_f7a0db9b6724bb95402a7cac6020064d"), "{}", run.stdout);
}

#[test]
fn broken_envelopes_are_unreadable_or_invalid_never_valid() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = trust(d, "treeship", TREESHIP_KEY, None);
    for (i, (text, needle)) in [
        (r#"{"payload":"","payloadType":"application/vnd.treeship.receipt.v1+json","signatures":[{"sig":"AAAA"}]}"#, "error signature"),
        (r#"{"payload":"%%","payloadType":"t","signatures":[{"sig":"AA"}]}"#, "error envelope: the payload is not valid base64"),
        (r#"{"payload":"bm90IGpzb24","payloadType":"application/vnd.treeship.receipt.v1+json","signatures":[{"sig":"AA"}]}"#, "error statement: the payload is not JSON"),
        (r#"{"payload":"e30","payloadType":"t","signatures":[{"sig":"c2hvcnQ"}]}"#, "error signature"),
    ]
    .iter()
    .enumerate()
    {
        let name = format!("e{i}.json");
        std::fs::write(d.join(&name), text).unwrap();
        let run = verify_trusted(d, &t, &[&name]);
        assert_eq!(run.code, 1, "{text}: {}", run.stdout);
        assert!(run.stdout.contains(needle), "{text}: {}", run.stdout);
    }
}

#[test]
fn bare_packets_in_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let line = |seq: u32, prev: &str| {
        format!(
            "{{\"schema\":\"verification.packet.v1\",\"packet_id\":\"p{seq}\",\"stream_id\":\"s\",\"sequence\":{seq},\"prev_packet_id\":{prev},\"model_digest\":\"sha256:{m}\",\"input_digest\":\"sha256:{m}\",\"output_digest\":\"md5:00\",\"produced_at\":\"2026-11-30T09:00:0{seq}Z\"}}\n",
            m = "a".repeat(64)
        )
    };
    let stream = line(0, "null") + &line(1, "\"p0\"") + &line(1, "\"p0\"") + &line(3, "\"p2\"");
    std::fs::write(dir.path().join("s.jsonl"), stream).unwrap();
    let run = chit_in(
        dir.path(),
        &["verify", "--json", "--lines", "s.jsonl"],
        None,
    );
    assert_eq!(run.code, 1);
    let last: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["stream"], "s");
    let rules: Vec<&str> = last["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["P1", "P2", "P3"], "{last}");
    let first: Value = serde_json::from_str(run.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(
        first["warnings"][0]["rule"], "P5",
        "md5 is not an algorithm chit knows: {first}"
    );
}

#[test]
fn recompute_results_alone() {
    let dir = tempfile::tempdir().unwrap();
    let r = |verdict: &str, extra: &str| {
        format!("{{\"schema\":\"verification.recompute.v1\",\"packet\":\"art_x\",\"packet_id\":\"p\",\"method\":\"difr\",\"verdict\":\"{verdict}\",\"recomputed_at\":\"2026-11-30T09:00:00Z\"{extra}}}")
    };
    for (text, code, needle) in [
        (
            r("match", ",\"distance\":0.5,\"threshold\":0.1"),
            1,
            "error R3: distance 0.5 against threshold 0.1 is a mismatch, not a match",
        ),
        (
            r("match", ",\"distance\":0.5"),
            1,
            "error R3: distance and threshold go together",
        ),
        (r("inconclusive", ""), 0, "warning R4"),
        (
            r("match", ",\"distance\":0.1,\"threshold\":0.1"),
            0,
            "VALID",
        ),
    ] {
        std::fs::write(dir.path().join("r.json"), &text).unwrap();
        let run = chit_in(dir.path(), &["verify", "r.json"], None);
        assert_eq!(run.code, code, "{text}: {}", run.stdout);
        assert!(run.stdout.contains(needle), "{text}: {}", run.stdout);
    }
}

/// A signed packet whose workload is `cat` (output = input), with `claim`.
fn cat_packet(d: &Path, claim: &str) {
    std::fs::write(d.join("in.bin"), "hello workload\n").unwrap();
    let digest = chit_core::digest::sha256_tagged(b"hello workload\n");
    let packet = format!(
        "{{\"schema\":\"verification.packet.v1\",\"packet_id\":\"p0\",\"stream_id\":\"s\",\"sequence\":0,\"prev_packet_id\":null,\
         \"model_digest\":\"sha256:{m}\",\"input_digest\":\"{digest}\",\"output_digest\":\"{digest}\",\
         \"reproducibility\":\"{claim}\",\"produced_at\":\"2026-11-30T09:00:00Z\"}}",
        m = "a".repeat(64)
    );
    std::fs::write(d.join("pkt.json"), packet).unwrap();
    if !d.join("k.pem").exists() {
        chit_in(d, &["keygen", "--out", "k.pem"], None);
    }
    let run = chit_in(
        d,
        &[
            "sign",
            "--key",
            "k.pem",
            "--kind",
            "verification.packet.v1",
            "--out",
            "pkt.env.json",
            // A test may write the packet again (issue 10, item 1).
            "--force",
            "pkt.json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
}

fn recompute(d: &Path, extra: &[&str], command: &[&str]) -> (common::Run, Value) {
    let t = trust(d, "me", &public_key(d, "k.pem"), None);
    let mut args = vec![
        "packets",
        "recompute",
        "--key",
        "k.pem",
        "--packet",
        "pkt.env.json",
        "--input",
        "in.bin",
        "--trust",
    ];
    args.push(t.to_str().unwrap());
    args.extend_from_slice(extra);
    // Each call writes rec.env.json again: --force (issue 10, item 1).
    args.extend_from_slice(&["--out", "rec.env.json", "--force", "--"]);
    args.extend_from_slice(command);
    let run = chit_in(d, &args, None);
    let verified = verify_trusted(d, &t, &["--json", "pkt.env.json", "rec.env.json"]);
    assert_eq!(verified.code, 0, "{}", verified.stdout);
    // The result, decoded from its envelope.
    let env: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("rec.env.json")).unwrap_or_default())
            .unwrap_or(Value::Null);
    let payload = env["payload"]
        .as_str()
        .map(|p| chit_core::keys::decode_base64(p).unwrap())
        .unwrap_or_default();
    let statement: Value = serde_json::from_slice(&payload).unwrap_or(Value::Null);
    (run, statement)
}

#[cfg(unix)]
#[test]
fn recompute_decides_under_the_claim() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    cat_packet(d, "bit_exact");
    let (run, st) = recompute(d, &[], &["cat"]);
    assert!(
        run.stdout.starts_with("match: wrote rec.env.json"),
        "{}{}",
        run.stdout,
        run.stderr
    );
    assert_eq!(st["kind"], "verification.recompute.v1");
    assert_eq!(st["subject"]["artifactId"], st["payload"]["packet"]);
    assert_eq!(st["payload"]["packet_id"], "p0");

    let (run, st) = recompute(d, &[], &["tr", "a-z", "A-Z"]);
    assert!(run.stdout.starts_with("mismatch:"), "{}", run.stdout);
    assert_eq!(st["payload"]["verdict"], "mismatch");

    let (run, st) = recompute(d, &[], &["false"]);
    assert!(run.stdout.starts_with("inconclusive:"), "{}", run.stdout);
    assert!(
        st["payload"]["notes"].as_str().unwrap().contains("exited"),
        "{st}"
    );

    cat_packet(d, "bounded");
    let (run, st) = recompute(
        d,
        &["--distance-cmd", "echo 0.05", "--max-distance", "0.1"],
        &["cat"],
    );
    assert!(
        run.stdout.starts_with("match:"),
        "{}{}",
        run.stdout,
        run.stderr
    );
    assert_eq!(
        (
            st["payload"]["distance"].as_f64(),
            st["payload"]["threshold"].as_f64()
        ),
        (Some(0.05), Some(0.1))
    );
    let (run, _) = recompute(
        d,
        &["--distance-cmd", "echo 0.5", "--max-distance", "0.1"],
        &["cat"],
    );
    assert!(run.stdout.starts_with("mismatch:"), "{}", run.stdout);
    let (run, _) = recompute(d, &[], &["cat"]);
    assert!(run.stdout.starts_with("inconclusive:"), "{}", run.stdout);

    cat_packet(d, "none");
    let (run, st) = recompute(d, &[], &["cat"]);
    assert!(run.stdout.starts_with("inconclusive:"), "{}", run.stdout);
    assert!(
        st["payload"]["notes"]
            .as_str()
            .unwrap()
            .contains("no reproducibility"),
        "{st}"
    );
}

#[cfg(unix)]
#[test]
fn recompute_reads_a_piped_input_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    cat_packet(d, "bit_exact");
    let t = trust(d, "me", &public_key(d, "k.pem"), None);
    let run = chit_in(
        d,
        &[
            "packets",
            "recompute",
            "--key",
            "k.pem",
            "--packet",
            "pkt.env.json",
            "--input",
            "/dev/stdin",
            "--trust",
            t.to_str().unwrap(),
            "--out",
            "r.json",
            "--",
            "cat",
        ],
        Some(b"hello workload\n"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("match:"),
        "the workload got the input that was checked: {}",
        run.stdout
    );
}

#[cfg(unix)]
#[test]
fn recompute_refuses_the_wrong_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    cat_packet(d, "bit_exact");
    std::fs::write(d.join("in.bin"), "something else").unwrap();
    let run = chit_in(
        d,
        &[
            "packets",
            "recompute",
            "--key",
            "k.pem",
            "--packet",
            "pkt.env.json",
            "--input",
            "in.bin",
            "--",
            "cat",
        ],
        None,
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("in.bin is not the packet's input"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("signature was not checked"),
        "{}",
        run.stderr
    );
}

/// An envelope over `payload` bytes of `payload_type`, signed by the key in `pem`.
fn envelope_over(d: &Path, pem: &str, payload_type: &str, payload: &[u8]) -> String {
    let text = std::fs::read_to_string(d.join(pem)).unwrap();
    let key = chit_core::keys::SecretKey::from_pem(&text).unwrap();
    chit_core::envelope::Envelope::sign(payload_type, payload.to_vec(), &key).to_json()
}

#[test]
fn another_payload_type_still_answers_to_trust() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    chit_in(d, &["keygen", "--out", "a.pem"], None);
    let me = public_key(d, "a.pem");
    std::fs::write(
        d.join("e.json"),
        envelope_over(d, "a.pem", "application/json", b"{\"any\":1}"),
    )
    .unwrap();
    let narrow = trust(d, "narrow", &me, Some("verification.packet.v1"));
    let run = verify_trusted(d, &narrow, &["e.json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("error trust: key narrow may sign only the kinds the trust file lists"),
        "{}",
        run.stdout
    );
    let open = trust(d, "open", &me, None);
    let run = verify_trusted(d, &open, &["--threshold", "2", "e.json"]);
    assert!(
        run.stdout
            .contains("error threshold: 1 distinct trusted key(s) signed; 2 required"),
        "{}",
        run.stdout
    );
    let run = verify_trusted(d, &open, &["e.json"]);
    assert_eq!(
        run.code, 1,
        "signed by a trusted key, but the payload is not checked: SIGNED, not valid"
    );
    assert!(run.stdout.starts_with("SIGNED e.json\n"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("warning statement: payload type application/json"),
        "{}",
        run.stdout
    );
    let run = verify_trusted(d, &open, &["--allow-unchecked", "e.json"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.starts_with("SIGNED e.json\n"), "{}", run.stdout);
    // A narrow key stays an error with --allow-unchecked: it is no pass for
    // what the trust file forbids.
    let run = verify_trusted(d, &narrow, &["--allow-unchecked", "e.json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.starts_with("INVALID e.json\n"), "{}", run.stdout);
}

/// SIGNED in every form of output: the summary counts it apart, --json
/// carries `"status":"signed"` (and `valid` false), --quiet hides it only
/// when --allow-unchecked lets it pass, Markdown names it.
#[test]
fn signed_inputs_are_counted_apart_in_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    chit_in(d, &["keygen", "--out", "a.pem"], None);
    let t = trust(d, "a", &public_key(d, "a.pem"), None);
    let statement = |kind: &str, payload: &str| {
        format!(
            "{{\"type\":\"treeship/receipt/v1\",\"timestamp\":\"2026-11-30T09:00:00Z\",\"system\":\"s://x\",\
             \"kind\":\"{kind}\",\"payload\":{payload}}}"
        )
    };
    let card = statement("agent_card.v1", "{\"name\":\"x\"}");
    std::fs::write(
        d.join("card.json"),
        envelope_over(
            d,
            "a.pem",
            chit_core::envelope::TREESHIP_RECEIPT,
            card.as_bytes(),
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("action.json"),
        envelope_over(
            d,
            "a.pem",
            "application/vnd.treeship.action.v1+json",
            b"{\"type\":\"treeship/action/v1\",\"actor\":\"agent://a\",\"action\":\"tool.call\"}",
        ),
    )
    .unwrap();
    let run = verify_trusted(d, &t, &["card.json", "action.json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.ends_with(
            "2 inputs: 0 valid, 2 signed (payload not checked), 0 invalid, 0 unreadable\n"
        ),
        "{}",
        run.stdout
    );
    let run = verify_trusted(d, &t, &["--allow-unchecked", "--json", "card.json"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let v: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(v["status"], "signed");
    assert_eq!(v["valid"], false);
    assert_eq!(v["kind"], "envelope");
    assert!(v["artifact_id"].as_str().unwrap().starts_with("art_"));
    let run = verify_trusted(d, &t, &["--quiet", "card.json"]);
    assert!(
        run.stdout.starts_with("SIGNED card.json\n"),
        "{}",
        run.stdout
    );
    let run = verify_trusted(d, &t, &["--quiet", "--allow-unchecked", "card.json"]);
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stdout,
        "1 input: 0 valid, 1 signed (payload not checked), 0 invalid, 0 unreadable\n"
    );
    let run = verify_trusted(d, &t, &["--format", "markdown", "card.json"]);
    assert!(
        run.stdout.contains("— 🔏 signed, payload not checked"),
        "{}",
        run.stdout
    );
    // A key limited to other kinds: "an agent_card.v1", not "a agent_card.v1".
    let narrow = trust(
        d,
        "narrow",
        &public_key(d, "a.pem"),
        Some("verification.packet.v1"),
    );
    let run = verify_trusted(d, &narrow, &["card.json"]);
    assert!(
        run.stdout
            .contains("error trust: key narrow signed an agent_card.v1, which the trust file does not let it sign"),
        "{}",
        run.stdout
    );
}

/// DSSE allows standard and URL-safe base64, padded or not; Treeship 0.25.1
/// reads only URL-safe without padding. chit accepts all four and warns
/// (rule base64url) for the three Treeship refuses, payload and signature.
#[test]
fn base64_treeship_refuses_is_a_warning() {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    chit_in(d, &["keygen", "--out", "a.pem"], None);
    let t = trust(d, "a", &public_key(d, "a.pem"), None);
    // A statement around a run receipt whose base64 holds a character
    // standard and URL-safe spell apart ("???" is "Pz8/" or "Pz8_" wherever
    // it falls among six) and needs padding (leading spaces, still the same
    // JSON): every engine then writes it differently.
    let mut statement = format!(
        "{{\"type\":\"treeship/receipt/v1\",\"timestamp\":\"2026-11-30T09:00:00Z\",\"system\":\"s://x\",\
         \"kind\":\"run-receipt\",\"meta\":{{\"note\":\"??????\"}},\"payload\":{}}}",
        example_text("agreed-verified.json")
    )
    .into_bytes();
    while statement.len() % 3 == 0 {
        statement.insert(0, b' ');
    }
    assert_ne!(STANDARD.encode(&statement), URL_SAFE.encode(&statement));
    let env: Value = serde_json::from_str(&envelope_over(
        d,
        "a.pem",
        chit_core::envelope::TREESHIP_RECEIPT,
        &statement,
    ))
    .unwrap();
    let payload = statement;
    let sig = URL_SAFE_NO_PAD
        .decode(env["signatures"][0]["sig"].as_str().unwrap())
        .unwrap();
    for (name, engine) in [
        ("url-unpadded", &URL_SAFE_NO_PAD),
        ("url-padded", &URL_SAFE),
        ("std-padded", &STANDARD),
        ("std-unpadded", &STANDARD_NO_PAD),
    ] {
        let mut e = env.clone();
        e["payload"] = engine.encode(&payload).into();
        e["signatures"][0]["sig"] = engine.encode(&sig).into();
        let file = format!("{name}.json");
        std::fs::write(d.join(&file), e.to_string()).unwrap();
        let run = verify_trusted(d, &t, &["--json", &file]);
        assert_eq!(run.code, 0, "{name}: {}", run.stdout);
        let v: Value = serde_json::from_str(run.stdout.trim()).unwrap();
        let warned: Vec<&str> = v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["rule"] == "base64url")
            .map(|w| w["path"].as_str().unwrap())
            .collect();
        // Whatever Treeship's own form would not spell the same is warned.
        let mut want = Vec::new();
        if engine.encode(&payload) != URL_SAFE_NO_PAD.encode(&payload) {
            want.push("/payload");
        }
        if engine.encode(&sig) != URL_SAFE_NO_PAD.encode(&sig) {
            want.push("/signatures/0/sig");
        }
        assert_eq!(warned, want, "{name}");
        assert_eq!(want.is_empty(), name == "url-unpadded", "{name}");
    }
}

#[test]
fn a_payload_is_checked_under_the_kind_it_declares() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    chit_in(d, &["keygen", "--out", "a.pem"], None);
    let t = trust(d, "a", &public_key(d, "a.pem"), None);
    let statement = format!(
        "{{\"type\":\"treeship/receipt/v1\",\"timestamp\":\"2026-11-30T09:00:00Z\",\"system\":\"s://x\",\"kind\":\"verification.packet.v1 \",\
         \"payload\":{{\"schema\":\"verification.packet.v1\",\"packet_id\":\"p\",\"stream_id\":\"s\",\"sequence\":0,\"model_digest\":\"garbage\",\
         \"input_digest\":\"sha256:{h}\",\"output_digest\":\"sha256:{h}\",\"produced_at\":\"2026-11-30T09:00:00Z\"}}}}",
        h = "a".repeat(64)
    );
    std::fs::write(
        d.join("e.json"),
        envelope_over(
            d,
            "a.pem",
            chit_core::envelope::TREESHIP_RECEIPT,
            statement.as_bytes(),
        ),
    )
    .unwrap();
    let run = verify_trusted(d, &t, &["e.json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("is not the kind its payload declares (verification.packet.v1)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("error P5: model_digest"),
        "{}",
        run.stdout
    );
    let run = verify_trusted(d, &t, &["--kind", "run-receipt", "e.json"]);
    assert!(
        run.stdout.contains("but --kind asked for run-receipt"),
        "{}",
        run.stdout
    );
}

#[test]
fn too_many_signatures_are_refused_unchecked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    chit_in(d, &["keygen", "--out", "a.pem"], None);
    let one: Value = serde_json::from_str(&envelope_over(d, "a.pem", "t", b"{}")).unwrap();
    let mut many = one.clone();
    many["signatures"] = Value::Array(vec![one["signatures"][0].clone(); 17]);
    std::fs::write(d.join("e.json"), many.to_string()).unwrap();
    let t = trust(d, "a", &public_key(d, "a.pem"), None);
    let run = verify_trusted(d, &t, &["e.json"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .contains("error envelope: 17 signatures; chit checks at most 16"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_sequence_beyond_a_double_stays_in_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let line = |seq: &str, id: &str, prev: &str| {
        format!(
            "{{\"schema\":\"verification.packet.v1\",\"packet_id\":\"{id}\",\"stream_id\":\"s\",\"sequence\":{seq},\"prev_packet_id\":{prev},\
             \"model_digest\":\"sha256:{m}\",\"input_digest\":\"sha256:{m}\",\"output_digest\":\"sha256:{m}\",\"produced_at\":\"2026-11-30T09:00:00Z\"}}\n",
            m = "a".repeat(64)
        )
    };
    let stream = line("0", "p0", "null")
        + &line("1", "p1", "\"p0\"")
        + &line("18446744073709551616", "p9", "\"p1\"");
    std::fs::write(dir.path().join("s.jsonl"), stream).unwrap();
    let run = chit_in(
        dir.path(),
        &["verify", "--lines", "--expect-count", "2", "s.jsonl"],
        None,
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains(
            "INVALID s.jsonl:3\n  error P3: sequence 18446744073709552000 is outside 0 to 2^53"
        ),
        "{}",
        run.stdout
    );
    // Its third packet is invalid on its own: the stream is unchecked
    // (never valid over a member that failed), its own findings kept.
    assert!(
        run.stdout.contains("UNCHECKED stream s (3 packets)")
            && run
                .stdout
                .contains("warning members: its members did not verify: s.jsonl:3 (invalid)"),
        "{}",
        run.stdout
    );
}

#[cfg(unix)]
#[test]
fn keys_are_readable_by_openssl() {
    if std::process::Command::new("openssl")
        .arg("version")
        .output()
        .is_err()
    {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI needs openssl for this test"
        );
        eprintln!(
            "openssl is not installed; the RFC 8410 byte test in chit-core covers the format"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    chit_in(dir.path(), &["keygen", "--out", "k.pem"], None);
    let o = std::process::Command::new("openssl")
        .args(["pkey", "-in", "k.pem", "-pubout", "-outform", "DER"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The SubjectPublicKeyInfo ends with the 32 key bytes chit prints.
    let me = public_key(dir.path(), "k.pem");
    let key = chit_core::keys::PublicKey::parse(&me).unwrap();
    assert_eq!(&o.stdout[o.stdout.len() - 32..], key.bytes());
}
