//! `chit log` end to end: init, append, bundles verified offline, tiles,
//! audits, witnesses, and the faults: kill -9 mid-append (SQLite and
//! PostgreSQL), a full disk and a read-only store.

mod common;

use base64::Engine;
use common::{chit_in, chit_raw, run_raw};
use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const ORIGIN: &str = "test.example/receipts";

/// A valid run receipt per `n`: the example with another id, sealed, on
/// one line.
fn receipt(n: usize) -> Vec<u8> {
    let text = common::example_text("agreed-verified.json");
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["id"] = Value::from(format!("run-{n}"));
    let bytes = serde_json::to_vec(&v).unwrap();
    chit_core::seal::seal(&bytes, None, &chit_core::Limits::default())
        .unwrap()
        .bytes
}

fn lines_file(dir: &Path, name: &str, range: std::ops::Range<usize>) -> PathBuf {
    let mut out = Vec::new();
    for n in range {
        out.extend_from_slice(&receipt(n));
        out.push(b'\n');
    }
    let p = dir.join(name);
    std::fs::write(&p, out).unwrap();
    p
}

/// A key and a new log in `store`; returns the log's verifier key.
fn init(dir: &Path, store: &str) -> String {
    common::log_init(dir, store, "log.pem", ORIGIN)
}

fn audit_json(dir: &Path, source: &str, key: &str, state: &str) -> (i32, Value) {
    let r = chit_in(
        dir,
        &[
            "log",
            "audit",
            source,
            "--log-key",
            key,
            "--state",
            state,
            "--json",
        ],
        None,
    );
    assert!(r.code == 0 || r.code == 1, "{} {}", r.code, r.stderr);
    (r.code, serde_json::from_str(&r.stdout).unwrap())
}

