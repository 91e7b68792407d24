//! The default store: one SQLite file, bundled into chit, no server.
//!
//! WAL mode with `synchronous=FULL`: a commit has reached the disk (the
//! WAL's fsync) before [`Store::commit`] returns, and a crash at any moment
//! leaves the file at a committed batch. Writers take SQLite's write lock
//! (`BEGIN IMMEDIATE`) and check the tree size inside it, so two processes
//! appending to one file cannot interleave a batch.

use crate::store::{
    Batch, Entry, Hit, Index, Label, Meta, PacketRow, Query, Store, StoreError, Tree,
};
use chit_log::Hash;
use rusqlite::ToSql;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};

/// The tables a log keeps. `idx` is the log index; tiles are tlog-tiles'
/// hash tiles (a partial tile is rewritten as it grows).
///
/// Art ids are indexed late, in bulk: `chit_log_arts` holds the art ids
/// of the labels below `chit_log_arts_upto`, and a commit that leaves
/// [`MERGE_AT`] or more labels above it adds theirs, sorted. An index
/// on `chit_log_labels (art_id)`, kept at each commit, cost the
/// sequencer more than any other label: an art id is a hash, so each
/// new one dirtied a 4 KiB page of its own, written to the WAL and again
/// to the database, several times what the same ids cost added 16,384 at
/// a time, sorted (docs/decisions/log-late-indexes.md). A search by art
/// id reads the index and the labels above it.
///
/// Content addresses, the other random key, are indexed late the same
/// way (`chit_log_shas` below `chit_log_shas_upto`; its primary key
/// still refuses two entries with one address, at the merge, which fails
/// the commit): a connection that looks one up keeps the addresses of
/// the entries above the index in memory, read as they are appended
/// (entries are never rewritten), so that a duplicate is found at once
/// wherever it is.
///
/// Integration times have no index: a search answers in index order,
/// which such an index does not give (SQLite never chose it), so times are
/// checked on a scan in index order.
///
/// Logs made before keep their index on `chit_log_labels (art_id)`, the
/// unique `sha256` column and the time index, and are searched and
/// appended to as they were.
const SCHEMA: &str = "
CREATE TABLE chit_log_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE chit_log_head (id INTEGER PRIMARY KEY CHECK (id = 0), size INTEGER NOT NULL);
CREATE TABLE chit_log_checkpoints (size INTEGER PRIMARY KEY, note BLOB NOT NULL);
CREATE TABLE chit_log_entries (
  idx INTEGER PRIMARY KEY,
  sha256 BLOB NOT NULL,
  data BLOB NOT NULL,
  integrated_at INTEGER NOT NULL
);
CREATE TABLE chit_log_tiles (
  level INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (level, idx)
) WITHOUT ROWID;
CREATE TABLE chit_log_packets (
  stream_id TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  packet_id TEXT NOT NULL,
  prev_packet_id TEXT,
  idx INTEGER NOT NULL,
  PRIMARY KEY (stream_id, sequence)
) WITHOUT ROWID;
CREATE UNIQUE INDEX chit_log_packet_ids ON chit_log_packets (stream_id, packet_id);
CREATE TABLE chit_log_labels (
  idx INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,
  art_id TEXT,
  stream_id TEXT,
  integrated_at INTEGER NOT NULL
);
CREATE INDEX chit_log_labels_kind ON chit_log_labels (kind, idx);
CREATE TABLE chit_log_arts (
  art_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  PRIMARY KEY (art_id, idx)
) WITHOUT ROWID;
CREATE TABLE chit_log_arts_upto (id INTEGER PRIMARY KEY CHECK (id = 0), upto INTEGER NOT NULL);
INSERT INTO chit_log_arts_upto (id, upto) VALUES (0, 0);
CREATE TABLE chit_log_shas (
  sha256 BLOB PRIMARY KEY,
  idx INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE chit_log_shas_upto (id INTEGER PRIMARY KEY CHECK (id = 0), upto INTEGER NOT NULL);
INSERT INTO chit_log_shas_upto (id, upto) VALUES (0, 0);
CREATE INDEX chit_log_labels_stream ON chit_log_labels (stream_id, idx) WHERE stream_id IS NOT NULL;
";

/// What a log folder's index database ([`crate::folder`]) changes of
/// [`SCHEMA`] as it is made: an entry's search label is four columns of
/// its row (`kind` NULL where it has none), read through the view
/// `chit_log_labels`, and its kind and stream, like its art id, are
/// indexed late (`chit_log_kinds`, `chit_log_streams`, merged with
/// `chit_log_arts` below `chit_log_arts_upto`). A commit so adds one row
/// an entry to one table, where a table and two indexes of labels each
/// had a page of their own written at every commit
/// (docs/decisions/log-folder.md).
const SCHEMA_LABELLED: &str = "
DROP INDEX chit_log_labels_kind;
DROP INDEX chit_log_labels_stream;
DROP TABLE chit_log_labels;
ALTER TABLE chit_log_entries ADD COLUMN kind TEXT;
ALTER TABLE chit_log_entries ADD COLUMN art_id TEXT;
ALTER TABLE chit_log_entries ADD COLUMN stream_id TEXT;
CREATE VIEW chit_log_labels AS
  SELECT idx, kind, art_id, stream_id, integrated_at FROM chit_log_entries WHERE kind IS NOT NULL;
CREATE TABLE chit_log_kinds (
  kind TEXT NOT NULL,
  idx INTEGER NOT NULL,
  PRIMARY KEY (kind, idx)
) WITHOUT ROWID;
CREATE TABLE chit_log_streams (
  stream_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  PRIMARY KEY (stream_id, idx)
) WITHOUT ROWID;
";

/// With this many entries or more above a late index's `upto`, a commit
/// adds their keys to it (at most `MERGE_MAX` at a time): a search by
/// art id reads no more than about this many labels beyond its index, and
/// a connection keeps about this many content addresses in memory.
pub const MERGE_AT: i64 = 8192;
const MERGE_MAX: i64 = 65536;

/// An index kept late: the keys of the entries below its `upto` (a
/// one-row table) are in it; a merge adds the next ones, sorted.
struct LateIndex {
    /// The `upto` table (its presence marks a log that keeps the index).
    upto_table: &'static str,
    read_upto: &'static str,
    set_upto: &'static str,
    /// Adds the keys of the entries `?1..?2`, sorted.
    merge_sql: &'static str,
    /// What else a merge adds on a log that keeps labels in its entries
    /// (the kinds and streams, indexed late with the art ids).
    labelled_sql: &'static [&'static str],
}

/// Art ids, from the labels (an entry may have none).
const ARTS: LateIndex = LateIndex {
    upto_table: "chit_log_arts_upto",
    read_upto: "SELECT upto FROM chit_log_arts_upto WHERE id = 0",
    set_upto: "UPDATE chit_log_arts_upto SET upto = ?1 WHERE id = 0",
    merge_sql:
        "INSERT OR IGNORE INTO chit_log_arts (art_id, idx) SELECT art_id, idx FROM chit_log_labels \
            WHERE idx >= ?1 AND idx < ?2 AND art_id IS NOT NULL ORDER BY art_id, idx",
    labelled_sql: &[
        "INSERT OR IGNORE INTO chit_log_kinds (kind, idx) SELECT kind, idx FROM chit_log_labels \
            WHERE idx >= ?1 AND idx < ?2 ORDER BY kind, idx",
        "INSERT OR IGNORE INTO chit_log_streams (stream_id, idx) SELECT stream_id, idx FROM chit_log_labels \
            WHERE idx >= ?1 AND idx < ?2 AND stream_id IS NOT NULL ORDER BY stream_id, idx",
    ],
};

/// Content addresses, from the entries. Two entries with one address
/// fail the merge (the table's primary key).
const SHAS: LateIndex = LateIndex {
    upto_table: "chit_log_shas_upto",
    read_upto: "SELECT upto FROM chit_log_shas_upto WHERE id = 0",
    set_upto: "UPDATE chit_log_shas_upto SET upto = ?1 WHERE id = 0",
    merge_sql: "INSERT OR ROLLBACK INTO chit_log_shas (sha256, idx) SELECT sha256, idx FROM chit_log_entries \
            WHERE idx >= ?1 AND idx < ?2 ORDER BY sha256",
    labelled_sql: &[],
};

impl LateIndex {
    fn upto(&self, conn: &Connection) -> rusqlite::Result<i64> {
        conn.prepare_cached(self.read_upto)?
            .query_row([], |r| r.get(0))
    }

    /// Adds the keys of the entries above `upto` once there are
    /// `at_least` of them, in the commit's transaction; whether it did.
    fn merge(
        &self,
        tx: &Connection,
        size: i64,
        at_least: i64,
        labelled: bool,
    ) -> rusqlite::Result<bool> {
        let upto = self.upto(tx)?;
        if size - upto < at_least {
            return Ok(false);
        }
        let to = size.min(upto + MERGE_MAX);
        tx.prepare_cached(self.merge_sql)?
            .execute(params![upto, to])?;
        if labelled {
            for sql in self.labelled_sql {
                tx.prepare_cached(sql)?.execute(params![upto, to])?;
            }
        }
        tx.prepare_cached(self.set_upto)?.execute(params![to])?;
        Ok(true)
    }
}

/// The files SQLite keeps beside a database `path`: its write-ahead
/// log, the log's index, a rollback journal.
fn companions(path: &Path) -> [std::path::PathBuf; 3] {
    ["-wal", "-shm", "-journal"].map(|suffix| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        name.into()
    })
}

