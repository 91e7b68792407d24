//! Output a person and a program can trust: names escaped, the progress bar
//! out of the way, a closed pipe ended quietly, summaries that count every
//! failure, Markdown as complete as human text, limits applied everywhere.

mod common;

use common::{chit_in, example_text};
use std::path::Path;

const GOOD: &str = "agreed-verified.json";

/// A schema-valid packet of stream `s`, its `prev_packet_id` the packet
/// before it in sequence.
fn packet(seq: u64) -> String {
    let prev = match seq {
        0 => "null".to_string(),
        n => format!("\"p{}\"", n - 1),
    };
    format!(
        "{{\"schema\":\"verification.packet.v1\",\"packet_id\":\"p{seq}\",\"stream_id\":\"s\",\"sequence\":{seq},\"prev_packet_id\":{prev},\
         \"model_digest\":\"sha256:{m}\",\"input_digest\":\"sha256:{m}\",\"output_digest\":\"sha256:{m}\",\"produced_at\":\"2026-11-30T09:00:0{seq}Z\"}}\n",
        m = "a".repeat(64)
    )
}

/// Writes packets with these sequence numbers into `dir/packets/`.
fn packets(dir: &Path, seqs: &[u64]) {
    let d = dir.join("packets");
    std::fs::create_dir_all(&d).unwrap();
    for &n in seqs {
        std::fs::write(d.join(format!("p{n}.json")), packet(n)).unwrap();
    }
}

// 15. A file name cannot forge a line of human output.
#[test]
fn control_characters_in_names_are_escaped_in_human_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("evil\nVALID all-good.json"), "{").unwrap();
    std::fs::write(d.join("cr\rVALID also-good.json"), "{").unwrap();
    std::fs::write(d.join("esc\u{1b}[2Jx.json"), "{").unwrap();
    let run = chit_in(d, &["verify", "--color", "never", "."], None);
    assert_eq!(run.code, 2, "{}", run.stdout);
    for line in run.stdout.lines() {
        assert!(
            !line.starts_with("VALID"),
            "a forged line: {line:?} in {}",
            run.stdout
        );
    }
    assert!(!run.stdout.contains('\r') && !run.stdout.contains('\u{1b}'));
    assert!(
        run.stdout
            .contains("UNREADABLE ./evil\\nVALID all-good.json\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("UNREADABLE ./cr\\rVALID also-good.json\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("UNREADABLE ./esc\\x1b[2Jx.json\n"),
        "{}",
        run.stdout
    );
}

/// What a terminal shows of each line written to it: a carriage return
/// starts the line over, an erase-line sequence clears it, and the other
/// escape sequences (colours) show nothing.
fn screen_lines(raw: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(raw);
    let csi = |s: &str| -> String {
        let mut out = String::new();
        let mut it = s.chars().peekable();
        while let Some(c) = it.next() {
            if c == '\u{1b}' {
                if it.peek() == Some(&'[') {
                    it.next();
                    for c in it.by_ref() {
                        if c.is_ascii_alphabetic() {
                            break;
                        }
                    }
                }
                continue;
            }
            out.push(c);
        }
        out
    };
    text.split('\n')
        .map(|line| {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let line = line.rsplit('\r').next().unwrap_or("");
            let line = line.rsplit("\u{1b}[2K").next().unwrap_or("");
            csi(line)
        })
        .collect()
}

// 16. On a terminal, results are written with the progress bar out of the
// way: no result shares a line with the bar, and no bar is left behind.
#[test]
fn progress_bar_is_cleared_before_results_print() {
    let script = std::process::Command::new("script")
        .arg("--version")
        .output();
    if script.is_err() && std::env::var_os("CI").is_none() {
        eprintln!("skipped: no 'script' (util-linux) to give chit a terminal");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("many");
    std::fs::create_dir(&d).unwrap();
    for i in 0..1500 {
        std::fs::write(d.join(format!("{i:04}.json")), "{}").unwrap();
    }
    // script(1) runs chit on a pseudo-terminal: standard output and
    // standard error both the terminal, as a person at a shell has them.
    let cmd = format!("{} verify --color never many", env!("CARGO_BIN_EXE_chit"));
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script runs");
    assert_eq!(out.status.code(), Some(1));
    let raw = &out.stdout;
    assert!(
        String::from_utf8_lossy(raw).contains("/1500 receipts"),
        "the bar was never drawn, so this test shows nothing"
    );
    let lines = screen_lines(raw);
    let results = lines.iter().filter(|l| l.contains("VALID ")).count();
    assert_eq!(results, 1500, "{lines:?}");
    for l in &lines {
        assert!(!l.contains(" receipts  "), "a bar left behind: {l:?}");
        if l.contains("VALID ") {
            assert!(l.starts_with("INVALID "), "a result after the bar: {l:?}");
        }
    }
}

/// Runs chit with its standard output a pipe that is closed after the
/// first line (as `| head -1` does); gives the exit code and stderr.
fn closed_after_one_line(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    use std::io::{BufRead, Read};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_chit"))
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(!first.is_empty());
    drop(out);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (child.wait().unwrap().code(), err)
}

// 17. `chit ... | head -1` ends quietly, with 141 (SIGPIPE's status in a
// shell): not 0, since chit did not finish.
#[test]
fn a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("many.jsonl"), "{\"b\":1,\"a\":2}\n".repeat(200_000)).unwrap();
    for args in [
        &["verify", "--lines", "many.jsonl"][..],
        &["canon", "--lines", "many.jsonl"][..],
    ] {
        let (code, err) = closed_after_one_line(d, args);
        assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
        assert!(!err.contains("chit:"), "{args:?}: {err}");
        assert_eq!(code, Some(141), "{args:?}: {err}");
    }
}

