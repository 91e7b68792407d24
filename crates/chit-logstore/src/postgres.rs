//! The shared store: PostgreSQL, for a deployment where several processes
//! (on several machines) read one log and one sequences it.
//!
//! `postgres://user@host:port/database?schema=NAME`: the log's tables live
//! in schema `NAME` (default `public`), so one database can hold several
//! logs. A commit is one statement that moves the head row from the
//! batch's old size to its new one and writes the batch's rows only where
//! it did (row lock, then the size checked), so no two batches interleave
//! and a stale one writes nothing.
//!
//! [`Store::lease`] is a row with a fencing token, a holder (its server
//! process id) and an expiry ([`LEASE_TTL`] after its last commit): it
//! passes on at once when its holder gives it back or its connection ends,
//! and after [`LEASE_TTL`] when its holder is alive but silent (paused,
//! cut off). Each taking raises the token, and a holder's commit applies
//! only while the token is still its own: a holder that lost its lease
//! commits nothing ([`StoreError::Fenced`]) and takes its turn again.

use crate::store::{
    Batch, Entry, Hit, Index, Label, Meta, PacketRow, Query, Store, StoreError, Tree,
};
use chit_log::Hash;
use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, NoTls};
use std::collections::HashMap;

const SCHEMA: &str = "
CREATE TABLE chit_log_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE chit_log_head (id INTEGER PRIMARY KEY CHECK (id = 0), size BIGINT NOT NULL);
CREATE TABLE chit_log_checkpoints (size BIGINT PRIMARY KEY, note BYTEA NOT NULL);
CREATE TABLE chit_log_entries (
  idx BIGINT PRIMARY KEY,
  sha256 BYTEA NOT NULL UNIQUE,
  data BYTEA NOT NULL,
  integrated_at BIGINT NOT NULL
);
CREATE TABLE chit_log_tiles (
  level SMALLINT NOT NULL,
  idx BIGINT NOT NULL,
  data BYTEA NOT NULL,
  PRIMARY KEY (level, idx)
);
CREATE TABLE chit_log_packets (
  stream_id BYTEA NOT NULL,
  sequence BIGINT NOT NULL,
  packet_id BYTEA NOT NULL,
  prev_packet_id BYTEA,
  idx BIGINT NOT NULL,
  PRIMARY KEY (stream_id, sequence)
);
CREATE UNIQUE INDEX chit_log_packet_ids ON chit_log_packets (stream_id, packet_id);
CREATE TABLE chit_log_labels (
  idx BIGINT PRIMARY KEY,
  kind TEXT NOT NULL,
  art_id TEXT,
  stream_id BYTEA,
  integrated_at BIGINT NOT NULL
);
CREATE INDEX chit_log_labels_kind ON chit_log_labels (kind, idx);
CREATE INDEX chit_log_labels_art ON chit_log_labels (art_id) WHERE art_id IS NOT NULL;
CREATE INDEX chit_log_labels_stream ON chit_log_labels (stream_id, idx) WHERE stream_id IS NOT NULL;
CREATE INDEX chit_log_labels_time ON chit_log_labels (integrated_at, idx);
";

/// The lease's table: made with a log, and by the first lease of a log
/// made before it had one.
const LEASE_TABLE: &str = "CREATE TABLE IF NOT EXISTS chit_log_lease (
  id INTEGER PRIMARY KEY CHECK (id = 0),
  token BIGINT NOT NULL,
  pid INTEGER,
  until TIMESTAMPTZ NOT NULL
)";

/// How long a sequencer's lease outlives its holder's last sign of life
/// (taking it, or a commit) when the holder's connection stays open: a
/// paused holder stalls the others this long at most.
pub const LEASE_TTL: std::time::Duration = std::time::Duration::from_secs(3);

/// How often a waiting sequencer looks at the lease again when no holder
/// gave it back (to find one expired).
const LEASE_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// A log in a PostgreSQL schema.
pub struct PgStore {
    client: Client,
    /// What it connects with: a connection that dropped is made again.
    url: String,
    location: String,
    schema: String,
    /// Statements prepared on this connection, by their SQL: a batch runs
    /// each once per round trip instead of two.
    statements: std::collections::HashMap<String, postgres::Statement>,
    /// The schema was found to hold a log: a log is never removed under a
    /// running store, so it is asked once, not before every batch.
    is_log: bool,
    /// The lease's table is known to exist (made where an older log
    /// lacks it), and this connection listens for its hand-overs.
    lease_ready: bool,
    /// The fencing token of the lease this connection holds.
    token: Option<i64>,
    /// The connection dropped while it held the lease: the lease may have
    /// passed on, so the next commit is refused as fenced (unless a lease
    /// is taken again first).
    lease_lost: bool,
}

