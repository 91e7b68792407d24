//! The default store: a log folder. The tree is files a web server can
//! serve (C2SP tlog-tiles: entry bundles, hash tiles, the checkpoint), and
//! a SQLite database beside them keeps what needs one.
//!
//! ```text
//! LOG/
//!   index.db            the head, the checkpoints, the policy, one row an
//!                       entry (its content address, time and search
//!                       label, not its bytes), the packet rows and indexes
//!   lock                held by whoever writes a batch
//!   tail/               the bundle and hash tiles (level 1 and up) still
//!                       growing
//!   public/checkpoint   the latest published checkpoint
//!   public/tile/…       full bundles and tiles, and the right edge's
//!                       partial ones of the published checkpoint
//! ```
//!
//! # How a batch is written
//!
//! Under the folder's lock, and only at the size the batch was made for:
//! the new entries are appended to the growing bundle in `tail/` and the
//! new hashes to the growing tiles of level 1 and up, each file's data
//! synced (the growing level-0 tile is no file: its hashes are the
//! growing bundle's leaf hashes, and the batch that fills it writes it
//! whole); then the database's transaction records the head, the
//! checkpoint and the rows, and is the commit: before it, what the files hold past the
//! committed size is nobody's and is overwritten by the next batch; after
//! it, the batch is durable. A bundle or tile that the batch filled is then
//! renamed into `public/tile/` (written once, never changed; a rename lost
//! to a crash is done again, and until then it is read from `tail/`).
//!
//! Each entry's bytes are so written once. At most once a second (and
//! when the store is closed) the right edge's partial tiles of the new
//! head and the checkpoint are published into `public/`, the checkpoint
//! last, so that a static copy of `public/` is always a whole log.
//!
//! Readers need no lock: what the head covers never changes.

use crate::sqlite::SqliteStore;
use crate::store::{
    Batch, EachIndexRow, Entry, Hit, Index, IndexKind, Meta, NewEntry, PacketRow, Query, Store,
    StoreError, Tree,
};
use chit_log::tiles::{self, Tile, TileKind, TILE_WIDTH};
use chit_log::Hash;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const WIDTH: u64 = TILE_WIDTH as u64;
const HASH: u64 = 32;

/// How often, at most, a writer publishes a new checkpoint and the right
/// edge's partial tiles into `public/`.
pub const PUBLISH_EVERY: Duration = Duration::from_secs(1);

/// The index database's page size: each random key (a packet id) a
/// commit adds dirties a page of its own, written to the WAL and again to
/// the database (docs/decisions/log-folder.md).
pub const INDEX_PAGE: u32 = 1024;

/// The database's file name in a log folder.
pub const INDEX_FILE: &str = "index.db";

/// Whether `dir` is a log folder (it holds an index database).
pub fn is_log_folder(dir: &Path) -> bool {
    dir.is_dir() && dir.join(INDEX_FILE).is_file()
}

/// The log folder whose index database `path` is, if it is one.
pub fn folder_of_index(path: &Path) -> Option<PathBuf> {
    if path.file_name()? != INDEX_FILE {
        return None;
    }
    let dir = match path.parent()? {
        p if p.as_os_str().is_empty() => Path::new("."),
        p => p,
    };
    (dir.join("tail").is_dir() || dir.join("public").is_dir() || dir.join("lock").exists())
        .then(|| dir.to_path_buf())
}

/// A log folder: see the module documentation.
pub struct FolderStore {
    dir: PathBuf,
    tree: TreeFiles,
    index: SqliteStore,
    /// The committed byte length of the growing bundle this store last
    /// wrote: `(bundle, entries in it, bytes)`.
    tail_len: Option<(u64, u64, u64)>,
    /// When this store last published, and whether a commit since waits.
    published: Option<Instant>,
    unpublished: bool,
    /// A long-lived writer's thread that publishes what its last commits
    /// left unpublished (`Store::housekeep_in_background`).
    publisher: Option<Publisher>,
    /// The growing level-0 tile's hashes as far as this store knows them
    /// (committed), `(tile, hashes)`: no file holds them until the tile is
    /// full ([`FolderStore::growing_tile`]).
    edge: Option<(u64, Vec<u8>)>,
}

