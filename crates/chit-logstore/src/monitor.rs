//! A monitor (`chit log watch`): follows a log through what it serves (its
//! checkpoint and its entry bundles, C2SP tlog-tiles), and holds every
//! checkpoint it is shown to a trust policy and to the last one it saw of
//! the same log, wherever that was served. What it saw is kept in a state
//! file by the log's origin and key, not by the URL: the same log reached
//! at another address, or a fork of it served elsewhere, is held to the
//! same history.
//!
//! [`watch`] is three named steps:
//!
//! 1. `checkpoint`: the checkpoint is signed by a log of the policy for its
//!    origin, and its witnesses' cosignatures meet the policy's quorum;
//! 2. `consistency`: it is the tree seen before, or one that extends it:
//!    - the same size: the same root (another is a split view, which the
//!      two signed checkpoints prove by themselves);
//!    - larger: a consistency proof from the log's hash tiles, verified
//!      against both signed roots; failing that (no tiles, or tiles that
//!      lie), its entries from the first, read before any is handed out,
//!      must give its root, and their prefix the root seen (if they give
//!      its root and not the prefix's, that is a fork, proven);
//!    - smaller: a consistency proof from where the larger was seen,
//!      verified against both roots (one that fails proves nothing: tiles
//!      vouch for nothing);
//! 3. `entries`: each new entry, in order, is handed to the caller (to
//!    print, match or check again) as it is read, then must give the
//!    checkpoint's root with the tree seen: entries that do not are wrong
//!    (or what served them is), which proves nothing about the log.
//!
//! Progress within a long catch-up is kept too ([`Seen::progress`]): a run
//! stopped halfway resumes where it stopped, its entries proven when the
//! checkpoint is reached.

use crate::audit::{
    consistency_from_tiles, read_tile, write_state_file, SourceError, StateError, TileFiles,
};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use chit_log::checkpoint::Checkpoint;
use chit_log::policy::{OpenError, Policy};
use chit_log::tiles::{parse_entry_bundle, Tile, TileKind, TILE_WIDTH};
use chit_log::tree::{leaf_hash, verify_consistency, CompactRange, Hash};
use rayon::prelude::*;
use serde_json::{json, Value};
use std::path::Path;

/// The state file's `type`.
pub const STATE_TYPE: &str = "chit.log.watch-state.v1";
/// The largest state file read (a few hundred logs).
pub const MAX_STATE_BYTES: u64 = 16 << 20;

/// What the monitor saw of one log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub origin: String,
    /// The verifier key of the log's key that signed it.
    pub key: String,
    /// The newest checkpoint proven, exactly as signed (empty before the
    /// first is: then only [`Seen::progress`] is kept).
    pub checkpoint: Vec<u8>,
    /// The right edge of its tree.
    pub edge: CompactRange,
    /// Where it was served (to prove an older checkpoint a prefix of it).
    pub at: String,
    /// Entries read past it toward a newer checkpoint, not yet proven: the
    /// edge after them.
    pub progress: Option<CompactRange>,
}

/// Every log the monitor follows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    pub logs: Vec<Seen>,
}

