//! What Treeship 0.25.1 writes, as Treeship wrote it (tests/data/treeship-store,
//! Apache-2.0): a whole store with its index, a session package and a
//! `treeship receipt export`, each verified with one command, and each
//! tamper caught and named.

mod common;
use common::{chit_in, Run};
use serde_json::Value;
use std::path::{Path, PathBuf};

const SESSION: &str = "ssn_3d978455831b50bf.treeship";
const PACKET_2: &str = "art_b1e006894deecf22c2a1b2e9f5c6056d";
const TOOL_CALL: &str = "art_62741c5bce003d85ad95f60b513f4830";
const CLOSE: &str = "art_823718981afdf6ecb40dcfce564e4691";
const SESSION_RECORD: &str = "art_e906f176bdca70df9faea846ea4dbd1c";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/treeship-store")
}

/// A copy of the fixture to change.
fn copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture(), dir.path());
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

fn verify(d: &Path, args: &[&str]) -> Run {
    let mut all = vec!["verify", "--trust", "trust.toml"];
    all.extend_from_slice(args);
    chit_in(d, &all, None)
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn write(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

fn record(d: &Path, art: &str) -> PathBuf {
    d.join("artifacts").join(format!("{art}.json"))
}

/// `--json` lines, by `file` (inputs) or by subject and name (across).
fn lines(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn rules(v: &Value) -> Vec<String> {
    v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["rule"].as_str().unwrap(),
                e["path"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn a_whole_store_a_session_package_and_an_export_verify_with_one_command() {
    let d = fixture();
    let all = ["artifacts", SESSION, "export.json"];
    let mut args = vec!["--allow-unchecked"];
    args.extend_from_slice(&all);
    let run = verify(&d, &args);
    assert_eq!(run.code, 0, "{}", run.stdout);
    for want in [
        format!("VALID artifacts/{PACKET_2}.json\n"),
        format!("SIGNED artifacts/{TOOL_CALL}.json\n"),
        format!("SIGNED artifacts/{SESSION_RECORD}.json\n"),
        "VALID artifacts/index.json\n".to_owned(),
        format!("VALID {SESSION}\n"),
        "VALID export.json\n".to_owned(),
        "VALID stream interop (3 packets)\n".to_owned(),
        format!("VALID recompute artifacts/art_d1e1818cbaab8291ca15ae10a2698088.json (against {PACKET_2})\n"),
        format!("VALID chain {TOOL_CALL} (3 artifacts)\n"),
        format!("VALID chain {PACKET_2} (2 artifacts)\n"),
        "VALID index artifacts/index.json (8 entries)\n".to_owned(),
        "VALID session ssn_3d978455831b50bf (2 artifacts)\n".to_owned(),
    ] {
        assert!(run.stdout.contains(&want), "{want}: {}", run.stdout);
    }
    assert!(
        run.stdout.ends_with(
            "11 inputs: 7 valid, 4 signed (payload not checked), 0 invalid, 0 unreadable; \
             checks across inputs: 6 valid, 0 invalid\n"
        ),
        "{}",
        run.stdout
    );
    // Without --allow-unchecked the actions and the session record (payloads
    // chit cannot check) fail closed.
    let run = verify(&d, &all);
    assert_eq!(run.code, 1, "{}", run.stdout);
    // --kind names the statement's kind inside a record, as for an envelope.
    let packet = format!("artifacts/{PACKET_2}.json");
    let run = verify(&d, &["--kind", "verification.packet.v1", &packet]);
    assert!(
        run.stdout.starts_with(&format!("VALID {packet}\n")),
        "{}",
        run.stdout
    );
    let run = verify(&d, &["--kind", "run-receipt", &packet]);
    assert!(
        run.stdout.contains("error statement: the statement's kind is verification.packet.v1, but --kind asked for run-receipt"),
        "{}",
        run.stdout
    );
}

/// Every field of a record that speaks of its envelope is held against it.
#[test]
fn each_record_field_is_checked_against_its_envelope() {
    let other = "art_00000000000000000000000000000000";
    for (field, value) in [
        ("artifact_id", Value::from(other)),
        ("digest", Value::from(format!("sha256:{}", "0".repeat(64)))),
        (
            "payload_type",
            Value::from("application/vnd.treeship.action.v1+json"),
        ),
        ("key_id", Value::from("key_0000000000000000")),
        ("parent_id", Value::from(other)),
    ] {
        let dir = copy();
        let d = dir.path();
        let path = record(d, "art_d1e1818cbaab8291ca15ae10a2698088");
        let mut r = read(&path);
        r[field] = value;
        write(&path, &r);
        let run = verify(d, &["--json", path.to_str().unwrap()]);
        assert_eq!(run.code, 1, "{field}: {}", run.stdout);
        let v = &lines(&run)[0];
        assert_eq!(v["status"], "invalid");
        assert!(
            rules(v).contains(&format!("record /{field}")),
            "{field}: {:?}",
            rules(v)
        );
        // The message names the field.
        assert!(
            run.stdout.contains(&format!("the record's {field}")),
            "{}",
            run.stdout
        );
    }
    // A record without the parent its statement names.
    let dir = copy();
    let path = record(dir.path(), CLOSE);
    let mut r = read(&path);
    r.as_object_mut().unwrap().remove("parent_id");
    write(&path, &r);
    let run = verify(dir.path(), &["--allow-unchecked", path.to_str().unwrap()]);
    assert!(
        run.stdout.contains(&format!(
            "error record: the record has no parent_id, but its signed statement names {TOOL_CALL} as its parent"
        )),
        "{}",
        run.stdout
    );
}

/// A payload byte or a signature byte changed in a stored record: its
/// signature fails.
#[test]
fn a_changed_payload_or_signature_in_the_store_is_caught() {
    for what in ["payload", "sig"] {
        let dir = copy();
        let d = dir.path();
        let path = record(d, PACKET_2);
        let mut r = read(&path);
        let text = if what == "payload" {
            r["envelope"]["payload"].as_str().unwrap().to_owned()
        } else {
            r["envelope"]["signatures"][0]["sig"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        // One character changed in the middle: another byte, still base64.
        let mut chars: Vec<char> = text.chars().collect();
        let mid = chars.len() / 2;
        chars[mid] = if chars[mid] == 'A' { 'B' } else { 'A' };
        let changed: String = chars.into_iter().collect();
        if what == "payload" {
            r["envelope"]["payload"] = changed.into();
        } else {
            r["envelope"]["signatures"][0]["sig"] = changed.into();
        }
        write(&path, &r);
        let run = verify(
            d,
            &["--allow-unchecked", "--expect-count", "3", "artifacts"],
        );
        assert_eq!(run.code, 1, "{what}: {}", run.stdout);
        assert!(
            run.stdout.contains(&format!(
                "INVALID artifacts/{PACKET_2}.json\n  error signature:"
            )),
            "{what}: {}",
            run.stdout
        );
        // A forged packet counts toward nothing: its stream lacks it, its
        // child's chain is broken, the index lists a record that did not
        // verify.
        assert!(
            run.stdout.contains("INVALID stream interop"),
            "{}",
            run.stdout
        );
        assert!(
            run.stdout.contains(&format!(
                "error chain: the chain is broken at art_d1e1818cbaab8291ca15ae10a2698088: it names {PACKET_2}"
            )),
            "{}",
            run.stdout
        );
        assert!(
            run.stdout.contains("INVALID index artifacts/index.json"),
            "{}",
            run.stdout
        );
    }
}

/// The index lists exactly the records beside it, as they are.
#[test]
fn the_index_lists_exactly_the_records() {
    let dir = copy();
    let d = dir.path();
    let run = verify(d, &["--allow-unchecked", "--json", "artifacts"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let index = d.join("artifacts/index.json");
    let good = read(&index);
    // Dropped, changed, added.
    let mut dropped = good.clone();
    dropped["entries"].as_array_mut().unwrap().remove(0);
    let mut changed = good.clone();
    changed["entries"][1]["signed_at"] = "2026-11-30T00:00:00Z".into();
    let mut added = good.clone();
    added["entries"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "id": "art_00000000000000000000000000000000",
            "payload_type": "application/vnd.treeship.receipt.v1+json",
            "signed_at": "2026-11-30T18:57:51Z"
        }));
    for (name, v, want) in [
        ("dropped", dropped, "is a record beside the index"),
        (
            "changed",
            changed,
            "signed_at is 2026-11-30T00:00:00Z, but its record's is",
        ),
        (
            "added",
            added,
            "the index lists art_00000000000000000000000000000000, but no record",
        ),
    ] {
        write(&index, &v);
        let run = verify(d, &["--allow-unchecked", "artifacts"]);
        assert_eq!(run.code, 1, "{name}: {}", run.stdout);
        assert!(
            run.stdout.contains("INVALID index artifacts/index.json"),
            "{name}: {}",
            run.stdout
        );
        assert!(run.stdout.contains(want), "{name}: {}", run.stdout);
    }
}

/// A chain whose parent is missing is reported by name.
#[test]
fn a_broken_chain_is_named() {
    let dir = copy();
    let d = dir.path();
    std::fs::remove_file(record(d, TOOL_CALL)).unwrap();
    let run = verify(d, &["--allow-unchecked", "artifacts"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!(
            "INVALID chain {TOOL_CALL} (2 artifacts)\n  error chain: the chain is broken at {CLOSE}: it names {TOOL_CALL} as its parent"
        )),
        "{}",
        run.stdout
    );
    // Given alone, a record whose parent is not given breaks its chain too.
    let run = verify(
        d,
        &["--allow-unchecked", record(d, CLOSE).to_str().unwrap()],
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
}

/// `treeship receipt export`: checked as the envelope it stands for, under
/// the trust file; the key it carries is only the signer's claim.
#[test]
fn an_export_is_verified_under_the_trust_file_not_its_own_key() {
    let dir = copy();
    let d = dir.path();
    let run = verify(d, &["export-recompute.json"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.stdout, "VALID export-recompute.json\n");
    // A trust file without the ship's key: the embedded key is no help.
    std::fs::write(
        d.join("other.toml"),
        "[[key]]\nname = \"other\"\npublic_key = \"ed25519:SeVxSanX9yDn1yvX3DdaNsLaqXcy2X3FUHSyz8QRHFY\"\n",
    )
    .unwrap();
    let run = chit_in(
        d,
        &["verify", "--trust", "other.toml", "export-recompute.json"],
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("error signature:"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("error export: the export claims key ed25519:wjQIhX6p"),
        "{}",
        run.stdout
    );
    let good = read(&d.join("export-recompute.json"));
    // Another key claimed, another art id, a message byte changed.
    let mut key = good.clone();
    key["public_key_b64"] = "SeVxSanX9yDn1yvX3DdaNsLaqXcy2X3FUHSyz8QRHFY=".into();
    let mut art = good.clone();
    art["artifact_id"] = "art_00000000000000000000000000000000".into();
    let mut message = good.clone();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let raw = b64.decode(good["message_b64"].as_str().unwrap()).unwrap();
    let text = String::from_utf8(raw).unwrap();
    assert!(text.contains("system://recompute"));
    let m = b64.encode(text.replace("system://recompute", "system://recomputf"));
    message["message_b64"] = m.into();
    for (name, v, want) in [
        ("key", key, "error export: the export claims key ed25519:SeVxSanX9yDn1yvX3DdaNsLaqXcy2X3FUHSyz8QRHFY, but its signature verifies under trusted key ed25519:wjQIhX6p"),
        ("art", art, "error export: the export names art_00000000000000000000000000000000, but its message's art id is art_d1e1818cbaab8291ca15ae10a2698088"),
        ("message", message, "error signature:"),
    ] {
        write(&d.join("export-recompute.json"), &v);
        let run = verify(d, &["export-recompute.json"]);
        assert_eq!(run.code, 1, "{name}: {}", run.stdout);
        assert!(run.stdout.contains(want), "{name}: {}", run.stdout);
    }
}

/// A session package alone: Treeship's own checks. Under --trust it needs
/// its signed session record, from the store.
#[test]
fn a_session_package_is_checked_as_treeship_checks_it() {
    let d = fixture();
    let run = chit_in(&d, &["verify", SESSION], None);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.starts_with(&format!("VALID {SESSION}\n")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("warning session: no signed session.v1 record"),
        "{}",
        run.stdout
    );
    let run = verify(&d, &[SESSION]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("INVALID session ssn_3d978455831b50bf"),
        "{}",
        run.stdout
    );
    let run = verify(&d, &["--allow-unchecked", SESSION, "artifacts"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
}

/// An artifact changed, dropped or added in the package, a proof file
/// changed or dropped, receipt.json changed elsewhere: each is caught.
#[test]
fn a_changed_dropped_or_added_artifact_in_a_package_is_caught() {
    type Edit = fn(&mut Value);
    let edits: [(&str, Edit, &str); 4] = [
        ("changed", |r| r["artifacts"][0]["artifact_id"] = "art_00000000000000000000000000000000".into(), "error merkle_root"),
        ("dropped", |r| { r["artifacts"].as_array_mut().unwrap().remove(1); }, "error leaf_count"),
        ("added", |r| {
            let extra = r["artifacts"][0].clone();
            r["artifacts"].as_array_mut().unwrap().push(extra);
        }, "error merkle_root"),
        ("narrative", |r| r["session"]["narrative"]["summary"] = "nothing happened".into(), "error session: the signed session record art_e906f176bdca70df9faea846ea4dbd1c binds receipt.json sha256:"),
    ];
    for (name, edit, want) in edits {
        let dir = copy();
        let d = dir.path();
        let path = d.join(SESSION).join("receipt.json");
        let mut r = read(&path);
        edit(&mut r);
        write(&path, &r);
        let run = verify(d, &["--allow-unchecked", SESSION, "artifacts"]);
        assert_eq!(run.code, 1, "{name}: {}", run.stdout);
        assert!(run.stdout.contains(want), "{name}: {}", run.stdout);
        // The signed record binds the receipt's bytes: any change is caught
        // across inputs, whatever the Merkle section says. Where the
        // package itself failed too, the check across inputs is unchecked
        // (never valid over a member that failed), its own error named.
        let session = if run
            .stdout
            .starts_with("INVALID ssn_3d978455831b50bf.treeship")
        {
            assert!(
                run.stdout.contains(
                    "warning members: its members did not verify: ssn_3d978455831b50bf.treeship (invalid)"
                ),
                "{name}: {}",
                run.stdout
            );
            "UNCHECKED session ssn_3d978455831b50bf"
        } else {
            "INVALID session ssn_3d978455831b50bf"
        };
        assert!(run.stdout.contains(session), "{name}: {}", run.stdout);
        assert!(
            run.stdout
                .contains("error session: the signed session record")
                || run.stdout.contains("error session: listed but not among"),
            "{name}: {}",
            run.stdout
        );
    }
    // A proof file changed, then dropped.
    let dir = copy();
    let d = dir.path();
    let proof = d.join(SESSION).join(format!("proofs/{CLOSE}.proof.json"));
    let mut p = read(&proof);
    p["leaf_index"] = 0.into();
    write(&proof, &p);
    let run = verify(d, &["--allow-unchecked", SESSION, "artifacts"]);
    assert!(
        run.stdout.contains(&format!(
            "error package: proofs/{CLOSE}.proof.json is not the receipt's inclusion proof"
        )),
        "{}",
        run.stdout
    );
    std::fs::remove_file(&proof).unwrap();
    let run = verify(d, &["--allow-unchecked", SESSION, "artifacts"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains(&format!(
            "error package: the receipt's inclusion proof for {CLOSE} has no file"
        )),
        "{}",
        run.stdout
    );
    // A proof in the receipt that does not lead to the root.
    let dir = copy();
    let d = dir.path();
    let path = d.join(SESSION).join("receipt.json");
    let mut r = read(&path);
    r["merkle"]["inclusion_proofs"][1]["proof"]["path"][0]["hash"] = "00".repeat(32).into();
    write(&path, &r);
    let run = verify(d, &["--allow-unchecked", SESSION, "artifacts"]);
    assert!(
        run.stdout.contains(&format!("error inclusion: the inclusion proof for {CLOSE} does not verify: its path does not lead to the root")),
        "{}",
        run.stdout
    );
}

/// A bare envelope whose statement names a parentId is a link too.
#[test]
fn a_bare_envelope_names_its_parent() {
    let dir = copy();
    let d = dir.path();
    for art in [CLOSE, TOOL_CALL] {
        let r = read(&record(d, art));
        write(&d.join(format!("{art}.env.json")), &r["envelope"]);
    }
    let close = format!("{CLOSE}.env.json");
    let run = verify(d, &["--allow-unchecked", &close]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!(
            "INVALID chain {TOOL_CALL} (1 artifact)\n  error chain: the chain is broken at {CLOSE}"
        )),
        "{}",
        run.stdout
    );
    let tool = format!("{TOOL_CALL}.env.json");
    let run = verify(d, &["--allow-unchecked", &close, &tool]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout
            .contains(&format!("VALID chain {TOOL_CALL} (2 artifacts)\n")),
        "{}",
        run.stdout
    );
}
