//! A check across inputs is never valid over members that failed: a
//! stream, a rebind, a chain or a session package whose members did not
//! all verify on their own is UNCHECKED ("its members did not verify"),
//! counted so in the summary and the exit status, and its `--json` line
//! carries `status` as an input's does. `--accept-unsigned` holds a
//! document no key signed to its own rules under `--trust`, as a log made
//! with it accepts.

mod common;
use common::chit_in;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn a_stream_of_packets_that_did_not_verify_is_unchecked() {
    let packets = repo().join("examples/packets");
    let dir = packets.display().to_string();
    // No --trust: each packet is INVALID (no trusted keys), so the stream
    // over them is not VALID.
    let run = chit_in(&repo(), &["verify", &dir], None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("UNCHECKED stream demo-stream (3 packets)\n  warning members: its members did not verify: "),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("p0.env.json (invalid)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.ends_with(
            "3 inputs: 0 valid, 3 invalid, 0 unreadable; checks across inputs: 0 valid, 0 invalid, \
             1 unchecked (members did not verify)\n"
        ),
        "{}",
        run.stdout
    );
    let run = chit_in(&repo(), &["verify", "--json", &dir], None);
    let stream = json_lines(&run.stdout).pop().unwrap();
    assert_eq!(stream["stream"], "demo-stream");
    assert_eq!(stream["valid"], false);
    assert_eq!(stream["status"], "unchecked");
    assert_eq!(stream["warnings"][0]["rule"], "members");
    // With the trust file every packet verifies, and so does the stream.
    let trust = packets.join("trust.toml").display().to_string();
    let run = chit_in(
        &repo(),
        &["verify", "--json", "--trust", &trust, &dir],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let stream = json_lines(&run.stdout).pop().unwrap();
    assert_eq!(
        (stream["valid"].as_bool(), stream["status"].as_str()),
        (Some(true), Some("valid")),
        "{stream}"
    );
    // --quiet shows the unchecked stream: it is not valid.
    let run = chit_in(&repo(), &["verify", "--quiet", &dir], None);
    assert!(
        run.stdout.contains("UNCHECKED stream demo-stream"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_rebind_over_an_invalid_packet_is_unchecked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lattice = repo().join("examples/lattice");
    std::fs::copy(lattice.join("packet.json"), d.join("a.json")).unwrap();
    // The same packet, pretty-printed: not Lattice's canonical bytes (X2).
    let v: Value =
        serde_json::from_slice(&std::fs::read(lattice.join("packet.json")).unwrap()).unwrap();
    std::fs::write(d.join("b.json"), serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let run = chit_in(d, &["verify", "a.json", "b.json"], None);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("UNCHECKED rebind todo-0 (2 packets)"),
        "{}",
        run.stdout
    );
    // Its own findings are still named.
    assert!(run.stdout.contains("error X6: "), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("its members did not verify: b.json (invalid)"),
        "{}",
        run.stdout
    );
    // Over the valid packet and its rebind, it is valid.
    let run = chit_in(&lattice, &["verify", "packet.json", "rebind.json"], None);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.contains("VALID rebind todo-0 (2 packets)"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_treeship_chain_over_untrusted_records_is_unchecked() {
    let store = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/treeship-store");
    // Without the trust file no record verifies: no chain is VALID.
    let run = chit_in(&store, &["verify", "--json", "artifacts"], None);
    assert_eq!(run.code, 1);
    let chains: Vec<Value> = json_lines(&run.stdout)
        .into_iter()
        .filter(|v| v.get("chain").is_some())
        .collect();
    assert!(!chains.is_empty(), "{}", run.stdout);
    for c in &chains {
        assert_eq!(c["status"], "unchecked", "{c}");
        assert_eq!(c["valid"], false, "{c}");
    }
    // With it, they verify.
    let run = chit_in(
        &store,
        &[
            "verify",
            "--json",
            "--trust",
            "trust.toml",
            "--allow-unchecked",
            "artifacts",
        ],
        None,
    );
    for c in json_lines(&run.stdout)
        .iter()
        .filter(|v| v.get("chain").is_some())
    {
        assert_eq!(c["status"], "valid", "{c}");
    }
}

#[test]
fn signed_members_pass_only_where_allow_unchecked_lets_them() {
    let store = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/treeship-store");
    // The tool-call chain holds action records (SIGNED: payload not
    // checked): without --allow-unchecked they do not pass, and neither
    // does the chain over them.
    let chain = |args: &[&str]| -> Value {
        let mut all = vec!["verify", "--json", "--trust", "trust.toml"];
        all.extend_from_slice(args);
        all.push("artifacts");
        let run = chit_in(&store, &all, None);
        json_lines(&run.stdout)
            .into_iter()
            .find(|v| v["chain"] == "art_62741c5bce003d85ad95f60b513f4830")
            .unwrap_or_else(|| panic!("{}", run.stdout))
    };
    let strict = chain(&[]);
    assert_eq!(strict["status"], "unchecked", "{strict}");
    assert!(
        strict["warnings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("(signed)"),
        "{strict}"
    );
    assert_eq!(chain(&["--allow-unchecked"])["status"], "valid");
}

#[test]
fn accept_unsigned_holds_an_unsigned_document_to_its_own_rules() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(
        repo().join("examples/run-receipts/agreed-verified.json"),
        d.join("r.json"),
    )
    .unwrap();
    std::fs::copy(
        repo().join("examples/packets/trust.toml"),
        d.join("trust.toml"),
    )
    .unwrap();
    // Under --trust an unsigned receipt fails for want of a signer.
    let run = chit_in(d, &["verify", "--trust", "trust.toml", "r.json"], None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("error threshold: "), "{}", run.stdout);
    // With --accept-unsigned it is held to its own rules.
    let args = [
        "verify",
        "--trust",
        "trust.toml",
        "--accept-unsigned",
        "r.json",
    ];
    let run = chit_in(d, &args, None);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.stdout, "VALID r.json\n");
    // A signed packet under it is still held to the trust file: the
    // examples' packets, signed by a trusted key, stay VALID; a packet
    // envelope re-signed by an untrusted key is not.
    let run = chit_in(
        &repo(),
        &[
            "verify",
            "--trust",
            &d.join("trust.toml").display().to_string(),
            "--accept-unsigned",
            "examples/packets/p0.env.json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(chit_in(d, &["keygen", "--out", "me.pem"], None).code, 0);
    let signed = chit_in(
        d,
        &[
            "sign",
            "--key",
            "me.pem",
            "--kind",
            "run-receipt",
            "--out",
            "s.env.json",
            "r.json",
        ],
        None,
    );
    assert_eq!(signed.code, 0, "{}", signed.stderr);
    let run = chit_in(
        d,
        &[
            "verify",
            "--trust",
            "trust.toml",
            "--accept-unsigned",
            "s.env.json",
        ],
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    // Without --trust there is nothing to accept unsigned documents against.
    let run = chit_in(d, &["verify", "--accept-unsigned", "r.json"], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
}
