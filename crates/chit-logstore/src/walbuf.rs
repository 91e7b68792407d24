//! A SQLite VFS that gathers a connection's writes to its write-ahead log
//! into one `pwrite` a commit.
//!
//! SQLite writes each WAL frame with two system calls (its 24-byte header,
//! then the page), so a batch that dirties 200 pages costs 400 `pwrite`s
//! before its `fsync`. This VFS wraps the platform's default one and
//! changes one thing, for WAL files only: a write that continues the
//! pending bytes is appended to a buffer in memory, and the buffer is
//! written with one call before anything else touches the file (a read, a
//! sync, a truncate, its size, a file control, a write elsewhere, closing
//! it) or when it reaches [`LIMIT`]. Through this handle the file reads as
//! if every write had been made at once; what SQLite syncs is what it
//! wrote.
//!
//! Other connections read the WAL through handles of their own, and only
//! the frames the WAL index says are committed. SQLite publishes a commit
//! in the index after it syncs the WAL when `synchronous` is `FULL` (or
//! `EXTRA`), and the sync writes the buffer first: so no one reads a frame
//! that is still in memory. Every connection chit opens with this VFS is
//! set to `synchronous=FULL` before it writes ([`crate::sqlite`]'s `tune`);
//! with `NORMAL` (no sync at commit) this VFS would not be safe, and it is
//! not used so. A process that dies with bytes in the buffer had not
//! synced them: that batch was not committed, as if it had died before
//! writing.

use rusqlite::ffi;
use std::ffi::{c_int, c_void, CStr};
use std::sync::OnceLock;

/// The VFS's registered name.
pub const NAME: &CStr = c"chit-walbuf";

/// The most bytes a WAL handle holds before it writes them anyway.
pub const LIMIT: usize = 4 << 20;

/// The most bytes handed to the wrapped VFS in one write: SQLite's unix
/// VFS writes at most 128 KiB - 1 a call (it masks the length to 17 bits),
/// so the buffer goes out in whole pages under that.
const CHUNK: usize = 0x1f000;

/// Registers the VFS once (not as the default) and returns its name, or
/// `None` when SQLite has no default VFS to wrap (then connections open on
/// the default, unchanged).
pub fn name() -> Option<&'static str> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        // Before SQLite's first call (the VFS lookup starts it).
        crate::pcache::install();
        unsafe { register() }
    });
    ok.then(|| NAME.to_str().expect("ASCII name"))
}

/// Opens a connection on this VFS (SQLite's own where it could not be
/// registered) the only way it is safe: `synchronous=FULL`, so a commit is
/// published only after its WAL is synced (and so written), and
/// `cache_spill=OFF`, so a transaction writes WAL frames only as it
/// commits. A spill would write frames before the commit; were the
/// transaction then rolled back, SQLite forgets them without touching the
/// file, and this handle would later write them over frames another
/// writer has committed since (a reviewer's test showed the corruption).
/// The cost: a transaction holds all its dirty pages in memory.
pub fn connect(
    path: &std::path::Path,
    flags: rusqlite::OpenFlags,
) -> rusqlite::Result<rusqlite::Connection> {
    let conn = match name() {
        Some(vfs) => rusqlite::Connection::open_with_flags_and_vfs(path, flags, vfs)?,
        None => rusqlite::Connection::open_with_flags(path, flags)?,
    };
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "cache_spill", false)?;
    Ok(conn)
}

unsafe fn register() -> bool {
    let inner = ffi::sqlite3_vfs_find(std::ptr::null());
    if inner.is_null() {
        return false;
    }
    let mut vfs: ffi::sqlite3_vfs = std::ptr::read(inner);
    vfs.szOsFile = (HEADER + (*inner).szOsFile as usize) as c_int;
    vfs.pNext = std::ptr::null_mut();
    vfs.zName = NAME.as_ptr();
    vfs.pAppData = inner.cast();
    vfs.xOpen = Some(open);
    // Registered for the life of the process, as SQLite requires.
    let vfs = Box::leak(Box::new(vfs));
    ffi::sqlite3_vfs_register(vfs, 0) == ffi::SQLITE_OK
}