impl State {
    /// The state in `path`, or an empty one where there is no file.
    pub fn load(path: &Path) -> Result<State, StateError> {
        let read = |source| StateError::Read {
            path: path.to_path_buf(),
            source,
        };
        let bytes = match std::fs::File::open(path) {
            Ok(f) => {
                let mut b = Vec::new();
                std::io::Read::read_to_end(
                    &mut std::io::Read::take(f, MAX_STATE_BYTES + 1),
                    &mut b,
                )
                .map_err(read)?;
                b
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(State::default()),
            Err(e) => return Err(read(e)),
        };
        let bad = |why: String| StateError::Damaged {
            path: path.to_path_buf(),
            why,
        };
        if bytes.len() as u64 > MAX_STATE_BYTES {
            return Err(bad(format!("larger than {MAX_STATE_BYTES} bytes")));
        }
        let v: Value = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        if v.get("type").and_then(Value::as_str) != Some(STATE_TYPE) {
            return Err(bad(format!("its type is not {STATE_TYPE}")));
        }
        let logs = v
            .get("logs")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no logs list".into()))?;
        let mut state = State::default();
        for l in logs {
            state
                .logs
                .push(seen_from_json(l).map_err(|w| bad(w.to_string()))?);
        }
        Ok(state)
    }

    /// Writes the state atomically.
    pub fn save(&self, path: &Path) -> Result<(), StateError> {
        let logs: Vec<Value> = self.logs.iter().map(seen_to_json).collect();
        let text = serde_json::to_string_pretty(&json!({"type": STATE_TYPE, "logs": logs}))
            .unwrap_or_default();
        write_state_file(path, format!("{text}\n").as_bytes())
    }

    /// What was seen of the log `origin` under `key`.
    pub fn get(&self, origin: &str, key: &str) -> Option<&Seen> {
        self.logs
            .iter()
            .find(|s| s.origin == origin && s.key == key)
    }

    fn put(&mut self, seen: Seen) {
        match self
            .logs
            .iter_mut()
            .find(|s| s.origin == seen.origin && s.key == seen.key)
        {
            Some(s) => *s = seen,
            None => self.logs.push(seen),
        }
    }
}

fn hashes_json(edge: &CompactRange) -> Value {
    Value::Array(edge.hashes().iter().map(|h| json!(B64.encode(h))).collect())
}

fn seen_to_json(s: &Seen) -> Value {
    json!({
        "origin": s.origin,
        "key": s.key,
        "checkpoint": String::from_utf8_lossy(&s.checkpoint),
        "edge": hashes_json(&s.edge),
        "at": s.at,
        "progress": s.progress.as_ref().map(|p| json!({"size": p.size(), "edge": hashes_json(p)})),
    })
}

fn edge_from_json(size: u64, v: Option<&Value>) -> Result<CompactRange, &'static str> {
    let list = v.and_then(Value::as_array).ok_or("an edge is not a list")?;
    let hashes = list
        .iter()
        .map(|h| {
            h.as_str()
                .and_then(|t| B64.decode(t).ok())
                .and_then(|b| Hash::try_from(b).ok())
                .ok_or("an edge hash is not base64 of 32 bytes")
        })
        .collect::<Result<Vec<Hash>, _>>()?;
    CompactRange::from_hashes(size, &hashes).ok_or("an edge does not fit its size")
}

fn seen_from_json(v: &Value) -> Result<Seen, &'static str> {
    let s = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .ok_or("a log lacks a field")
    };
    let checkpoint = s("checkpoint")?.as_bytes().to_vec();
    let cp = if checkpoint.is_empty() {
        Checkpoint::new("none", 0, chit_log::tree::EMPTY_ROOT)
    } else {
        chit_log::note::parse(&checkpoint)
            .ok()
            .and_then(|n| Checkpoint::parse(&n.text).ok())
            .ok_or("a checkpoint that does not read")?
    };
    let edge = edge_from_json(cp.size, v.get("edge"))?;
    if edge.root() != cp.root {
        return Err("an edge whose root is not its checkpoint's");
    }
    let progress = match v.get("progress") {
        None | Some(Value::Null) => None,
        Some(p) => {
            let size = p
                .get("size")
                .and_then(Value::as_u64)
                .filter(|n| *n > cp.size)
                .ok_or("a progress size not past its checkpoint")?;
            Some(edge_from_json(size, p.get("edge"))?)
        }
    };
    Ok(Seen {
        origin: s("origin")?.to_string(),
        key: s("key")?.to_string(),
        checkpoint,
        edge,
        at: s("at")?.to_string(),
        progress,
    })
}

/// What one look at a log found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watched {
    /// The log as first seen, or grown: entries `from..to` were handed out
    /// and proven.
    Grew { from: u64, to: u64 },
    /// The checkpoint seen before, again.
    Same { size: u64 },
    /// An older checkpoint than the one seen, proven a prefix of it.
    Behind { size: u64, seen: u64 },
}