// 18. A stream that fails P8 is counted in the summary.
#[test]
fn the_summary_counts_checks_across_inputs() {
    let dir = tempfile::tempdir().unwrap();
    packets(dir.path(), &[0, 1, 2]);
    let run = chit_in(
        dir.path(),
        &["verify", "--expect-count", "5", "packets"],
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.ends_with(
            "3 inputs: 3 valid, 0 invalid, 0 unreadable; checks across inputs: 0 valid, 1 invalid\n"
        ),
        "{}",
        run.stdout
    );
    // --quiet hides the valid stream, but the summary still counts it.
    let run = chit_in(dir.path(), &["verify", "--quiet", "packets"], None);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        run.stdout,
        "3 inputs: 3 valid, 0 invalid, 0 unreadable; checks across inputs: 1 valid, 0 invalid\n"
    );
}

// 18. --expect-count with no packet says so, without an empty "()".
#[test]
fn expect_count_without_packets_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("r.json"), example_text(GOOD)).unwrap();
    let run = chit_in(
        dir.path(),
        &["verify", "--expect-count", "5", "r.json"],
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(!run.stdout.contains("()"), "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "INVALID stream (none)\n  error P8: --expect-count 5 was given, but none of the inputs is a packet"
        ),
        "{}",
        run.stdout
    );
}