/// A log in one SQLite file.
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    checkpointer: Option<Checkpointer>,
    wal_pages: u32,
    /// `PRAGMA data_version` when [`Store::changed_elsewhere`] last read
    /// it: SQLite changes it when another connection commits, never for
    /// this one's own commits.
    data_version: Option<i64>,
    /// Which of its keys this log indexes late, once read.
    late: Option<Late>,
    /// The content addresses above `chit_log_shas_upto`, as this
    /// connection last read them.
    tail: Tail,
    /// Whether [`Store::create`] makes a log folder's index ([`SCHEMA`]
    /// changed by [`SCHEMA_LABELLED`]).
    labelled: bool,
}

/// Which keys a log indexes late (a log made by this chit: both; one made
/// before: neither).
#[derive(Clone, Copy, Debug)]
struct Late {
    arts: bool,
    shas: bool,
    /// Labels are columns of the entries, and kinds and streams are
    /// indexed late with the art ids ([`SCHEMA_LABELLED`]).
    labelled: bool,
}

/// The entries above `chit_log_shas_upto` (`upto..to`) by content
/// address.
#[derive(Default)]
struct Tail {
    upto: i64,
    to: i64,
    shas: std::collections::HashMap<Hash, u64>,
}

/// With housekeeping in the background, the WAL pages after which a commit
/// checkpoints the rest itself (32 MiB of 4 KiB pages).
pub const WAL_PAGES: u32 = 8192;

/// A WAL file larger than this (a reader held it past its checkpoint) is
/// cut back to it when it next starts again.
const WAL_LIMIT_BYTES: i64 = 64 << 20;

/// A thread with a connection of its own that copies the WAL into the
/// database file (`PRAGMA wal_checkpoint(PASSIVE)`: it never blocks a
/// writer or a reader), so that most commits only append to the WAL. It is
/// woken by each commit of its store and makes at most one pass every
/// [`Checkpointer::EVERY`] while commits go on; an idle store leaves it
/// asleep. Stopped, after one last checkpoint, when the store is dropped.
///
/// SQLite starts the WAL again from its beginning only after a checkpoint
/// that copied every frame, and under sustained writes this thread never
/// quite catches up with the latest commit: alone, it let the WAL grow
/// without end, to several times the database's size.
/// So a commit that leaves the WAL past [`SqliteStore::wal_pages`] pages
/// checkpoints the rest itself (SQLite's `wal_autocheckpoint`: no other
/// commit of this process can come in between), and the next commit
/// starts the WAL again. What that commit copies is what this thread left:
/// when it ran on a timer whatever the writes, it left most of the WAL,
/// and under load the commit that copied it took tens of milliseconds
/// (the batch's requests, and everyone queued behind them, waited); woken
/// by commits, it leaves the last few batches.
struct Checkpointer {
    wake: std::sync::mpsc::SyncSender<Wake>,
    thread: Option<std::thread::JoinHandle<()>>,
    #[cfg(test)]
    passes: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// What the checkpoint thread is woken for.
enum Wake {
    /// A commit added to the WAL.
    Committed,
    /// The store is dropped: one last pass, then end.
    Stop,
}

impl Checkpointer {
    /// Passes are at least this far apart while commits go on: a page
    /// that several commits change between two passes is copied into the
    /// database once (docs/decisions/log-folder.md).
    const EVERY: std::time::Duration = std::time::Duration::from_millis(100);

    fn start(path: &Path) -> Result<Checkpointer, StoreError> {
        let conn = connect(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .and_then(|c| {
            c.busy_timeout(std::time::Duration::from_secs(5))?;
            Ok(c)
        })
        .map_err(|e| write_err(path, e))?;
        // One wake waiting is enough: commits while it waits add nothing.
        let (wake, woken) = std::sync::mpsc::sync_channel::<Wake>(1);
        let passes = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = passes.clone();
        let thread = std::thread::Builder::new()
            .name("chit-sqlite-checkpoint".into())
            .spawn(move || {
                let checkpoint = || {
                    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                    counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                };
                while let Ok(Wake::Committed) = woken.recv() {
                    checkpoint();
                    std::thread::sleep(Checkpointer::EVERY);
                }
                checkpoint();
            })
            .map_err(|e| StoreError::Write(format!("cannot start a checkpoint thread: {e}")))?;
        #[cfg(not(test))]
        drop(passes);
        Ok(Checkpointer {
            wake,
            thread: Some(thread),
            #[cfg(test)]
            passes,
        })
    }

    /// After a commit: a pass soon, unless one is already due.
    fn committed(&self) {
        let _ = self.wake.try_send(Wake::Committed);
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        // Waits while a wake is pending: the thread takes it within one
        // pass and a pause.
        let _ = self.wake.send(Wake::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn read_err(e: rusqlite::Error) -> StoreError {
    StoreError::Read(format!("SQLite: {e}"))
}

/// Opens a connection with SQLite's own VFS and page cache, and
/// `synchronous=FULL`: a commit is on disk before it is acknowledged
/// (`docs/decisions/sqlite-stock.md`).
fn connect(path: &Path, flags: OpenFlags) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(path, flags)?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

/// Whether the database holds chit's meta table.
fn has_meta(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'chit_log_meta'",
        [],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

/// A read refused because a WAL-mode file's shared-memory index could not
/// be made (its folder is read-only).
fn needs_shared_memory(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen)
    )
}

/// The database's write-ahead log or rollback journal, where one is there
/// and not empty (commits, or a transaction cut short, it holds).
fn pending_companion(path: &Path) -> Option<PathBuf> {
    let [wal, _, journal] = companions(path);
    [wal, journal]
        .into_iter()
        .find(|f| std::fs::metadata(f).is_ok_and(|m| m.len() > 0))
}

/// Whether the folder a database is in takes no writes by its mode (read-
/// only media, or a folder made so): no writer can then change the file.
fn folder_read_only(path: &Path) -> bool {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::metadata(dir).is_ok_and(|m| m.permissions().readonly())
}

/// `file:///PATH?immutable=1` (the path made absolute and escaped by the
/// `url` crate), or None where it cannot be written so.
fn immutable_uri(path: &Path) -> Option<String> {
    let absolute = std::path::absolute(path).ok()?;
    let mut uri = url::Url::from_file_path(absolute).ok()?;
    uri.set_query(Some("immutable=1"));
    Some(uri.into())
}

fn write_err(path: &Path, e: rusqlite::Error) -> StoreError {
    let why = match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::ReadOnly) => "the store is read-only".to_string(),
        Some(rusqlite::ErrorCode::DiskFull) => "the disk is full".to_string(),
        _ => e.to_string(),
    };
    StoreError::Write(format!(
        "cannot write {}: {why}; nothing of this batch was acknowledged",
        path.display()
    ))
}

/// Below this many free bytes where its file is, a store says a write may
/// fail ([`Store::write_blocked`]): a batch of 4,096 entries of a few kB
/// with its tiles, indexes and WAL frames needs some MiB.
const LOW_SPACE: u64 = 16 << 20;

/// Bytes free to this process on the filesystem that holds `path`.
#[cfg(unix)]
fn free_bytes(path: &Path) -> Option<u64> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let s = rustix::fs::statvfs(dir).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

#[cfg(not(unix))]
fn free_bytes(_path: &Path) -> Option<u64> {
    None
}

impl SqliteStore {
    /// Opens an existing file (never creates one).
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        if !path.is_file() {
            return Err(StoreError::NotALog(path.display().to_string()));
        }
        // A file marked read-only is opened so, even by root, whom the
        // permission bits do not stop: what the user protected stays so.
        let read_only = std::fs::metadata(path)
            .map(|m| m.permissions().readonly())
            .unwrap_or(false);
        let mode = if read_only {
            OpenFlags::SQLITE_OPEN_READ_ONLY
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE
        };
        // Asked before anything is changed: another program's database is
        // left as it was (`tune` switches a file to WAL, which sticks).
        let opened = connect(path, mode | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .and_then(|c| has_meta(&c).map(|is_log| (c, is_log)));
        let (conn, is_log) = match opened {
            // A snapshot on read-only media: a WAL-mode file whose
            // shared-memory index cannot be made beside it, in a folder no
            // one may write. With no write-ahead log or journal holding
            // anything, nothing can change it: read as an immutable file.
            Err(e) if read_only && needs_shared_memory(&e) && folder_read_only(path) => {
                if let Some(pending) = pending_companion(path) {
                    return Err(StoreError::Read(format!(
                        "cannot open {} read-only: {} holds what is not in it yet, and its \
                         shared-memory index cannot be made there; copy its files to a \
                         writable folder, or make the snapshot with sqlite3's .backup",
                        path.display(),
                        pending.display()
                    )));
                }
                let uri = immutable_uri(path).ok_or_else(|| {
                    StoreError::Read(format!(
                        "cannot open {} read-only: its path cannot be written as a URI",
                        path.display()
                    ))
                })?;
                Connection::open_with_flags(
                    uri,
                    OpenFlags::SQLITE_OPEN_READ_ONLY
                        | OpenFlags::SQLITE_OPEN_URI
                        | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .and_then(|c| has_meta(&c).map(|is_log| (c, is_log)))
            }
            other => other,
        }
        .map_err(|e| StoreError::Read(format!("cannot open {}: {e}", path.display())))?;
        if !is_log {
            return Err(StoreError::NotALog(path.display().to_string()));
        }
        SqliteStore::tune(conn, path)
    }

    /// Creates a new file; refuses one that exists (chit never replaces
    /// what it did not create).
    pub fn create_file(path: &Path) -> Result<SqliteStore, StoreError> {
        SqliteStore::create_file_paged(path, None)
    }

    /// A log folder's index database: [`SqliteStore::create_file`] with
    /// pages of `page_size` bytes (SQLite's `page_size`, fixed when the
    /// file is made), whose [`Store::create`] keeps each entry's label in
    /// its row ([`SCHEMA_LABELLED`]).
    pub fn create_index(path: &Path, page_size: u32) -> Result<SqliteStore, StoreError> {
        let mut store = SqliteStore::create_file_paged(path, Some(page_size))?;
        store.labelled = true;
        Ok(store)
    }

    fn create_file_paged(path: &Path, page_size: Option<u32>) -> Result<SqliteStore, StoreError> {
        // SQLite's companion files belong to the database of that name: one
        // already there (another database's, or a link) would be taken
        // over or written through.
        for companion in companions(path) {
            if std::fs::symlink_metadata(&companion).is_ok() {
                return Err(StoreError::Write(format!(
                    "cannot create {}: {} is already there (SQLite's companion file of that name); \
                     remove it or choose another name",
                    path.display(),
                    Path::new(&companion).display()
                )));
            }
        }
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    StoreError::Exists(path.display().to_string())
                } else {
                    StoreError::Write(format!("cannot create {}: {e}", path.display()))
                }
            })?;
        let conn = connect(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| write_err(path, e))?;
        if let Some(size) = page_size {
            conn.pragma_update(None, "page_size", size)
                .map_err(|e| write_err(path, e))?;
        }
        SqliteStore::tune(conn, path)
    }

