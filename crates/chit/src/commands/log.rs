//! `chit log`: the receipt log's commands. Every decision is
//! `chit_logstore`'s (and through it `chit_core::check`'s); this file
//! reads arguments, renders and picks the exit status.

use crate::cli::{
    LogAppendArgs, LogAuditArgs, LogBindArgs, LogBundleArgs, LogCommand, LogConsistencyArgs,
    LogExportArgs, LogGetArgs, LogInitArgs, LogMigrateArgs, LogProofArgs, LogProveArgs,
    LogStoreArg, LogWitnessArgs,
};
use crate::exit::{CmdResult, Exit, Failure};
use crate::inputs;
use crate::output::Output;
use crate::render;
use crate::shared::logs::{
    create_log, open_for_append, read_text, store_failure, tile_bytes, verifier_key_text,
    witness_verifiers,
};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use chit_log::checkpoint::{open_checkpoint, Cosigner};
use chit_log::note::NoteVerifier;
use chit_log::ProofError;
use chit_logstore::audit;
use chit_logstore::{EntryName, Log, LogError, Outcome};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

pub fn run(c: &LogCommand, out: &mut Output) -> CmdResult {
    match c {
        LogCommand::Init(a) => init(a, out),
        LogCommand::Append(a) => append(a, out),
        LogCommand::Get(a) => get(a, out),
        LogCommand::Checkpoint(a) => checkpoint(a, out),
        LogCommand::Info(a) => info(a, out),
        LogCommand::Prove(a) => prove(a, out),
        LogCommand::Consistency(a) => consistency(a, out),
        LogCommand::Bundle(a) => bundle(a, out),
        LogCommand::Proof(a) => proof(a, out),
        LogCommand::ExportTiles(a) => export_tiles(a, out),
        LogCommand::Audit(a) => audit_cmd(a, out),
        LogCommand::Witness(a) => witness(a, out),
        LogCommand::BindPolicy(a) => bind_policy(a, out),
        LogCommand::Migrate(a) => migrate(a, out),
        // Dispatched to commands::watch by main.
        LogCommand::Watch(_) => Err(Failure::error("chit log watch is not run here")),
    }
}

fn open_log(store: &LogStoreArg) -> Result<Log, Failure> {
    let s = chit_logstore::open(&store.store).map_err(store_failure)?;
    Log::open(s).map_err(store_failure)
}

fn init(a: &LogInitArgs, out: &mut Output) -> CmdResult {
    create_log(&a.store.store, &a.key, &a.origin, &a.policy, out)?;
    Ok(Exit::Ok)
}

fn info(a: &LogStoreArg, out: &mut Output) -> CmdResult {
    let mut log = open_log(a)?;
    let (size, _) = log.head().map_err(store_failure)?;
    let m = log.meta().clone();
    let bound = match log.policy_binding() {
        Ok(()) => "bound (signed by the log key)".to_string(),
        Err(why) => format!("NOT BOUND: {why}"),
    };
    writeln!(
        out,
        "origin: {}\nlog key: {}\nsize: {size}\naccepts: {}\npolicy: {bound}\nstore: {}",
        m.origin,
        m.verifier_key,
        log.policy().describe(),
        log.store().location()
    )
    .map_err(Failure::write)?;
    Ok(Exit::Ok)
}

fn migrate(a: &LogMigrateArgs, out: &mut Output) -> CmdResult {
    let mut from = chit_logstore::open(&a.old).map_err(store_failure)?;
    let key_text = match &a.log_key {
        Some(k) => verifier_key_text(k)?,
        None => {
            let named = from.meta().map_err(store_failure)?.verifier_key;
            eprintln!(
                "note: trusting the log key {} names ({named}) on first use; give --log-key to pin it",
                render::escape(&a.old)
            );
            named
        }
    };
    let verifier = NoteVerifier::from_verifier_key(&key_text)
        .map_err(|e| Failure::error(format!("the log key {key_text}: {e}")))?;
    let (size, _) = from.head().map_err(store_failure)?;
    let to = chit_logstore::create(&a.new).map_err(store_failure)?;
    let bar = entries_bar(|| size);
    let done = chit_logstore::migrate::migrate(&mut *from, to, &verifier, &|n| bar.set_position(n));
    bar.finish_and_clear();
    let m = done.map_err(|e| {
        let left = if chit_logstore::is_postgres(&a.new) {
            format!(
                "; {} holds part of a copy: drop its schema before trying again",
                a.new
            )
        } else {
            chit_logstore::remove_created(&a.new);
            format!("; nothing was left at {}", a.new)
        };
        Failure::error(format!("cannot migrate {} to {}: {e}{left}", a.old, a.new))
    })?;
    writeln!(
        out,
        "migrated {} entries and {} checkpoints from {} to {}; audit it with chit log audit {}",
        m.size,
        m.checkpoints,
        render::escape(&a.old),
        render::escape(&a.new),
        render::escape(&a.new)
    )
    .map_err(Failure::write)?;
    Ok(Exit::Ok)
}

