//! `chit verify`: read every input, check it on all cores, report in order.

use crate::cli::{Format, VerifyArgs};
use crate::inputs::{self, Source};
use crate::render;
use chit_core::streams::{Facts, Gathered, Origin};
use chit_core::trust::Trust;
use chit_core::{Doc, Kind, Limits, Report};
use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use rayon::prelude::*;
use std::io::{IsTerminal, Write};
use std::sync::Arc;

/// What became of one input.
pub struct Outcome<'a> {
    pub file: &'a str,
    /// The line, with --lines.
    pub line: Option<usize>,
    /// The report, or why the input could not be read.
    pub result: Result<Report, String>,
    /// A signed receipt's art id.
    pub artifact_id: Option<String>,
}

/// What every check in one run shares.
pub struct Settings<'a> {
    pub kind: Option<Kind>,
    pub limits: Limits,
    pub trust: Option<&'a Trust>,
    pub threshold: usize,
    pub format: Format,
    pub quiet: bool,
    /// A numeric lineage transcript (`--transcript`).
    pub transcript: Option<&'a chit_core::kinds::numeric_lineage::transcript::Transcript>,
    /// A Reason request (`--request`) and call (`--call`).
    pub request: Option<&'a Doc<'a>>,
    pub call: Option<&'a Doc<'a>>,
    pub require_authorized: bool,
}

impl Outcome<'_> {
    pub fn status(&self) -> Status {
        match &self.result {
            Err(_) => Status::Unreadable,
            Ok(r) if r.valid() => Status::Valid,
            Ok(_) => Status::Invalid,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Valid,
    Invalid,
    Unreadable,
}

#[derive(Default)]
struct Tally {
    valid: usize,
    invalid: usize,
    unreadable: usize,
}

/// How many inputs are checked between writes: output flows while memory
/// stays bounded.
const BATCH: usize = 4096;

pub fn run(args: &VerifyArgs, out: &mut dyn Write) -> Result<i32, crate::Fail> {
    let trust = match &args.trust {
        None => None,
        Some(path) => Some(read_trust(path)?),
    };
    let transcript = match &args.transcript {
        None => None,
        Some(path) => Some(crate::lineage::read_transcript(
            path,
            &args.limits.limits(),
        )?),
    };
    let limits = args.limits.limits();
    let read_doc = |path: &std::path::Path, what: &str| -> Result<Vec<u8>, crate::Fail> {
        inputs::read(&Source::File(path.to_path_buf()), limits.max_size).map_err(|why| {
            crate::Fail(
                2,
                format!("cannot read the {what} {}: {why}", path.display()),
            )
        })
    };
    let request_bytes = args
        .request
        .as_deref()
        .map(|p| read_doc(p, "request"))
        .transpose()?;
    let call_bytes = args
        .call
        .as_deref()
        .map(|p| read_doc(p, "call"))
        .transpose()?;
    let request = parse_extra(&request_bytes, args.request.as_deref(), "request", &limits)?;
    let call = parse_extra(&call_bytes, args.call.as_deref(), "call", &limits)?;
    let extra = Extra {
        transcript: transcript.as_ref(),
        request: request.as_ref(),
        call: call.as_ref(),
    };
    run_with(args, trust.as_ref(), extra, out).map_err(crate::write_fail)
}

fn parse_extra<'a>(
    bytes: &'a Option<Vec<u8>>,
    path: Option<&std::path::Path>,
    what: &str,
    limits: &chit_core::Limits,
) -> Result<Option<Doc<'a>>, crate::Fail> {
    match (bytes, path) {
        (Some(b), Some(p)) => chit_core::json::parse(b, limits)
            .map(Some)
            .map_err(|e| crate::Fail(2, format!("cannot read the {what} {}: {e}", p.display()))),
        _ => Ok(None),
    }
}

/// What some kinds' checks use beyond the document.
struct Extra<'a> {
    transcript: Option<&'a chit_core::kinds::numeric_lineage::transcript::Transcript>,
    request: Option<&'a Doc<'a>>,
    call: Option<&'a Doc<'a>>,
}

