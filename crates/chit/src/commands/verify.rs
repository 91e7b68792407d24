//! `chit verify`: read every input, have `chit_core::check` give each its
//! verdict on all cores, feed the checks across inputs, and report in order.

use crate::cli::{Format, VerifyArgs};
use crate::exit::{CmdResult, Exit, Failure};
use crate::inputs::{self, Source};
use crate::output::{Output, Palette};
use crate::render::{self, InputResult, Status};
use crate::shared::trust::read_trust;
use chit_core::across::{Across, Facts, Origin};
use chit_core::kinds::log_bundle::LogKeys;
use chit_core::kinds::treeship::records::ArtifactFacts;
use chit_core::{Context, Doc, Val};
use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use rayon::prelude::*;
use std::io::{IsTerminal, Write};
use std::sync::Arc;

/// What every check in one run shares.
struct Settings<'a> {
    /// What the core is told of every input.
    ctx: Context<'a>,
    /// The tlog-proof of each input (`--proof`), by its place.
    proofs: &'a [chit_log::proof::TlogProof],
    format: Format,
    quiet: bool,
    /// `--allow-unchecked`: a signed input whose payload chit could not
    /// check passes (and --quiet hides it).
    allow_unchecked: bool,
    palette: Palette,
}

#[derive(Default)]
struct Tally {
    valid: usize,
    signed: usize,
    unchecked: usize,
    invalid: usize,
    unreadable: usize,
}

/// How many inputs are checked between writes: output flows while memory
/// stays bounded.
const BATCH: usize = 4096;

