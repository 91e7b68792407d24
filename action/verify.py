#!/usr/bin/env python3
"""The action's verify step: chit verify over the inputs' globs, the
Markdown report in the step summary, the counts as step outputs, and one
pull-request comment, created the first time and updated in place after
(found by its hidden marker). Python 3 standard library only.

Environment: CHIT (the binary), INPUT_PATHS, INPUT_TRUST,
INPUT_EXPECT_COUNT, INPUT_REQUIRE_AUTHORIZED, INPUT_ALLOW_UNCHECKED,
INPUT_COMMENT, INPUT_FAIL_ON, GITHUB_TOKEN, and the runner's GITHUB_*
variables (GITHUB_API_URL is honoured, for GitHub Enterprise).

Exit status: 1 when the verdicts fail under fail-on, or the inputs are
wrong (a bad input value, globs that match no file at all); 0 otherwise. A
comment that cannot be posted is an error annotation in the log and a line
in the step summary; it does not change the exit status, which follows the
verdicts.
"""

import http.client
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request

MARKER = "<!-- chit-verify-receipts -->"
# GitHub refuses a comment body over 65,536 characters.
COMMENT_LIMIT = 65000
# And a step summary over 1 MiB (bytes).
SUMMARY_LIMIT = 1000000
# The most bytes one API answer may take, and the most pages of comments
# read.
API_ANSWER_LIMIT = 32 << 20
PAGE_LIMIT = 100


class Stop(Exception):
    """An input the step cannot run with: said, and the step fails."""


def env(name, default=""):
    return os.environ.get(name, default)


def flag(name):
    value = env(name, "false").strip().lower()
    if value not in ("true", "false"):
        raise Stop(f"{input_name(name)} must be true or false, not {value!r}")
    return value == "true"


def input_name(var):
    return var[len("INPUT_"):].lower().replace("_", "-")


def annotate(level, message):
    # Workflow commands: one line, their own characters escaped.
    text = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    print(f"::{level}::{text}", flush=True)


def append(path_var, text):
    path = env(path_var)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)


def set_output(name, value):
    append("GITHUB_OUTPUT", f"{name}={value}\n")


def glob_regex(pattern):
    """A glob as a regular expression over paths with `/`: `**/` any
    folders (none included), `*` and `?` within one name, `[...]` a class."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end].replace("\\", "\\\\")
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"[{body}]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def workspace_files(root):
    """Every regular file and every link under `root`, as paths relative
    to it, in order: (files, links). Links are not followed: a pull request
    can add one, and it may lead out of the workspace or round in a loop."""
    files, links = [], []
    for folder, dirs, names in os.walk(root, followlinks=False):
        # Git's own folder holds no receipts.
        dirs[:] = sorted(d for d in dirs if d != ".git")
        rel = os.path.relpath(folder, root)
        for name in sorted(names):
            full = os.path.join(folder, name)
            path = name if rel == "." else os.path.join(rel, name).replace(os.sep, "/")
            if os.path.islink(full):
                links.append(path)
            elif os.path.isfile(full):
                files.append(path)
    return files, links


def expand(patterns_text):
    """The files matching each glob, in order, each once, and the links
    they match (which are not read). A glob that matches nothing is said;
    when none matches anything, nothing was checked, and that is an error.
    Globs are relative to the workspace and stay inside it."""
    patterns = patterns_text.split()
    if not patterns:
        raise Stop("paths is empty: give the globs of the receipts to verify")
    for pattern in patterns:
        parts = pattern.replace(os.sep, "/").split("/")
        if os.path.isabs(pattern) or ".." in parts:
            raise Stop(f"paths: {pattern!r} leaves the workspace: give globs relative to it")
    every, every_link = workspace_files(".")
    files, links = [], []
    for pattern in patterns:
        rx = glob_regex(pattern.replace(os.sep, "/").removeprefix("./"))
        matched = [p for p in every if rx.match(p)]
        matched_links = [p for p in every_link if rx.match(p)]
        if not matched and not matched_links:
            annotate("warning", f"paths: {pattern!r} matches no file")
        # In the order first matched, each once (dicts keep order).
        files = list(dict.fromkeys(files + matched))
        links = list(dict.fromkeys(links + matched_links))
    if not files and not links:
        raise Stop(f"paths: no file matches {' '.join(patterns)!r} in {os.getcwd()}: nothing was verified")
    return files, links


def links_report(links):
    """The links a glob matched: named, each not read, so never a pass."""
    if not links:
        return ""
    lines = [f"- `{p.replace('`', '')}`" for p in links]
    return (
        f"\n### ❌ {len(links)} matched {'link' if len(links) == 1 else 'links'}, not read\n\n"
        "A link is not followed (it could lead anywhere); each counts as unreadable. "
        "Verify the file it points to.\n\n" + "\n".join(lines) + "\n"
    )


def chit_args():
    args = []
    trust = env("INPUT_TRUST").strip()
    if trust:
        args += ["--trust", trust]
    count = env("INPUT_EXPECT_COUNT").strip()
    if count:
        if not count.isdigit():
            raise Stop(f"expect-count must be a whole number, not {count!r}")
        args += ["--expect-count", count]
    if flag("INPUT_REQUIRE_AUTHORIZED"):
        args.append("--require-authorized")
    if flag("INPUT_ALLOW_UNCHECKED"):
        args.append("--allow-unchecked")
    return args


def run_chit(args, files, fmt):
    chit = env("CHIT") or "chit"
    cmd = [chit, "verify", "--format", fmt, "--color", "never"] + args + ["--"] + files
    # chit needs no token: it is not passed on.
    quiet = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "INPUT_GITHUB_TOKEN")}
    done = subprocess.run(cmd, capture_output=True, text=True, env=quiet)
    if done.returncode not in (0, 1, 2) or (done.returncode == 2 and not done.stdout):
        raise Stop(f"chit verify failed (exit {done.returncode}): {done.stderr.strip()}")
    return done


def counts(json_lines, allow_unchecked):
    """valid, invalid, unreadable (inputs), checks across inputs that
    failed, and warnings, from chit's JSON Lines."""
    valid = invalid = unreadable = across_invalid = warnings = 0
    for line in json_lines.splitlines():
        if not line.strip():
            continue
        try:
            o = json.loads(line)
        except ValueError:
            o = None
        if not isinstance(o, dict):
            raise Stop(f"chit verify wrote a line that is not a JSON object: {line[:200]!r}")
        warnings += len(o.get("warnings") or [])
        if "file" not in o:
            across_invalid += 0 if o.get("valid") else 1
            continue
        status = o.get("status")
        if status == "valid" or (status in ("signed", "unchecked") and allow_unchecked):
            valid += 1
        elif status == "unreadable":
            unreadable += 1
        else:
            invalid += 1
    return valid, invalid, unreadable, across_invalid, warnings


