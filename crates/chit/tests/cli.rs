//! The command line as a user meets it.

mod common;
use common::{chit, chit_in, example, example_text};
use serde_json::Value;

const GOOD: &str = "agreed-verified.json";
const ALSO_GOOD: &str = "not-unanimous-failing.json";
/// The digest the reference verifier (verify.mjs --digest) prints for GOOD.
const GOOD_DIGEST: &str = "sha256:12b44c77459b21d7d99682b9a75a620d7ee5aae1ef0f581ce5e0e5df677334ab";

fn edited() -> String {
    example_text(GOOD).replacen("\"grade\": \"verified\"", "\"grade\": \"failed\"", 1)
}

#[test]
fn valid_examples_pass() {
    let a = example(GOOD);
    let b = example(ALSO_GOOD);
    let run = chit(&["verify", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines[0], format!("VALID {}", a.display()));
    assert_eq!(lines[1], format!("VALID {}", b.display()));
    assert_eq!(lines[2], "2 inputs: 2 valid, 0 invalid, 0 unreadable");
    assert!(!run.stdout.contains('\u{1b}'), "no colour when piped");
}

#[test]
fn an_edited_receipt_names_its_rules() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("edited.json"), edited()).unwrap();
    let run = chit_in(dir.path(), &["verify", "edited.json"], None);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout,
        "INVALID edited.json\n  error G1: grade is failed; the totals earn verified\n  \
         error D1: digest does not match the receipt's contents\n"
    );
    let run = chit_in(dir.path(), &["verify", "--json", "edited.json"], None);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["file"], "edited.json");
    assert_eq!(v["kind"], "run-receipt");
    assert_eq!(v["valid"], false);
    assert_eq!(v["errors"][0]["rule"], "G1");
    assert_eq!(v["errors"][0]["path"], "/grade");
    assert_eq!(v["errors"][1]["rule"], "D1");
    assert_eq!(v["warnings"], serde_json::json!([]));
}

#[test]
fn colour_on_request() {
    let run = chit(&[
        "--color",
        "always",
        "verify",
        example(GOOD).to_str().unwrap(),
    ]);
    assert!(run.stdout.contains("\u{1b}["), "{:?}", run.stdout);
    let run = chit(&[
        "--color",
        "never",
        "verify",
        example(GOOD).to_str().unwrap(),
    ]);
    assert!(!run.stdout.contains('\u{1b}'));
}

#[test]
fn folders_json_lines_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("rs/nested")).unwrap();
    std::fs::write(d.join("rs/a.json"), example_text(GOOD)).unwrap();
    std::fs::write(d.join("rs/nested/b.json"), edited()).unwrap();
    std::fs::write(d.join("rs/nested/notes.txt"), "not a receipt").unwrap();
    let run = chit_in(d, &["verify", "--json", "rs"], None);
    assert_eq!(run.code, 1);
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["file"], "rs/a.json");
    assert_eq!(lines[0]["valid"], true);
    assert_eq!(lines[1]["file"], "rs/nested/b.json");
    assert_eq!(lines[1]["valid"], false);

    // JSON Lines: one receipt a line, blank lines skipped, a broken line unreadable.
    let compact =
        |t: &str| serde_json::to_string(&serde_json::from_str::<Value>(t).unwrap()).unwrap();
    let stream = format!(
        "{}\n\n{}\n{{\"broken\"\n",
        compact(&example_text(GOOD)),
        compact(&edited())
    );
    std::fs::write(d.join("stream.jsonl"), &stream).unwrap();
    let run = chit_in(d, &["verify", "--lines", "stream.jsonl"], None);
    assert_eq!(run.code, 2);
    assert!(
        run.stdout
            .starts_with("VALID stream.jsonl:1\nINVALID stream.jsonl:3\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("UNREADABLE stream.jsonl:4\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .ends_with("3 inputs: 1 valid, 1 invalid, 1 unreadable\n"),
        "{}",
        run.stdout
    );
    let run = chit_in(d, &["verify", "--json", "--lines", "stream.jsonl"], None);
    let third: Value = serde_json::from_str(run.stdout.lines().nth(2).unwrap()).unwrap();
    assert_eq!(third["line"], 4);
    assert_eq!(third["errors"][0]["rule"], "read");
    assert_eq!(
        third["errors"][0]["message"],
        "line 4, column 10: the input ends where ':' after a key belongs (truncated?)"
    );

    // Standard input.
    let run = chit_in(d, &["verify", "-"], Some(example_text(GOOD).as_bytes()));
    assert_eq!((run.code, run.stdout.as_str()), (0, "VALID -\n"));
}