fn bind_policy(a: &LogBindArgs, out: &mut Output) -> CmdResult {
    let mut log = crate::shared::logs::open_to_bind(&a.store.store, a.key.as_deref())?;
    // The tree held to its checkpoint first: a store changed behind the
    // log's back is audited, not vouched for.
    log.quick_check().map_err(|e| {
        Failure::error(format!(
            "{} cannot be bound: {e}; find what changed with chit log audit {}",
            a.store.store, a.store.store
        ))
    })?;
    let store = log.store().location();
    if log.bind_policy().map_err(store_failure)? {
        writeln!(
            out,
            "bound the policy of {}: {}",
            render::escape(&store),
            log.policy().describe()
        )
    } else {
        writeln!(
            out,
            "the policy of {} is bound already",
            render::escape(&store)
        )
    }
    .map_err(Failure::write)?;
    Ok(Exit::Ok)
}

/// A bar of entries done out of `size()` (asked only where it is shown),
/// on a terminal; hidden elsewhere.
fn entries_bar(size: impl FnOnce() -> u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(size());
    b.set_style(
        ProgressStyle::with_template("{bar:40.cyan/blue} {pos}/{len} entries  {rate}  {eta} left")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .with_key("rate", whole_rate),
    );
    b
}

/// A progress bar's rate in whole items a second.
fn whole_rate(state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write) {
    let _ = write!(w, "{:.0}/s", state.per_sec());
}

/// A batch read and checked: each input, and the verdicts on the readable ones.
type Checked = (Vec<Pending>, Vec<chit_logstore::Submitted>);

/// One input waiting for its batch: where it came from and its bytes.
struct Pending {
    label: String,
    /// The line of its input it starts on (1 for a whole file).
    line: usize,
    bytes: Result<Vec<u8>, String>,
}

fn append(a: &LogAppendArgs, out: &mut Output) -> CmdResult {
    let mut log = open_for_append(&a.store.store, a.key.as_deref())?;

    let mut notes = Vec::new();
    let sources = inputs::expand(&a.inputs, &mut notes);
    for n in &notes {
        eprintln!("note: {}", render::escape(n));
    }
    let progress = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {pos} appended or refused  {rate}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner())
                .with_key("rate", whole_rate),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let mut tally = [0usize; 4]; // appended, present, refused, unreadable
    let mut size = 0u64;
    let batch = a.batch as usize;
    // The whole entry must fit; a longer input is read only to say so.
    let max = chit_log::tiles::MAX_ENTRY_BYTES + 1;
    // One thread reads and checks batch k+1 (on all cores) while this one
    // appends batch k: verification is the floor, the store's work hides
    // behind it.
    let checker = log.checker();
    let (tx, rx) = std::sync::mpsc::sync_channel::<Checked>(1);
    let sources = &sources;
    let lines = a.lines;
    let result = std::thread::scope(|scope| -> Result<(), Failure> {
        scope.spawn(move || {
            let mut pending: Vec<Pending> = Vec::with_capacity(batch);
            let send = |pending: &mut Vec<Pending>| -> bool {
                if pending.is_empty() {
                    return true;
                }
                let mut batch = std::mem::take(pending);
                // The readable bytes move on with their verdicts (an empty
                // Ok stays behind to say the input was read).
                let readable: Vec<(usize, Vec<u8>)> = batch
                    .iter_mut()
                    .filter_map(|p| p.bytes.as_mut().ok().map(|b| (p.line, std::mem::take(b))))
                    .collect();
                tx.send((batch, checker.check_lines(readable))).is_ok()
            };
            for source in sources {
                let label = source.label();
                if lines {
                    let reader = match inputs::open(source) {
                        Ok(r) => r,
                        Err(why) => {
                            pending.push(Pending {
                                label: label.clone(),
                                line: 1,
                                bytes: Err(why.to_string()),
                            });
                            continue;
                        }
                    };
                    for (n, line) in inputs::Lines::new(reader, max) {
                        pending.push(Pending {
                            label: format!("{label}:{n}"),
                            line: n,
                            bytes: line.map_err(|why| entry_limit(why, max)),
                        });
                        if pending.len() >= batch && !send(&mut pending) {
                            return;
                        }
                    }
                } else {
                    pending.push(Pending {
                        label: label.clone(),
                        line: 1,
                        bytes: inputs::read(source, max).map_err(|why| entry_limit(why, max)),
                    });
                }
                if pending.len() >= batch && !send(&mut pending) {
                    return;
                }
            }
            send(&mut pending);
        });
        for (pending, checked) in rx {
            let sub = log.submit_checked(&checked).map_err(store_failure)?;
            size = sub.size;
            let mut outcomes = sub.outcomes.into_iter();
            progress.suspend(|| -> Result<(), Failure> {
                for p in pending.iter() {
                    let outcome = match &p.bytes {
                        Err(why) => Outcome::Unreadable(why.clone()),
                        Ok(_) => outcomes.next().expect("one outcome per submission"),
                    };
                    let slot = match &outcome {
                        Outcome::Appended { .. } => 0,
                        Outcome::Duplicate { .. } => 1,
                        Outcome::Refused(_) => 2,
                        Outcome::Unreadable(_) => 3,
                    };
                    tally[slot] += 1;
                    write_outcome(&p.label, &outcome, a.json, out).map_err(Failure::write)?;
                }
                out.flush().map_err(Failure::write)
            })?;
            progress.inc(pending.len() as u64);
        }
        Ok(())
    });
    result?;
    progress.finish_and_clear();
    if !a.json {
        let style = if tally[2] + tally[3] > 0 {
            out.palette.bad
        } else {
            anstyle::Style::new()
        };
        writeln!(
            out,
            "{} appended, {} already logged, {}{} refused, {} unreadable{}; the log holds {size} (checkpoint signed)",
            tally[0],
            tally[1],
            style.render(),
            tally[2],
            tally[3],
            style.render_reset(),
        )
        .map_err(Failure::write)?;
    }
    if tally.iter().sum::<usize>() == 0 {
        return Err(Failure::error("no receipts found in the inputs given"));
    }
    Ok(if tally[3] > 0 {
        Exit::Error
    } else if tally[2] > 0 {
        Exit::Invalid
    } else {
        Exit::Ok
    })
}