#[test]
fn a_receipt_is_logged_and_proven_offline() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = init(dir, "r.db");
    let ex = common::repo().join("examples/run-receipts");
    let r = chit_in(
        dir,
        &["log", "append", "--store", "r.db", ex.to_str().unwrap()],
        None,
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("2 appended"), "{}", r.stdout);

    // get: the exact bytes, by index or content address.
    let file = std::fs::read(ex.join("agreed-verified.json")).unwrap();
    let got = chit_raw(dir, &["log", "get", "--store", "r.db", "0"], None);
    assert_eq!(got.stdout, file);
    let sha = chit_core::digest::sha256_hex(&file);
    let got = chit_raw(
        dir,
        &["log", "get", "--store", "r.db", &format!("sha256:{sha}")],
        None,
    );
    assert_eq!(got.stdout, file);
    // Past the end, an address no entry has, text that names no entry.
    for (which, code, says) in [
        ("2", 1, "no entry 2: the log holds 2 (0 to 1)"),
        (
            &*format!("sha256:{}", "0".repeat(64)),
            1,
            "no entry has content address sha256:000",
        ),
        ("sha256:abc", 2, "sha256:abc: sha256: takes 64 hex digits"),
        ("first", 2, "first: give an index (0, 1, …) or sha256:HEX"),
    ] {
        let r = chit_in(dir, &["log", "get", "--store", "r.db", which], None);
        assert_eq!(r.code, code, "{which}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{which}: {}", r.stderr);
    }

    // A bundle proves it offline, with the log's key alone.
    let b = chit_raw(dir, &["log", "bundle", "--store", "r.db", "0"], None);
    assert_eq!(b.code, 0, "{}", b.stderr);
    std::fs::write(dir.join("r0.bundle.json"), &b.stdout).unwrap();
    let v = chit_in(dir, &["verify", "--log-key", &key, "r0.bundle.json"], None);
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    assert!(v.stdout.starts_with("VALID"), "{}", v.stdout);

    // Forged: another entry in the same bundle.
    let mut forged: Value = serde_json::from_slice(&b.stdout).unwrap();
    let other = std::fs::read(ex.join("not-unanimous-failing.json")).unwrap();
    forged["entry"] = base64::engine::general_purpose::STANDARD
        .encode(&other)
        .into();
    std::fs::write(dir.join("forged.json"), forged.to_string()).unwrap();
    let v = chit_in(dir, &["verify", "--log-key", &key, "forged.json"], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("log-inclusion"), "{}", v.stdout);

    // Another log's key: the checkpoint does not open.
    let other_key = common::log_init(dir, "other.db", "other.pem", ORIGIN);
    let v = chit_in(
        dir,
        &["verify", "--log-key", &other_key, "r0.bundle.json"],
        None,
    );
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("log-checkpoint"), "{}", v.stdout);

    // Not a bundle at all: --log-key proves only bundles.
    let v = chit_in(
        dir,
        &[
            "verify",
            "--log-key",
            &key,
            ex.join("agreed-verified.json").to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("not a log bundle"), "{}", v.stdout);

    // prove and consistency print proofs that verify.
    let p = chit_in(dir, &["log", "prove", "--store", "r.db", "1"], None);
    assert_eq!(p.code, 0, "{}", p.stderr);
    let p: Value = serde_json::from_str(&p.stdout).unwrap();
    let dec = |s: &Value| -> [u8; 32] {
        base64::engine::general_purpose::STANDARD
            .decode(s.as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap()
    };
    let proof: Vec<[u8; 32]> = p["inclusion_proof"]
        .as_array()
        .unwrap()
        .iter()
        .map(dec)
        .collect();
    chit_log::tree::verify_inclusion(
        &chit_log::tree::leaf_hash(&other),
        1,
        2,
        &proof,
        &dec(&p["root"]),
    )
    .unwrap();
    let c = chit_in(
        dir,
        &["log", "consistency", "--store", "r.db", "1", "2"],
        None,
    );
    assert_eq!(c.code, 0, "{}", c.stderr);
    let c: Value = serde_json::from_str(&c.stdout).unwrap();
    let proof: Vec<[u8; 32]> = c["consistency_proof"]
        .as_array()
        .unwrap()
        .iter()
        .map(dec)
        .collect();
    chit_log::tree::verify_consistency(1, 2, &dec(&c["old_root"]), &dec(&c["new_root"]), &proof)
        .unwrap();
}

#[test]
fn init_never_replaces_a_file_and_append_refuses_with_findings() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    std::fs::write(dir.join("notes.txt"), b"mine").unwrap();
    let r = chit_in(dir, &["keygen", "--out", "log.pem"], None);
    assert_eq!(r.code, 0);
    let r = chit_in(
        dir,
        &[
            "log",
            "init",
            "--store",
            "notes.txt",
            "--key",
            "log.pem",
            "--origin",
            ORIGIN,
        ],
        None,
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("already holds") || r.stderr.contains("never"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read(dir.join("notes.txt")).unwrap(), b"mine");

    init(dir, "r.db");
    let r = chit_in(
        dir,
        &[
            "log", "init", "--store", "r.db", "--key", "log.pem", "--origin", ORIGIN,
        ],
        None,
    );
    assert_eq!(r.code, 2, "{}", r.stderr);

    let mut broken: Value = serde_json::from_slice(&receipt(1)).unwrap();
    broken["agreement"] = "maybe".into();
    std::fs::write(dir.join("broken.json"), broken.to_string()).unwrap();
    let mut big: Value = serde_json::from_slice(&receipt(2)).unwrap();
    big["note"] = "x".repeat(70_000).into();
    std::fs::write(dir.join("big.json"), big.to_string()).unwrap();
    std::fs::write(dir.join("good.json"), receipt(3)).unwrap();
    let r = chit_in(
        dir,
        &[
            "log",
            "append",
            "--store",
            "r.db",
            "broken.json",
            "good.json",
        ],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("REFUSED broken.json"), "{}", r.stdout);
    assert!(r.stdout.contains("APPENDED good.json at 0"), "{}", r.stdout);
    let r = chit_in(dir, &["log", "append", "--store", "r.db", "big.json"], None);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stdout.contains("65,535"), "{}", r.stdout);
    // The same file again: its index, nothing new.
    let r = chit_in(
        dir,
        &["log", "append", "--store", "r.db", "--json", "good.json"],
        None,
    );
    assert_eq!(r.code, 0);
    let v: Value = serde_json::from_str(r.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(v["status"], "present");
    assert_eq!(v["index"], 0);
}

#[test]
fn exported_tiles_audit_and_a_changed_tile_is_named() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = init(dir, "r.db");
    let f = lines_file(dir, "in.jsonl", 0..600);
    common::log_append_lines(dir, "r.db", f.to_str().unwrap());
    let r = chit_in(
        dir,
        &["log", "export-tiles", "--store", "r.db", "tiles"],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    for p in [
        "checkpoint",
        "tile/0/000",
        "tile/0/001",
        "tile/0/002.p/88",
        "tile/1/000.p/2",
        "tile/entries/002.p/88",
    ] {
        assert!(dir.join("tiles").join(p).is_file(), "{p}");
    }
    let (code, v) = audit_json(dir, "tiles", &key, "a.json");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["size"], 600);
    // Exporting again updates the folder; a foreign folder is refused.
    let r = chit_in(
        dir,
        &["log", "export-tiles", "--store", "r.db", "tiles"],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    std::fs::create_dir(dir.join("mine")).unwrap();
    std::fs::write(dir.join("mine/x"), b"x").unwrap();
    let r = chit_in(
        dir,
        &["log", "export-tiles", "--store", "r.db", "mine"],
        None,
    );
    assert_eq!(r.code, 2);
    // An entry changed in the served bundle: named by its index.
    let path = dir.join("tiles/tile/entries/001");
    let data = std::fs::read(&path).unwrap();
    let mut entries: Vec<Vec<u8>> = chit_log::tiles::parse_entry_bundle(&data, 256)
        .unwrap()
        .into_iter()
        .map(<[u8]>::to_vec)
        .collect();
    entries[7] = receipt(9999);
    std::fs::write(
        &path,
        chit_log::tiles::encode_entry_bundle(&entries).unwrap(),
    )
    .unwrap();
    let (code, v) = audit_json(dir, "tiles", &key, "a.json");
    assert_eq!(code, 1, "{v}");
    assert!(
        v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["index"] == 263),
        "{v}"
    );
}