def run_link():
    server, repo, run = env("GITHUB_SERVER_URL"), env("GITHUB_REPOSITORY"), env("GITHUB_RUN_ID")
    if server and repo and run:
        return f"{server}/{repo}/actions/runs/{run}"
    return ""


def report(markdown):
    link = run_link()
    footer = f"\n\n<sub>chit verify · [this run]({link})</sub>\n" if link else "\n"
    return f"{MARKER}\n## Receipts\n\n{markdown.rstrip()}{footer}"


def truncated(body, limit, where, measure=len):
    """`body`, cut at a line so that `measure` of it (characters, or bytes)
    is within `limit`, saying where the rest is."""
    if measure(body) <= limit:
        return body
    note = f"\n\n… (cut: {where})\n"
    budget = limit - measure(note)
    lo, hi = 0, len(body)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if measure(body[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return body[: max(body.rfind("\n", 0, lo), 0)] + note


def utf8_len(text):
    return len(text.encode("utf-8"))


# --- the pull request and its comment -------------------------------------


def pull_request_number():
    path = env("GITHUB_EVENT_PATH")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            event = json.load(f)
    except (OSError, ValueError):
        return None
    pr = event.get("pull_request") or {}
    number = pr.get("number") or (event.get("issue") or {}).get("number")
    if (event.get("issue") or {}).get("pull_request") is None and not pr:
        return None
    return number if isinstance(number, int) else None


class ApiError(Exception):
    pass


def api(method, url, token, body=None):
    """One REST call: its JSON answer and its Link header. Any failure,
    however the server answers, is an ApiError that says what happened."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Accept", "application/vnd.github+json")
    req.add_header("Authorization", f"Bearer {token}")
    req.add_header("X-GitHub-Api-Version", "2022-11-28")
    req.add_header("User-Agent", "chit-verify-action")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            text = resp.read(API_ANSWER_LIMIT + 1)
            link = resp.headers.get("Link", "")
    except urllib.error.HTTPError as e:
        said = ""
        try:
            answer = json.loads(e.read(API_ANSWER_LIMIT))
            if isinstance(answer, dict) and isinstance(answer.get("message"), str):
                said = answer["message"][:200]
        except Exception:
            pass
        hint = {
            401: " (the token is not accepted)",
            403: " (the token may not write to pull requests: give the job `permissions: pull-requests: write`; a pull request from a fork gets a read-only token)",
            404: " (no such pull request, or the token cannot see the repository)",
        }.get(e.code, "")
        raise ApiError(f"{method} {url} answered HTTP {e.code}{': ' + said if said else ''}{hint}")
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as e:
        raise ApiError(f"{method} {url} failed: {getattr(e, 'reason', e)}")
    if len(text) > API_ANSWER_LIMIT:
        raise ApiError(f"{method} {url} answered more than {API_ANSWER_LIMIT} bytes")
    try:
        return (json.loads(text) if text else None), link
    except ValueError:
        raise ApiError(f"{method} {url} answered what is not JSON")


def next_page(link_header):
    for part in link_header.split(","):
        segs = part.split(";")
        if len(segs) >= 2 and segs[1].strip() == 'rel="next"':
            return segs[0].strip().strip("<>")
    return None


def ours(comment, author):
    """A comment this action posted: its marker, by the identity it posts
    as. Anyone may write the marker; only that author's comment is
    updated."""
    if not isinstance(comment, dict):
        return False
    user = comment.get("user") if isinstance(comment.get("user"), dict) else {}
    return str(comment.get("body", "")).startswith(MARKER) and user.get("login") == author


def upsert_comment(body):
    """Creates the comment, or updates the one this action posted before.
    Returns its address."""
    token = env("GITHUB_TOKEN")
    if not token:
        raise ApiError(
            "no token to post the comment with: github-token is empty (give it ${{ github.token }}, or set comment: false)"
        )
    repo = env("GITHUB_REPOSITORY")
    number = pull_request_number()
    if not repo or number is None:
        raise ApiError("not a pull request event: there is no pull request to comment on")
    author = env("INPUT_COMMENT_AUTHOR", "github-actions[bot]").strip() or "github-actions[bot]"
    base = env("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    url = f"{base}/repos/{repo}/issues/{number}/comments?per_page=100"
    existing = None
    for _ in range(PAGE_LIMIT):
        page, link = api("GET", url, token)
        if not isinstance(page, list):
            raise ApiError(f"GET {url} answered what is not a list of comments")
        existing = next((c for c in page if ours(c, author)), None)
        url = next_page(link)
        if existing is not None or url is None:
            break
        # The token goes only to the API it was given for.
        if not url.startswith(base + "/"):
            raise ApiError(f"the API's next page is elsewhere ({url}); not followed")
    if existing is not None:
        done, _ = api("PATCH", f"{base}/repos/{repo}/issues/comments/{existing.get('id')}", token, {"body": body})
        what = "updated the pull request's receipts comment"
    else:
        done, _ = api("POST", f"{base}/repos/{repo}/issues/{number}/comments", token, {"body": body})
        what = "posted the receipts comment"
    where = done.get("html_url", "") if isinstance(done, dict) else ""
    if not isinstance(where, str):
        where = ""
    print(f"{what}: {where or '(no address given)'}")
    return where


def should_comment():
    choice = env("INPUT_COMMENT", "auto").strip().lower()
    if choice not in ("auto", "true", "false"):
        raise Stop(f"comment must be auto, true or false, not {choice!r}")
    if choice == "auto":
        return env("GITHUB_EVENT_NAME") in ("pull_request", "pull_request_target")
    return choice == "true"


def main():
    fail_on = env("INPUT_FAIL_ON", "invalid").strip().lower()
    try:
        if fail_on not in ("invalid", "warning", "never"):
            raise Stop(f"fail-on must be invalid, warning or never, not {fail_on!r}")
        args = chit_args()
        commenting = should_comment()
        files, links = expand(env("INPUT_PATHS"))
        as_json = run_chit(args, files, "json") if files else None
        as_markdown = run_chit(args, files, "markdown") if files else None
        valid, invalid, unreadable, across_invalid, warnings = counts(
            as_json.stdout if as_json else "", "--allow-unchecked" in args
        )
    except Stop as e:
        annotate("error", str(e))
        append("GITHUB_STEP_SUMMARY", f"## Receipts\n\nNot verified: {e}\n")
        return 1
    unreadable += len(links)
    for p in links:
        annotate("error", f"{p} is a link: not followed, not verified")
    for name, value in (
        ("valid", valid),
        ("invalid", invalid),
        ("unreadable", unreadable),
        ("warnings", warnings),
    ):
        set_output(name, value)
    markdown = (as_markdown.stdout if as_markdown else "") + links_report(links)
    if "--require-authorized" in args:
        # Said, so a reader of the comment knows why a receipt of another
        # kind fails here.
        markdown = (
            "_require-authorized: every input must be a Zerker Reason certificate that "
            "recomputes from its request as authorized; any other input is an error._\n\n"
            + markdown
        )
        print("require-authorized: every input must be an authorized Zerker Reason certificate")
    body = report(markdown)
    append("GITHUB_STEP_SUMMARY", truncated(body, SUMMARY_LIMIT, "the step summary's limit", utf8_len) + "\n")
    if as_markdown and as_markdown.stdout.strip():
        print(as_markdown.stdout.rstrip().splitlines()[-1])
    if commenting:
        try:
            url = upsert_comment(truncated(body, COMMENT_LIMIT, "the full report is in the run's step summary"))
            set_output("comment-url", url)
        except Exception as e:  # an ApiError, or anything else: said, never a crash
            annotate("error", f"the receipts comment was not posted: {e}")
            append("GITHUB_STEP_SUMMARY", f"\nThe pull-request comment was not posted: {e}\n")
    failed = (as_json is not None and as_json.returncode != 0) or bool(links)
    if fail_on == "never":
        return 0
    if fail_on == "warning" and warnings > 0:
        annotate("error", f"{warnings} warning(s), and fail-on is warning")
        return 1
    if failed:
        what = f"{invalid} invalid, {unreadable} unreadable"
        if across_invalid:
            what += f", {across_invalid} check(s) across inputs failed"
        annotate("error", f"receipts did not verify: {what}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
