//! The GitHub Action (`action.yml` at the repository root), run for real:
//! every `run:` step of the composite action, in order, with its inputs and
//! expressions substituted and the runner's files (`GITHUB_OUTPUT`,
//! `GITHUB_STEP_SUMMARY`) and variables provided, against a loopback
//! server that answers as GitHub's REST API does for issue comments (list,
//! create, update) and records every request. `uses:` steps need GitHub:
//! the cache step is emulated as a hit (it restores the chit this test
//! runs, with the source key the action's own first step computed), or as
//! a miss.

mod common;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch};
use axum::{Json, Router};
use common::{chit_in, repo};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

const TOKEN: &str = "ghs_test_token";
const MARKER: &str = "<!-- chit-verify-receipts -->";

// ── A loopback GitHub REST API for issue comments ─────────────────────────

#[derive(Clone, Debug)]
struct Seen {
    method: &'static str,
    path: String,
    body: Option<Value>,
}

#[derive(Default)]
struct Api {
    comments: Vec<Value>,
    seen: Vec<Seen>,
    /// Answer writes (POST, PATCH) with this status instead.
    fail_writes: Option<u16>,
    /// Answer a list with these bytes (status 200) instead.
    list_body: Option<String>,
    /// Give every list this Link header instead.
    list_link: Option<String>,
}

type Shared = Arc<Mutex<Api>>;

fn authorised(h: &HeaderMap) -> bool {
    h.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"))
}

fn refused(status: u16, message: &str) -> Response {
    (
        StatusCode::from_u16(status).unwrap(),
        Json(json!({"message": message, "documentation_url": "https://docs.github.com/rest"})),
    )
        .into_response()
}

/// Records a request, then answers 401 without the token and, for a write
/// under `fail_writes`, that status; else the API's state to answer from.
fn record<'a>(
    s: &'a Shared,
    h: &HeaderMap,
    method: &'static str,
    path: String,
    body: Option<&Value>,
) -> Result<std::sync::MutexGuard<'a, Api>, Box<Response>> {
    let mut api = s.lock().unwrap();
    api.seen.push(Seen {
        method,
        path,
        body: body.cloned(),
    });
    if !authorised(h) {
        return Err(Box::new(refused(401, "Bad credentials")));
    }
    match api.fail_writes {
        Some(status) if method != "GET" => Err(Box::new(refused(
            status,
            "Resource not accessible by integration",
        ))),
        _ => Ok(api),
    }
}