/// Reads a trust file, or fails with exit 2 naming what is wrong.
pub fn read_trust(path: &std::path::Path) -> Result<Trust, crate::Fail> {
    let bytes = inputs::read(&Source::File(path.to_path_buf()), 1 << 20).map_err(|why| {
        crate::Fail(
            2,
            format!("cannot read trust file {}: {why}", path.display()),
        )
    })?;
    let text = String::from_utf8(bytes)
        .map_err(|_| crate::Fail(2, format!("trust file {} is not UTF-8", path.display())))?;
    Trust::parse(&text).map_err(|e| crate::Fail(2, format!("trust file {}: {e}", path.display())))
}

fn run_with(
    args: &VerifyArgs,
    trust: Option<&Trust>,
    extra: Extra,
    out: &mut dyn Write,
) -> std::io::Result<i32> {
    let format = if args.json {
        Format::Json
    } else {
        args.format.unwrap_or(Format::Human)
    };
    let limits = args.limits.limits();
    let settings = Settings {
        kind: args.kind,
        limits,
        trust,
        threshold: args.threshold as usize,
        format,
        quiet: args.quiet,
        transcript: extra.transcript,
        request: extra.request,
        call: extra.call,
        require_authorized: args.require_authorized,
    };
    let mut notes = Vec::new();
    let sources = inputs::expand(&args.inputs, &mut notes);
    for n in &notes {
        eprintln!("note: {n}");
    }
    let mut tally = Tally::default();
    let progress = progress_bar(if args.lines {
        None
    } else {
        Some(sources.len())
    });
    let labels: Vec<Arc<str>> = sources.iter().map(|s| Arc::from(s.label())).collect();
    let mut facts = Gathered::default();
    let mut emit = |status: Status,
                    rendered: &str,
                    f: Option<Facts>,
                    out: &mut dyn Write|
     -> std::io::Result<()> {
        match status {
            Status::Valid => tally.valid += 1,
            Status::Invalid => tally.invalid += 1,
            Status::Unreadable => tally.unreadable += 1,
        }
        if let Some(f) = f {
            facts.add(f);
        }
        out.write_all(rendered.as_bytes())
    };

    if args.lines {
        for (source, label) in sources.iter().zip(&labels) {
            let reader = match inputs::open(source) {
                Ok(r) => r,
                Err(why) => {
                    let (status, s) = finish(&unreadable(label, None, why), None, &settings);
                    emit(status, &s, None, out)?;
                    continue;
                }
            };
            // One thread reads the next batch while the pool checks this one.
            let mut lines = inputs::Lines::new(reader, limits.max_size);
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<inputs::Line>>(1);
            std::thread::scope(|scope| -> std::io::Result<()> {
                scope.spawn(move || loop {
                    let batch: Vec<inputs::Line> = lines.by_ref().take(BATCH).collect();
                    if batch.is_empty() || tx.send(batch).is_err() {
                        break;
                    }
                });
                for batch in rx {
                    let done: Vec<Done> = batch
                        .par_iter()
                        .map(|(n, line)| check(label, Some(*n), line.as_deref(), &settings))
                        .collect();
                    for (status, s, f) in done {
                        emit(status, &s, f, out)?;
                    }
                    progress.inc(batch.len() as u64);
                }
                Ok(())
            })?;
        }
    } else {
        let indexed: Vec<(&Source, &Arc<str>)> = sources.iter().zip(&labels).collect();
        for batch in indexed.chunks(BATCH) {
            let done: Vec<Done> = batch
                .par_iter()
                .map(|&(source, label)| {
                    let bytes = inputs::read(source, limits.max_size);
                    let r = check(label, None, bytes.as_deref(), &settings);
                    progress.inc(1);
                    r
                })
                .collect();
            for (status, s, f) in done {
                emit(status, &s, f, out)?;
            }
        }
    }
    progress.finish_and_clear();
    let failed_across = cross_checks(facts, args.expect_count, format, args.quiet, out)?;

    let total = tally.valid + tally.invalid + tally.unreadable;
    if format == Format::Human && (total > 1 || args.quiet) {
        writeln!(
            out,
            "{}",
            render::summary(total, tally.valid, tally.invalid, tally.unreadable)
        )?;
    }
    if total == 0 {
        eprintln!(
            "chit: no receipts found in the inputs given (folders are searched for *.json files)"
        );
        return Ok(2);
    }
    out.flush()?;
    Ok(if tally.unreadable > 0 {
        2
    } else if tally.invalid > 0 || failed_across > 0 {
        1
    } else {
        0
    })
}

