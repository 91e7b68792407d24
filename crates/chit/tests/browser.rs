//! The page at `/` in a real headless Chromium, driven over the DevTools
//! protocol on a pipe (`--remote-debugging-pipe`: JSON messages ended by a
//! NUL, on the browser's descriptors 3 and 4), against `chit serve --demo`.
//!
//! It checks that the page loads with no console error; that it says what
//! it is and what a checkpoint is, and its placeholders read as hints, not
//! values; that search finds entries; that an entry shows its content
//! address and the Entry box finds it by that; that each kind is drawn (a
//! run receipt's grade, seats and checks; a packet stream with its gap in
//! red; a lineage receipt's measures against its bound per level pair, its
//! compared pair and its effect in words; a Lattice rebind; a Reason proof
//! tree, and why `authorized` stands beside issues), that a large integer
//! is shown as written, and that the file picker shows verdicts through
//! `/v1/verify` without appending, a JSON Lines file's in the main pane
//! too. Each step leaves a screenshot under the target folder
//! (`browser-screenshots/`).
//!
//! Chromium is Debian's `chromium` (`.ci/run` installs it when missing), or
//! `CHIT_CHROMIUM`. Without it the test says so and passes, except under
//! `CI=true`, where it fails.

mod common;

use common::serving::{self, Server};

use base64::Engine;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHIT_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// Chromium, or `None` (said on standard error) when the test is to be
/// skipped: never under `CI=true`, where a missing Chromium fails it.
fn needed_chromium() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("Chromium is missing: .ci/run installs Debian's chromium package");
        }
        eprintln!("skipped: no Chromium here (apt-get install chromium, or set CHIT_CHROMIUM)");
    }
    found
}

/// The demo server, and the write token it printed.
fn demo_server(dir: &Path) -> (Server, String) {
    let server = serving::start(
        dir,
        &["serve", "--demo", "--quiet", "--listen", "127.0.0.1:0"],
        &[],
        Stdio::inherit(),
    );
    let token = common::printed(&server.before, "write token: ")
        .trim()
        .to_string();
    (server, token)
}

/// Chromium with the DevTools protocol on a pipe, one page attached.
struct Browser {
    child: Child,
    to: std::fs::File,
    from: mpsc::Receiver<Value>,
    next: u64,
    session: String,
    /// Every event seen, in order.
    events: Vec<Value>,
    shots: PathBuf,
}

impl Drop for Browser {
    /// Closes the browser the way a user would (`Browser.close`), so that
    /// its helper processes end and it removes its own files, before the
    /// test's folder is removed; killed only if it has not gone in 10 s.
    /// (Killed outright, its helpers went on writing into the profile while
    /// the folder was being removed, and each run left a folder in /tmp.)
    fn drop(&mut self) {
        self.next += 1;
        let mut close =
            serde_json::to_vec(&json!({"id": self.next, "method": "Browser.close"})).unwrap();
        close.push(0);
        if self.to.write_all(&close).is_ok() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A pipe, both ends close-on-exec: (read, write).
fn pipe() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills two new descriptors, owned by the Files below.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    }
}

impl Browser {
    fn launch(exe: &Path, profile: &Path, shots: PathBuf) -> Browser {
        Browser::launch_with(exe, profile, shots, &[])
    }