/// The reader's size message, in the log's terms.
fn entry_limit(why: inputs::InputError, max: usize) -> String {
    if why.is_size() {
        format!(
            "larger than {} bytes: a log entry is at most 65,535 bytes (the length prefix of tlog-tiles entry bundles); log a smaller receipt",
            max - 1
        )
    } else {
        why.to_string()
    }
}

fn write_outcome(label: &str, o: &Outcome, json: bool, out: &mut Output) -> std::io::Result<()> {
    let p = out.palette;
    if json {
        let v = match o {
            Outcome::Appended { index, sha256, .. } => {
                json!({"input": label, "status": "appended", "index": index, "sha256": chit_core::digest::hex(sha256)})
            }
            Outcome::Duplicate { index, sha256, .. } => {
                json!({"input": label, "status": "present", "index": index, "sha256": chit_core::digest::hex(sha256)})
            }
            Outcome::Refused(r) => json!({
                "input": label,
                "status": "refused",
                "verdict": r.status().name(),
                "findings": r.errors.iter().map(|f| json!({"rule": f.rule, "path": f.path, "message": f.message})).collect::<Vec<_>>(),
            }),
            Outcome::Unreadable(why) => {
                json!({"input": label, "status": "unreadable", "error": why})
            }
        };
        return writeln!(out, "{v}");
    }
    let label = render::escape(label);
    match o {
        Outcome::Appended { index, .. } => writeln!(
            out,
            "{}APPENDED{} {label} at {index}",
            p.good.render(),
            p.good.render_reset()
        ),
        Outcome::Duplicate { index, .. } => {
            writeln!(out, "PRESENT {label} at {index} (already logged)")
        }
        Outcome::Refused(r) => {
            writeln!(
                out,
                "{}REFUSED{} {label}",
                p.bad.render(),
                p.bad.render_reset()
            )?;
            if r.errors.is_empty() {
                writeln!(out, "  {}", chit_logstore::policy::refusal(r))?;
            }
            for f in &r.errors {
                let at = if f.path.is_empty() {
                    String::new()
                } else {
                    format!(" at {}", f.path)
                };
                writeln!(
                    out,
                    "  {}{}{}{at}: {}",
                    p.rule.render(),
                    f.rule,
                    p.rule.render_reset(),
                    render::escape(&f.message)
                )?;
            }
            Ok(())
        }
        Outcome::Unreadable(why) => writeln!(
            out,
            "{}UNREADABLE{} {label}: {}",
            p.bad.render(),
            p.bad.render_reset(),
            render::escape(why)
        ),
    }
}