/// C2SP tlog-proofs: made from a store under a policy's quorum, verified
/// offline with the receipt, and refused, by the step that fails, when
/// anything in them or the receipt is changed.
#[test]
fn tlog_proofs_prove_a_receipt_offline_under_a_policy() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = init(dir, "r.db");
    assert_eq!(chit_in(dir, &["keygen", "--out", "w.pem"], None).code, 0);
    assert_eq!(chit_in(dir, &["keygen", "--out", "x.pem"], None).code, 0);
    let f = lines_file(dir, "a.jsonl", 0..30);
    common::log_append_lines(dir, "r.db", f.to_str().unwrap());
    let w = common::witness_as(dir, "r.db", "w.pem", "witness.example/w", &key, "w.json");
    assert_eq!(w.code, 0, "{}", w.stderr);
    let wkey = common::printed(&w.stdout, "witness key: ");
    let policy = format!("# the log and its witness\nlog {key}\nwitness W {wkey}\nquorum W\n");
    std::fs::write(dir.join("p1.policy"), &policy).unwrap();
    let get = |i: &str, file: &str| {
        let e = chit_raw(dir, &["log", "get", "--store", "r.db", i], None);
        assert_eq!(e.code, 0);
        std::fs::write(dir.join(file), &e.stdout).unwrap();
    };
    get("4", "e4.json");
    get("5", "e5.json");
    let prove = |args: &[&str], file: &str| {
        let p = chit_raw(dir, args, None);
        assert_eq!(p.code, 0, "{}", p.stderr);
        std::fs::write(dir.join(file), &p.stdout).unwrap();
        String::from_utf8(p.stdout).unwrap()
    };
    let text = prove(
        &[
            "log",
            "proof",
            "--store",
            "r.db",
            "--policy",
            "p1.policy",
            "4",
        ],
        "e4.tlog-proof",
    );
    assert!(
        text.starts_with("c2sp.org/tlog-proof@v1\nindex 4\n"),
        "{text}"
    );
    assert!(text.contains("\n\ntest.example/receipts\n30\n"), "{text}");
    let verify = |policy: &[&str], proof: &str, receipt: &str| {
        let mut args = vec!["verify"];
        args.extend_from_slice(policy);
        args.extend(["--proof", proof, receipt]);
        chit_in(dir, &args, None)
    };
    let p1 = ["--policy", "p1.policy"];
    let v = verify(&p1, "e4.tlog-proof", "e4.json");
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    // The shorthands state the same policy.
    let short = [
        "--log-key",
        &key,
        "--witness",
        &wkey,
        "--min-witnesses",
        "1",
    ];
    assert_eq!(verify(&short, "e4.tlog-proof", "e4.json").code, 0);

    // Another receipt: not the entry at the proof's index.
    let v = verify(&p1, "e4.tlog-proof", "e5.json");
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("log-inclusion"), "{}", v.stdout);
    // A changed hash of the proof: the same.
    let hash_line = text.lines().nth(2).unwrap();
    let flipped = if hash_line.starts_with('A') { "B" } else { "A" };
    let tampered = text.replacen(hash_line, &format!("{flipped}{}", &hash_line[1..]), 1);
    std::fs::write(dir.join("t1.tlog-proof"), &tampered).unwrap();
    let v = verify(&p1, "t1.tlog-proof", "e4.json");
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("log-inclusion"), "{}", v.stdout);
    // Another index: the same.
    std::fs::write(
        dir.join("t2.tlog-proof"),
        text.replacen("index 4", "index 5", 1),
    )
    .unwrap();
    assert!(verify(&p1, "t2.tlog-proof", "e4.json")
        .stdout
        .contains("log-inclusion"));
    // A changed checkpoint (its size): the log's signature fails.
    std::fs::write(
        dir.join("t3.tlog-proof"),
        text.replacen("\n30\n", "\n31\n", 1),
    )
    .unwrap();
    let v = verify(&p1, "t3.tlog-proof", "e4.json");
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("log-checkpoint"), "{}", v.stdout);
    // A policy whose quorum this checkpoint does not meet.
    let x = chit_in(dir, &["key", "show", "x.pem"], None);
    assert_eq!(x.code, 0);
    let other = common::witness_as(dir, "r.db", "x.pem", "witness.example/x", &key, "x.json");
    let xkey = common::printed(&other.stdout, "witness key: ");
    std::fs::write(
        dir.join("p2.policy"),
        format!("log {key}\nwitness W {wkey}\nwitness X {xkey}\ngroup both all W X\nquorum both\n"),
    )
    .unwrap();
    let v = verify(&["--policy", "p2.policy"], "e4.tlog-proof", "e4.json");
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("log-witnesses"), "{}", v.stdout);
    // A fresh proof carries both cosignatures now.
    prove(
        &[
            "log",
            "proof",
            "--store",
            "r.db",
            "--policy",
            "p2.policy",
            "4",
        ],
        "e4b.tlog-proof",
    );
    assert_eq!(
        verify(&["--policy", "p2.policy"], "e4b.tlog-proof", "e4.json").code,
        0
    );
    // An audit under the policy: its key for the log, its quorum met.
    let audit = |policy: &str, state: &str| {
        chit_in(
            dir,
            &["log", "audit", "r.db", "--policy", policy, "--state", state],
            None,
        )
    };
    let a = audit("p2.policy", "a2.json");
    assert_eq!(a.code, 0, "{}{}", a.stdout, a.stderr);
    // A log that does not list the log: refused.
    std::fs::write(
        dir.join("p3.policy"),
        format!("witness W {wkey}\nquorum W\n"),
    )
    .unwrap();
    let v = verify(&["--policy", "p3.policy"], "e4.tlog-proof", "e4.json");
    assert!(v.stdout.contains("log-checkpoint"), "{}", v.stdout);
    // Nor does an audit under it pass on cosignatures alone.
    let a = audit("p3.policy", "a3.json");
    assert_eq!(a.code, 2, "{}{}", a.stdout, a.stderr);
    assert!(a.stderr.contains("lists no log named"), "{}", a.stderr);
    // The same receipt twice, with two proofs: refused, never paired
    // with the wrong input.
    let v = chit_in(
        dir,
        &[
            "verify",
            "--policy",
            "p1.policy",
            "--proof",
            "e4.tlog-proof",
            "--proof",
            "e4.tlog-proof",
            "e4.json",
            "./e4.json",
        ],
        None,
    );
    assert_eq!(v.code, 2, "{}{}", v.stdout, v.stderr);
    assert!(v.stderr.contains("given twice"), "{}", v.stderr);

    // The log grows past what the witness cosigned: a proof under the
    // policy stays on the cosigned checkpoint; one without a policy is on
    // the latest, which the witness has not cosigned.
    let f = lines_file(dir, "b.jsonl", 30..40);
    common::log_append_lines(dir, "r.db", f.to_str().unwrap());
    let cosigned = prove(
        &[
            "log",
            "proof",
            "--store",
            "r.db",
            "--policy",
            "p1.policy",
            "4",
        ],
        "c.tlog-proof",
    );
    assert!(
        cosigned.contains("\ntest.example/receipts\n30\n"),
        "{cosigned}"
    );
    assert_eq!(verify(&p1, "c.tlog-proof", "e4.json").code, 0);
    let latest = prove(&["log", "proof", "--store", "r.db", "4"], "l.tlog-proof");
    assert!(latest.contains("\ntest.example/receipts\n40\n"), "{latest}");
    let v = verify(&p1, "l.tlog-proof", "e4.json");
    assert!(v.stdout.contains("log-witnesses"), "{}", v.stdout);
    assert_eq!(
        verify(&["--log-key", &key], "l.tlog-proof", "e4.json").code,
        0
    );
    // The audit holds the latest checkpoint to the quorum: not met.
    let a = audit("p1.policy", "a1.json");
    assert_eq!(a.code, 1, "{}", a.stdout);
    assert!(
        a.stdout.contains("do not meet the policy's quorum"),
        "{}",
        a.stdout
    );
    // A proof without a policy proves nothing.
    let v = chit_in(dir, &["verify", "--proof", "l.tlog-proof", "e4.json"], None);
    assert_eq!(v.code, 2, "{}", v.stderr);
    assert!(v.stderr.contains("--policy"), "{}", v.stderr);
}

