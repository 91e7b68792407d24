//! SQLite's own page cache, with one of its scans taken out.
//!
//! When a B-tree page splits, SQLite puts the new sibling pages in
//! ascending page order (`balance_nonroot`), swapping two pages' numbers
//! through a spare number: the page after the lock-byte page, which no
//! database ever uses (page 262,145 with 4 KiB pages). The page cache
//! remembers the largest number it has held since it was last cut back
//! (pcache1's `iMaxKey`), and the end of every write transaction cuts it
//! back to the database's size. When that largest number is the spare
//! one, far past the end of any database under a gigabyte, SQLite cannot
//! tell which hash slots hold pages past the end and walks every slot and
//! every page of the cache: with chit's 32 MiB cache, a large share of the
//! sequencer's CPU under load (random-key indexes split often;
//! docs/decisions/sqlite-page-cache.md).
//!
//! This wraps SQLite's default page cache (`SQLITE_CONFIG_PCACHE2`) and
//! changes only that spare number: while a swap holds a page there, the
//! page is kept under the number just past the largest this cache has
//! held instead, a number no page has (so the swap is the same swap), and
//! the cut at the transaction's end looks at a few slots only. Every other
//! call goes to SQLite's cache unchanged.

use rusqlite::ffi;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::OnceLock;

/// SQLite's default page cache methods, kept for the wrapper to call.
static INNER: OnceLock<Methods> = OnceLock::new();

struct Methods(ffi::sqlite3_pcache_methods2);

// SAFETY: SQLite's page cache methods may be called from any thread (it
// serialises a cache's calls itself); `pArg` is only handed back to them.
unsafe impl Send for Methods {}
unsafe impl Sync for Methods {}

fn inner() -> &'static ffi::sqlite3_pcache_methods2 {
    &INNER.get().expect("installed before any cache is made").0
}

/// Whether [`install`] took.
static INSTALLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Swaps kept off the spare number (tests read it).
#[cfg(test)]
pub static STOOD_IN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// SQLite's lock-byte offset (`PENDING_BYTE`, 0x40000000 unless a test
/// build moves it).
const PENDING_BYTE: u32 = 0x4000_0000;

/// One connection's cache: SQLite's, and what the wrapper keeps of it.
struct Cache {
    inner: *mut ffi::sqlite3_pcache,
    /// The spare number `balance_nonroot` swaps through, for this page size.
    spare: u32,
    /// The largest number a page has had since the cache was last cut
    /// back (as pcache1's `iMaxKey`).
    max_key: AtomicU32,
    /// While a swap holds a page at `spare`: the number it is kept under
    /// instead (0 when none).
    stand_in: AtomicU32,
}

unsafe fn cache<'a>(p: *mut ffi::sqlite3_pcache) -> &'a Cache {
    &*p.cast::<Cache>()
}

impl Cache {
    /// The number SQLite's cache knows a key by.
    fn key(&self, key: c_uint) -> c_uint {
        match self.stand_in.load(Relaxed) {
            s if key == self.spare && s != 0 => s,
            _ => key,
        }
    }
    /// A page now has `key`. A cache's calls never overlap (SQLite
    /// serialises them), so a plain load and store keep the maximum.
    fn saw(&self, key: c_uint) {
        if key > self.max_key.load(Relaxed) {
            self.max_key.store(key, Relaxed);
        }
    }
}

unsafe extern "C" fn x_init(arg: *mut c_void) -> c_int {
    match inner().xInit {
        Some(f) => f(arg),
        None => ffi::SQLITE_OK,
    }
}

unsafe extern "C" fn x_shutdown(arg: *mut c_void) {
    if let Some(f) = inner().xShutdown {
        f(arg)
    }
}