    /// [`Browser::launch`] with more of Chromium's flags.
    fn launch_with(exe: &Path, profile: &Path, shots: PathBuf, extra: &[&str]) -> Browser {
        let (cmd_read, cmd_write) = pipe();
        let (out_read, out_write) = pipe();
        let (a, b) = (cmd_read.as_raw_fd(), out_write.as_raw_fd());
        let mut command = Command::new(exe);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--remote-debugging-pipe",
                "--window-size=1400,1100",
            ])
            .args(extra)
            .arg(format!("--user-data-dir={}", profile.display()))
            // Its own temporary files beside the profile, in the test's folder.
            .env("TMPDIR", profile.parent().unwrap_or(profile))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // The browser reads commands on 3 and writes on 4. The pipes are
        // close-on-exec: copy each above 9 first (copies are inheritable),
        // then onto 3 and 4.
        // SAFETY: between fork and exec only async-signal-safe calls.
        unsafe {
            command.pre_exec(move || {
                let a2 = libc::fcntl(a, libc::F_DUPFD, 10);
                let b2 = libc::fcntl(b, libc::F_DUPFD, 10);
                if a2 < 0 || b2 < 0 || libc::dup2(a2, 3) < 0 || libc::dup2(b2, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("start chromium");
        drop(cmd_read);
        drop(out_write);
        let (tx, from) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(out_read);
            let mut buf = Vec::new();
            while r.read_until(0, &mut buf).unwrap_or(0) > 0 {
                if buf.last() == Some(&0) {
                    buf.pop();
                }
                if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                    if tx.send(v).is_err() {
                        return;
                    }
                }
                buf.clear();
            }
        });
        std::fs::create_dir_all(&shots).unwrap();
        let mut b = Browser {
            child,
            to: cmd_write,
            from,
            next: 0,
            session: String::new(),
            events: Vec::new(),
            shots,
        };
        let target = b.send(None, "Target.createTarget", json!({"url": "about:blank"}));
        let target = target["targetId"].as_str().unwrap().to_string();
        let attached = b.send(
            None,
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        );
        b.session = attached["sessionId"].as_str().unwrap().to_string();
        for m in ["Runtime.enable", "Log.enable", "Page.enable", "DOM.enable"] {
            b.call(m, json!({}));
        }
        b.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1400, "height": 1100, "deviceScaleFactor": 1, "mobile": false}),
        );
        b
    }

    fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .from
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to {method} within a minute"));
            if v["id"] == json!(id) {
                if let Some(e) = v.get("error") {
                    panic!("{method}: {e}");
                }
                return v["result"].clone();
            }
            self.events.push(v);
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let s = self.session.clone();
        self.send(Some(&s), method, params)
    }

    /// A JavaScript expression's value in the page.
    fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(e) = r.get("exceptionDetails") {
            panic!("{expr}: {e}");
        }
        r["result"]["value"].clone()
    }

    /// Waits until `expr` is true in the page (20 s at most).
    fn wait_for(&mut self, expr: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        // Until the page has loaded, the expression may throw: not yet.
        let guarded =
            format!("(() => {{ try {{ return {expr}; }} catch (_) {{ return false; }} }})()");
        while Instant::now() < deadline {
            if self.eval(&guarded) == json!(true) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let body = self.eval("document.querySelector('#entry').innerText");
        let verdict = self.eval("document.querySelector('#verdict').innerText");
        panic!("the page never had {expr}; the entry pane reads {body}; the file's verdict {verdict}; errors {:?}", self.errors());
    }

    fn screenshot(&mut self, name: &str) {
        let r = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        let png = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap())
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{name}: not a PNG");
        let path = self.shots.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        eprintln!("screenshot: {}", path.display());
    }

    /// Console errors, uncaught exceptions and error log entries so far,
    /// as text.
    fn errors(&self) -> Vec<String> {
        let mut out = Vec::new();
        for e in &self.events {
            let p = &e["params"];
            match e["method"].as_str() {
                Some("Runtime.consoleAPICalled") if p["type"] == "error" => {
                    out.push(format!("console.error: {}", p["args"]))
                }
                Some("Runtime.exceptionThrown") => {
                    out.push(format!("exception: {}", p["exceptionDetails"]))
                }
                Some("Log.entryAdded") if p["entry"]["level"] == "error" => out.push(format!(
                    "log: {} {}",
                    p["entry"]["text"],
                    p["entry"]["url"].as_str().unwrap_or("")
                )),
                _ => {}
            }
        }
        out
    }

    /// Gives the file input these files (as a person picking them would).
    fn pick_file(&mut self, selector: &str, file: &Path) {
        let doc = self.call("DOM.getDocument", json!({"depth": 0}));
        let root = doc["root"]["nodeId"].clone();
        let node = self.call(
            "DOM.querySelector",
            json!({"nodeId": root, "selector": selector}),
        );
        self.call(
            "DOM.setFileInputFiles",
            json!({"files": [file.display().to_string()], "nodeId": node["nodeId"]}),
        );
    }
}

