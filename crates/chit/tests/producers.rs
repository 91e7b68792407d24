//! The producers' guide, `docs/producers.md`, run as a reader would: its
//! Python script written out and its shell commands run with this chit on
//! PATH (the Rust example is a doctest of chit-core), and every link to the
//! specification landing on a heading that exists.

mod common;

use common::{chit_in, repo};
use std::process::Command;

fn guide() -> String {
    std::fs::read_to_string(repo().join("docs/producers.md")).unwrap()
}

/// The guide's fenced blocks: (info string, body).
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(info) = line.strip_prefix("```") {
            let mut body = String::new();
            for l in lines.by_ref() {
                if l.starts_with("```") {
                    break;
                }
                body.push_str(l);
                body.push('\n');
            }
            out.push((info.trim().to_owned(), body));
        }
    }
    out
}

#[test]
fn the_python_and_shell_examples_run_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let all = blocks(&guide());
    let mut scripts = 0;
    for (info, body) in &all {
        if info == "python" {
            let name = body
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("# file: "))
                .expect("a Python block names its file");
            std::fs::write(p.join(name), body).unwrap();
            scripts += 1;
        }
    }
    assert_eq!(scripts, 1);
    let shell: Vec<&String> = all
        .iter()
        .filter(|(i, _)| i == "sh")
        .map(|(_, b)| b)
        .collect();
    assert_eq!(shell.len(), 1);
    let chit_dir = std::path::Path::new(env!("CARGO_BIN_EXE_chit"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        chit_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", shell[0]])
        .current_dir(p)
        .env("PATH", path)
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("VALID receipt.json"), "{stdout}");
    assert!(
        stdout.contains("VALID stream session-42 (3 packets)"),
        "{stdout}"
    );
    // The receipt is as the guide says: sealed, graded failed, valid.
    let v = chit_in(p, &["verify", "--json", "receipt.json"], None);
    assert_eq!(v.code, 0, "{}", v.stdout);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("receipt.json")).unwrap()).unwrap();
    assert_eq!(r["grade"], "failed");
    assert!(r["digest"].as_str().unwrap().starts_with("sha256:"));
    // A packet dropped from the stream is caught (P3, and P8 against the
    // expected count).
    let v = chit_in(
        p,
        &[
            "verify",
            "--trust",
            "trust.toml",
            "--expect-count",
            "3",
            "packet-0.env.json",
            "packet-2.env.json",
        ],
        None,
    );
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("P3"), "{}", v.stdout);
}

#[test]
fn the_rust_example_is_a_doctest() {
    let lib = std::fs::read_to_string(repo().join("crates/chit-core/src/lib.rs")).unwrap();
    assert!(lib.contains("#[doc = include_str!(\"../../../docs/producers.md\")]"));
    let rust = blocks(&guide())
        .into_iter()
        .filter(|(i, _)| i == "rust")
        .count();
    assert_eq!(rust, 1);
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces
/// as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn every_link_to_the_specification_lands_on_a_heading() {
    let text = guide();
    let mut links = 0;
    for (at, _) in text.match_indices("](spec/") {
        let rest = &text[at + 2..];
        let target = &rest[..rest.find(')').unwrap()];
        let (file, frag) = target.split_once('#').expect("a link names its section");
        let spec = std::fs::read_to_string(repo().join("docs").join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let anchors: Vec<String> = spec
            .lines()
            .filter_map(|l| l.strip_prefix('#'))
            .map(|h| anchor(h.trim_start_matches('#')))
            .collect();
        assert!(
            anchors.iter().any(|a| a == frag),
            "{target}: not among {anchors:?}"
        );
        links += 1;
    }
    assert!(links >= 10, "{links}");
}