/// Splits chit's `schema=NAME` out of a connection URL (read by the `url`
/// crate): the URL PostgreSQL is given, the schema, and the URL without
/// its password (for messages).
pub fn parse_location(location: &str) -> Result<(String, String, String), StoreError> {
    let bad = |why: String| StoreError::Read(format!("{location}: {why}"));
    let mut url = url::Url::parse(location).map_err(|e| bad(e.to_string()))?;
    // The other parameters go to PostgreSQL as written: its reader takes
    // %XX escapes, but a `+` re-encoded for a space it would read as `+`.
    let mut schema = "public".to_string();
    let mut rest: Vec<String> = Vec::new();
    for pair in url
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
    {
        match pair.strip_prefix("schema=") {
            Some(v) => schema = v.to_string(),
            None => rest.push(pair.to_string()),
        }
    }
    let valid = !schema.is_empty()
        && schema.len() <= 63
        && schema
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !schema.as_bytes()[0].is_ascii_digit();
    if !valid {
        return Err(StoreError::Read(format!(
            "schema={schema}: a schema name is lower-case letters, digits and _, not starting with a digit"
        )));
    }
    if rest.is_empty() {
        url.set_query(None);
    } else {
        url.set_query(Some(&rest.join("&")));
    }
    let pg = url.to_string();
    // user:password@host → user@host
    let _ = url.set_password(None);
    url.set_query(None);
    Ok((pg, schema.clone(), format!("{url} (schema {schema})")))
}

/// A PostgreSQL error in one line: the server's own message (with its
/// SQLSTATE) where it sent one, not only "db error"; a read-only server or
/// transaction and a full disk said in plain words.
fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => match db.code().code() {
            "25006" => "the store is read-only".to_string(),
            "53100" => "the disk is full".to_string(),
            code => format!("{} (SQLSTATE {code})", db.message()),
        },
        None => e.to_string(),
    }
}

fn read_err(e: postgres::Error) -> StoreError {
    StoreError::Read(format!("PostgreSQL: {}", describe(&e)))
}

impl PgStore {
    /// Connects; the schema need not hold a log yet (`create` makes one).
    pub fn connect(url: &str) -> Result<PgStore, StoreError> {
        let (pg, schema, location) = parse_location(url)?;
        let mut client = Client::connect(&pg, NoTls).map_err(|e| {
            StoreError::Read(format!("cannot connect to {location}: {}", describe(&e)))
        })?;
        client
            .batch_execute(&format!("SET search_path TO {schema}"))
            .map_err(read_err)?;
        Ok(PgStore {
            client,
            url: pg,
            location,
            schema,
            statements: std::collections::HashMap::new(),
            is_log: false,
            lease_ready: false,
            token: None,
            lease_lost: false,
        })
    }

    /// Connects again where the connection dropped (the server restarted,
    /// an administrator ended it, the network failed): what was under way
    /// on the old one failed and was answered so; what comes next goes on.
    /// The statements prepared there are prepared again. A sequencer's
    /// lease ended with the old session (its holder's process id is gone):
    /// a server takes it again for its next batch; a commit without taking
    /// it again is refused as fenced (a `chit log append` that held it
    /// stops there, nothing of that batch acknowledged).
    fn live(&mut self) -> Result<(), StoreError> {
        if !self.client.is_closed() {
            return Ok(());
        }
        let mut client = Client::connect(&self.url, NoTls).map_err(|e| {
            StoreError::Read(format!(
                "cannot connect to {} again: {}",
                self.location,
                describe(&e)
            ))
        })?;
        client
            .batch_execute(&format!("SET search_path TO {}", self.schema))
            .map_err(read_err)?;
        self.client = client;
        self.statements.clear();
        self.lease_ready = false;
        self.lease_lost |= self.token.take().is_some();
        Ok(())
    }

    /// The channel a lease's hand-over is told on: `chit_log_lease_SCHEMA`,
    /// cut to PostgreSQL's 63-byte names (two long schema names alike in
    /// their first 48 bytes share it: a waiter woken for the other looks
    /// again, no more).
    fn lease_channel(&self) -> String {
        let mut channel = format!("chit_log_lease_{}", self.schema);
        channel.truncate(63);
        channel
    }