async fn list(
    State(s): State<Shared>,
    UrlPath((owner, repo, n)): UrlPath<(String, String, u64)>,
    Query(q): Query<BTreeMap<String, String>>,
    h: HeaderMap,
) -> Response {
    let query: Vec<String> = q.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let path = format!(
        "/repos/{owner}/{repo}/issues/{n}/comments?{}",
        query.join("&")
    );
    let api = match record(&s, &h, "GET", path, None) {
        Ok(api) => api,
        Err(r) => return *r,
    };
    if let Some(body) = &api.list_body {
        return (StatusCode::OK, body.clone()).into_response();
    }
    if let Some(link) = &api.list_link {
        let mut headers = HeaderMap::new();
        headers.insert("link", link.parse().unwrap());
        return (headers, Json(json!([]))).into_response();
    }
    // GitHub's paging: per_page (default 30, at most 100), page from 1,
    // and a Link header to the next page.
    let per: usize = q
        .get("per_page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(30)
        .min(100);
    let page: usize = q
        .get("page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(1)
        .max(1);
    let all: Vec<Value> = api
        .comments
        .iter()
        .filter(|c| c["issue"] == n)
        .cloned()
        .collect();
    let start = (page - 1) * per;
    let items: Vec<Value> = all.iter().skip(start).take(per).cloned().collect();
    let mut headers = HeaderMap::new();
    if start + per < all.len() {
        let host = h.get("host").and_then(|v| v.to_str().ok()).unwrap_or("");
        let next = format!(
            "<http://{host}/repos/{owner}/{repo}/issues/{n}/comments?per_page={per}&page={}>; rel=\"next\"",
            page + 1
        );
        headers.insert("link", next.parse().unwrap());
    }
    (headers, Json(Value::Array(items))).into_response()
}

async fn create(
    State(s): State<Shared>,
    UrlPath((owner, repo, n)): UrlPath<(String, String, u64)>,
    h: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/issues/{n}/comments");
    let mut api = match record(&s, &h, "POST", path, Some(&body)) {
        Ok(api) => api,
        Err(r) => return *r,
    };
    let id = 9000 + api.comments.len() as u64;
    let comment = json!({
        "id": id,
        "issue": n,
        "body": body["body"],
        "user": {"login": "github-actions[bot]", "type": "Bot"},
        "html_url": format!("https://github.example/{owner}/{repo}/pull/{n}#issuecomment-{id}"),
    });
    api.comments.push(comment.clone());
    (StatusCode::CREATED, Json(comment)).into_response()
}

async fn update(
    State(s): State<Shared>,
    UrlPath((owner, repo, id)): UrlPath<(String, String, u64)>,
    h: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/issues/comments/{id}");
    let mut api = match record(&s, &h, "PATCH", path, Some(&body)) {
        Ok(api) => api,
        Err(r) => return *r,
    };
    match api.comments.iter_mut().find(|c| c["id"] == id) {
        Some(c) => {
            c["body"] = body["body"].clone();
            Json(c.clone()).into_response()
        }
        None => refused(404, "Not Found"),
    }
}

/// Serves the API on a loopback port; returns its base URL.
fn github(state: Shared) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let app = Router::new()
                .route(
                    "/repos/{owner}/{repo}/issues/{n}/comments",
                    get(list).post(create),
                )
                .route("/repos/{owner}/{repo}/issues/comments/{id}", patch(update))
                .with_state(state);
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    format!("http://{addr}")
}

// ── Running the composite action's steps ──────────────────────────────────

/// What one run of the action gave.
struct ActionRun {
    /// The exit status of the step that failed, or 0.
    code: i32,
    /// Every step's standard output and error, in order.
    log: String,
    /// The action's outputs, as its `outputs:` map them.
    outputs: BTreeMap<String, String>,
    summary: String,
}

/// A job's workspace and runner: the event, the folders, the cache.
struct Runner {
    dir: tempfile::TempDir,
    api_url: String,
    token: String,
    event_name: String,
    /// The cache step restores chit (a hit) or nothing (a miss).
    cache_hit: bool,
    /// PATH for the steps.
    path: String,
}

impl Runner {
    fn new(api_url: &str) -> Runner {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["workspace", "home", "temp"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let event = json!({
            "action": "synchronize",
            "number": 7,
            "pull_request": {"number": 7, "head": {"sha": "4f1c2ab90d3e"}},
            "repository": {"full_name": "octo/app"},
        });
        std::fs::write(dir.path().join("event.json"), event.to_string()).unwrap();
        Runner {
            dir,
            api_url: api_url.to_owned(),
            token: TOKEN.to_owned(),
            event_name: "pull_request".into(),
            cache_hit: true,
            path: std::env::var("PATH").unwrap_or_default(),
        }
    }

    fn workspace(&self) -> PathBuf {
        self.dir.path().join("workspace")
    }

    /// Runs the action with `inputs` (the `with:` of a workflow step).
    fn run(&self, inputs: &[(&str, &str)]) -> ActionRun {
        let action: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(repo().join("action.yml")).unwrap())
                .unwrap();
        assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
        // Inputs: the workflow's, else the action's defaults; a required
        // one missing is the runner's error.
        let mut given: BTreeMap<String, String> = BTreeMap::new();
        for (name, spec) in action["inputs"].as_mapping().unwrap() {
            let name = name.as_str().unwrap().to_owned();
            let value = match inputs.iter().find(|(n, _)| *n == name) {
                Some((_, v)) => v.to_string(),
                None => {
                    assert_ne!(
                        spec["required"].as_bool(),
                        Some(true),
                        "input {name} is required"
                    );
                    spec["default"].as_str().unwrap_or("").to_owned()
                }
            };
            given.insert(name, value);
        }
        for (n, _) in inputs {
            assert!(given.contains_key(*n), "the action has no input {n}");
        }
        let summary = self.dir.path().join("summary.md");
        let _ = std::fs::remove_file(&summary);
        let mut steps_out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        let mut log = String::new();
        let mut code = 0;
        let base_env: Vec<(String, String)> = vec![
            (
                "HOME".into(),
                self.dir.path().join("home").display().to_string(),
            ),
            ("PATH".into(), self.path.clone()),
            ("CI".into(), "true".into()),
            ("GITHUB_ACTIONS".into(), "true".into()),
            ("GITHUB_ACTION_PATH".into(), repo().display().to_string()),
            (
                "GITHUB_WORKSPACE".into(),
                self.workspace().display().to_string(),
            ),
            ("GITHUB_EVENT_NAME".into(), self.event_name.clone()),
            (
                "GITHUB_EVENT_PATH".into(),
                self.dir.path().join("event.json").display().to_string(),
            ),
            ("GITHUB_REPOSITORY".into(), "octo/app".into()),
            ("GITHUB_API_URL".into(), self.api_url.clone()),
            ("GITHUB_SERVER_URL".into(), "https://github.example".into()),
            ("GITHUB_RUN_ID".into(), "4242".into()),
            ("GITHUB_STEP_SUMMARY".into(), summary.display().to_string()),
            ("RUNNER_OS".into(), "Linux".into()),
            (
                "RUNNER_TEMP".into(),
                self.dir.path().join("temp").display().to_string(),
            ),
        ];
        let steps = action["runs"]["steps"].as_sequence().unwrap();
        for (i, step) in steps.iter().enumerate() {
            let eval = |text: &str| expand(text, &given, &steps_out, &self.token);
            if let Some(uses) = step["uses"].as_str() {
                assert!(
                    uses.starts_with("actions/cache@"),
                    "a uses: step this test cannot stand in for: {uses}"
                );
                // The cache: restores what an earlier job saved at `path`.
                let root = PathBuf::from(eval(step["with"]["path"].as_str().unwrap()));
                let key = eval(step["with"]["key"].as_str().unwrap());
                assert!(key.starts_with("chit-Linux-X64-"), "{key}");
                if self.cache_hit {
                    std::fs::create_dir_all(root.join("bin")).unwrap();
                    std::fs::copy(env!("CARGO_BIN_EXE_chit"), root.join("bin/chit")).unwrap();
                    let source = &steps_out["source"]["key"];
                    std::fs::write(root.join("source-key"), format!("{source}\n")).unwrap();
                }
                continue;
            }
            let script = eval(step["run"].as_str().expect("a run: step"));
            assert_eq!(step["shell"].as_str(), Some("bash"), "step {i}");
            let output = self.dir.path().join(format!("output-{i}"));
            std::fs::write(&output, "").unwrap();
            let file = self.dir.path().join(format!("step-{i}.sh"));
            std::fs::write(&file, script).unwrap();
            let mut cmd = Command::new("bash");
            cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
                .arg(&file)
                .current_dir(self.workspace())
                .env_clear()
                .envs(base_env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .env("GITHUB_OUTPUT", &output);
            if let Some(env) = step["env"].as_mapping() {
                for (k, v) in env {
                    cmd.env(k.as_str().unwrap(), eval(v.as_str().unwrap_or("")));
                }
            }
            let out = cmd.output().unwrap();
            log.push_str(&String::from_utf8_lossy(&out.stdout));
            log.push_str(&String::from_utf8_lossy(&out.stderr));
            if let Some(id) = step["id"].as_str() {
                steps_out.insert(id.to_owned(), read_outputs(&output));
            }
            if !out.status.success() {
                code = out.status.code().unwrap_or(-1);
                break;
            }
        }
        let outputs = action["outputs"]
            .as_mapping()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                let value = expand(
                    v["value"].as_str().unwrap(),
                    &given,
                    &steps_out,
                    &self.token,
                );
                (k.as_str().unwrap().to_owned(), value)
            })
            .collect();
        ActionRun {
            code,
            log,
            outputs,
            summary: std::fs::read_to_string(&summary).unwrap_or_default(),
        }
    }
}

