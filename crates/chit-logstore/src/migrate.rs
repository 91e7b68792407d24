//! `chit log migrate OLD NEW`: a log copied into a new store, checkpoint
//! by checkpoint, without its private key.
//!
//! The copy replays the log: the entries each kept checkpoint covers are
//! checked again under the log's policy and appended to the new store as
//! one batch (their labels, packet rows and indexes made as an append
//! makes them, not copied), and the batch's checkpoint is the one the old
//! store keeps, as it was signed and cosigned, once it verifies under the
//! log's key and signs the tree the entries give. So every checkpoint of
//! the old store is proven on the way, and the new store holds the same
//! tree, the same checkpoints and the same policy binding.

use crate::log::{Log, LogError};
use crate::store::{Store, StoreError};
use chit_log::note::NoteVerifier;

/// What a migration copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migrated {
    pub size: u64,
    pub checkpoints: usize,
}

/// Copies the log `from` holds into `to` (a store that holds no log yet),
/// the log's key being `verifier`'s. `progress` is told the size copied so
/// far.
pub fn migrate(
    from: &mut dyn Store,
    to: Box<dyn Store>,
    verifier: &NoteVerifier,
    progress: &dyn Fn(u64),
) -> Result<Migrated, LogError> {
    let meta = from.meta()?;
    let wanted = chit_log::note::Verifier::name(verifier);
    let stored = NoteVerifier::from_verifier_key(&meta.verifier_key)
        .map_err(|e| LogError::Key(format!("the stored log key: {e}")))?;
    if wanted != meta.origin || stored.public_key() != verifier.public_key() {
        return Err(LogError::Key(format!(
            "{} is the log {} signed by {}, not by the key given",
            from.location(),
            meta.origin,
            meta.verifier_key
        )));
    }
    let (size, _) = from.head()?;
    let history = from.checkpoints()?;
    let Some((0, first)) = history.first().cloned() else {
        return Err(LogError::Store(StoreError::Read(format!(
            "{} keeps no checkpoint of size 0",
            from.location()
        ))));
    };
    if history.last().map(|(s, _)| *s) != Some(size) {
        return Err(LogError::Store(StoreError::Read(format!(
            "{}: its latest checkpoint is not among the checkpoints it keeps",
            from.location()
        ))));
    }
    // A policy changed behind the log's back is not carried over (a log
    // made before policies were bound is copied unbound, as it is).
    match crate::binding::check(
        verifier,
        &meta.origin,
        &meta.policy,
        meta.policy_binding.as_deref(),
    ) {
        Ok(()) | Err(crate::binding::Unbound::Missing) => {}
        Err(why) => {
            return Err(LogError::Unbound(format!("{}: {why}", from.location())));
        }
    }
    let empty = chit_log::checkpoint::open_checkpoint(&first, &meta.origin, verifier, &[])
        .map_err(|e| LogError::Checkpoint(format!("its checkpoint of size 0: {e}")))?;
    if empty.checkpoint.size != 0 || empty.checkpoint.root != chit_log::tree::EMPTY_ROOT {
        return Err(LogError::Checkpoint(
            "its checkpoint of size 0 is not one of the empty tree".into(),
        ));
    }
    let mut to = to;
    to.create(&meta, &first)?;
    let mut log = Log::open(to)?;
    let checker = log.checker();
    let mut done = 0u64;
    for (at, note) in history.iter().skip(1) {
        let mut bytes = Vec::new();
        let mut times = Vec::new();
        let mut next = done;
        from.scan(done, *at, &mut |e| {
            if e.index != next {
                return Err(StoreError::Read(format!(
                    "entry {next} is missing from the old store (run chit log audit on it)"
                )));
            }
            next += 1;
            bytes.push(e.data);
            times.push(e.integrated_at);
            Ok(())
        })?;
        if next != *at {
            return Err(LogError::Store(StoreError::Read(format!(
                "entry {next} is missing from the old store (run chit log audit on it)"
            ))));
        }
        let checked = checker.check_all(bytes);
        done = log.replay(&checked, &times, note)?;
        progress(done);
    }
    Ok(Migrated {
        size: done,
        checkpoints: history.len(),
    })
}