#[test]
fn quiet_shows_only_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.json"), example_text(GOOD)).unwrap();
    std::fs::write(dir.path().join("b.json"), edited()).unwrap();
    let run = chit_in(dir.path(), &["verify", "--quiet", "."], None);
    assert_eq!(run.code, 1);
    assert!(!run.stdout.contains("VALID ./a.json"), "{}", run.stdout);
    assert!(
        run.stdout.starts_with("INVALID ./b.json\n"),
        "{}",
        run.stdout
    );
    assert!(run
        .stdout
        .ends_with("2 inputs: 1 valid, 1 invalid, 0 unreadable\n"));
}

#[test]
fn kind_detection_and_override() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.json"), "{\"hello\": 1}").unwrap();
    let run = chit_in(dir.path(), &["verify", "x.json"], None);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .contains("error kind: not a receipt chit recognises"),
        "{}",
        run.stdout
    );
    let run = chit_in(
        dir.path(),
        &["verify", "--kind", "run-receipt", "x.json"],
        None,
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .contains("error schema: /: \"receiptVersion\" is a required property"),
        "{}",
        run.stdout
    );
    let run = chit_in(
        dir.path(),
        &["verify", "--kind", "nonsense", "x.json"],
        None,
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("unknown kind 'nonsense'; chit knows: run-receipt"),
        "{}",
        run.stderr
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(chit(&["verify"]).code, 2);
    assert_eq!(chit(&["frobnicate"]).code, 2);
    assert_eq!(chit(&["verify", "--max-depth", "0", "x"]).code, 2);
}

#[test]
fn help_reads_like_a_manual() {
    let run = chit(&["--help"]);
    assert_eq!(run.code, 0);
    for needle in [
        "Exit status:",
        "Examples:",
        "verify",
        "seal",
        "digest",
        "canon",
    ] {
        assert!(run.stdout.contains(needle), "--help lacks {needle}");
    }
    let run = chit(&["verify", "--help"]);
    assert!(run.stdout.contains("\"rule\": ID"), "{}", run.stdout);
}

#[test]
fn digest_matches_the_reference() {
    let run = chit(&["digest", example(GOOD).to_str().unwrap()]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, format!("{GOOD_DIGEST}\n").as_str())
    );
    // Editing a field changes the digest; reordering keys and respelling numbers does not.
    let dir = tempfile::tempdir().unwrap();
    let v: Value = serde_json::from_str(&example_text(GOOD)).unwrap();
    let respelled = serde_json::to_string(&v)
        .unwrap()
        .replace("\"durationMs\":184300", "\"durationMs\":1843e2");
    std::fs::write(dir.path().join("r.json"), respelled).unwrap();
    let run = chit_in(dir.path(), &["digest", "r.json"], None);
    assert_eq!(run.stdout.trim(), GOOD_DIGEST);
    let run = chit_in(dir.path(), &["digest", "-"], Some(edited().as_bytes()));
    assert_ne!(run.stdout.trim(), GOOD_DIGEST);
    assert_eq!(run.code, 0);
}

#[test]
fn seal_writes_only_the_digest_and_refuses_invalid_receipts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // An invalid receipt is refused and left as it was.
    std::fs::write(d.join("bad.json"), edited()).unwrap();
    let run = chit_in(d, &["seal", "bad.json"], None);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("refusing to seal bad.json: it breaks G1"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(d.join("bad.json")).unwrap(),
        edited()
    );

    // A receipt whose only fault is a stale digest is sealed: one line changes.
    let changed = example_text(GOOD).replacen("\"tokens\": 61240", "\"tokens\": 61241", 1);
    std::fs::write(d.join("stale.json"), &changed).unwrap();
    assert_eq!(chit_in(d, &["verify", "stale.json"], None).code, 1);
    let run = chit_in(d, &["seal", "stale.json"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("sealed stale.json sha256:"));
    let sealed = std::fs::read_to_string(d.join("stale.json")).unwrap();
    let diff: Vec<(&str, &str)> = changed
        .lines()
        .zip(sealed.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(diff.len(), 1, "{diff:?}");
    assert!(diff[0].1.trim_start().starts_with("\"digest\": \"sha256:"));
    assert_eq!(chit_in(d, &["verify", "stale.json"], None).code, 0);

    // A receipt with no digest gets one appended in its own style.
    let v: Value = serde_json::from_str(&example_text(GOOD)).unwrap();
    let mut o = v.as_object().unwrap().clone();
    o.remove("digest");
    let compact = serde_json::to_string(&o).unwrap();
    std::fs::write(d.join("bare.json"), &compact).unwrap();
    let run = chit_in(d, &["seal", "bare.json", "--out", "-"], None);
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stdout,
        format!(
            "{},\"digest\":\"{GOOD_DIGEST}\"}}",
            &compact[..compact.len() - 1]
        )
    );
    assert_eq!(
        std::fs::read_to_string(d.join("bare.json")).unwrap(),
        compact,
        "--out - leaves the file"
    );
}