/// `chit verify --log-key KEY --witness W... --min-witnesses MIN FILE`.
fn verify_witnessed(
    dir: &Path,
    key: &str,
    witnesses: &[&str],
    min: &str,
    file: &str,
) -> common::Run {
    let mut args = vec!["verify", "--log-key", key];
    for w in witnesses {
        args.extend(["--witness", w]);
    }
    args.extend(["--min-witnesses", min, file]);
    chit_in(dir, &args, None)
}

#[test]
fn witnesses_cosign_only_a_consistent_log() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = init(dir, "r.db");
    assert_eq!(chit_in(dir, &["keygen", "--out", "w.pem"], None).code, 0);
    let f = lines_file(dir, "a.jsonl", 0..30);
    common::log_append_lines(dir, "r.db", f.to_str().unwrap());
    let witness = |dir: &Path, store: &str| {
        common::witness_as(dir, store, "w.pem", "witness.example", &key, "w.json")
    };
    let w = witness(dir, "r.db");
    assert_eq!(w.code, 0, "{}", w.stderr);
    let wkey = common::printed(&w.stdout, "witness key: ");
    let b = chit_raw(dir, &["log", "bundle", "--store", "r.db", "4"], None);
    std::fs::write(dir.join("b.json"), &b.stdout).unwrap();
    let v = verify_witnessed(dir, &key, &[&wkey], "1", "b.json");
    assert_eq!(v.code, 0, "{}", v.stdout);
    // Another witness's key: not enough cosignatures.
    assert_eq!(chit_in(dir, &["keygen", "--out", "w2.pem"], None).code, 0);
    let other = common::witness_as(dir, "r.db", "w2.pem", "other.example", &key, "w2.json");
    assert_eq!(other.code, 0, "{}", other.stderr);
    let okey = common::printed(&other.stdout, "witness key: ");
    let b = chit_raw(dir, &["log", "bundle", "--store", "r.db", "4"], None);
    std::fs::write(dir.join("b2.json"), &b.stdout).unwrap();
    let v = verify_witnessed(dir, &key, &[&wkey, &okey], "2", "b2.json");
    assert_eq!(v.code, 0, "{}", v.stdout);
    let v = verify_witnessed(dir, &key, &[&okey], "1", "b.json");
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("log-witnesses"), "{}", v.stdout);

    // An audit asking for the witness: consistent while it cosigned the
    // latest checkpoint, a problem once the log moved past it.
    let audit = |state: &str| {
        chit_in(
            dir,
            &[
                "log",
                "audit",
                "r.db",
                "--log-key",
                &key,
                "--witness",
                &wkey,
                "--min-witnesses",
                "1",
                "--state",
                state,
            ],
            None,
        )
    };
    assert_eq!(audit("aw.json").code, 0);

    // The log grows: the witness proves consistency and cosigns again.
    let f = lines_file(dir, "b.jsonl", 30..300);
    common::log_append_lines(dir, "r.db", f.to_str().unwrap());
    let a = audit("aw2.json");
    assert_eq!(a.code, 1, "{}", a.stdout);
    assert!(a.stdout.contains("witnesses"), "{}", a.stdout);
    assert_eq!(witness(dir, "r.db").code, 0);
    assert_eq!(audit("aw.json").code, 0);
    // A forked log under the same key: refused, with both checkpoints.
    let f = lines_file(dir, "c.jsonl", 1000..1400);
    std::fs::copy(dir.join("log.pem"), dir.join("same.pem")).unwrap();
    let r = chit_in(
        dir,
        &[
            "log", "init", "--store", "fork.db", "--key", "log.pem", "--origin", ORIGIN,
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    common::log_append_lines(dir, "fork.db", f.to_str().unwrap());
    let w = witness(dir, "fork.db");
    assert_eq!(w.code, 1, "{}", w.stdout);
    assert!(
        w.stderr.contains("refusing to cosign") && w.stderr.contains("evidence 2"),
        "{}",
        w.stderr
    );
}

#[test]
fn a_read_only_store_acknowledges_nothing() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = init(dir, "r.db");
    std::fs::write(dir.join("good.json"), receipt(1)).unwrap();
    let mut perms = std::fs::metadata(dir.join("r.db")).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(dir.join("r.db"), perms).unwrap();
    let r = chit_in(
        dir,
        &["log", "append", "--store", "r.db", "good.json"],
        None,
    );
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.stderr.contains("read-only") && r.stderr.contains("nothing of this batch"),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("APPENDED"));
    let (code, v) = audit_json(dir, "r.db", &key, "a.json");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["size"], 0);
}

