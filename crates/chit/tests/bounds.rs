//! Issue 10, items 13 and 14 (and the transcript part of 20): reading is
//! bounded in memory and in time. A transcript is streamed a line at a
//! time under --max-size; a FIFO with no writer is refused, not waited on;
//! a line with no newline stops at --max-size. Every run here has a
//! deadline, and the memory tests run chit under an address-space limit.

mod common;

use common::{chit_in, example_text};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Most address space a bounded chit may reserve: the old readers took
/// 1-3 GB for these inputs.
const AS_LIMIT: &str = "--as=805306368";

/// Runs chit under `prlimit` (an address-space limit) with a 60 s
/// deadline: (exit code, stdout, stderr). A chit killed by the limit (an
/// allocation failure aborts it) fails the test.
fn bounded(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut cmd = Command::new("prlimit");
    cmd.arg(AS_LIMIT)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_chit"))
        .args(args);
    let run = common::run_raw(cmd, dir, None);
    assert!(
        !run.stderr.contains("memory allocation"),
        "chit {args:?}: {}",
        run.stderr
    );
    (
        run.code,
        String::from_utf8_lossy(&run.stdout).into_owned(),
        run.stderr,
    )
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

/// Item 13 and item 20's transcript part: a transcript is read a line at a
/// time under --max-size, whatever it is: /dev/zero (one line that never
/// ends) and a 1 GiB sparse file stop at the limit, in bounded memory, with
/// a message naming the limit that applies.
#[test]
fn a_transcript_is_read_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("r.json"), example_text("agreed-verified.json")).unwrap();
    let sparse = std::fs::File::create(p.join("sparse.jsonl")).unwrap();
    sparse.set_len(1 << 30).unwrap();
    drop(sparse);
    for args in [
        &["lineage", "open", "--transcript", "/dev/zero"][..],
        &["verify", "r.json", "--transcript", "/dev/zero"],
        &["lineage", "open", "--transcript", "sparse.jsonl"],
        &["verify", "r.json", "--transcript", "sparse.jsonl"],
    ] {
        let (code, _, stderr) = bounded(p, args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(
            stderr.contains("over the limit of 67108864") && stderr.contains("--max-size"),
            "{args:?}: {stderr}"
        );
    }
    // --max-size applies: a smaller one is named, and a transcript within it
    // reads.
    let (code, _, stderr) = bounded(
        p,
        &[
            "verify",
            "r.json",
            "--transcript",
            "/dev/zero",
            "--max-size",
            "1000",
        ],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("over the limit of 1000"), "{stderr}");
}

/// Item 14: a line that never ends stops at --max-size, for verify --lines
/// and canon --lines, instead of running forever with no output.
#[test]
fn lines_from_dev_zero_stop_at_max_size() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["verify", "--lines", "/dev/zero"][..],
        &["verify", "--lines", "--max-size", "1000", "/dev/zero"],
        &["canon", "--lines", "/dev/zero"],
        &["canon", "--lines", "--max-size", "1000", "/dev/zero"],
    ] {
        let (code, stdout, stderr) = bounded(dir.path(), args);
        assert_eq!(code, 2, "{args:?}: {stdout} {stderr}");
        let all = format!("{stdout}{stderr}");
        assert!(
            all.contains("over the limit of") && all.contains("no end"),
            "{args:?}: {all}"
        );
    }
}

/// Item 14: a FIFO with no writer, given as a file, is refused with a
/// message that says so and what to do, not waited on forever: inputs,
/// `digest`, `key show`, `--trust` and `--transcript`.
#[test]
fn a_fifo_with_no_writer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("r.json"), example_text("agreed-verified.json")).unwrap();
    mkfifo(&p.join("f"));
    for args in [
        &["verify", "f"][..],
        &["verify", "--lines", "f"],
        &["canon", "f"],
        &["digest", "f"],
        &["key", "show", "f"],
        &["verify", "--trust", "f", "r.json"],
        &["verify", "r.json", "--transcript", "f"],
        &["lineage", "open", "--transcript", "f"],
    ] {
        let run = chit_in(p, args, None);
        assert_eq!(run.code, 2, "{args:?}: {} {}", run.stdout, run.stderr);
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.contains("a FIFO with no writer"), "{args:?}: {all}");
    }
}

/// Item 14: a FIFO that has a writer is read as the user expects.
#[test]
fn a_fifo_with_a_writer_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().to_path_buf();
    mkfifo(&p.join("f"));
    let text = example_text("agreed-verified.json");
    let fifo = p.join("f");
    // Opening for writing waits for chit to open it for reading.
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
        f.write_all(text.as_bytes()).unwrap();
    });
    // Give the writer a moment to be waiting in open().
    std::thread::sleep(Duration::from_millis(100));
    let run = chit_in(&p, &["verify", "f"], None);
    writer.join().unwrap();
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "VALID f\n"),
        "{}",
        run.stderr
    );
}

/// Item 14: a FIFO inside a folder is passed over with a note that says so.
#[test]
fn a_fifo_inside_a_folder_is_noted() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir(p.join("d")).unwrap();
    std::fs::write(p.join("d/r.json"), example_text("agreed-verified.json")).unwrap();
    mkfifo(&p.join("d/p.json"));
    let run = chit_in(p, &["verify", "d"], None);
    assert_eq!(run.code, 0, "{} {}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "VALID d/r.json\n");
    assert!(
        run.stderr
            .contains("skipped d/p.json: a FIFO, not a regular file"),
        "{}",
        run.stderr
    );
}