/// `${{ … }}` expressions: the inputs, earlier steps' outputs, the
/// runner's OS and the job's token; any other is this test's failure.
fn expand(
    text: &str,
    inputs: &BTreeMap<String, String>,
    steps: &BTreeMap<String, BTreeMap<String, String>>,
    token: &str,
) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${{") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find("}}").expect("an expression ends") + at;
        let expr = rest[at + 3..end].trim();
        let parts: Vec<&str> = expr.split('.').collect();
        let value = match parts.as_slice() {
            ["inputs", name] => {
                let v = inputs
                    .get(*name)
                    .unwrap_or_else(|| panic!("no input {name}"));
                expand(v, inputs, steps, token)
            }
            ["steps", id, "outputs", name] => steps
                .get(*id)
                .and_then(|o| o.get(*name))
                .cloned()
                .unwrap_or_default(),
            ["runner", "os"] => "Linux".into(),
            ["runner", "arch"] => "X64".into(),
            ["github", "token"] => token.to_owned(),
            _ => panic!("an expression this test does not know: {expr}"),
        };
        out.push_str(&value);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// A `$GITHUB_OUTPUT` file: `name=value` lines and `name<<DELIM` blocks.
fn read_outputs(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delim)) = line.split_once("<<") {
            let mut value = Vec::new();
            for l in lines.by_ref() {
                if l == delim {
                    break;
                }
                value.push(l);
            }
            out.insert(name.to_owned(), value.join("\n"));
        } else if let Some((name, value)) = line.split_once('=') {
            out.insert(name.to_owned(), value.to_owned());
        }
    }
    out
}