pub fn run(args: &VerifyArgs, out: &mut Output) -> CmdResult {
    let limits = args.limits.limits();
    let trust = match &args.trust {
        None => None,
        Some(path) => Some(read_trust(path, limits.max_size)?),
    };
    let transcript = match &args.transcript {
        None => None,
        Some(path) => Some(crate::shared::transcripts::read_transcript(path, &limits)?),
    };
    let read_doc = |path: &std::path::Path, what: &str| -> Result<Vec<u8>, Failure> {
        inputs::read(&Source::File(path.to_path_buf()), limits.max_size).map_err(|why| {
            Failure::error(format!("cannot read the {what} {}: {why}", path.display()))
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
    let log = crate::shared::logs::trust_policy(
        args.policy.as_deref(),
        args.log_key.as_deref(),
        &args.witness,
    )?
    .map(|policy| LogKeys { policy });
    let mut proofs = Vec::new();
    if !args.proof.is_empty() {
        if log.is_none() {
            return Err(Failure::error(
                "--proof is proven under a trust policy: give it with --policy FILE (or the \
                 log's key with --log-key)",
            ));
        }
        let files = args.inputs.iter().all(|p| p.is_file());
        if args.proof.len() != args.inputs.len() || args.lines || !files {
            return Err(Failure::error(format!(
                "each --proof proves the INPUT in its place: give one receipt file for each \
                 ({} proofs, {} inputs)",
                args.proof.len(),
                args.inputs.len()
            )));
        }
        // A file given twice is read once: its proofs would pair with
        // the wrong inputs.
        let mut seen = std::collections::HashSet::new();
        for input in &args.inputs {
            let same = std::fs::canonicalize(input).unwrap_or_else(|_| input.clone());
            if !seen.insert(same) {
                return Err(Failure::error(format!(
                    "{} is given twice: each --proof proves the INPUT in its place, so give \
                     each file once",
                    input.display()
                )));
            }
        }
        for path in &args.proof {
            let bytes = read_doc(path, "proof")?;
            proofs.push(
                chit_log::proof::TlogProof::parse(&bytes)
                    .map_err(|e| Failure::error(format!("the proof {}: {e}", path.display())))?,
            );
        }
    }
    let ctx = Context {
        kind: args.kind,
        limits,
        trust: trust.as_ref(),
        threshold: args.threshold as usize,
        expected_art: None,
        transcript: transcript.as_ref(),
        request: request.as_ref().map(Doc::root),
        call: call.as_ref().map(Doc::root),
        require_authorized: args.require_authorized,
        accept_unsigned: args.accept_unsigned,
        allow_unchecked: args.allow_unchecked,
        log: log.as_ref(),
        // With a trust policy, every input is a log bundle, unless proofs
        // say where the inputs were logged.
        bundles_only: log.is_some() && proofs.is_empty(),
        // Each input's own, below.
        proof: None,
    };
    run_with(args, ctx, &proofs, out).map_err(Failure::write)
}

fn parse_extra<'a>(
    bytes: &'a Option<Vec<u8>>,
    path: Option<&std::path::Path>,
    what: &str,
    limits: &chit_core::Limits,
) -> Result<Option<Doc<'a>>, Failure> {
    match (bytes, path) {
        (Some(b), Some(p)) => chit_core::json::parse(b, limits)
            .map(Some)
            .map_err(|e| Failure::error(format!("cannot read the {what} {}: {e}", p.display()))),
        _ => Ok(None),
    }
}

fn run_with(
    args: &VerifyArgs,
    ctx: Context,
    proofs: &[chit_log::proof::TlogProof],
    out: &mut Output,
) -> std::io::Result<Exit> {
    let format = if args.json {
        Format::Json
    } else {
        args.format.unwrap_or(Format::Human)
    };
    let limits = ctx.limits;
    let settings = Settings {
        ctx,
        proofs,
        format,
        quiet: args.quiet,
        allow_unchecked: args.allow_unchecked,
        palette: out.palette,
    };
    let mut notes = Vec::new();
    let sources = inputs::expand(&args.inputs, &mut notes);
    for n in &notes {
        eprintln!("note: {}", render::escape(n));
    }
    let mut tally = Tally::default();
    let progress = progress_bar(if args.lines {
        None
    } else {
        Some(sources.len())
    });
    let labels: Vec<Arc<str>> = sources.iter().map(|s| Arc::from(s.label())).collect();
    let mut across = Across::new(args.expect_count)
        .trusted(settings.ctx.trust.is_some())
        .allow_unchecked(args.allow_unchecked);
    let mut emit = |status: Status,
                    rendered: &str,
                    f: Vec<(Origin, Facts)>,
                    a: Vec<(Origin, ArtifactFacts)>,
                    out: &mut Output|
     -> std::io::Result<()> {
        match status {
            Status::Valid => tally.valid += 1,
            Status::Signed => tally.signed += 1,
            Status::Unchecked => tally.unchecked += 1,
            Status::Invalid => tally.invalid += 1,
            Status::Unreadable => tally.unreadable += 1,
        }
        for (origin, a) in a {
            across.add_artifact(origin, status, a);
        }
        for (origin, f) in f {
            across.add(origin, status, f);
        }
        out.write_all(rendered.as_bytes())
    };

    if args.lines {
        for (source, label) in sources.iter().zip(&labels) {
            let reader = match inputs::open(source) {
                Ok(r) => r,
                Err(why) => {
                    let (status, s) =
                        finish(&unreadable(label, None, why.to_string()), None, &settings);
                    emit(status, &s, Vec::new(), Vec::new(), out)?;
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
                        .map(|(n, line)| check(label, Some(*n), None, line.as_deref(), &settings))
                        .collect();
                    progress.inc(batch.len() as u64);
                    write_batch(&progress, done, &mut emit, out)?;
                }
                Ok(())
            })?;
        }
    } else {
        let indexed: Vec<(usize, (&Source, &Arc<str>))> =
            sources.iter().zip(&labels).enumerate().collect();
        for batch in indexed.chunks(BATCH) {
            let done: Vec<Done> = batch
                .par_iter()
                .map(|&(at, (source, label))| {
                    let r = match source {
                        Source::Package(dir) => check_package(label, dir, &settings),
                        Source::Journal(dir) => check_journal(label, dir, &settings),
                        _ => {
                            let bytes = inputs::read(source, limits.max_size);
                            check(label, None, Some(at), bytes.as_deref(), &settings)
                        }
                    };
                    progress.inc(1);
                    r
                })
                .collect();
            write_batch(&progress, done, &mut emit, out)?;
        }
    }
    progress.finish_and_clear();
    let across = cross_checks(across, &settings, out)?;

    let totals = render::Summary {
        valid: tally.valid,
        signed: tally.signed,
        unchecked: tally.unchecked,
        invalid: tally.invalid,
        unreadable: tally.unreadable,
        across_valid: across.valid,
        across_invalid: across.invalid,
        across_signed: across.signed,
        across_unchecked: across.unchecked,
    };
    let total = totals.inputs();
    // With --quiet the summary is all a run of valid inputs shows.
    if total > 1 || args.quiet {
        match format {
            Format::Human => writeln!(out, "{}", render::summary(&totals, &settings.palette))?,
            Format::Markdown => writeln!(out, "{}", render::markdown_summary(&totals))?,
            Format::Json => {}
        }
    }
    if total == 0 {
        eprintln!(
            "chit: no receipts found in the inputs given (folders are searched for *.json files)"
        );
        return Ok(Exit::Error);
    }
    out.flush()?;
    Ok(if tally.unreadable > 0 {
        Exit::Error
    } else if tally.invalid > 0
        || across.invalid + across.unchecked > 0
        || (tally.signed + tally.unchecked + across.signed > 0 && !args.allow_unchecked)
    {
        Exit::Invalid
    } else {
        Exit::Ok
    })
}