/// One POST with the write token; the status line's code.
fn post(addr: &str, token: &str, body: &[u8]) -> u16 {
    let auth = format!("Bearer {token}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    serving::http(addr, "POST", "/v1/entries", &headers, body).0
}

/// An unsigned packet of stream `gappy` (the demo takes unsigned documents
/// by their own rules).
fn packet(seq: u64, id: &str, prev: Option<&str>) -> Vec<u8> {
    let digest = |c: char| format!("sha256:{}", c.to_string().repeat(64));
    let mut p = json!({
        "schema": "verification.packet.v1",
        "stream_id": "gappy",
        "sequence": seq,
        "packet_id": id,
        "produced_at": "2026-11-30T09:00:00Z",
        "input_digest": digest('a'),
        "model_digest": digest('b'),
        "output_digest": digest('c'),
        "reproducibility": "bit_exact",
    });
    if let Some(prev) = prev {
        p["prev_packet_id"] = json!(prev);
    }
    serde_json::to_vec(&p).unwrap()
}

#[test]
fn the_page_draws_every_kind_and_checks_a_file() {
    let Some(exe) = needed_chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (server, token) = demo_server(dir.path());
    // A second stream with a gap at 1 (the log takes gaps: packets may
    // arrive out of order; it refuses a broken link, P4).
    for (seq, id, prev) in [
        (0, "g0", None),
        (2, "g2", Some("g1")),
        (3, "g3", Some("g2")),
    ] {
        assert_eq!(post(&server.addr, &token, &packet(seq, id, prev)), 201);
    }
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser-screenshots");
    let mut b = Browser::launch(&exe, &dir.path().join("profile"), shots);
    let url = format!("http://{}/", server.addr);
    b.call("Page.navigate", json!({"url": url}));
    b.wait_for("document.body.dataset.ready === '1'");

    // The checkpoint and the size.
    assert_eq!(
        b.eval("document.querySelector('#size').dataset.size"),
        json!("12")
    );
    let note = b.eval("document.querySelector('#checkpoint').textContent");
    assert!(
        note.as_str()
            .unwrap()
            .starts_with("demo.chit.localhost/log\n12\n"),
        "{note}"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#hits li').length"),
        json!(12)
    );

    // What this is, at the top, with a link to the page explained, which
    // names the docs; what a checkpoint is and what verifying it means.
    let intro = b.eval("document.querySelector('#intro').textContent");
    let intro = intro.as_str().unwrap();
    assert!(
        intro.starts_with("This is a chit receipt log: receipts of AI work")
            && intro.contains("docs/serving.md"),
        "{intro}"
    );
    assert_eq!(
        b.eval("document.querySelector('body > header').nextElementSibling.id"),
        json!("intro")
    );
    b.eval("document.querySelector('#intro a').click()");
    b.wait_for("location.hash === '#/about' && !!document.querySelector('#entry .about')");
    let about = b.eval("document.querySelector('#entry .about').textContent");
    let about = about.as_str().unwrap();
    for words in [
        "content address",
        "chit verify --log-key KEY BUNDLE",
        &format!("chit log audit http://{} --log-key KEY", server.addr),
        "docs/serving.md",
    ] {
        assert!(about.contains(words), "{words:?} not in {about}");
    }
    let explained = b.eval("document.querySelector('#latest .explain').textContent");
    let explained = explained.as_str().unwrap();
    for words in [
        "What the log signs",
        "root hash",
        "To verify it is to check that signature against the log's public key",
        &format!("chit log audit http://{} --log-key KEY", server.addr),
        "This page verifies the signatures and each entry's inclusion itself, in your browser",
    ] {
        assert!(explained.contains(words), "{words:?} not in {explained}");
    }

    // A placeholder reads as a hint: italic and grey where a value is
    // upright and dark, and it says "any" or "an", never a bare value.
    let hints = b.eval(
        "[...document.querySelectorAll('input[placeholder]')].map(i => { \
           const p = getComputedStyle(i, '::placeholder'), v = getComputedStyle(i); \
           return [i.name, i.placeholder, p.fontStyle, p.color === v.color, v.fontStyle]; })",
    );
    let hints = hints.as_array().unwrap();
    assert_eq!(hints.len(), 5, "{hints:?}");
    for h in hints {
        assert_eq!(h[2], json!("italic"), "{h}");
        assert_eq!(h[3], json!(false), "{h}");
        assert_eq!(h[4], json!("normal"), "{h}");
        let text = h[1].as_str().unwrap();
        assert!(text.starts_with("any ") || text.starts_with("an "), "{h}");
    }
    b.screenshot("01-loaded");

    // Search: by kind, then by stream.
    b.eval("(() => { const f = document.querySelector('#search'); f.kind.value = 'numeric.lineage'; f.requestSubmit(); })()");
    b.wait_for("document.querySelectorAll('#hits li').length === 1");
    assert_eq!(
        b.eval("document.querySelector('#hits li').textContent"),
        json!("7numeric.lineage")
    );
    b.eval("(() => { const f = document.querySelector('#search'); f.kind.value = ''; f.stream.value = 'demo-stream'; f.requestSubmit(); })()");
    b.wait_for("document.querySelectorAll('#hits li').length === 3");
    b.screenshot("02-search");
    b.eval("(() => { const f = document.querySelector('#search'); f.stream.value = 'no-such-stream'; f.requestSubmit(); })()");
    b.wait_for("document.querySelector('#hits-summary').textContent === 'No entries match.'");

    // Each kind, opened by its address in the page.
    let open = |b: &mut Browser, index: u64, kind: &str| {
        b.eval(&format!("location.hash = '#/entry/{index}'"));
        b.wait_for(&format!(
            "!!document.querySelector('#entry .entry[data-kind=\"{kind}\"] .verdict[data-status=valid]')"
        ));
    };
    open(&mut b, 1, "run-receipt");
    assert_eq!(
        b.eval("document.querySelector('.kind-run-receipt .title .badge').textContent"),
        json!("failed")
    );
    assert_eq!(
        b.eval("document.querySelectorAll('.kind-run-receipt table')[0].tBodies[0].rows.length"),
        json!(4)
    );
    assert_eq!(
        b.eval("document.querySelectorAll('.kind-run-receipt table')[1].tBodies[0].rows.length"),
        json!(3)
    );
    assert_eq!(
        b.eval("document.querySelectorAll('.kind-run-receipt .gaps li').length"),
        json!(3)
    );
    // Its content address is the SHA-256 of its exact bytes; the receipt's
    // own digest is labelled as something else.
    let (code, body) = serving::http(&server.addr, "GET", "/v1/entries/1", &[], b"");
    assert_eq!(code, 200);
    let bundle = serving::json(&body);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(bundle["entry"].as_str().unwrap())
        .unwrap();
    let address = format!("sha256:{}", chit_core::digest::sha256_hex(&bytes));
    assert_eq!(
        b.eval("document.querySelector('#entry .address .content-address').textContent"),
        json!(address)
    );
    let own = b.eval("[...document.querySelectorAll('.kind-run-receipt dt')].find(e => e.textContent === 'receipt digest').nextElementSibling.textContent");
    assert!(
        own.as_str()
            .unwrap()
            .contains("not the log's content address")
            && !own.as_str().unwrap().contains(&address),
        "{own}"
    );
    b.screenshot("03-run-receipt");
    // The Entry box finds it by that address, from another entry.
    open(&mut b, 0, "run-receipt");
    b.eval(&format!(
        "(() => {{ const f = document.querySelector('#goto'); f.which.value = '{address}'; f.requestSubmit(); }})()"
    ));
    b.wait_for(
        "/^Entry 1 of /.test(document.querySelector('#entry .entry > p.muted').textContent)",
    );
    assert_eq!(
        b.eval("document.querySelector('#entry .address .content-address').textContent"),
        json!(address)
    );

    open(&mut b, 3, "verification.packet.v1");
    b.wait_for("document.querySelectorAll('.stream a.seq').length === 3");
    assert_eq!(
        b.eval(
            "document.querySelectorAll('.stream .gap, .stream .broken, .stream .replaced').length"
        ),
        json!(0)
    );
    assert_eq!(
        b.eval("document.querySelector('.stream .seq.here').textContent"),
        json!("1")
    );
    b.screenshot("04-packet-stream");

    open(&mut b, 10, "verification.packet.v1");
    b.wait_for("document.querySelectorAll('.stream .seq').length === 4");
    assert_eq!(
        b.eval("[...document.querySelectorAll('.stream .seq.gap')].map(e => e.textContent).join()"),
        json!("1")
    );
    // 0-1 and 1-2 run into the gap; 2-3 is linked.
    assert_eq!(b.eval("[...document.querySelectorAll('.stream .link')].map(e => e.classList.contains('broken')).join()"), json!("true,true,false"));
    b.eval("location.hash = '#/entry/9'");
    b.wait_for("document.querySelector('.stream .seq.here') && document.querySelector('.stream .seq.here').textContent === '0'");
    assert_eq!(
        b.eval("getComputedStyle(document.querySelector('.stream .seq.gap')).borderTopColor"),
        json!("rgb(207, 34, 46)")
    );
    b.screenshot("05-packet-stream-gap");

    open(&mut b, 7, "numeric.lineage");
    assert_eq!(
        b.eval("document.querySelector('.kind-lineage .title .badge').textContent"),
        json!("occupancy_coupled")
    );
    // What was measured, each against its bound (a dashed line): the
    // pair of levels 0 and 2 as reported (9 positions differ, the first
    // at 5), level 1's the same (its sequence digest is level 2's), and
    // one distinct sequence at each level.
    let series = |b: &mut Browser, plot: &str| {
        b.eval(&format!(
            "[...document.querySelectorAll('svg.plot.{plot} circle.point')].map(c => [c.dataset.level, c.dataset.value, c.getAttribute('class')].join(' ')).join()"
        ))
    };
    assert_eq!(
        series(&mut b, "differing"),
        json!("1 9 point measured derived,2 9 point measured reported")
    );
    assert_eq!(
        series(&mut b, "first"),
        json!("1 5 point measured derived,2 5 point measured reported")
    );
    assert_eq!(
        series(&mut b, "distinct"),
        json!("0 1 point level,1 1 point level,2 1 point level")
    );
    assert_eq!(
        b.eval("[...document.querySelectorAll('.plot-figure .bound-label')].map(t => t.textContent).join()"),
        json!("dashed: the bound, at most 0 differing,\
               dashed: the bound, no divergence before position 0,\
               dashed: the bound, at most 1 distinct")
    );
    // The effect in words; the class too.
    assert_eq!(
        b.eval("document.querySelector('.kind-lineage .effect').textContent"),
        json!("The endpoint was removed from the serving set. Settlement was refused for 3 requests. Its requests go instead to another endpoint (commitment c764d649e62e…), which declares that its output does not depend on the batch. In effect from 2026-11-30T10:05:00Z.")
    );
    assert_eq!(
        b.eval("document.querySelector('.kind-lineage .class-words').textContent"),
        json!(
            "occupancy_coupled: The output changed with the induced concurrency beyond the bound."
        )
    );
    assert_eq!(
        b.eval("document.querySelectorAll('.positions span').length"),
        json!(72)
    );
    assert_eq!(b.eval("[...document.querySelectorAll('.positions span')].findIndex(s => s.classList.contains('first'))"), json!(5));
    b.screenshot("06-lineage");

    open(&mut b, 6, "lattice.executor_packet.v1");
    b.wait_for("document.querySelectorAll('.chain tbody tr').length === 2");
    assert_eq!(
        b.eval("document.querySelectorAll('.chain td.changed').length"),
        json!(0)
    );
    // The server's answer, X6's own: the rebind holds.
    assert_eq!(
        b.eval("document.querySelector('.kind-lattice .rebinds').textContent.includes('X6: every rebind holds.')"),
        json!(true)
    );
    assert_eq!(
        b.eval("document.querySelector('.kind-lattice .rebinds').textContent.includes('null')"),
        json!(false)
    );
    b.screenshot("07-lattice-rebind");

    open(&mut b, 8, "zerker.reason.authorization.v1");
    assert_eq!(
        b.eval("document.querySelector('.kind-reason .title .badge').textContent"),
        json!("authorized")
    );
    assert_eq!(
        b.eval("document.querySelectorAll('.tree li').length"),
        json!(10)
    );
    assert_eq!(
        b.eval("document.querySelector('.tree .atom').textContent"),
        json!("action_authorized(action_deploy_7)")
    );
    // Why authorized stands beside three issues.
    assert_eq!(
        b.eval("document.querySelectorAll('.kind-reason .findings li').length"),
        json!(3)
    );
    let note = b.eval("document.querySelector('.kind-reason .issues-note').textContent");
    assert!(
        note.as_str().unwrap().starts_with(
            "Authorized, and yet issues: an issue names a fact the reasoning set aside"
        ),
        "{note}"
    );
    // The ticket is 2^53 + 1: shown as written, not as a double rounds it.
    let facts = b.eval("document.querySelector('.kind-reason dl').textContent");
    assert!(
        facts.as_str().unwrap().contains("9007199254740993"),
        "{facts}"
    );
    b.screenshot("08-reason");

    let before = b.errors();
    assert!(before.is_empty(), "console errors: {before:#?}");

    // The file picker: a valid file, an invalid one, and one whose text is
    // markup (drawn as text). Nothing is appended.
    let examples = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .canonicalize()
        .unwrap();
    b.pick_file("#file", &examples.join("run-receipts/agreed-verified.json"));
    b.wait_for("!!document.querySelector('#verdict .verdict[data-status=valid]')");
    b.wait_for("!!document.querySelector('#entry .entry[data-kind=\"run-receipt\"]')");
    b.screenshot("09-file-valid");

    // A JSON Lines file, after that file: its lines' verdicts are drawn in
    // the main pane, where nothing of the file before stays. Line numbers
    // are the file's (a blank line skipped).
    let line = |name: &str| {
        let v: Value =
            serde_json::from_slice(&std::fs::read(examples.join(name)).unwrap()).unwrap();
        serde_json::to_string(&v).unwrap()
    };
    let lines = format!(
        "{}\n{}\n\n{}\n{{not json\n",
        line("packets/p0.env.json"),
        line("packets/p1.env.json"),
        line("lattice/unsealed.json"),
    );
    let lines_path = dir.path().join("mixed.jsonl");
    std::fs::write(&lines_path, lines).unwrap();
    b.pick_file("#file", &lines_path);
    b.wait_for("document.querySelectorAll('#entry .file-lines li.line').length === 4");
    assert_eq!(
        b.eval("document.querySelectorAll('#entry .kind-run-receipt').length"),
        json!(0)
    );
    assert_eq!(
        b.eval("[...document.querySelectorAll('#entry li.line')].map(l => l.dataset.line + ' ' + l.querySelector('.verdict').dataset.status).join()"),
        json!("1 valid,2 valid,4 invalid,5 unreadable")
    );
    assert_eq!(
        b.eval("[...document.querySelectorAll('#entry li.line[data-line=\"4\"] .rule')].map(e => e.textContent).join()"),
        json!("X4")
    );
    assert_eq!(
        b.eval("document.querySelector('#verdict').textContent"),
        json!("mixed.jsonl: 4 lines, 2 valid, 1 invalid, 1 unreadable")
    );
    // A line's receipt is drawn when opened.
    b.eval("(() => { const d = document.querySelector('#entry li.line[data-line=\"2\"] details'); d.open = true; })()");
    b.wait_for("!!document.querySelector('#entry li.line[data-line=\"2\"] .entry[data-kind=\"verification.packet.v1\"] .stream a.seq')");
    b.screenshot("09b-file-lines");

    b.pick_file("#file", &examples.join("lattice/unsealed.json"));
    b.wait_for("!!document.querySelector('#verdict .verdict[data-status=invalid]')");
    let rules =
        b.eval("[...document.querySelectorAll('#verdict .rule')].map(e => e.textContent).join()");
    assert_eq!(rules, json!("X2,X4"));
    b.screenshot("10-file-invalid");

    let mut hostile: Value = serde_json::from_slice(
        &std::fs::read(examples.join("run-receipts/agreed-verified.json")).unwrap(),
    )
    .unwrap();
    hostile["gaps"] = json!([
        "<img src=x onerror=\"document.title='owned'\"><a href=\"https://evil.example\">click</a>"
    ]);
    let hostile_path = dir.path().join("hostile.json");
    std::fs::write(&hostile_path, serde_json::to_vec_pretty(&hostile).unwrap()).unwrap();
    b.pick_file("#file", &hostile_path);
    b.wait_for("!!document.querySelector('#verdict .verdict[data-status=invalid]')");
    b.wait_for("document.querySelectorAll('#entry .gaps li').length === 1");
    assert_eq!(
        b.eval("document.querySelectorAll('#entry img, #entry a[href^=\"https\"]').length"),
        json!(0)
    );
    assert_eq!(
        b.eval("document.querySelector('#entry .gaps li').textContent"),
        hostile["gaps"][0]
    );
    assert_ne!(b.eval("document.title"), json!("owned"));
    b.screenshot("11-file-hostile");

    // Nothing was appended: still 12 entries.
    let size = b.eval("fetch('/checkpoint').then(r => r.text()).then(t => t.split('\\n')[1])");
    assert_eq!(size, json!("12"));

    // The only errors after loading: the browser's own line for each 422
    // and 400 /v1/verify answered (an invalid receipt is a 422 by the API's
    // contract, an unreadable one a 400), and nothing else.
    let after: Vec<String> = b.errors().into_iter().skip(before.len()).collect();
    let unexpected: Vec<&String> = after
        .iter()
        .filter(|e| {
            !((e.contains("status of 422") || e.contains("status of 400"))
                && e.contains("/v1/verify"))
        })
        .collect();
    assert!(unexpected.is_empty(), "console errors: {unexpected:#?}");
}

/// A proxy in front of a server that lies as `mode` says: `proof` (an
/// inclusion proof's hash), `entry` (a byte of an entry), `root` (the
/// checkpoint's root) or `cosignature` (a byte of the witness's
/// cosignature); anything else passes what the server says. Each
/// connection is one request, forwarded as HTTP/1.0 and answered with
/// `Connection: close`.
fn lying_proxy(upstream: String, mode: Arc<Mutex<String>>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let (up, mode) = (upstream.clone(), mode.clone());
            std::thread::spawn(move || {
                let _ = proxy_one(conn, &up, &mode);
            });
        }
    });
    addr
}