/// Publishes a log folder's head once a [`PUBLISH_EVERY`] when it is newer
/// than what `public/` holds, on a thread and a connection of its own.
struct Publisher {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Publisher {
    fn start(dir: &Path) -> Result<Publisher, StoreError> {
        let mut store = FolderStore::open(dir)?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("chit-publisher".into())
            .spawn(move || {
                while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::park_timeout(PUBLISH_EVERY);
                    // Failures are tried again a second later; the commits
                    // do not wait on this.
                    let _ = store.publish_now();
                }
            })
            .map_err(|e| StoreError::Write(format!("cannot start the publisher: {e}")))?;
        Ok(Publisher {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// How many items of the tile `kind`/`index` a tree of `size` leaves holds.
fn width_at(kind: TileKind, index: u64, size: u64) -> u64 {
    let count = match kind {
        TileKind::Hashes(level) => size.checked_shr(u32::from(level) * 8).unwrap_or(0),
        TileKind::Entries => size,
    };
    count.saturating_sub(index.saturating_mul(WIDTH)).min(WIDTH)
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Write(format!(
        "cannot {what} {}: {e}; nothing of this batch was acknowledged",
        path.display()
    ))
}

fn read_err(path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Read(format!("cannot read {}: {e}", path.display()))
}

/// The most bytes a tree file holds: a full bundle of the largest entries.
pub const MAX_TREE_FILE: u64 = WIDTH * (2 + u16::MAX as u64);

/// The most bytes a hash tile holds.
const MAX_TILE: u64 = WIDTH * HASH;

/// The most bytes chit reads of a checkpoint file.
pub const MAX_CHECKPOINT: u64 = 1 << 20;

fn damaged(path: &Path, why: impl Into<String>) -> StoreError {
    StoreError::Damaged {
        path: path.display().to_string(),
        why: why.into(),
    }
}

/// Whether an open failed on a link at the path's end (opened with
/// [`no_follow`]).
fn is_link_refused(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// The bytes of the regular file at `path`, or None where there is none.
/// A link there is refused, never followed, and so is anything that is
/// not a regular file (a FIFO, a device) or holds more than `cap` bytes:
/// such a file is not one the log wrote.
pub fn read_file(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, StoreError> {
    read_regular(path, cap, no_follow(OpenOptions::new().read(true)))
}

/// [`read_file`], a link at the path's end followed (a folder of tiles
/// that is not a log folder may be a mirror made of links).
pub fn read_file_following(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, StoreError> {
    read_regular(path, cap, no_wait(OpenOptions::new().read(true)))
}

fn read_regular(
    path: &Path,
    cap: u64,
    options: &OpenOptions,
) -> Result<Option<Vec<u8>>, StoreError> {
    use std::io::Read;
    let f = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if is_link_refused(&e) => {
            return Err(damaged(path, "it is a link; a log folder holds none"))
        }
        Err(e) => return Err(read_err(path, e)),
    };
    let meta = f.metadata().map_err(|e| read_err(path, e))?;
    if !meta.is_file() {
        return Err(damaged(path, "it is not a regular file"));
    }
    let too_big = || damaged(path, format!("it holds more than {cap} bytes"));
    if meta.len() > cap {
        return Err(too_big());
    }
    let mut data = Vec::with_capacity(meta.len() as usize);
    f.take(cap + 1)
        .read_to_end(&mut data)
        .map_err(|e| read_err(path, e))?;
    if data.len() as u64 > cap {
        return Err(too_big());
    }
    Ok(Some(data))
}

/// The most bytes a tree file of this kind holds.
fn cap_of(kind: TileKind) -> u64 {
    match kind {
        TileKind::Entries => MAX_TREE_FILE,
        TileKind::Hashes(_) => MAX_TILE,
    }
}

/// The first `count` entries of a bundle (what follows them, in a growing
/// bundle, is a batch that never committed), or where `to_end`, as many as
/// it holds if fewer, and their length.
fn bundle_prefix(
    data: &[u8],
    count: u64,
    to_end: bool,
) -> Result<(Vec<&[u8]>, usize), &'static str> {
    let mut out = Vec::with_capacity(count.min(WIDTH) as usize);
    let mut at = 0usize;
    while (out.len() as u64) < count && !(to_end && at == data.len()) {
        let Some(len) = data.get(at..at + 2) else {
            return Err("a truncated length prefix");
        };
        let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        let Some(e) = data.get(at + 2..at + 2 + len) else {
            return Err("a truncated entry");
        };
        out.push(e);
        at += 2 + len;
    }
    Ok((out, at))
}

/// Opens without following a link at the path's end: a link planted in a
/// log folder is refused (ELOOP), never written through. Nor does the open
/// wait on a FIFO planted there (it is then refused as no regular file).
fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    unix_flags(
        options,
        rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK,
    );
    options
}

/// Opens without waiting on a FIFO (refused then as no regular file).
fn no_wait(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    unix_flags(options, rustix::fs::OFlags::NONBLOCK);
    options
}

#[cfg(unix)]
fn unix_flags(options: &mut OpenOptions, flags: rustix::fs::OFlags) {
    use std::os::unix::fs::OpenOptionsExt;
    options.custom_flags(flags.bits() as i32);
}

/// Makes the folder `dir` inside the log folder `root` where it is
/// missing, syncing each new folder's parent so that it outlives a power
/// cut. Every folder on the way below `root` must be a folder: a link
/// planted there is refused, never followed.
fn make_dirs(root: &Path, dir: &Path) -> std::io::Result<()> {
    let rel = dir.strip_prefix(root).map_err(|_| {
        std::io::Error::other(format!("{} is outside the log folder", dir.display()))
    })?;
    let mut at = root.to_path_buf();
    for part in rel.components() {
        let parent = at.clone();
        at.push(part);
        let mut made = false;
        loop {
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.is_dir() => break,
                Ok(_) => {
                    return Err(std::io::Error::other(format!(
                        "{} is not a folder (a link or a file in its place); a log folder holds \
                         none",
                        at.display()
                    )))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !made => {
                    match std::fs::create_dir(&at) {
                        Ok(()) => sync_dir(&parent)?,
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                        Err(e) => return Err(e),
                    }
                    made = true;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Syncs a folder, so that a rename or a new file in it is durable.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Writes `data` to `path` (inside the log folder `root`) through a new
/// file renamed over it, synced.
fn write_atomic(root: &Path, path: &Path, data: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    make_dirs(root, dir)?;
    let mut tmp = tempfile::Builder::new().prefix(".chit-").tempfile_in(dir)?;
    tmp.write_all(data)?;
    tmp.as_file().sync_data()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir)
}

/// The tree's files in a log folder: what any reader may read without a
/// lock (what the head covers never changes).
struct TreeFiles {
    dir: PathBuf,
}

impl TreeFiles {
    /// Where a full tile or bundle is published.
    fn public_path(&self, kind: TileKind, index: u64) -> PathBuf {
        let t = Tile {
            kind,
            index,
            width: TILE_WIDTH,
        };
        self.dir.join("public").join(t.path())
    }

    /// Where a tile or bundle grows until it is full.
    fn tail_path(&self, kind: TileKind, index: u64) -> PathBuf {
        let name = match kind {
            TileKind::Hashes(level) => format!("{level}-{index}"),
            TileKind::Entries => format!("entries-{index}"),
        };
        self.dir.join("tail").join(name)
    }

    /// A tile's or bundle's bytes: published when full, else still in
    /// `tail/` (looked for in `public/` again: it may have been renamed
    /// there in between). A published one is whole: a hash tile of
    /// exactly 256 hashes (a bundle is parsed whole by its reader).
    fn read_tree_file(&self, kind: TileKind, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.find_tree_file(kind, index)?.map(|(_, d)| d))
    }

    /// Where [`TreeFiles::read_tree_file`] found the file, and its bytes.
    fn find_tree_file(
        &self,
        kind: TileKind,
        index: u64,
    ) -> Result<Option<(PathBuf, Vec<u8>)>, StoreError> {
        let cap = cap_of(kind);
        let public = self.public_path(kind, index);
        let whole = |d: Vec<u8>| match kind {
            TileKind::Hashes(_) if d.len() as u64 != MAX_TILE => Err(damaged(
                &public,
                format!("a full hash tile of {} bytes, not {MAX_TILE}", d.len()),
            )),
            _ => Ok(Some((public.clone(), d))),
        };
        if let Some(d) = read_file(&public, cap)? {
            return whole(d);
        }
        let tail = self.tail_path(kind, index);
        if let Some(d) = read_file(&tail, cap)? {
            return Ok(Some((tail, d)));
        }
        match read_file(&public, cap)? {
            Some(d) => whole(d),
            None => Ok(None),
        }
    }

    /// The entries of bundle `n` that a tree of `size` leaves holds: a
    /// published bundle whole (256 entries, nothing after them), a growing
    /// one up to `size` or to its end, whichever comes first (the rows say
    /// which entries there must be).
    fn bundle_entries(&self, n: u64, size: u64) -> Result<Vec<Vec<u8>>, StoreError> {
        self.with_bundle(n, size, |entries| {
            entries.into_iter().map(<[u8]>::to_vec).collect()
        })
    }

    /// Entry `index` of a tree of `size` leaves, out of its bundle (the
    /// others not copied); a bundle that lacks it is named.
    fn entry_at(&self, index: u64, size: u64) -> Result<Vec<u8>, StoreError> {
        let k = (index % WIDTH) as usize;
        let found = self.with_bundle(index / WIDTH, size, |entries| {
            let held = entries.len();
            entries.get(k).map(|e| e.to_vec()).ok_or(held)
        })?;
        found.map_err(|held| self.lacks(index, held))
    }

    /// `f` of the entries of bundle `n` that a tree of `size` leaves holds
    /// (as [`TreeFiles::bundle_entries`] reads them).
    fn with_bundle<T>(
        &self,
        n: u64,
        size: u64,
        f: impl FnOnce(Vec<&[u8]>) -> T,
    ) -> Result<T, StoreError> {
        let count = width_at(TileKind::Entries, n, size);
        if count == 0 {
            return Ok(f(Vec::new()));
        }
        let Some((path, data)) = self.find_tree_file(TileKind::Entries, n)? else {
            return Ok(f(Vec::new()));
        };
        let entries = if path.starts_with(self.dir.join("public")) {
            tiles::parse_entry_bundle(&data, TILE_WIDTH)
                .map_err(|e| damaged(&path, e.to_string()))?
        } else {
            bundle_prefix(&data, count, true)
                .map_err(|why| damaged(&path, why))?
                .0
        };
        Ok(f(entries))
    }

    /// Entry `index` out of its bundle's entries; a row whose entry the
    /// bundle does not hold names the bundle.
    fn take_entry(&self, entries: &mut [Vec<u8>], index: u64) -> Result<Vec<u8>, StoreError> {
        let held = entries.len();
        match entries.get_mut((index % WIDTH) as usize) {
            Some(e) => Ok(std::mem::take(e)),
            None => Err(self.lacks(index, held)),
        }
    }

    /// A bundle that holds `held` entries, not entry `index`, named.
    fn lacks(&self, index: u64, held: usize) -> StoreError {
        StoreError::Damaged {
            path: self
                .public_path(TileKind::Entries, index / WIDTH)
                .display()
                .to_string(),
            why: format!("it holds {held} entries; entry {index} is not among them"),
        }
    }
}

impl FolderStore {
    fn with_index(dir: &Path, index: SqliteStore) -> FolderStore {
        FolderStore {
            dir: dir.to_path_buf(),
            tree: TreeFiles {
                dir: dir.to_path_buf(),
            },
            index,
            tail_len: None,
            published: None,
            unpublished: false,
            publisher: None,
            edge: None,
        }
    }

    /// Opens an existing log folder.
    pub fn open(dir: &Path) -> Result<FolderStore, StoreError> {
        if !is_log_folder(dir) {
            return Err(StoreError::NotALog(dir.display().to_string()));
        }
        let index = SqliteStore::open(&dir.join(INDEX_FILE))?;
        Ok(FolderStore::with_index(dir, index))
    }

    /// Makes a new log folder at `dir` (a new or an empty folder; chit
    /// never writes into one holding anything else).
    pub fn create_dir(dir: &Path) -> Result<FolderStore, StoreError> {
        match std::fs::read_dir(dir) {
            Ok(mut it) => {
                if it.next().is_some() {
                    return Err(if is_log_folder(dir) {
                        StoreError::Exists(dir.display().to_string())
                    } else {
                        StoreError::Write(format!(
                            "cannot make a log in {}: the folder is not empty; give a new or an \
                             empty folder",
                            dir.display()
                        ))
                    });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(dir).map_err(|e| io_err("create", dir, e))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                return Err(StoreError::Exists(dir.display().to_string()));
            }
            Err(e) => return Err(io_err("create", dir, e)),
        }
        for sub in ["tail", "public"] {
            let p = dir.join(sub);
            std::fs::create_dir_all(&p).map_err(|e| io_err("create", &p, e))?;
        }
        File::create(dir.join("lock")).map_err(|e| io_err("create", &dir.join("lock"), e))?;
        let index = SqliteStore::create_index(&dir.join(INDEX_FILE), INDEX_PAGE)?;
        Ok(FolderStore::with_index(dir, index))
    }

    /// Removes what [`FolderStore::create_dir`] made (it made the folder
    /// or found it empty, so all that is in it is its own), once its store
    /// is dropped.
    pub fn remove_created(dir: &Path) {
        for name in ["tail", "public"] {
            let _ = std::fs::remove_dir_all(dir.join(name));
        }
        let _ = std::fs::remove_file(dir.join("lock"));
        SqliteStore::remove_created(&dir.join(INDEX_FILE));
        let _ = std::fs::remove_dir(dir);
    }

    fn size(&mut self) -> Result<u64, StoreError> {
        self.index.head().map(|(s, _)| s)
    }

    /// The committed byte length of the growing bundle `n`, which holds
    /// `count` entries.
    fn tail_bytes(&mut self, n: u64, count: u64) -> Result<u64, StoreError> {
        if count == 0 {
            return Ok(0);
        }
        if let Some((b, c, bytes)) = self.tail_len {
            if (b, c) == (n, count) {
                return Ok(bytes);
            }
        }
        let path = self.tree.tail_path(TileKind::Entries, n);
        let data = read_file(&path, MAX_TREE_FILE)?.ok_or_else(|| {
            damaged(
                &path,
                format!("the growing bundle of {count} entries is missing"),
            )
        })?;
        let (_, bytes) = bundle_prefix(&data, count, false).map_err(|why| damaged(&path, why))?;
        Ok(bytes as u64)
    }

    /// Writes `data` at `offset` of a growing file, cuts what followed (a
    /// batch that never committed) and syncs it, and the `tail/` folder
    /// where the file is new. A file shorter than `offset` (what it held
    /// lost) is refused, unless `whole` is given: the file's whole bytes
    /// (`data` its last part), written again from the start.
    fn write_tail(
        path: &Path,
        offset: u64,
        data: &[u8],
        whole: Option<&[u8]>,
    ) -> Result<(), StoreError> {
        let mut f = no_follow(OpenOptions::new().write(true).create(true).truncate(false))
            .open(path)
            .map_err(|e| io_err("open", path, e))?;
        let fail = |e| io_err("write", path, e);
        let meta = f.metadata().map_err(fail)?;
        if !meta.is_file() {
            return Err(damaged(path, "it is not a regular file"));
        }
        // Empty: new (or never written), its name synced with its bytes.
        let new = meta.len() == 0;
        let (offset, data) = match whole {
            _ if meta.len() >= offset => (offset, data),
            Some(whole) => (0, whole),
            None => {
                return Err(damaged(
                    path,
                    format!(
                        "it holds {} bytes, fewer than the {offset} its entries need; audit \
                         the log (chit log audit)",
                        meta.len()
                    ),
                ))
            }
        };
        faults::step("tail-write", || Ok(())).map_err(fail)?;
        f.seek(SeekFrom::Start(offset))
            .and_then(|_| f.write_all(data))
            .and_then(|_| f.set_len(offset + data.len() as u64))
            .map_err(fail)?;
        // Lost to a power cut before the sync: the new bytes torn.
        faults::step("tail-sync", || {
            f.set_len(offset + data.len() as u64 / 2)?;
            f.seek(SeekFrom::End(0))?;
            f.write_all(b"\xff\xfftorn")
        })
        .map_err(fail)?;
        f.sync_data().map_err(fail)?;
        if new {
            let dir = path.parent().unwrap_or(Path::new("."));
            sync_dir(dir).map_err(|e| io_err("sync", dir, e))?;
        }
        Ok(())
    }

    /// Moves a tile or bundle a commit filled from `tail/` into
    /// `public/`; a rename lost to a crash is done again later (and until
    /// then the file is read from `tail/`). Only a whole one moves: a
    /// hash tile of 256 hashes, a bundle of 256 entries and nothing after.
    fn settle(&self, kind: TileKind, index: u64) -> std::io::Result<()> {
        let from = self.tree.tail_path(kind, index);
        let data = read_file(&from, cap_of(kind)).map_err(std::io::Error::other)?;
        let whole = match (&data, kind) {
            (None, _) => return Ok(()),
            (Some(d), TileKind::Hashes(_)) => d.len() as u64 == MAX_TILE,
            (Some(d), TileKind::Entries) => tiles::parse_entry_bundle(d, TILE_WIDTH).is_ok(),
        };
        if !whole {
            return Err(std::io::Error::other(format!(
                "{} is not a whole {}; it stays in tail/",
                from.display(),
                if kind == TileKind::Entries {
                    "bundle"
                } else {
                    "tile"
                }
            )));
        }
        let to = self.tree.public_path(kind, index);
        let dir = to.parent().unwrap_or(Path::new("."));
        make_dirs(&self.dir, dir)?;
        faults::step("settle", || Ok(()))?;
        std::fs::rename(&from, &to)?;
        // Lost to a power cut before the folders' sync: the rename undone.
        faults::step("settle-sync", || std::fs::rename(&to, &from))?;
        sync_dir(dir)?;
        sync_dir(&self.dir.join("tail"))
    }

    /// Settles every full tile or bundle still in `tail/` (after a crash
    /// between a commit and its renames).
    fn settle_all(&mut self, size: u64) {
        let Ok(names) = std::fs::read_dir(self.dir.join("tail")) else {
            return;
        };
        for name in names.flatten() {
            let name = name.file_name();
            let Some((kind, index)) = name.to_str().and_then(|n| n.split_once('-')) else {
                continue;
            };
            let kind = match kind {
                "entries" => TileKind::Entries,
                l => match l.parse() {
                    Ok(l) => TileKind::Hashes(l),
                    Err(_) => continue,
                },
            };
            let Ok(index) = index.parse() else { continue };
            if width_at(kind, index, size) == WIDTH {
                let _ = self.settle(kind, index);
            }
        }
    }

    /// That every full tile and bundle of a tree of `size`, from those
    /// full at `since` on, is in `public/`.
    fn check_settled(&self, since: u64, size: u64) -> Result<(), StoreError> {
        let mut kinds = vec![TileKind::Entries];
        let mut level = 0u8;
        while size.checked_shr(u32::from(level) * 8).unwrap_or(0) >= WIDTH {
            kinds.push(TileKind::Hashes(level));
            level += 1;
        }
        for kind in kinds {
            let full = |s: u64| match kind {
                TileKind::Entries => s / WIDTH,
                TileKind::Hashes(l) => s.checked_shr(u32::from(l) * 8).unwrap_or(0) / WIDTH,
            };
            for index in full(since.min(size))..full(size) {
                let path = self.tree.public_path(kind, index);
                match std::fs::symlink_metadata(&path) {
                    Ok(m) if m.is_file() => {}
                    Ok(_) => return Err(damaged(&path, "it is not a regular file")),
                    Err(e) => {
                        return Err(StoreError::Write(format!(
                            "{} is not published yet ({e}); the checkpoint waits for it",
                            path.display()
                        )))
                    }
                }
            }
        }
        Ok(())
    }

    /// Publishes the head into `public/` (its right edge's partial tiles,
    /// then the checkpoint), when it is newer than what is there: only
    /// once every full tile and bundle under it is published, and only
    /// from tail files that hold what the head covers. Called with the
    /// folder's lock held.
    fn publish(&mut self) -> Result<(), StoreError> {
        let (size, note) = self.index.head()?;
        let public = self.dir.join("public");
        let current = match read_file(&public.join("checkpoint"), MAX_CHECKPOINT) {
            Ok(c) => c,
            // A checkpoint that is no file of the log's is replaced.
            Err(StoreError::Damaged { .. }) => None,
            Err(e) => return Err(e),
        };
        // Published already, byte for byte; anything else there (an older
        // checkpoint, or a file changed behind the log's back) is replaced:
        // under the lock, the head only grows.
        if current.as_deref() == Some(&note[..]) {
            self.unpublished = false;
            return Ok(());
        }
        let since = current
            .as_deref()
            .and_then(|c| chit_log::checkpoint::Checkpoint::from_note(c).ok())
            .map_or(0, |c| c.size);
        self.settle_all(size);
        self.check_settled(since, size)?;
        let mut partial: Vec<Tile> = tiles::right_edge(size);
        if size % WIDTH > 0 {
            partial.push(Tile {
                kind: TileKind::Entries,
                index: size / WIDTH,
                width: (size % WIDTH) as u16,
            });
        }
        let mut written = Vec::with_capacity(partial.len());
        for t in partial {
            let count = usize::from(t.width);
            let data = match t.kind {
                TileKind::Entries => {
                    let path = self.tree.tail_path(t.kind, t.index);
                    let entries = self.tree.bundle_entries(t.index, size)?;
                    if entries.len() != count {
                        return Err(damaged(
                            &path,
                            format!("it holds {} of its {count} entries", entries.len()),
                        ));
                    }
                    tiles::encode_entry_bundle(&entries)
                        .map_err(|e| damaged(&path, e.to_string()))?
                }
                TileKind::Hashes(0) => self.growing_tile(t.index, size)?,
                TileKind::Hashes(_) => {
                    let path = self.tree.tail_path(t.kind, t.index);
                    let mut d = self
                        .tree
                        .read_tree_file(t.kind, t.index)?
                        .ok_or_else(|| damaged(&path, "it is missing"))?;
                    if d.len() < count * HASH as usize {
                        return Err(damaged(
                            &path,
                            format!("it holds {} bytes of its {count} hashes", d.len()),
                        ));
                    }
                    d.truncate(count * HASH as usize);
                    d
                }
            };
            let path = public.join(t.path());
            faults::step("publish", || Ok(()))
                .and_then(|_| write_atomic(&self.dir, &path, &data))
                .map_err(|e| io_err("publish", &path, e))?;
            written.push((path, t.width));
        }
        let path = public.join("checkpoint");
        faults::step("publish-checkpoint", || Ok(()))
            .and_then(|_| write_atomic(&self.dir, &path, &note))
            .map_err(|e| io_err("publish", &path, e))?;
        self.published = Some(Instant::now());
        self.unpublished = false;
        // The narrower partials of these tiles are no longer needed, now
        // that the checkpoint that needed them is replaced.
        for (path, width) in written {
            let Some(dir) = path.parent() else { continue };
            let Ok(names) = std::fs::read_dir(dir) else {
                continue;
            };
            for n in names.flatten() {
                let w: Option<u16> = n.file_name().to_str().and_then(|w| w.parse().ok());
                if w.is_some_and(|w| w < width) {
                    let _ = std::fs::remove_file(n.path());
                }
            }
        }
        Ok(())
    }

    /// Takes the folder's lock (released when the file is dropped).
    fn lock(&self) -> Result<File, StoreError> {
        let path = self.dir.join("lock");
        let f = no_follow(OpenOptions::new().write(true))
            .open(&path)
            .map_err(|e| io_err("open", &path, e))?;
        #[cfg(unix)]
        rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| io_err("lock", &path, e.into()))?;
        // The growing files are written only into the log's own `tail/`
        // (`public/`'s folders are checked where each file is written).
        let tail = self.dir.join("tail");
        make_dirs(&self.dir, &tail).map_err(|e| io_err("write into", &tail, e))?;
        Ok(f)
    }

    /// Publishes what this store committed and has not published yet.
    pub fn publish_now(&mut self) -> Result<(), StoreError> {
        let _lock = self.lock()?;
        self.publish()
    }
}

impl Drop for FolderStore {
    fn drop(&mut self) {
        if self.unpublished {
            let _ = self.publish_now();
        }
    }
}

impl Tree for FolderStore {
    fn location(&self) -> String {
        self.dir.display().to_string()
    }

    fn head(&mut self) -> Result<(u64, Vec<u8>), StoreError> {
        self.index.head()
    }

    fn checkpoint_at(&mut self, size: u64) -> Result<Option<Vec<u8>>, StoreError> {
        self.index.checkpoint_at(size)
    }

    fn entry(&mut self, index: u64) -> Result<Option<Entry>, StoreError> {
        let Some(row) = self.index.entry(index)? else {
            return Ok(None);
        };
        let size = self.size()?;
        let data = if index < size {
            self.tree.entry_at(index, size)?
        } else {
            Vec::new()
        };
        Ok(Some(Entry { data, ..row }))
    }

    fn scan(
        &mut self,
        start: u64,
        end: u64,
        each: &mut dyn FnMut(Entry) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let size = self.size()?;
        let (tree, index) = (&self.tree, &mut self.index);
        let mut bundle: Option<(u64, Vec<Vec<u8>>)> = None;
        index.scan(start, end, &mut |row| {
            let data = if row.index < size {
                let n = row.index / WIDTH;
                let entries = match &mut bundle {
                    Some((b, e)) if *b == n => e,
                    _ => &mut bundle.insert((n, tree.bundle_entries(n, size)?)).1,
                };
                tree.take_entry(entries, row.index)?
            } else {
                Vec::new()
            };
            each(Entry { data, ..row })
        })
    }

    fn tile(&mut self, level: u8, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let size = self.size()?;
        Ok(self.tiles_at(size, &[(level, index)])?.pop().flatten())
    }

    fn tiles(&mut self, keys: &[(u8, u64)]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let size = self.size()?;
        self.tiles_at(size, keys)
    }
}

impl Index for FolderStore {
    fn lookup(
        &mut self,
        digests: &[Hash],
        at: &[(String, i64)],
        named: &[(String, String)],
    ) -> Result<(Vec<Option<u64>>, Vec<PacketRow>), StoreError> {
        self.index.lookup(digests, at, named)
    }

    fn stream(&mut self, stream_id: &str, limit: u32) -> Result<Vec<PacketRow>, StoreError> {
        self.index.stream(stream_id, limit)
    }

    fn packets(
        &mut self,
        each: &mut dyn FnMut(PacketRow) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.index.packets(each)
    }

    fn search(&mut self, q: &Query) -> Result<Vec<Hit>, StoreError> {
        self.index.search(q)
    }

    fn index_rows(
        &mut self,
        kind: IndexKind,
        each: &mut EachIndexRow,
    ) -> Result<Option<u64>, StoreError> {
        self.index.index_rows(kind, each)
    }
}

impl Store for FolderStore {
    fn create(&mut self, meta: &Meta, checkpoint: &[u8]) -> Result<(), StoreError> {
        self.index.create(meta, checkpoint)?;
        self.publish_now()
    }

    fn meta(&mut self) -> Result<Meta, StoreError> {
        self.index.meta()
    }

    fn bind_policy(&mut self, binding: &str) -> Result<bool, StoreError> {
        self.index.bind_policy(binding)
    }

    fn changed_elsewhere(&mut self) -> Result<bool, StoreError> {
        self.index.changed_elsewhere()
    }

    fn checkpoints(&mut self) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.index.checkpoints()
    }

    fn replace_checkpoint(
        &mut self,
        size: u64,
        old: &[u8],
        note: &[u8],
    ) -> Result<bool, StoreError> {
        self.index.replace_checkpoint(size, old, note)
    }

    fn commit(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
        let _lock = self.lock()?;
        let found = self.size()?;
        if found != batch.old_size {
            return Err(StoreError::Conflict {
                expected: batch.old_size,
                found,
            });
        }
        if found == 0 || self.published.is_none() {
            // The first commit this store makes: what a crash left in
            // `tail/` is settled first.
            self.settle_all(found);
        }
        let old = batch.old_size;
        let new = batch.new_size();
        // The entries, bundle by bundle.
        let mut grown = None;
        let mut at = 0usize;
        while at < batch.entries.len() {
            let n = batch.entries[at].index / WIDTH;
            let run = batch.entries[at..]
                .iter()
                .take_while(|e| e.index / WIDTH == n)
                .count();
            let mut data = Vec::new();
            for e in &batch.entries[at..at + run] {
                let len = u16::try_from(e.data.len()).map_err(|_| {
                    StoreError::Write(format!(
                        "entry {} has {} bytes, more than an entry bundle carries",
                        e.index,
                        e.data.len()
                    ))
                })?;
                data.extend_from_slice(&len.to_be_bytes());
                data.extend_from_slice(e.data);
            }
            let count = width_at(TileKind::Entries, n, old);
            let offset = self.tail_bytes(n, count)?;
            let path = self.tree.tail_path(TileKind::Entries, n);
            Self::write_tail(&path, offset, &data, None)?;
            // Kept only once committed: bytes of a batch that fails are
            // nobody's, and another writer may commit other bytes there.
            grown = Some((n, count + run as u64, offset + data.len() as u64));
            at += run;
        }
        // The new hashes of each tile the batch touched. A level-0 tile is
        // written once, whole, by the batch that fills it: until then its
        // hashes are its bundle's (`growing_tile`), which is synced.
        for (level, index, data) in &batch.tiles {
            let kind = TileKind::Hashes(*level);
            if *level == 0 {
                if width_at(kind, *index, new) == WIDTH {
                    Self::write_tail(&self.tree.tail_path(kind, *index), 0, data, None)?;
                }
                continue;
            }
            let have = (width_at(kind, *index, old) * HASH) as usize;
            let Some(new_part) = data.get(have..) else {
                return Err(StoreError::Write(format!(
                    "tile {level}/{index}: {} bytes given, {have} already there",
                    data.len()
                )));
            };
            // The batch carries the whole tile: a tile file that lost
            // what it held is written again whole.
            Self::write_tail(
                &self.tree.tail_path(kind, *index),
                have as u64,
                new_part,
                Some(data),
            )?;
        }
        // The commit: the database's transaction.
        let rows: Vec<NewEntry<'_>> = batch
            .entries
            .iter()
            .map(|e| NewEntry { data: &[], ..*e })
            .collect();
        let recorded = Batch {
            old_size: batch.old_size,
            entries: rows,
            tiles: Vec::new(),
            packets: batch.packets.clone(),
            labels: batch.labels.clone(),
            checkpoint: batch.checkpoint.clone(),
        };
        faults::step("index-commit", || Ok(())).map_err(|e| io_err("commit", &self.dir, e))?;
        self.index.commit(&recorded)?;
        if grown.is_some() {
            self.tail_len = grown;
        }
        for (level, index, data) in &batch.tiles {
            if *level == 0 && width_at(TileKind::Hashes(0), *index, new) < WIDTH {
                self.edge = Some((*index, data.clone()));
            }
        }
        // What the batch filled, published for good.
        for n in old / WIDTH..new / WIDTH {
            let _ = self.settle(TileKind::Entries, n);
        }
        for (level, index, _) in &batch.tiles {
            let kind = TileKind::Hashes(*level);
            if width_at(kind, *index, new) == WIDTH {
                let _ = self.settle(kind, *index);
            }
        }
        self.unpublished = true;
        if self.published.is_none_or(|t| t.elapsed() >= PUBLISH_EVERY) {
            // The batch is durable whatever this says: a checkpoint not
            // published now is published by a later commit.
            let _ = self.publish();
        }
        Ok(())
    }

    fn lease(&mut self, wait: Duration) -> Result<(), StoreError> {
        self.index.lease(wait)
    }

    fn release(&mut self) -> Result<(), StoreError> {
        self.index.release()
    }

    fn housekeep_in_background(&mut self) -> Result<(), StoreError> {
        if self.publisher.is_none() && self.write_blocked().is_none() {
            self.publisher = Some(Publisher::start(&self.dir)?);
        }
        self.index.housekeep_in_background()
    }

    fn write_blocked(&mut self) -> Option<String> {
        if let Err(e) = OpenOptions::new().write(true).open(self.dir.join("lock")) {
            return Some(format!(
                "{} takes no writes from this server: {e}",
                self.dir.display()
            ));
        }
        self.index.write_blocked()
    }
}

impl FolderStore {
    /// The hashes of level-0 tile `index` in a tree of `size` leaves while
    /// it grows: the leaf hashes of its bundle's entries. They are kept,
    /// so each entry is hashed at most once a store (its own commits give
    /// theirs), and a power cut that loses them loses nothing.
    fn growing_tile(&mut self, index: u64, size: u64) -> Result<Vec<u8>, StoreError> {
        let width = (width_at(TileKind::Hashes(0), index, size) * HASH) as usize;
        let mut known = match self.edge.take() {
            Some((i, known)) if i == index => known,
            _ => Vec::new(),
        };
        if known.len() < width {
            let entries = self.tree.bundle_entries(index, size)?;
            let from = known.len() / HASH as usize;
            let to = width / HASH as usize;
            let Some(new) = entries.get(from..to) else {
                return Err(self
                    .tree
                    .lacks(index * WIDTH + entries.len() as u64, entries.len()));
            };
            for e in new {
                known.extend_from_slice(&chit_log::tree::leaf_hash(e));
            }
        }
        let out = known[..width].to_vec();
        self.edge = Some((index, known));
        Ok(out)
    }

    /// The stored hashes of tiles, cut to what a tree of `size` holds (a
    /// growing level-0 tile: its bundle's, [`FolderStore::growing_tile`]).
    fn tiles_at(
        &mut self,
        size: u64,
        keys: &[(u8, u64)],
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        keys.iter()
            .map(|&(level, index)| -> Result<Option<Vec<u8>>, StoreError> {
                let kind = TileKind::Hashes(level);
                let width = width_at(kind, index, size);
                if width == 0 {
                    return Ok(None);
                }
                if level == 0 && width < WIDTH {
                    return self.growing_tile(index, size).map(Some);
                }
                let mut data = match self.tree.read_tree_file(kind, index)? {
                    Some(d) => d,
                    None => return Ok(None),
                };
                data.truncate((width * HASH) as usize);
                Ok(Some(data))
            })
            .collect()
    }
}

/// Fault injection at each write, sync and rename step of a commit, for
/// the tests (the `failpoints` feature; without it, every step goes on).
#[cfg(feature = "failpoints")]
pub mod faults {
    use std::sync::Mutex;

    /// What an armed step does when it is reached.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Fault {
        /// The step fails (a full disk, an I/O error).
        Fail,
        /// The power is cut there: what was not synced is lost or torn
        /// (the step's own damage), and the step fails (a test then drops
        /// the store, as the machine stopped, and opens it again).
        PowerCut,
    }

    static ARMED: Mutex<Option<(String, u32, Fault)>> = Mutex::new(None);
    static FIRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    /// Makes the `nth` time `step` is reached (from 1) fault so.
    pub fn arm(step: &str, nth: u32, fault: Fault) {
        *ARMED.lock().unwrap_or_else(|e| e.into_inner()) = Some((step.to_string(), nth, fault));
        FIRED.store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the fault last armed has happened (it is disarmed then).
    pub fn fired() -> bool {
        FIRED.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn disarm() {
        *ARMED.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Reached `step`: an error where it is armed to fault now, after
    /// `damage` where the fault is a power cut.
    pub(crate) fn step(
        step: &str,
        damage: impl FnOnce() -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut armed = ARMED.lock().unwrap_or_else(|e| e.into_inner());
        let fault = match armed.as_mut() {
            Some((s, n, fault)) if s == step => {
                *n -= 1;
                if *n > 0 {
                    return Ok(());
                }
                *fault
            }
            _ => return Ok(()),
        };
        *armed = None;
        FIRED.store(true, std::sync::atomic::Ordering::SeqCst);
        if fault == Fault::PowerCut {
            damage()?;
        }
        Err(std::io::Error::other(format!("a fault injected at {step}")))
    }
}

#[cfg(not(feature = "failpoints"))]
mod faults {
    #[inline(always)]
    pub(crate) fn step(
        _step: &str,
        _damage: impl FnOnce() -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        Ok(())
    }
}