unsafe extern "C" fn x_create(
    sz_page: c_int,
    sz_extra: c_int,
    purgeable: c_int,
) -> *mut ffi::sqlite3_pcache {
    let Some(create) = inner().xCreate else {
        return std::ptr::null_mut();
    };
    let p = create(sz_page, sz_extra, purgeable);
    if p.is_null() {
        return p;
    }
    let page = u32::try_from(sz_page).unwrap_or(0).max(1);
    let c = Box::new(Cache {
        inner: p,
        spare: PENDING_BYTE / page + 1,
        max_key: AtomicU32::new(0),
        stand_in: AtomicU32::new(0),
    });
    Box::into_raw(c).cast()
}

unsafe extern "C" fn x_cachesize(p: *mut ffi::sqlite3_pcache, n: c_int) {
    if let Some(f) = inner().xCachesize {
        f(cache(p).inner, n)
    }
}

unsafe extern "C" fn x_pagecount(p: *mut ffi::sqlite3_pcache) -> c_int {
    match inner().xPagecount {
        Some(f) => f(cache(p).inner),
        None => 0,
    }
}

unsafe extern "C" fn x_fetch(
    p: *mut ffi::sqlite3_pcache,
    key: c_uint,
    create: c_int,
) -> *mut ffi::sqlite3_pcache_page {
    let c = cache(p);
    let Some(f) = inner().xFetch else {
        return std::ptr::null_mut();
    };
    let k = c.key(key);
    let page = f(c.inner, k, create);
    // Only a page made here can have a number past the largest held; a
    // plain lookup (most calls) finds one that is already counted.
    if create != 0 && !page.is_null() {
        c.saw(k);
    }
    page
}

unsafe extern "C" fn x_unpin(
    p: *mut ffi::sqlite3_pcache,
    page: *mut ffi::sqlite3_pcache_page,
    discard: c_int,
) {
    if let Some(f) = inner().xUnpin {
        f(cache(p).inner, page, discard)
    }
}

unsafe extern "C" fn x_rekey(
    p: *mut ffi::sqlite3_pcache,
    page: *mut ffi::sqlite3_pcache_page,
    old: c_uint,
    new: c_uint,
) {
    let c = cache(p);
    let Some(f) = inner().xRekey else {
        return;
    };
    // The swap ends: the page leaves the stand-in for its own number.
    let old = match c.key(old) {
        k if k != old => {
            c.stand_in.store(0, Relaxed);
            k
        }
        k => k,
    };
    // A swap starts: the page goes just past the largest number held,
    // where no page is, unless that is the spare number or beyond.
    let new = match c.max_key.load(Relaxed).checked_add(1) {
        Some(s) if new == c.spare && s < c.spare => {
            c.stand_in.store(s, Relaxed);
            #[cfg(test)]
            STOOD_IN.fetch_add(1, Relaxed);
            s
        }
        _ => new,
    };
    c.saw(new);
    f(c.inner, page, old, new)
}

unsafe extern "C" fn x_truncate(p: *mut ffi::sqlite3_pcache, limit: c_uint) {
    let c = cache(p);
    if let Some(f) = inner().xTruncate {
        f(c.inner, limit)
    }
    if limit <= c.max_key.load(Relaxed) {
        c.max_key.store(limit.saturating_sub(1), Relaxed);
    }
}

unsafe extern "C" fn x_destroy(p: *mut ffi::sqlite3_pcache) {
    let c = Box::from_raw(p.cast::<Cache>());
    if let Some(f) = inner().xDestroy {
        f(c.inner)
    }
}

unsafe extern "C" fn x_shrink(p: *mut ffi::sqlite3_pcache) {
    if let Some(f) = inner().xShrink {
        f(cache(p).inner)
    }
}