#[test]
#[cfg(unix)]
fn a_full_disk_acknowledges_nothing() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = init(dir, "r.db");
    let f = lines_file(dir, "a.jsonl", 0..50);
    common::log_append_lines(dir, "r.db", f.to_str().unwrap());
    lines_file(dir, "b.jsonl", 50..600);
    let limit = std::fs::metadata(dir.join("r.db")).unwrap().len() + 64 * 1024;
    // The kernel refuses writes past the limit (EFBIG), as a full disk
    // would; SIGXFSZ is ignored so the write fails instead of killing chit.
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(format!(
        "trap '' XFSZ; ulimit -f {}; exec \"$0\" log append --store r.db --lines --batch 1000 b.jsonl",
        limit / 512
    ));
    cmd.arg(env!("CARGO_BIN_EXE_chit"));
    let r = run_raw(cmd, dir, None);
    let stdout = String::from_utf8_lossy(&r.stdout);
    assert_eq!(r.code, 2, "{stdout} {}", r.stderr);
    assert!(
        r.stderr.contains("cannot write") && r.stderr.contains("nothing of this batch"),
        "{}",
        r.stderr
    );
    assert!(!stdout.contains("APPENDED"), "{stdout}");
    let (code, v) = audit_json(dir, "r.db", &key, "s.json");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["size"], 50);
    // With room again, the next append goes on.
    common::log_append_lines(dir, "r.db", "b.jsonl");
    let (code, v) = audit_json(dir, "r.db", &key, "s.json");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["size"], 600);
}

/// Appends `file` in small batches; after `kill_after` (if given) kills
/// the process with SIGKILL. Returns what it acknowledged, as (index,
/// sha256), and how long it ran.
fn append_and_kill(
    dir: &Path,
    store: &str,
    file: &str,
    kill_after: Option<Duration>,
) -> (Vec<(u64, String)>, Duration) {
    let start = std::time::Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_chit"))
        .args([
            "log", "append", "--store", store, "--lines", "--json", "--batch", "37", file,
        ])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut acked = Vec::new();
        for line in std::io::BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            // A line cut by the kill is not an acknowledgement.
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                break;
            };
            if let (Some(i), Some(h)) = (v["index"].as_u64(), v["sha256"].as_str()) {
                acked.push((i, h.to_string()));
            }
        }
        acked
    });
    if let Some(after) = kill_after {
        std::thread::sleep(after);
        let _ = child.kill(); // SIGKILL
    }
    let status = child.wait().unwrap();
    if kill_after.is_none() {
        assert!(status.success(), "the unkilled run failed: {status:?}");
    }
    (reader.join().unwrap(), start.elapsed())
}

