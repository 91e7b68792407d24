//! `chit log watch` end to end, over loopback HTTP: an honest log followed
//! across runs, a fork and a split view with the log's own origin and key,
//! an older view proven a prefix, entries refused under --reverify, and a
//! follower stopped and resumed.

mod common;

use common::serving::receipt;
use common::{chit_in, StaticWeb};
use serde_json::Value;
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ORIGIN: &str = "test.example/watched";

/// A log in `store` signed by `log.pem` (made once) holding receipts
/// `ns`, its tiles exported to `tiles`.
fn log_with(dir: &Path, store: &str, tiles: &str, ns: impl IntoIterator<Item = usize>) {
    if !dir.join("log.pem").exists() {
        assert_eq!(chit_in(dir, &["keygen", "--out", "log.pem"], None).code, 0);
    }
    if !dir.join(store).exists() {
        let r = chit_in(
            dir,
            &[
                "log", "init", "--store", store, "--key", "log.pem", "--origin", ORIGIN,
            ],
            None,
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    append(dir, store, tiles, ns);
}

/// Appends receipts `ns` to `store` and exports its tiles to `tiles`.
fn append(dir: &Path, store: &str, tiles: &str, ns: impl IntoIterator<Item = usize>) {
    let mut lines = Vec::new();
    for n in ns {
        lines.extend_from_slice(&receipt(n));
        lines.push(b'\n');
    }
    let file = dir.join(format!("{store}.jsonl"));
    std::fs::write(&file, lines).unwrap();
    common::log_append_lines(dir, store, file.to_str().unwrap());
    let r = chit_in(dir, &["log", "export-tiles", "--store", store, tiles], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// The log's verifier key.
fn log_key(dir: &Path, store: &str) -> String {
    let info = chit_in(dir, &["log", "info", "--store", store], None);
    info.stdout
        .split_whitespace()
        .find(|w| w.starts_with(&format!("{ORIGIN}+")))
        .unwrap_or_else(|| panic!("no key in {}", info.stdout))
        .to_string()
}

/// The policy: the log's key, no witnesses.
fn policy(dir: &Path, store: &str) {
    let key = log_key(dir, store);
    std::fs::write(dir.join("log.policy"), format!("log {key}\nquorum none\n")).unwrap();
}

struct Watched {
    code: i32,
    lines: Vec<Value>,
    stderr: String,
}

fn watch(dir: &Path, url: &str, extra: &[&str]) -> Watched {
    watch_with(dir, url, "watch.json", extra)
}

fn watch_with(dir: &Path, url: &str, state: &str, extra: &[&str]) -> Watched {
    let mut args = vec![
        "log",
        "watch",
        url,
        "--policy",
        "log.policy",
        "--state",
        state,
    ];
    args.extend_from_slice(extra);
    let r = chit_in(dir, &args, None);
    let lines = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    Watched {
        code: r.code,
        lines,
        stderr: r.stderr,
    }
}

fn indexes(lines: &[Value]) -> Vec<u64> {
    lines
        .iter()
        .filter(|l| l["type"] == "entry")
        .map(|l| l["index"].as_u64().unwrap())
        .collect()
}

#[test]
fn an_honest_log_is_followed_across_runs_and_addresses() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    log_with(dir, "r.db", "tiles", 0..30);
    policy(dir, "r.db");
    let web = StaticWeb::start(&dir.join("tiles"));
    let w = watch(dir, &web.url, &[]);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert_eq!(indexes(&w.lines), (0..30).collect::<Vec<_>>());
    let first = &w.lines[0];
    assert_eq!(first["origin"], ORIGIN);
    assert_eq!(
        first["sha256"],
        chit_core::digest::sha256_hex(&receipt(0)).as_str()
    );
    assert_eq!(first["bytes"], receipt(0).len());
    // The log grows: only the new entries, proven against the tree seen.
    append(dir, "r.db", "tiles", 30..45);
    let w = watch(dir, &web.url, &[]);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert_eq!(indexes(&w.lines), (30..45).collect::<Vec<_>>());
    assert!(
        w.stderr.contains("45 entries, 15 new, proven"),
        "{}",
        w.stderr
    );
    // Nothing new.
    let w = watch(dir, &web.url, &[]);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert!(w.lines.is_empty());
    // The same log at another address: held to the same state.
    let mirror = StaticWeb::start(&dir.join("tiles"));
    let w = watch(dir, &mirror.url, &[]);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert!(w.lines.is_empty());
    // A mirror behind (its tiles as they were at 30): proven a prefix of
    // the tree seen, from where that was served.
    log_with(dir, "old.db", "old-tiles", 0..30);
    let behind = StaticWeb::start(&dir.join("old-tiles"));
    let w = watch(dir, &behind.url, &[]);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert!(w.lines.is_empty());
    assert!(
        w.stderr.contains("an older view, proven a prefix"),
        "{}",
        w.stderr
    );
    // Matches: by kind (each entry checked), by a signer none has.
    append(dir, "r.db", "tiles", 45..48);
    let other = chit_core::keys::SecretKey::from_seed(&[9; 32]).public();
    let signer = format!("signer={}", other.did_key());
    let w = watch(dir, &web.url, &["--match", &signer]);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert!(w.lines.is_empty(), "{:?}", w.lines);
    append(dir, "r.db", "tiles", 48..50);
    let w = watch(dir, &web.url, &["--match", "kind=run-receipt"]);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert_eq!(indexes(&w.lines), vec![48, 49]);
    assert_eq!(w.lines[0]["kind"], "run-receipt");
    assert_eq!(w.lines[0]["status"], "valid");
}

#[test]
fn a_fork_and_a_split_view_under_the_logs_own_key_are_caught() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    log_with(dir, "r.db", "tiles", 0..40);
    policy(dir, "r.db");
    let web = StaticWeb::start(&dir.join("tiles"));
    assert_eq!(watch(dir, &web.url, &[]).code, 0);
    let seen = std::fs::read_to_string(dir.join("watch.json")).unwrap();
    // The same key and origin, the first 20 entries shared, then others:
    // a fork, served at another address.
    log_with(dir, "fork.db", "fork-tiles", (0..20).chain(1000..1030));
    let fork = StaticWeb::start(&dir.join("fork-tiles"));
    let w = watch(dir, &fork.url, &[]);
    assert_eq!(w.code, 1, "{}", w.stderr);
    assert!(
        indexes(&w.lines).is_empty(),
        "no entry of a fork is printed"
    );
    let problem = w.lines.last().unwrap();
    assert_eq!(problem["type"], "problem");
    assert_eq!(problem["step"], "consistency");
    assert!(
        problem["message"].as_str().unwrap().contains("a fork"),
        "{problem}"
    );
    let evidence: Vec<&str> = problem["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(evidence.len(), 2);
    assert!(
        evidence[0].starts_with(&format!("{ORIGIN}\n40\n")),
        "{evidence:?}"
    );
    assert!(
        evidence[1].starts_with(&format!("{ORIGIN}\n50\n")),
        "{evidence:?}"
    );
    assert!(w.stderr.contains("evidence 2 (shown now)"), "{}", w.stderr);
    // Both are signed checkpoints of the log: the policy opens them.
    for e in &evidence {
        let policy =
            chit_log::policy::Policy::parse(&std::fs::read(dir.join("log.policy")).unwrap())
                .unwrap();
        assert!(policy.open(e.as_bytes()).is_ok());
    }
    // The state still holds the tree seen: the fork is refused again.
    assert_eq!(
        std::fs::read_to_string(dir.join("watch.json")).unwrap(),
        seen
    );
    assert_eq!(watch(dir, &fork.url, &[]).code, 1);
    // A split view: another tree of the size seen.
    log_with(dir, "split.db", "split-tiles", (0..39).chain(2000..2001));
    let split = StaticWeb::start(&dir.join("split-tiles"));
    let w = watch(dir, &split.url, &[]);
    assert_eq!(w.code, 1, "{}", w.stderr);
    let problem = w.lines.last().unwrap();
    assert!(
        problem["message"].as_str().unwrap().contains("split view"),
        "{problem}"
    );
    assert_eq!(problem["evidence"].as_array().unwrap().len(), 2);
    // An older view that is not a prefix: the fork at 30. The proof from
    // where the tree of 40 was seen does not hold, which proves no fork
    // (those tiles vouch for nothing): not proven, exit 2.
    log_with(dir, "short.db", "short-tiles", (0..20).chain(3000..3010));
    let short = StaticWeb::start(&dir.join("short-tiles"));
    let w = watch(dir, &short.url, &[]);
    assert_eq!(w.code, 2, "{}", w.stderr);
    assert!(w.lines.is_empty(), "{:?}", w.lines);
    assert!(w.stderr.contains("not proven a prefix"), "{}", w.stderr);
    // The honest log still passes.
    assert_eq!(watch(dir, &web.url, &[]).code, 0);
}

#[test]
fn entries_are_checked_again_under_reverify() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    log_with(dir, "r.db", "tiles", 0..12);
    policy(dir, "r.db");
    let web = StaticWeb::start(&dir.join("tiles"));
    // Under the log's own settings: every entry valid.
    let w = watch_with(dir, &web.url, "a.json", &["--reverify"]);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert_eq!(w.lines.len(), 12);
    assert!(
        w.lines.iter().all(|l| l["status"] == "valid"),
        "{:?}",
        w.lines
    );
    // Under a trust file that signs none of them: each refused.
    let key = chit_core::keys::SecretKey::from_seed(&[7; 32]).public();
    std::fs::write(
        dir.join("trust.toml"),
        format!(
            "[[key]]\nname = \"k\"\npublic_key = \"{}\"\n",
            key.did_key()
        ),
    )
    .unwrap();
    let w = watch_with(
        dir,
        &web.url,
        "b.json",
        &["--reverify", "--trust", "trust.toml"],
    );
    assert_eq!(w.code, 1, "{}{:?}", w.stderr, w.lines);
    assert_eq!(w.lines.len(), 12);
    assert!(
        w.lines.iter().all(|l| l["refused"].is_string()),
        "{:?}",
        w.lines
    );
    assert!(w.stderr.contains("REFUSED"), "{}", w.stderr);
    // Trust flags without --reverify or --match say nothing: refused.
    let w = watch(dir, &web.url, &["--trust", "trust.toml"]);
    assert_eq!(w.code, 2);
    // A match by stream reads the check's labels whatever its verdict: two
    // packets of stream s1, signed, checked here with no trust file (so
    // refused: no signature can be checked), their stream still read.
    assert_eq!(chit_in(dir, &["keygen", "--out", "ship.pem"], None).code, 0);
    let ship = chit_in(dir, &["key", "show", "ship.pem"], None);
    let ship_key = ship
        .stdout
        .split_whitespace()
        .find(|w| w.starts_with("did:key:"))
        .unwrap_or_else(|| panic!("no key in {}", ship.stdout))
        .to_string();
    std::fs::write(
        dir.join("ship.toml"),
        format!("[[key]]\nname = \"ship\"\npublic_key = \"{ship_key}\"\n"),
    )
    .unwrap();
    let r = chit_in(
        dir,
        &[
            "log",
            "init",
            "--store",
            "p.db",
            "--key",
            "log.pem",
            "--origin",
            ORIGIN,
            "--trust",
            "ship.toml",
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let digest = |c: char| format!("sha256:{}", c.to_string().repeat(64));
    let mut envelopes = Vec::new();
    for seq in 0..2u64 {
        let mut v = serde_json::json!({
            "schema": "verification.packet.v1", "stream_id": "s1", "sequence": seq,
            "packet_id": format!("p{seq}"), "produced_at": "2026-11-30T09:00:00Z",
            "input_digest": digest('a'), "model_digest": digest('b'),
            "output_digest": digest('c'), "reproducibility": "bit_exact",
        });
        if seq > 0 {
            v["prev_packet_id"] = serde_json::json!(format!("p{}", seq - 1));
        }
        std::fs::write(dir.join("packet.json"), v.to_string()).unwrap();
        let signed = common::chit_raw(
            dir,
            &[
                "sign",
                "--key",
                "ship.pem",
                "--kind",
                "verification.packet.v1",
                "packet.json",
            ],
            None,
        );
        assert_eq!(signed.code, 0);
        let one: serde_json::Value = serde_json::from_slice(&signed.stdout).unwrap();
        envelopes.extend_from_slice(one.to_string().as_bytes());
        envelopes.push(b'\n');
    }
    std::fs::write(dir.join("packets.jsonl"), envelopes).unwrap();
    common::log_append_lines(dir, "p.db", "packets.jsonl");
    let r = chit_in(
        dir,
        &["log", "export-tiles", "--store", "p.db", "p-tiles"],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let packets = StaticWeb::start(&dir.join("p-tiles"));
    let w = watch_with(dir, &packets.url, "d.json", &["--match", "stream=s1"]);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert_eq!(indexes(&w.lines), vec![0, 1]);
    assert!(
        w.lines
            .iter()
            .all(|l| l["stream"] == "s1" && l["refused"].is_string()),
        "{:?}",
        w.lines
    );
    // A look that ends early (a bundle not served) after refusing entries
    // still fails on them: a follower would not see them again.
    log_with(dir, "big.db", "big-tiles", 100..400);
    std::fs::remove_file(dir.join("big-tiles/tile/entries/001.p/44")).unwrap();
    let big = StaticWeb::start(&dir.join("big-tiles"));
    let w = watch_with(
        dir,
        &big.url,
        "c.json",
        &["--reverify", "--trust", "trust.toml"],
    );
    assert_eq!(w.code, 1, "{}", w.stderr);
    assert_eq!(w.lines.len(), 256);
    assert!(
        w.stderr.contains("REFUSED") && w.stderr.contains("not served"),
        "{}",
        w.stderr
    );
}

#[test]
fn a_follower_stopped_resumes_where_it_stopped() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    log_with(dir, "r.db", "tiles", 0..20);
    policy(dir, "r.db");
    let web = StaticWeb::start(&dir.join("tiles"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_chit"))
        .current_dir(dir)
        .args([
            "log",
            "watch",
            &web.url,
            "--policy",
            "log.policy",
            "--state",
            "watch.json",
            "--follow",
            "--interval",
            "0.2",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let v: Value = serde_json::from_str(&line).unwrap();
            if tx.send(v["index"].as_u64().unwrap()).is_err() {
                return;
            }
        }
    });
    let mut seen = Vec::new();
    let until = |seen: &mut Vec<u64>, n: usize| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while seen.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            seen.push(rx.recv_timeout(left).expect("the follower printed in time"));
        }
    };
    until(&mut seen, 20);
    // The log grows while it follows.
    append(dir, "r.db", "tiles", 20..35);
    until(&mut seen, 35);
    assert_eq!(seen, (0..35).collect::<Vec<_>>());
    // Stopped (SIGTERM): it ends cleanly, its state saved.
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    // Run again after the log grew: only what it has not printed.
    append(dir, "r.db", "tiles", 35..41);
    let w = watch(dir, &web.url, &[]);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert_eq!(indexes(&w.lines), (35..41).collect::<Vec<_>>());
}

#[test]
fn each_checkpoint_is_held_to_the_policys_witnesses() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    log_with(dir, "r.db", "tiles", 0..5);
    let key = log_key(dir, "r.db");
    assert_eq!(chit_in(dir, &["keygen", "--out", "w.pem"], None).code, 0);
    // A witness cosigns the checkpoint of 5 (offline), and the tiles are
    // exported again with its cosignature.
    let cosign = || {
        let w = common::witness_as(dir, "r.db", "w.pem", "witness.example/w", &key, "w.json");
        assert_eq!(w.code, 0, "{}", w.stderr);
        let r = chit_in(
            dir,
            &["log", "export-tiles", "--store", "r.db", "tiles"],
            None,
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        common::printed(&w.stdout, "witness key: ")
    };
    let wkey = cosign();
    std::fs::write(
        dir.join("log.policy"),
        format!("log {key}\nwitness W {wkey}\nquorum W\n"),
    )
    .unwrap();
    let web = StaticWeb::start(&dir.join("tiles"));
    let w = watch(dir, &web.url, &[]);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert_eq!(indexes(&w.lines), (0..5).collect::<Vec<_>>());
    // A new checkpoint the witness has not cosigned: refused, nothing of
    // it printed, the state kept.
    append(dir, "r.db", "tiles", 5..9);
    let w = watch(dir, &web.url, &[]);
    assert_eq!(w.code, 1, "{}", w.stderr);
    assert_eq!(w.lines.len(), 1, "{:?}", w.lines);
    assert_eq!(w.lines[0]["type"], "problem");
    assert_eq!(w.lines[0]["step"], "checkpoint");
    // Cosigned: followed on from 5.
    cosign();
    let w = watch(dir, &web.url, &[]);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert_eq!(indexes(&w.lines), (5..9).collect::<Vec<_>>());
}