/// The outcome's status and its rendering (empty where --quiet hides it).
fn finish(o: &Outcome, doc: Option<&Doc>, settings: &Settings) -> (Status, String) {
    let status = o.status();
    let shown = if settings.quiet && status == Status::Valid {
        String::new()
    } else {
        render::render(o, doc, settings.format)
    };
    (status, shown)
}

fn unreadable(file: &str, line: Option<usize>, why: String) -> Outcome<'_> {
    Outcome {
        file,
        line,
        result: Err(why),
        artifact_id: None,
    }
}

/// The art id a file name carries (`…art_<32 hex>…`), as Treeship files them.
fn art_in_name(file: &str) -> Option<&str> {
    let name = file.rsplit(['/', '\\']).next()?;
    let at = name.find("art_")?;
    let id = name.get(at..at + 36)?;
    id[4..]
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        .then_some(id)
}

/// Reads, checks and renders one document; the document lives only here.
fn check(
    file: &Arc<str>,
    line: Option<usize>,
    bytes: Result<&[u8], &String>,
    settings: &Settings,
) -> Done {
    let bytes = match bytes {
        Ok(b) => b,
        Err(why) => return no_facts(finish(&unreadable(file, line, why.clone()), None, settings)),
    };
    let source = || Origin::new(file.clone(), line);
    if let Some(done) = check_lattice(file, line, bytes, settings) {
        return done;
    }
    match chit_core::json::parse(bytes, &settings.limits) {
        Err(e) => {
            let why = e.starting_at_line(line.unwrap_or(1)).to_string();
            no_facts(finish(&unreadable(file, line, why), None, settings))
        }
        Ok(doc) if chit_core::envelope::looks_like_envelope(&doc) => {
            let policy = chit_core::statement::Policy {
                trust: settings.trust,
                threshold: settings.threshold,
                expected_art: if line.is_none() {
                    art_in_name(file)
                } else {
                    None
                },
                limits: &settings.limits,
                source: &source(),
                expected_kind: settings.kind.map(Kind::name),
            };
            let checked = chit_core::statement::check(&doc, &policy);
            let o = Outcome {
                file,
                line,
                result: Ok(checked.report),
                artifact_id: checked.ids.map(|i| i.artifact_id),
            };
            let (status, shown) = finish(&o, None, settings);
            (status, shown, checked.facts)
        }
        Ok(doc) => {
            let kind = settings.kind.or_else(|| Kind::detect(&doc));
            let report = match kind {
                // Its key may resolve through the trust file; its transcript adds L13-L15.
                Some(Kind::Lineage) => chit_core::kinds::numeric_lineage::check_with(
                    doc.root(),
                    chit_core::kinds::numeric_lineage::Context {
                        trust: settings.trust,
                        transcript: settings.transcript,
                    },
                ),
                Some(Kind::ReasonAuthorization) => reason_report(&doc, settings),
                _ => chit_core::verify_doc(&doc, kind),
            };
            let facts = kind.and_then(|k| Facts::of(k, doc.root(), &report, source(), None, None));
            let o = Outcome {
                file,
                line,
                result: Ok(report),
                artifact_id: None,
            };
            let (status, shown) = finish(&o, Some(&doc), settings);
            (status, shown, facts)
        }
    }
}

/// A Lattice executor packet is checked on its own bytes, under Lattice's
/// canonical profile (which keeps lone surrogates chit's strict reader
/// refuses). `None` when the input is not one.
fn check_lattice(
    file: &Arc<str>,
    line: Option<usize>,
    bytes: &[u8],
    settings: &Settings,
) -> Option<Done> {
    use chit_core::kinds::executor_packet as xp;
    let forced = settings.kind == Some(Kind::LatticePacket);
    if (settings.kind.is_some() && !forced) || bytes.len() > settings.limits.max_size {
        return None;
    }
    let source = Origin::new(file.clone(), line);
    let checked = match xp::recognise(bytes, forced)? {
        Ok(v) => xp::check_value(&v, Some(bytes), source),
        Err(chit_core::lattice::Error::Profile(why)) => xp::refused(&why),
        Err(e) => {
            return Some(no_facts(finish(
                &unreadable(file, line, e.to_string()),
                None,
                settings,
            )));
        }
    };
    let o = Outcome {
        file,
        line,
        result: Ok(checked.report),
        artifact_id: None,
    };
    let (status, shown) = finish(&o, None, settings);
    Some((status, shown, checked.facts.map(Facts::Rebind)))
}

