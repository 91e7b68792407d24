//! Running the chit binary in tests, with a deadline.

#![allow(dead_code)]

pub mod serving;

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// What a run of chit gave, its standard output as the exact bytes.
pub struct RawRun {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// Runs chit with `args` (and `stdin`, if any) in `dir`, its standard
/// output a pipe; fails the test if it takes more than 60 seconds, dies by
/// a signal or panics (a panic exits 101).
pub fn chit_raw<S: AsRef<OsStr>>(dir: &Path, args: &[S], stdin: Option<&[u8]>) -> RawRun {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_chit"));
    cmd.args(args);
    run_raw(cmd, dir, stdin)
}

/// Runs `cmd` (chit, or chit under a wrapper such as `prlimit`) in `dir`
/// with `stdin`, under the same deadline and checks as [`chit_raw`].
pub fn run_raw(mut cmd: Command, dir: &Path, stdin: Option<&[u8]>) -> RawRun {
    let shown: Vec<String> = cmd.get_args().map(|a| format!("{a:?}")).take(8).collect();
    let mut child = cmd
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chit starts");
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let t_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("chit {shown:?} hung for 60 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stdout = t_out.join().unwrap();
    let stderr = String::from_utf8_lossy(&t_err.join().unwrap()).into_owned();
    let code = status
        .code()
        .unwrap_or_else(|| panic!("chit {shown:?} died by a signal ({status:?}): {stderr}"));
    assert_ne!(code, 101, "chit {shown:?} panicked: {stderr}");
    assert!(
        !stderr.contains("panicked"),
        "chit {shown:?} panicked: {stderr}"
    );
    RawRun {
        code,
        stdout,
        stderr,
    }
}

/// Runs chit as [`chit_raw`] does, its output as (lossy) text.
pub fn chit_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Run {
    let r = chit_raw(dir, args, stdin);
    Run {
        code: r.code,
        stdout: String::from_utf8_lossy(&r.stdout).into_owned(),
        stderr: r.stderr,
    }
}

pub fn chit(args: &[&str]) -> Run {
    chit_in(&repo(), args, None)
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn example(name: &str) -> PathBuf {
    repo().join("examples/run-receipts").join(name)
}

pub fn example_text(name: &str) -> String {
    std::fs::read_to_string(example(name)).unwrap()
}

/// Reason's own command line, swapped for chit's: `reason --format json
/// verify-authorization-bundle - --require-authorized`. Drop the last
/// argument for the form without the gate.
pub const REASON_BUNDLE_GATE: [&str; 6] = [
    "reason",
    "--format",
    "json",
    "verify-authorization-bundle",
    "-",
    "--require-authorized",
];

/// The value a command printed after `prefix` on a line of its own
/// (`log key: …`, `witness key: …`).
pub fn printed(stdout: &str, prefix: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in {stdout}"))
        .to_string()
}

/// `chit log init` of `store` in `dir`, signed by `key` (made first when
/// missing), under `origin`: the log's verifier key it prints.
pub fn log_init(dir: &Path, store: &str, key: &str, origin: &str) -> String {
    if !dir.join(key).exists() {
        let r = chit_in(dir, &["keygen", "--out", key], None);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let r = chit_in(
        dir,
        &[
            "log", "init", "--store", store, "--key", key, "--origin", origin,
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    printed(&r.stdout, "log key: ")
}

/// `chit log append --store STORE --lines FILE` in `dir`, expected to exit 0.
pub fn log_append_lines(dir: &Path, store: &str, file: &str) {
    let r = chit_in(
        dir,
        &["log", "append", "--store", store, "--lines", file],
        None,
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
}

/// A fresh PostgreSQL schema for one test, dropped with this value; `url`
/// names it for chit (`?schema=`).
pub struct PgSchema {
    client: postgres::Client,
    schema: String,
    pub url: String,
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        let _ = self
            .client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
    }
}

impl PgSchema {
    /// One number a query in the schema gives (its first column, first row).
    pub fn number(&mut self, query: &str) -> i64 {
        self.client
            .batch_execute(&format!("SET search_path TO {}", self.schema))
            .unwrap();
        self.client.query_one(query, &[]).unwrap().get(0)
    }

    /// Runs statements in the schema (a tamper behind the log's back).
    pub fn execute(&mut self, statements: &str) {
        self.client
            .batch_execute(&format!("SET search_path TO {}; {statements}", self.schema))
            .unwrap();
    }
}

/// A schema at `CHIT_TEST_POSTGRES` (default
/// `postgres://postgres@127.0.0.1:5432/test`), or None where PostgreSQL
/// cannot be reached (the test is skipped, and says so), except under
/// `CI=true`, where that fails the test.
pub fn pg_schema(prefix: &str) -> Option<PgSchema> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let base = std::env::var("CHIT_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let client = match postgres::Client::connect(&base, postgres::NoTls) {
        Ok(c) => c,
        Err(e) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("skipping: PostgreSQL at {base}: {e} (set CHIT_TEST_POSTGRES)");
            return None;
        }
        Err(e) => panic!("CI=true but PostgreSQL at {base} cannot be reached: {e}"),
    };
    let schema = format!(
        "{prefix}{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    );
    let sep = if base.contains('?') { '&' } else { '?' };
    Some(PgSchema {
        client,
        url: format!("{base}{sep}schema={schema}"),
        schema,
    })
}

/// A plain static web server (Python's http.server) over `root`, on a
/// free loopback port: killed when dropped.
pub struct StaticWeb {
    child: std::process::Child,
    pub url: String,
}

impl StaticWeb {
    pub fn start(root: &Path) -> StaticWeb {
        let mut child = Command::new("python3")
            .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1"])
            .current_dir(root)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("python3 serves a folder");
        let mut first = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut first,
        )
        .unwrap();
        let port = first
            .split(" port ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .unwrap_or_else(|| panic!("no port in {first:?}"))
            .to_string();
        StaticWeb {
            child,
            url: format!("http://127.0.0.1:{port}/"),
        }
    }
}

impl Drop for StaticWeb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `chit log witness` of `store` with the witness key `key_file`.
pub fn witness_as(
    dir: &Path,
    store: &str,
    key_file: &str,
    name: &str,
    log_key: &str,
    state: &str,
) -> Run {
    chit_in(
        dir,
        &[
            "log",
            "witness",
            "--store",
            store,
            "--key",
            key_file,
            "--name",
            name,
            "--log-key",
            log_key,
            "--state",
            state,
        ],
        None,
    )
}
