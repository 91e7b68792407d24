//! Hostile input: every case ends with exit 1 or 2 and a short reason that
//! names the rule or the position; never a panic, a hang, unbounded output
//! or a pass.

mod common;
use common::{chit_in, example_text};
use std::path::Path;

/// Writes `bytes` as a file in a fresh folder and verifies it, human and JSON.
fn verify_bytes(bytes: &[u8]) -> (common::Run, common::Run) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("r.json"), bytes).unwrap();
    let human = chit_in(dir.path(), &["verify", "r.json"], None);
    let json = chit_in(dir.path(), &["verify", "--json", "r.json"], None);
    (human, json)
}

/// Checks the common promises and returns the JSON finding of rule `read`
/// or the first error's rule.
fn refused(bytes: &[u8], code: i32, needle: &str) {
    let (human, json) = verify_bytes(bytes);
    assert_eq!(
        human.code, code,
        "exit code; output: {}{}",
        human.stdout, human.stderr
    );
    assert_eq!(json.code, code);
    assert!(
        human.stdout.len() < 8 * 1024,
        "unbounded output: {} bytes",
        human.stdout.len()
    );
    assert!(
        human.stdout.starts_with(if code == 2 {
            "UNREADABLE r.json\n"
        } else {
            "INVALID r.json\n"
        }),
        "{}",
        human.stdout
    );
    assert!(
        human.stdout.contains(needle),
        "expected {needle:?} in:\n{}",
        human.stdout
    );
    // Each finding is one line, and short.
    for line in human.stdout.lines() {
        assert!(line.chars().count() < 300, "a long line: {line}");
    }
    let v: serde_json::Value = serde_json::from_str(json.stdout.trim()).unwrap();
    assert_eq!(v["valid"], false);
    assert!(!v["errors"].as_array().unwrap().is_empty());
}

#[test]
fn empty_file() {
    refused(b"", 2, "error read: the input is empty");
    refused(b"  \n\t ", 2, "error read: the input is empty");
}

#[test]
fn truncated_receipt() {
    let text = example_text("agreed-verified.json");
    refused(
        &text.as_bytes()[..text.len() / 2],
        2,
        "the input ends where",
    );
    refused(&text.as_bytes()[..text.len() - 2], 2, "(truncated?)");
}

#[test]
fn binary_garbage() {
    let mut junk = Vec::new();
    let mut x: u32 = 0x1234_5678;
    for _ in 0..100_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        junk.push(x as u8);
    }
    refused(&junk, 2, "error read: line 1, column 1");
    refused(
        b"\x00\x01\x02PK\x03\x04",
        2,
        "error read: line 1, column 1: found U+0000 where a value belongs",
    );
}

#[test]
fn deep_nesting() {
    let deep = "[".repeat(200_000);
    refused(deep.as_bytes(), 2, "nested deeper than 128 levels");
    let closed = format!("{}{}", "{\"a\":".repeat(200_000), "}".repeat(200_000));
    refused(closed.as_bytes(), 2, "nested deeper than 128 levels");
}

#[test]
fn a_fifty_megabyte_string() {
    let doc = format!(
        "{{\"receiptVersion\":\"0.1\",\"id\":\"{}\"}}",
        "a".repeat(50 * 1024 * 1024)
    );
    refused(doc.as_bytes(), 1, "error schema: /id:");
}

#[test]
fn nan_and_infinity() {
    refused(
        b"{\"receiptVersion\":\"0.1\",\"costUsd\":NaN}",
        2,
        "found 'N' where a value belongs",
    );
    refused(b"[Infinity]", 2, "found 'I' where a value belongs");
    refused(b"[1e400]", 2, "number outside the range of an IEEE double");
}

#[test]
fn trailing_garbage() {
    let text = example_text("agreed-verified.json") + "\n}";
    refused(
        text.as_bytes(),
        2,
        "more data after the end of the JSON value",
    );
    refused(b"{} {}", 2, "line 1, column 4: more data after the end");
}

#[test]
fn invalid_utf8() {
    let mut text = example_text("agreed-verified.json").into_bytes();
    let at = text.iter().position(|&b| b == b'C').unwrap(); // "Claude"
    text[at] = 0xC3; // a lead byte without its continuation
    refused(&text, 2, "the input is not valid UTF-8");
    refused(
        b"\xff\xfe{\x00}\x00",
        2,
        "line 1, column 1: the input is not valid UTF-8",
    );
}

#[test]
fn duplicate_keys() {
    let text = example_text("agreed-verified.json").replacen(
        "\"grade\": \"verified\"",
        "\"grade\": \"verified\", \"grade\": \"failed\"",
        1,
    );
    refused(text.as_bytes(), 2, "duplicate key \"grade\"");
}

#[test]
fn three_hundred_thousand_keys() {
    let mut doc = String::from("{");
    for i in 0..300_000 {
        if i > 0 {
            doc.push(',');
        }
        doc.push_str(&format!("\"k{i}\":{i}"));
    }
    doc.push('}');
    refused(doc.as_bytes(), 2, "an object has more than 10000 keys");
}