/// Writes one batch of outcomes with the progress bar out of the way: the
/// bar is cleared, the batch written and flushed, then the bar drawn again
/// below it, so no result shares a line with the bar and no bar is left in
/// the scrollback. (Without a terminal the bar is hidden and this only
/// writes.)
fn write_batch(
    progress: &ProgressBar,
    done: Vec<Done>,
    emit: &mut impl FnMut(
        Status,
        &str,
        Vec<(Origin, Facts)>,
        Vec<(Origin, ArtifactFacts)>,
        &mut Output,
    ) -> std::io::Result<()>,
    out: &mut Output,
) -> std::io::Result<()> {
    progress.suspend(|| {
        for (status, s, f, a) in done {
            emit(status, &s, f, a, out)?;
        }
        out.flush()
    })
}

/// The outcome's status and its rendering (empty where --quiet hides it).
fn finish(o: &InputResult, receipt: Option<Val>, settings: &Settings) -> (Status, String) {
    let status = o.status();
    let shown = if settings.quiet && status.passes(settings.allow_unchecked) {
        String::new()
    } else {
        render::render(o, receipt, settings.format, &settings.palette)
    };
    (status, shown)
}

fn unreadable(file: &str, line: Option<usize>, why: String) -> InputResult<'_> {
    InputResult {
        file,
        line,
        result: Err(why),
        artifact_id: None,
    }
}

/// Checks one input: a file's bytes (`at`: its place among the inputs,
/// for its `--proof`) or a line's.
fn check(
    file: &Arc<str>,
    line: Option<usize>,
    at: Option<usize>,
    bytes: Result<&[u8], &crate::inputs::InputError>,
    settings: &Settings,
) -> Done {
    let bytes = match bytes {
        Ok(b) => b,
        Err(why) => {
            return no_facts(finish(
                &unreadable(file, line, why.to_string()),
                None,
                settings,
            ))
        }
    };
    let ctx = Context {
        // Treeship files an envelope under its art id; JSON Lines has no name per line.
        expected_art: if line.is_none() {
            chit_core::envelope::art_id_in_file_name(file)
        } else {
            None
        },
        proof: at.and_then(|i| settings.proofs.get(i)),
        ..settings.ctx
    };
    match chit_core::check(bytes, &ctx) {
        Err(e) => {
            let why = e.starting_at_line(line.unwrap_or(1)).explained();
            no_facts(finish(&unreadable(file, line, why), None, settings))
        }
        Ok(checked) => {
            let o = InputResult {
                file,
                line,
                result: Ok(checked.report),
                artifact_id: checked.artifact_id,
            };
            // A run receipt's Markdown shows its grade, checks and gaps; a
            // signed one's are in its statement's payload.
            let (status, shown) = if settings.format == Format::Markdown {
                chit_core::kinds::treeship::statement::with_document(
                    bytes,
                    &ctx.limits,
                    |receipt| finish(&o, receipt, settings),
                )
            } else {
                finish(&o, None, settings)
            };
            let origin = Origin::new(file.clone(), line);
            let artifact = checked.artifact.map(|a| (origin.clone(), a));
            let facts = checked.facts.map(|f| (origin, f));
            (
                status,
                shown,
                facts.into_iter().collect(),
                artifact.into_iter().collect(),
            )
        }
    }
}