fn get(a: &LogGetArgs, out: &mut Output) -> CmdResult {
    let mut log = open_log(&a.store)?;
    let name: EntryName = a
        .which
        .parse()
        .map_err(|why| Failure::error(format!("{}: {why}", a.which)))?;
    let index = log
        .locate(name)
        .map_err(store_failure)?
        .ok_or_else(|| Failure::invalid(format!("no entry has content address {}", a.which)))?;
    let e = log.entry(index).map_err(|e| match e {
        LogError::Proof(ProofError::IndexOutOfRange { index, size }) => Failure::invalid(format!(
            "no entry {index}: the log holds {size} (0 to {})",
            size.saturating_sub(1)
        )),
        e => store_failure(e),
    })?;
    if a.json {
        let v = json!({
            "index": e.index,
            "sha256": chit_core::digest::hex(&e.sha256),
            "integrated_at": e.integrated_at,
            "entry": B64.encode(&e.data),
        });
        writeln!(out, "{v}").map_err(Failure::write)?;
    } else {
        out.write_all(&e.data).map_err(Failure::write)?;
    }
    Ok(Exit::Ok)
}

fn checkpoint(a: &LogStoreArg, out: &mut Output) -> CmdResult {
    let mut log = open_log(a)?;
    let (_, note) = log.head().map_err(store_failure)?;
    out.write_all(&note).map_err(Failure::write)?;
    Ok(Exit::Ok)
}

fn b64s(hs: &[[u8; 32]]) -> Vec<String> {
    hs.iter().map(|h| B64.encode(h)).collect()
}

fn prove(a: &LogProveArgs, out: &mut Output) -> CmdResult {
    let mut log = open_log(&a.store)?;
    let (latest, note) = log.head().map_err(store_failure)?;
    let size = a.size.unwrap_or(latest);
    if size > latest || a.index >= size {
        return Err(Failure::invalid(format!(
            "no entry {} in a tree of {size} (the log holds {latest})",
            a.index
        )));
    }
    let proof = log.inclusion_proof(a.index, size).map_err(store_failure)?;
    let root = log.root(size).map_err(store_failure)?;
    let e = log
        .store()
        .entry(a.index)
        .map_err(store_failure)?
        .ok_or_else(|| Failure::error(format!("entry {} is missing from the store", a.index)))?;
    let leaf = chit_log::tree::leaf_hash(&e.data);
    chit_log::tree::verify_inclusion(&leaf, a.index, size, &proof, &root).map_err(|e| {
        Failure::error(format!(
            "the store's tiles give a proof that fails ({e}); run chit log audit"
        ))
    })?;
    let mut v = json!({
        "index": a.index,
        "size": size,
        "leaf_hash": B64.encode(leaf),
        "root": B64.encode(root),
        "inclusion_proof": b64s(&proof),
    });
    if size == latest {
        v["checkpoint"] = json!(String::from_utf8_lossy(&note));
    }
    writeln!(out, "{v}").map_err(Failure::write)?;
    Ok(Exit::Ok)
}

fn consistency(a: &LogConsistencyArgs, out: &mut Output) -> CmdResult {
    let mut log = open_log(&a.store)?;
    let (latest, _) = log.head().map_err(store_failure)?;
    if a.old > a.new || a.new > latest {
        return Err(Failure::invalid(format!(
            "sizes {} and {}: need OLD <= NEW <= {latest} (the log's size)",
            a.old, a.new
        )));
    }
    let proof = log.consistency_proof(a.old, a.new).map_err(store_failure)?;
    let (r_old, r_new) = (
        log.root(a.old).map_err(store_failure)?,
        log.root(a.new).map_err(store_failure)?,
    );
    chit_log::tree::verify_consistency(a.old, a.new, &r_old, &r_new, &proof).map_err(|e| {
        Failure::error(format!(
            "the store's tiles give a proof that fails ({e}); run chit log audit"
        ))
    })?;
    let v = json!({
        "old": a.old,
        "new": a.new,
        "old_root": B64.encode(r_old),
        "new_root": B64.encode(r_new),
        "consistency_proof": b64s(&proof),
    });
    writeln!(out, "{v}").map_err(Failure::write)?;
    Ok(Exit::Ok)
}

fn bundle(a: &LogBundleArgs, out: &mut Output) -> CmdResult {
    let mut log = open_log(&a.store)?;
    let mut all = Vec::new();
    for &i in &a.indexes {
        all.push(log.bundle(i).map_err(store_failure)?.to_json());
    }
    let v = if all.len() == 1 {
        all.pop().expect("one")
    } else {
        serde_json::Value::Array(all)
    };
    writeln!(out, "{v}").map_err(Failure::write)?;
    Ok(Exit::Ok)
}

