//! The README's tour runs as written. Every `$ ` command in its first text
//! block runs, in order, in one `bash` started at the repository's root,
//! with the built `chit` and `chit-fixture` first on PATH and a `TMPDIR` of
//! the test's own (the tour makes its scratch folder there): the numeric
//! lineage lines start the fixture on a loopback port, measure it and stop
//! it. Each command must exit as a user reading it expects (1 for the
//! edited receipt, 0 otherwise), and each output line the README shows must
//! be what chit prints (a `…` stands for what varies: keys, art ids, the
//! scratch folder's path). The tour runs twice in a row, each time into a
//! new scratch folder, and must leave the checkout as it found it.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one run of the whole tour may take.
const DEADLINE: Duration = Duration::from_secs(180);

/// One command of the tour, continuation lines joined, with the output
/// lines shown after it.
struct Step {
    cmd: String,
    shown: Vec<String>,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository's root")
}

/// The tour's commands, in order.
fn tour() -> Vec<Step> {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("the README reads");
    let at = readme.find("## A tour").expect("a tour section");
    let block = &readme[at..];
    let start = block.find("```text\n").expect("a text block") + "```text\n".len();
    let block = &block[start..];
    let block = &block[..block.find("```").expect("the block ends")];
    let mut out: Vec<Step> = Vec::new();
    let mut lines = block.lines();
    while let Some(line) = lines.next() {
        if let Some(cmd) = line.strip_prefix("$ ") {
            let mut cmd = cmd.to_string();
            while cmd.trim_end().ends_with('\\') {
                let next = lines.next().expect("a continued line");
                cmd = format!(
                    "{} {}",
                    cmd.trim_end().trim_end_matches('\\').trim_end(),
                    next.trim()
                );
            }
            out.push(Step {
                cmd,
                shown: Vec::new(),
            });
        } else if !line.trim().is_empty() {
            out.last_mut()
                .expect("output after a command")
                .shown
                .push(line.to_string());
        }
    }
    out
}

/// Whether `line` is what the README shows as `shown`: equal, or, where
/// `shown` holds `…`, starting with what comes before the first, ending
/// with what comes after the last, and holding what lies between each
/// pair in order.
fn matches(shown: &str, line: &str) -> bool {
    let parts: Vec<&str> = shown.split('…').collect();
    if parts.len() == 1 {
        return line == shown;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !line.starts_with(first) || line.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &line[first.len()..];
    if !rest.ends_with(last) {
        return false;
    }
    rest = &rest[..rest.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    true
}

/// The marker written after each command: `\x1e` (a character no output
/// of the tour holds), the command's number and its exit status.
const MARK: &str = "\u{1e}tour";

/// The tour as one bash script: each command as written, in a group whose
/// standard error goes to a file of its own, then a marker line with its
/// exit status on standard output.
fn script(steps: &[Step], errors: &Path) -> String {
    let mut s = String::new();
    for (i, step) in steps.iter().enumerate() {
        s.push_str(&format!(
            "{{ {}\n}} 2> '{}/{i}'\nprintf '\\n{MARK} %d %d\\n' {i} \"$?\"\n",
            step.cmd,
            errors.display()
        ));
    }
    s
}

/// The folder `chit-fixture` is in: beside `chit`, where `cargo test
/// --workspace` puts it, or else built there now.
fn fixture_dir() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_chit")).parent().unwrap();
    if !bin.join("chit-fixture").exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build
            .args(["build", "-p", "chit-fixture"])
            .current_dir(repo());
        if bin.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "cargo build -p chit-fixture: {status}");
    }
    assert!(
        bin.join("chit-fixture").exists(),
        "no chit-fixture in {}",
        bin.display()
    );
    bin.to_path_buf()
}

/// Every file, folder and link under the checkout with its size, mode and
/// modification time, but for `.git` and build folders (those holding
/// Cargo's `CACHEDIR.TAG`, such as `target/`).
fn listing(root: &Path) -> BTreeMap<PathBuf, (u64, u32, i64, i64)> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<PathBuf, (u64, u32, i64, i64)>) {
        if dir.join("CACHEDIR.TAG").exists() {
            return;
        }
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let path = e.path();
            if dir == root && e.file_name() == ".git" {
                continue;
            }
            let m = std::fs::symlink_metadata(&path).unwrap();
            let key = path.strip_prefix(root).unwrap().to_path_buf();
            let size = if m.is_dir() { 0 } else { m.len() };
            out.insert(key, (size, m.mode(), m.mtime(), m.mtime_nsec()));
            if m.is_dir() {
                walk(&path, root, out);
            }
        }
    }
    let mut out = BTreeMap::new();
    let m = std::fs::metadata(root).unwrap();
    out.insert(PathBuf::new(), (0, m.mode(), m.mtime(), m.mtime_nsec()));
    walk(root, root, &mut out);
    out
}

