//! Logs as the commands and the server open them: a store and its key,
//! a new log's policy, a verifier key, one document appended.

use crate::cli::WitnessArgs;
use crate::exit::Failure;
use crate::inputs::{self, Source};
use crate::output::Output;
use chit_log::checkpoint::CosignatureVerifier;
use chit_log::note::{NoteSigner, NoteVerifier};
use chit_log::tiles::{Tile, TileKind};
use chit_logstore::{Log, Outcome, Policy};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A key file is a few hundred bytes.
pub const KEY_MAX: usize = 16 * 1024;

pub fn store_failure(e: impl std::fmt::Display) -> Failure {
    Failure::error(e.to_string())
}

/// The log a store location holds, to read (a server's reads: its full
/// tiles kept once read).
pub fn open_store_log(store: &str) -> Result<Log, Failure> {
    let inner = chit_logstore::open(store).map_err(store_failure)?;
    Log::open(Box::new(chit_logstore::store::FullTiles::new(inner))).map_err(store_failure)
}

/// Opens a log to append to: its private key from `key`, else the file
/// named at init; the sequencer's lease taken.
pub fn open_for_append(store: &str, key: Option<&Path>) -> Result<Log, Failure> {
    let mut log = open_with_key(store, key)?;
    log.lease(std::time::Duration::from_secs(30))
        .map_err(store_failure)?;
    Ok(log)
}

/// Opens a log with its private key, without the sequencer's lease (a
/// server takes it batch by batch), its full tiles kept once read; a log
/// whose policy is not bound to it is refused.
pub fn open_with_key(store: &str, key: Option<&Path>) -> Result<Log, Failure> {
    open_signed(store, key, false)
}

/// [`open_with_key`] for a log whose policy may not be bound yet, to bind it.
pub fn open_to_bind(store: &str, key: Option<&Path>) -> Result<Log, Failure> {
    open_signed(store, key, true)
}

fn open_signed(store: &str, key: Option<&Path>, to_bind: bool) -> Result<Log, Failure> {
    let inner = chit_logstore::open(store).map_err(store_failure)?;
    let log =
        Log::open(Box::new(chit_logstore::store::FullTiles::new(inner))).map_err(store_failure)?;
    let key_path = match (key, &log.meta().key_file) {
        (Some(k), _) => k.to_path_buf(),
        (None, Some(k)) => PathBuf::from(k),
        (None, None) => {
            return Err(Failure::error(
                "give the log's private key (this log names none)",
            ))
        }
    };
    let pem = read_text(&key_path, "key")?;
    if to_bind {
        log.with_signer_to_bind(&pem)
    } else {
        log.with_signer(&pem)
    }
    .map_err(store_failure)
}

/// Appends one document; its index, or a failure naming why it was refused.
pub fn append_one(log: &mut Log, bytes: &[u8], what: &str) -> Result<u64, Failure> {
    let sub = log.submit(&[bytes]).map_err(store_failure)?;
    match sub.outcomes.into_iter().next() {
        Some(Outcome::Appended { index, .. }) | Some(Outcome::Duplicate { index, .. }) => Ok(index),
        Some(Outcome::Refused(r)) => Err(Failure::invalid(format!(
            "the log {} refused {what}: {}",
            log.meta().origin,
            chit_logstore::policy::refusal(&r)
        ))),
        Some(Outcome::Unreadable(why)) => Err(Failure::error(format!("{what}: {why}"))),
        None => Err(Failure::error("the log gave no answer")),
    }
}

pub fn read_text(path: &Path, what: &str) -> Result<String, Failure> {
    let bytes = inputs::read(&Source::File(path.to_path_buf()), KEY_MAX).map_err(|why| {
        Failure::error(format!("cannot read the {what} {}: {why}", path.display()))
    })?;
    String::from_utf8(bytes)
        .map_err(|_| Failure::error(format!("the {what} {} is not UTF-8", path.display())))
}

/// A verifier key given literally (NAME+KEYID+BASE64) or in a file.
pub fn verifier_key_text(arg: &str) -> Result<String, Failure> {
    if arg.contains('+') && !Path::new(arg).exists() {
        return Ok(arg.trim().to_string());
    }
    Ok(read_text(Path::new(arg), "verifier key")?
        .trim()
        .to_string())
}

pub fn log_verifier(arg: &str) -> Result<NoteVerifier, Failure> {
    let text = verifier_key_text(arg)?;
    NoteVerifier::from_verifier_key(&text)
        .map_err(|e| Failure::error(format!("--log-key {text}: {e}")))
}

pub fn witness_verifiers(w: &WitnessArgs) -> Result<Vec<CosignatureVerifier>, Failure> {
    if w.min_witnesses > w.witnesses.len() {
        return Err(Failure::error(format!(
            "--min-witnesses {} but only {} --witness key(s) given",
            w.min_witnesses,
            w.witnesses.len()
        )));
    }
    w.witnesses
        .iter()
        .map(|a| {
            let text = verifier_key_text(a)?;
            CosignatureVerifier::from_verifier_key(&text)
                .map_err(|e| Failure::error(format!("--witness {text}: {e}")))
        })
        .collect()
}

/// A C2SP tlog-policy file, read (no larger than a policy may be) and
/// parsed.
pub fn read_policy(path: &Path) -> Result<chit_log::policy::Policy, Failure> {
    let bytes = inputs::read(
        &Source::File(path.to_path_buf()),
        chit_log::policy::MAX_POLICY_BYTES,
    )
    .map_err(|why| Failure::error(format!("cannot read the policy {}: {why}", path.display())))?;
    chit_log::policy::Policy::parse(&bytes)
        .map_err(|e| Failure::error(format!("the policy {}: {e}", path.display())))
}