/// Puts the wrapper in front of SQLite's default page cache, if SQLite has
/// not started yet (this must come before the process's first connection
/// or VFS call; later, SQLite refuses and keeps its own cache, which is
/// correct, only slower). Whether it took.
pub fn install() -> bool {
    let mut default = ffi::sqlite3_pcache_methods2 {
        iVersion: 0,
        pArg: std::ptr::null_mut(),
        xInit: None,
        xShutdown: None,
        xCreate: None,
        xCachesize: None,
        xPagecount: None,
        xFetch: None,
        xUnpin: None,
        xRekey: None,
        xTruncate: None,
        xDestroy: None,
        xShrink: None,
    };
    // SAFETY: before SQLite is initialised, GETPCACHE2 fills in its
    // default methods and PCACHE2 copies ours; once it is, both answer
    // SQLITE_MISUSE and change nothing.
    unsafe {
        let got = ffi::sqlite3_config(
            ffi::SQLITE_CONFIG_GETPCACHE2,
            &mut default as *mut ffi::sqlite3_pcache_methods2,
        );
        if got != ffi::SQLITE_OK || default.xCreate.is_none() {
            return false;
        }
        let arg = default.pArg;
        let version = default.iVersion;
        if INNER.set(Methods(default)).is_err() {
            return false;
        }
        let ours = ffi::sqlite3_pcache_methods2 {
            iVersion: version,
            pArg: arg,
            xInit: Some(x_init),
            xShutdown: Some(x_shutdown),
            xCreate: Some(x_create),
            xCachesize: Some(x_cachesize),
            xPagecount: Some(x_pagecount),
            xFetch: Some(x_fetch),
            xUnpin: Some(x_unpin),
            xRekey: Some(x_rekey),
            xTruncate: Some(x_truncate),
            xDestroy: Some(x_destroy),
            xShrink: Some(x_shrink),
        };
        let ok = ffi::sqlite3_config(
            ffi::SQLITE_CONFIG_PCACHE2,
            &ours as *const ffi::sqlite3_pcache_methods2,
        ) == ffi::SQLITE_OK;
        INSTALLED.store(ok, Relaxed);
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::params;

    /// Random-key inserts in many small transactions (as the sequencer
    /// makes them) split pages through the spare number; with the stand-in,
    /// the database reads back whole and every key is found, from this
    /// connection and from a new one.
    #[test]
    fn swaps_through_a_stand_in_keep_the_database_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let flags =
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_CREATE;
        let mut c = crate::walbuf::connect(&path, flags).unwrap();
        assert!(
            INSTALLED.load(Relaxed),
            "the wrapper is installed before SQLite's first call"
        );
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.execute_batch(
            "CREATE TABLE e (idx INTEGER PRIMARY KEY, k BLOB NOT NULL UNIQUE, v BLOB NOT NULL);
             CREATE INDEX e_v ON e (v);",
        )
        .unwrap();
        let key = |i: u64| -> Vec<u8> {
            let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x1234_5678;
            (0..4)
                .flat_map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x.to_le_bytes()
                })
                .collect()
        };
        let before = STOOD_IN.load(Relaxed);
        let (batches, per) = (150u64, 100u64);
        for b in 0..batches {
            let tx = c.transaction().unwrap();
            for i in b * per..(b + 1) * per {
                tx.execute(
                    "INSERT INTO e (idx, k, v) VALUES (?1, ?2, ?3)",
                    params![i as i64, key(i), key(i + 1_000_000)],
                )
                .unwrap();
            }
            tx.commit().unwrap();
        }
        assert!(
            STOOD_IN.load(Relaxed) > before,
            "page splits swapped through the spare number"
        );
        let n = batches * per;
        let check = |c: &rusqlite::Connection| {
            let ok: String = c
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .unwrap();
            assert_eq!(ok, "ok");
            let count: i64 = c
                .query_row("SELECT count(*) FROM e", [], |r| r.get(0))
                .unwrap();
            assert_eq!(count as u64, n);
            for i in (0..n).step_by(97) {
                let idx: i64 = c
                    .query_row("SELECT idx FROM e WHERE k = ?1", [key(i)], |r| r.get(0))
                    .unwrap();
                assert_eq!(idx as u64, i);
                let idx: i64 = c
                    .query_row(
                        "SELECT idx FROM e WHERE v = ?1",
                        [key(i + 1_000_000)],
                        |r| r.get(0),
                    )
                    .unwrap();
                assert_eq!(idx as u64, i);
            }
        };
        check(&c);
        drop(c);
        check(&crate::walbuf::connect(&path, flags).unwrap());
    }
}