    /// Makes the lease's table where an older log lacks it, and listens
    /// for hand-overs, once per connection.
    fn lease_ready(&mut self) -> Result<(), StoreError> {
        if self.lease_ready {
            return Ok(());
        }
        let exists: bool = self
            .client
            .query_one(
                "SELECT to_regclass($1) IS NOT NULL",
                &[&format!("{}.chit_log_lease", self.schema)],
            )
            .map_err(read_err)?
            .get(0);
        if !exists {
            if let Err(e) = self.client.batch_execute(LEASE_TABLE) {
                // Two processes making it at once: one of them wins.
                if e.code() != Some(&postgres::error::SqlState::UNIQUE_VIOLATION) {
                    return Err(self.write_err(e));
                }
            }
        }
        self.client
            .batch_execute(&format!("LISTEN {}", self.lease_channel()))
            .map_err(read_err)?;
        self.lease_ready = true;
        Ok(())
    }

    /// Takes the lease if it is free: given back, expired, or held by a
    /// connection that has ended (or by this one). Its new token, or None.
    fn try_lease(&mut self) -> Result<Option<i64>, StoreError> {
        let st = self.prepared(
            "INSERT INTO chit_log_lease AS l (id, token, pid, until) \
             VALUES (0, 1, pg_backend_pid(), clock_timestamp() + $1::int8 * interval '1 millisecond') \
             ON CONFLICT (id) DO UPDATE SET token = l.token + 1, pid = excluded.pid, until = excluded.until \
             WHERE l.pid IS NULL OR l.pid = pg_backend_pid() OR l.until < clock_timestamp() \
             OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = l.pid) \
             RETURNING token",
        )?;
        let ttl = LEASE_TTL.as_millis() as i64;
        let row = self
            .client
            .query_opt(&st, &[&ttl])
            .map_err(|e| self.write_err(e))?;
        Ok(row.map(|r| r.get(0)))
    }

    fn write_err(&self, e: postgres::Error) -> StoreError {
        StoreError::Write(format!(
            "cannot write {}: {}; nothing of this batch was acknowledged",
            self.location,
            describe(&e)
        ))
    }

    fn is_log(&mut self) -> Result<bool, StoreError> {
        let st = self.prepared("SELECT to_regclass($1) IS NOT NULL")?;
        let row = self
            .client
            .query_one(&st, &[&format!("{}.chit_log_meta", self.schema)])
            .map_err(read_err)?;
        Ok(row.get(0))
    }

    /// The statement for `sql`, prepared once on this connection.
    fn prepared(&mut self, sql: &str) -> Result<postgres::Statement, StoreError> {
        if let Some(st) = self.statements.get(sql) {
            return Ok(st.clone());
        }
        let st = self.client.prepare(sql).map_err(read_err)?;
        self.statements.insert(sql.to_string(), st.clone());
        Ok(st)
    }

    fn require_log(&mut self) -> Result<(), StoreError> {
        if self.is_log || self.is_log()? {
            self.is_log = true;
            Ok(())
        } else {
            Err(StoreError::NotALog(self.location.clone()))
        }
    }
}

fn hash_of(v: Vec<u8>, index: i64) -> Result<Hash, StoreError> {
    v.try_into().map_err(|_| {
        StoreError::Read(format!(
            "entry {index}: its stored content address is not 32 bytes (run chit log audit)"
        ))
    })
}

fn to_entry(r: &postgres::Row) -> Result<Entry, StoreError> {
    Ok(Entry {
        index: r.get::<_, i64>(0) as u64,
        sha256: hash_of(r.get(1), r.get(0))?,
        data: r.get(2),
        integrated_at: r.get(3),
    })
}

