//! What a log keeps, behind two small traits and the one that writes
//! them together: [`Tree`] (the checkpoint, tiles and entries a reader
//! needs), [`Index`] (what the sequencer looks up and search reads) and
//! [`Store`] (the commit, the lease and what the log is). A log folder
//! ([`crate::folder`]), one SQLite file ([`crate::sqlite`]) and
//! PostgreSQL ([`crate::postgres`]) implement them, and one test suite
//! runs against all three.
//!
//! A store is dumb on purpose: it keeps rows and writes a batch atomically.
//! Every decision (what is valid, what the tree's hashes are, what the
//! checkpoint says) is the sequencer's ([`crate::Log`]), so both stores
//! behave alike.
//!
//! # Invariants a store keeps
//!
//! - [`Store::commit`] writes a whole batch or nothing, and returns only
//!   once the batch is durable (SQLite `synchronous=FULL` in WAL mode;
//!   PostgreSQL's commit). A crash before it returns leaves no part of it.
//! - A commit applies only to the tree size it was computed for: a store
//!   whose size moved (another sequencer won) answers
//!   [`StoreError::Conflict`] and writes nothing.
//! - Entries are the submitted bytes; a store never parses them.

use chit_log::Hash;
use std::collections::HashMap;

/// What a log is, fixed at `chit log init`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// The checkpoint origin, and the log key's name.
    pub origin: String,
    /// The log key in Go's verifier-key form (`origin+keyid+base64`).
    pub verifier_key: String,
    /// The policy, as [`crate::Policy::to_json`] writes it.
    pub policy: String,
    /// The key file named at `chit log init`, a hint for later appends on
    /// the same machine (never the key itself).
    pub key_file: Option<String>,
    /// The log key's signed note binding `policy` to the log
    /// ([`crate::binding`]); None in a log made before policies were bound.
    pub policy_binding: Option<String>,
}

/// One entry as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub index: u64,
    /// SHA-256 of `data`: the entry's content address.
    pub sha256: Hash,
    /// The exact bytes submitted.
    pub data: Vec<u8>,
    /// When the batch holding it was committed, in milliseconds since the
    /// Unix epoch by the sequencer's clock (for search; not in the tree).
    pub integrated_at: i64,
}

/// What the packet stream rules (P1, P2, P4) need of a logged packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PacketRow {
    pub stream_id: String,
    pub sequence: i64,
    pub packet_id: String,
    pub prev_packet_id: Option<String>,
    /// The log index of the entry that carries it.
    pub index: u64,
}

/// What search finds an entry by (not part of the tree, so not proven):
/// the kind it was checked as, its art id (a signed Treeship artifact),
/// its packet stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Label {
    pub index: u64,
    pub kind: String,
    pub art_id: Option<String>,
    pub stream_id: Option<String>,
}

/// A search: every field given must match; integration times in
/// milliseconds since the Unix epoch, `since` included, `until` not;
/// results in index order after `after`, at most `limit`.
#[derive(Clone, Debug, Default)]
pub struct Query {
    pub kind: Option<String>,
    pub art_id: Option<String>,
    pub stream_id: Option<String>,
    pub since: Option<i64>,
    pub until: Option<i64>,
    pub after: Option<u64>,
    pub limit: u32,
}

/// One entry a search found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub label: Label,
    pub integrated_at: i64,
}

/// One entry a batch appends: its bytes borrowed from the submission, not
/// copied.
#[derive(Clone, Debug)]
pub struct NewEntry<'a> {
    pub index: u64,
    pub sha256: Hash,
    pub data: &'a [u8],
    pub integrated_at: i64,
}

/// One tree update: everything a batch of appends writes, at once.
#[derive(Clone, Debug, Default)]
pub struct Batch<'a> {
    /// The tree size the batch was computed for.
    pub old_size: u64,
    /// The new entries, at `old_size..old_size + entries.len()`.
    pub entries: Vec<NewEntry<'a>>,
    /// Every hash tile the batch touched, `(tile level, tile index, the
    /// tile's hashes)`, replacing the stored one.
    pub tiles: Vec<(u8, u64, Vec<u8>)>,
    /// The packets among the new entries.
    pub packets: Vec<PacketRow>,
    /// What search finds each new entry by.
    pub labels: Vec<Label>,
    /// The signed checkpoint of the new size.
    pub checkpoint: Vec<u8>,
}

