//! How a verdict is written: for a person, as JSON, or as Markdown.
//!
//! Human text is styled with the [`Palette`] the output chose (empty styles
//! when colour is off), so rendering never asks about the terminal and no
//! layer has to strip anything. JSON is `chit_core`'s own writer, byte for
//! byte what the core gives every front end.

use crate::cli::Format;
use crate::output::Palette;
use chit_core::kinds::run_receipt;
pub use chit_core::report::Status;
use chit_core::{Report, Val};
use std::fmt::Write;

/// What became of one input.
pub struct InputResult<'a> {
    pub file: &'a str,
    /// The line, with --lines.
    pub line: Option<usize>,
    /// The report, or why the input could not be read.
    pub result: Result<Report, String>,
    /// A signed receipt's art id.
    pub artifact_id: Option<String>,
}

impl InputResult<'_> {
    /// Its status: the report's, or unreadable.
    pub fn status(&self) -> Status {
        match &self.result {
            Err(_) => Status::Unreadable,
            Ok(r) => r.status(),
        }
    }
}

/// `receipt` is the run receipt itself (the payload, for a signed one),
/// for Markdown's grade, checks and gaps.
pub fn render(o: &InputResult, receipt: Option<Val>, format: Format, p: &Palette) -> String {
    match format {
        Format::Human => human(o, p),
        Format::Json => json_line(o),
        Format::Markdown => markdown(o, receipt),
    }
}

fn label(o: &InputResult) -> String {
    match o.line {
        Some(n) => format!("{}:{n}", o.file),
        None => o.file.to_string(),
    }
}

/// Text made safe for a terminal (the core's one escape for control
/// characters, which findings' messages already went through).
pub fn escape(s: &str) -> std::borrow::Cow<'_, str> {
    chit_core::report::escape_controls(s)
}

fn human(o: &InputResult, p: &Palette) -> String {
    let Palette {
        good, bad, rule, ..
    } = *p;
    let mut s = String::with_capacity(64);
    let label = label(o);
    let name = escape(&label);
    let (style, word) = match o.status() {
        Status::Valid => (good, "VALID"),
        Status::Signed => (p.warn, "SIGNED"),
        Status::Unchecked => (p.warn, "UNCHECKED"),
        Status::Invalid => (bad, "INVALID"),
        Status::Unreadable => (bad, "UNREADABLE"),
    };
    let _ = writeln!(s, "{style}{word}{style:#} {name}");
    match &o.result {
        Err(why) => {
            let why = escape(why);
            let _ = writeln!(s, "  {bad}error{bad:#} {rule}read{rule:#}: {why}");
        }
        Ok(r) => finding_lines(&mut s, r, p),
    }
    s
}

/// A check across documents (a packet stream, a recompute result against
/// its packet, a rebind): `VALID stream NAME (detail)` and findings, a
/// Markdown heading and table, or one JSON line.
pub fn cross(
    out: &mut dyn std::io::Write,
    format: Format,
    c: &chit_core::across::CrossReport,
    p: &Palette,
) -> std::io::Result<()> {
    let what = c.subject.name();
    match format {
        Format::Json => {
            let mut line = Vec::with_capacity(128);
            chit_core::report::json::cross_line(what, &c.name, c.status, &c.report, &mut line);
            out.write_all(&line)
        }
        Format::Markdown => {
            let mut s = String::new();
            let verdict = match c.status {
                Status::Valid => "✅ valid",
                Status::Invalid => "❌ invalid",
                Status::Signed => "⚠️ signed (not every part checked)",
                _ => "⚠️ unchecked (its members did not verify)",
            };
            let mut title = what.to_string();
            if let Some(first) = title.get_mut(..1) {
                first.make_ascii_uppercase();
            }
            let _ = write!(s, "### {title} {}", code(&c.name));
            if !c.detail.is_empty() {
                let _ = write!(s, " ({})", cell(&c.detail));
            }
            let _ = writeln!(s, " — {verdict}\n");
            finding_table(&mut s, &c.report);
            out.write_all(s.as_bytes())
        }
        Format::Human => {
            let mut s = String::new();
            let verdict = match c.status {
                Status::Valid => format!("{}VALID{:#}", p.good, p.good),
                Status::Invalid => format!("{}INVALID{:#}", p.bad, p.bad),
                Status::Signed => format!("{}SIGNED{:#}", p.warn, p.warn),
                _ => format!("{}UNCHECKED{:#}", p.warn, p.warn),
            };
            let _ = write!(s, "{verdict} {what} {}", escape(&c.name));
            if !c.detail.is_empty() {
                let _ = write!(s, " ({})", escape(&c.detail));
            }
            s.push('\n');
            finding_lines(&mut s, &c.report, p);
            out.write_all(s.as_bytes())
        }
    }
}

/// The `  error RULE: message` and `  warning RULE: message` lines of a report.
fn finding_lines(s: &mut String, r: &Report, p: &Palette) {
    let Palette {
        bad, warn, rule, ..
    } = *p;
    for f in &r.errors {
        let _ = writeln!(
            s,
            "  {bad}error{bad:#} {rule}{}{rule:#}: {}",
            f.rule,
            escape(&f.message)
        );
    }
    for f in &r.warnings {
        let _ = writeln!(
            s,
            "  {warn}warning{warn:#} {rule}{}{rule:#}: {}",
            f.rule,
            escape(&f.message)
        );
    }
}

