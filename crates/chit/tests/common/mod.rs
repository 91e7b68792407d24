//! Running the chit binary in tests, with a deadline.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs chit with `args` (and `stdin`, if any) in `dir`; fails the test if it
/// takes more than 60 seconds or dies by a signal (a panic exits 101).
pub fn chit_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chit"))
        .args(args)
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
            panic!("chit {args:?} hung for 60 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stdout = String::from_utf8_lossy(&t_out.join().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&t_err.join().unwrap()).into_owned();
    let code = status
        .code()
        .unwrap_or_else(|| panic!("chit {args:?} died by a signal: {stderr}"));
    assert_ne!(code, 101, "chit {args:?} panicked: {stderr}");
    assert!(
        !stderr.contains("panicked"),
        "chit {args:?} panicked: {stderr}"
    );
    Run {
        code,
        stdout,
        stderr,
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