/// Why a look at a log did not pass.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// What the log serves could not be read (nothing is known wrong).
    #[error(transparent)]
    Source(#[from] SourceError),
    /// Step 1: the checkpoint does not meet the policy.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// Step 2: two checkpoints of one log that cannot both be true.
    #[error("consistency: {message}")]
    Inconsistent {
        message: String,
        /// The checkpoint seen before and the one shown now, exactly as
        /// signed.
        evidence: [Vec<u8>; 2],
    },
    /// Step 2: a checkpoint that could not be proven consistent with the
    /// one seen, or inconsistent with it (what served it gives no proof
    /// either way).
    #[error("consistency: {0}")]
    Unproven(String),
    /// Steps 2 and 3: the entries served do not give the root the
    /// checkpoint signs (they, or what served them, are wrong; nothing is
    /// proven about the log).
    #[error("entries: {message}")]
    Entries {
        message: String,
        checkpoint: Vec<u8>,
    },
    /// The state kept for this log is not what this monitor wrote.
    #[error("{0}")]
    State(String),
    /// The caller stopped at an entry.
    #[error("{0}")]
    Stopped(String),
    /// Asked to stop ([`Caller::stop`]): the progress made is saved.
    #[error("stopped")]
    Interrupted,
}

/// Called with the new entries of each bundle, in order (the index of
/// the first, and their bytes); an error stops the look.
pub type EachEntry<'a> = dyn FnMut(u64, &[&[u8]]) -> Result<(), String> + 'a;
/// Opens where a log was served before.
pub type Opener<'a> = dyn Fn(&str) -> Result<Box<dyn TileFiles>, SourceError> + 'a;
/// [`read_entries`]'s callback.
type EachRead<'a> = dyn FnMut(u64, &[&[u8]]) -> Result<(), WatchError> + 'a;

/// The caller's part: the new entries, a bundle at a time in order; and the
/// state to keep after a stretch of entries (to resume from).
pub struct Caller<'a> {
    pub entry: &'a mut EachEntry<'a>,
    pub progress: &'a mut dyn FnMut(&State) -> Result<(), StateError>,
    /// Where the log was served before, to prove an older checkpoint by.
    pub open: &'a Opener<'a>,
    /// Whether to stop (between bundles).
    pub stop: &'a dyn Fn() -> bool,
}

/// Entry bundles asked for ahead of the one being read.
const PREFETCH: u64 = 2;

/// Entries read between two saves of progress (64 bundles).
const PROGRESS_EVERY: u64 = 64 * TILE_WIDTH as u64;

/// The checkpoint `src` serves, as signed.
pub fn head(src: &mut dyn TileFiles) -> Result<Vec<u8>, SourceError> {
    src.read("checkpoint")?
        .ok_or_else(|| SourceError::NoCheckpoint(src.describe()))
}

