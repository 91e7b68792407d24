//! `chit log watch`: a monitor. Every step that proves a checkpoint is
//! `chit_logstore::monitor`'s, every verdict on an entry
//! `chit_logstore::policy`'s (and through it `chit_core::check`'s); this
//! file reads arguments, prints lines, keeps the state and picks the exit
//! status.

use crate::cli::LogWatchArgs;
use crate::exit::{CmdResult, Exit, Failure};
use crate::output::Output;
use crate::render;
use chit_core::across::Facts;
use chit_core::keys::PublicKey;
use chit_logstore::audit::{SourceError, TileFiles, TilesDir};
use chit_logstore::monitor::{self, Caller, State, WatchError, Watched};
use chit_logstore::policy::Compiled;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What an entry printed must match (any of them).
enum Match {
    Kind(String),
    Stream(String),
    Signer(PublicKey),
}

fn read_matches(given: &[String]) -> Result<Vec<Match>, Failure> {
    given
        .iter()
        .map(|m| {
            let bad = || {
                Failure::error(format!(
                    "--match {m:?}: give kind=KIND, stream=STREAM_ID or signer=KEY"
                ))
            };
            let (field, value) = m.split_once('=').ok_or_else(bad)?;
            if value.is_empty() {
                return Err(bad());
            }
            Ok(match field {
                "kind" => Match::Kind(value.to_string()),
                "stream" => Match::Stream(value.to_string()),
                "signer" => Match::Signer(PublicKey::parse(value).map_err(|e| {
                    Failure::error(format!(
                        "--match {m:?}: {e} (a key is did:key:z6Mk... or ed25519:BASE64)"
                    ))
                })?),
                _ => return Err(bad()),
            })
        })
        .collect()
}

/// Where a log is served: a URL, or a folder of tiles.
fn open(at: &str) -> Result<Box<dyn TileFiles>, SourceError> {
    if crate::shared::remote::is_url(at) {
        crate::shared::remote::Remote::new(at)
            .map(|r| Box::new(r) as Box<dyn TileFiles>)
            .map_err(|e| SourceError::Fetch {
                url: at.to_string(),
                why: e.to_string(),
            })
    } else {
        Ok(Box::new(TilesDir {
            root: PathBuf::from(at),
        }))
    }
}

/// Prints the entries that match, a bundle at a time: each checked (where
/// asked) and its line made on all cores, then written in order.
struct Printer<'a> {
    /// The log's name, as a JSON string.
    origin: String,
    matches: &'a [Match],
    /// The verdicts' settings, when entries are checked.
    check: Option<&'a Compiled>,
    reverify: bool,
    printed: u64,
    refused: u64,
}

impl Printer<'_> {
    fn print(&mut self, first: u64, entries: &[&[u8]], out: &mut Output) -> std::io::Result<()> {
        let lines: Vec<(bool, Option<bool>, String)> = entries
            .par_iter()
            .enumerate()
            .map(|(k, data)| self.line(first + k as u64, data))
            .collect();
        for (matched, valid, line) in lines {
            let refused = valid == Some(false) && self.reverify;
            if refused {
                self.refused += 1;
            }
            if matched || refused {
                out.write_all(line.as_bytes())?;
                self.printed += 1;
            }
        }
        out.flush()
    }

    /// One entry's line, whether it matches, and (where checked) whether
    /// it is valid.
    fn line(&self, index: u64, data: &[u8]) -> (bool, Option<bool>, String) {
        let mut line = format!(
            "{{\"type\":\"entry\",\"origin\":{},\"index\":{index},\"sha256\":\"{}\",\"bytes\":{}",
            self.origin,
            chit_core::digest::sha256_hex(data),
            data.len()
        );
        let mut kind = None;
        let mut stream = None;
        let mut valid = None;
        if let Some(policy) = self.check {
            // The labels are the check's whatever its verdict: an entry
            // refused under these settings still has its kind and stream.
            let mut field = |k: &str, v: Value| line.push_str(&format!(",\"{k}\":{v}"));
            match policy.checked(data) {
                Ok(c) => {
                    let status = c.status();
                    kind = Some(c.report.kind);
                    stream = match &c.facts {
                        Some(Facts::Packet(p)) => Some(p.stream_id.to_string()),
                        _ => None,
                    };
                    field("kind", json!(c.report.kind));
                    field("stream", json!(stream));
                    field("art_id", json!(c.artifact_id));
                    field("status", json!(status.name()));
                    let admitted = policy.admits(status);
                    if !admitted {
                        let why = c
                            .report
                            .errors
                            .first()
                            .map(|f| format!("{}: {}", f.rule, f.message))
                            .unwrap_or_else(|| status.name().to_string());
                        field("refused", json!(why));
                    }
                    valid = Some(admitted);
                }
                Err(why) => {
                    field("status", json!("unreadable"));
                    field("refused", json!(why.to_string()));
                    valid = Some(false);
                }
            }
        }
        line.push_str("}\n");
        let matched = self.matches.is_empty()
            || self.matches.iter().any(|m| match m {
                Match::Kind(k) => kind == Some(k.as_str()),
                Match::Stream(s) => stream.as_deref() == Some(s.as_str()),
                Match::Signer(key) => {
                    chit_core::envelope::signed_by(data, key, &chit_core::json::Limits::default())
                }
            });
        (matched, valid, line)
    }
}

