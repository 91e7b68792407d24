//! What chit writes and where (issue 10, items 1, 2, 21 and 22): `--out`
//! never replaces what is not a regular file chit may replace, `seal`
//! refuses a file its user could not write in place, `lineage measure`
//! checks its arguments before creating anything, and key files are read
//! with a warning when others can read them and a clear word when they are
//! not Ed25519.

mod common;

use common::{chit_in, example_text, Run};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// True when this test may use root-only tricks (mknod, setpriv); in CI
/// (CI=true, run as root) a test that needs them never skips silently.
fn privileged(what: &str) -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    if !root {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{what} needs root, and CI runs as root"
        );
        eprintln!("skipping {what}: not root");
    }
    root
}

/// A folder with a key and a receipt to sign.
fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(chit_in(d, &["keygen", "--out", "k.pem"], None).code, 0);
    std::fs::write(d.join("r.json"), example_text("agreed-verified.json")).unwrap();
    dir
}

fn sign_to(d: &Path, out: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "sign",
        "--key",
        "k.pem",
        "--kind",
        "run-receipt",
        "r.json",
        "--out",
        out,
    ];
    args.extend_from_slice(extra);
    chit_in(d, &args, None)
}

/// A character device made in `d` (the same device as /dev/null, 1:3), so
/// the machine's own /dev/null is never at stake.
fn device(d: &Path, name: &str) -> Option<PathBuf> {
    if !privileged("a device node") {
        return None;
    }
    let p = d.join(name);
    let ok = Command::new("mknod")
        .arg(&p)
        .args(["c", "1", "3"])
        .status()
        .unwrap()
        .success();
    assert!(ok, "mknod {} c 1 3", p.display());
    Some(p)
}

fn is_char_device(p: &Path) -> bool {
    std::fs::symlink_metadata(p)
        .map(|m| m.file_type().is_char_device())
        .unwrap_or(false)
}

