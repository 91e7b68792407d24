//! How an outcome is written: for a person, as JSON, or as Markdown.
//!
//! Human output carries ANSI styles; the writer strips them unless colour is
//! wanted (see `main`), so rendering never has to ask about the terminal.

use crate::cli::Format;
use crate::verify::Outcome;
use anstyle::{AnsiColor, Style};
use chit_core::kinds::run_receipt;
use chit_core::{Doc, Finding};
use std::fmt::Write;

const GOOD: Style = AnsiColor::Green.on_default().bold();
const BAD: Style = AnsiColor::Red.on_default().bold();
const WARN: Style = AnsiColor::Yellow.on_default();
const RULE: Style = Style::new().bold();

pub fn render(o: &Outcome, doc: Option<&Doc>, format: Format) -> String {
    match format {
        Format::Human => human(o),
        Format::Json => json_line(o),
        Format::Markdown => markdown(o, doc),
    }
}

fn label(o: &Outcome) -> String {
    match o.line {
        Some(n) => format!("{}:{n}", o.file),
        None => o.file.to_string(),
    }
}

fn human(o: &Outcome) -> String {
    let mut s = String::with_capacity(64);
    let name = label(o);
    match &o.result {
        Err(why) => {
            let _ = writeln!(s, "{BAD}UNREADABLE{BAD:#} {name}");
            let _ = writeln!(s, "  {BAD}error{BAD:#} {RULE}read{RULE:#}: {why}");
        }
        Ok(r) => {
            if r.valid() {
                let _ = writeln!(s, "{GOOD}VALID{GOOD:#} {name}");
            } else {
                let _ = writeln!(s, "{BAD}INVALID{BAD:#} {name}");
            }
            finding_lines(&mut s, r);
        }
    }
    s
}

/// A check across documents (a packet stream, a recompute result against
/// its packet): `VALID stream NAME (detail)` and findings, or one JSON line
/// `{"stream"|"recompute": NAME, "valid", "errors", "warnings"}`.
pub fn cross(
    out: &mut dyn std::io::Write,
    format: Format,
    what: &str,
    name: &str,
    detail: &str,
    r: &chit_core::Report,
) -> std::io::Result<()> {
    match format {
        Format::Json => {
            let mut line = Vec::with_capacity(128);
            line.extend_from_slice(b"{\"");
            line.extend_from_slice(what.as_bytes());
            line.extend_from_slice(b"\":");
            js(name, &mut line);
            verdict_fields(r, &mut line);
            line.extend_from_slice(b"}\n");
            out.write_all(&line)
        }
        _ => {
            let mut s = String::new();
            let verdict = if r.valid() {
                format!("{GOOD}VALID{GOOD:#}")
            } else {
                format!("{BAD}INVALID{BAD:#}")
            };
            let _ = writeln!(s, "{verdict} {what} {name} ({detail})");
            finding_lines(&mut s, r);
            out.write_all(s.as_bytes())
        }
    }
}

/// The `  error RULE: message` and `  warning RULE: message` lines of a report.
fn finding_lines(s: &mut String, r: &chit_core::Report) {
    for f in &r.errors {
        let _ = writeln!(
            s,
            "  {BAD}error{BAD:#} {RULE}{}{RULE:#}: {}",
            f.rule, f.message
        );
    }
    for f in &r.warnings {
        let _ = writeln!(
            s,
            "  {WARN}warning{WARN:#} {RULE}{}{RULE:#}: {}",
            f.rule, f.message
        );
    }
}

pub fn summary(total: usize, valid: usize, invalid: usize, unreadable: usize) -> String {
    let noun = if total == 1 { "input" } else { "inputs" };
    let mut s = format!("{total} {noun}: {GOOD}{valid} valid{GOOD:#}");
    let part = |n: usize, what: &str| {
        if n > 0 {
            format!(", {BAD}{n} {what}{BAD:#}")
        } else {
            format!(", {n} {what}")
        }
    };
    s.push_str(&part(invalid, "invalid"));
    s.push_str(&part(unreadable, "unreadable"));
    s
}

/// A JSON string, as chit writes every string (JSON.stringify's escapes).
fn js(s: &str, out: &mut Vec<u8>) {
    chit_core::canon::write_string(s, out);
}

fn findings(list: &[Finding], out: &mut Vec<u8>) {
    out.push(b'[');
    for (i, f) in list.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"rule\":");
        js(f.rule, out);
        out.extend_from_slice(b",\"message\":");
        js(&f.message, out);
        out.extend_from_slice(b",\"path\":");
        js(&f.path, out);
        out.push(b'}');
    }
    out.push(b']');
}

/// The `,"valid":…,"errors":[…],"warnings":[…]` members of a JSON line.
fn verdict_fields(r: &chit_core::Report, out: &mut Vec<u8>) {
    out.extend_from_slice(if r.valid() {
        b",\"valid\":true"
    } else {
        b",\"valid\":false"
    });
    out.extend_from_slice(b",\"errors\":");
    findings(&r.errors, out);
    out.extend_from_slice(b",\"warnings\":");
    findings(&r.warnings, out);
}