fn proxy_one(mut c: std::net::TcpStream, up: &str, mode: &Mutex<String>) -> std::io::Result<()> {
    use std::io::Read;
    c.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut req = Vec::new();
    let mut byte = [0u8; 1];
    while !req.ends_with(b"\r\n\r\n") {
        if c.read(&mut byte)? == 0 {
            return Ok(());
        }
        req.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&req).to_string();
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or("");
    let mut parts = first.split(' ');
    let (method, path) = (parts.next().unwrap_or("GET"), parts.next().unwrap_or("/"));
    let lie = mode.lock().unwrap().clone();
    // Another entry than the one asked for by its content address.
    let by_address =
        path.starts_with("/v1/entries/sha256:") || path.starts_with("/v1/entries/sha256%3A");
    let path = if lie == "swap" && by_address {
        "/v1/entries/4"
    } else {
        path
    };
    let mut forwarded = format!("{method} {path} HTTP/1.0\r\nHost: {up}\r\n");
    let mut length = 0usize;
    for l in lines {
        let lower = l.to_ascii_lowercase();
        if lower.starts_with("content-type:") || lower.starts_with("accept:") {
            forwarded.push_str(&format!("{l}\r\n"));
        }
        if let Some(n) = lower.strip_prefix("content-length:") {
            length = n.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    c.read_exact(&mut body)?;
    forwarded.push_str(&format!(
        "Content-Length: {length}\r\nConnection: close\r\n\r\n"
    ));
    let mut u = std::net::TcpStream::connect(up)?;
    u.write_all(forwarded.as_bytes())?;
    u.write_all(&body)?;
    let mut answer = Vec::new();
    u.read_to_end(&mut answer)?;
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(answer.len());
    let head = String::from_utf8_lossy(&answer[..split]).to_string();
    let mut body = answer.get(split + 4..).unwrap_or_default().to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = serving::dechunk(&body);
    }
    let body = tamper(&lie, path, body);
    let mut out = String::new();
    for (i, l) in head.split("\r\n").enumerate() {
        let lower = l.to_ascii_lowercase();
        if i > 0
            && (lower.starts_with("content-length:")
                || lower.starts_with("transfer-encoding:")
                || lower.starts_with("connection:"))
        {
            continue;
        }
        out.push_str(l);
        out.push_str("\r\n");
    }
    out.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    c.write_all(out.as_bytes())?;
    c.write_all(&body)
}

/// One bit of a base64 value flipped at byte `at`.
fn flip_b64(s: &str, at: usize) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut raw = b64.decode(s).unwrap();
    raw[at] ^= 1;
    b64.encode(raw)
}