/// A Reason certificate (or bundle) against the request and call given,
/// and under `--require-authorized`, its status.
fn reason_report(doc: &Doc, settings: &Settings) -> chit_core::Report {
    use chit_core::kinds::reason;
    let mut r = reason::check_with(
        doc.root(),
        reason::Context {
            request: settings.request.map(|d| d.root()),
            call: settings.call.map(|d| d.root()),
        },
    );
    if settings.require_authorized {
        match reason::status(doc.root()) {
            Some("authorized") => {}
            status => r.error(
                "authorized",
                "/status",
                format!(
                    "the certificate's status is {}; --require-authorized accepts only authorized",
                    status.unwrap_or("missing")
                ),
            ),
        }
    }
    r
}

/// One input's status, rendering and cross-document facts.
type Done = (Status, String, Option<Facts>);

fn no_facts((status, shown): (Status, String)) -> Done {
    (status, shown, None)
}

/// The checks across documents: each packet stream (P1-P8), and each
/// recompute result against its packet where that is among the inputs.
/// Returns how many of them failed.
fn cross_checks(
    mut facts: Gathered,
    expect_count: Option<usize>,
    format: Format,
    quiet: bool,
    out: &mut dyn Write,
) -> std::io::Result<usize> {
    let mut failed = 0;
    // --quiet shows only what is not valid, across documents too.
    let cross = |out: &mut dyn Write,
                 what: &str,
                 name: &str,
                 detail: &str,
                 r: &chit_core::Report|
     -> std::io::Result<()> {
        if quiet && r.valid() {
            return Ok(());
        }
        render::cross(out, format, what, name, detail, r)
    };
    let pairs = facts.recompute_results();
    let rebinds = facts.rebinds();
    if expect_count.is_some() && facts.packets() == 0 {
        failed += 1;
        cross(
            out,
            "stream",
            "(none)",
            "",
            &chit_core::Report {
                kind: chit_core::kinds::packet::KIND,
                errors: vec![chit_core::Finding::new(
                    "P8",
                    "",
                    "--expect-count was given, but no packet was found",
                )],
                warnings: Vec::new(),
            },
        )?;
    }
    for s in facts.check_streams(expect_count) {
        failed += usize::from(!s.report.valid());
        let detail = format!(
            "{} packet{}",
            s.packets,
            if s.packets == 1 { "" } else { "s" }
        );
        cross(out, "stream", &s.stream, &detail, &s.report)?;
    }
    for (todo, n, report) in rebinds {
        failed += usize::from(!report.valid());
        cross(out, "rebind", &todo, &format!("{n} packets"), &report)?;
    }
    for (source, packet, report) in pairs {
        failed += usize::from(!report.valid());
        cross(
            out,
            "recompute",
            &source.to_string(),
            &format!("against {packet}"),
            &report,
        )?;
    }
    Ok(failed)
}

/// A progress bar on a terminal, for work worth watching: a bar when the
/// number of inputs is known, a running count when it is not (JSON Lines).
fn progress_bar(len: Option<usize>) -> ProgressBar {
    if !std::io::stderr().is_terminal() || len.is_some_and(|n| n < 200) {
        return ProgressBar::hidden();
    }
    let rate = |state: &ProgressState, w: &mut dyn std::fmt::Write| {
        let _ = write!(w, "{:.0}/s", state.per_sec());
    };
    let (bar, template) = match len {
        Some(n) => (
            ProgressBar::new(n as u64),
            "{bar:40.cyan/blue} {pos}/{len} receipts  {rate}  {eta} left",
        ),
        None => (ProgressBar::new_spinner(), "{spinner} {pos} lines  {rate}"),
    };
    bar.set_style(
        ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .with_key("rate", rate),
    );
    bar
}