/// How many inputs and checks across inputs came out how.
#[derive(Clone, Copy, Default)]
pub struct Summary {
    pub valid: usize,
    /// Signed, payload not checked.
    pub signed: usize,
    /// Own rules only: what it claims was not recomputed.
    pub unchecked: usize,
    pub invalid: usize,
    pub unreadable: usize,
    /// Checks across inputs (streams, rebinds, recompute results, …); the
    /// unchecked ones are those whose members did not all verify.
    pub across_valid: usize,
    pub across_invalid: usize,
    /// Not every part of them checked.
    pub across_signed: usize,
    pub across_unchecked: usize,
}

impl Summary {
    pub fn inputs(&self) -> usize {
        self.valid + self.signed + self.unchecked + self.invalid + self.unreadable
    }
}

/// The summary line: `3 inputs: 3 valid, 0 invalid, 0 unreadable`, with
/// `, 2 signed (payload not checked)` after the valid ones where there were
/// any, and `; checks across inputs: 0 valid, 1 invalid` where there were
/// any (with `, 1 unchecked (members did not verify)` where some were).
pub fn summary(t: &Summary, p: &Palette) -> String {
    let Palette {
        good, bad, warn, ..
    } = *p;
    let total = t.inputs();
    let noun = if total == 1 { "input" } else { "inputs" };
    let part = |n: usize, what: &str| {
        if n > 0 {
            format!(", {bad}{n} {what}{bad:#}")
        } else {
            format!(", {n} {what}")
        }
    };
    let mut s = format!("{total} {noun}: {good}{} valid{good:#}", t.valid);
    if t.signed > 0 {
        let _ = write!(
            s,
            ", {warn}{} signed (payload not checked){warn:#}",
            t.signed
        );
    }
    if t.unchecked > 0 {
        let _ = write!(
            s,
            ", {warn}{} unchecked (not recomputed){warn:#}",
            t.unchecked
        );
    }
    s.push_str(&part(t.invalid, "invalid"));
    s.push_str(&part(t.unreadable, "unreadable"));
    if t.across_valid + t.across_invalid + t.across_signed + t.across_unchecked > 0 {
        let _ = write!(
            s,
            "; checks across inputs: {good}{} valid{good:#}",
            t.across_valid
        );
        if t.across_signed > 0 {
            let _ = write!(
                s,
                ", {warn}{} signed (not all checked){warn:#}",
                t.across_signed
            );
        }
        s.push_str(&part(t.across_invalid, "invalid"));
        if t.across_unchecked > 0 {
            let _ = write!(
                s,
                ", {warn}{} unchecked (members did not verify){warn:#}",
                t.across_unchecked
            );
        }
    }
    s
}

/// The summary as the last line of a Markdown comment.
pub fn markdown_summary(t: &Summary) -> String {
    let plain = summary(t, &Palette::plain());
    match plain.split_once(": ") {
        Some((head, rest)) => format!("**{head}:** {rest}"),
        None => plain,
    }
}

/// One line of `--json`, as `chit_core::report::json` writes it.
fn json_line(o: &InputResult) -> String {
    let mut out = Vec::with_capacity(256);
    chit_core::report::json::verdict_line(
        Some(o.file),
        o.line,
        o.artifact_id.as_deref(),
        o.result.as_ref().map_err(String::as_str),
        &mut out,
    );
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

fn markdown(o: &InputResult, receipt: Option<Val>) -> String {
    let mut s = String::new();
    let name = label(o);
    let report = match &o.result {
        Err(why) => {
            let _ = writeln!(s, "### ❌ {} — unreadable\n\n{}\n", code(&name), cell(why));
            return s;
        }
        Ok(r) => r,
    };
    let verdict = match report.status() {
        Status::Valid => "✅ valid",
        Status::Signed => "🔏 signed, payload not checked",
        Status::Unchecked => "⚠️ not recomputed (give the request)",
        Status::Invalid | Status::Unreadable => "❌ invalid",
    };
    let rc = receipt.and_then(|v| run_receipt::Receipt::view_checked(report, v));
    let signed = match &o.artifact_id {
        Some(art) => format!(" (signed, {})", cell(art)),
        None => String::new(),
    };
    match rc {
        Some(rc) => {
            let _ = writeln!(
                s,
                "### Run receipt {}{signed} — grade **{}**, {verdict}\n",
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
            let _ = writeln!(s, "### {kind} {}{signed} — {verdict}\n", code(&name));
        }
    }
    finding_table(&mut s, report);
    s
}

/// A report's findings as a Markdown table (nothing when there are none).
fn finding_table(s: &mut String, report: &Report) {
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
}

fn duration(ms: i64) -> String {
    let secs = ms / 1000;
    match secs {
        0..=59 => format!("{:.1} s", ms as f64 / 1000.0),
        60..=3599 => format!("{} min {} s", secs / 60, secs % 60),
        _ => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
    }
}