/// Rounds of appends, each killed with SIGKILL at a pseudo-random moment
/// within the time a whole round takes; after each, the store must audit
/// clean and hold every entry any run acknowledged.
fn kill_nine(store: &str, dir: &Path, rounds: u64) {
    const PER_ROUND: usize = 1000;
    let key = init(dir, store);
    let mut all_acked: Vec<(u64, String)> = Vec::new();
    // Round 0 runs whole: how long a round takes.
    lines_file(dir, "r0.jsonl", 0..PER_ROUND);
    let (acked, whole) = append_and_kill(dir, store, "r0.jsonl", None);
    assert_eq!(acked.len(), PER_ROUND);
    all_acked.extend(acked);
    let mut killed_midway = 0;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 1..=rounds {
        let name = format!("r{round}.jsonl");
        let first = round as usize * PER_ROUND;
        lines_file(dir, &name, first..first + PER_ROUND);
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let at = whole.mul_f64(0.05 + 0.9 * ((seed >> 11) as f64 / (1u64 << 53) as f64));
        let (acked, _) = append_and_kill(dir, store, &name, Some(at));
        if acked.len() < PER_ROUND {
            killed_midway += 1;
        }
        all_acked.extend(acked);
        // The store opens, its tree and checkpoint agree, nothing half done.
        let (code, v) = audit_json(dir, store, &key, &format!("kill-{round}.json"));
        assert_eq!(code, 0, "round {round}: {v}");
        let size = v["size"].as_u64().unwrap();
        // Every acknowledged entry is there, at its index, with its bytes.
        let mut log =
            chit_logstore::Log::open(chit_logstore::open(&resolve(dir, store)).unwrap()).unwrap();
        for (i, sha) in &all_acked {
            assert!(
                *i < size,
                "round {round}: acknowledged {i} lost (size {size})"
            );
            let e = log.store().entry(*i).unwrap().unwrap();
            assert_eq!(
                chit_core::digest::hex(&e.sha256),
                *sha,
                "round {round}: entry {i}"
            );
        }
    }
    eprintln!("{store}: {killed_midway} of {rounds} kills landed mid-append; {} acknowledged entries all kept", all_acked.len());
    // Most kills landed mid-run (a round may finish before its moment).
    assert!(
        killed_midway * 2 >= rounds,
        "only {killed_midway} of {rounds} kills landed mid-append"
    );
    // The next start continues: every receipt ends up logged exactly once.
    for round in 1..=rounds {
        let name = format!("r{round}.jsonl");
        let r = chit_in(
            dir,
            &["log", "append", "--store", store, "--lines", &name],
            None,
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let (code, v) = audit_json(dir, store, &key, "final.json");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["size"].as_u64(), Some((rounds + 1) * PER_ROUND as u64));
}

fn resolve(dir: &Path, store: &str) -> String {
    if store.starts_with("postgres") {
        store.to_string()
    } else {
        dir.join(store).display().to_string()
    }
}

#[test]
fn kill_nine_during_appends_loses_nothing_acknowledged_sqlite() {
    let t = tempfile::tempdir().unwrap();
    kill_nine("r.db", t.path(), 20);
}

#[test]
fn kill_nine_during_appends_loses_nothing_acknowledged_log_folder() {
    let t = tempfile::tempdir().unwrap();
    kill_nine("r", t.path(), 20);
}

#[test]
fn kill_nine_during_appends_loses_nothing_acknowledged_postgres() {
    let Some(pg) = common::pg_schema("chit_k") else {
        return;
    };
    let url = pg.url.clone();
    let t = tempfile::tempdir().unwrap();
    kill_nine(&url, t.path(), 10);
    drop(pg);
}

/// A PostgreSQL log whose every transaction is read-only (the server's
/// `default_transaction_read_only`, passed through the URL as any libpq
/// option is): append fails in one line and acknowledges nothing.
#[test]
fn a_read_only_postgres_store_acknowledges_nothing() {
    let Some(pg) = common::pg_schema("chit_ro") else {
        return;
    };
    let url = pg.url.clone();
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = init(dir, &url);
    std::fs::write(dir.join("good.json"), receipt(1)).unwrap();
    let ro = format!("{url}&options=-c%20default_transaction_read_only%3Don");
    let r = chit_in(
        dir,
        &[
            "log",
            "append",
            "--store",
            &ro,
            "--key",
            "log.pem",
            "good.json",
        ],
        None,
    );
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.stderr.contains("read-only") && r.stderr.contains("nothing of this batch"),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("APPENDED"), "{}", r.stdout);
    assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
    let (code, v) = audit_json(dir, &url, &key, "a.json");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["size"], 0);
    drop(pg);
}

/// A policy changed behind the log's back (a PostgreSQL row edited): the
/// audit exits 1 naming the policy, an append is refused, `log info` says
/// so; a log without a binding is refused an append, audits 1, and is
/// bound by `chit log bind-policy`.
#[test]
fn a_policy_changed_behind_the_logs_back_is_caught() {
    let Some(mut pg) = common::pg_schema("chit_pol") else {
        return;
    };
    let url = pg.url.clone();
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = init(dir, &url);
    std::fs::write(dir.join("good.json"), receipt(1)).unwrap();
    let append = |code: i32| {
        let r = chit_in(dir, &["log", "append", "--store", &url, "good.json"], None);
        assert_eq!(r.code, code, "{}{}", r.stdout, r.stderr);
        r
    };
    append(0);
    pg.execute(
        "UPDATE chit_log_meta SET value = replace(value, '\"allow_unchecked\":false', \
         '\"allow_unchecked\":true') WHERE key = 'policy'",
    );
    let (code, v) = audit_json(dir, &url, &key, "a.json");
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["problems"][0]["step"], "policy", "{v}");
    let r = append(2);
    assert!(
        r.stderr.contains("not the one the log signed"),
        "{}",
        r.stderr
    );
    let info = chit_in(dir, &["log", "info", "--store", &url], None);
    assert!(info.stdout.contains("policy: NOT BOUND"), "{}", info.stdout);
    pg.execute(
        "UPDATE chit_log_meta SET value = replace(value, '\"allow_unchecked\":true', \
         '\"allow_unchecked\":false') WHERE key = 'policy'; \
         DELETE FROM chit_log_meta WHERE key = 'policy_binding'",
    );
    let r = append(2);
    assert!(
        r.stderr.contains("not bound") && r.stderr.contains("chit log bind-policy"),
        "{}",
        r.stderr
    );
    let (code, v) = audit_json(dir, &url, &key, "b.json");
    assert_eq!(code, 1, "{v}");
    let r = chit_in(dir, &["log", "bind-policy", "--store", &url], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("bound the policy of"), "{}", r.stdout);
    let (code, v) = audit_json(dir, &url, &key, "c.json");
    assert_eq!(code, 0, "{v}");
    let info = chit_in(dir, &["log", "info", "--store", &url], None);
    assert!(info.stdout.contains("policy: bound"), "{}", info.stdout);
    drop(pg);
}