/// Checks and renders a Treeship session package: its files read here,
/// checked as one input.
fn check_package(file: &Arc<str>, dir: &std::path::Path, settings: &Settings) -> Done {
    let max = settings.ctx.limits.max_size;
    let files = inputs::read_package(dir, max);
    let receipt = match &files.receipt {
        Ok(b) => b,
        Err(why) => {
            let why = format!("receipt.json: {why}");
            return no_facts(finish(&unreadable(file, None, why), None, settings));
        }
    };
    let package = chit_core::kinds::treeship::session::Package {
        receipt,
        merkle: borrow(&files.merkle),
        render: borrow(&files.render),
        proofs: borrow_all(&files.proofs),
        sealed: chit_core::kinds::treeship::sealed::Sealed {
            record: borrow(&files.record),
            keys: borrow(&files.keys),
            redaction: borrow(&files.redaction),
            artifacts: borrow_all(&files.artifacts),
        },
        approvals: chit_core::kinds::treeship::approvals::Approvals {
            grants: borrow_all(&files.grants),
            uses: borrow_all(&files.uses),
            checkpoints: borrow_all(&files.checkpoints),
        },
        unchecked: files.others.clone(),
    };
    match chit_core::check(&package, &settings.ctx) {
        Err(e) => {
            let why = format!("receipt.json: {}", e.explained());
            no_facts(finish(&unreadable(file, None, why), None, settings))
        }
        Ok(checked) => {
            let o = InputResult {
                file,
                line: None,
                result: Ok(checked.report),
                artifact_id: None,
            };
            let (status, shown) = finish(&o, None, settings);
            let facts = checked.facts.map(|f| (Origin::new(file.clone(), None), f));
            (status, shown, facts.into_iter().collect(), Vec::new())
        }
    }
}

/// A folder input's file, as the core takes it: its bytes, or why not.
fn borrow(f: &Option<Result<Vec<u8>, inputs::InputError>>) -> Option<Result<&[u8], String>> {
    f.as_ref()
        .map(|r| r.as_deref().map_err(ToString::to_string))
}

type Named = (String, Result<Vec<u8>, inputs::InputError>);

/// A folder input's files, each named, as the core takes them.
fn borrow_all(files: &[Named]) -> Vec<(String, Result<&[u8], String>)> {
    files
        .iter()
        .map(|(n, r)| (n.clone(), r.as_deref().map_err(ToString::to_string)))
        .collect()
}

/// Checks and renders a Treeship journal: its files read here, checked as
/// one input.
fn check_journal(file: &Arc<str>, dir: &std::path::Path, settings: &Settings) -> Done {
    let files = inputs::read_journal(dir, settings.ctx.limits.max_size);
    let journal = chit_core::kinds::treeship::journal::Journal {
        head: borrow(&files.head),
        records: borrow_all(&files.records),
    };
    let result = chit_core::check(&journal, &settings.ctx)
        .map(|c| c.report)
        .map_err(|e| e.explained());
    let o = InputResult {
        file,
        line: None,
        result,
        artifact_id: None,
    };
    no_facts(finish(&o, None, settings))
}

/// One input's status, rendering and cross-document facts.
type Done = (
    Status,
    String,
    Vec<(Origin, Facts)>,
    Vec<(Origin, ArtifactFacts)>,
);

fn no_facts((status, shown): (Status, String)) -> Done {
    (status, shown, Vec::new(), Vec::new())
}

/// How the checks across inputs came out.
#[derive(Default)]
struct AcrossTally {
    valid: usize,
    invalid: usize,
    /// Not every part checked (a Verifiable Intent credential against its
    /// layer above): as a signed input, they pass only with
    /// --allow-unchecked.
    signed: usize,
    /// Their members did not all verify.
    unchecked: usize,
}

/// The checks across documents: each packet stream (P1-P8), each rebind
/// (X6), each recompute result against its packet where that is among the
/// inputs, and what Treeship writes; each is written (with --quiet, only
/// those not valid) and counted by its status.
fn cross_checks(
    across: Across,
    settings: &Settings,
    out: &mut Output,
) -> std::io::Result<AcrossTally> {
    let mut tally = AcrossTally::default();
    for c in across.finish() {
        match c.status {
            Status::Valid => tally.valid += 1,
            Status::Invalid => tally.invalid += 1,
            Status::Signed => tally.signed += 1,
            _ => tally.unchecked += 1,
        }
        // --quiet shows only what is not valid, across documents too.
        if settings.quiet && c.status == Status::Valid {
            continue;
        }
        render::cross(out, settings.format, &c, &settings.palette)?;
    }
    Ok(tally)
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