fn proof(a: &LogProofArgs, out: &mut Output) -> CmdResult {
    let proof = match (&a.store, &a.url) {
        (Some(store), _) => {
            let quorum = a
                .policy
                .as_deref()
                .map(crate::shared::logs::read_policy)
                .transpose()?;
            let mut log = open_log(&LogStoreArg {
                store: store.clone(),
            })?;
            let proof = log
                .tlog_proof(a.index, quorum.as_ref())
                .map_err(store_failure)?;
            if let Some(q) = &quorum {
                if !q.open(&proof.checkpoint).is_ok_and(|w| w.quorum) {
                    eprintln!(
                        "chit: warning: no checkpoint covering entry {} meets the policy's quorum \
                         ({}); the proof is over the latest, which a reader holding this policy \
                         refuses (wait for the witnesses, or run chit log witness)",
                        a.index,
                        q.quorum_text()
                    );
                }
            }
            proof
        }
        (None, Some(url)) => proof_from_url(url, a.index)?,
        (None, None) => unreachable!("clap requires one"),
    };
    out.write_all(&proof.to_bytes()).map_err(Failure::write)?;
    Ok(Exit::Ok)
}

/// A tlog-proof assembled from what a log serves: its checkpoint, the hash
/// tiles the inclusion proof needs and the entry's bundle. Nothing is
/// trusted here: the proof is checked against the checkpoint's root, and
/// the checkpoint's signatures are for the verifier's policy to judge.
fn proof_from_url(url: &str, index: u64) -> Result<chit_log::proof::TlogProof, Failure> {
    use chit_log::tiles::{parse_entry_bundle, Tile, TileKind, TileSource, TILE_WIDTH};
    let remote = crate::shared::remote::Remote::new(url).map_err(Failure::error)?;
    let fetch = |path: &str| -> Result<Vec<u8>, String> {
        remote
            .get(path)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("{url} serves no {path}"))
    };
    let note = fetch("checkpoint").map_err(Failure::error)?;
    let cp = chit_log::Checkpoint::from_note(&note)
        .map_err(|e| Failure::error(format!("{url}/checkpoint: {e}")))?;
    if index >= cp.size {
        return Err(Failure::error(format!(
            "{url} holds {} entries: there is no entry {index}",
            cp.size
        )));
    }
    let src = TileSource::new(cp.size, |t: &Tile| fetch(&t.path()));
    let inclusion_proof = chit_log::tree::inclusion_proof(&src, index, cp.size)
        .map_err(|e| Failure::error(format!("{url}: {e}")))?;
    let first = index - index % u64::from(TILE_WIDTH);
    let width = (cp.size - first).min(u64::from(TILE_WIDTH)) as u16;
    let bundle = Tile {
        kind: TileKind::Entries,
        index: first / u64::from(TILE_WIDTH),
        width,
    };
    let data = fetch(&bundle.path()).map_err(Failure::error)?;
    let entries = parse_entry_bundle(&data, width)
        .map_err(|e| Failure::error(format!("{url}/{}: {e}", bundle.path())))?;
    let entry = entries[(index - first) as usize];
    chit_log::tree::verify_inclusion(
        &chit_log::tree::leaf_hash(entry),
        index,
        cp.size,
        &inclusion_proof,
        &cp.root,
    )
    .map_err(|e| {
        Failure::error(format!(
            "{url} serves tiles that do not prove entry {index} under its checkpoint: {e}"
        ))
    })?;
    Ok(chit_log::proof::TlogProof {
        extra: None,
        index,
        inclusion_proof,
        checkpoint: note,
    })
}

