//! `chit serve` in tests: the server as a child process, and plain
//! HTTP/1.1 requests to it.

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `chit serve`, killed when dropped.
pub struct Server {
    pub child: Child,
    pub addr: String,
    /// What it printed before its address (a demo's key and write token).
    pub before: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts chit with `args` then `extra` in `dir`, its standard error to
/// `stderr`, and waits for the address on the line "chit serve: log … at
/// http://…/".
pub fn start(dir: &Path, args: &[&str], extra: &[&str], stderr: Stdio) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_chit"));
    cmd.args(args).args(extra);
    start_command(cmd, dir, stderr)
}

/// [`start`] for a command that runs chit serve in the end (under a
/// wrapper such as `unshare`).
pub fn start_command(mut cmd: Command, dir: &Path, stderr: Stdio) -> Server {
    let mut child = cmd
        .current_dir(dir)
        // `serve --demo` makes its folder under TMPDIR and removes it when
        // it stops; a test's server is killed (no cleanup runs), so the
        // folder goes in the test's own, removed with the test.
        .env("TMPDIR", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut before = String::new();
    let mut line = String::new();
    while !line.starts_with("chit serve:") && !line.starts_with("chit witness:") {
        before.push_str(&line);
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 {
            panic!("the server printed no address (it printed {before:?})");
        }
    }
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.trim().strip_suffix('/'))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    Server {
        child,
        addr,
        before,
    }
}

/// One HTTP/1.1 request: the status and the body.
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Vec<u8>) {
    try_http(addr, method, path, headers, body).unwrap()
}

/// [`http`], or why the exchange failed (a server gone).
pub fn try_http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())?;
    s.write_all(body)?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no response head"))?;
    let head = String::from_utf8_lossy(&out[..split]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("no status"))?;
    let mut body = out[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    Ok((status, body))
}

/// A GET's status and response head (its header lines, lower-cased).
pub fn get_head(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&out[..split]).to_ascii_lowercase();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head)
}

pub fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let end = b.windows(2).position(|w| w == b"\r\n").unwrap();
        let n = usize::from_str_radix(std::str::from_utf8(&b[..end]).unwrap().trim(), 16).unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&b[end + 2..end + 2 + n]);
        b = &b[end + 2 + n + 2..];
    }
}

/// A JSON value from an answer's bytes (the test fails, showing them, if
/// they are not JSON).
pub fn json(b: &[u8]) -> serde_json::Value {
    serde_json::from_slice(b).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(b)))
}

/// A valid run receipt, made distinct by `n`, sealed, on one line.
pub fn receipt(n: usize) -> Vec<u8> {
    let text = super::example_text("agreed-verified.json");
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["id"] = format!("run-{n}").into();
    chit_core::seal::seal(
        &serde_json::to_vec(&v).unwrap(),
        None,
        &chit_core::Limits::default(),
    )
    .unwrap()
    .bytes
}