// ── Receipts for the workspace ────────────────────────────────────────────

/// Copies an example into the workspace under `to`.
fn put(r: &Runner, example: &str, to: &str) {
    let dest = r.workspace().join(to);
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::copy(repo().join("examples").join(example), dest).unwrap();
}

/// A run receipt whose text tries to be HTML, a link and a mention,
/// sealed so that it is valid.
fn hostile_receipt(r: &Runner, to: &str) {
    let mut v: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("examples/run-receipts/agreed-verified.json"))
            .unwrap(),
    )
    .unwrap();
    v["checks"][0]["command"] = "npm test <img src=x onerror=alert(1)>".into();
    v["gaps"] =
        json!(["[claim your prize](https://evil.example/x) cc @octocat <script>alert(1)</script>"]);
    let dest = r.workspace().join(to);
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::write(&dest, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let sealed = chit_in(r.workspace().as_path(), &["seal", to], None);
    assert_eq!(sealed.code, 0, "{}", sealed.stderr);
}

fn comment_bodies(api: &Shared) -> Vec<String> {
    api.lock()
        .unwrap()
        .comments
        .iter()
        .filter(|c| c["issue"] == 7 && c["body"].as_str().unwrap_or("").starts_with(MARKER))
        .map(|c| c["body"].as_str().unwrap().to_owned())
        .collect()
}

fn writes(api: &Shared) -> Vec<Seen> {
    api.lock()
        .unwrap()
        .seen
        .iter()
        .filter(|s| s.method != "GET")
        .cloned()
        .collect()
}

/// A pull request that already has 130 other comments: the action's
/// comment is found past the first page.
fn api_with_history() -> Shared {
    let api = Shared::default();
    {
        let mut a = api.lock().unwrap();
        for i in 0..130u64 {
            a.comments.push(json!({
                "id": 100 + i, "issue": 7, "body": format!("review note {i}"),
                "user": {"login": "reviewer", "type": "User"},
            }));
        }
        // Another pull request's receipts comment is not this one's.
        a.comments.push(json!({
            "id": 99, "issue": 8, "body": format!("{MARKER}\nold"),
            "user": {"login": "github-actions[bot]", "type": "Bot"},
        }));
    }
    api
}

// ── The tests ─────────────────────────────────────────────────────────────