/// One look at the log `src` serves, whose checkpoint is `note` (its
/// [`head`]), under `policy`: the steps of the module documentation. The
/// state is updated in `state` (the caller saves it) only when the
/// checkpoint is proven.
pub fn watch(
    src: &mut dyn TileFiles,
    note: &[u8],
    policy: &Policy,
    state: &mut State,
    caller: &mut Caller,
) -> Result<Watched, WatchError> {
    let at = src.describe();
    let note = note.to_vec();
    // Step 1.
    let opened = policy.verify(&note).map_err(|e| match e {
        OpenError::Checkpoint(m) | OpenError::Quorum(m) => WatchError::Checkpoint(m),
    })?;
    let cp = opened.checkpoint;
    let key = policy.logs[opened.log].verifier.verifier_key();
    let record = state.get(&cp.origin, &key).cloned();
    let seen = record.clone().filter(|s| !s.checkpoint.is_empty());
    let seen_size = seen.as_ref().map_or(0, |s| s.edge.size());
    // What the state says was seen is signed by the log, and its edge is
    // that checkpoint's tree: a state file changed since is not trusted.
    if let Some(s) = &seen {
        let kept = policy.open(&s.checkpoint).ok().filter(|w| {
            w.checkpoint.origin == s.origin && policy.logs[w.log].verifier.verifier_key() == s.key
        });
        let kept = kept.map(|w| w.checkpoint);
        if kept.is_none_or(|k| k.size != seen_size || k.root != s.edge.root()) {
            return Err(WatchError::State(format!(
                "the state's checkpoint of {} does not verify under the policy, or its tree is \
                 not the one kept with it: the state file was changed (move it aside to start \
                 again)",
                s.origin
            )));
        }
    }
    // Step 2, for a tree no larger than the one seen.
    if let Some(s) = &seen {
        let inconsistent = |message: String| WatchError::Inconsistent {
            message,
            evidence: [s.checkpoint.clone(), note.clone()],
        };
        if cp.size == seen_size {
            if cp.root != s.edge.root() {
                return Err(inconsistent(format!(
                    "a split view: two trees of size {} with different roots",
                    cp.size
                )));
            }
            return Ok(Watched::Same { size: cp.size });
        }
        if cp.size < seen_size {
            let mut there = (caller.open)(&s.at)?;
            let proof = consistency_from_tiles(&mut *there, cp.size, seen_size).map_err(|e| {
                WatchError::Unproven(format!(
                    "an older checkpoint (size {}, {} seen) that {} gives no proof of: {e}",
                    cp.size, seen_size, s.at
                ))
            })?;
            // The proof is from tiles nothing vouches for: one that fails
            // proves no fork, only that this older view is not proven.
            verify_consistency(cp.size, seen_size, &cp.root, &s.edge.root(), &proof).map_err(
                |e| {
                    WatchError::Unproven(format!(
                        "an older checkpoint (size {}, {seen_size} seen) not proven a prefix of \
                         the one seen: the proof from {} does not hold ({e})",
                        cp.size, s.at
                    ))
                },
            )?;
            return Ok(Watched::Behind {
                size: cp.size,
                seen: seen_size,
            });
        }
    }
    // Step 2 for a larger tree. A consistency proof from its hash tiles,
    // verified against both signed roots, proves it extends the tree seen,
    // whatever served the tiles. Without one (no tiles, or tiles that do
    // not prove it), it is proven from its entries alone, from the first,
    // before any is handed out: they must give its root (what is then
    // proven of them), and the first of them the root seen; if they do
    // not, that is a fork, proven by the log's own signed roots.
    let mut resumed = record
        .and_then(|r| r.progress)
        .filter(|p| p.size() <= cp.size);
    if let Some(s) = seen.as_ref().filter(|_| seen_size > 0) {
        let by_tiles = consistency_from_tiles(src, seen_size, cp.size).is_ok_and(|proof| {
            verify_consistency(seen_size, cp.size, &s.edge.root(), &cp.root, &proof).is_ok()
        });
        if !by_tiles {
            let (root, prefix) = recompute(src, cp.size, seen_size, caller.stop)?;
            if root != cp.root {
                return Err(entries_wrong(0, &cp, &note));
            }
            if prefix != s.edge.root() {
                return Err(WatchError::Inconsistent {
                    message: format!(
                        "the tree of size {} does not extend the one of size {seen_size} seen \
                         before: a fork (its entries give its root, and the first {seen_size} of \
                         them another root than the one seen)",
                        cp.size
                    ),
                    evidence: [s.checkpoint.clone(), note.clone()],
                });
            }
            resumed = None;
        }
    }
    // Step 3, and step 2 again: the new entries, handed out as read and
    // appended to the edge seen (or to the progress made toward it), give
    // its root.
    let pending = Seen {
        origin: cp.origin.clone(),
        key: key.clone(),
        checkpoint: seen
            .as_ref()
            .map(|s| s.checkpoint.clone())
            .unwrap_or_default(),
        edge: seen.as_ref().map(|s| s.edge.clone()).unwrap_or_default(),
        at: seen.as_ref().map(|s| s.at.clone()).unwrap_or_default(),
        progress: None,
    };
    loop {
        let (from, edge) = hand_out(src, &cp, resumed.clone(), &pending, state, caller)?;
        if edge.root() == cp.root {
            state.put(Seen {
                origin: cp.origin,
                key,
                checkpoint: note,
                edge,
                at,
                progress: None,
            });
            return Ok(Watched::Grew { from, to: cp.size });
        }
        // What was read toward it is not kept.
        state.put(pending.clone());
        if resumed.take().is_none() {
            return Err(entries_wrong(seen_size, &cp, &note));
        }
        // The progress was an earlier run's (perhaps from another
        // server): read again from the checkpoint proven.
    }
}