/// One run of the whole tour from the checkout, with `tmp` as TMPDIR:
/// each command's standard output and error, and its exit status.
fn run_tour(steps: &[Step], tmp: &Path, path: &str) -> Vec<(String, String, i32)> {
    let errors = tempfile::tempdir().unwrap();
    let mut child = Command::new("bash")
        .args(["-c", &script(steps, errors.path())])
        .current_dir(repo())
        .env("PATH", path)
        .env("TMPDIR", tmp)
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("bash starts");
    let group = child.id();
    let mut pipe = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = pipe.read_to_end(&mut b);
        b
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > DEADLINE {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Whatever the tour left running (the fixture, if it did not stop it)
    // is ended with it; the tour itself must have stopped the fixture.
    let alive = || {
        Command::new("kill")
            .args(["-0", "--", &format!("-{group}")])
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
    };
    // A process the tour killed as it ended may take a moment to go.
    let gone_by = Instant::now() + Duration::from_secs(3);
    while alive() && Instant::now() < gone_by {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = alive();
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{group}")])
        .stderr(Stdio::null())
        .status();
    let stdout = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    let mut stderr = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    assert!(
        status.is_some(),
        "the tour took more than {DEADLINE:?}; so far:\n{stdout}"
    );
    assert!(
        !left,
        "the tour left a process running (the fixture is stopped at its end):\n{stdout}"
    );
    // Cut the output at the markers: each command's own output before its.
    let mut outs = Vec::new();
    let mut rest = stdout.as_str();
    for (i, step) in steps.iter().enumerate() {
        let Some(at) = rest.find(MARK) else {
            panic!(
                "the tour stopped before command {i} (`{}`) ended: {stderr}\n{stdout}",
                step.cmd
            );
        };
        let own = rest[..at].to_string();
        let line_end = rest[at..].find('\n').map_or(rest.len(), |n| at + n + 1);
        let mark: Vec<&str> = rest[at..line_end].split_whitespace().collect();
        assert_eq!(mark[1], i.to_string(), "markers out of order: {stdout}");
        let code: i32 = mark[2].parse().unwrap();
        let err = std::fs::read_to_string(errors.path().join(i.to_string())).unwrap_or_default();
        outs.push((own, err, code));
        rest = &rest[line_end..];
    }
    outs
}

#[test]
fn the_whole_tour_runs_as_written_twice_and_leaves_the_checkout_as_it_was() {
    let steps = tour();
    assert!(steps.len() > 40, "{} commands", steps.len());
    for needed in [
        "cd \"$(mktemp -d)\"",
        "chit-fixture ",
        "chit lineage measure ",
        "kill %1",
    ] {
        assert!(
            steps.iter().any(|s| s.cmd.contains(needed)),
            "the tour has no `{needed}`"
        );
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_chit")).parent().unwrap();
    let path = format!(
        "{}:{}:{}",
        bin.display(),
        fixture_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let repo = repo();
    let before = listing(&repo);
    for round in 1..=2 {
        let tmp = tempfile::tempdir().unwrap();
        let outs = run_tour(&steps, tmp.path(), &path);
        for (step, (stdout, stderr, code)) in steps.iter().zip(&outs) {
            let cmd = &step.cmd;
            // The edited receipt is invalid wherever it is verified, and
            // so are some of the examples, verified all at once.
            let whole_examples = cmd.starts_with("chit verify \"$examples\" ");
            let want =
                if cmd.contains("chit verify") && cmd.contains("edited.json") || whole_examples {
                    1
                } else {
                    0
                };
            assert_eq!(
                *code, want,
                "round {round}: `{cmd}` exited {code}: {stderr}"
            );
            assert!(!stderr.contains("panicked"), "`{cmd}`: {stderr}");
            for line in &step.shown {
                assert!(
                    stdout.lines().any(|l| matches(line, l)),
                    "round {round}: `{cmd}` did not print {line:?}:\n{stdout}"
                );
            }
        }
        // What the tour wrote is in one scratch folder under TMPDIR.
        let made: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(made.len(), 1, "round {round}: {made:?}");
        for file in [
            "receipts/index.db",
            "receipts/public/checkpoint",
            "receipt.json",
            "transcript.jsonl",
            "me.pem",
        ] {
            assert!(made[0].join(file).exists(), "round {round}: no {file}");
        }
        let after = listing(&repo);
        if after != before {
            let changed: Vec<_> = after
                .iter()
                .filter(|(k, v)| before.get(*k) != Some(*v))
                .map(|(k, _)| k)
                .chain(before.keys().filter(|k| !after.contains_key(*k)))
                .map(|k| Path::new(".").join(k))
                .collect();
            panic!("round {round}: the tour changed the checkout: {changed:?}");
        }
    }
}

#[test]
fn shown_lines_match_with_ellipses() {
    assert!(matches("VALID r.json", "VALID r.json"));
    assert!(!matches("VALID r.json", "VALID r.json2"));
    assert!(matches(
        "VALID …/examples/a.json",
        "VALID /tmp/x/examples/a.json"
    ));
    assert!(!matches(
        "VALID …/examples/a.json",
        "VALID /tmp/x/examples/b.json"
    ));
    assert!(matches(
        "did:key     did:key:z6Mk…",
        "did:key     did:key:z6MkQ"
    ));
    assert!(matches(
        "match: wrote r.json art_… (checks art_…)",
        "match: wrote r.json art_12 (checks art_34)"
    ));
    assert!(!matches(
        "match: wrote r.json art_… (checks art_…)",
        "match: wrote r.json art_12 (checks art_34"
    ));
    assert!(!matches("ab…ba", "aba"));
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