/// An id kept as UTF-8 bytes, as text again.
fn text(v: Vec<u8>) -> String {
    String::from_utf8(v).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Ids are kept as their UTF-8 bytes (`BYTEA`): PostgreSQL's `TEXT`
/// refuses U+0000, which JSON strings, and SQLite, allow.
fn to_packet(r: &postgres::Row) -> PacketRow {
    packet_from(r, 0)
}

/// A packet row from columns `first..first + 5` of `r` (stream id,
/// sequence, packet id, previous packet id, index).
fn packet_from(r: &postgres::Row, first: usize) -> PacketRow {
    PacketRow {
        stream_id: text(r.get(first)),
        sequence: r.get(first + 1),
        packet_id: text(r.get(first + 2)),
        prev_packet_id: r.get::<_, Option<Vec<u8>>>(first + 3).map(text),
        index: r.get::<_, i64>(first + 4) as u64,
    }
}

impl Tree for PgStore {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn head(&mut self) -> Result<(u64, Vec<u8>), StoreError> {
        self.live()?;
        let st = self.prepared(
            "SELECT h.size, c.note FROM chit_log_head h \
             LEFT JOIN chit_log_checkpoints c ON c.size = h.size WHERE h.id = 0",
        )?;
        let row = self
            .client
            .query_opt(&st, &[])
            .map_err(read_err)?
            .ok_or_else(|| StoreError::Read("the store has no head row".into()))?;
        let size: i64 = row.get(0);
        let note: Option<Vec<u8>> = row.get(1);
        let note = note.ok_or_else(|| {
            StoreError::Read(format!("the store has no checkpoint for its size {size}"))
        })?;
        Ok((size as u64, note))
    }

    fn checkpoint_at(&mut self, size: u64) -> Result<Option<Vec<u8>>, StoreError> {
        self.live()?;
        Ok(self
            .client
            .query_opt(
                "SELECT note FROM chit_log_checkpoints WHERE size = $1",
                &[&(size as i64)],
            )
            .map_err(read_err)?
            .map(|r| r.get(0)))
    }

    fn entry(&mut self, index: u64) -> Result<Option<Entry>, StoreError> {
        self.live()?;
        self.client
            .query_opt(
                "SELECT idx, sha256, data, integrated_at FROM chit_log_entries WHERE idx = $1",
                &[&(index.min(i64::MAX as u64) as i64)],
            )
            .map_err(read_err)?
            .as_ref()
            .map(to_entry)
            .transpose()
    }

    fn scan(
        &mut self,
        start: u64,
        end: u64,
        each: &mut dyn FnMut(Entry) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.live()?;
        use postgres::fallible_iterator::FallibleIterator;
        let (s, e) = (
            start.min(i64::MAX as u64) as i64,
            end.min(i64::MAX as u64) as i64,
        );
        let params: [&(dyn postgres::types::ToSql + Sync); 2] = [&s, &e];
        let mut rows = self
            .client
            .query_raw(
                "SELECT idx, sha256, data, integrated_at FROM chit_log_entries \
                 WHERE idx >= $1 AND idx < $2 ORDER BY idx",
                params,
            )
            .map_err(read_err)?;
        while let Some(r) = rows.next().map_err(read_err)? {
            each(to_entry(&r)?)?;
        }
        Ok(())
    }

    fn tile(&mut self, level: u8, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        self.live()?;
        let st = self.prepared("SELECT data FROM chit_log_tiles WHERE level = $1 AND idx = $2")?;
        Ok(self
            .client
            .query_opt(
                &st,
                &[&i16::from(level), &(index.min(i64::MAX as u64) as i64)],
            )
            .map_err(read_err)?
            .map(|r| r.get(0)))
    }

    fn tiles(&mut self, keys: &[(u8, u64)]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        self.live()?;
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let levels: Vec<i16> = keys.iter().map(|k| i16::from(k.0)).collect();
        let idx: Vec<i64> = keys
            .iter()
            .map(|k| k.1.min(i64::MAX as u64) as i64)
            .collect();
        let st = self.prepared(
            "SELECT k.level, k.idx, t.data FROM unnest($1::int2[], $2::int8[]) AS k(level, idx) \
             JOIN chit_log_tiles t ON t.level = k.level AND t.idx = k.idx",
        )?;
        let found: HashMap<(i16, i64), Vec<u8>> = self
            .client
            .query(&st, &[&levels, &idx])
            .map_err(read_err)?
            .iter()
            .map(|r| ((r.get(0), r.get(1)), r.get(2)))
            .collect();
        Ok(levels
            .iter()
            .zip(&idx)
            .map(|(l, i)| found.get(&(*l, *i)).cloned())
            .collect())
    }
}

impl Index for PgStore {
    fn lookup(
        &mut self,
        digests: &[Hash],
        at: &[(String, i64)],
        named: &[(String, String)],
    ) -> Result<(Vec<Option<u64>>, Vec<PacketRow>), StoreError> {
        self.live()?;
        if digests.is_empty() && at.is_empty() && named.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        // One query, three parts told apart by the first column: the
        // entries found (sha256 in column 1, idx in 5), then the packets at
        // each place and by each id (columns 1-5 as to_packet reads them;
        // each lookup fenced by `OFFSET 0`, so that the planner does not
        // flatten it into a hash join over the whole table, which it
        // prefers when a log holds one long stream, at ten times the cost).
        let st = self.prepared(
            "SELECT 0, sha256, NULL::int8, NULL::bytea, NULL::bytea, idx \
               FROM chit_log_entries WHERE sha256 = ANY($1::bytea[]) \
             UNION ALL \
             SELECT 1, p.stream_id, p.sequence, p.packet_id, p.prev_packet_id, p.idx \
               FROM unnest($2::bytea[], $3::int8[]) AS k(s, v) CROSS JOIN LATERAL \
               (SELECT * FROM chit_log_packets q WHERE q.stream_id = k.s AND q.sequence = k.v OFFSET 0) p \
             UNION ALL \
             SELECT 1, p.stream_id, p.sequence, p.packet_id, p.prev_packet_id, p.idx \
               FROM unnest($4::bytea[], $5::bytea[]) AS k(s, v) CROSS JOIN LATERAL \
               (SELECT * FROM chit_log_packets q WHERE q.stream_id = k.s AND q.packet_id = k.v OFFSET 0) p",
        )?;
        let keys: Vec<&[u8]> = digests.iter().map(|d| &d[..]).collect();
        let at_s: Vec<&[u8]> = at.iter().map(|k| k.0.as_bytes()).collect();
        let at_v: Vec<i64> = at.iter().map(|k| k.1).collect();
        let named_s: Vec<&[u8]> = named.iter().map(|k| k.0.as_bytes()).collect();
        let named_v: Vec<&[u8]> = named.iter().map(|k| k.1.as_bytes()).collect();
        let rows = self
            .client
            .query(&st, &[&keys, &at_s, &at_v, &named_s, &named_v])
            .map_err(read_err)?;
        let mut found: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut packets = Vec::new();
        for r in &rows {
            if r.get::<_, i32>(0) == 0 {
                found.insert(r.get(1), r.get::<_, i64>(5) as u64);
            } else {
                packets.push(packet_from(r, 1));
            }
        }
        let found = digests.iter().map(|d| found.get(&d[..]).copied()).collect();
        Ok((found, packets))
    }

    fn stream(&mut self, stream_id: &str, limit: u32) -> Result<Vec<PacketRow>, StoreError> {
        self.live()?;
        let st = self.prepared(
            "SELECT stream_id, sequence, packet_id, prev_packet_id, idx \
             FROM chit_log_packets WHERE stream_id = $1 ORDER BY sequence LIMIT $2",
        )?;
        let rows = self
            .client
            .query(&st, &[&stream_id.as_bytes(), &i64::from(limit)])
            .map_err(read_err)?;
        Ok(rows.iter().map(to_packet).collect())
    }

    fn packets(
        &mut self,
        each: &mut dyn FnMut(PacketRow) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.live()?;
        use postgres::fallible_iterator::FallibleIterator;
        let none: [&(dyn postgres::types::ToSql + Sync); 0] = [];
        let mut rows = self
            .client
            .query_raw(
                "SELECT stream_id, sequence, packet_id, prev_packet_id, idx \
                 FROM chit_log_packets ORDER BY stream_id, sequence",
                none,
            )
            .map_err(read_err)?;
        while let Some(r) = rows.next().map_err(read_err)? {
            each(to_packet(&r))?;
        }
        Ok(())
    }

    fn search(&mut self, q: &Query) -> Result<Vec<Hit>, StoreError> {
        self.live()?;
        let after = q.after.map(|a| a.min(i64::MAX as u64) as i64).unwrap_or(-1);
        let stream = q.stream_id.as_deref().map(str::as_bytes);
        let limit = i64::from(q.limit);
        let rows = self
            .client
            .query(
                "SELECT idx, kind, art_id, stream_id, integrated_at FROM chit_log_labels \
                 WHERE ($1::text IS NULL OR kind = $1) AND ($2::text IS NULL OR art_id = $2) \
                 AND ($3::bytea IS NULL OR stream_id = $3) AND ($4::int8 IS NULL OR integrated_at >= $4) \
                 AND ($5::int8 IS NULL OR integrated_at < $5) AND idx > $6 ORDER BY idx LIMIT $7",
                &[&q.kind, &q.art_id, &stream, &q.since, &q.until, &after, &limit],
            )
            .map_err(read_err)?;
        Ok(rows
            .iter()
            .map(|r| Hit {
                label: Label {
                    index: r.get::<_, i64>(0) as u64,
                    kind: r.get(1),
                    art_id: r.get(2),
                    stream_id: r
                        .get::<_, Option<Vec<u8>>>(3)
                        .map(|v| String::from_utf8_lossy(&v).into_owned()),
                },
                integrated_at: r.get(4),
            })
            .collect())
    }
}

impl Store for PgStore {
    fn create(&mut self, meta: &Meta, checkpoint: &[u8]) -> Result<(), StoreError> {
        self.live()?;
        let schema = self.schema.clone();
        let mut tx = self.client.transaction().map_err(read_err)?;
        tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
            .map_err(|e| {
                StoreError::Write(format!("cannot create schema {schema}: {}", describe(&e)))
            })?;
        let exists: bool = tx
            .query_one(
                "SELECT to_regclass($1) IS NOT NULL",
                &[&format!("{schema}.chit_log_meta")],
            )
            .map_err(read_err)?
            .get(0);
        if exists {
            return Err(StoreError::Exists(self.location.clone()));
        }
        let location = self.location.clone();
        let w = |e: postgres::Error| {
            StoreError::Write(format!("cannot write {location}: {}", describe(&e)))
        };
        tx.batch_execute(SCHEMA).map_err(w)?;
        tx.batch_execute(LEASE_TABLE).map_err(w)?;
        let rows = [
            ("format", Some(crate::FORMAT.to_string())),
            ("origin", Some(meta.origin.clone())),
            ("verifier_key", Some(meta.verifier_key.clone())),
            ("policy", Some(meta.policy.clone())),
            ("key_file", meta.key_file.clone()),
            ("policy_binding", meta.policy_binding.clone()),
        ];
        for (k, v) in rows.iter().filter_map(|(k, v)| v.as_ref().map(|v| (k, v))) {
            tx.execute(
                "INSERT INTO chit_log_meta (key, value) VALUES ($1, $2)",
                &[k, v],
            )
            .map_err(w)?;
        }
        tx.execute("INSERT INTO chit_log_head (id, size) VALUES (0, 0)", &[])
            .map_err(w)?;
        tx.execute(
            "INSERT INTO chit_log_checkpoints (size, note) VALUES (0, $1)",
            &[&checkpoint],
        )
        .map_err(w)?;
        tx.commit().map_err(w)
    }

    fn meta(&mut self) -> Result<Meta, StoreError> {
        self.live()?;
        self.require_log()?;
        let rows = self
            .client
            .query("SELECT key, value FROM chit_log_meta", &[])
            .map_err(read_err)?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        crate::meta_from_rows(&self.location, rows)
    }

    fn bind_policy(&mut self, binding: &str) -> Result<bool, StoreError> {
        self.live()?;
        self.require_log()?;
        let n = self
            .client
            .execute(
                "INSERT INTO chit_log_meta (key, value) VALUES ('policy_binding', $1) \
                 ON CONFLICT (key) DO NOTHING",
                &[&binding],
            )
            .map_err(|e| self.write_err(e))?;
        Ok(n == 1)
    }

    fn checkpoints(&mut self) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.live()?;
        Ok(self
            .client
            .query(
                "SELECT size, note FROM chit_log_checkpoints ORDER BY size",
                &[],
            )
            .map_err(read_err)?
            .iter()
            .map(|r| (r.get::<_, i64>(0) as u64, r.get(1)))
            .collect())
    }

    fn replace_checkpoint(
        &mut self,
        size: u64,
        old: &[u8],
        note: &[u8],
    ) -> Result<bool, StoreError> {
        self.live()?;
        let n = self
            .client
            .execute(
                "UPDATE chit_log_checkpoints SET note = $3 WHERE size = $1 AND note = $2",
                &[&(size as i64), &old, &note],
            )
            .map_err(|e| self.write_err(e))?;
        Ok(n == 1)
    }

    fn commit(&mut self, batch: &Batch<'_>) -> Result<(), StoreError> {
        self.live()?;
        if std::mem::take(&mut self.lease_lost) {
            return Err(StoreError::Fenced(format!(
                "the connection to {} dropped while this sequencer held the lease, which may \
                 have passed on; nothing of this batch was acknowledged",
                self.location
            )));
        }
        let location = self.location.clone();
        let w = |e: postgres::Error| {
            StoreError::Write(format!(
                "cannot write {location}: {}; nothing of this batch was acknowledged",
                describe(&e)
            ))
        };
        // One statement, so one round trip and one implicit transaction:
        // the head moves from the batch's old size to its new one, and
        // every row of the batch is written only where it did (each insert
        // is gated on the head's update). A head another writer moved
        // first (its row lock is waited for, then its new size seen)
        // matches nothing, and nothing is written.
        // A holder's commit applies only while its lease's token is its
        // own (the row share-locked: a taking waits for it, or it sees the
        // taking), and renews the lease.
        self.lease_ready()?;
        let st = self.prepared(
            "WITH head AS (\
               UPDATE chit_log_head SET size = $1 WHERE id = 0 AND size = $2 \
               AND ($21::int8 IS NULL OR EXISTS \
                 (SELECT 1 FROM chit_log_lease WHERE id = 0 AND token = $21 FOR SHARE)) \
               RETURNING size), \
             lease AS (\
               UPDATE chit_log_lease SET until = clock_timestamp() + $22::int8 * interval '1 millisecond' \
               WHERE id = 0 AND token = $21 AND EXISTS (SELECT 1 FROM head)), \
             entries AS (\
               INSERT INTO chit_log_entries (idx, sha256, data, integrated_at) \
               SELECT * FROM unnest($3::int8[], $4::bytea[], $5::bytea[], $6::int8[]) \
               WHERE EXISTS (SELECT 1 FROM head)), \
             tiles AS (\
               INSERT INTO chit_log_tiles (level, idx, data) \
               SELECT * FROM unnest($7::int2[], $8::int8[], $9::bytea[]) \
               WHERE EXISTS (SELECT 1 FROM head) \
               ON CONFLICT (level, idx) DO UPDATE SET data = excluded.data), \
             labels AS (\
               INSERT INTO chit_log_labels (idx, kind, art_id, stream_id, integrated_at) \
               SELECT * FROM unnest($10::int8[], $11::text[], $12::text[], $13::bytea[], $14::int8[]) \
               WHERE EXISTS (SELECT 1 FROM head)), \
             packets AS (\
               INSERT INTO chit_log_packets (stream_id, sequence, packet_id, prev_packet_id, idx) \
               SELECT * FROM unnest($15::bytea[], $16::int8[], $17::bytea[], $18::bytea[], $19::int8[]) \
               WHERE EXISTS (SELECT 1 FROM head)), \
             checkpoint AS (\
               INSERT INTO chit_log_checkpoints (size, note) \
               SELECT $1, $20 WHERE EXISTS (SELECT 1 FROM head)) \
             SELECT (SELECT size FROM chit_log_head WHERE id = 0), (SELECT count(*) FROM head)",
        )?;
        let token = self.token;
        let new_size = batch.new_size() as i64;
        let old_size = batch.old_size as i64;
        let idx: Vec<i64> = batch.entries.iter().map(|e| e.index as i64).collect();
        let sha: Vec<&[u8]> = batch.entries.iter().map(|e| &e.sha256[..]).collect();
        let data: Vec<&[u8]> = batch.entries.iter().map(|e| e.data).collect();
        let at: Vec<i64> = batch.entries.iter().map(|e| e.integrated_at).collect();
        let levels: Vec<i16> = batch.tiles.iter().map(|t| i16::from(t.0)).collect();
        let tidx: Vec<i64> = batch.tiles.iter().map(|t| t.1 as i64).collect();
        let tdata: Vec<&[u8]> = batch.tiles.iter().map(|t| &t.2[..]).collect();
        let ls = &batch.labels;
        let label_at = batch.entries.first().map(|e| e.integrated_at).unwrap_or(0);
        let li: Vec<i64> = ls.iter().map(|l| l.index as i64).collect();
        let lk: Vec<&str> = ls.iter().map(|l| l.kind.as_str()).collect();
        let la: Vec<Option<&str>> = ls.iter().map(|l| l.art_id.as_deref()).collect();
        let lsi: Vec<Option<&[u8]>> = ls
            .iter()
            .map(|l| l.stream_id.as_deref().map(str::as_bytes))
            .collect();
        let lt: Vec<i64> = vec![label_at; ls.len()];
        let ps = &batch.packets;
        let ps_s: Vec<&[u8]> = ps.iter().map(|p| p.stream_id.as_bytes()).collect();
        let ps_n: Vec<i64> = ps.iter().map(|p| p.sequence).collect();
        let ps_id: Vec<&[u8]> = ps.iter().map(|p| p.packet_id.as_bytes()).collect();
        let ps_prev: Vec<Option<&[u8]>> = ps
            .iter()
            .map(|p| p.prev_packet_id.as_deref().map(str::as_bytes))
            .collect();
        let ps_i: Vec<i64> = ps.iter().map(|p| p.index as i64).collect();
        let row = self
            .client
            .query_one(
                &st,
                &[
                    &new_size,
                    &old_size,
                    &idx,
                    &sha,
                    &data,
                    &at,
                    &levels,
                    &tidx,
                    &tdata,
                    &li,
                    &lk,
                    &la,
                    &lsi,
                    &lt,
                    &ps_s,
                    &ps_n,
                    &ps_id,
                    &ps_prev,
                    &ps_i,
                    &batch.checkpoint,
                    &token,
                    &(LEASE_TTL.as_millis() as i64),
                ],
            )
            .map_err(w)?;
        if row.get::<_, i64>(1) == 1 {
            return Ok(());
        }
        if let Some(mine) = self.token {
            // Read again, past the statement's snapshot: a taking that the
            // token's row lock waited for is seen only now.
            let now: Option<i64> = self
                .client
                .query_opt("SELECT token FROM chit_log_lease WHERE id = 0", &[])
                .map_err(read_err)?
                .map(|r| r.get(0));
            if now != Some(mine) {
                // Stepped down: the next batch waits its turn again.
                self.token = None;
                return Err(StoreError::Fenced(format!(
                    "another sequencer took the lease of {} while this one was silent for over \
                     {} s (paused or cut off); nothing of this batch was acknowledged",
                    self.location,
                    LEASE_TTL.as_secs()
                )));
            }
        }
        // Not moved: the size it holds (the statement's snapshot, taken
        // before any writer waited for committed) is told as the conflict.
        let found: Option<i64> = row.get(0);
        Err(StoreError::Conflict {
            expected: batch.old_size,
            found: found.map(|f| f as u64).unwrap_or(batch.old_size + 1),
        })
    }

    fn release(&mut self) -> Result<(), StoreError> {
        let Some(token) = self.token.take() else {
            return Ok(());
        };
        self.live()?;
        // Given back and said so: a waiting sequencer takes it at once.
        let st = self.prepared(
            "WITH r AS (UPDATE chit_log_lease SET pid = NULL, until = clock_timestamp() \
             WHERE id = 0 AND token = $1 RETURNING 1) \
             SELECT pg_notify($2, '') FROM r",
        )?;
        let channel = self.lease_channel();
        self.client
            .query(&st, &[&token, &channel])
            .map_err(read_err)?;
        Ok(())
    }

    fn lease(&mut self, wait: std::time::Duration) -> Result<(), StoreError> {
        self.live()?;
        self.require_log()?;
        self.lease_ready()?;
        let deadline = std::time::Instant::now() + wait;
        loop {
            // Hand-overs heard before this try are stale; one heard after
            // it wakes the wait below.
            while self
                .client
                .notifications()
                .iter()
                .next()
                .map_err(read_err)?
                .is_some()
            {}
            if let Some(token) = self.try_lease()? {
                self.token = Some(token);
                self.lease_lost = false;
                return Ok(());
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(StoreError::Write(format!(
                    "another process is sequencing {} (it holds the sequencer's lease); \
                     try again when it finishes, or append through it",
                    self.location
                )));
            }
            // Woken by a hand-over, or in LEASE_POLL to find one expired.
            self.client
                .notifications()
                .timeout_iter(left.min(LEASE_POLL))
                .next()
                .map_err(read_err)?;
        }
    }

    fn write_blocked(&mut self) -> Option<String> {
        if let Err(e) = self.live() {
            return Some(e.to_string());
        }
        let row = self
            .client
            .query_one(
                "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'",
                &[],
            )
            .map_err(|e| format!("cannot ask PostgreSQL whether it takes writes: {e}"));
        match row {
            Err(why) => Some(why),
            Ok(r) => {
                let (standby, read_only): (bool, bool) = (r.get(0), r.get(1));
                (standby || read_only).then(|| {
                    format!(
                        "{} takes no writes ({})",
                        self.location(),
                        if standby {
                            "a standby in recovery"
                        } else {
                            "its sessions are read-only"
                        }
                    )
                })
            }
        }
    }
}