// 18. P8 says where the missing packets are: at the head, in the middle,
// at the tail.
#[test]
fn p8_says_where_packets_are_missing() {
    let dir = tempfile::tempdir().unwrap();
    packets(dir.path(), &[2, 3, 4]);
    let run = chit_in(
        dir.path(),
        &["verify", "--expect-count", "5", "packets"],
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("error P8: 3 of 5 expected packets: sequence 0-1 missing at the head\n"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("tail"), "{}", run.stdout);

    let dir = tempfile::tempdir().unwrap();
    packets(dir.path(), &[0, 2, 3]);
    let run = chit_in(
        dir.path(),
        &["verify", "--expect-count", "5", "packets"],
        None,
    );
    assert!(
        run.stdout.contains(
            "error P8: 3 of 5 expected packets: sequence 1 missing in the middle; sequence 4 missing at the tail (cut off after sequence 3)\n"
        ),
        "{}",
        run.stdout
    );
}

// 18. A file named twice (or reached by two paths) is checked once.
#[test]
fn a_file_named_twice_is_checked_once() {
    let dir = tempfile::tempdir().unwrap();
    packets(dir.path(), &[0, 1, 2]);
    let run = chit_in(
        dir.path(),
        &[
            "verify",
            "packets",
            "packets/p1.json",
            "./packets/../packets/p2.json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("P1"), "{}", run.stdout);
    assert!(run.stdout.contains("3 inputs: 3 valid"), "{}", run.stdout);
    assert!(
        run.stderr.contains(
            "note: packets/p1.json is packets/p1.json again (the same file): checked once"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "note: ./packets/../packets/p2.json is packets/p2.json again (the same file): checked once"
        ),
        "{}",
        run.stderr
    );
}

/// A key, a trust file listing it, and `GOOD` signed with it as env.json.
fn signed_receipt(d: &Path) {
    std::fs::write(d.join("r.json"), example_text(GOOD)).unwrap();
    let run = chit_in(d, &["keygen", "--out", "k.pem"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let public = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("treeship"))
        .unwrap()
        .trim()
        .to_string();
    std::fs::write(
        d.join("trust.toml"),
        format!("[[key]]\nname = \"me\"\npublic_key = \"{public}\"\n"),
    )
    .unwrap();
    let run = chit_in(
        d,
        &[
            "sign",
            "--key",
            "k.pem",
            "--kind",
            "run-receipt",
            "--out",
            "env.json",
            "r.json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
}

// 19. Markdown has a totals line (also with --quiet, which otherwise
// printed nothing at all), streams in Markdown, and a signed receipt's
// grade, checks and gaps.
#[test]
fn markdown_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    signed_receipt(d);
    std::fs::write(d.join("r2.json"), example_text(GOOD)).unwrap();
    let md = ["verify", "--format", "markdown"];
    let run = chit_in(d, &[&md[..], &["r.json", "r2.json"]].concat(), None);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout
            .ends_with("**2 inputs:** 2 valid, 0 invalid, 0 unreadable\n"),
        "{}",
        run.stdout
    );
    let run = chit_in(
        d,
        &[&md[..], &["--quiet", "r.json", "r2.json"]].concat(),
        None,
    );
    assert_eq!(
        run.stdout,
        "**2 inputs:** 2 valid, 0 invalid, 0 unreadable\n"
    );

    packets(d, &[0, 1, 3]);
    let run = chit_in(d, &[&md[..], &["packets"]].concat(), None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(!run.stdout.contains("INVALID stream"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("### Stream `s` (3 packets) — ❌ invalid\n\n| | Rule | Finding |\n|---|---|---|\n| error | P3 |"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("**3 inputs:** 3 valid, 0 invalid, 0 unreadable; checks across inputs: 0 valid, 1 invalid\n"),
        "{}",
        run.stdout
    );

    let run = chit_in(
        d,
        &[&md[..], &["--trust", "trust.toml", "env.json"]].concat(),
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.contains("### Run receipt `env.json`"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("signed, art\\_"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("| Command | By | Where | Exit | State |"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("**Gaps"), "{}", run.stdout);
}

// 20. --max-size applies to the trust file; a key file's limit is named.
#[test]
fn max_size_applies_to_trust_and_key_files_name_their_limit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    signed_receipt(d);
    let mut trust = std::fs::read_to_string(d.join("trust.toml")).unwrap();
    trust.push_str(&format!("# {}\n", "x".repeat(2 << 20)));
    std::fs::write(d.join("big-trust.toml"), trust).unwrap();
    let run = chit_in(
        d,
        &["verify", "--trust", "big-trust.toml", "env.json"],
        None,
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let run = chit_in(
        d,
        &[
            "verify",
            "--max-size",
            "1000",
            "--trust",
            "big-trust.toml",
            "env.json",
        ],
        None,
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("cannot read trust file big-trust.toml")
            && run.stderr.contains("--max-size"),
        "{}",
        run.stderr
    );

    std::fs::write(d.join("big.pem"), "x".repeat(20_000)).unwrap();
    let run = chit_in(
        d,
        &[
            "sign",
            "--max-size",
            "100000000",
            "--key",
            "big.pem",
            "--kind",
            "run-receipt",
            "r.json",
        ],
        None,
    );
    assert_eq!(run.code, 2);
    assert!(
        !run.stderr.contains("raise it with --max-size"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("16384"), "{}", run.stderr);
}

// 20. A statement around a payload as deep as --max-depth allows reads back.
#[test]
fn sign_reads_a_deep_statement_back_under_the_callers_limits() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    signed_receipt(d);
    let deep = format!("{{\"a\":{}1{}}}", "[".repeat(3000), "]".repeat(3000));
    std::fs::write(d.join("deep.json"), deep).unwrap();
    let run = chit_in(
        d,
        &[
            "sign",
            "--max-depth",
            "4096",
            "--key",
            "k.pem",
            "--kind",
            "my.kind",
            "--out",
            "deep.env.json",
            "deep.json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("internal error"), "{}", run.stderr);
}

// 20. Lattice read errors name a line and column, as every other does.
#[test]
fn lattice_read_errors_name_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let run = chit_in(
        dir.path(),
        &["canon", "--profile", "lattice", "-"],
        Some(b"{\"a\": 1,\n  \"b\": x}"),
    );
    assert_eq!(run.code, 2);
    assert!(!run.stderr.contains("byte"), "{}", run.stderr);
    assert!(run.stderr.contains("line 2, column 8:"), "{}", run.stderr);
    let run = chit_in(
        dir.path(),
        &["canon", "--profile", "lattice", "--lines", "-"],
        Some(b"{}\n{\"a\": x}\n"),
    );
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("line 2, column 7:"), "{}", run.stderr);
}