/// One line of `--json`, its fields in the documented order:
/// file, line (with --lines), kind, valid, errors, warnings.
fn json_line(o: &Outcome) -> String {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"file\":");
    js(o.file, &mut out);
    if let Some(n) = o.line {
        out.extend_from_slice(format!(",\"line\":{n}").as_bytes());
    }
    if let Some(art) = &o.artifact_id {
        out.extend_from_slice(b",\"artifact_id\":");
        js(art, &mut out);
    }
    out.extend_from_slice(b",\"kind\":");
    match &o.result {
        Err(why) => {
            out.extend_from_slice(b"null,\"valid\":false,\"errors\":");
            findings(&[Finding::new("read", "", why.as_str())], &mut out);
            out.extend_from_slice(b",\"warnings\":[]");
        }
        Ok(r) => {
            if r.kind.is_empty() {
                out.extend_from_slice(b"null");
            } else {
                js(r.kind, &mut out);
            }
            verdict_fields(r, &mut out);
        }
    }
    out.extend_from_slice(b"}\n");
    String::from_utf8(out).unwrap_or_default()
}

/// Text from a receipt, made inert in Markdown: one line, HTML and
/// mentions as entities, Markdown punctuation escaped. A receipt cannot put
/// a tag, a link, an image or an @mention into a pull-request comment.
fn cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            c if c.is_control() => out.push(' '),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '@' => out.push_str("&#64;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '|' | '!' | '#' | '~' | ':' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Text as an inline code span, whatever backticks it holds. Inside a span
/// nothing is Markdown or HTML; only pipes (which end a table cell) and line
/// breaks are changed.
fn code(s: &str) -> String {
    let body: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .replace('|', "\\|");
    let mut fence = String::from("`");
    while body.contains(fence.as_str()) {
        fence.push('`');
    }
    let pad = if body.starts_with('`') || body.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

fn markdown(o: &Outcome, doc: Option<&Doc>) -> String {
    let mut s = String::new();
    let name = label(o);
    let report = match &o.result {
        Err(why) => {
            let _ = writeln!(s, "### ❌ {} — unreadable\n\n{}\n", code(&name), cell(why));
            return s;
        }
        Ok(r) => r,
    };
    let verdict = if report.valid() {
        "✅ valid"
    } else {
        "❌ invalid"
    };
    let rc = doc.filter(|_| report.kind == run_receipt::KIND && !report.breaks("schema"));
    match rc.and_then(|d| run_receipt::Receipt::view(d.root())) {
        Some(rc) => {
            let _ = writeln!(
                s,
                "### Run receipt {} — grade **{}**, {verdict}\n",
                code(&name),
                rc.grade
            );
            let outcome = match &rc.verdict {
                None => "no reviewers".to_string(),
                Some(v) => format!("{} ({} of {} agreed)", v.outcome, v.agreed, v.reviewers),
            };
            let t = &rc.totals;
            let _ = writeln!(
                s,
                "**Verdict:** {outcome} · **Checks:** {} ran, {} passed, {} failing now · **Cost:** ${:.4} · **Time:** {}\n",
                t.ran,
                t.passed,
                t.failing_now,
                rc.cost_usd,
                duration(rc.duration_ms)
            );
            if !rc.checks.is_empty() {
                s.push_str("| Command | By | Where | Exit | State |\n|---|---|---|---|---|\n");
                for c in &rc.checks {
                    let mut by = c.by.map(cell).unwrap_or_else(|| "unknown".into());
                    if !c.also_by.is_empty() {
                        let also: Vec<String> = c.also_by.iter().map(|a| cell(a)).collect();
                        let _ = write!(by, " (also {})", also.join(", "));
                    }
                    let exit = c.exit_code.map_or("—".to_string(), |e| format!("{e}"));
                    let deployed = if c.deployed { ", deployed" } else { "" };
                    let _ = writeln!(
                        s,
                        "| {} | {by} | {}{deployed} | {exit} | {} |",
                        code(c.command),
                        c.where_,
                        c.state
                    );
                }
                s.push('\n');
            }
            if rc.gaps.is_empty() {
                s.push_str("**Gaps:** none stated.\n\n");
            } else {
                s.push_str("**Gaps** (not verified):\n");
                for g in &rc.gaps {
                    let _ = writeln!(s, "- {}", cell(g));
                }
                s.push('\n');
            }
        }
        None => {
            let kind = if report.kind.is_empty() {
                "Document"
            } else {
                report.kind
            };
            let _ = writeln!(s, "### {kind} {} — {verdict}\n", code(&name));
        }
    }
    if !report.errors.is_empty() || !report.warnings.is_empty() {
        s.push_str("| | Rule | Finding |\n|---|---|---|\n");
        for f in &report.errors {
            let _ = writeln!(s, "| error | {} | {} |", f.rule, cell(&f.message));
        }
        for f in &report.warnings {
            let _ = writeln!(s, "| warning | {} | {} |", f.rule, cell(&f.message));
        }
        s.push('\n');
    }
    s
}

fn duration(ms: i64) -> String {
    let secs = ms / 1000;
    match secs {
        0..=59 => format!("{:.1} s", ms as f64 / 1000.0),
        60..=3599 => format!("{} min {} s", secs / 60, secs % 60),
        _ => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
    }
}