#[cfg(test)]
mod location_tests {
    use super::parse_location;

    /// chit's schema comes out of the URL; other parameters stay for
    /// PostgreSQL; messages show no password.
    #[test]
    fn the_schema_and_the_password_come_out() {
        let (pg, schema, shown) = parse_location(
            "postgres://me:secret@db.example:5432/test?sslmode=disable&schema=log_a",
        )
        .unwrap();
        assert_eq!(
            pg,
            "postgres://me:secret@db.example:5432/test?sslmode=disable"
        );
        assert_eq!(schema, "log_a");
        assert_eq!(shown, "postgres://me@db.example:5432/test (schema log_a)");
        let (pg, schema, shown) = parse_location("postgresql://127.0.0.1/test").unwrap();
        assert_eq!(pg, "postgresql://127.0.0.1/test");
        assert_eq!(schema, "public");
        assert_eq!(shown, "postgresql://127.0.0.1/test (schema public)");
        for bad in ["Log", "1log", "a-b", ""] {
            let url = format!("postgres://h/test?schema={bad}");
            assert!(parse_location(&url).is_err(), "{bad}");
        }
        assert!(parse_location("postgres://[bad").is_err());
        // Escapes go to PostgreSQL as written.
        let (pg, _, _) = parse_location("postgres://h/test?options=-c%20a%3Don&schema=s").unwrap();
        assert_eq!(pg, "postgres://h/test?options=-c%20a%3Don");
    }
}