impl Batch<'_> {
    pub fn new_size(&self) -> u64 {
        self.old_size + self.entries.len() as u64
    }
}

/// Why a store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Nothing at this location is a chit log.
    #[error("{0} holds no chit log (create one with chit log init)")]
    NotALog(String),
    /// `init` found a log already there.
    #[error("{0} already holds a chit log; chit never replaces one")]
    Exists(String),
    /// Another sequencer appended since this batch was computed.
    #[error("the log grew to {found} entries while a batch for {expected} was prepared")]
    Conflict { expected: u64, found: u64 },
    /// This sequencer's lease passed to another while it was silent: its
    /// commit wrote nothing, and it no longer holds the lease.
    #[error("{0}")]
    Fenced(String),
    /// The store refused to write (read-only, full disk, lost connection).
    #[error("{0}")]
    Write(String),
    /// The store could not be read, or holds what a log never writes.
    #[error("{0}")]
    Read(String),
    /// A file of the tree (an entry bundle, a hash tile) is not what the
    /// log wrote: a finding of an audit, not a store it cannot read.
    #[error("{path} is not a file the log wrote ({why})")]
    Damaged { path: String, why: String },
}

/// The tree's store: what a reader of the log needs, and all a static
/// copy of it serves (the checkpoint, hash tiles, entry bundles). Five
/// methods to write; `tiles` and `entry` have answers made of the others,
/// which a driver may answer faster.
pub trait Tree: Send {
    /// Where it is, for messages (a path, or a URL without its password).
    fn location(&self) -> String;

    /// The committed tree size and its signed checkpoint, read together.
    fn head(&mut self) -> Result<(u64, Vec<u8>), StoreError>;

    /// The signed checkpoint of one earlier size, when one was made.
    fn checkpoint_at(&mut self, size: u64) -> Result<Option<Vec<u8>>, StoreError>;

    /// The stored hashes of a hash tile (possibly more than a given tree
    /// size needs: a partial tile grows in place).
    fn tile(&mut self, level: u8, index: u64) -> Result<Option<Vec<u8>>, StoreError>;

    /// Entries `start..end` in index order, to `each`; rows beyond the tree
    /// size are given too (an audit names them). `each` may stop the walk
    /// by returning an error.
    fn scan(
        &mut self,
        start: u64,
        end: u64,
        each: &mut dyn FnMut(Entry) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;

    /// Several hash tiles, each as [`Tree::tile`] gives it, in the order
    /// asked: one round trip where the store is a server (a batch reads
    /// the tree's right edge, a tile a level, before it appends).
    fn tiles(&mut self, keys: &[(u8, u64)]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        keys.iter().map(|&(l, i)| self.tile(l, i)).collect()
    }

    /// One entry, if the log holds it.
    fn entry(&mut self, index: u64) -> Result<Option<Entry>, StoreError> {
        let mut found = None;
        self.scan(index, index.saturating_add(1), &mut |e| {
            if e.index == index {
                found = Some(e);
            }
            Ok(())
        })?;
        Ok(found)
    }
}

/// The index: what the sequencer looks up before it appends (exact
/// deduplication by content address, the packet stream rules' logged
/// neighbours) and what search and an audit read. Four methods to write.
pub trait Index: Send {
    /// What a batch reads before it appends, at once (one round trip where
    /// the store is a server): the index of each content address in
    /// `digests` where the log holds it, and the logged packets at the
    /// `(stream, sequence)` places `at` and with the `(stream, packet id)`
    /// names `named` (an empty list of keys is not read).
    fn lookup(
        &mut self,
        digests: &[Hash],
        at: &[(String, i64)],
        named: &[(String, String)],
    ) -> Result<(Vec<Option<u64>>, Vec<PacketRow>), StoreError>;