#[test]
fn many_schema_errors_stay_bounded() {
    // 9,000 gaps of the wrong type: 9,000 schema errors, of which a few are
    // shown and the rest counted.
    let gaps: Vec<String> = (0..9000).map(|i| i.to_string()).collect();
    let text = example_text("agreed-verified.json").replacen(
        "\"gaps\": [\n    \"Behaviour under production load\"\n  ]",
        &format!("\"gaps\": [{}]", gaps.join(",")),
        1,
    );
    refused(text.as_bytes(), 1, "more schema errors");
}

#[test]
fn lone_surrogate() {
    let text = example_text("agreed-verified.json").replacen("Behaviour", "\\ud800Behaviour", 1);
    refused(text.as_bytes(), 2, "lone surrogate \\ud800");
}

#[test]
fn oversized_file_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let f = std::fs::File::create(dir.path().join("big.json")).unwrap();
    f.set_len(65 * 1024 * 1024).unwrap(); // sparse: costs no disk
    let run = chit_in(dir.path(), &["verify", "big.json"], None);
    assert_eq!(run.code, 2);
    assert!(
        run.stdout
            .contains("over the limit of 67108864 (raise it with --max-size)"),
        "{}",
        run.stdout
    );
}

#[test]
fn missing_path() {
    let dir = tempfile::tempdir().unwrap();
    let run = chit_in(dir.path(), &["verify", "nowhere.json"], None);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stdout,
        "UNREADABLE nowhere.json\n  error read: no such file or folder\n"
    );
}

#[cfg(unix)]
#[test]
fn symlink_loops() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A file link loop, named directly.
    symlink(d.join("b.json"), d.join("a.json")).unwrap();
    symlink(d.join("a.json"), d.join("b.json")).unwrap();
    let run = chit_in(d, &["verify", "a.json"], None);
    assert_eq!(run.code, 2);
    assert!(
        run.stdout.starts_with("UNREADABLE a.json\n  error read: "),
        "{}",
        run.stdout
    );
    // A folder whose only content loops back to itself: survived, and empty.
    let tree = d.join("tree");
    std::fs::create_dir(&tree).unwrap();
    symlink(&tree, tree.join("again")).unwrap();
    symlink(Path::new(".."), tree.join("up")).unwrap();
    let run = chit_in(d, &["verify", "tree"], None);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("no receipts found"), "{}", run.stderr);
    // With a receipt inside, it is checked once.
    std::fs::write(tree.join("r.json"), example_text("agreed-verified.json")).unwrap();
    let run = chit_in(d, &["verify", "tree"], None);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout.matches("VALID").count(), 1, "{}", run.stdout);
    assert!(
        run.stderr.contains("a link out of tree, not followed"),
        "{}",
        run.stderr
    );
}

#[test]
fn millions_of_schema_errors_cost_little() {
    // Two million wrongly typed gaps: only the first error is worked out.
    let doc = format!(
        "{{\"receiptVersion\":\"0.1\",\"gaps\":[{}{{}}]}}",
        "{},".repeat(2_000_000)
    );
    let start = std::time::Instant::now();
    refused(doc.as_bytes(), 1, "further schema errors are not listed");
    assert!(start.elapsed().as_secs() < 30, "took {:?}", start.elapsed());
}

#[test]
fn a_huge_value_is_summarised_in_messages() {
    let doc = format!("[{}1]", "1,".repeat(1_000_000));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("r.json"), doc).unwrap();
    let run = chit_in(
        dir.path(),
        &["verify", "--kind", "run-receipt", "r.json"],
        None,
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .contains("\"… 999991 more\"] is not of type \"object\""),
        "{}",
        run.stdout
    );
}

#[test]
fn the_largest_size_limit_does_not_overflow() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("r.json"),
        example_text("agreed-verified.json"),
    )
    .unwrap();
    let run = chit_in(
        dir.path(),
        &["verify", "--max-size", "18446744073709551615", "r.json"],
        None,
    );
    assert_eq!((run.code, run.stdout.as_str()), (0, "VALID r.json\n"));
}

#[test]
fn an_overlong_line_is_reported_and_the_stream_goes_on() {
    let good = serde_json::to_string(
        &serde_json::from_str::<serde_json::Value>(&example_text("agreed-verified.json")).unwrap(),
    )
    .unwrap();
    let stream = format!("{good}\n[\"{}\"]\n{good}\n", "x".repeat(10_000));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.jsonl"), stream).unwrap();
    let run = chit_in(
        dir.path(),
        &["verify", "--lines", "--max-size", "5000", "s.jsonl"],
        None,
    );
    assert_eq!(run.code, 2);
    assert!(run.stdout.starts_with("VALID s.jsonl:1\nUNREADABLE s.jsonl:2\n  error read: the line is over the limit of 5000 bytes"), "{}", run.stdout);
    assert!(run.stdout.contains("VALID s.jsonl:3\n"), "{}", run.stdout);
}