/// A signed checkpoint with its root, or its witness's cosignature,
/// changed.
fn tamper_note(lie: &str, note: &str) -> String {
    let mut lines: Vec<String> = note.split('\n').map(str::to_string).collect();
    match lie {
        "root" => lines[2] = flip_b64(&lines[2], 0),
        "cosignature" => {
            if let Some(l) = lines
                .iter_mut()
                .find(|l| l.starts_with("\u{2014} witness."))
            {
                let (head, sig) = l.rsplit_once(' ').unwrap();
                *l = format!("{head} {}", flip_b64(sig, 40));
            }
        }
        _ => {}
    }
    lines.join("\n")
}

fn tamper(lie: &str, path: &str, body: Vec<u8>) -> Vec<u8> {
    if path == "/checkpoint" {
        return tamper_note(lie, &String::from_utf8(body).unwrap()).into_bytes();
    }
    if !path.starts_with("/v1/entries/") {
        return body;
    }
    let Ok(mut v) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    match lie {
        "proof" => {
            let h = v["inclusion_proof"][0].as_str().unwrap().to_string();
            v["inclusion_proof"][0] = json!(flip_b64(&h, 5));
        }
        "entry" => {
            let e = v["entry"].as_str().unwrap().to_string();
            v["entry"] = json!(flip_b64(&e, 20));
        }
        "root" | "cosignature" => {
            let note = v["checkpoint"].as_str().unwrap().to_string();
            v["checkpoint"] = json!(tamper_note(lie, &note));
        }
        _ => {}
    }
    serde_json::to_vec(&v).unwrap()
}