/// Entries that do not give the checkpoint's root.
fn entries_wrong(from: u64, cp: &Checkpoint, note: &[u8]) -> WatchError {
    WatchError::Entries {
        message: format!(
            "the entries served from {from} to {} do not give the root the checkpoint signs",
            cp.size
        ),
        checkpoint: note.to_vec(),
    }
}

/// Step 3: the entries past `start` (the progress made, or else the edge
/// seen) handed to the caller a bundle at a time, and appended to it;
/// progress saved every [`PROGRESS_EVERY`] entries and when asked to stop.
/// Returns where the entries handed out began, and the edge after them.
fn hand_out(
    src: &mut dyn TileFiles,
    cp: &Checkpoint,
    start: Option<CompactRange>,
    pending: &Seen,
    state: &State,
    caller: &mut Caller,
) -> Result<(u64, CompactRange), WatchError> {
    let mut edge = start.unwrap_or_else(|| pending.edge.clone());
    let from = edge.size();
    let mut last_saved = from;
    let mut save = |edge: &CompactRange| {
        let mut s = state.clone();
        s.put(Seen {
            progress: Some(edge.clone()),
            ..pending.clone()
        });
        (caller.progress)(&s).map_err(|e| WatchError::Stopped(e.to_string()))
    };
    read_entries(src, from, cp.size, &mut |first, entries| {
        let leaves: Vec<Hash> = entries.par_iter().map(|e| leaf_hash(e)).collect();
        (caller.entry)(first, entries).map_err(WatchError::Stopped)?;
        for leaf in leaves {
            edge.push(leaf);
        }
        let stop = (caller.stop)();
        if edge.size() < cp.size && (stop || edge.size() - last_saved >= PROGRESS_EVERY) {
            save(&edge)?;
            last_saved = edge.size();
        }
        if stop {
            return Err(WatchError::Interrupted);
        }
        Ok(())
    })?;
    Ok((from, edge))
}

/// The root of the tree of `size` leaves from its entries alone, and the
/// root of its first `prefix` leaves; nothing handed out.
fn recompute(
    src: &mut dyn TileFiles,
    size: u64,
    prefix: u64,
    stop: &dyn Fn() -> bool,
) -> Result<(Hash, Hash), WatchError> {
    let mut edge = CompactRange::new();
    let mut prefix_root = edge.root();
    read_entries(src, 0, size, &mut |_, entries| {
        let leaves: Vec<Hash> = entries.par_iter().map(|e| leaf_hash(e)).collect();
        for leaf in leaves {
            edge.push(leaf);
            if edge.size() == prefix {
                prefix_root = edge.root();
            }
        }
        if stop() {
            return Err(WatchError::Interrupted);
        }
        Ok(())
    })?;
    Ok((edge.root(), prefix_root))
}