#[test]
fn one_comment_is_posted_then_updated_in_place() {
    let api = api_with_history();
    let r = Runner::new(&github(api.clone()));
    put(
        &r,
        "run-receipts/agreed-verified.json",
        "receipts/agreed.json",
    );
    put(
        &r,
        "run-receipts/not-unanimous-failing.json",
        "receipts/nested/failing.json",
    );
    hostile_receipt(&r, "receipts/hostile.json");

    let first = r.run(&[("paths", "receipts/**/*.json")]);
    assert_eq!(first.code, 0, "{}", first.log);
    assert!(first.log.contains("chit from the cache"), "{}", first.log);
    let w = writes(&api);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].method, "POST");
    assert_eq!(w[0].path, "/repos/octo/app/issues/7/comments");
    let bodies = comment_bodies(&api);
    assert_eq!(bodies.len(), 1);
    let body = &bodies[0];
    assert_eq!(w[0].body.as_ref().unwrap()["body"], body.as_str());
    // The grade, the checks and the gaps of each receipt.
    for want in [
        "grade **verified**",
        "grade **failed**",
        "`npm run typecheck`",
        "`pytest tests/test_migrate.py -q`",
        "**Gaps** (not verified):",
        "Behaviour on the hosted database",
        "**3 inputs:** 3 valid, 0 invalid, 0 unreadable",
        "[this run](https://github.example/octo/app/actions/runs/4242)",
    ] {
        assert!(body.contains(want), "{want}: {body}");
    }
    // Receipt text is inert: no HTML, no link, no mention.
    for never in ["<script", "](https://evil", "@octocat"] {
        assert!(!body.contains(never), "{never}: {body}");
    }
    // A command is shown as code, where nothing is HTML.
    for line in body.lines().filter(|l| l.contains("<img")) {
        assert!(
            line.contains("| `npm test <img src=x onerror=alert(1)>` |"),
            "markup outside a code span: {line}"
        );
    }
    assert!(body.contains("&#64;octocat"), "{body}");
    // Past the first page of 100 comments.
    let gets: Vec<String> = api
        .lock()
        .unwrap()
        .seen
        .iter()
        .filter(|s| s.method == "GET")
        .map(|s| s.path.clone())
        .collect();
    assert_eq!(gets.len(), 2, "{gets:?}");
    assert!(gets[1].contains("page=2"), "{gets:?}");
    // The step summary and the outputs.
    assert!(
        first.summary.contains("grade **verified**"),
        "{}",
        first.summary
    );
    assert_eq!(first.outputs["valid"], "3");
    assert_eq!(first.outputs["invalid"], "0");
    assert_eq!(first.outputs["unreadable"], "0");
    assert!(
        first.outputs["comment-url"].ends_with("#issuecomment-9131"),
        "{:?}",
        first.outputs
    );

    // The second run, with one receipt now unreadable: the same comment,
    // updated; none added.
    std::fs::write(
        r.workspace().join("receipts/agreed.json"),
        "{\"receiptVersion\": ",
    )
    .unwrap();
    let second = r.run(&[("paths", "receipts/**/*.json")]);
    assert_eq!(second.code, 1, "{}", second.log);
    let w = writes(&api);
    assert_eq!(w.len(), 2, "{w:?}");
    assert_eq!(w[1].method, "PATCH");
    assert_eq!(w[1].path, "/repos/octo/app/issues/comments/9131");
    assert!(w[1].body.as_ref().unwrap()["body"]
        .as_str()
        .unwrap()
        .starts_with(MARKER));
    let bodies = comment_bodies(&api);
    assert_eq!(bodies.len(), 1, "still one comment on the pull request");
    assert!(bodies[0].contains("unreadable"), "{}", bodies[0]);
    assert!(
        bodies[0].contains("**3 inputs:** 2 valid, 0 invalid, 1 unreadable"),
        "{}",
        bodies[0]
    );
    assert_eq!(second.outputs["unreadable"], "1");
    assert!(
        second.log.contains("receipts did not verify"),
        "{}",
        second.log
    );
    // The other pull request's comment was never touched.
    assert_eq!(
        api.lock()
            .unwrap()
            .comments
            .iter()
            .filter(|c| c["id"] == 99 && c["body"] == format!("{MARKER}\nold"))
            .count(),
        1
    );
}

#[test]
fn the_exit_status_follows_fail_on() {
    let api = Shared::default();
    let r = Runner::new(&github(api.clone()));
    put(&r, "run-receipts/agreed-verified.json", "ok.json");
    put(&r, "lattice/unsealed.json", "bad.json");
    // A receipt with no digest: valid, with a warning (D2).
    let mut v: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("examples/run-receipts/agreed-verified.json"))
            .unwrap(),
    )
    .unwrap();
    v.as_object_mut().unwrap().remove("digest");
    std::fs::write(r.workspace().join("warned.json"), v.to_string()).unwrap();

    for (paths, fail_on, code) in [
        ("ok.json bad.json", "invalid", 1),
        ("ok.json bad.json", "never", 0),
        ("ok.json bad.json", "warning", 1),
        ("ok.json warned.json", "invalid", 0),
        ("ok.json warned.json", "warning", 1),
        ("ok.json warned.json", "never", 0),
        ("ok.json", "warning", 0),
    ] {
        let run = r.run(&[("paths", paths), ("fail-on", fail_on), ("comment", "false")]);
        assert_eq!(
            run.code, code,
            "{paths} under fail-on {fail_on}: {}",
            run.log
        );
        assert!(run.summary.contains(MARKER), "{}", run.summary);
    }
    let run = r.run(&[
        ("paths", "ok.json bad.json"),
        ("fail-on", "never"),
        ("comment", "false"),
    ]);
    assert_eq!(run.outputs["valid"], "1");
    assert_eq!(run.outputs["invalid"], "1");
    assert!(run.summary.contains("| error | X4 |"), "{}", run.summary);
    let run = r.run(&[("paths", "warned.json"), ("comment", "false")]);
    assert_eq!(run.outputs["warnings"], "1");
    // comment: false, and auto outside a pull request: nothing posted.
    assert!(api.lock().unwrap().seen.is_empty());
    let mut push = Runner::new(&r.api_url);
    push.event_name = "push".into();
    put(&push, "run-receipts/agreed-verified.json", "ok.json");
    let run = push.run(&[("paths", "ok.json")]);
    assert_eq!(run.code, 0, "{}", run.log);
    assert!(api.lock().unwrap().seen.is_empty());
    // Inputs the action cannot run with, each said, the step failed.
    for (inputs, says) in [
        (
            vec![("paths", "nothing/*.json")],
            "'nothing/*.json' matches no file",
        ),
        (
            vec![("paths", "ok.json"), ("fail-on", "sometimes")],
            "fail-on must be invalid, warning or never",
        ),
        (
            vec![("paths", "ok.json"), ("expect-count", "three")],
            "expect-count must be a whole number",
        ),
        (
            vec![("paths", "ok.json"), ("allow-unchecked", "yes")],
            "allow-unchecked must be true or false",
        ),
    ] {
        let run = r.run(&inputs);
        assert_eq!(run.code, 1, "{inputs:?}: {}", run.log);
        assert!(
            run.log.contains("::error::") && run.log.contains(says),
            "{says}: {}",
            run.log
        );
        assert!(run.summary.contains("Not verified"), "{}", run.summary);
    }
}