    /// Removes a file [`SqliteStore::create_file`] made (it checked that
    /// no companion was there) and its companions, once its store is
    /// dropped: a half-made file would refuse every later try.
    pub fn remove_created(path: &Path) {
        let _ = std::fs::remove_file(path);
        for companion in companions(path) {
            let _ = std::fs::remove_file(companion);
        }
    }

    fn tune(conn: Connection, path: &Path) -> Result<SqliteStore, StoreError> {
        // A read-only file cannot switch to WAL; it is read as it is.
        let _ = conn.pragma_update(None, "journal_mode", "WAL");
        // 32 MiB of page cache (SQLite's default is 2 MiB): a big log's
        // indexes stay in memory while it grows.
        // (`synchronous=FULL` is set as the connection opens: `connect`.)
        conn.pragma_update(None, "cache_size", -32768)
            .and_then(|_| conn.busy_timeout(std::time::Duration::from_secs(30)))
            .map_err(|e| StoreError::Read(format!("cannot open {}: {e}", path.display())))?;
        // A sequencer's batch runs some twenty statements (its reads, its
        // writes, the late indexes' merges): with rusqlite's default of 16
        // kept, each batch would prepare some of them again.
        conn.set_prepared_statement_cache_capacity(64);
        Ok(SqliteStore {
            conn,
            path: path.to_path_buf(),
            checkpointer: None,
            wal_pages: WAL_PAGES,
            data_version: None,
            late: None,
            tail: Tail::default(),
            labelled: false,
        })
    }

    /// With housekeeping in the background, how many WAL pages a commit
    /// leaves to the checkpoint thread before it checkpoints the rest
    /// itself ([`WAL_PAGES`] unless set; takes effect at
    /// [`Store::housekeep_in_background`]).
    pub fn wal_pages(mut self, pages: u32) -> SqliteStore {
        self.wal_pages = pages;
        self
    }

    fn size(&self) -> Result<u64, StoreError> {
        head_size(&self.conn).map(|n| n as u64).map_err(read_err)
    }

    /// Which keys this log indexes late (made by this chit) rather than
    /// at each commit (a log made before).
    fn late(&mut self) -> Result<Late, StoreError> {
        if let Some(late) = self.late {
            return Ok(late);
        }
        let has = |table: &str| {
            self.conn
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                    [table],
                    |r| r.get::<_, i64>(0),
                )
                .map(|n| n > 0)
                .map_err(read_err)
        };
        let late = Late {
            arts: has(ARTS.upto_table)?,
            shas: has(SHAS.upto_table)?,
            labelled: has("chit_log_kinds")?,
        };
        self.late = Some(late);
        Ok(late)
    }

    /// [`Index::find`] on a log that indexes content addresses late: the
    /// entries appended since this connection last looked are read into
    /// its tail (entries are never rewritten: those read stay as read),
    /// and each address is looked for there, then in `chit_log_shas`.
    fn find_late(&mut self, digests: &[Hash]) -> Result<Vec<Option<u64>>, StoreError> {
        // One read transaction: the index, its bound and the tail agree.
        let tx = self.conn.unchecked_transaction().map_err(read_err)?;
        let upto = SHAS.upto(&tx).map_err(read_err)?;
        let size = head_size(&tx).map_err(read_err)?;
        let tail = &mut self.tail;
        if size < tail.to || upto < tail.upto {
            // Not the log this tail was read from (a file put back in its
            // place): read it again.
            *tail = Tail::default();
        }
        if upto > tail.upto {
            // Merged into the index since: looked for there now.
            tail.shas.retain(|_, i| *i as i64 >= upto);
            tail.upto = upto;
        }
        {
            let mut stmt = tx
                .prepare_cached(
                    "SELECT idx, sha256 FROM chit_log_entries WHERE idx >= ?1 AND idx < ?2 ORDER BY idx",
                )
                .map_err(read_err)?;
            // The log's entries only (a row past its head is no entry of
            // it: `chit log audit` names one).
            let mut rows = stmt
                .query(params![tail.to.max(upto), size])
                .map_err(read_err)?;
            while let Some(r) = rows.next().map_err(read_err)? {
                let idx: i64 = r.get(0).map_err(read_err)?;
                let sha = hash_of(r.get(1).map_err(read_err)?, idx)?;
                // The first entry with an address is the one it names.
                tail.shas.entry(sha).or_insert(idx as u64);
            }
            tail.to = tail.to.max(size);
        }
        let mut stmt = tx
            .prepare_cached("SELECT idx FROM chit_log_shas WHERE sha256 = ?1")
            .map_err(read_err)?;
        digests
            .iter()
            .map(|d| match tail.shas.get(d) {
                Some(&i) => Ok(Some(i)),
                None => stmt
                    .query_row(params![&d[..]], |r| r.get::<_, i64>(0))
                    .optional()
                    .map(|o| o.map(|i| i as u64))
                    .map_err(read_err),
            })
            .collect()
    }
}

/// Why a batch's entries with their labels could not be written.
enum Labelled {
    Sql(rusqlite::Error),
    /// A label names no entry of the batch.
    Stray(u64),
}

/// The entries of a batch, each with its search label in its row
/// ([`SCHEMA_LABELLED`]; an entry without one has NULL there).
fn insert_labelled(tx: &rusqlite::Transaction<'_>, batch: &Batch<'_>) -> Result<(), Labelled> {
    let first = batch.entries.first().map_or(0, |e| e.index);
    let mut labels: Vec<Option<&Label>> = vec![None; batch.entries.len()];
    for l in &batch.labels {
        let at = l
            .index
            .checked_sub(first)
            .and_then(|at| usize::try_from(at).ok())
            .filter(|&at| batch.entries.get(at).is_some_and(|e| e.index == l.index))
            .ok_or(Labelled::Stray(l.index))?;
        labels[at] = Some(l);
    }
    let idx: Vec<i64> = batch.entries.iter().map(|e| e.index as i64).collect();
    let none: Option<String> = None;
    let rows: Vec<[&dyn ToSql; 7]> = batch
        .entries
        .iter()
        .zip(&idx)
        .zip(&labels)
        .map(|((e, i), l)| -> [&dyn ToSql; 7] {
            match l {
                Some(l) => [
                    i,
                    &e.sha256,
                    &e.data,
                    &e.integrated_at,
                    &l.kind,
                    &l.art_id,
                    &l.stream_id,
                ],
                None => [i, &e.sha256, &e.data, &e.integrated_at, &none, &none, &none],
            }
        })
        .collect();
    insert_rows(
        tx,
        "chit_log_entries (idx, sha256, data, integrated_at, kind, art_id, stream_id)",
        &rows,
    )
    .map_err(Labelled::Sql)
}

/// Rows inserted `INTO into` (a table and its columns), [`ROWS_AT_ONCE`] a
/// statement, the rest one a statement: a statement's fixed cost (its
/// bindings reset, its program started and ended) paid once for many rows.
///
/// A row that conflicts fails the whole batch (`OR ROLLBACK`: the
/// transaction ends there, nothing of it is written). It would anyway, and
/// so SQLite keeps no statement journal, the copy of every page a
/// multi-row statement changes made in case it fails halfway.
fn insert_rows<const N: usize>(
    tx: &rusqlite::Transaction<'_>,
    into: &str,
    rows: &[[&dyn ToSql; N]],
) -> rusqlite::Result<()> {
    let head = format!("INSERT OR ROLLBACK INTO {into}");
    let row = format!("({})", ["?"; N].join(","));
    let mut chunks = rows.chunks_exact(ROWS_AT_ONCE);
    if rows.len() >= ROWS_AT_ONCE {
        let mut many = tx.prepare_cached(&format!(
            "{head} VALUES {}",
            vec![&*row; ROWS_AT_ONCE].join(",")
        ))?;
        let mut bound: Vec<&dyn ToSql> = Vec::with_capacity(ROWS_AT_ONCE * N);
        for chunk in &mut chunks {
            bound.clear();
            bound.extend(chunk.iter().flatten().copied());
            many.execute(&bound[..])?;
        }
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut one = tx.prepare_cached(&format!("{head} VALUES {row}"))?;
        for r in rest {
            one.execute(&r[..])?;
        }
    }
    Ok(())
}

/// Rows a multi-row `INSERT` of [`insert_rows`] holds.
const ROWS_AT_ONCE: usize = 16;

impl SqliteStore {
    /// Logged packets at each `(stream, value of column)`, in one read
    /// transaction.
    fn packets_where<V: rusqlite::ToSql>(
        &mut self,
        column: &str,
        keys: &[(String, V)],
    ) -> Result<Vec<PacketRow>, StoreError> {
        let tx = self.conn.unchecked_transaction().map_err(read_err)?;
        let mut stmt = tx
            .prepare_cached(&format!(
                "SELECT stream_id, sequence, packet_id, prev_packet_id, idx \
                 FROM chit_log_packets WHERE stream_id = ?1 AND {column} = ?2"
            ))
            .map_err(read_err)?;
        let mut out = Vec::new();
        for (s, v) in keys {
            if let Some(row) = stmt
                .query_row(params![s, v], packet_row)
                .optional()
                .map_err(read_err)?
            {
                out.push(row);
            }
        }
        Ok(out)
    }
}