    /// One stream's logged packets, by sequence, at most `limit` (what a
    /// reader draws of it, without reading the entries).
    fn stream(&mut self, stream_id: &str, limit: u32) -> Result<Vec<PacketRow>, StoreError>;

    /// Every logged packet, by stream then sequence (for the gaps an audit
    /// reports).
    fn packets(
        &mut self,
        each: &mut dyn FnMut(PacketRow) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;

    /// Entries by their labels and integration time.
    fn search(&mut self, q: &Query) -> Result<Vec<Hit>, StoreError>;

    /// The index of each content address, where the log holds it
    /// ([`Index::lookup`] of addresses alone).
    fn find(&mut self, digests: &[Hash]) -> Result<Vec<Option<u64>>, StoreError> {
        Ok(self.lookup(digests, &[], &[])?.0)
    }

    /// Every `(index, key)` row of an index the store keeps apart from the
    /// rows it indexes, to `each` (in no particular order; the index as
    /// stored, a negative one included), and the size up to which it
    /// holds every entry's key; None where it keeps none (the key is a
    /// column of the indexed row, and the database keeps its index).
    fn index_rows(
        &mut self,
        kind: IndexKind,
        each: &mut EachIndexRow,
    ) -> Result<Option<u64>, StoreError> {
        let _ = (kind, each);
        Ok(None)
    }
}

/// A log's storage: its tree and its index, written together by one
/// commit (a duplicate or a broken stream is refused against exactly what
/// the tree holds), and what the log is. See the module documentation for
/// the invariants.
pub trait Store: Tree + Index {
    /// Creates an empty log described by `meta`, with `checkpoint` (size 0)
    /// as its first. Fails with [`StoreError::Exists`] where a log is.
    fn create(&mut self, meta: &Meta, checkpoint: &[u8]) -> Result<(), StoreError>;

    /// The log's description.
    fn meta(&mut self) -> Result<Meta, StoreError>;

    /// Keeps `binding` as the policy's binding where the log has none;
    /// false (nothing written) where it has one.
    fn bind_policy(&mut self, binding: &str) -> Result<bool, StoreError>;

    /// Every signed checkpoint kept, oldest first, as `(size, note)`.
    fn checkpoints(&mut self) -> Result<Vec<(u64, Vec<u8>)>, StoreError>;

    /// Replaces the note of the checkpoint of `size` with one holding more
    /// signatures (a witness's cosignature), only if it is still `old`:
    /// false when another writer changed it first (read it again and merge).
    /// The note's text must be the same; the caller checks it.
    fn replace_checkpoint(
        &mut self,
        size: u64,
        old: &[u8],
        note: &[u8],
    ) -> Result<bool, StoreError>;