#[test]
fn sign_and_seal_write_into_a_device_never_replace_it() {
    let dir = setup();
    let d = dir.path();
    let Some(null) = device(d, "null") else {
        return;
    };
    let run = sign_to(d, "null", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(is_char_device(&null), "sign --out replaced the device node");

    std::fs::write(d.join("bare.json"), example_text("agreed-verified.json")).unwrap();
    let run = chit_in(d, &["seal", "bare.json", "--out", "null"], None);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    assert!(is_char_device(&null), "seal --out replaced the device node");
}

#[test]
fn sign_writes_into_a_fifo_with_a_reader() {
    let dir = setup();
    let d = dir.path();
    let ok = Command::new("mkfifo")
        .arg(d.join("fifo"))
        .status()
        .unwrap()
        .success();
    assert!(ok);
    // The reader: cat, copying what comes through the FIFO into got.json
    // (exec'd, so that killing it leaves no reader behind).
    let mut reader = Command::new("sh")
        .args(["-c", "exec cat fifo > got.json"])
        .current_dir(d)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let run = sign_to(d, "fifo", &[]);
    let start = Instant::now();
    let done = loop {
        if let Some(s) = reader.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > Duration::from_secs(10) {
            // Unblock the reader (chit never wrote into the FIFO).
            let _ = reader.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(run.code, 0, "{}", run.stderr);
    let fifo = std::fs::symlink_metadata(d.join("fifo")).unwrap();
    assert!(fifo.file_type().is_fifo(), "sign --out replaced the FIFO");
    assert!(done.is_some(), "the FIFO's reader got nothing");
    let got = std::fs::read_to_string(d.join("got.json")).unwrap();
    assert!(got.contains("\"payloadType\""), "{got}");
}

#[test]
fn a_link_to_standard_output_is_written_into() {
    // What /dev/stdout is, made in a temporary folder: a link to
    // /proc/self/fd/1, here a pipe.
    let dir = setup();
    let d = dir.path();
    std::os::unix::fs::symlink("/proc/self/fd/1", d.join("stdout")).unwrap();
    let run = sign_to(d, "stdout", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("\"payloadType\""), "{}", run.stdout);
    let link = std::fs::symlink_metadata(d.join("stdout")).unwrap();
    assert!(link.file_type().is_symlink(), "the link was replaced");
}

#[test]
fn an_existing_file_is_replaced_only_with_force() {
    let dir = setup();
    let d = dir.path();
    std::fs::write(d.join("out.json"), "keep me").unwrap();
    let run = sign_to(d, "out.json", &[]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains("out.json") && run.stderr.contains("--force"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(d.join("out.json")).unwrap(),
        "keep me"
    );
    let run = sign_to(d, "out.json", &["--force"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(std::fs::read_to_string(d.join("out.json"))
        .unwrap()
        .contains("payloadType"));

    // seal --out too; seal over its own input is its job.
    std::fs::write(d.join("bare.json"), example_text("agreed-verified.json")).unwrap();
    std::fs::write(d.join("sealed.json"), "keep me").unwrap();
    let run = chit_in(d, &["seal", "bare.json", "--out", "sealed.json"], None);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stderr.contains("--force"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(d.join("sealed.json")).unwrap(),
        "keep me"
    );
    let run = chit_in(
        d,
        &["seal", "bare.json", "--out", "sealed.json", "--force"],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = chit_in(d, &["seal", "bare.json"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);

    // Each command documents --force.
    for cmd in [
        &["sign", "--help"][..],
        &["seal", "--help"],
        &["packets", "recompute", "--help"],
    ] {
        let run = chit_in(d, cmd, None);
        assert!(run.stdout.contains("--force"), "{cmd:?}: {}", run.stdout);
    }
}

#[test]
fn a_link_is_followed_and_a_hard_link_never_split() {
    let dir = setup();
    let d = dir.path();
    std::fs::write(d.join("target.json"), "old").unwrap();
    std::os::unix::fs::symlink("target.json", d.join("link.json")).unwrap();
    // Without --force the link's target is an existing file: refused.
    let run = sign_to(d, "link.json", &[]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert_eq!(
        std::fs::read_to_string(d.join("target.json")).unwrap(),
        "old"
    );
    let run = sign_to(d, "link.json", &["--force"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(std::fs::symlink_metadata(d.join("link.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(d.join("target.json"))
        .unwrap()
        .contains("payloadType"));

    // A hard link: refused, both names still one file.
    std::fs::write(d.join("a.json"), "old").unwrap();
    std::fs::hard_link(d.join("a.json"), d.join("b.json")).unwrap();
    let run = sign_to(d, "a.json", &["--force"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stderr.contains("hard link"), "{}", run.stderr);
    let (a, b) = (
        std::fs::metadata(d.join("a.json")).unwrap(),
        std::fs::metadata(d.join("b.json")).unwrap(),
    );
    assert_eq!(a.ino(), b.ino());
    assert_eq!(a.nlink(), 2);
}

#[test]
fn recompute_refuses_an_existing_out_before_running_the_workload() {
    let dir = setup();
    let d = dir.path();
    std::fs::write(d.join("in.bin"), "hello workload\n").unwrap();
    let digest = chit_core::digest::sha256_tagged(b"hello workload\n");
    let packet = format!(
        "{{\"schema\":\"verification.packet.v1\",\"packet_id\":\"p0\",\"stream_id\":\"s\",\"sequence\":0,\"prev_packet_id\":null,\
         \"model_digest\":\"sha256:{m}\",\"input_digest\":\"{digest}\",\"output_digest\":\"{digest}\",\
         \"reproducibility\":\"bit_exact\",\"produced_at\":\"2026-11-30T09:00:00Z\"}}",
        m = "a".repeat(64)
    );
    std::fs::write(d.join("pkt.json"), packet).unwrap();
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
            "pkt.json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    std::fs::write(d.join("rec.env.json"), "keep me").unwrap();
    let recompute = |extra: &[&str]| {
        let mut args = vec![
            "packets",
            "recompute",
            "--key",
            "k.pem",
            "--packet",
            "pkt.env.json",
            "--input",
            "in.bin",
            "--out",
            "rec.env.json",
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sh", "-c", "touch ran; cat"]);
        chit_in(d, &args, None)
    };
    let run = recompute(&[]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stderr.contains("--force"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(d.join("rec.env.json")).unwrap(),
        "keep me"
    );
    assert!(!d.join("ran").exists(), "the workload ran first");
    let run = recompute(&["--force"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(std::fs::read_to_string(d.join("rec.env.json"))
        .unwrap()
        .contains("payloadType"));
}

/// Runs chit in `dir` as the unprivileged user 65534, so permission bits
/// mean what they mean to a user.
fn chit_as_nobody(dir: &Path, args: &[&str]) -> Run {
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_chit"),
        ])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("setpriv runs");
    let run = Run {
        code: out.status.code().expect("no signal"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_ne!(run.code, 101, "{}", run.stderr);
    run
}

/// A folder owned by user 65534 (the unprivileged user), in a folder it can
/// reach.
fn nobody_folder() -> Option<tempfile::TempDir> {
    if !privileged("running chit as an unprivileged user") {
        return None;
    }
    // The binary must be reachable by that user.
    let status = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_chit"))
        .arg("--version")
        .output()
        .expect("setpriv runs");
    assert!(
        status.status.success(),
        "user 65534 cannot run {}: {}",
        env!("CARGO_BIN_EXE_chit"),
        String::from_utf8_lossy(&status.stderr)
    );
    let dir = tempfile::Builder::new()
        .prefix("chit-files-")
        .tempdir_in(std::env::temp_dir())
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
    Some(dir)
}

#[test]
fn seal_refuses_a_file_its_user_cannot_write() {
    let Some(dir) = nobody_folder() else {
        return;
    };
    let d = dir.path();
    let text = example_text("agreed-verified.json");

    // A read-only (0444) file of the user's own in a folder they can write.
    let ro = d.join("ro.json");
    std::fs::write(&ro, &text).unwrap();
    std::os::unix::fs::chown(&ro, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
    let run = chit_as_nobody(d, &["seal", "ro.json"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("ro.json") && run.stderr.contains("chmod"),
        "{}",
        run.stderr
    );
    let m = std::fs::metadata(&ro).unwrap();
    assert_eq!(m.mode() & 0o777, 0o444);
    assert_eq!(std::fs::read_to_string(&ro).unwrap(), text);

    // Root's file (0644) in the user's folder: the user may rename over
    // it but not write it, so the owner would change.
    let theirs = d.join("theirs.json");
    std::fs::write(&theirs, &text).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = chit_as_nobody(d, &["seal", "theirs.json"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    let m = std::fs::metadata(&theirs).unwrap();
    assert_eq!(
        (m.uid(), std::fs::read_to_string(&theirs).unwrap()),
        (0, text.clone())
    );

    // A file the user may write, in a folder they may not: the message
    // names the file and what to do, not a temporary name.
    let sub = d.join("ro-folder");
    std::fs::create_dir(&sub).unwrap();
    let mine = sub.join("mine.json");
    std::fs::write(&mine, &text).unwrap();
    std::os::unix::fs::chown(&mine, Some(65534), Some(65534)).unwrap();
    std::os::unix::fs::chown(&sub, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o555)).unwrap();
    let run = chit_as_nobody(d, &["seal", "ro-folder/mine.json"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("ro-folder/mine.json")
            && run.stderr.contains("--out")
            && !run.stderr.contains(".chit-"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), text);
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();

    // A file the user may write, in a folder they may write: sealed, and
    // still theirs.
    let ok = d.join("ok.json");
    std::fs::write(&ok, &text).unwrap();
    std::os::unix::fs::chown(&ok, Some(65534), Some(65534)).unwrap();
    let run = chit_as_nobody(d, &["seal", "ok.json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::metadata(&ok).unwrap().uid(), 65534);
}

#[test]
fn measure_checks_its_arguments_before_creating_the_transcript() {
    let dir = setup();
    let d = dir.path();
    // A bound committed in the past and a request set; no endpoint is
    // needed, since nothing should get that far.
    let b = chit_core::kinds::numeric_lineage::arithmetic::Bound {
        committed_at: "2026-01-01T00:00:00Z".into(),
        max_differing_positions: 0,
        min_first_divergent_index: 0,
        max_distinct_sequences_per_level: 1,
        required_repetitions_per_level: 2,
    };
    let text = serde_json::json!({
        "committed_at": b.committed_at,
        "max_differing_positions": 0,
        "min_first_divergent_index": 0,
        "max_distinct_sequences_per_level": 1,
        "required_repetitions_per_level": 2,
        "bound_digest_sha256": b.digest(),
    });
    std::fs::write(d.join("b.json"), text.to_string()).unwrap();
    std::fs::write(d.join("req.jsonl"), "{\"prompt\": \"hi\"}\n").unwrap();
    let measure = |levels: &str, extra: &[&str]| {
        let endpoint = if extra.contains(&"--endpoint") {
            &[][..]
        } else {
            &["--endpoint", "http://127.0.0.1:9/v1"][..]
        };
        let mut args = vec!["lineage", "measure"];
        args.extend_from_slice(endpoint);
        args.extend_from_slice(&[
            "--model",
            "m",
            "--requests",
            "req.jsonl",
            "--levels",
            levels,
            "--repetitions",
            "2",
            "--bound",
            "b.json",
            "--key",
            "k.pem",
            "--out",
            "r.json.out",
            "--transcript",
            "t.jsonl",
        ]);
        args.extend_from_slice(extra);
        chit_in(d, &args, None)
    };
    for (levels, extra, says) in [
        ("8", &[][..], "two levels"),
        ("8,1", &[], "increasing"),
        ("0,8", &[], "increasing"),
        ("1,8", &["--endpoint", "127.0.0.1:9"], "http"),
        ("1,8", &["--max-tokens", "0"], "--max-tokens"),
    ] {
        let run = measure(levels, extra);
        assert_eq!(run.code, 2, "{levels} {extra:?}: {}", run.stdout);
        assert!(
            run.stderr.contains(says),
            "{levels} {extra:?}: {}",
            run.stderr
        );
        assert!(
            !d.join("t.jsonl").exists(),
            "--levels {levels} {extra:?} created the transcript: {}",
            run.stderr
        );
    }
    // An existing transcript is refused before anything is done.
    std::fs::write(d.join("t.jsonl"), "keep me").unwrap();
    let run = measure("1,8", &[]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("t.jsonl"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(d.join("t.jsonl")).unwrap(),
        "keep me"
    );
}

#[test]
fn a_key_others_can_read_is_used_with_a_warning() {
    let dir = setup();
    let d = dir.path();
    let run = chit_in(d, &["key", "show", "k.pem"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    for mode in [0o644, 0o666, 0o640] {
        std::fs::set_permissions(d.join("k.pem"), std::fs::Permissions::from_mode(mode)).unwrap();
        let run = chit_in(d, &["key", "show", "k.pem"], None);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            run.stderr.contains("warning")
                && run.stderr.contains("k.pem")
                && run.stderr.contains("chmod 600 k.pem"),
            "{mode:o}: {}",
            run.stderr
        );
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        let run = sign_to(d, &format!("s{mode:o}.json"), &[]);
        assert!(run.stderr.contains("chmod 600"), "{}", run.stderr);
    }
}

#[test]
fn a_key_that_is_not_ed25519_says_what_it_is() {
    // Made once with openssl; see tests/data/keys/README.md.
    let keys = common::repo().join("crates/chit/tests/data/keys");
    for (file, says) in [
        ("rsa.pem", "RSA"),
        ("rsa-pkcs1.pem", "RSA"),
        ("ed448.pem", "Ed448"),
        ("ec.pem", "EC"),
        ("x25519.pem", "X25519"),
        ("ed25519-public.pem", "public key"),
        ("ed25519-encrypted.pem", "encrypted"),
    ] {
        let path = keys.join(file);
        let run = chit_in(&keys, &["key", "show", path.to_str().unwrap()], None);
        assert_eq!(run.code, 2, "{file}: {}", run.stdout);
        assert!(
            run.stderr.contains(file) && run.stderr.contains(says),
            "{file}: {}",
            run.stderr
        );
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    }
}