/// The log's size as its head row says (prepared once a connection: the
/// sequencer reads it several times a batch).
fn head_size(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT size FROM chit_log_head WHERE id = 0")?
        .query_row([], |r| r.get(0))
}

/// The checkpoint stored for a size, if any.
fn note_at(conn: &Connection, size: i64) -> rusqlite::Result<Option<Vec<u8>>> {
    conn.prepare_cached("SELECT note FROM chit_log_checkpoints WHERE size = ?1")?
        .query_row(params![size], |r| r.get(0))
        .optional()
}

fn hash_of(v: Vec<u8>, index: i64) -> Result<Hash, StoreError> {
    v.try_into().map_err(|_| {
        StoreError::Read(format!(
            "entry {index}: its stored content address is not 32 bytes (run chit log audit)"
        ))
    })
}

fn entry_row(r: &rusqlite::Row) -> rusqlite::Result<(i64, Vec<u8>, Vec<u8>, i64)> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
}

fn to_entry((idx, sha, data, at): (i64, Vec<u8>, Vec<u8>, i64)) -> Result<Entry, StoreError> {
    Ok(Entry {
        index: idx as u64,
        sha256: hash_of(sha, idx)?,
        data,
        integrated_at: at,
    })
}

/// A search's statement and its values: only the filters given are in it,
/// so that SQLite can find the rows through the index of the one that
/// narrows most (one statement with every filter written `?n IS NULL OR
/// column = ?n` was planned once for all of them: a scan of every label
/// in index order, whichever filter was given).
///
/// An art id, a stream or a kind is looked up in its index (in that
/// order of preference; an art id indexed late, in `chit_log_arts` and
/// the labels above it; the other filters are checked on the rows it
/// finds, written `+column` so that SQLite does not pick their index
/// instead). Integration times alone are checked on a scan in index order
/// from `after`: the time index does not give the rows in index order.
fn search_sql(q: &Query, arts_late: bool) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value;
    let mut conds: Vec<String> = Vec::new();
    let mut values: Vec<Value> = Vec::new();
    // The first of these given drives the search; the rest are filters.
    let mut driven = false;
    for (column, given) in [
        ("art_id", &q.art_id),
        ("stream_id", &q.stream_id),
        ("kind", &q.kind),
    ] {
        if let Some(v) = given {
            if column == "art_id" && arts_late {
                // The art ids indexed, and the labels above them.
                conds.push(format!(
                    "idx IN (SELECT idx FROM chit_log_arts WHERE art_id = ? UNION ALL \
                     SELECT idx FROM chit_log_labels WHERE +art_id = ? AND idx >= ({}))",
                    ARTS.read_upto
                ));
                values.push(Value::Text(v.clone()));
            } else {
                let plus = if driven { "+" } else { "" };
                conds.push(format!("{plus}{column} = ?"));
            }
            driven = true;
            values.push(Value::Text(v.clone()));
        }
    }
    time_conds(q, "integrated_at", &mut conds, &mut values);
    conds.push("idx > ?".to_string());
    values.push(Value::Integer(
        q.after.map(|a| a.min(i64::MAX as u64) as i64).unwrap_or(-1),
    ));
    values.push(Value::Integer(i64::from(q.limit)));
    let sql = format!(
        "SELECT idx, kind, art_id, stream_id, integrated_at FROM chit_log_labels \
         WHERE {} ORDER BY idx LIMIT ?",
        conds.join(" AND ")
    );
    (sql, values)
}

/// A search's time bounds on `column` (`since` included, `until` not),
/// written `+column` so that SQLite picks no index for them.
fn time_conds(
    q: &Query,
    column: &str,
    conds: &mut Vec<String>,
    values: &mut Vec<rusqlite::types::Value>,
) {
    for (op, given) in [(">=", q.since), ("<", q.until)] {
        if let Some(v) = given {
            conds.push(format!("+{column} {op} ?"));
            values.push(rusqlite::types::Value::Integer(v));
        }
    }
}

fn packet_row(r: &rusqlite::Row) -> rusqlite::Result<PacketRow> {
    Ok(PacketRow {
        stream_id: r.get(0)?,
        sequence: r.get(1)?,
        packet_id: r.get(2)?,
        prev_packet_id: r.get(3)?,
        index: r.get::<_, i64>(4)? as u64,
    })
}

impl SqliteStore {
    /// The index of each content address, where the log holds it.
    fn addresses(&mut self, digests: &[Hash]) -> Result<Vec<Option<u64>>, StoreError> {
        if self.late()?.shas {
            return self.find_late(digests);
        }
        // One read transaction: one shared lock for every lookup, not one
        // (two fcntl calls) per statement.
        let tx = self.conn.unchecked_transaction().map_err(read_err)?;
        let mut stmt = tx
            .prepare_cached("SELECT idx FROM chit_log_entries WHERE sha256 = ?1")
            .map_err(read_err)?;
        digests
            .iter()
            .map(|d| {
                stmt.query_row(params![&d[..]], |r| r.get::<_, i64>(0))
                    .optional()
                    .map(|o| o.map(|i| i as u64))
                    .map_err(read_err)
            })
            .collect()
    }

    fn packets_at(&mut self, keys: &[(String, i64)]) -> Result<Vec<PacketRow>, StoreError> {
        self.packets_where("sequence", keys)
    }

    fn packets_named(&mut self, keys: &[(String, String)]) -> Result<Vec<PacketRow>, StoreError> {
        self.packets_where("packet_id", keys)
    }

    /// [`Index::search`] on a log that keeps labels in its entries
    /// ([`SCHEMA_LABELLED`]): below the late indexes' bound, driven by the
    /// index of the first key given (art id, stream, kind), in index
    /// order; then the labels above the bound (at most about
    /// [`MERGE_AT`] of them) read in index order. With no key given, the
    /// labels are read in index order from `after`.
    fn search_labelled(&mut self, q: &Query) -> Result<Vec<Hit>, StoreError> {
        use rusqlite::types::Value;
        // One read transaction: the indexes and their bound agree.
        let tx = self.conn.unchecked_transaction().map_err(read_err)?;
        let upto = ARTS.upto(&tx).map_err(read_err)?;
        let after = q.after.map_or(-1, |a| a.min(i64::MAX as u64) as i64);
        let keys = [
            ("art_id", "chit_log_arts", &q.art_id),
            ("stream_id", "chit_log_streams", &q.stream_id),
            ("kind", "chit_log_kinds", &q.kind),
        ];
        // Every filter, on the labels' columns (`+`: no index of theirs).
        let mut filters: Vec<String> = Vec::new();
        let mut values: Vec<Value> = Vec::new();
        for (column, _, given) in keys {
            if let Some(v) = given {
                filters.push(format!("+l.{column} = ?"));
                values.push(Value::Text(v.clone()));
            }
        }
        time_conds(q, "l.integrated_at", &mut filters, &mut values);
        let cols = "l.idx, l.kind, l.art_id, l.stream_id, l.integrated_at";
        let filtered = |mut conds: Vec<String>| {
            conds.extend(filters.iter().cloned());
            conds.join(" AND ")
        };
        let run = |sql: &str, mut params: Vec<Value>, limit: usize| {
            params.extend(values.iter().cloned());
            params.push(Value::Integer(limit as i64));
            let mut stmt = tx.prepare_cached(sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(params), |r| {
                Ok(Hit {
                    label: Label {
                        index: r.get::<_, i64>(0)? as u64,
                        kind: r.get(1)?,
                        art_id: r.get(2)?,
                        stream_id: r.get(3)?,
                    },
                    integrated_at: r.get(4)?,
                })
            })?;
            rows.collect::<rusqlite::Result<Vec<Hit>>>()
        };
        let limit = q.limit as usize;
        let mut hits = Vec::new();
        let mut from = after;
        if let Some((column, table, Some(key))) = keys.iter().find(|k| k.2.is_some()) {
            if after < upto - 1 {
                let sql = format!(
                    "SELECT {cols} FROM {table} k JOIN chit_log_labels l ON l.idx = k.idx \
                     WHERE {} ORDER BY k.idx LIMIT ?",
                    filtered(vec![
                        format!("k.{column} = ?"),
                        "k.idx > ?".into(),
                        "k.idx < ?".into()
                    ])
                );
                let params = vec![
                    Value::Text(key.to_string()),
                    Value::Integer(after),
                    Value::Integer(upto),
                ];
                hits = run(&sql, params, limit).map_err(read_err)?;
            }
            from = from.max(upto - 1);
        }
        let left = limit - hits.len().min(limit);
        if left > 0 {
            let sql = format!(
                "SELECT {cols} FROM chit_log_labels l WHERE {} ORDER BY l.idx LIMIT ?",
                filtered(vec!["l.idx > ?".into()])
            );
            hits.extend(run(&sql, vec![Value::Integer(from)], left).map_err(read_err)?);
        }
        Ok(hits)
    }
}