/// A SQLite log copied to a folder nobody may write (read-only media: its
/// shared-memory index cannot be made there) is audited as it is, by a
/// user who cannot write it (root is dropped to `nobody`); the folder is
/// left as it was.
#[test]
fn a_read_only_snapshot_is_audited() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = init(dir, "r.db");
    std::fs::write(
        dir.join("in.jsonl"),
        [receipt(1), receipt(2)].join(&b"\n"[..]),
    )
    .unwrap();
    common::log_append_lines(dir, "r.db", "in.jsonl");
    let snap = dir.join("snap");
    std::fs::create_dir(&snap).unwrap();
    std::fs::copy(dir.join("r.db"), snap.join("r.db")).unwrap();
    let state = dir.join("state");
    std::fs::create_dir(&state).unwrap();
    let mode =
        |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    mode(dir, 0o755);
    mode(&state, 0o777);
    mode(&snap.join("r.db"), 0o444);
    mode(&snap, 0o555);
    let is_root = runs_as_root();
    let audit = || {
        let mut cmd = if is_root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_chit"));
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_chit"))
        };
        cmd.args([
            "log",
            "audit",
            "snap/r.db",
            "--log-key",
            &key,
            "--state",
            "state/s.json",
            "--json",
        ]);
        run_raw(cmd, dir, None)
    };
    let r = audit();
    let stdout = String::from_utf8_lossy(&r.stdout);
    assert_eq!(r.code, 0, "{stdout}{}", r.stderr);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["size"], 2, "{v}");
    let left: Vec<_> = std::fs::read_dir(&snap)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("r.db")]);
    mode(&snap, 0o755);
    // A write-ahead log beside it holding what the file does not: not read
    // as immutable (that would leave it out), refused in one line.
    std::fs::write(snap.join("r.db-wal"), b"not yet in the file").unwrap();
    mode(&snap, 0o555);
    let r = audit();
    mode(&snap, 0o755);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("holds what is not in it yet"),
        "{}",
        r.stderr
    );
}