/// Entries `from..to` of the tree of `to` leaves, from its entry bundles,
/// in order.
fn read_entries(
    src: &mut dyn TileFiles,
    from: u64,
    to: u64,
    each: &mut EachRead,
) -> Result<(), WatchError> {
    let w = u64::from(TILE_WIDTH);
    let last = to.div_ceil(w);
    let path_of = |n: u64| {
        Tile {
            kind: TileKind::Entries,
            index: n,
            width: (to - n * w).min(w) as u16,
        }
        .path()
    };
    if from >= to {
        return Ok(());
    }
    for n in from / w..last {
        let width = (to - n * w).min(w) as u16;
        // The next bundles are fetched while this one is worked on.
        let ahead: Vec<String> = (n + 1..last.min(n + 1 + PREFETCH)).map(path_of).collect();
        src.prefetch(&ahead);
        let tile = Tile {
            kind: TileKind::Entries,
            index: n,
            width,
        };
        let (data, served) = read_tile(src, &tile)?.ok_or_else(|| SourceError::Tile {
            path: tile.path(),
            why: "not served".into(),
        })?;
        let entries =
            parse_entry_bundle(&data, served).map_err(|e| SourceError::DamagedBundle {
                path: tile.path(),
                why: e.to_string(),
            })?;
        let skip = from.saturating_sub(n * w) as usize;
        let upto = usize::from(width).min(entries.len());
        each(n * w + skip as u64, &entries[skip.min(upto)..upto])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chit_log::note::NoteSigner;
    use chit_log::tiles::{encode_entry_bundle, hash_tile, tiles_for_size};
    use chit_log::tree::MemoryTree;
    use std::collections::HashMap;

    const ORIGIN: &str = "log.example/monitor";

    /// A log's tiles in memory, as a server would serve them.
    struct Served {
        at: String,
        files: HashMap<String, Vec<u8>>,
    }

    impl TileFiles for Served {
        fn describe(&self) -> String {
            self.at.clone()
        }
        fn read(&mut self, path: &str) -> Result<Option<Vec<u8>>, SourceError> {
            Ok(self.files.get(path).cloned())
        }
    }

    fn entry(i: u64) -> Vec<u8> {
        format!("entry {i}").into_bytes()
    }

    fn signer() -> NoteSigner {
        NoteSigner::from_seed(ORIGIN, &[5; 32]).unwrap()
    }

    fn policy() -> Policy {
        Policy::of_log(signer().verifier())
    }

    /// The tiles and checkpoint of a log of `entries`.
    fn served(at: &str, entries: &[Vec<u8>]) -> Served {
        let mut tree = MemoryTree::new();
        for e in entries {
            tree.push(e);
        }
        let size = entries.len() as u64;
        let mut files = HashMap::new();
        for t in tiles_for_size(size) {
            let data = match t.kind {
                TileKind::Hashes(level) => hash_tile(&tree, level, t.index, t.width).unwrap(),
                TileKind::Entries => {
                    let first = (t.index * u64::from(TILE_WIDTH)) as usize;
                    encode_entry_bundle(&entries[first..first + usize::from(t.width)]).unwrap()
                }
            };
            files.insert(t.path(), data);
        }
        let cp = Checkpoint::new(ORIGIN, size, tree.root(size).unwrap())
            .sign(&signer())
            .unwrap();
        files.insert("checkpoint".into(), cp);
        Served {
            at: at.into(),
            files,
        }
    }

    struct Run {
        printed: Vec<u64>,
        saves: Vec<State>,
        result: Result<Watched, WatchError>,
    }

    /// One look, stopped at entry `stop_at` if given.
    fn look(src: &mut Served, state: &mut State, stop_at: Option<u64>) -> Run {
        look_with(src, state, stop_at, u64::MAX, None)
    }

    /// [`look`], asked to stop after `bundles` bundles, and with `there`
    /// as where the log was seen before.
    fn look_with(
        src: &mut Served,
        state: &mut State,
        stop_at: Option<u64>,
        bundles: u64,
        there: Option<&Served>,
    ) -> Run {
        let mut printed = Vec::new();
        let mut saves = Vec::new();
        let note = head(src).unwrap();
        let handed = std::cell::Cell::new(0u64);
        let result = {
            let mut entry = |first: u64, entries: &[&[u8]]| {
                handed.set(handed.get() + 1);
                for i in first..first + entries.len() as u64 {
                    if Some(i) == stop_at {
                        return Err("stopped".to_string());
                    }
                    printed.push(i);
                }
                Ok(())
            };
            let mut progress = |s: &State| {
                saves.push(s.clone());
                Ok(())
            };
            let open = |at: &str| -> Result<Box<dyn TileFiles>, SourceError> {
                match there {
                    Some(t) => Ok(Box::new(Served {
                        at: at.into(),
                        files: t.files.clone(),
                    })),
                    None => Err(SourceError::NoCheckpoint("nowhere".into())),
                }
            };
            let stop = || handed.get() >= bundles;
            let mut caller = Caller {
                entry: &mut entry,
                progress: &mut progress,
                open: &open,
                stop: &stop,
            };
            watch(src, &note, &policy(), state, &mut caller)
        };
        Run {
            printed,
            saves,
            result,
        }
    }

    /// Hash tiles that lie prove no fork: the tree is proven from its
    /// entries, and followed.
    #[test]
    fn lying_tiles_accuse_no_one() {
        let all: Vec<Vec<u8>> = (0..700).map(entry).collect();
        let mut state = State::default();
        look(&mut served("http://a", &all[..300]), &mut state, None)
            .result
            .unwrap();
        let mut lying = served("http://b", &all);
        for data in lying
            .files
            .iter_mut()
            .filter(|(p, _)| p.starts_with("tile/0/") && !p.starts_with("tile/entries"))
            .map(|(_, d)| d)
        {
            data[0] ^= 1;
        }
        let run = look(&mut lying, &mut state, None);
        assert_eq!(run.result.unwrap(), Watched::Grew { from: 300, to: 700 });
        assert_eq!(run.printed, (300..700).collect::<Vec<_>>());
    }

    /// Asked to stop, a look saves its progress at the bundle it reached
    /// and ends; the next goes on from there.
    #[test]
    fn a_look_asked_to_stop_saves_where_it_is() {
        let all: Vec<Vec<u8>> = (0..1000).map(entry).collect();
        let mut state = State::default();
        look(&mut served("http://a", &all[..10]), &mut state, None)
            .result
            .unwrap();
        let mut src = served("http://a", &all);
        let run = look_with(&mut src, &mut state, None, 2, None);
        assert!(matches!(run.result, Err(WatchError::Interrupted)));
        assert_eq!(run.printed, (10..512).collect::<Vec<_>>());
        let saved = run.saves.last().unwrap();
        let seen = saved.get(ORIGIN, &signer().verifier_key()).unwrap();
        assert_eq!(seen.progress.as_ref().unwrap().size(), 512);
        let mut state = saved.clone();
        let run = look(&mut src, &mut state, None);
        assert_eq!(
            run.result.unwrap(),
            Watched::Grew {
                from: 512,
                to: 1000
            }
        );
    }

    /// An older view is proven a prefix from where the newer was seen,
    /// which has grown since and serves only its tiles of now (the partial
    /// tiles of the tree seen gone): the wider ones stand in for them.
    #[test]
    fn an_older_view_is_proven_from_the_tiles_served_now() {
        let all: Vec<Vec<u8>> = (0..900).map(entry).collect();
        let mut state = State::default();
        look(&mut served("http://a", &all[..600]), &mut state, None)
            .result
            .unwrap();
        let later = served("http://a", &all);
        assert!(!later.files.contains_key("tile/0/002.p/88"));
        let mut mirror = served("http://m", &all[..300]);
        let run = look_with(&mut mirror, &mut state, None, u64::MAX, Some(&later));
        assert_eq!(
            run.result.unwrap(),
            Watched::Behind {
                size: 300,
                seen: 600
            }
        );
        // A mirror of another tree of 300 under the same key: not proven.
        let other: Vec<Vec<u8>> = (5000..5300).map(entry).collect();
        let mut forked = served("http://f", &other);
        let run = look_with(&mut forked, &mut state, None, u64::MAX, Some(&later));
        assert!(
            matches!(run.result, Err(WatchError::Unproven(_))),
            "{:?}",
            run.result
        );
    }

    /// A catch-up stopped halfway resumes from its last saved progress,
    /// and its entries are proven when the checkpoint is reached.
    #[test]
    fn a_long_catch_up_resumes_from_its_progress() {
        let n = PROGRESS_EVERY * 2 + 300;
        let all: Vec<Vec<u8>> = (0..n).map(entry).collect();
        let mut state = State::default();
        let mut first = served("http://a", &all[..10]);
        assert_eq!(
            look(&mut first, &mut state, None).result.unwrap(),
            Watched::Grew { from: 0, to: 10 }
        );
        let mut big = served("http://a", &all);
        let stop = PROGRESS_EVERY * 2 + 100;
        let run = look(&mut big, &mut state, Some(stop));
        assert!(matches!(run.result, Err(WatchError::Stopped(_))));
        assert_eq!(run.printed, (10..stop).collect::<Vec<_>>());
        // The last progress saved: two stretches in, the checkpoint of 10
        // still the one proven.
        let saved = run.saves.last().unwrap().clone();
        let seen = saved.get(ORIGIN, &signer().verifier_key()).unwrap();
        assert_eq!(seen.edge.size(), 10);
        let at = seen.progress.as_ref().unwrap().size();
        assert!(at > 10 && at <= stop, "{at}");
        // Through the state file and back.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("watch.json");
        saved.save(&path).unwrap();
        let mut state = State::load(&path).unwrap();
        assert_eq!(state, saved);
        let run = look(&mut big, &mut state, None);
        assert_eq!(run.result.unwrap(), Watched::Grew { from: at, to: n });
        assert_eq!(run.printed, (at..n).collect::<Vec<_>>());
        let seen = state.get(ORIGIN, &signer().verifier_key()).unwrap();
        assert_eq!(seen.edge.size(), n);
        assert!(seen.progress.is_none());
    }

    /// Entries served wrong under a checkpoint whose tiles are consistent
    /// with the one seen: found, told apart from a fork, and what was
    /// read toward it not kept.
    #[test]
    fn entries_served_wrong_are_told_from_a_fork() {
        let all: Vec<Vec<u8>> = (0..600).map(entry).collect();
        let mut state = State::default();
        look(&mut served("http://a", &all[..300]), &mut state, None)
            .result
            .unwrap();
        let mut lying = served("http://a", &all);
        let path = Tile {
            kind: TileKind::Entries,
            index: 1,
            width: 256,
        }
        .path();
        let bundle = lying.files.get_mut(&path).unwrap();
        let last = bundle.len() - 1;
        bundle[last] ^= 1;
        let run = look(&mut lying, &mut state, None);
        match run.result {
            Err(WatchError::Entries {
                message,
                checkpoint,
            }) => {
                assert!(message.contains("do not give the root"), "{message}");
                assert!(checkpoint.starts_with(format!("{ORIGIN}\n600\n").as_bytes()));
            }
            other => panic!("{other:?}"),
        }
        // Nothing kept past the checkpoint of 300.
        let seen = state.get(ORIGIN, &signer().verifier_key()).unwrap();
        assert_eq!(seen.edge.size(), 300);
        assert!(seen.progress.is_none());
        // Served right: followed on from 300.
        let run = look(&mut served("http://b", &all), &mut state, None);
        assert_eq!(run.result.unwrap(), Watched::Grew { from: 300, to: 600 });
    }

    /// A state file that is not one is refused in words, never trusted.
    #[test]
    fn a_damaged_state_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("watch.json");
        let mut state = State::default();
        look(
            &mut served("http://a", &(0..5).map(entry).collect::<Vec<_>>()),
            &mut state,
            None,
        )
        .result
        .unwrap();
        state.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        for (bad, why) in [
            ("{", "damaged"),
            (r#"{"type":"other","logs":[]}"#, "type"),
            (
                &text.replacen("\"edge\": [", "\"edge\": [\"AAAA\",", 1),
                "edge",
            ),
            (&text.replacen(r"\n5\n", r"\n4\n", 1), "edge"),
        ] {
            std::fs::write(&path, bad).unwrap();
            let e = State::load(&path).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
        // A changed size whose edge still fits it (5 and 6 have two bits
        // set, and the same two hashes give the same root): read, but its
        // checkpoint no longer verifies, so a look refuses it.
        std::fs::write(&path, text.replacen(r"\n5\n", r"\n6\n", 1)).unwrap();
        let mut changed = State::load(&path).unwrap();
        let all: Vec<Vec<u8>> = (0..9).map(entry).collect();
        let run = look(&mut served("http://a", &all), &mut changed, None);
        match run.result {
            Err(WatchError::State(m)) => assert!(m.contains("was changed"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(run.printed.is_empty());
    }
}
