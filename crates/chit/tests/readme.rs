//! The README's tour runs as written. Every `$ ` command in its first text
//! block runs under `bash` in a copy of `examples/`, with the built `chit`
//! first on PATH; each must exit as a user reading it expects (1 for the
//! edited receipt, 0 otherwise), and each output line the README shows must
//! be what chit prints (up to a `…`, which stands for what varies: keys, art
//! ids). Only `chit lineage measure` is left out: it needs a completion
//! server (crates/chit/tests/lineage.rs runs it against the fixture).

use std::path::Path;
use std::process::Command;

/// The tour's commands, continuation lines joined, with the output lines
/// shown after each.
fn tour() -> Vec<(String, Vec<String>)> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .expect("the README reads");
    let at = readme.find("## A tour").expect("a tour section");
    let block = &readme[at..];
    let start = block.find("```text\n").expect("a text block") + "```text\n".len();
    let block = &block[start..];
    let block = &block[..block.find("```").expect("the block ends")];
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut lines = block.lines();
    while let Some(line) = lines.next() {
        if let Some(cmd) = line.strip_prefix("$ ") {
            let mut cmd = cmd.to_string();
            while cmd.trim_end().ends_with('\\') {
                let next = lines.next().expect("a continued line");
                cmd = format!("{} {}", cmd.trim_end().trim_end_matches('\\'), next.trim());
            }
            out.push((cmd, Vec::new()));
        } else if !line.trim().is_empty() {
            if let Some((_, shown)) = out.last_mut() {
                shown.push(line.to_string());
            }
        }
    }
    out
}

/// Copies a folder, recursively.
fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn every_command_in_the_tour_runs_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    copy(&repo.join("examples"), &dir.path().join("examples"));
    let bin = Path::new(env!("CARGO_BIN_EXE_chit")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let commands = tour();
    assert!(commands.len() > 30, "{} commands", commands.len());
    let mut ran = 0;
    for (cmd, shown) in &commands {
        if cmd.contains("chit lineage measure") {
            continue;
        }
        let o = Command::new("bash")
            .args(["-c", cmd])
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        let stderr = String::from_utf8_lossy(&o.stderr);
        let code = o.status.code().unwrap_or(-1);
        // The edited receipt is invalid wherever it is verified.
        let want = if cmd.contains("chit verify") && cmd.contains("edited.json") {
            1
        } else {
            0
        };
        assert_eq!(code, want, "`{cmd}` exited {code}: {stderr}");
        assert!(!stderr.contains("panicked"), "`{cmd}`: {stderr}");
        for line in shown {
            let found = match line.split_once('…') {
                Some((head, _)) => stdout.lines().any(|l| l.starts_with(head.trim_end())),
                None => stdout.lines().any(|l| l == line),
            };
            assert!(found, "`{cmd}` did not print {line:?}:\n{stdout}");
        }
        ran += 1;
    }
    assert!(ran >= 30, "only {ran} commands ran");
}

fn help(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_chit"))
        .args(args)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{args:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn the_help_says_what_the_readme_says() {
    // Folders are checked on all cores, not two.
    let top = help(&["--help"]);
    assert!(top.contains("all cores") && !top.contains("both cores"));
    // A trust file's did is documented where --trust is.
    let verify = help(&["verify", "--help"]);
    let words = verify.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("an optional did"), "{verify}");
    // Commands without --lines do not offer a line limit.
    for cmd in ["digest", "seal", "sign"] {
        let text = help(&[cmd, "--help"]);
        assert!(!text.contains("with --lines"), "{cmd}: {text}");
    }
}