/// A WAL file: SQLite's file header (our methods), the pending bytes, and
/// the wrapped VFS's own file, which lives at [`HEADER`] bytes into the
/// same allocation.
#[repr(C)]
struct WalFile {
    base: ffi::sqlite3_file,
    inner: *mut ffi::sqlite3_file,
    pending: Vec<u8>,
    /// The file offset of `pending[0]`.
    at: i64,
}

/// Where the wrapped file starts (8-aligned, as SQLite's allocations are).
const HEADER: usize = std::mem::size_of::<WalFile>().div_ceil(8) * 8;

unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let inner_vfs = (*vfs).pAppData as *mut ffi::sqlite3_vfs;
    let Some(inner_open) = (*inner_vfs).xOpen else {
        return ffi::SQLITE_CANTOPEN;
    };
    if flags & ffi::SQLITE_OPEN_WAL == 0 {
        // Everything but the WAL is the wrapped VFS's own file, at the
        // start of the (larger) allocation.
        return inner_open(inner_vfs, name, file, flags, out_flags);
    }
    let inner = file.cast::<u8>().add(HEADER).cast::<ffi::sqlite3_file>();
    let rc = inner_open(inner_vfs, name, inner, flags, out_flags);
    if rc != ffi::SQLITE_OK {
        // SQLite closes a file only when its methods are set.
        (*file).pMethods = std::ptr::null();
        return rc;
    }
    std::ptr::write(
        file.cast::<WalFile>(),
        WalFile {
            base: ffi::sqlite3_file { pMethods: &METHODS },
            inner,
            pending: Vec::new(),
            at: 0,
        },
    );
    ffi::SQLITE_OK
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

unsafe fn this<'a>(f: *mut ffi::sqlite3_file) -> &'a mut WalFile {
    &mut *f.cast::<WalFile>()
}

/// The wrapped file's methods.
unsafe fn m(w: &WalFile) -> &ffi::sqlite3_io_methods {
    &*(*w.inner).pMethods
}

/// Writes what is pending, in chunks. On failure the bytes are dropped and
/// the error returned to what SQLite asked for: with `cache_spill=OFF`
/// ([`connect`]) bytes are pending only inside a committing transaction's
/// frame writes, which end in a sync, so that commit fails and nothing it
/// wrote is published.
unsafe fn flush(w: &mut WalFile) -> c_int {
    if w.pending.is_empty() {
        return ffi::SQLITE_OK;
    }
    let Some(x) = m(w).xWrite else {
        w.pending.clear();
        return ffi::SQLITE_IOERR_WRITE;
    };
    let mut rc = ffi::SQLITE_OK;
    let mut at = w.at;
    for chunk in w.pending.chunks(CHUNK) {
        rc = x(w.inner, chunk.as_ptr().cast(), chunk.len() as c_int, at);
        if rc != ffi::SQLITE_OK {
            break;
        }
        at += chunk.len() as i64;
    }
    w.pending.clear();
    rc
}

unsafe extern "C" fn close(f: *mut ffi::sqlite3_file) -> c_int {
    let w = this(f);
    let flushed = flush(w);
    let closed = match m(w).xClose {
        Some(x) => x(w.inner),
        None => ffi::SQLITE_OK,
    };
    std::ptr::drop_in_place(f.cast::<WalFile>());
    if flushed != ffi::SQLITE_OK {
        flushed
    } else {
        closed
    }
}

unsafe extern "C" fn read(f: *mut ffi::sqlite3_file, buf: *mut c_void, n: c_int, at: i64) -> c_int {
    let w = this(f);
    let rc = flush(w);
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    match m(w).xRead {
        Some(x) => x(w.inner, buf, n, at),
        None => ffi::SQLITE_IOERR_READ,
    }
}