/// Whether this process runs as root (whom permission bits do not stop).
fn runs_as_root() -> bool {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// A log made by the chit of e95df42 (tests/data/log-e95df42): it opens
/// as it is (its audit consistent but for the policy binding it lacks),
/// is migrated to a new SQLite file and to PostgreSQL with every
/// checkpoint as it was signed and cosigned, and once its operator binds
/// its policy the copy audits clean, `--reverify` included.
#[test]
fn a_log_made_before_is_migrated_and_audits_clean() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let fixture = common::repo().join("crates/chit/tests/data/log-e95df42");
    for f in ["log.db", "log.pem"] {
        std::fs::copy(fixture.join(f), dir.join(f)).unwrap();
    }
    let key = std::fs::read_to_string(fixture.join("log.pub"))
        .unwrap()
        .trim()
        .to_string();
    let audit = |store: &str, state: &str| {
        let r = chit_in(
            dir,
            &[
                "log",
                "audit",
                store,
                "--log-key",
                &key,
                "--state",
                state,
                "--reverify",
                "--json",
            ],
            None,
        );
        assert!(r.code == 0 || r.code == 1, "{}{}", r.stdout, r.stderr);
        (r.code, serde_json::from_str::<Value>(&r.stdout).unwrap())
    };
    let only_unbound = |v: &Value| {
        let problems = v["problems"].as_array().unwrap();
        problems.len() == 1
            && problems[0]["step"] == "policy"
            && problems[0]["message"]
                .as_str()
                .unwrap()
                .contains("not bound")
    };
    let (code, v) = audit("log.db", "old.json");
    assert_eq!(code, 1, "{v}");
    assert!(only_unbound(&v), "{v}");
    assert_eq!(v["size"], 40);
    assert_eq!(v["reverified"]["valid"], 40);
    let checkpoint =
        |store: &str| chit_in(dir, &["log", "checkpoint", "--store", store], None).stdout;
    let old = checkpoint("log.db");
    assert!(old.contains("\u{2014} witness.example "), "{old}");
    let mut targets = vec!["new.db".to_string(), "folder".to_string()];
    let pg = common::pg_schema("chit_mig");
    if let Some(pg) = &pg {
        targets.push(pg.url.clone());
    }
    for (n, to) in targets.iter().enumerate() {
        let r = chit_in(
            dir,
            &["log", "migrate", "log.db", to, "--log-key", &key],
            None,
        );
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        assert!(
            r.stdout
                .starts_with("migrated 40 entries and 4 checkpoints"),
            "{}",
            r.stdout
        );
        assert_eq!(checkpoint(to), old);
        let (code, v) = audit(to, &format!("m{n}.json"));
        assert_eq!(code, 1, "{v}");
        assert!(only_unbound(&v), "{v}");
        let r = chit_in(
            dir,
            &["log", "bind-policy", "--store", to, "--key", "log.pem"],
            None,
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let (code, v) = audit(to, &format!("b{n}.json"));
        assert_eq!(code, 0, "{v}");
    }
    // Into a store that holds a log: refused, the log there left whole.
    let r = chit_in(dir, &["log", "migrate", "log.db", "new.db"], None);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(audit("new.db", "b0.json").0, 0);
    drop(pg);
}

/// With --log-key, the entries' checks across inputs still run: two
/// bundles of one stream with a packet missing between them fail P3, as
/// the packets would bare.
#[test]
fn bundles_keep_their_checks_across_inputs() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let ex = common::repo().join("examples/packets");
    let trust = ex.join("trust.toml");
    assert_eq!(chit_in(dir, &["keygen", "--out", "log.pem"], None).code, 0);
    let init = chit_in(
        dir,
        &[
            "log",
            "init",
            "--store",
            "r.db",
            "--key",
            "log.pem",
            "--origin",
            ORIGIN,
            "--trust",
            trust.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(init.code, 0, "{}", init.stderr);
    let key = common::printed(&init.stdout, "log key: ");
    for p in ["p0.env.json", "p2.env.json", "p1.env.json"] {
        let r = chit_in(
            dir,
            &[
                "log",
                "append",
                "--store",
                "r.db",
                ex.join(p).to_str().unwrap(),
            ],
            None,
        );
        assert_eq!(r.code, 0, "{}", r.stdout);
    }
    for (i, f) in [("0", "b0.json"), ("1", "b2.json"), ("2", "b1.json")] {
        let b = chit_raw(dir, &["log", "bundle", "--store", "r.db", i], None);
        std::fs::write(dir.join(f), &b.stdout).unwrap();
    }
    let v = chit_in(
        dir,
        &[
            "verify",
            "--log-key",
            &key,
            "--trust",
            trust.to_str().unwrap(),
            "b0.json",
            "b2.json",
        ],
        None,
    );
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(
        v.stdout.contains("INVALID stream demo-stream"),
        "{}",
        v.stdout
    );
    assert!(v.stdout.contains("P3"), "{}", v.stdout);
    let v = chit_in(
        dir,
        &[
            "verify",
            "--log-key",
            &key,
            "--trust",
            trust.to_str().unwrap(),
            "b0.json",
            "b1.json",
            "b2.json",
        ],
        None,
    );
    assert_eq!(v.code, 0, "{}", v.stdout);
    assert!(
        v.stdout.contains("VALID stream demo-stream (3 packets)"),
        "{}",
        v.stdout
    );
}

/// A log folder (the default store) is its own static copy: `public/`
/// served by a plain static web server audits clean over HTTP, and grows
/// with the log. What a crash leaves in it (bytes of a batch that never
/// committed, a full bundle not yet moved to `public/`) is read past and
/// settled; a damaged published bundle is named (exit 1).
#[test]
fn a_log_folder_is_its_own_static_copy() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = init(dir, "receipts");
    assert!(dir.join("receipts/index.db").is_file());
    lines_file(dir, "a.jsonl", 0..300);
    common::log_append_lines(dir, "receipts", "a.jsonl");
    let public = dir.join("receipts/public");
    let checkpoint =
        |store: &str| chit_in(dir, &["log", "checkpoint", "--store", store], None).stdout;
    assert_eq!(
        std::fs::read_to_string(public.join("checkpoint")).unwrap(),
        checkpoint("receipts")
    );
    assert!(public.join("tile/entries/000").is_file());
    assert!(public.join("tile/entries/001.p/44").is_file());
    assert!(public.join("tile/0/000").is_file());
    assert!(public.join("tile/0/001.p/44").is_file());
    assert!(public.join("tile/1/000.p/1").is_file());
    let web = common::StaticWeb::start(&public);
    let (code, v) = audit_json(dir, &web.url, &key, "web.json");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["size"], 300);
    lines_file(dir, "b.jsonl", 300..320);
    common::log_append_lines(dir, "receipts", "b.jsonl");
    let (code, v) = audit_json(dir, &web.url, &key, "web.json");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["size"], 320);
    assert!(
        !public.join("tile/entries/001.p/44").exists(),
        "an old partial is kept"
    );
    drop(web);

    // A crash's leftovers: a batch that never committed, and a full
    // bundle whose move to public/ was lost.
    let tail = dir.join("receipts/tail");
    let mut grown = std::fs::read(tail.join("entries-1")).unwrap();
    grown.extend_from_slice(&[0, 9, b'u', b'n', b'c', b'o', b'm', b'm', b'i', b't']);
    std::fs::write(tail.join("entries-1"), grown).unwrap();
    std::fs::rename(public.join("tile/entries/000"), tail.join("entries-0")).unwrap();
    let (code, v) = audit_json(dir, "receipts", &key, "store.json");
    assert_eq!(code, 0, "{v}");
    lines_file(dir, "c.jsonl", 320..321);
    common::log_append_lines(dir, "receipts", "c.jsonl");
    assert!(public.join("tile/entries/000").is_file(), "not settled");
    let (code, v) = audit_json(dir, "receipts", &key, "store.json");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["size"], 321);

    // A public checkpoint changed behind the log's back (claiming a
    // bigger tree) is replaced by the next publication.
    std::fs::write(public.join("checkpoint"), b"receipts\n999999\nforged\n").unwrap();
    lines_file(dir, "d.jsonl", 321..322);
    common::log_append_lines(dir, "receipts", "d.jsonl");
    assert_eq!(
        std::fs::read_to_string(public.join("checkpoint")).unwrap(),
        checkpoint("receipts")
    );

    // A published bundle damaged: named.
    let bundle = public.join("tile/entries/000");
    let mut bytes = std::fs::read(&bundle).unwrap();
    bytes[0] = 0xff;
    std::fs::write(&bundle, &bytes).unwrap();
    let (code, v) = audit_json(dir, "receipts", &key, "damaged.json");
    assert_eq!(code, 1, "{v}");
    let said = v["problems"][0]["message"].as_str().unwrap();
    assert!(
        said.contains("tile/entries/000 is not a valid entry bundle"),
        "{v}"
    );
}

/// A link planted in a log folder where chit will write a new growing
/// file is refused (one line, nothing acknowledged), never written
/// through: the file it points to is left as it was.
#[test]
fn a_link_planted_in_a_log_folder_is_never_written_through() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = init(dir, "receipts");
    lines_file(dir, "a.jsonl", 0..10);
    common::log_append_lines(dir, "receipts", "a.jsonl");
    std::fs::write(dir.join("mine.txt"), b"mine").unwrap();
    std::os::unix::fs::symlink(dir.join("mine.txt"), dir.join("receipts/tail/entries-1")).unwrap();
    lines_file(dir, "b.jsonl", 10..300);
    let r = chit_in(
        dir,
        &["log", "append", "--store", "receipts", "--lines", "b.jsonl"],
        None,
    );
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("entries-1"), "{}", r.stderr);
    assert_eq!(std::fs::read(dir.join("mine.txt")).unwrap(), b"mine");
    std::fs::remove_file(dir.join("receipts/tail/entries-1")).unwrap();
    common::log_append_lines(dir, "receipts", "b.jsonl");
    let (code, v) = audit_json(dir, "receipts", &key, "a.json");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["size"], 300);
}