fn export_tiles(a: &LogExportArgs, out: &mut Output) -> CmdResult {
    let mut log = open_log(&a.store)?;
    let (size, note) = log.head().map_err(store_failure)?;
    let dir = &a.dir;
    // A new or empty folder, or one this log was exported to before.
    match std::fs::read_dir(dir) {
        Ok(mut it) => {
            if it.next().is_some() {
                // Ours: its checkpoint opens with this log's key.
                let ours = std::fs::read(dir.join("checkpoint"))
                    .is_ok_and(|c| log.open_checkpoint(&c, &[]).is_ok());
                if !ours {
                    return Err(Failure::error(format!(
                        "{} is not empty and holds no export of {}; chit writes tiles only into a new or empty folder, or one it exported this log to",
                        dir.display(),
                        log.meta().origin
                    )));
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Failure::error(format!("{}: {e}", dir.display()))),
    }
    let (mut written, mut kept) = (0u64, 0u64);
    for t in chit_log::tiles::tiles_for_size(size) {
        let path = dir.join(t.path());
        let full = t.width == chit_log::tiles::TILE_WIDTH;
        if full && path.is_file() {
            kept += 1; // a full tile never changes
            continue;
        }
        let data = tile_bytes(&mut log, &t)?;
        write_file(&path, &data)?;
        written += 1;
    }
    write_file(&dir.join("checkpoint"), &note)?;
    writeln!(
        out,
        "wrote {written} tile(s) and the checkpoint of size {size} to {} ({kept} full tile(s) already there)",
        dir.display()
    )
    .map_err(Failure::write)?;
    Ok(Exit::Ok)
}

/// Writes a file through a temporary one renamed into place; refuses to
/// replace anything but a regular file.
fn write_file(path: &Path, data: &[u8]) -> Result<(), Failure> {
    let fail = |e: std::io::Error| Failure::error(format!("cannot write {}: {e}", path.display()));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if !m.is_file() {
            return Err(Failure::error(format!(
                "{} is not a regular file; chit replaces only files it wrote",
                path.display()
            )));
        }
    }
    // A new file of a fresh name (never a link followed), renamed over.
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".chit-")
        .tempfile_in(dir)
        .map_err(fail)?;
    tmp.write_all(data).map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

/// chit's state folder: $XDG_STATE_HOME/chit, else ~/.local/state/chit.
fn state_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_STATE_HOME")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .map(|d| d.join("chit"))
}

/// The default audit state of a source: by its origin and by where it is
/// (a path made absolute, or a URL without its password), so a source
/// that changes its origin and key is still held to what it showed
/// before, and a mirror is not held to its log's newer checkpoint.
fn default_state(kind: &str, origin: &str, source: &str) -> Result<PathBuf, Failure> {
    let place = std::fs::canonicalize(source)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| {
            chit_logstore::postgres::parse_location(source)
                .map(|(_, _, shown)| shown)
                .unwrap_or_else(|_| source.to_string())
        });
    let tag = &chit_core::digest::sha256_hex(place.as_bytes())[..12];
    let origin = format!("{origin}-{tag}");
    let origin = origin.as_str();
    let name: String = origin
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    state_dir()
        .map(|d| d.join(kind).join(format!("{name}.json")))
        .ok_or_else(|| {
            Failure::error("no HOME or XDG_STATE_HOME for the audit state; give --state FILE")
        })
}