impl Tree for SqliteStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn head(&mut self) -> Result<(u64, Vec<u8>), StoreError> {
        let tx = self.conn.transaction().map_err(read_err)?;
        let size = head_size(&tx).map_err(read_err)?;
        let note = note_at(&tx, size).map_err(read_err)?;
        let note = note.ok_or_else(|| {
            StoreError::Read(format!("the store has no checkpoint for its size {size}"))
        })?;
        Ok((size as u64, note))
    }

    fn checkpoint_at(&mut self, size: u64) -> Result<Option<Vec<u8>>, StoreError> {
        note_at(&self.conn, size as i64).map_err(read_err)
    }

    fn entry(&mut self, index: u64) -> Result<Option<Entry>, StoreError> {
        let row = self
            .conn
            .query_row(
                "SELECT idx, sha256, data, integrated_at FROM chit_log_entries WHERE idx = ?1",
                params![index as i64],
                entry_row,
            )
            .optional()
            .map_err(read_err)?;
        row.map(to_entry).transpose()
    }

    fn scan(
        &mut self,
        start: u64,
        end: u64,
        each: &mut dyn FnMut(Entry) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT idx, sha256, data, integrated_at FROM chit_log_entries \
                 WHERE idx >= ?1 AND idx < ?2 ORDER BY idx",
            )
            .map_err(read_err)?;
        let end = end.min(i64::MAX as u64) as i64;
        let mut rows = stmt
            .query(params![start.min(i64::MAX as u64) as i64, end])
            .map_err(read_err)?;
        while let Some(r) = rows.next().map_err(read_err)? {
            each(to_entry(entry_row(r).map_err(read_err)?)?)?;
        }
        Ok(())
    }

    fn tile(&mut self, level: u8, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT data FROM chit_log_tiles WHERE level = ?1 AND idx = ?2")
            .map_err(read_err)?;
        stmt.query_row(params![level, index as i64], |r| r.get(0))
            .optional()
            .map_err(read_err)
    }
}

impl Index for SqliteStore {
    fn lookup(
        &mut self,
        digests: &[Hash],
        at: &[(String, i64)],
        named: &[(String, String)],
    ) -> Result<(Vec<Option<u64>>, Vec<PacketRow>), StoreError> {
        let found = self.addresses(digests)?;
        let mut rows = if at.is_empty() {
            Vec::new()
        } else {
            self.packets_at(at)?
        };
        if !named.is_empty() {
            rows.extend(self.packets_named(named)?);
        }
        Ok((found, rows))
    }

    fn stream(&mut self, stream_id: &str, limit: u32) -> Result<Vec<PacketRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT stream_id, sequence, packet_id, prev_packet_id, idx \
                 FROM chit_log_packets WHERE stream_id = ?1 ORDER BY sequence LIMIT ?2",
            )
            .map_err(read_err)?;
        let rows = stmt
            .query_map(params![stream_id, limit], packet_row)
            .and_then(|rows| rows.collect())
            .map_err(read_err)?;
        Ok(rows)
    }

    fn packets(
        &mut self,
        each: &mut dyn FnMut(PacketRow) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT stream_id, sequence, packet_id, prev_packet_id, idx \
                 FROM chit_log_packets ORDER BY stream_id, sequence",
            )
            .map_err(read_err)?;
        let mut rows = stmt.query([]).map_err(read_err)?;
        while let Some(r) = rows.next().map_err(read_err)? {
            each(packet_row(r).map_err(read_err)?)?;
        }
        Ok(())
    }

    fn index_rows(
        &mut self,
        kind: crate::store::IndexKind,
        each: &mut crate::store::EachIndexRow,
    ) -> Result<Option<u64>, StoreError> {
        let late = self.late()?;
        let (index, rows) = match kind {
            crate::store::IndexKind::Content if late.shas => {
                (&SHAS, "SELECT idx, sha256 FROM chit_log_shas")
            }
            crate::store::IndexKind::Art if late.arts => {
                (&ARTS, "SELECT idx, art_id FROM chit_log_arts")
            }
            crate::store::IndexKind::Kind if late.labelled => {
                (&ARTS, "SELECT idx, kind FROM chit_log_kinds")
            }
            crate::store::IndexKind::Stream if late.labelled => {
                (&ARTS, "SELECT idx, stream_id FROM chit_log_streams")
            }
            _ => return Ok(None),
        };
        // One read transaction: the rows and their bound agree.
        let tx = self.conn.unchecked_transaction().map_err(read_err)?;
        let upto = index.upto(&tx).map_err(read_err)?;
        let mut stmt = tx.prepare(rows).map_err(read_err)?;
        let mut rows = stmt.query([]).map_err(read_err)?;
        while let Some(r) = rows.next().map_err(read_err)? {
            let idx: i64 = r.get(0).map_err(read_err)?;
            let key = match r.get_ref(1).map_err(read_err)? {
                rusqlite::types::ValueRef::Blob(b) | rusqlite::types::ValueRef::Text(b) => b,
                _ => &[],
            };
            each(idx, key)?;
        }
        Ok(Some(upto.max(0) as u64))
    }

    fn search(&mut self, q: &Query) -> Result<Vec<Hit>, StoreError> {
        if self.late()?.labelled {
            return self.search_labelled(q);
        }
        let (sql, values) = search_sql(q, self.late()?.arts);
        let mut stmt = self.conn.prepare_cached(&sql).map_err(read_err)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(values), |r| {
                Ok(Hit {
                    label: Label {
                        index: r.get::<_, i64>(0)? as u64,
                        kind: r.get(1)?,
                        art_id: r.get(2)?,
                        stream_id: r.get(3)?,
                    },
                    integrated_at: r.get(4)?,
                })
            })
            .and_then(|rows| rows.collect())
            .map_err(read_err)?;
        Ok(rows)
    }
}

impl Store for SqliteStore {
    fn create(&mut self, meta: &Meta, checkpoint: &[u8]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| write_err(&path, e))?;
        let exists: Option<String> = tx
            .query_row(
                "SELECT name FROM sqlite_master WHERE name = 'chit_log_meta'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(read_err)?;
        if exists.is_some() {
            return Err(StoreError::Exists(path.display().to_string()));
        }
        tx.execute_batch(SCHEMA)
            .and_then(|_| {
                if self.labelled {
                    tx.execute_batch(SCHEMA_LABELLED)
                } else {
                    Ok(())
                }
            })
            .map_err(|e| write_err(&path, e))?;
        self.late = Some(Late {
            arts: true,
            shas: true,
            labelled: self.labelled,
        });
        let mut rows = vec![
            ("format", Some(crate::FORMAT.to_string())),
            ("origin", Some(meta.origin.clone())),
            ("verifier_key", Some(meta.verifier_key.clone())),
            ("policy", Some(meta.policy.clone())),
            ("key_file", meta.key_file.clone()),
            ("policy_binding", meta.policy_binding.clone()),
        ];
        rows.retain(|(_, v)| v.is_some());
        for (k, v) in rows {
            tx.execute(
                "INSERT INTO chit_log_meta (key, value) VALUES (?1, ?2)",
                params![k, v],
            )
            .map_err(|e| write_err(&path, e))?;
        }
        tx.execute("INSERT INTO chit_log_head (id, size) VALUES (0, 0)", [])
            .map_err(|e| write_err(&path, e))?;
        tx.execute(
            "INSERT INTO chit_log_checkpoints (size, note) VALUES (0, ?1)",
            params![checkpoint],
        )
        .map_err(|e| write_err(&path, e))?;
        tx.commit().map_err(|e| write_err(&path, e))
    }

    fn meta(&mut self) -> Result<Meta, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT key, value FROM chit_log_meta")
            .map_err(read_err)?;
        let rows: Vec<(String, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(read_err)?;
        crate::meta_from_rows(&self.path.display().to_string(), rows)
    }

    fn bind_policy(&mut self, binding: &str) -> Result<bool, StoreError> {
        let n = self
            .conn
            .execute(
                "INSERT OR IGNORE INTO chit_log_meta (key, value) VALUES ('policy_binding', ?1)",
                params![binding],
            )
            .map_err(|e| write_err(&self.path, e))?;
        Ok(n == 1)
    }

    fn changed_elsewhere(&mut self) -> Result<bool, StoreError> {
        let now: i64 = self
            .conn
            .pragma_query_value(None, "data_version", |r| r.get(0))
            .map_err(read_err)?;
        Ok(self.data_version.replace(now) != Some(now))
    }