#[test]
fn the_gates_reach_chit() {
    let r = Runner::new("http://127.0.0.1:9");
    // A signed packet: invalid without its key, valid with the trust file.
    put(&r, "packets/p0.env.json", "p/p0.env.json");
    put(&r, "packets/p1.env.json", "p/p1.env.json");
    put(&r, "packets/trust.toml", "trust.toml");
    let run = r.run(&[("paths", "p/*.json"), ("comment", "false")]);
    assert_eq!(run.code, 1, "{}", run.log);
    let run = r.run(&[
        ("paths", "p/*.json"),
        ("trust", "trust.toml"),
        ("comment", "false"),
    ]);
    assert_eq!(run.code, 0, "{}", run.log);
    assert_eq!(run.outputs["valid"], "2");
    // The stream should hold three: the tail is missing (P8).
    let run = r.run(&[
        ("paths", "p/*.json"),
        ("trust", "trust.toml"),
        ("expect-count", "3"),
        ("comment", "false"),
    ]);
    assert_eq!(run.code, 1, "{}", run.log);
    assert!(run.summary.contains("P8"), "{}", run.summary);
    assert!(
        run.log.contains("1 check(s) across inputs failed"),
        "{}",
        run.log
    );
    // require-authorized: a run receipt is not a Reason certificate.
    put(&r, "run-receipts/agreed-verified.json", "ok.json");
    let run = r.run(&[
        ("paths", "ok.json"),
        ("require-authorized", "true"),
        ("comment", "false"),
    ]);
    assert_eq!(run.code, 1, "{}", run.log);
    assert!(
        run.summary
            .contains("_require-authorized: every input must be a Zerker Reason certificate"),
        "{}",
        run.summary
    );
    // A Reason bundle (certificate with its request) is authorized.
    put(&r, "reason/bundle.json", "bundle.json");
    let run = r.run(&[
        ("paths", "bundle.json"),
        ("require-authorized", "true"),
        ("comment", "false"),
    ]);
    assert_eq!(run.code, 0, "{}{}", run.log, run.summary);
}