fn origin_of(note: &[u8]) -> String {
    String::from_utf8_lossy(note)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

fn audit_cmd(a: &LogAuditArgs, out: &mut Output) -> CmdResult {
    let is_url = crate::shared::remote::is_url(&a.source);
    // A folder of tiles or a URL: only what the log serves (no policy, no
    // key named), as any tiles client sees it. A log folder is a store.
    let path = Path::new(&a.source);
    let is_dir = is_url
        || (!chit_logstore::is_postgres(&a.source)
            && path.is_dir()
            && !chit_logstore::folder::is_log_folder(path));
    // What a log folder publishes is held to it too.
    let published =
        (!is_dir && chit_logstore::folder::is_log_folder(path)).then(|| path.join("public"));
    let mut source: Box<dyn audit::Source> = if is_url {
        Box::new(crate::shared::remote::Remote::new(&a.source).map_err(Failure::error)?)
    } else if is_dir {
        Box::new(audit::TilesDir {
            root: PathBuf::from(&a.source),
        })
    } else {
        Box::new(chit_logstore::open(&a.source).map_err(store_failure)?)
    };
    let head = source.head().map_err(Failure::error)?;
    let origin = origin_of(&head);
    let state_path = match &a.state {
        Some(p) => p.clone(),
        None => default_state("audit", &origin, &a.source)?,
    };
    // A policy's witnesses and quorum (and its key for this origin).
    let file_policy = match &a.policy {
        Some(p) => Some(crate::shared::logs::read_policy(p)?),
        None => None,
    };
    let policy_key = match (&file_policy, &a.policy) {
        (Some(p), Some(path)) => Some(
            p.logs_of(&origin)
                .first()
                .map(|(_, l)| l.verifier.verifier_key())
                .ok_or_else(|| {
                    Failure::error(format!(
                        "the policy {} lists no log named {origin:?} (the name the log's \
                         checkpoint gives): add its log line to hold it to its key",
                        path.display()
                    ))
                })?,
        ),
        _ => None,
    };
    // The key: given, else the policy's, else the state's, else the
    // store's own.
    let key_text = match a
        .log_key
        .as_deref()
        .map(verifier_key_text)
        .transpose()?
        .or(policy_key)
    {
        Some(k) => k,
        None => match saved_key(&state_path)? {
            Some(k) => k,
            None if !is_dir => {
                let store = chit_logstore::open(&a.source).map_err(store_failure)?;
                let log = Log::open(store).map_err(store_failure)?;
                eprintln!(
                    "note: trusting the log key the store names ({}) on first use; give --log-key to pin it",
                    log.meta().verifier_key
                );
                log.meta().verifier_key.clone()
            }
            None => {
                return Err(Failure::error(
                    "give the log's key with --log-key (a folder of tiles does not name it)",
                ))
            }
        },
    };
    let verifier = NoteVerifier::from_verifier_key(&key_text)
        .map_err(|e| Failure::error(format!("the log key {key_text}: {e}")))?;
    let trust = match file_policy {
        Some(p) => Some(p),
        None if a.witness.witnesses.is_empty() && a.witness.min_witnesses == 0 => None,
        None => Some(
            chit_log::policy::Policy::from_keys(
                vec![verifier.clone()],
                witness_verifiers(&a.witness)?,
                a.witness.min_witnesses,
            )
            .map_err(|e| Failure::error(e.message))?,
        ),
    };
    let previous = audit::load_state(&state_path, &key_text).map_err(Failure::error)?;
    let policy = if a.reverify {
        if is_dir {
            return Err(Failure::error(
                "--reverify needs the log's store (a folder of tiles does not carry its policy)",
            ));
        }
        let store = chit_logstore::open(&a.source).map_err(store_failure)?;
        let log = Log::open(store).map_err(store_failure)?;
        Some(log.policy().compile().map_err(Failure::error)?)
    } else {
        None
    };
    let bar = entries_bar(|| {
        open_checkpoint(&head, &origin, &verifier, &[])
            .map(|c| c.checkpoint.size)
            .unwrap_or(0)
    });
    let progress = |n: u64| bar.set_position(n);
    let opts = audit::Options {
        verifier: &verifier,
        trust: trust.as_ref(),
        previous: previous.as_deref(),
        reverify: policy.as_ref(),
        progress: &progress,
        published: published.as_deref(),
    };
    let started = std::time::Instant::now();
    let report = audit::audit(&mut *source, &opts).map_err(Failure::error)?;
    let secs = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    if report.ok() {
        audit::save_state(&state_path, &key_text, &report.checkpoint).map_err(Failure::error)?;
    }
    if a.json {
        let v = json!({
            "source": report.source,
            "consistent": report.ok(),
            "size": report.size,
            "root": B64.encode(report.root),
            "checkpoint": String::from_utf8_lossy(&report.checkpoint),
            "consistent_from": report.consistent_from,
            "entries_hashed": report.entries_hashed,
            "bytes_hashed": report.bytes_hashed,
            "seconds": secs,
            "reverified": report.reverified.map(|(ok, bad)| json!({"valid": ok, "refused": bad})),
            "gaps": report.gaps,
            "problems": report.problems.iter().map(|p| json!({
                "step": p.step,
                "index": p.index,
                "message": p.message,
                "evidence": p.evidence.iter().map(|e| String::from_utf8_lossy(e)).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "state": state_path.display().to_string(),
        });
        writeln!(out, "{v}").map_err(Failure::write)?;
    } else {
        let p = out.palette;
        if report.ok() {
            writeln!(
                out,
                "{}CONSISTENT{} {}: {} entries recomputed in {secs:.2} s, root {}{}",
                p.good.render(),
                p.good.render_reset(),
                render::escape(&report.source),
                report.size,
                B64.encode(report.root),
                match report.consistent_from {
                    Some(m) => format!(", a continuation of size {m} seen before"),
                    None => ", first audit (state saved)".into(),
                }
            )
            .map_err(Failure::write)?;
        } else {
            writeln!(
                out,
                "{}INCONSISTENT{} {}: {} problem(s)",
                p.bad.render(),
                p.bad.render_reset(),
                render::escape(&report.source),
                report.problems.len()
            )
            .map_err(Failure::write)?;
        }
        if let Some((ok, bad)) = report.reverified {
            writeln!(out, "reverified: {ok} valid, {bad} refused").map_err(Failure::write)?;
        }
        for g in &report.gaps {
            writeln!(
                out,
                "{}gap{} {}",
                p.warn.render(),
                p.warn.render_reset(),
                render::escape(g)
            )
            .map_err(Failure::write)?;
        }
        const SHOWN: usize = 20;
        for prob in report.problems.iter().take(SHOWN) {
            writeln!(
                out,
                "  {}{}{}: {}",
                p.rule.render(),
                prob.step,
                p.rule.render_reset(),
                render::escape(&prob.message)
            )
            .map_err(Failure::write)?;
            for (i, e) in prob.evidence.iter().enumerate() {
                writeln!(out, "  evidence {}:", i + 1).map_err(Failure::write)?;
                for line in String::from_utf8_lossy(e).lines() {
                    writeln!(out, "    {}", render::escape(line)).map_err(Failure::write)?;
                }
            }
        }
        if report.problems.len() > SHOWN {
            writeln!(
                out,
                "  and {} more (--json lists them all)",
                report.problems.len() - SHOWN
            )
            .map_err(Failure::write)?;
        }
    }
    Ok(if report.ok() { Exit::Ok } else { Exit::Invalid })
}

fn saved_key(path: &Path) -> Result<Option<String>, Failure> {
    match std::fs::read(path) {
        Ok(b) => Ok(serde_json::from_slice::<serde_json::Value>(&b)
            .ok()
            .and_then(|v| v.get("verifier_key")?.as_str().map(str::to_string))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Failure::error(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

fn witness(a: &LogWitnessArgs, out: &mut Output) -> CmdResult {
    let key_text = verifier_key_text(&a.log_key)?;
    let verifier = NoteVerifier::from_verifier_key(&key_text)
        .map_err(|e| Failure::error(format!("--log-key {key_text}: {e}")))?;
    let pem = read_text(&a.key, "key")?;
    let cosigner = Cosigner::from_pkcs8_pem(&a.name, &pem)
        .map_err(|e| Failure::error(format!("{}: {e}", a.key.display())))?;
    let mut log = open_log(&a.store)?;
    let origin = log.meta().origin.clone();
    let (size, note) = log.store().head().map_err(store_failure)?;
    let opened = open_checkpoint(&note, &origin, &verifier, &[]).map_err(|e| {
        Failure::invalid(format!(
            "the log's checkpoint does not open with --log-key: {e}"
        ))
    })?;
    let cp = &opened.checkpoint;
    if cp.size != size {
        return Err(Failure::invalid(format!(
            "the log's checkpoint is of size {}, but it holds {size}",
            cp.size
        )));
    }
    // One run of this witness at a time: two at once could each prove a
    // different fork consistent with the same last checkpoint.
    let _lock = crate::shared::logs::lock_state(&a.state, "chit log witness")?;
    let previous = audit::load_state(&a.state, &key_text).map_err(Failure::error)?;
    if let Some(prev) = &previous {
        let old = open_checkpoint(prev, &origin, &verifier, &[])
            .map_err(|e| Failure::error(format!("the witness state {}: {e}", a.state.display())))?;
        let (m, r) = (old.checkpoint.size, old.checkpoint.root);
        let refuse = |why: String| -> CmdResult {
            let mut msg = format!("refusing to cosign: {why}\nevidence 1 (cosigned before):\n");
            msg.push_str(&String::from_utf8_lossy(prev));
            msg.push_str("evidence 2 (now):\n");
            msg.push_str(&String::from_utf8_lossy(&note));
            Err(Failure::invalid(msg))
        };
        if m > cp.size {
            return refuse(format!("the log shrank from {m} to {}", cp.size));
        }
        if m == cp.size && r != cp.root {
            return refuse(format!(
                "two checkpoints of size {m} with different roots (a split view)"
            ));
        }
        if m < cp.size {
            let proof = log.consistency_proof(m, cp.size).map_err(store_failure)?;
            if let Err(e) = chit_log::tree::verify_consistency(m, cp.size, &r, &cp.root, &proof) {
                return refuse(format!(
                    "size {m} is not a prefix of size {} ({e})",
                    cp.size
                ));
            }
        }
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let sig = cosigner
        .cosign(&opened.text, now)
        .map_err(|e| Failure::error(e.to_string()))?;
    // Added to the note as it is now: another witness may have added its
    // own since it was read; a lost race is read again and merged.
    let mut current = note.clone();
    for attempt in 0.. {
        let cosigned = chit_log::checkpoint::add_signatures(&current, std::slice::from_ref(&sig))
            .map_err(|e| Failure::error(e.to_string()))?;
        if log
            .store()
            .replace_checkpoint(cp.size, &current, &cosigned)
            .map_err(store_failure)?
        {
            break;
        }
        current = log
            .store()
            .checkpoint_at(cp.size)
            .map_err(store_failure)?
            .filter(|n| {
                attempt < 16
                    && open_checkpoint(n, &origin, &verifier, &[])
                        .is_ok_and(|o| o.text == opened.text)
            })
            .ok_or_else(|| {
                Failure::error(
                    "the checkpoint changed while it was cosigned; run chit log witness again",
                )
            })?;
    }
    audit::save_state(&a.state, &key_text, &note).map_err(Failure::error)?;
    writeln!(
        out,
        "cosigned {origin} at size {} (time {now})\nwitness key: {}",
        cp.size,
        cosigner.verifier_key()
    )
    .map_err(Failure::write)?;
    Ok(Exit::Ok)
}