/// The page, given the reader's policy, checks the checkpoint, its
/// cosignature and each entry's inclusion itself, and says so apart from
/// the server's claims; behind a proxy that alters a proof, a root, an
/// entry's byte or a cosignature, it shows each as not verified. Away
/// from a secure context it says it cannot verify, and why.
#[test]
fn the_page_verifies_for_itself_and_catches_a_lying_server() {
    let Some(exe) = needed_chromium() else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let key = common::log_init(dir, "r.db", "log.pem", "test.example/page");
    let mut lines = Vec::new();
    for n in 0..6 {
        lines.extend_from_slice(&serving::receipt(n));
        lines.push(b'\n');
    }
    std::fs::write(dir.join("r.jsonl"), lines).unwrap();
    common::log_append_lines(dir, "r.db", "r.jsonl");
    let w = common::chit_in(dir, &["keygen", "--out", "w.pem"], None);
    assert_eq!(w.code, 0);
    let w = common::witness_as(dir, "r.db", "w.pem", "witness.example/w", &key, "w.json");
    assert_eq!(w.code, 0, "{}", w.stderr);
    let wkey = common::printed(&w.stdout, "witness key: ");
    let policy = format!("log {key}\nwitness W {wkey}\nquorum W\n");
    let server = serving::start(
        dir,
        &[
            "serve",
            "--store",
            "r.db",
            "--quiet",
            "--listen",
            "127.0.0.1:0",
        ],
        &[],
        Stdio::null(),
    );
    let mode = Arc::new(Mutex::new(String::from("honest")));
    let proxy = lying_proxy(server.addr.clone(), mode.clone());
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser-screenshots");
    let mut b = Browser::launch_with(
        &exe,
        &dir.join("profile"),
        shots,
        &["--host-resolver-rules=MAP chit.test 127.0.0.1"],
    );
    let url = format!("http://{proxy}/");
    b.call("Page.navigate", json!({"url": url}));
    b.wait_for("document.body.dataset.ready === '1'");
    // No key given: nothing is called verified.
    assert_eq!(
        b.eval("document.querySelector('#checkpoint-check').dataset.verified"),
        json!("none")
    );
    let shown = b.eval("document.querySelector('#policy-shown').textContent");
    assert!(shown.as_str().unwrap().contains("No key given"), "{shown}");
    // The reader gives the policy: the page shows which.
    b.eval(&format!(
        "document.querySelector('#policy-text').value = {}; document.querySelector('#policy-use').click(); true",
        json!(policy)
    ));
    b.wait_for("document.querySelector('#checkpoint-check').dataset.verified === 'yes'");
    let shown = b.eval("document.querySelector('#policy-shown').textContent");
    let shown = shown.as_str().unwrap();
    let log_hash = key.split('+').nth(1).unwrap();
    let w_hash = wkey.split('+').nth(1).unwrap();
    assert!(
        shown.contains(log_hash) && shown.contains(w_hash) && shown.contains("quorum"),
        "{shown}"
    );
    let check = b.eval("document.querySelector('#checkpoint-check').innerText");
    assert!(
        check.as_str().unwrap().contains("VERIFIED BY THIS BROWSER")
            && check
                .as_str()
                .unwrap()
                .contains("W (witness.example/w) cosigned it"),
        "{check}"
    );

    // Each lie, then the truth, on entry 3 of a page loaded anew (the
    // policy kept in the browser).
    let verdicts = |b: &mut Browser| -> Vec<(String, String)> {
        let v = b.eval(
            "[...document.querySelectorAll('#entry .browser-check .check')].map(c => [c.dataset.check, c.dataset.verified])",
        );
        serde_json::from_value(v).unwrap()
    };
    let expected: [(&str, [&str; 3], &str); 5] = [
        ("honest", ["yes", "yes", "yes"], "yes"),
        ("proof", ["yes", "yes", "no"], "yes"),
        ("entry", ["yes", "yes", "no"], "yes"),
        ("root", ["no", "none", "no"], "no"),
        ("cosignature", ["no", "no", "no"], "no"),
    ];
    for (lie, [checkpoint, cosignatures, inclusion], head) in expected {
        *mode.lock().unwrap() = lie.to_string();
        b.call("Page.navigate", json!({"url": "about:blank"}));
        b.call("Page.navigate", json!({"url": format!("{url}#/entry/3")}));
        b.wait_for("document.body.dataset.ready === '1' && document.querySelector('#entry').dataset.entry === '3' && document.querySelector('#entry .browser-check') && document.querySelector('#entry .browser-check').dataset.done === '1'");
        b.wait_for(&format!(
            "document.querySelector('#checkpoint-check').dataset.verified === '{head}'"
        ));
        let got = verdicts(&mut b);
        let want: Vec<(String, String)> = [
            ("checkpoint", checkpoint),
            ("cosignatures", cosignatures),
            ("inclusion", inclusion),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        assert_eq!(got, want, "the page, served {lie}");
        let text = b.eval("document.querySelector('#entry').innerText");
        let text = text.as_str().unwrap();
        if lie == "honest" {
            assert!(!text.contains("NOT VERIFIED"), "{text}");
            assert!(text.contains("is in the log"), "{text}");
        } else {
            assert!(text.contains("NOT VERIFIED"), "served {lie}: {text}");
        }
        // The server's verdict stays apart, marked as its claim.
        assert!(
            text.contains("The server's verdict (its claim: not checked by this browser)"),
            "{text}"
        );
        b.screenshot(&format!("page-checks-{lie}"));
    }

    // Asked for by its content address, another genuine entry answered:
    // its proof holds, but its bytes are not that address's.
    let address = chit_core::digest::sha256_hex(&serving::receipt(3));
    *mode.lock().unwrap() = "swap".into();
    b.call("Page.navigate", json!({"url": "about:blank"}));
    b.call(
        "Page.navigate",
        json!({"url": format!("{url}#/entry/sha256:{address}")}),
    );
    b.wait_for("document.body.dataset.ready === '1' && !!document.querySelector('#entry .browser-check') && document.querySelector('#entry .browser-check').dataset.done === '1'");
    let got = verdicts(&mut b);
    assert_eq!(
        got[2],
        ("inclusion".to_string(), "no".to_string()),
        "{got:?}"
    );
    let text = b.eval("document.querySelector('#entry .browser-check').innerText");
    assert!(
        text.as_str()
            .unwrap()
            .contains(&format!("it is shown as sha256:{address}")),
        "{text}"
    );

    // Not a secure context (a host name that is not localhost, over plain
    // HTTP): the page says it cannot verify, and why.
    *mode.lock().unwrap() = "honest".into();
    let port = proxy.rsplit(':').next().unwrap();
    b.call(
        "Page.navigate",
        json!({"url": format!("http://chit.test:{port}/#/entry/3")}),
    );
    b.wait_for(
        "document.body.dataset.ready === '1' && !!document.querySelector('#entry .browser-check')",
    );
    assert_eq!(b.eval("window.isSecureContext"), json!(false));
    let check = b.eval("document.querySelector('#checkpoint-check').innerText");
    assert!(
        check.as_str().unwrap().contains("cannot verify")
            && check.as_str().unwrap().contains("secure context"),
        "{check}"
    );
    assert_eq!(
        b.eval("document.querySelector('#entry .browser-check .check').dataset.verified"),
        json!("none")
    );
    b.screenshot("page-checks-insecure");
    // No script failed (an altered entry is not JSON: the server's 400 for
    // its verdict is logged by the browser, and is no fault of the page).
    let faults: Vec<String> = b
        .errors()
        .into_iter()
        .filter(|e| !(e.starts_with("log:") && e.contains("/v1/verify")))
        .collect();
    assert!(faults.is_empty(), "{faults:?}");
}