    /// Writes a batch: atomically, durably, only at `batch.old_size`.
    fn commit(&mut self, batch: &Batch<'_>) -> Result<(), StoreError>;

    /// Becomes the one sequencer of this log, waiting up to `wait` for the
    /// holder to finish or die. Held until the store is dropped. Commits
    /// are safe without it ([`StoreError::Conflict`]); with it, a sequencer
    /// shared by several processes does not waste batches on conflicts.
    fn lease(&mut self, wait: std::time::Duration) -> Result<(), StoreError>;

    /// Gives the lease back (a server sequencing batch by batch, so that
    /// several servers on one store take turns).
    fn release(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Whether the store may have been written by anyone but this
    /// connection since the previous call: `false` only where the store
    /// can tell it was not (SQLite's `data_version`), so a log that
    /// verified what it committed need not read it back. `true` on the
    /// first call, and by default.
    fn changed_elsewhere(&mut self) -> Result<bool, StoreError> {
        Ok(true)
    }

    /// For a long-lived sequencer (a server): moves housekeeping off the
    /// commit path where the store has any (SQLite: WAL checkpoints run on
    /// a thread of their own instead of inside every thousandth commit).
    /// Durability is unchanged.
    fn housekeep_in_background(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    /// What would stop a write now, as far as can be told without writing
    /// (a read-only file, a disk nearly full, a database that takes no
    /// writes); None when nothing seen would.
    fn write_blocked(&mut self) -> Option<String> {
        None
    }
}

/// An index a store keeps apart from the rows it indexes, read whole by
/// an audit ([`Index::index_rows`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexKind {
    /// Content addresses to entries (deduplication).
    Content,
    /// Art ids to entries (search).
    Art,
    /// Kinds to entries (search), where kept apart from the labels.
    Kind,
    /// Streams to entries (search), where kept apart from the labels.
    Stream,
}

/// Called with each `(index, key)` row of an index ([`Index::index_rows`]).
pub type EachIndexRow<'a> = dyn FnMut(i64, &[u8]) -> Result<(), StoreError> + 'a;

/// Milliseconds since the Unix epoch, now.
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A store whose full hash tiles, once read, are kept in memory: a full
/// tile never changes in an append-only log, so a sequencer or a server
/// reads each once instead of once a batch (most of a proof's tiles are
/// full). Partial tiles, the right edge, are always read again. At most
/// [`FullTiles::MAX`] are kept (32 MiB); past that the memory starts over.
pub struct FullTiles {
    inner: Box<dyn Store>,
    tiles: HashMap<(u8, u64), Vec<u8>>,
}

impl FullTiles {
    pub const MAX: usize = 4096;

    /// Keeps a tile read or written, if it is full.
    fn keep(&mut self, key: (u8, u64), data: &[u8]) {
        if data.len() == usize::from(chit_log::tiles::TILE_WIDTH) * 32 {
            if self.tiles.len() >= Self::MAX {
                self.tiles.clear();
            }
            self.tiles.insert(key, data.to_vec());
        }
    }

    pub fn new(inner: Box<dyn Store>) -> FullTiles {
        FullTiles {
            inner,
            tiles: HashMap::new(),
        }
    }
}

impl Tree for FullTiles {
    fn location(&self) -> String {
        self.inner.location()
    }

    fn head(&mut self) -> Result<(u64, Vec<u8>), StoreError> {
        self.inner.head()
    }

    fn checkpoint_at(&mut self, size: u64) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.checkpoint_at(size)
    }

    fn entry(&mut self, index: u64) -> Result<Option<Entry>, StoreError> {
        self.inner.entry(index)
    }

    fn scan(
        &mut self,
        start: u64,
        end: u64,
        each: &mut dyn FnMut(Entry) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.inner.scan(start, end, each)
    }

    fn tile(&mut self, level: u8, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(t) = self.tiles.get(&(level, index)) {
            return Ok(Some(t.clone()));
        }
        let t = self.inner.tile(level, index)?;
        if let Some(d) = &t {
            self.keep((level, index), d);
        }
        Ok(t)
    }

    fn tiles(&mut self, keys: &[(u8, u64)]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let missing: Vec<(u8, u64)> = keys
            .iter()
            .filter(|k| !self.tiles.contains_key(k))
            .copied()
            .collect();
        let read: HashMap<(u8, u64), Vec<u8>> = missing
            .iter()
            .copied()
            .zip(self.inner.tiles(&missing)?)
            .filter_map(|(k, t)| t.map(|t| (k, t)))
            .collect();
        // Answered before any is kept: keeping may start the memory over.
        let out = keys
            .iter()
            .map(|k| read.get(k).or_else(|| self.tiles.get(k)).cloned())
            .collect();
        for (k, d) in &read {
            self.keep(*k, d);
        }
        Ok(out)
    }
}

impl Index for FullTiles {
    fn lookup(
        &mut self,
        digests: &[Hash],
        at: &[(String, i64)],
        named: &[(String, String)],
    ) -> Result<(Vec<Option<u64>>, Vec<PacketRow>), StoreError> {
        self.inner.lookup(digests, at, named)
    }

    fn stream(&mut self, stream_id: &str, limit: u32) -> Result<Vec<PacketRow>, StoreError> {
        self.inner.stream(stream_id, limit)
    }

    fn packets(
        &mut self,
        each: &mut dyn FnMut(PacketRow) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.inner.packets(each)
    }

    fn search(&mut self, q: &Query) -> Result<Vec<Hit>, StoreError> {
        self.inner.search(q)
    }