#[test]
fn a_comment_that_cannot_be_posted_is_said_and_the_summary_written() {
    let api = Shared::default();
    let url = github(api.clone());
    let mut r = Runner::new(&url);
    put(&r, "run-receipts/agreed-verified.json", "ok.json");
    // No token.
    r.token = String::new();
    let run = r.run(&[("paths", "ok.json")]);
    assert_eq!(
        run.code, 0,
        "the verdicts decide the exit status: {}",
        run.log
    );
    assert!(
        run.log
            .contains("::error::the receipts comment was not posted: no token"),
        "{}",
        run.log
    );
    assert!(
        run.summary.contains("grade **verified**"),
        "{}",
        run.summary
    );
    assert!(
        run.summary
            .contains("The pull-request comment was not posted"),
        "{}",
        run.summary
    );
    assert!(api.lock().unwrap().seen.is_empty());
    // A wrong token: GitHub's 401, said.
    r.token = "wrong".into();
    let run = r.run(&[("paths", "ok.json")]);
    assert!(run.log.contains("HTTP 401: Bad credentials"), "{}", run.log);
    assert!(run.summary.contains("grade **verified**"));
    // A token that may not write (a fork's): 403, and what to do.
    r.token = TOKEN.into();
    api.lock().unwrap().fail_writes = Some(403);
    let run = r.run(&[("paths", "ok.json")]);
    assert_eq!(run.code, 0);
    assert!(
        run.log
            .contains("HTTP 403: Resource not accessible by integration"),
        "{}",
        run.log
    );
    assert!(run.log.contains("pull-requests: write"), "{}", run.log);
    // The API is down.
    let mut down = Runner::new("http://127.0.0.1:9");
    down.token = TOKEN.into();
    put(&down, "run-receipts/agreed-verified.json", "ok.json");
    let run = down.run(&[("paths", "ok.json")]);
    assert_eq!(run.code, 0);
    assert!(run.log.contains("::error::the receipts comment was not posted: GET http://127.0.0.1:9/repos/octo/app/issues/7/comments"), "{}", run.log);
    assert!(run.summary.contains("grade **verified**"));
}

#[test]
fn a_cache_miss_without_cargo_says_what_to_add() {
    let mut r = Runner::new("http://127.0.0.1:9");
    r.cache_hit = false;
    // A PATH with bash, python3 and coreutils but no cargo.
    let bin = r.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in [
        "bash",
        "python3",
        "sha256sum",
        "cut",
        "find",
        "sort",
        "cat",
        "rm",
        "env",
        "uname",
    ] {
        let found = Command::new("bash")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        let at = String::from_utf8_lossy(&found.stdout).trim().to_owned();
        assert!(!at.is_empty(), "{tool} is on this machine");
        std::os::unix::fs::symlink(at, bin.join(tool)).unwrap();
    }
    r.path = bin.display().to_string();
    put(&r, "run-receipts/agreed-verified.json", "ok.json");
    let run = r.run(&[("paths", "ok.json")]);
    assert_eq!(run.code, 1, "{}", run.log);
    assert!(
        run.log.contains("::error::cargo is not on this runner"),
        "{}",
        run.log
    );
}

#[test]
fn the_example_workflow_runs_the_action_as_it_is() {
    let text = std::fs::read_to_string(repo().join("examples/github/receipts.yml")).unwrap();
    let workflow: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(
        workflow["permissions"]["pull-requests"].as_str(),
        Some("write")
    );
    assert!(
        workflow["on"]["pull_request"].is_null() || workflow["on"]["pull_request"].is_mapping()
    );
    let steps = workflow["jobs"]["verify"]["steps"].as_sequence().unwrap();
    let step = steps
        .iter()
        .find(|s| s["uses"].as_str().is_some_and(|u| u.ends_with("/chit@v1")))
        .expect("a step that uses the action");
    let with: Vec<(String, String)> = step["with"]
        .as_mapping()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().unwrap().to_owned(),
                v.as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // Its inputs, as written, on a repository laid out as it says.
    let api = Shared::default();
    let r = Runner::new(&github(api.clone()));
    put(
        &r,
        "run-receipts/agreed-verified.json",
        "receipts/run-1/receipt.json",
    );
    put(
        &r,
        "run-receipts/not-unanimous-failing.json",
        "receipts/run-2/receipt.json",
    );
    let inputs: Vec<(&str, &str)> = with.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let run = r.run(&inputs);
    assert_eq!(run.code, 0, "{}", run.log);
    assert_eq!(run.outputs["valid"], "2", "{}", run.summary);
    // The JSON Lines glob matched nothing here: said, not fatal.
    assert!(
        run.log
            .contains("::warning::paths: 'receipts/**/*.jsonl' matches no file"),
        "{}",
        run.log
    );
    assert_eq!(comment_bodies(&api).len(), 1);
}

#[test]
fn a_marked_comment_by_someone_else_is_never_taken_over() {
    let api = Shared::default();
    api.lock().unwrap().comments.push(json!({
        "id": 5, "issue": 7, "body": format!("{MARKER}\n## Receipts\n\nAll receipts valid"),
        "user": {"login": "mallory", "type": "User"},
    }));
    let r = Runner::new(&github(api.clone()));
    put(&r, "lattice/unsealed.json", "bad.json");
    let run = r.run(&[("paths", "bad.json")]);
    assert_eq!(run.code, 1, "{}", run.log);
    let w = writes(&api);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(
        w[0].method, "POST",
        "a comment of its own, not mallory's: {w:?}"
    );
    let a = api.lock().unwrap();
    assert!(a.comments[0]["body"]
        .as_str()
        .unwrap()
        .ends_with("All receipts valid"));
    assert!(a.comments[1]["body"].as_str().unwrap().contains("X4"));
}