unsafe extern "C" fn write(
    f: *mut ffi::sqlite3_file,
    buf: *const c_void,
    n: c_int,
    at: i64,
) -> c_int {
    let w = this(f);
    let Ok(len) = usize::try_from(n) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    if !w.pending.is_empty() && at != w.at + w.pending.len() as i64 {
        let rc = flush(w);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
    }
    if w.pending.is_empty() {
        w.at = at;
    }
    w.pending
        .extend_from_slice(std::slice::from_raw_parts(buf.cast::<u8>(), len));
    if w.pending.len() >= LIMIT {
        return flush(w);
    }
    ffi::SQLITE_OK
}

/// Flushes, then calls the wrapped method.
macro_rules! after_flush {
    ($name:ident, $field:ident, ($($arg:ident: $ty:ty),*), $missing:expr) => {
        unsafe extern "C" fn $name(f: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            let w = this(f);
            let rc = flush(w);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            match m(w).$field {
                Some(x) => x(w.inner $(, $arg)*),
                None => $missing,
            }
        }
    };
}

/// Calls the wrapped method (nothing written or read).
macro_rules! pass {
    ($name:ident, $field:ident, ($($arg:ident: $ty:ty),*), $missing:expr) => {
        unsafe extern "C" fn $name(f: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            let w = this(f);
            match m(w).$field {
                Some(x) => x(w.inner $(, $arg)*),
                None => $missing,
            }
        }
    };
}

after_flush!(truncate, xTruncate, (size: i64), ffi::SQLITE_IOERR_TRUNCATE);
after_flush!(sync, xSync, (flags: c_int), ffi::SQLITE_IOERR_FSYNC);
after_flush!(file_size, xFileSize, (size: *mut i64), ffi::SQLITE_IOERR_FSTAT);
after_flush!(file_control, xFileControl, (op: c_int, arg: *mut c_void), ffi::SQLITE_NOTFOUND);
after_flush!(fetch, xFetch, (at: i64, n: c_int, pp: *mut *mut c_void), {
    *pp = std::ptr::null_mut();
    ffi::SQLITE_OK
});
pass!(lock, xLock, (level: c_int), ffi::SQLITE_OK);
pass!(unlock, xUnlock, (level: c_int), ffi::SQLITE_OK);
pass!(check_reserved_lock, xCheckReservedLock, (out: *mut c_int), {
    *out = 0;
    ffi::SQLITE_OK
});
pass!(sector_size, xSectorSize, (), 4096);
pass!(device_characteristics, xDeviceCharacteristics, (), 0);
pass!(shm_map, xShmMap, (page: c_int, size: c_int, extend: c_int, pp: *mut *mut c_void), ffi::SQLITE_IOERR_SHMMAP);
pass!(shm_lock, xShmLock, (offset: c_int, n: c_int, flags: c_int), ffi::SQLITE_IOERR_SHMLOCK);
pass!(shm_unmap, xShmUnmap, (delete: c_int), ffi::SQLITE_OK);
pass!(unfetch, xUnfetch, (at: i64, p: *mut c_void), ffi::SQLITE_OK);

