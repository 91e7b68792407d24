//! A witness's state: for each log origin it witnesses, the latest
//! checkpoint it cosigned (its size, root and the note it returned), in
//! one SQLite file (`chit witness serve --store FILE`).
//!
//! The file is held by one witness process at a time (SQLite's exclusive
//! locking mode): the check of a request's old size and the persisting of
//! the new latest checkpoint are atomic only if nothing else writes
//! between them. [`WitnessState::advance`] writes many origins' new
//! checkpoints in one transaction (one sync), each row changed only from
//! the size its caller checked against, so a batch that finds another
//! size changes nothing.

use chit_log::tree::Hash;
use rusqlite::{params, Connection, OptionalExtension};

use crate::StoreError;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS chit_witness_latest (
    origin TEXT PRIMARY KEY NOT NULL,
    size INTEGER NOT NULL CHECK (size >= 0),
    root BLOB NOT NULL CHECK (length(root) = 32),
    note BLOB NOT NULL
) STRICT;
";

/// The latest checkpoint a witness cosigned for one origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Latest {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
    /// The checkpoint note with the log's signature and the witness's
    /// cosignature (what `GET /<origin hash>/checkpoint` serves).
    pub note: Vec<u8>,
}

/// One origin's advance: from `old_size` (0 for an origin never
/// cosigned) to `latest`.
#[derive(Debug, Clone)]
pub struct Advance {
    pub old_size: u64,
    pub latest: Latest,
}

/// The witness's state file, open.
pub struct WitnessState {
    conn: Connection,
}

fn sql(e: rusqlite::Error) -> StoreError {
    StoreError::Write(e.to_string())
}

impl WitnessState {
    /// Opens (or makes) the state file, and holds it: a second process
    /// that opens it waits, then fails.
    pub fn open(path: &str) -> Result<WitnessState, StoreError> {
        let open = || -> Result<Connection, rusqlite::Error> {
            let conn = Connection::open(path)?;
            conn.busy_timeout(std::time::Duration::from_millis(500))?;
            conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "FULL")?;
            // The exclusive lock is taken by the first write: take it now,
            // so a second witness on this file is refused when it starts.
            conn.execute_batch(&format!("BEGIN IMMEDIATE;{SCHEMA}COMMIT;"))?;
            Ok(conn)
        };
        let conn = open().map_err(|e| match e {
            rusqlite::Error::SqliteFailure(f, _)
                if matches!(
                    f.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) =>
            {
                StoreError::Write(format!(
                    "{path} is held by another witness (one process a state file)"
                ))
            }
            e => sql(e),
        })?;
        Ok(WitnessState { conn })
    }

    /// Every origin's latest cosigned checkpoint.
    pub fn all(&self) -> Result<Vec<Latest>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT origin, size, root, note FROM chit_witness_latest ORDER BY origin")
            .map_err(sql)?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                ))
            })
            .map_err(sql)?;
        let mut out = Vec::new();
        for row in rows {
            let (origin, size, root, note) = row.map_err(sql)?;
            out.push(Latest {
                origin,
                size: u64::try_from(size)
                    .map_err(|_| StoreError::Read("a negative size".into()))?,
                root: root
                    .try_into()
                    .map_err(|_| StoreError::Read("a root that is not 32 bytes".into()))?,
                note,
            });
        }
        Ok(out)
    }

    /// One origin's latest cosigned checkpoint, if any.
    pub fn latest(&self, origin: &str) -> Result<Option<Latest>, StoreError> {
        Ok(self.all()?.into_iter().find(|l| l.origin == origin))
    }

    /// Writes each origin's new latest checkpoint, all in one transaction:
    /// each row must still be at its `old_size` (or absent, for 0), else
    /// nothing is written and the error names the origin.
    pub fn advance(&mut self, batch: &[Advance]) -> Result<(), StoreError> {
        let tx = self.conn.transaction().map_err(sql)?;
        for a in batch {
            let l = &a.latest;
            let size = i64::try_from(l.size)
                .map_err(|_| StoreError::Write("a size above 2^63 - 1".into()))?;
            let old = i64::try_from(a.old_size)
                .map_err(|_| StoreError::Write("a size above 2^63 - 1".into()))?;
            let stored: Option<i64> = tx
                .query_row(
                    "SELECT size FROM chit_witness_latest WHERE origin = ?1",
                    [&l.origin],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql)?;
            if stored.unwrap_or(0) != old {
                return Err(StoreError::Write(format!(
                    "the witness state of {} moved from {old} to {} under this write",
                    l.origin,
                    stored.unwrap_or(0)
                )));
            }
            tx.execute(
                "INSERT INTO chit_witness_latest (origin, size, root, note) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (origin) DO UPDATE SET size = ?2, root = ?3, note = ?4",
                params![l.origin, size, &l.root[..], l.note],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latest(origin: &str, size: u64) -> Latest {
        Latest {
            origin: origin.into(),
            size,
            root: [size as u8; 32],
            note: format!("{origin} {size}").into_bytes(),
        }
    }

    #[test]
    fn advances_are_kept_and_checked_against_the_old_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db").display().to_string();
        {
            let mut s = WitnessState::open(&path).unwrap();
            assert!(s.all().unwrap().is_empty());
            s.advance(&[
                Advance {
                    old_size: 0,
                    latest: latest("a", 5),
                },
                Advance {
                    old_size: 0,
                    latest: latest("b", 2),
                },
            ])
            .unwrap();
            s.advance(&[Advance {
                old_size: 5,
                latest: latest("a", 9),
            }])
            .unwrap();
            // From a size that is not the stored one: nothing written.
            let e = s
                .advance(&[
                    Advance {
                        old_size: 2,
                        latest: latest("b", 3),
                    },
                    Advance {
                        old_size: 5,
                        latest: latest("a", 12),
                    },
                ])
                .unwrap_err();
            assert!(e.to_string().contains("moved from 5 to 9"), "{e}");
            // Held: a second open of the file is refused.
            assert!(WitnessState::open(&path).is_err());
        }
        let s = WitnessState::open(&path).unwrap();
        assert_eq!(s.all().unwrap(), vec![latest("a", 9), latest("b", 2)]);
        assert_eq!(s.latest("b").unwrap(), Some(latest("b", 2)));
        assert_eq!(s.latest("c").unwrap(), None);
    }
}