pub fn run(a: &LogWatchArgs, out: &mut Output) -> CmdResult {
    let policy = crate::shared::logs::read_policy(&a.policy)?;
    if policy.logs.is_empty() {
        return Err(Failure::error(format!(
            "the policy {} lists no log (log <vkey> lines): there is nothing to hold the log to",
            a.policy.display()
        )));
    }
    let matches = read_matches(&a.matches)?;
    if a.check.given() && !a.reverify && matches.is_empty() {
        return Err(Failure::error(
            "--trust, --threshold, --accept-unsigned and --allow-unchecked say how entries are \
             checked: give --reverify (or --match) with them",
        ));
    }
    // Entries are checked when asked, or when a match needs their kind or
    // stream (as the log labels them).
    let checked = a.reverify
        || matches
            .iter()
            .any(|m| matches!(m, Match::Kind(_) | Match::Stream(_)));
    let compiled = if checked {
        let p = crate::shared::logs::policy_from(&a.check)?;
        Some(p.compile().map_err(Failure::error)?)
    } else {
        None
    };
    let _lock = crate::shared::logs::lock_state(&a.state, "chit log watch")?;
    let mut src = open(&a.source).map_err(|e| Failure::error(e.to_string()))?;
    // Ctrl-C and SIGTERM stop it between two bundles, its progress saved.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| Failure::error(format!("cannot start the async runtime: {e}")))?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    runtime.spawn(async move {
        crate::shared::net::shutdown().await;
        flag.store(true, Ordering::SeqCst);
    });
    let mut state = State::load(&a.state).map_err(|e| Failure::error(e.to_string()))?;
    loop {
        let mut printer = Printer {
            origin: String::new(),
            matches: &matches,
            check: compiled.as_ref(),
            reverify: a.reverify,
            printed: 0,
            refused: 0,
        };
        let stopped = || stop.load(Ordering::SeqCst);
        match look(
            a,
            &mut *src,
            &policy,
            &mut state,
            &mut printer,
            &stopped,
            out,
        ) {
            Ok(Exit::Ok) => {}
            Ok(exit) => return Ok(exit),
            // A follower goes on after what it could not read.
            Err(Looked::Unread(m)) if a.follow => {
                eprintln!(
                    "chit log watch: {}; looking again in {} s",
                    render::escape(&m),
                    a.interval
                );
            }
            Err(Looked::Unread(m)) => return Err(Failure::error(m)),
            Err(Looked::Stopped) if a.follow => return Ok(Exit::Ok),
            Err(Looked::Stopped) => {
                return Err(Failure::error(
                    "stopped before the checkpoint was proven; the progress made is saved (run \
                     again to go on)",
                ))
            }
            Err(Looked::Failed(f)) => return Err(f),
        }
        if !a.follow {
            return Ok(Exit::Ok);
        }
        let deadline = std::time::Instant::now() + Duration::from_secs_f64(a.interval);
        while std::time::Instant::now() < deadline {
            if stop.load(Ordering::SeqCst) {
                return Ok(Exit::Ok);
            }
            std::thread::sleep(Duration::from_millis(50).min(deadline - std::time::Instant::now()));
        }
    }
}

/// How a look ended, other than with an exit status.
enum Looked {
    /// What the log serves could not be read, or proves nothing either
    /// way: a follower looks again.
    Unread(String),
    /// Asked to stop, the progress saved.
    Stopped,
    Failed(Failure),
}

impl From<Failure> for Looked {
    fn from(f: Failure) -> Looked {
        Looked::Failed(f)
    }
}

/// One look: the monitor's steps, the entries printed, the state saved.
fn look(
    a: &LogWatchArgs,
    src: &mut dyn TileFiles,
    policy: &chit_log::policy::Policy,
    state: &mut State,
    printer: &mut Printer,
    stopped: &dyn Fn() -> bool,
    out: &mut Output,
) -> Result<Exit, Looked> {
    let note = monitor::head(src).map_err(|e| {
        Looked::Unread(format!(
            "{e} (nothing is known wrong with the log; look again later)"
        ))
    })?;
    // Its name, to label the lines (proven or not by the steps).
    let origin = chit_log::note::parse(&note)
        .ok()
        .and_then(|n| chit_log::checkpoint::Checkpoint::parse(&n.text).ok())
        .map(|c| c.origin)
        .unwrap_or_default();
    printer.origin = Value::String(origin.clone()).to_string();
    // Standard output closed or failing: said as every command says it.
    let mut write_failed = None;
    let result = {
        // Each bundle's lines are written out before the next is read, so
        // a state saved after them never says more was printed than was.
        let mut entry = |first: u64, entries: &[&[u8]]| {
            printer.print(first, entries, out).map_err(|e| {
                let said = format!("cannot write output: {e}");
                write_failed = Some(e);
                said
            })
        };
        let mut progress = |s: &State| s.save(&a.state);
        let mut caller = Caller {
            entry: &mut entry,
            progress: &mut progress,
            open: &open,
            stop: stopped,
        };
        monitor::watch(src, &note, policy, state, &mut caller)
    };
    if let Some(e) = write_failed {
        return Err(Failure::write(e).into());
    }
    let outcome = said(a, state, &origin, &note, printer, result, out);
    // Entries refused under --reverify fail the look, however it ended:
    // its progress past them may be saved, and no later look sees them.
    if printer.refused == 0 {
        return outcome;
    }
    let bad = anstyle::AnsiColor::Red.on_default().bold();
    let _ = writeln!(
        anstream::stderr(),
        "{bad}REFUSED{bad:#} {} new entr{} not valid under --reverify",
        printer.refused,
        if printer.refused == 1 {
            "y is"
        } else {
            "ies are"
        }
    );
    match outcome {
        Err(Looked::Unread(m)) => eprintln!("chit: {}", render::escape(&m)),
        Err(Looked::Failed(f)) => return Err(Looked::Failed(f)),
        _ => {}
    }
    Ok(Exit::Invalid)
}