#[cfg(unix)]
#[test]
fn seal_keeps_links() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let changed = example_text(GOOD).replacen("\"tokens\": 61240", "\"tokens\": 61241", 1);
    std::fs::write(d.join("real.json"), &changed).unwrap();
    std::os::unix::fs::symlink("real.json", d.join("link.json")).unwrap();
    let run = chit_in(d, &["seal", "link.json"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(std::fs::symlink_metadata(d.join("link.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(chit_in(d, &["verify", "real.json"], None).code, 0);
    // Hard links: refused, both names left as they were.
    std::fs::write(d.join("h1.json"), &changed).unwrap();
    std::fs::hard_link(d.join("h1.json"), d.join("h2.json")).unwrap();
    let run = chit_in(d, &["seal", "h1.json"], None);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("has 2 hard links"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(d.join("h2.json")).unwrap(), changed);
}

#[test]
fn refusals_name_each_rule_once() {
    let dir = tempfile::tempdir().unwrap();
    let text = example_text(GOOD)
        .replace(
            "\"errors\": 0,\n      \"timeouts\": 0",
            "\"errors\": 0,\n      \"timeouts\": 1",
        )
        .replacen("\"grade\": \"verified\"", "\"grade\": \"failed\"", 1);
    std::fs::write(dir.path().join("bad.json"), text).unwrap();
    let run = chit_in(dir.path(), &["seal", "bad.json"], None);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("it breaks G1, S3 (run"),
        "{}",
        run.stderr
    );
}

#[test]
fn markdown_keeps_receipt_text_inert() {
    let dir = tempfile::tempdir().unwrap();
    let text = example_text(GOOD).replacen(
        "Behaviour under production load",
        "<img src=https://evil.example/x> @octocat [click](https://evil.example) **bold**",
        1,
    );
    std::fs::write(dir.path().join("r.json"), text).unwrap();
    let run = chit_in(
        dir.path(),
        &["verify", "--format", "markdown", "r.json"],
        None,
    );
    let md = run.stdout;
    assert!(
        !md.contains("<img") && !md.contains("@octocat") && !md.contains("](https"),
        "{md}"
    );
    assert!(
        md.contains("&lt;img src=https\\://evil.example/x&gt; &#64;octocat \\[click\\]"),
        "{md}"
    );
}

#[test]
fn canon_prints_rfc8785_bytes() {
    let run = chit_in(
        &common::repo(),
        &["canon", "-"],
        Some(br#"{"b": [1.0, 1e21, -0, "\u00e9"], "a": {"z": null, "\u20ac": true}}"#),
    );
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stdout,
        "{\"a\":{\"z\":null,\"€\":true},\"b\":[1,1e+21,0,\"é\"]}"
    );
    let run = chit_in(
        &common::repo(),
        &["canon", "--lines", "-"],
        Some(b"{\"b\":1,\"a\":2}\n\n[1.50]\n"),
    );
    assert_eq!(run.stdout, "{\"a\":2,\"b\":1}\n[1.5]\n");
    let run = chit_in(
        &common::repo(),
        &["canon", "--lines", "-"],
        Some(b"[1]\n{\"a\":1,\"a\":2}\n"),
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("cannot read -: line 2, column 8: duplicate key \"a\""),
        "{}",
        run.stderr
    );
}

#[test]
fn markdown_for_a_pull_request() {
    let run = chit(&[
        "verify",
        "--format",
        "markdown",
        example(ALSO_GOOD).to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0);
    let md = run.stdout;
    assert!(md.contains("grade **failed**, ✅ valid"), "{md}");
    assert!(
        md.contains("| Command | By | Where | Exit | State |"),
        "{md}"
    );
    assert!(md.contains("**Gaps** (not verified):"), "{md}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("edited.json"), edited()).unwrap();
    let run = chit_in(
        dir.path(),
        &["verify", "--format", "markdown", "edited.json"],
        None,
    );
    assert!(
        run.stdout
            .contains("| error | G1 | grade is failed; the totals earn verified |"),
        "{}",
        run.stdout
    );
}