    fn checkpoints(&mut self) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT size, note FROM chit_log_checkpoints ORDER BY size")
            .map_err(read_err)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(read_err)?;
        Ok(rows)
    }

    fn replace_checkpoint(
        &mut self,
        size: u64,
        old: &[u8],
        note: &[u8],
    ) -> Result<bool, StoreError> {
        let n = self
            .conn
            .execute(
                "UPDATE chit_log_checkpoints SET note = ?3 WHERE size = ?1 AND note = ?2",
                params![size as i64, old, note],
            )
            .map_err(|e| write_err(&self.path, e))?;
        Ok(n == 1)
    }

    fn commit(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
        let path = self.path.clone();
        let w = |e| write_err(&path, e);
        let late = self.late()?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(w)?;
        let found = head_size(&tx).map_err(read_err)?;
        if found as u64 != batch.old_size {
            return Err(StoreError::Conflict {
                expected: batch.old_size,
                found: found as u64,
            });
        }
        if late.labelled {
            insert_labelled(&tx, batch).map_err(|e| match e {
                Labelled::Sql(e) => w(e),
                Labelled::Stray(index) => StoreError::Write(format!(
                    "a label for entry {index}, which the batch does not append"
                )),
            })?;
        } else {
            let idx: Vec<i64> = batch.entries.iter().map(|e| e.index as i64).collect();
            let rows: Vec<[&dyn ToSql; 4]> = batch
                .entries
                .iter()
                .zip(&idx)
                .map(|(e, i)| -> [&dyn ToSql; 4] { [i, &e.sha256, &e.data, &e.integrated_at] })
                .collect();
            insert_rows(
                &tx,
                "chit_log_entries (idx, sha256, data, integrated_at)",
                &rows,
            )
            .map_err(w)?;
            let at = batch.entries.first().map(|e| e.integrated_at).unwrap_or(0);
            let idx: Vec<i64> = batch.labels.iter().map(|l| l.index as i64).collect();
            let rows: Vec<[&dyn ToSql; 5]> = batch
                .labels
                .iter()
                .zip(&idx)
                .map(|(l, i)| -> [&dyn ToSql; 5] { [i, &l.kind, &l.art_id, &l.stream_id, &at] })
                .collect();
            insert_rows(
                &tx,
                "chit_log_labels (idx, kind, art_id, stream_id, integrated_at)",
                &rows,
            )
            .map_err(w)?;
        }
        {
            let mut tile = tx
                .prepare_cached(
                    "INSERT INTO chit_log_tiles (level, idx, data) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (level, idx) DO UPDATE SET data = excluded.data",
                )
                .map_err(w)?;
            for (level, index, data) in &batch.tiles {
                tile.execute(params![level, *index as i64, data])
                    .map_err(w)?;
            }
            let idx: Vec<i64> = batch.packets.iter().map(|p| p.index as i64).collect();
            let rows: Vec<[&dyn ToSql; 5]> = batch
                .packets
                .iter()
                .zip(&idx)
                .map(|(p, i)| -> [&dyn ToSql; 5] {
                    [
                        &p.stream_id,
                        &p.sequence,
                        &p.packet_id,
                        &p.prev_packet_id,
                        i,
                    ]
                })
                .collect();
            insert_rows(
                &tx,
                "chit_log_packets (stream_id, sequence, packet_id, prev_packet_id, idx)",
                &rows,
            )
            .map_err(w)?;
        }
        // At most one merge a commit: the batch's requests wait for it.
        let merged = late.arts
            && ARTS
                .merge(&tx, batch.new_size() as i64, MERGE_AT, late.labelled)
                .map_err(w)?;
        if late.shas && !merged {
            SHAS.merge(&tx, batch.new_size() as i64, MERGE_AT, false)
                .map_err(w)?;
        }
        tx.prepare_cached("INSERT INTO chit_log_checkpoints (size, note) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![batch.new_size() as i64, &batch.checkpoint]))
            .map_err(w)?;
        tx.prepare_cached("UPDATE chit_log_head SET size = ?1 WHERE id = 0")
            .and_then(|mut s| s.execute(params![batch.new_size() as i64]))
            .map_err(w)?;
        tx.commit().map_err(w)?;
        if let Some(c) = &self.checkpointer {
            c.committed();
        }
        // What was just written is this connection's tail's next part (it
        // need not read it back), when the tail had read up to the batch.
        let tail = &mut self.tail;
        if late.shas && tail.to == batch.old_size as i64 {
            for e in &batch.entries {
                tail.shas.entry(e.sha256).or_insert(e.index);
            }
            tail.to = batch.new_size() as i64;
        }
        Ok(())
    }

    fn lease(&mut self, _wait: std::time::Duration) -> Result<(), StoreError> {
        // One file on one machine: SQLite's write lock, taken by every
        // commit, and the size check inside it are the sequencer's lease.
        self.size().map(|_| ())
    }

    fn write_blocked(&mut self) -> Option<String> {
        if self.conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
            return Some(format!(
                "{} is read-only to this server (its file's permissions, or its filesystem)",
                self.path.display()
            ));
        }
        let free = free_bytes(&self.path)?;
        (free < LOW_SPACE).then(|| {
            format!(
                "{free} bytes are free where {} is (a batch may need up to {LOW_SPACE})",
                self.path.display()
            )
        })
    }

    fn housekeep_in_background(&mut self) -> Result<(), StoreError> {
        if self.checkpointer.is_some() || self.conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(true) {
            return Ok(());
        }
        self.checkpointer = Some(Checkpointer::start(&self.path)?);
        // The thread checkpoints; a commit checkpoints only when the WAL
        // has grown past `wal_pages` (see `Checkpointer`).
        self.conn
            .pragma_update(None, "wal_autocheckpoint", self.wal_pages)
            .and_then(|_| {
                self.conn
                    .pragma_update(None, "journal_size_limit", WAL_LIMIT_BYTES)
            })
            .map_err(|e| write_err(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::Checkpointer;
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    /// The labels of a log of 3,000 entries: four kinds, a third with an
    /// art id, a fifth in one of seven streams, times in batches (and one
    /// clock step back), by a fixed pseudo-random sequence.
    ///
    /// `late`: art ids indexed late, as this chit makes logs (merged every
    /// 700 labels, so that some are in `chit_log_arts` and some above
    /// it); else in an index on the labels, as logs made before.
    fn labelled(late: bool) -> (rusqlite::Connection, Vec<crate::store::Hit>) {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        c.execute_batch(super::SCHEMA).unwrap();
        if !late {
            c.execute_batch(
                "DROP TABLE chit_log_arts; DROP TABLE chit_log_arts_upto; \
                 CREATE INDEX chit_log_labels_art ON chit_log_labels (art_id) WHERE art_id IS NOT NULL;",
            )
            .unwrap();
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let kinds = [
            "run-receipt",
            "verification.packet.v1",
            "lattice",
            "lineage",
        ];
        let mut hits = Vec::new();
        for i in 0..3000u64 {
            let r = next();
            let at = 1_000_000 + (i / 40) as i64 * 7 - if i >= 2000 { 100 } else { 0 };
            let label = crate::store::Label {
                index: i,
                kind: kinds[(r % 4) as usize].to_string(),
                art_id: (r % 3 == 0).then(|| format!("art_{:032x}", r >> 8)),
                stream_id: (r % 5 == 0).then(|| format!("s{}", (r >> 4) % 7)),
            };
            c.execute(
                "INSERT INTO chit_log_labels (idx, kind, art_id, stream_id, integrated_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![i as i64, label.kind, label.art_id, label.stream_id, at],
            )
            .unwrap();
            hits.push(crate::store::Hit {
                label,
                integrated_at: at,
            });
            if late && i % 100 == 99 {
                super::ARTS.merge(&c, i as i64 + 1, 700, false).unwrap();
            }
        }
        if late {
            assert_eq!(super::ARTS.upto(&c).unwrap(), 2800);
        }
        (c, hits)
    }

    fn run(c: &rusqlite::Connection, q: &crate::store::Query, late: bool) -> Vec<u64> {
        let (sql, values) = super::search_sql(q, late);
        let mut stmt = c.prepare(&sql).unwrap();
        let rows = stmt
            .query_map(rusqlite::params_from_iter(values), |r| r.get::<_, i64>(0))
            .unwrap();
        rows.map(|r| r.unwrap() as u64).collect()
    }

    /// Every combination of filters finds what a filter over every label
    /// finds, in index order, from `after`, at most `limit`.
    #[test]
    fn a_search_finds_what_its_filters_say() {
        for late in [true, false] {
            search_finds_what_its_filters_say(late);
        }
    }

    fn search_finds_what_its_filters_say(late: bool) {
        let (c, hits) = labelled(late);
        // A lattice entry with an art id in a stream, after index 700 and
        // within the times below: every combination can find it.
        let one = hits
            .iter()
            .find(|h| {
                h.label.kind == "lattice"
                    && h.label.art_id.is_some()
                    && h.label.stream_id.is_some()
                    && h.label.index > 700
                    && (1_000_100..1_000_400).contains(&h.integrated_at)
            })
            .unwrap();
        let (art, streamed) = (one, one);
        let mut tried = 0;
        for mask in 0..32u32 {
            for (after, limit) in [(None, 5000), (Some(700), 25), (Some(2990), 3)] {
                let q = crate::store::Query {
                    kind: (mask & 1 != 0).then(|| "lattice".to_string()),
                    art_id: (mask & 2 != 0).then(|| art.label.art_id.clone().unwrap()),
                    stream_id: (mask & 4 != 0).then(|| streamed.label.stream_id.clone().unwrap()),
                    since: (mask & 8 != 0).then_some(1_000_100),
                    until: (mask & 16 != 0).then_some(1_000_400),
                    after,
                    limit,
                };
                let want: Vec<u64> = hits
                    .iter()
                    .filter(|h| q.kind.as_ref().is_none_or(|k| *k == h.label.kind))
                    .filter(|h| q.art_id.is_none() || q.art_id == h.label.art_id)
                    .filter(|h| q.stream_id.is_none() || q.stream_id == h.label.stream_id)
                    .filter(|h| q.since.is_none_or(|t| h.integrated_at >= t))
                    .filter(|h| q.until.is_none_or(|t| h.integrated_at < t))
                    .filter(|h| after.is_none_or(|a| h.label.index > a))
                    .map(|h| h.label.index)
                    .take(limit as usize)
                    .collect();
                assert_eq!(run(&c, &q, late), want, "{q:?}");
                tried += usize::from(!want.is_empty());
            }
        }
        // Not a comparison of empty answers: every combination found
        // something without `after` (32) and from 700 (32).
        assert!(tried >= 64, "{tried}");
    }

    /// An art id, a stream or a kind is found through its index, not by a
    /// scan of every label (what one statement for every filter did).
    #[test]
    fn a_search_by_label_reads_its_index() {
        for late in [true, false] {
            search_by_label_reads_its_index(late);
        }
    }

    fn search_by_label_reads_its_index(late: bool) {
        let (c, _) = labelled(late);
        let plan = |q: &crate::store::Query| -> String {
            let (sql, values) = super::search_sql(q, late);
            let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            let rows = stmt
                .query_map(rusqlite::params_from_iter(values), |r| {
                    r.get::<_, String>(3)
                })
                .unwrap();
            rows.map(Result::unwrap).collect::<Vec<_>>().join("; ")
        };
        let q = |f: &dyn Fn(&mut crate::store::Query)| {
            let mut q = crate::store::Query {
                limit: 10,
                ..Default::default()
            };
            f(&mut q);
            q
        };
        let text = |v: &str| Some(v.to_string());
        let art = if late {
            "SEARCH chit_log_arts USING PRIMARY KEY (art_id=?)"
        } else {
            "SEARCH chit_log_labels USING INDEX chit_log_labels_art"
        };
        for (query, index) in [
            (q(&|q| q.art_id = text("art_1")), art),
            (
                q(&|q| q.stream_id = text("s1")),
                "USING INDEX chit_log_labels_stream",
            ),
            (
                q(&|q| q.kind = text("lattice")),
                "USING INDEX chit_log_labels_kind",
            ),
            (
                q(&|q| {
                    q.kind = text("lattice");
                    q.art_id = text("art_1");
                    q.since = Some(5);
                }),
                art,
            ),
            (
                q(&|q| {
                    q.kind = text("lattice");
                    q.stream_id = text("s1");
                }),
                "USING INDEX chit_log_labels_stream",
            ),
        ] {
            let p = plan(&query);
            // Found through the index; no label read but those it names
            // (and, for an art id indexed late, those above the index).
            assert!(p.contains(index) && !p.contains("SCAN"), "{query:?}: {p}");
        }
        // Times alone: in index order from `after`, no sort.
        let p = plan(&q(&|q| q.since = Some(5)));
        assert!(
            p.contains("INTEGER PRIMARY KEY") && !p.contains("TEMP B-TREE"),
            "{p}"
        );
    }

    fn new_store(path: &std::path::Path) -> super::SqliteStore {
        created(super::SqliteStore::create_file(path).unwrap())
    }

    /// `st` with a log created in it.
    fn created(mut st: super::SqliteStore) -> super::SqliteStore {
        use crate::store::{Meta, Store};
        let meta = Meta {
            origin: "test.example/arts".into(),
            verifier_key: "k".into(),
            policy: "{}".into(),
            key_file: None,
            policy_binding: None,
        };
        st.create(&meta, b"checkpoint 0").unwrap();
        st
    }

    /// The content address given to entry `i` here.
    fn sha(i: u64) -> chit_log::Hash {
        let mut h = [0u8; 32];
        h[..8].copy_from_slice(&i.to_be_bytes());
        h[31] = 7;
        h
    }

    /// Entries `from..to`'s bytes (each its own).
    fn entries(from: u64, to: u64) -> Vec<Vec<u8>> {
        (from..to)
            .map(|i| format!("entry {i}").into_bytes())
            .collect()
    }

    fn art(i: u64) -> String {
        format!("art_{:032x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }

    /// Commits one batch of entries `data` from `size` on (every other one
    /// with an art id), and returns the new size.
    fn commit_labelled(st: &mut super::SqliteStore, size: u64, data: &[Vec<u8>]) -> u64 {
        use crate::store::Store;
        let batch = labelled_batch(size, data);
        st.commit(&batch).unwrap();
        batch.new_size()
    }

    /// [`commit_labelled`]'s batch.
    fn labelled_batch(size: u64, data: &[Vec<u8>]) -> crate::store::Batch<'_> {
        batch_of(size, data, 5, |i| {
            Some(crate::store::Label {
                index: i,
                kind: "run-receipt".into(),
                art_id: (i % 2 == 0).then(|| art(i)),
                stream_id: None,
            })
        })
    }

    /// A batch of entries `data` from `size` on, integrated `at`, each
    /// with the label `label` gives it (where it gives one).
    fn batch_of(
        mut size: u64,
        data: &[Vec<u8>],
        at: i64,
        label: impl Fn(u64) -> Option<crate::store::Label>,
    ) -> crate::store::Batch<'_> {
        use crate::store::{Batch, NewEntry};
        let mut batch = Batch {
            old_size: size,
            checkpoint: format!("checkpoint {}", size + data.len() as u64).into_bytes(),
            ..Batch::default()
        };
        for d in data {
            batch.entries.push(NewEntry {
                index: size,
                sha256: sha(size),
                data: d,
                integrated_at: at,
            });
            batch.labels.extend(label(size));
            size += 1;
        }
        batch
    }

    /// Content addresses indexed late are found wherever they are: above
    /// the index (read into a connection's tail as appended, by another
    /// connection too) and below it once merged; a merge that meets two
    /// entries with one address fails its commit.
    #[test]
    fn content_addresses_are_found_above_and_below_the_index() {
        use crate::store::{Index, Store};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut a = new_store(&path);
        let mut b = super::SqliteStore::open(&path).unwrap();
        let data = entries(0, 12_000);
        let shas_upto = |st: &super::SqliteStore| super::SHAS.upto(&st.conn).unwrap();
        let mut size = commit_labelled(&mut a, 0, &data[..5000]);
        // b reads them all into its tail; nothing merged yet.
        assert_eq!(
            b.find(&[sha(0), sha(4999), sha(5000)]).unwrap(),
            vec![Some(0), Some(4999), None]
        );
        assert_eq!(b.tail.shas.len(), 5000);
        // At 9,000 the art ids are merged; the addresses at the next
        // commit (one merge a commit).
        size = commit_labelled(&mut a, size, &data[5000..9000]);
        assert_eq!(shas_upto(&a), 0);
        size = commit_labelled(&mut a, size, &data[9000..9100]);
        assert_eq!(shas_upto(&a), 9100);
        // b's tail is emptied; the index answers.
        assert_eq!(
            b.find(&[sha(0), sha(4999), sha(9099), sha(9100)]).unwrap(),
            vec![Some(0), Some(4999), Some(9099), None]
        );
        assert_eq!((b.tail.upto, b.tail.shas.len()), (9100, 0));
        size = commit_labelled(&mut a, size, &data[9100..9200]);
        assert_eq!(
            b.find(&[sha(9150), sha(17)]).unwrap(),
            vec![Some(9150), Some(17)]
        );
        assert_eq!(b.tail.shas.len(), 100);
        // A row past the head, put there by hand, is no entry of the log.
        a.conn
            .execute(
                "INSERT INTO chit_log_entries (idx, sha256, data, integrated_at) VALUES (50000, ?1, x'00', 0)",
                [&sha(777_777)[..]],
            )
            .unwrap();
        assert_eq!(b.find(&[sha(777_777)]).unwrap(), vec![None]);
        a.conn
            .execute("DELETE FROM chit_log_entries WHERE idx = 50000", [])
            .unwrap();
        // Entry 9,150's address given to entry 9,200 by hand: the commit
        // that merges them fails, and writes nothing.
        size = commit_labelled(&mut a, size, &data[9200..9201]);
        a.conn
            .execute(
                "UPDATE chit_log_entries SET sha256 = ?1 WHERE idx = 9200",
                [&sha(9150)[..]],
            )
            .unwrap();
        let mut grown = size;
        let mut failed = None;
        for chunk in data[..9000].chunks(1000) {
            let mut batch = crate::store::Batch {
                old_size: grown,
                checkpoint: format!("checkpoint {}", grown + 1000).into_bytes(),
                ..Default::default()
            };
            for (i, d) in chunk.iter().enumerate() {
                batch.entries.push(crate::store::NewEntry {
                    index: grown + i as u64,
                    sha256: sha(100_000 + grown + i as u64),
                    data: d,
                    integrated_at: 5,
                });
            }
            match a.commit(&batch) {
                Ok(()) => grown += 1000,
                Err(e) => {
                    failed = Some(e.to_string());
                    break;
                }
            }
        }
        let e = failed.expect("a merge of two entries with one address");
        assert!(
            e.contains("UNIQUE") && e.contains("nothing of this batch"),
            "{e}"
        );
        assert_eq!(a.size().unwrap(), grown);
        assert_eq!(shas_upto(&a), 9100);
    }

    /// A row that conflicts with one already there (put there by hand)
    /// fails the whole batch: its inserts run `OR ROLLBACK` (no statement
    /// journal), so the transaction ends at the conflict, and nothing of
    /// the batch is left, in any table. The same batch commits once the
    /// row is gone.
    #[test]
    fn a_conflicting_row_fails_the_whole_batch() {
        use crate::store::Store;
        let dir = tempfile::tempdir().unwrap();
        let mut st = new_store(&dir.path().join("s.db"));
        let size = commit_labelled(&mut st, 0, &entries(0, 40));
        let data = entries(40, 77);
        let batch = labelled_batch(size, &data);
        let count = |st: &super::SqliteStore, table: &str| -> i64 {
            st.conn
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
                .unwrap()
        };
        // Inside the batch's second run of 16 rows.
        st.conn
            .execute(
                "INSERT INTO chit_log_labels (idx, kind, integrated_at) VALUES (60, 'x', 0)",
                [],
            )
            .unwrap();
        let e = st.commit(&batch).unwrap_err().to_string();
        assert!(e.contains("UNIQUE") || e.contains("PRIMARY"), "{e}");
        assert_eq!(st.size().unwrap(), 40);
        assert_eq!(count(&st, "chit_log_entries"), 40);
        assert_eq!(count(&st, "chit_log_labels"), 41);
        assert_eq!(count(&st, "chit_log_checkpoints"), 2);
        assert!(st.conn.is_autocommit(), "no transaction is left open");
        st.conn
            .execute("DELETE FROM chit_log_labels WHERE idx = 60", [])
            .unwrap();
        st.commit(&batch).unwrap();
        assert_eq!(st.size().unwrap(), 77);
        assert_eq!(count(&st, "chit_log_entries"), 77);
        assert_eq!(count(&st, "chit_log_labels"), 77);
    }

    /// A log made before art ids were indexed late (an index on the
    /// labels, no `chit_log_arts`) is appended to and searched as before.
    #[test]
    fn a_log_made_before_keeps_its_art_index() {
        use crate::store::{Index, Query};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        drop(new_store(&path));
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(
                "DROP TABLE chit_log_arts; DROP TABLE chit_log_arts_upto; \
                 DROP TABLE chit_log_shas; DROP TABLE chit_log_shas_upto; \
                 CREATE INDEX chit_log_labels_art ON chit_log_labels (art_id) WHERE art_id IS NOT NULL; \
                 CREATE UNIQUE INDEX chit_log_entries_sha ON chit_log_entries (sha256);",
            )
            .unwrap();
        let mut st = super::SqliteStore::open(&path).unwrap();
        let data = entries(0, 9_000);
        let mut size = 0;
        for chunk in data.chunks(3000) {
            size = commit_labelled(&mut st, size, chunk);
        }
        assert_eq!(size, 9000);
        for i in [0u64, 8998] {
            let hits = st
                .search(&Query {
                    art_id: Some(art(i)),
                    limit: 10,
                    ..Query::default()
                })
                .unwrap();
            assert_eq!(
                hits.iter().map(|h| h.label.index).collect::<Vec<_>>(),
                vec![i]
            );
        }
        assert_eq!(
            st.find(&[sha(0), sha(8999), sha(9000)]).unwrap(),
            vec![Some(0), Some(8999), None]
        );
        let tables: i64 = st
            .conn
            .query_row(
                "SELECT count(*) FROM sqlite_master \
                 WHERE name LIKE 'chit_log_arts%' OR name LIKE 'chit_log_shas%'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 0);
    }

    /// Commits index art ids late: once [`super::MERGE_AT`] labels are
    /// above the index, a commit adds theirs; a search finds an art id
    /// below it and above it alike, and a log reopened reads the same.
    #[test]
    fn commits_index_art_ids_in_bulk() {
        use crate::store::{Index, Query};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let mut st = new_store(&path);
        let data = entries(0, 9_000);
        let upto = |st: &super::SqliteStore| super::ARTS.upto(&st.conn).unwrap();
        let mut size = 0u64;
        for chunk in data.chunks(1000) {
            size = commit_labelled(&mut st, size, chunk);
            // Nothing indexed before 8,192 labels; then all of them.
            assert_eq!(
                upto(&st),
                if size >= 8192 { size as i64 } else { 0 },
                "{size}"
            );
        }
        let indexed: i64 = st
            .conn
            .query_row("SELECT count(*) FROM chit_log_arts", [], |r| r.get(0))
            .unwrap();
        assert_eq!(indexed, 4500);
        // The addresses at the next commit (one merge a commit).
        let more: Vec<Vec<u8>> = (0..10).map(|i| format!("more {i}").into_bytes()).collect();
        commit_labelled(&mut st, size, &more);
        let shas: i64 = st
            .conn
            .query_row("SELECT count(*) FROM chit_log_shas", [], |r| r.get(0))
            .unwrap();
        assert_eq!(shas, 9010);
        drop(st);
        let mut st = super::SqliteStore::open(&path).unwrap();
        for i in [0u64, 4096, 8190, 8998] {
            let hits = st
                .search(&Query {
                    art_id: Some(art(i)),
                    limit: 10,
                    ..Query::default()
                })
                .unwrap();
            let found: Vec<u64> = hits.iter().map(|h| h.label.index).collect();
            assert_eq!(found, vec![i], "{}", art(i));
        }
    }

    /// A log folder's index keeps labels in its entries and indexes kinds
    /// and streams late; its searches answer what a labels table with its
    /// indexes answers, on either side of the indexes' bound and across
    /// it, each filter alone and together.
    #[test]
    fn labels_kept_in_entries_are_searched_as_a_labels_table_is() {
        use crate::store::{Index, Label, Query, Store};
        let dir = tempfile::tempdir().unwrap();
        let mut table = new_store(&dir.path().join("t.db"));
        let mut inline =
            created(super::SqliteStore::create_index(&dir.path().join("i.db"), 1024).unwrap());
        let kinds = ["run-receipt", "verification.packet.v1", "lattice"];
        let label = |i: u64| Label {
            index: i,
            kind: kinds[(i % 3) as usize].into(),
            art_id: i.is_multiple_of(5).then(|| art(i)),
            stream_id: (!i.is_multiple_of(4)).then(|| format!("s{}", i % 7)),
        };
        let data = entries(0, 9_500);
        let mut size = 0u64;
        for chunk in data.chunks(700) {
            // One time a batch, as the sequencer gives; every eleventh
            // entry has no label.
            let batch = batch_of(size, chunk, (size / 700) as i64, |i| {
                (i % 11 != 0).then(|| label(i))
            });
            table.commit(&batch).unwrap();
            inline.commit(&batch).unwrap();
            size = batch.new_size();
        }
        let upto = super::ARTS.upto(&inline.conn).unwrap();
        assert_eq!(upto, 8400, "merged after the commit that passed 8,192");
        let merged = |t: &str| -> i64 {
            inline
                .conn
                .query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(
            merged("chit_log_kinds"),
            (0..8400).filter(|i| i % 11 != 0).count() as i64
        );
        assert_eq!(
            merged("chit_log_streams"),
            (0..8400).filter(|i| i % 11 != 0 && i % 4 != 0).count() as i64
        );
        let mut queries = Vec::new();
        for after in [
            None,
            Some(0),
            Some(8000),
            Some(8398),
            Some(8399),
            Some(8400),
            Some(9400),
        ] {
            for limit in [1u32, 7, 1000] {
                let base = Query {
                    after,
                    limit,
                    ..Query::default()
                };
                queries.push(base.clone());
                queries.push(Query {
                    kind: Some("lattice".into()),
                    ..base.clone()
                });
                queries.push(Query {
                    stream_id: Some("s3".into()),
                    ..base.clone()
                });
                queries.push(Query {
                    art_id: Some(art(8395)),
                    ..base.clone()
                });
                queries.push(Query {
                    kind: Some("run-receipt".into()),
                    stream_id: Some("s5".into()),
                    since: Some(2),
                    until: Some(13),
                    ..base.clone()
                });
                queries.push(Query {
                    kind: Some("none-such".into()),
                    ..base.clone()
                });
                queries.push(Query {
                    since: Some(11),
                    until: Some(13),
                    ..base
                });
            }
        }
        let mut found = 0;
        for q in &queries {
            let want = table.search(q).unwrap();
            assert_eq!(inline.search(q).unwrap(), want, "{q:?}");
            found += want.len();
        }
        assert!(found > 10_000, "{found}");
    }

    /// `find` on a late-indexed log, through merges made by this
    /// connection's commits: every logged address is found at its index,
    /// below the index and above it; an address never logged is not.
    #[test]
    fn find_finds_every_logged_address_through_merges() {
        use crate::store::Index;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.db");
        let mut st = new_store(&path);
        let upto = |st: &super::SqliteStore| super::SHAS.upto(&st.conn).unwrap();
        let check = |st: &mut super::SqliteStore, size: u64| {
            let mut asked: Vec<u64> = (0..size).step_by(97).collect();
            asked.extend(size.saturating_sub(40)..size);
            asked.extend(size..size + 20);
            let digests: Vec<chit_log::Hash> = asked.iter().map(|&i| sha(i)).collect();
            let found = st.find(&digests).unwrap();
            for (i, f) in asked.iter().zip(found) {
                let want = (*i < size).then_some(*i);
                assert_eq!(f, want, "entry {i} of {size}");
            }
        };
        let mut size = 0u64;
        // Art ids merge at the commit that reaches 8,192 entries, content
        // addresses at the next (one merge a commit).
        for chunk in entries(0, 10_000).chunks(1_000) {
            size = commit_labelled(&mut st, size, chunk);
            check(&mut st, size);
        }
        let first = upto(&st);
        assert!(first >= 8_192, "{first}");
        // The next merges move this tail's addresses into the index.
        for chunk in entries(10_000, 28_000).chunks(1_000) {
            size = commit_labelled(&mut st, size, chunk);
            check(&mut st, size);
        }
        assert!(upto(&st) >= first + 8_192, "no merge after the first");
        // Another connection agrees.
        drop(st);
        let mut again = super::SqliteStore::open(&path).unwrap();
        check(&mut again, size);
        check(&mut again, size);
    }

    fn passes(c: &Checkpointer) -> u64 {
        c.passes.load(Ordering::Relaxed)
    }

    /// The checkpoint thread runs when a commit wakes it, copies what the
    /// commit wrote into the database file, and sleeps while nothing is
    /// committed.
    #[test]
    fn the_checkpointer_runs_after_commits_and_sleeps_when_idle() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let flags =
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_CREATE;
        let w = super::connect(&path, flags).unwrap();
        w.pragma_update(None, "journal_mode", "WAL").unwrap();
        w.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        w.execute_batch("CREATE TABLE t (x BLOB)").unwrap();
        let c = Checkpointer::start(&path).unwrap();
        let wait_for = |n: u64| {
            let deadline = Instant::now() + Duration::from_secs(10);
            while passes(&c) < n && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            passes(&c)
        };
        // Nothing committed: no pass.
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(passes(&c), 0, "a pass with nothing committed");
        // Each commit is followed by a pass that copies it.
        let in_file = || -> i64 {
            let uri = format!("file:{}?immutable=1", path.display());
            let r = rusqlite::Connection::open_with_flags(
                uri,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
            )
            .unwrap();
            r.query_row("SELECT count(*) FROM t", [], |row| row.get(0))
                .unwrap_or(0)
        };
        for round in 1..=3u64 {
            w.execute("INSERT INTO t VALUES (zeroblob(5000))", [])
                .unwrap();
            c.committed();
            assert!(wait_for(round) >= round, "no pass after commit {round}");
            let deadline = Instant::now() + Duration::from_secs(10);
            while in_file() < round as i64 && Instant::now() < deadline {
                c.committed();
                std::thread::sleep(Duration::from_millis(20));
            }
            assert_eq!(in_file(), round as i64, "commit {round} not copied");
        }
        // Idle again (a wake left by the loop above is taken within two
        // pauses): the thread sleeps.
        std::thread::sleep(Duration::from_millis(500));
        let settled = passes(&c);
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(passes(&c), settled, "passes while nothing was committed");
        // Dropped: one last pass, and the thread ends.
        let before = passes(&c);
        let passes = c.passes.clone();
        drop(c);
        assert_eq!(passes.load(Ordering::Relaxed), before + 1);
    }
}