/// What a look found, said: the state saved where it moved on, a summary
/// or a problem written, the exit status (or how the look ended).
fn said(
    a: &LogWatchArgs,
    state: &mut State,
    origin: &str,
    note: &[u8],
    printer: &Printer,
    result: Result<Watched, WatchError>,
    out: &mut Output,
) -> Result<Exit, Looked> {
    match result {
        Ok(w) => {
            state
                .save(&a.state)
                .map_err(|e| Failure::error(e.to_string()))?;
            let said = match w {
                Watched::Grew { from, to } if from == to => None,
                Watched::Grew { from, to } => Some(format!(
                    "{} entries, {} new, proven; {} printed",
                    to,
                    to - from,
                    printer.printed
                )),
                Watched::Same { .. } => None,
                Watched::Behind { size, seen } => Some(format!(
                    "shows {size} entries, {seen} seen before: an older view, proven a prefix"
                )),
            };
            if let Some(said) = said {
                eprintln!("chit log watch: {}: {said}", render::escape(origin));
            }
            Ok(Exit::Ok)
        }
        Err(WatchError::Source(e)) => Err(Looked::Unread(format!(
            "{e} (nothing is known wrong with the log; look again later)"
        ))),
        Err(WatchError::Unproven(m)) => Err(Looked::Unread(m)),
        Err(WatchError::State(m)) | Err(WatchError::Stopped(m)) => {
            Err(Looked::Failed(Failure::error(m)))
        }
        Err(WatchError::Interrupted) => Err(Looked::Stopped),
        Err(WatchError::Checkpoint(m)) => {
            problem(out, origin, "checkpoint", &m, [None, Some(note)])?;
            Ok(Exit::Invalid)
        }
        Err(WatchError::Entries {
            message,
            checkpoint,
        }) => {
            // What was read toward it is not kept.
            state
                .save(&a.state)
                .map_err(|e| Failure::error(e.to_string()))?;
            problem(out, origin, "entries", &message, [None, Some(&checkpoint)])?;
            Ok(Exit::Invalid)
        }
        Err(WatchError::Inconsistent { message, evidence }) => {
            state
                .save(&a.state)
                .map_err(|e| Failure::error(e.to_string()))?;
            let [seen, shown] = &evidence;
            problem(
                out,
                origin,
                "consistency",
                &message,
                [Some(seen), Some(shown)],
            )?;
            Ok(Exit::Invalid)
        }
    }
}

/// A problem: one JSON line on standard output, and in words, with its
/// evidence (the checkpoint seen before, where there is one, and the one
/// shown now), on standard error.
fn problem(
    out: &mut Output,
    origin: &str,
    step: &str,
    message: &str,
    evidence: [Option<&[u8]>; 2],
) -> Result<(), Failure> {
    let texts: Vec<Option<String>> = evidence
        .iter()
        .map(|e| e.map(|e| String::from_utf8_lossy(e).into_owned()))
        .collect();
    let line = json!({
        "type": "problem",
        "origin": origin,
        "step": step,
        "message": message,
        "evidence": texts,
    });
    writeln!(out, "{line}").map_err(Failure::write)?;
    out.flush().map_err(Failure::write)?;
    let bad = anstyle::AnsiColor::Red.on_default().bold();
    let heading = if step == "consistency" {
        "INCONSISTENT"
    } else {
        "NOT VERIFIED"
    };
    let mut err = anstream::stderr();
    let _ = writeln!(
        err,
        "{bad}{heading}{bad:#} {}: {step}: {}",
        render::escape(origin),
        render::escape(message)
    );
    for (i, t) in texts.iter().enumerate() {
        let Some(t) = t else { continue };
        let _ = writeln!(
            err,
            "  evidence {} ({}):",
            i + 1,
            if i == 0 { "seen before" } else { "shown now" }
        );
        for l in t.lines() {
            let _ = writeln!(err, "    {}", render::escape(l));
        }
    }
    Ok(())
}