    fn index_rows(
        &mut self,
        kind: IndexKind,
        each: &mut EachIndexRow,
    ) -> Result<Option<u64>, StoreError> {
        self.inner.index_rows(kind, each)
    }
}

impl Store for FullTiles {
    fn create(&mut self, meta: &Meta, checkpoint: &[u8]) -> Result<(), StoreError> {
        self.inner.create(meta, checkpoint)
    }

    fn meta(&mut self) -> Result<Meta, StoreError> {
        self.inner.meta()
    }

    fn bind_policy(&mut self, binding: &str) -> Result<bool, StoreError> {
        self.inner.bind_policy(binding)
    }

    fn changed_elsewhere(&mut self) -> Result<bool, StoreError> {
        self.inner.changed_elsewhere()
    }

    fn checkpoints(&mut self) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.inner.checkpoints()
    }

    fn replace_checkpoint(
        &mut self,
        size: u64,
        old: &[u8],
        note: &[u8],
    ) -> Result<bool, StoreError> {
        self.inner.replace_checkpoint(size, old, note)
    }

    fn commit(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
        self.inner.commit(batch)?;
        // What this batch filled is known now: kept, not read back.
        for (level, index, data) in &batch.tiles {
            self.keep((*level, *index), data);
        }
        Ok(())
    }

    fn lease(&mut self, wait: std::time::Duration) -> Result<(), StoreError> {
        self.inner.lease(wait)
    }

    fn release(&mut self) -> Result<(), StoreError> {
        self.inner.release()
    }

    fn housekeep_in_background(&mut self) -> Result<(), StoreError> {
        self.inner.housekeep_in_background()
    }

    fn write_blocked(&mut self) -> Option<String> {
        self.inner.write_blocked()
    }
}

#[cfg(test)]
mod tests {
    use super::{Entry, StoreError, Tree};
    use std::collections::HashMap;

    /// A tree in memory, only its five methods written: what the trait
    /// answers from them (`entry`, `tiles`) is checked here, since the
    /// drivers answer those themselves.
    struct Memory {
        entries: Vec<Entry>,
        tiles: HashMap<(u8, u64), Vec<u8>>,
    }

    impl Tree for Memory {
        fn location(&self) -> String {
            "memory".into()
        }
        fn head(&mut self) -> Result<(u64, Vec<u8>), StoreError> {
            Ok((self.entries.len() as u64, Vec::new()))
        }
        fn checkpoint_at(&mut self, _size: u64) -> Result<Option<Vec<u8>>, StoreError> {
            Ok(None)
        }
        fn tile(&mut self, level: u8, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
            Ok(self.tiles.get(&(level, index)).cloned())
        }
        fn scan(
            &mut self,
            start: u64,
            end: u64,
            each: &mut dyn FnMut(Entry) -> Result<(), StoreError>,
        ) -> Result<(), StoreError> {
            let end = end.min(self.entries.len() as u64);
            for e in self
                .entries
                .get(start as usize..end as usize)
                .unwrap_or(&[])
            {
                each(e.clone())?;
            }
            Ok(())
        }
    }

    fn memory() -> Memory {
        Memory {
            entries: (0..5)
                .map(|i| Entry {
                    index: i,
                    sha256: [i as u8; 32],
                    data: vec![i as u8; 3],
                    integrated_at: 7,
                })
                .collect(),
            tiles: HashMap::from([((0, 0), vec![1; 64]), ((1, 0), vec![2; 32])]),
        }
    }

    #[test]
    fn an_entry_is_read_through_scan() {
        let mut m = memory();
        assert_eq!(m.entry(3).unwrap().map(|e| e.data), Some(vec![3; 3]));
        assert_eq!(m.entry(0).unwrap().map(|e| e.index), Some(0));
        assert!(m.entry(5).unwrap().is_none());
        assert!(m.entry(u64::MAX).unwrap().is_none());
    }

    #[test]
    fn tiles_are_answered_in_the_order_asked() {
        let mut m = memory();
        assert_eq!(
            m.tiles(&[(1, 0), (0, 9), (0, 0)]).unwrap(),
            vec![Some(vec![2; 32]), None, Some(vec![1; 64])]
        );
    }
}