unsafe extern "C" fn shm_barrier(f: *mut ffi::sqlite3_file) {
    let w = this(f);
    if let Some(x) = m(w).xShmBarrier {
        x(w.inner)
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::{params, Connection, OpenFlags};

    /// A connection on this VFS (`buffered`) or on SQLite's own.
    fn open(path: &std::path::Path, buffered: bool) -> Connection {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        // SQLite's process-wide setup first, whichever VFS (as in chit).
        super::name();
        let c = if buffered {
            super::connect(path, flags).unwrap()
        } else {
            Connection::open_with_flags(path, flags).unwrap()
        };
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.pragma_update(None, "synchronous", "FULL").unwrap();
        c
    }

    fn blob(i: u32, round: u32) -> Vec<u8> {
        (0..2000u32)
            .map(|k| (k.wrapping_mul(31) ^ i.wrapping_mul(7919) ^ round) as u8)
            .collect()
    }

    /// One transaction far larger than the buffer and than one write of
    /// the wrapped VFS, with a tiny page cache (which, without
    /// `cache_spill=OFF`, spilled frames and rewrote some in place): read
    /// back through another connection on SQLite's own VFS (from the WAL:
    /// nothing is checkpointed), every byte is there, and the file passes
    /// SQLite's integrity check.
    #[test]
    fn large_transactions_and_rewritten_frames_read_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let w = open(&path, true);
        w.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        w.pragma_update(None, "cache_size", 16).unwrap();
        w.execute_batch("CREATE TABLE t (i INTEGER PRIMARY KEY, b BLOB NOT NULL)")
            .unwrap();
        let n = 4000u32; // 8 MB of rows: twice the buffer's limit
        w.execute_batch("BEGIN").unwrap();
        for i in 0..n {
            w.execute("INSERT INTO t VALUES (?1, ?2)", params![i, blob(i, 0)])
                .unwrap();
        }
        for i in (0..n).step_by(3) {
            w.execute("UPDATE t SET b = ?2 WHERE i = ?1", params![i, blob(i, 1)])
                .unwrap();
        }
        w.execute_batch("COMMIT").unwrap();
        let wal = std::fs::metadata(dir.path().join("t.db-wal"))
            .unwrap()
            .len();
        assert!(wal > (super::LIMIT as u64), "the WAL holds {wal} bytes");

        let r = open(&path, false);
        let mut stmt = r.prepare("SELECT i, b FROM t ORDER BY i").unwrap();
        let rows: Vec<(u32, Vec<u8>)> = stmt
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows.len(), n as usize);
        for (i, b) in rows {
            let round = u32::from(i % 3 == 0);
            assert!(b == blob(i, round), "row {i} differs");
        }
        let ok: String = r
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
    }

    /// Each commit is readable by another connection as soon as it
    /// returns: the buffered frames reach the file before SQLite publishes
    /// the commit.
    #[test]
    fn each_commit_is_visible_to_another_connection_when_it_returns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let w = open(&path, true);
        w.execute_batch("CREATE TABLE t (i INTEGER PRIMARY KEY, b BLOB NOT NULL)")
            .unwrap();
        let r = open(&path, true);
        let plain = open(&path, false);
        for i in 0..300u32 {
            w.execute("INSERT INTO t VALUES (?1, ?2)", params![i, blob(i, 0)])
                .unwrap();
            for c in [&r, &plain] {
                let (count, last): (u32, Vec<u8>) = c
                    .query_row(
                        "SELECT count(*), (SELECT b FROM t WHERE i = ?1) FROM t",
                        [i],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )
                    .unwrap();
                assert_eq!(count, i + 1);
                assert!(last == blob(i, 0), "row {i} read back differently");
            }
        }
    }

    /// A transaction too large for its page cache, rolled back, leaves
    /// nothing pending (no spill: see [`super::connect`]); another writer then
    /// commits at the same WAL offsets, and this handle's next read
    /// writes nothing over it. (With spills on, 22 pages were corrupt.)
    #[test]
    fn rolled_back_spill_is_not_flushed_over_another_writers_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let a = open(&path, true);
        a.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        a.execute_batch("CREATE TABLE t (i INTEGER PRIMARY KEY, b BLOB NOT NULL)")
            .unwrap();
        let b = open(&path, false);
        b.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        // Everything so far is in the database file: the rollback below
        // has nothing to read from the WAL.
        a.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        a.pragma_update(None, "cache_size", 16).unwrap();
        a.execute_batch("BEGIN").unwrap();
        for i in 1000..1200u32 {
            a.execute("INSERT INTO t VALUES (?1, ?2)", params![i, blob(i, 9)])
                .unwrap();
        }
        a.execute_batch("ROLLBACK").unwrap();
        for i in 0..100u32 {
            b.execute("INSERT INTO t VALUES (?1, ?2)", params![i, blob(i, 0)])
                .unwrap();
        }
        // a reads: its handle flushes what it still holds.
        let _: i64 = a
            .query_row("SELECT sum(length(b)) FROM t", [], |r| r.get(0))
            .unwrap();
        let c = open(&path, false);
        let ok: String = c
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        for i in 0..100u32 {
            let got: Vec<u8> = c
                .query_row("SELECT b FROM t WHERE i = ?1", [i], |r| r.get(0))
                .unwrap();
            assert!(got == blob(i, 0), "row {i} differs");
        }
    }
}