#[test]
fn links_and_paths_out_of_the_workspace_are_not_followed() {
    let r = Runner::new("http://127.0.0.1:9");
    put(&r, "run-receipts/agreed-verified.json", "receipts/ok.json");
    let ws = r.workspace();
    // A loop (two links to the folder itself) and a linked file.
    std::os::unix::fs::symlink(".", ws.join("receipts/a")).unwrap();
    std::os::unix::fs::symlink(".", ws.join("receipts/b")).unwrap();
    std::os::unix::fs::symlink("../../home/secret.json", ws.join("receipts/linked.json")).unwrap();
    std::fs::write(r.dir.path().join("home/secret.json"), "{}").unwrap();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join(".git/x.json"), "{}").unwrap();
    let started = std::time::Instant::now();
    let run = r.run(&[("paths", "**/*.json"), ("comment", "false")]);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert_eq!(run.outputs["valid"], "1", "{}", run.summary);
    assert!(!run.summary.contains("secret"), "{}", run.summary);
    // The matched link is not read, and is no pass: unreadable, named, and
    // the step fails (under fail-on never, it reports only).
    assert_eq!(run.code, 1, "{}", run.log);
    assert_eq!(run.outputs["unreadable"], "1", "{}", run.summary);
    assert!(
        run.summary.contains("1 matched link, not read")
            && run.summary.contains("- `receipts/linked.json`"),
        "{}",
        run.summary
    );
    assert!(
        run.log
            .contains("::error::receipts/linked.json is a link: not followed, not verified"),
        "{}",
        run.log
    );
    let run = r.run(&[
        ("paths", "**/*.json"),
        ("comment", "false"),
        ("fail-on", "never"),
    ]);
    assert_eq!(run.code, 0, "{}", run.log);
    // Only the link matched: still reported, still not a pass.
    let run = r.run(&[("paths", "receipts/linked.json"), ("comment", "false")]);
    assert_eq!(run.code, 1, "{}", run.log);
    assert_eq!(run.outputs["valid"], "0", "{}", run.summary);
    let run = r.run(&[("paths", "../home/*.json"), ("comment", "false")]);
    assert_eq!(run.code, 1);
    assert!(run.log.contains("leaves the workspace"), "{}", run.log);
}

#[test]
fn an_api_that_answers_badly_is_said_never_a_crash() {
    let api = Shared::default();
    let url = github(api.clone());
    let r = Runner::new(&url);
    put(&r, "run-receipts/agreed-verified.json", "ok.json");
    // Not JSON.
    api.lock().unwrap().list_body = Some("<html>maintenance</html>".into());
    let run = r.run(&[("paths", "ok.json")]);
    assert_eq!(run.code, 0, "{}", run.log);
    assert!(run.log.contains("answered what is not JSON"), "{}", run.log);
    assert!(!run.log.contains("Traceback"), "{}", run.log);
    // JSON, but not a list.
    api.lock().unwrap().list_body = Some("42".into());
    let run = r.run(&[("paths", "ok.json")]);
    assert!(run.log.contains("not a list of comments"), "{}", run.log);
    assert!(!run.log.contains("Traceback"), "{}", run.log);
    // A next page that is the same page, for ever: at most 100 read.
    {
        let mut a = api.lock().unwrap();
        a.list_body = None;
        a.list_link = Some(format!(
            "<{url}/repos/octo/app/issues/7/comments?per_page=100>; rel=\"next\""
        ));
        a.seen.clear();
    }
    let run = r.run(&[("paths", "ok.json")]);
    assert_eq!(run.code, 0, "{}", run.log);
    let gets = api
        .lock()
        .unwrap()
        .seen
        .iter()
        .filter(|s| s.method == "GET")
        .count();
    assert_eq!(gets, 100);
    // A next page on another host: the token is not sent there.
    {
        let mut a = api.lock().unwrap();
        a.list_link = Some("<http://evil.example/steal>; rel=\"next\"".into());
        a.seen.clear();
    }
    let run = r.run(&[("paths", "ok.json")]);
    assert!(run.log.contains("not followed"), "{}", run.log);
    assert!(writes(&api).is_empty());
}