/// The trust policy a command is given: a C2SP tlog-policy file
/// (`--policy`), or the one its shorthands state (`--log-key`, each
/// `--witness`, a quorum of `--min-witnesses` of them); `None` when
/// neither is given. The command's flags make the two exclusive.
pub fn trust_policy(
    policy: Option<&Path>,
    log_key: Option<&str>,
    w: &WitnessArgs,
) -> Result<Option<chit_log::policy::Policy>, Failure> {
    if let Some(path) = policy {
        return read_policy(path).map(Some);
    }
    let Some(k) = log_key else {
        if !w.witnesses.is_empty() || w.min_witnesses > 0 {
            return Err(Failure::error(
                "--witness and --min-witnesses name a log's witnesses: give the log's key with \
                 --log-key, or a policy with --policy",
            ));
        }
        return Ok(None);
    };
    let p = chit_log::policy::Policy::from_keys(
        vec![log_verifier(k)?],
        witness_verifiers(w)?,
        w.min_witnesses,
    )
    .map_err(|e| Failure::error(e.message))?;
    Ok(Some(p))
}

/// Makes a new log in `store` (never over an existing file) signed with
/// `key`, named `origin`, accepting what `a` says, and prints what it made.
pub fn create_log(
    store: &str,
    key: &Path,
    origin: &str,
    a: &crate::cli::PolicyArgs,
    out: &mut Output,
) -> Result<(), Failure> {
    if !chit_log::note::is_valid_name(origin) {
        return Err(Failure::error(format!(
            "--origin {origin:?}: a log's name is printable ASCII without spaces or '+' (e.g. example.com/receipts)"
        )));
    }
    let pem = read_text(key, "key")?;
    let signer = NoteSigner::from_pkcs8_pem(origin, &pem)
        .map_err(|e| Failure::error(format!("{}: {e}", key.display())))?;
    let policy = policy_from(a)?;
    let key_file = std::fs::canonicalize(key)
        .ok()
        .map(|p| p.display().to_string());
    let log = Log::create(store, signer, &policy, key_file).map_err(store_failure)?;
    let p = out.palette;
    writeln!(
        out,
        "{}created{} log {origin} in {store}",
        p.good.render(),
        p.good.render_reset(),
    )
    .map_err(Failure::write)?;
    writeln!(out, "log key: {}", log.meta().verifier_key).map_err(Failure::write)?;
    writeln!(out, "accepts: {}", policy.describe()).map_err(Failure::write)?;
    Ok(())
}

/// The policy the options describe, as a log stores it (the trust file's
/// text, parsed first so that a broken one is refused).
pub fn policy_from(a: &crate::cli::PolicyArgs) -> Result<Policy, Failure> {
    let trust = match &a.trust {
        None => None,
        Some(p) => {
            super::trust::read_trust(p, KEY_MAX * 64)?;
            Some(read_text(p, "trust file")?)
        }
    };
    Ok(Policy {
        trust,
        threshold: a.threshold.unwrap_or(1) as usize,
        accept_unsigned: a.accept_unsigned,
        allow_unchecked: a.allow_unchecked,
    })
}

/// A tile of the log as C2SP tlog-tiles serves it: a hash tile (cut to
/// its width) or an entry bundle, read from the store.
pub fn tile_bytes(log: &mut Log, t: &Tile) -> Result<Vec<u8>, Failure> {
    let w = u64::from(chit_log::tiles::TILE_WIDTH);
    match t.kind {
        TileKind::Hashes(level) => {
            let mut data = log
                .store()
                .tile(level, t.index)
                .map_err(store_failure)?
                .ok_or_else(|| {
                    Failure::error(format!(
                        "tile {} is missing from the store; run chit log audit",
                        t.path()
                    ))
                })?;
            if data.len() < usize::from(t.width) * 32 {
                return Err(Failure::error(format!(
                    "tile {} is short in the store; run chit log audit",
                    t.path()
                )));
            }
            data.truncate(usize::from(t.width) * 32);
            Ok(data)
        }
        TileKind::Entries => {
            let start = t.index * w;
            let mut entries = Vec::with_capacity(usize::from(t.width));
            log.store()
                .scan(start, start + u64::from(t.width), &mut |e| {
                    entries.push(e.data);
                    Ok(())
                })
                .map_err(store_failure)?;
            if entries.len() != usize::from(t.width) {
                return Err(Failure::error(format!(
                    "entries {start}..{} are not all in the store; run chit log audit",
                    start + u64::from(t.width)
                )));
            }
            chit_log::tiles::encode_entry_bundle(&entries).map_err(store_failure)
        }
    }
}

/// An exclusive lock on a state file's `.lock` beside it, held while the
/// returned file is open (the kernel drops it when the process ends).
pub fn lock_state(state: &Path, who: &str) -> Result<std::fs::File, Failure> {
    let path = state.with_file_name(format!(
        "{}.lock",
        state
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("state")
    ));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::error(format!("cannot create {}: {e}", dir.display())))?;
    }
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Failure::error(format!("cannot open {}: {e}", path.display())))?;
    #[cfg(unix)]
    if rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        return Err(Failure::error(format!(
            "{} is in use by another run of {who}; try again when it ends",
            state.display()
        )));
    }
    Ok(f)
}
