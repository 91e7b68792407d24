//! `chit log audit`: holding a log to what it signed.
//!
//! The steps, over a store or a folder of tiles:
//!
//! 1. `checkpoint`: the latest signed checkpoint opens with the log's key
//!    (and the witnesses asked for);
//! 2. `policy` (stores): the stored policy is the one the log's key bound
//!    ([`crate::binding`]): a byte of it changed, or its binding removed,
//!    is named;
//! 3. `entries`: every entry up to its size is read and hashed: a missing
//!    index, an entry whose bytes are not those the tree holds, or a row
//!    the checkpoint does not cover is named by its index;
//! 4. `tiles`: every stored hash tile is recomputed from the entries;
//! 5. `root`: the recomputed root must be the signed one;
//! 6. `history`: every checkpoint the source keeps must be signed by the
//!    log and have the root the entries give at its size;
//! 7. `consistency`: the last checkpoint this auditor saw (its state file)
//!    must be a prefix of the new one: the recomputed root at its size is
//!    its root, and the consistency proof from the tiles verifies. A
//!    rewritten history or a split view is reported with both signed
//!    checkpoints as evidence;
//! 8. `index` (stores): every row of a content index kept apart from the
//!    entries maps an address to the entry that has it, and every entry
//!    below the index's bound has its row (else a duplicate would be
//!    appended again, or answered with another entry's index); with
//!    `reverify`, the art-id index too;
//! 9. `streams`: the packet streams' gaps (P3) that remain (stores); with
//!    `reverify`, every packet row is the one its entry gives, and every
//!    logged packet has one (P1, P2 and P4 are checked against them);
//! 10. `reverify` (optional): every entry is checked again under the log's
//!     policy, and its search label held to its verdict (`labels`);
//! 11. `published` (a log folder): what its `public/` folder serves is the
//!     log: its checkpoint is signed by the log's key and signs the tree
//!     the entries give at its size, and its right edge's partial tiles
//!     and bundle give that checkpoint's root (its full ones are those
//!     the entries were read from and the tiles held to).
//!
//! Memory: entries are streamed; the tree is recomputed with its right edge
//! (`O(log n)` hashes) and one 32-byte leaf hash per entry read (for the
//! tiles), never per entry a checkpoint merely claims.

use crate::policy::{Admission, Compiled};
use crate::store::{Index, PacketRow, Store, Tree};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use chit_log::checkpoint::{open_checkpoint, Checkpoint, SignedCheckpoint};
use chit_log::note::NoteVerifier;
use chit_log::tiles::{self, Tile, TileKind, TILE_WIDTH};
use chit_log::tree::{self, leaf_hash, CompactRange, Hash};
use chit_log::CosignatureVerifier;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Called for each entry a source holds: its index, bytes and the content
/// address stored beside it (if any).
pub type EachEntry<'a> = dyn FnMut(u64, &[u8], Option<Hash>) -> Result<(), SourceError> + 'a;

/// Why what an audit reads could not be read (what it found wrong in what
/// it read is a [`Problem`]).
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Store(#[from] crate::StoreError),
    #[error("{}: {source}", .path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A served log's file could not be fetched.
    #[error("{url}: {why}")]
    Fetch { url: String, why: String },
    #[error("{0} has no checkpoint")]
    NoCheckpoint(String),
    #[error("{path}: {why}")]
    Tile { path: String, why: String },
    #[error("its checkpoint: {0}")]
    Checkpoint(String),
    #[error("the source gave entry {0} twice or out of order")]
    OutOfOrder(u64),
    /// An entry bundle that is not one: what the log serves is wrong (a
    /// finding of the audit, not a source it cannot read).
    #[error("{path} is not a valid entry bundle ({why})")]
    DamagedBundle { path: String, why: String },
    /// A hash tile that is not one (a finding, as a damaged bundle).
    #[error("{path} is not a valid hash tile ({why})")]
    DamagedTile { path: String, why: String },
}

/// Why an audit could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("the latest checkpoint of {log}: {why}")]
    Head { log: String, why: String },
    #[error("the saved checkpoint: {0}")]
    Saved(String),
}

/// Why an auditor's saved state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot read the audit state {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the audit state {} is not chit's: {source}", .path.display())]
    NotChits {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "the audit state {} is for log key {found}, not {wanted}; use another --state",
        .path.display()
    )]
    OtherLog {
        path: PathBuf,
        found: String,
        wanted: String,
    },
    #[error("the audit state {} has no checkpoint", .0.display())]
    NoCheckpoint(PathBuf),
    #[error("cannot create {}: {source}", .path.display())]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the state file {} is damaged: {why}; move it aside to start again", .path.display())]
    Damaged { path: PathBuf, why: String },
    #[error(
        "{} is not a regular file; chit replaces only the state file it wrote",
        .0.display()
    )]
    NotAFile(PathBuf),
    #[error("cannot write the state file {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What an audit reads: a store, or a folder of tiles.
pub trait Source {
    fn describe(&self) -> String;
    /// The latest signed checkpoint.
    fn head(&mut self) -> Result<Vec<u8>, SourceError>;
    /// Every other signed checkpoint it keeps, as `(size, note)`.
    fn history(&mut self) -> Result<Vec<(u64, Vec<u8>)>, SourceError>;
    /// Every entry it holds from index 0 in order, with the content
    /// address it stores beside it (if any); `size` is the checkpoint's.
    fn scan(&mut self, size: u64, each: &mut EachEntry) -> Result<(), SourceError>;
    /// A stored hash tile (at least `width` hashes), if it has one.
    fn tile(&mut self, level: u8, index: u64, width: u16) -> Result<Option<Vec<u8>>, SourceError>;
    /// The logged packets by stream then sequence, to `each`, where it
    /// keeps them (false where it does not).
    fn packets(&mut self, each: &mut dyn FnMut(&PacketRow)) -> Result<bool, SourceError>;
    /// The size the source holds now (it may have grown during the audit).
    fn size_now(&mut self) -> Result<u64, SourceError>;
    /// The log's description, where it keeps one (a folder of tiles does
    /// not): its policy and the policy's binding.
    fn meta(&mut self) -> Result<Option<crate::store::Meta>, SourceError> {
        Ok(None)
    }
    /// The rows of an index kept apart from what it indexes
    /// ([`crate::Index::index_rows`]), and the size it covers; None where none.
    fn index_rows(
        &mut self,
        kind: crate::store::IndexKind,
        each: &mut dyn FnMut(i64, &[u8]),
    ) -> Result<Option<u64>, SourceError> {
        let _ = (kind, each);
        Ok(None)
    }
    /// Every entry's search label, in index order, to `each`, where it
    /// keeps them (false where it does not: a folder of tiles).
    fn labels(&mut self, each: &mut dyn FnMut(&crate::store::Label)) -> Result<bool, SourceError> {
        let _ = each;
        Ok(false)
    }
}

impl Source for Box<dyn Store> {
    fn describe(&self) -> String {
        self.location()
    }
    fn meta(&mut self) -> Result<Option<crate::store::Meta>, SourceError> {
        Ok(Some(Store::meta(&mut **self)?))
    }
    fn index_rows(
        &mut self,
        kind: crate::store::IndexKind,
        each: &mut dyn FnMut(i64, &[u8]),
    ) -> Result<Option<u64>, SourceError> {
        Ok(Index::index_rows(&mut **self, kind, &mut |i, k| {
            each(i, k);
            Ok(())
        })?)
    }
    fn labels(&mut self, each: &mut dyn FnMut(&crate::store::Label)) -> Result<bool, SourceError> {
        const PAGE: u32 = 10_000;
        let mut after = None;
        loop {
            let hits = self.search(&crate::store::Query {
                after,
                limit: PAGE,
                ..Default::default()
            })?;
            for h in &hits {
                each(&h.label);
            }
            match hits.last() {
                Some(h) if hits.len() == PAGE as usize => after = Some(h.label.index),
                _ => return Ok(true),
            }
        }
    }
    fn head(&mut self) -> Result<Vec<u8>, SourceError> {
        Ok(Tree::head(&mut **self).map(|(_, n)| n)?)
    }
    fn history(&mut self) -> Result<Vec<(u64, Vec<u8>)>, SourceError> {
        Ok(self.checkpoints()?)
    }
    fn scan(&mut self, _size: u64, each: &mut EachEntry) -> Result<(), SourceError> {
        // The callback's own error, kept whole past the store's scan.
        let mut failure = None;
        let r = Tree::scan(&mut **self, 0, u64::MAX, &mut |e| {
            each(e.index, &e.data, Some(e.sha256)).map_err(|why| {
                let said = why.to_string();
                failure = Some(why);
                crate::StoreError::Read(said)
            })
        });
        match (r, failure) {
            (_, Some(why)) => Err(why),
            (Err(crate::StoreError::Damaged { path, why }), None) => {
                Err(SourceError::DamagedBundle { path, why })
            }
            (Err(e), None) => Err(e.into()),
            (Ok(()), None) => Ok(()),
        }
    }
    fn tile(&mut self, level: u8, index: u64, _width: u16) -> Result<Option<Vec<u8>>, SourceError> {
        match Tree::tile(&mut **self, level, index) {
            Err(crate::StoreError::Damaged { path, why }) => {
                Err(SourceError::DamagedTile { path, why })
            }
            other => Ok(other?),
        }
    }
    fn packets(&mut self, each: &mut dyn FnMut(&PacketRow)) -> Result<bool, SourceError> {
        Index::packets(&mut **self, &mut |p| {
            each(&p);
            Ok(())
        })?;
        Ok(true)
    }
    fn size_now(&mut self) -> Result<u64, SourceError> {
        Ok(Tree::head(&mut **self).map(|(s, _)| s)?)
    }
}

/// A log read as tlog-tiles files by their paths (`checkpoint`,
/// `tile/…`): a folder `chit log export-tiles` wrote, or a server. Only
/// what any tiles client sees: no other checkpoints, no packet labels.
pub trait TileFiles {
    fn describe(&self) -> String;
    /// The file at `path`, or None where there is none.
    fn read(&mut self, path: &str) -> Result<Option<Vec<u8>>, SourceError>;
    /// The files at `paths` will be read next: a source that can start
    /// reading them now, while its reader works on what it has, may.
    fn prefetch(&mut self, _paths: &[String]) {}
}

impl<T: TileFiles + ?Sized> Source for T {
    fn describe(&self) -> String {
        TileFiles::describe(self)
    }
    fn head(&mut self) -> Result<Vec<u8>, SourceError> {
        let d = TileFiles::describe(self);
        self.read("checkpoint")?.ok_or(SourceError::NoCheckpoint(d))
    }
    fn history(&mut self) -> Result<Vec<(u64, Vec<u8>)>, SourceError> {
        Ok(Vec::new())
    }
    fn scan(&mut self, size: u64, each: &mut EachEntry) -> Result<(), SourceError> {
        let w = u64::from(TILE_WIDTH);
        let mut index = 0u64;
        for n in 0..size.div_ceil(w) {
            let width = (size - n * w).min(w) as u16;
            let tile = Tile {
                kind: TileKind::Entries,
                index: n,
                width,
            };
            let data = match self.read(&tile.path())? {
                Some(d) => d,
                // Missing from here on: the caller reports the range (a
                // checkpoint claiming a huge size costs no more than this).
                None => return Ok(()),
            };
            let entries = tiles::parse_entry_bundle(&data, width).map_err(|e| {
                SourceError::DamagedBundle {
                    path: tile.path(),
                    why: e.to_string(),
                }
            })?;
            for e in entries {
                each(index, e, None)?;
                index += 1;
            }
        }
        Ok(())
    }
    fn tile(&mut self, level: u8, index: u64, width: u16) -> Result<Option<Vec<u8>>, SourceError> {
        let t = Tile {
            kind: TileKind::Hashes(level),
            index,
            width,
        };
        // A wider tile read for this one holds its hashes first.
        let data = read_tile(self, &t)?.map(|(mut d, served)| {
            if served > width {
                d.truncate(usize::from(width) * 32);
            }
            d
        });
        let want = usize::from(width) * 32;
        match data {
            Some(d) if d.len() != want => Err(SourceError::DamagedTile {
                path: t.path(),
                why: format!("{} bytes, not {want}", d.len()),
            }),
            other => Ok(other),
        }
    }
    fn packets(&mut self, _each: &mut dyn FnMut(&PacketRow)) -> Result<bool, SourceError> {
        Ok(false)
    }
    fn size_now(&mut self) -> Result<u64, SourceError> {
        let note = Source::head(self)?;
        Checkpoint::from_note(&note)
            .map(|c| c.size)
            .map_err(|e| SourceError::Checkpoint(e.to_string()))
    }
}

/// A tile's bytes and the width they hold: the tile as asked, or, where a
/// partial tile is no longer served (a log may drop one once it grew), the
/// wider one the source serves now (its checkpoint says which), whose
/// first hashes or entries are the partial one's; what is read is proven
/// by what it is used for, not by where it came from. `None` when neither
/// is served.
pub(crate) fn read_tile<T: TileFiles + ?Sized>(
    src: &mut T,
    tile: &Tile,
) -> Result<Option<(Vec<u8>, u16)>, SourceError> {
    if let Some(data) = src.read(&tile.path())? {
        return Ok(Some((data, tile.width)));
    }
    if tile.width >= TILE_WIDTH {
        return Ok(None);
    }
    let size_now = src
        .read("checkpoint")?
        .and_then(|n| Checkpoint::from_note(&n).ok())
        .map_or(0, |c| c.size);
    let level = match tile.kind {
        TileKind::Hashes(l) => u32::from(l),
        TileKind::Entries => 0,
    };
    let count = size_now.checked_shr(8 * level).unwrap_or(0);
    let first = tile.index.saturating_mul(u64::from(TILE_WIDTH));
    let width = count.saturating_sub(first).min(u64::from(TILE_WIDTH)) as u16;
    if width <= tile.width {
        return Ok(None);
    }
    let wider = Tile { width, ..*tile };
    Ok(src.read(&wider.path())?.map(|data| (data, width)))
}

/// A consistency proof from size `m` to `n`, from `src`'s hash tiles of the
/// tree of `n` leaves (untrusted: it holds only if it verifies).
pub(crate) fn consistency_from_tiles<S: Source + ?Sized>(
    src: &mut S,
    m: u64,
    n: u64,
) -> Result<Vec<Hash>, String> {
    let cell = std::cell::RefCell::new(src);
    let tiles = chit_log::tiles::TileSource::new(n, |t: &Tile| {
        let TileKind::Hashes(l) = t.kind else {
            return Err("not a hash tile".to_string());
        };
        cell.borrow_mut()
            .tile(l, t.index, t.width)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("tile {} is missing", t.path()))
    });
    tree::consistency_proof(&tiles, m, n).map_err(|e| e.to_string())
}

/// A folder of tiles, as `chit log export-tiles` writes it (or any
/// tlog-tiles log mirrored to disk).
pub struct TilesDir {
    pub root: PathBuf,
}

impl TileFiles for TilesDir {
    fn describe(&self) -> String {
        self.root.display().to_string()
    }
    /// The file, at most as large as a full bundle can be; anything else
    /// there (a FIFO, a device, a larger file) is no file of a log. A link
    /// is followed: a mirror may be made of them.
    fn read(&mut self, rel: &str) -> Result<Option<Vec<u8>>, SourceError> {
        let cap = crate::folder::MAX_TREE_FILE.max(crate::folder::MAX_CHECKPOINT);
        Ok(crate::folder::read_file_following(
            &self.root.join(rel),
            cap,
        )?)
    }
}

/// One thing an audit found wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The step that found it (see the module documentation).
    pub step: &'static str,
    /// The entry it is about, if one.
    pub index: Option<u64>,
    pub message: String,
    /// Signed checkpoints that prove it (a rewritten history, a split view).
    pub evidence: Vec<Vec<u8>>,
}

/// What an audit found.
#[derive(Debug)]
pub struct AuditReport {
    pub source: String,
    pub size: u64,
    pub root: Hash,
    /// The latest checkpoint, as signed.
    pub checkpoint: Vec<u8>,
    pub opened: Option<SignedCheckpoint>,
    pub problems: Vec<Problem>,
    /// Packet stream gaps that remain (P3), one line per stream.
    pub gaps: Vec<String>,
    /// The size of the earlier checkpoint proven a prefix of this one.
    pub consistent_from: Option<u64>,
    /// With `reverify`: (valid, refused) entries.
    pub reverified: Option<(u64, u64)>,
    pub entries_hashed: u64,
    pub bytes_hashed: u64,
}

impl AuditReport {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// What the auditor brings.
pub struct Options<'a> {
    pub verifier: &'a NoteVerifier,
    /// The witnesses and quorum the latest checkpoint is held to (a C2SP
    /// tlog-policy; its log lines are not read here); `None` asks for no
    /// cosignature.
    pub trust: Option<&'a chit_log::policy::Policy>,
    /// The last checkpoint this auditor saw of this log.
    pub previous: Option<&'a [u8]>,
    /// Check every entry again under this policy.
    pub reverify: Option<&'a Compiled>,
    /// Called with the number of entries read so far.
    pub progress: &'a (dyn Fn(u64) + Sync),
    /// A log folder's `public/` folder, held to the log (step 11).
    pub published: Option<&'a Path>,
}

/// Step `policy`: the stored policy is the one the log's key bound.
fn check_policy(
    src: &mut dyn Source,
    opts: &Options,
    origin: &str,
    problems: &mut Vec<Problem>,
) -> Result<(), AuditError> {
    let Some(meta) = src.meta()? else {
        return Ok(());
    };
    let bound = crate::binding::check(
        opts.verifier,
        origin,
        &meta.policy,
        meta.policy_binding.as_deref(),
    );
    if let Err(why) = bound {
        problems.push(Problem {
            step: "policy",
            index: None,
            message: why.to_string(),
            evidence: meta
                .policy_binding
                .map(String::into_bytes)
                .into_iter()
                .collect(),
        });
    }
    Ok(())
}

/// Recomputes every hash tile from the leaves and compares it with the
/// stored one.
struct TileCheck {
    bufs: Vec<Vec<u8>>,
    next: Vec<u64>,
    /// Whether the entries give the root the checkpoint signs: then a
    /// tile that differs is itself damaged, and no entry is to blame.
    entries_signed: bool,
}

impl TileCheck {
    fn push(
        &mut self,
        src: &mut dyn Source,
        level: usize,
        h: Hash,
        problems: &mut Vec<Problem>,
    ) -> Result<(), SourceError> {
        if self.bufs.len() <= level {
            self.bufs.resize(level + 1, Vec::new());
            self.next.resize(level + 1, 0);
        }
        self.bufs[level].extend_from_slice(&h);
        if self.bufs[level].len() == usize::from(TILE_WIDTH) * 32 {
            let full = std::mem::take(&mut self.bufs[level]);
            let index = self.next[level];
            self.next[level] += 1;
            compare_tile(
                src,
                level as u8,
                index,
                &full,
                self.entries_signed,
                problems,
            )?;
            self.push(src, level + 1, crate::log::tile_root(&full), problems)?;
        }
        Ok(())
    }

    fn finish(
        &mut self,
        src: &mut dyn Source,
        problems: &mut Vec<Problem>,
    ) -> Result<(), SourceError> {
        for level in 0..self.bufs.len() {
            if !self.bufs[level].is_empty() {
                let buf = std::mem::take(&mut self.bufs[level]);
                let next = self.next[level];
                compare_tile(src, level as u8, next, &buf, self.entries_signed, problems)?;
            }
        }
        Ok(())
    }
}

fn compare_tile(
    src: &mut dyn Source,
    level: u8,
    index: u64,
    want: &[u8],
    entries_signed: bool,
    problems: &mut Vec<Problem>,
) -> Result<(), SourceError> {
    let width = (want.len() / 32) as u16;
    let path = Tile {
        kind: TileKind::Hashes(level),
        index,
        width,
    }
    .path();
    let have = match src.tile(level, index, width) {
        Err(SourceError::DamagedTile { path, why }) => {
            problems.push(Problem {
                step: "tiles",
                index: None,
                message: format!("hash tile {path} is damaged: {why}"),
                evidence: vec![],
            });
            return Ok(());
        }
        other => other?,
    };
    match have {
        None => problems.push(Problem {
            step: "tiles",
            index: None,
            message: format!("hash tile {path} is missing"),
            evidence: vec![],
        }),
        Some(have) if have.len() < want.len() || have[..want.len()] != *want => {
            // Name the first node that differs; at level 0, the entry,
            // unless the entries give the signed root: then the tile is
            // what was damaged.
            let at = (0..usize::from(width))
                .find(|&i| have.get(i * 32..i * 32 + 32) != Some(&want[i * 32..i * 32 + 32]))
                .unwrap_or(0);
            if entries_signed {
                problems.push(Problem {
                    step: "tiles",
                    index: None,
                    message: format!(
                        "hash tile {path} is damaged at position {at}: the entries give the root the \
                         checkpoint signs, and this tile does not hold their hashes"
                    ),
                    evidence: vec![],
                });
                return Ok(());
            }
            let index_named = (level == 0).then(|| index * u64::from(TILE_WIDTH) + at as u64);
            problems.push(Problem {
                step: "tiles",
                index: index_named,
                message: match index_named {
                    Some(i) => format!(
                        "entry {i}: its bytes are not those the log's tree holds (hash tile {path}, position {at})"
                    ),
                    None => format!("hash tile {path} does not match the entries (position {at})"),
                },
                evidence: vec![],
            });
        }
        Some(_) => {}
    }
    Ok(())
}

fn short(h: &Hash) -> String {
    B64.encode(h)
}

/// Runs the audit (see the module documentation).
pub fn audit(src: &mut dyn Source, opts: &Options) -> Result<AuditReport, AuditError> {
    let origin = chit_log::note::Verifier::name(opts.verifier).to_string();
    let note = src.head()?;
    let mut report = AuditReport {
        source: src.describe(),
        size: 0,
        root: tree::EMPTY_ROOT,
        checkpoint: note.clone(),
        opened: None,
        problems: Vec::new(),
        gaps: Vec::new(),
        consistent_from: None,
        reverified: None,
        entries_hashed: 0,
        bytes_hashed: 0,
    };
    let size = match open_head(&note, &origin, opts, &mut report) {
        Ok(size) => size,
        // A latest checkpoint that does not verify is the store's word
        // broken, not a store that cannot be read: named, and nothing past
        // it can be held to a signature.
        Err(AuditError::Head { why, .. }) => {
            report.problems.push(Problem {
                step: "checkpoint",
                index: None,
                message: format!(
                    "the log's latest checkpoint does not verify under the log key: {why}"
                ),
                evidence: vec![note.clone()],
            });
            return Ok(report);
        }
        Err(e) => return Err(e),
    };
    let mut problems: Vec<Problem> = Vec::new();
    check_policy(src, opts, &origin, &mut problems)?;
    let history = src.history()?;
    let previous = match opts.previous {
        Some(p) => Some(
            open_checkpoint(p, &origin, opts.verifier, &[])
                .map_err(|e| AuditError::Saved(e.to_string()))?,
        ),
        None => None,
    };
    // Which earlier sizes need their recomputed root.
    let mut wanted: BTreeMap<u64, Option<Hash>> = BTreeMap::new();
    for (s, _) in &history {
        wanted.insert(*s, None);
    }
    if let Some(p) = &previous {
        wanted.insert(p.checkpoint.size, None);
    }
    let published = match opts.published {
        Some(dir) => open_published(dir, &origin, opts, &mut problems),
        None => None,
    };
    if let Some(p) = &published {
        wanted.insert(p.size, None);
    }
    wanted.insert(0, Some(tree::EMPTY_ROOT));
    let content = read_content_index(src, size, &mut problems)?;
    let mut walked = walk_entries(src, opts, size, content, &mut wanted, &mut problems)?;
    report.entries_hashed = walked.count;
    report.bytes_hashed = walked.bytes;
    report.reverified = walked.reverified;
    if opts.reverify.is_some() {
        let arts = &walked.prints.arts;
        check_key_index(
            src,
            KeyIndex::ART,
            &walked.prints.labels,
            |at| arts.get(at).filter(|p| **p != NO_PRINT).copied(),
            |art| print(&[art]),
            size,
            &mut problems,
        )?;
        // Kinds and streams, where a store keeps them apart (half a
        // print each).
        let keys = &walked.prints.keys;
        let half = |at: usize, second: bool| {
            let p = keys.get(at)?;
            let h = if second { &p[8..] } else { &p[..8] };
            (h != [0; 8]).then(|| halved(h))
        };
        check_key_index(
            src,
            KeyIndex::KIND,
            &walked.prints.labels,
            |at| half(at, false),
            |kind| halved(&half_print(kind)),
            size,
            &mut problems,
        )?;
        check_key_index(
            src,
            KeyIndex::STREAM,
            &walked.prints.labels,
            |at| half(at, true),
            |stream| halved(&half_print(stream)),
            size,
            &mut problems,
        )?;
        check_labels(src, &walked.prints.labels, &mut problems)?;
    }
    let leaves = std::mem::take(&mut walked.leaves);
    if walked.first_missing.is_none() {
        let entries_signed = walked.edge.root() == report.root;
        check_tiles(src, &leaves, entries_signed, &mut problems)?;
    }
    drop(leaves);
    check_root(&walked, &note, &report, &mut problems);
    let reach = walked.first_missing.unwrap_or(size);
    let seen = Seen {
        note: &note,
        origin: &origin,
        size,
        reach,
        wanted: &wanted,
    };
    check_history(src, opts, &seen, &history, &mut problems)?;
    if let (Some(dir), Some(p)) = (opts.published, &published) {
        check_published(src, dir, p, &seen, &mut problems)?;
    }
    if let (Some(prev), Some(prev_note)) = (&previous, opts.previous) {
        report.consistent_from =
            check_consistency(src, &seen, prev, prev_note, &report.root, &mut problems);
    }
    // 9. streams
    let mut gaps = Gaps::default();
    let mut rows = PacketRows::new(std::mem::take(&mut walked.prints.packets));
    src.packets(&mut |p| {
        gaps.push(p);
        rows.check(p);
    })?;
    report.gaps = gaps.finish();
    if opts.reverify.is_some() {
        rows.finish(&mut problems);
    }
    report.problems.extend(problems);
    Ok(report)
}

/// Step 1: the latest checkpoint opens with the log's key, and its
/// cosignatures meet the trust policy's quorum. Returns its size.
fn open_head(
    note: &[u8],
    origin: &str,
    opts: &Options,
    report: &mut AuditReport,
) -> Result<u64, AuditError> {
    let witnesses: Vec<CosignatureVerifier> = opts
        .trust
        .map(|p| p.witnesses.iter().map(|w| w.verifier.clone()).collect())
        .unwrap_or_default();
    let opened =
        open_checkpoint(note, origin, opts.verifier, &witnesses).map_err(|e| AuditError::Head {
            log: report.source.clone(),
            why: e.to_string(),
        })?;
    let size = opened.checkpoint.size;
    report.size = size;
    report.root = opened.checkpoint.root;
    if let Some(trust) = opts.trust {
        let cosigners: Vec<usize> = opened.cosignatures.iter().map(|(i, _)| *i).collect();
        if !trust.quorum_met(&cosigners) {
            let names: Vec<&str> = cosigners
                .iter()
                .map(|i| trust.witnesses[*i].name.as_str())
                .collect();
            report.problems.push(Problem {
                step: "witnesses",
                index: None,
                message: format!(
                    "the cosignatures of the checkpoint of size {size} ({}) do not meet the \
                     policy's quorum ({})",
                    if names.is_empty() {
                        "none by the policy's witnesses".to_string()
                    } else {
                        format!("by {}", names.join(", "))
                    },
                    trust.quorum_text()
                ),
                evidence: vec![note.to_vec()],
            });
        }
    }
    report.opened = Some(opened);
    Ok(size)
}

/// What walking the entries found: the tree's edge and every leaf hash
/// (32 bytes each, for the tiles, which need the source again), where the
/// first missing entry is (past it the tree cannot be recomputed, so only
/// the entries themselves are still checked), and the counts.
struct Walked {
    edge: CompactRange,
    leaves: Vec<Hash>,
    first_missing: Option<u64>,
    count: u64,
    bytes: u64,
    reverified: Option<(u64, u64)>,
    /// With `reverify`: what each entry's verdict gives its rows.
    prints: Prints,
}

/// No print: an entry refused or missing, or a row it does not have.
const NO_PRINT: [u8; 16] = [0; 16];

/// What each entry's verdict gives its rows, by index ([`NO_PRINT`]
/// where it gives none): the print of its search label, its art id, its
/// packet row, and half a print each of its kind and its stream. 64 bytes
/// an entry, made only with `reverify`.
#[derive(Default)]
struct Prints {
    labels: Vec<[u8; 16]>,
    arts: Vec<[u8; 16]>,
    packets: Vec<[u8; 16]>,
    keys: Vec<[u8; 16]>,
}

/// Half a print of one key (8 bytes), never all zeros (which says
/// "none" in [`Prints::keys`]).
fn half_print(key: &str) -> [u8; 8] {
    let mut h = [0u8; 8];
    h.copy_from_slice(&print(&[key])[..8]);
    if h == [0; 8] {
        h[7] = 1;
    }
    h
}

/// Half a print, padded to a whole one with zeros.
fn halved(h: &[u8]) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&h[..8]);
    out
}

impl Prints {
    fn reserve(&mut self, n: usize) {
        self.labels.reserve_exact(n);
        self.arts.reserve_exact(n);
        self.packets.reserve_exact(n);
        self.keys.reserve_exact(n);
    }

    /// The prints of entry `i` (entries come in index order).
    fn set(&mut self, i: u64, label: [u8; 16], art: [u8; 16], packet: [u8; 16], keys: [u8; 16]) {
        let at = i as usize;
        for (v, p) in [
            (&mut self.labels, label),
            (&mut self.arts, art),
            (&mut self.packets, packet),
            (&mut self.keys, keys),
        ] {
            v.resize(at, NO_PRINT);
            v.push(p);
        }
    }
}

/// A content index kept apart from the entries, read whole before they
/// are walked: the address each row maps to entry `i` (its first 16
/// bytes), at `rows[i]`, and the size it covers.
struct ContentIndex {
    upto: u64,
    rows: Vec<[u8; 16]>,
    /// Entries below `upto` with no row: ranges, first to last.
    missing: Vec<(u64, u64)>,
    wrong: usize,
}

/// Step 2: every entry, hashed as it streams by: in order, each one's
/// bytes against the content address stored beside it, re-verified under
/// the log's policy where asked; entries missing or beyond the checkpoint
/// are problems.
fn walk_entries(
    src: &mut dyn Source,
    opts: &Options,
    size: u64,
    mut content: Option<ContentIndex>,
    wanted: &mut BTreeMap<u64, Option<Hash>>,
    problems: &mut Vec<Problem>,
) -> Result<Walked, AuditError> {
    let mut w = Walked {
        edge: CompactRange::new(),
        leaves: Vec::with_capacity(size.min(1 << 24) as usize),
        first_missing: None,
        count: 0,
        bytes: 0,
        reverified: None,
        prints: Prints::default(),
    };
    let mut again = Recheck::default();
    if opts.reverify.is_some() {
        again.prints.reserve(size.min(1 << 24) as usize);
    }
    let mut beyond: Vec<u64> = Vec::new();
    let mut walk = |i: u64, data: &[u8], sha: Option<Hash>| -> Result<(), SourceError> {
        if i >= size {
            beyond.push(i);
            return Ok(());
        }
        if i < w.count {
            return Err(SourceError::OutOfOrder(i));
        }
        if w.count < i {
            missing(w.count, i, problems);
            w.first_missing.get_or_insert(w.count);
            w.count = i;
        }
        let leaf = leaf_hash(data);
        // The content address, where it is checked.
        let address = (content.is_some() || sha.is_some()).then(|| chit_core::digest::sha256(data));
        if let (Some(index), Some(address)) = (&mut content, &address) {
            index.check(i, address, problems);
        }
        if sha.is_some() && address != sha {
            problems.push(Problem {
                step: "entries",
                index: Some(i),
                message: format!(
                    "entry {i}: its bytes do not match the content address stored beside them"
                ),
                evidence: vec![],
            });
        }
        if w.first_missing.is_none() {
            take_leaf(&mut w.edge, &mut w.leaves, wanted, leaf);
        }
        w.bytes += data.len() as u64;
        w.count += 1;
        if opts.reverify.is_some() {
            again.pending.push((i, data.to_vec()));
            if again.pending.len() >= 4096 {
                reverify(opts, &mut again, problems);
            }
        }
        if w.count.is_multiple_of(65_536) {
            (opts.progress)(w.count);
        }
        Ok(())
    };
    let damaged = match src.scan(size, &mut walk) {
        Err(SourceError::DamagedBundle { path, why }) => Some(format!(
            "{path} is not a valid entry bundle ({why}): entries from {} on cannot be read",
            w.count
        )),
        other => {
            other?;
            None
        }
    };
    reverify(opts, &mut again, problems);
    if let Some(message) = damaged {
        problems.push(Problem {
            step: "entries",
            index: Some(w.count),
            message,
            evidence: vec![],
        });
        w.first_missing.get_or_insert(w.count);
    } else if w.count < size {
        missing(w.count, size, problems);
        w.first_missing.get_or_insert(w.count);
    }
    (opts.progress)(w.count);
    if opts.reverify.is_some() {
        w.reverified = Some((again.checked - again.refused, again.refused));
        w.prints = again.prints;
    }
    if let Some(index) = content {
        index.finish(problems);
    }
    if !beyond.is_empty() {
        // Rows past the checkpoint: new appends, unless the source did not
        // grow to hold them.
        let now = src.size_now()?;
        for i in beyond.into_iter().filter(|&i| i >= now) {
            problems.push(Problem {
                step: "entries",
                index: Some(i),
                message: format!(
                    "entry {i} is in the store but under no checkpoint (the log's size is {now}): a row inserted?"
                ),
                evidence: vec![],
            });
        }
    }
    Ok(w)
}

/// Step 3: each stored hash tile is the one the entries give (only over a
/// whole tree).
fn check_tiles(
    src: &mut dyn Source,
    leaves: &[Hash],
    entries_signed: bool,
    problems: &mut Vec<Problem>,
) -> Result<(), SourceError> {
    let mut tiles = TileCheck {
        bufs: Vec::new(),
        next: Vec::new(),
        entries_signed,
    };
    for h in leaves {
        tiles.push(src, 0, *h, problems)?;
    }
    tiles.finish(src, problems)
}

/// Step 4: the entries give the root the checkpoint signs.
fn check_root(walked: &Walked, note: &[u8], report: &AuditReport, problems: &mut Vec<Problem>) {
    let size = report.size;
    if let Some(from) = walked.first_missing {
        problems.push(Problem {
            step: "root",
            index: Some(from),
            message: format!(
                "the tree of {size} cannot be recomputed: entries are missing from {from}"
            ),
            evidence: vec![note.to_vec()],
        });
        return;
    }
    let root = walked.edge.root();
    if root != report.root {
        problems.push(Problem {
            step: "root",
            index: problems.iter().find_map(|p| p.index),
            message: format!(
                "the entries give root {} for size {size}, but the checkpoint signs {}",
                short(&root),
                short(&report.root)
            ),
            evidence: vec![note.to_vec()],
        });
    }
}

/// What the later steps hold the log to: the latest checkpoint, its
/// size, how far the entries reach, and the roots they gave.
struct Seen<'a> {
    note: &'a [u8],
    origin: &'a str,
    size: u64,
    reach: u64,
    wanted: &'a BTreeMap<u64, Option<Hash>>,
}

/// Step 5: every other checkpoint the store keeps opens with the log's
/// key and signs the tree its entries give at that size.
fn check_history(
    src: &mut dyn Source,
    opts: &Options,
    seen: &Seen,
    history: &[(u64, Vec<u8>)],
    problems: &mut Vec<Problem>,
) -> Result<(), SourceError> {
    let (size, note) = (seen.size, seen.note);
    let mut now: Option<u64> = None;
    for (s, old) in history {
        if *s > size {
            // Committed while this audit read: not a problem, unless the
            // source's own head is behind it.
            let n = match now {
                Some(n) => n,
                None => *now.insert(src.size_now()?),
            };
            if *s <= n {
                continue;
            }
            problems.push(Problem {
                step: "history",
                index: None,
                message: format!(
                    "the store keeps a checkpoint of size {s}, beyond its latest ({size})"
                ),
                evidence: vec![old.clone(), note.to_vec()],
            });
            continue;
        }
        match open_checkpoint(old, seen.origin, opts.verifier, &[]) {
            Err(e) => problems.push(Problem {
                step: "history",
                index: None,
                message: format!(
                    "the stored checkpoint of size {s} does not open with the log's key: {e}"
                ),
                evidence: vec![old.clone()],
            }),
            Ok(o) if o.checkpoint.size != *s => problems.push(Problem {
                step: "history",
                index: None,
                message: format!(
                    "the checkpoint stored for size {s} is of size {}",
                    o.checkpoint.size
                ),
                evidence: vec![old.clone()],
            }),
            Ok(_) if *s > seen.reach => {}
            Ok(o) => {
                if seen.wanted.get(s).copied().flatten() != Some(o.checkpoint.root) {
                    problems.push(Problem {
                        step: "history",
                        index: None,
                        message: format!(
                            "the log signed a different tree of size {s} than its entries give: history rewritten"
                        ),
                        evidence: vec![old.clone(), note.to_vec()],
                    });
                }
            }
        }
    }
    Ok(())
}

/// Step 6: the checkpoint this auditor saw before is a prefix of the
/// latest (a consistency proof from the log's tiles, where it is smaller).
/// Returns the size it was proven consistent from, if it was.
fn check_consistency(
    src: &mut dyn Source,
    seen: &Seen,
    prev: &SignedCheckpoint,
    prev_note: &[u8],
    root: &Hash,
    problems: &mut Vec<Problem>,
) -> Option<u64> {
    let (size, note) = (seen.size, seen.note);
    let (m, r) = (prev.checkpoint.size, prev.checkpoint.root);
    let problem = |message: String| Problem {
        step: "consistency",
        index: None,
        message,
        evidence: vec![prev_note.to_vec(), note.to_vec()],
    };
    if m > size {
        problems.push(problem(format!(
            "the log showed size {m} before and shows {size} now: it shrank (history rewritten)"
        )));
    } else if m > seen.reach {
        // Entries are missing below it: reported above, not provable.
    } else if m == size && r != *root {
        problems.push(problem(format!(
            "two checkpoints of size {size} with different roots: a split view"
        )));
    } else if seen.wanted.get(&m).copied().flatten() != Some(r) {
        problems.push(problem(format!(
            "the checkpoint of size {m} seen before is not a prefix of the one of size {size}: history rewritten"
        )));
    } else if m < size {
        match consistency_from_tiles(src, m, size).and_then(|p| {
            tree::verify_consistency(m, size, &r, root, &p).map_err(|e| e.to_string())
        }) {
            Ok(()) => return Some(m),
            Err(e) => problems.push(problem(format!(
                "the consistency proof from size {m} to {size}, made from the log's tiles, fails: {e}"
            ))),
        }
    } else {
        return Some(m);
    }
    None
}

/// Step 11's start: a log folder's published checkpoint, opened with the
/// log's key (else named, and the step ends).
struct Published {
    note: Vec<u8>,
    size: u64,
    root: Hash,
}

fn open_published(
    dir: &Path,
    origin: &str,
    opts: &Options,
    problems: &mut Vec<Problem>,
) -> Option<Published> {
    let path = dir.join("checkpoint");
    let problem = |message: String, evidence: Vec<Vec<u8>>| Problem {
        step: "published",
        index: None,
        message,
        evidence,
    };
    let note = match crate::folder::read_file(&path, crate::folder::MAX_CHECKPOINT) {
        Ok(Some(n)) => n,
        Ok(None) => {
            problems.push(problem(format!("{} is missing", path.display()), vec![]));
            return None;
        }
        Err(e) => {
            problems.push(problem(e.to_string(), vec![]));
            return None;
        }
    };
    match open_checkpoint(&note, origin, opts.verifier, &[]) {
        Ok(o) => Some(Published {
            size: o.checkpoint.size,
            root: o.checkpoint.root,
            note,
        }),
        Err(e) => {
            problems.push(problem(
                format!("{} does not open with the log's key: {e}", path.display()),
                vec![note],
            ));
            None
        }
    }
}

/// Step 11: the published checkpoint signs the tree the entries give at
/// its size, and the partial tiles and bundle published beside it give its
/// root.
fn check_published(
    src: &mut dyn Source,
    dir: &Path,
    p: &Published,
    seen: &Seen,
    problems: &mut Vec<Problem>,
) -> Result<(), SourceError> {
    // The published checkpoint, and the latest where it is another.
    let mut evidence = vec![p.note.clone()];
    if p.note != seen.note {
        evidence.push(seen.note.to_vec());
    }
    let problem = |message: String| Problem {
        step: "published",
        index: None,
        message,
        evidence: evidence.clone(),
    };
    let shown = dir.join("checkpoint").display().to_string();
    if p.size > seen.size {
        // Published while this audit read: not a problem, unless the
        // store's own head is behind it.
        if p.size > src.size_now()? {
            problems.push(problem(format!(
                "{shown} is of size {}, beyond the log's latest ({})",
                p.size, seen.size
            )));
        }
        return Ok(());
    }
    if p.size <= seen.reach && seen.wanted.get(&p.size).copied().flatten() != Some(p.root) {
        problems.push(problem(format!(
            "{shown} signs a different tree of size {} than the log's entries give",
            p.size
        )));
        return Ok(());
    }
    // The right edge, from the published files alone.
    let read = |t: &Tile| -> Result<Vec<u8>, String> {
        let path = dir.join(t.path());
        let data = crate::folder::read_file(&path, crate::folder::MAX_TREE_FILE)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("{} is missing", path.display()))?;
        let want = usize::from(t.width) * 32;
        if matches!(t.kind, TileKind::Hashes(_)) && data.len() != want {
            return Err(format!(
                "{} holds {} bytes, not {want}",
                path.display(),
                data.len()
            ));
        }
        Ok(data)
    };
    let tiles = chit_log::tiles::TileSource::new(p.size, |t: &Tile| read(t));
    match tree::root(&tiles, p.size) {
        Ok(r) if r == p.root => {}
        Ok(_) => {
            problems.push(problem(format!(
                "the tiles published beside {shown} do not give its root: a partial tile changed"
            )));
            return Ok(());
        }
        Err(e) => {
            problems.push(problem(format!(
                "the tiles published beside {shown} do not give its root: {e}"
            )));
            return Ok(());
        }
    }
    let w = u64::from(TILE_WIDTH);
    if !p.size.is_multiple_of(w) {
        let n = p.size / w;
        let width = (p.size % w) as u16;
        let bundle = Tile {
            kind: TileKind::Entries,
            index: n,
            width,
        };
        let hashes = Tile {
            kind: TileKind::Hashes(0),
            index: n,
            width,
        };
        let path = dir.join(bundle.path()).display().to_string();
        let found = read(&bundle).and_then(|b| {
            let entries = tiles::parse_entry_bundle(&b, width).map_err(|e| e.to_string())?;
            let leaves: Vec<u8> = entries.iter().flat_map(|e| leaf_hash(e)).collect();
            Ok(leaves == read(&hashes)?)
        });
        match found {
            Ok(true) => {}
            Ok(false) => problems.push(problem(format!(
                "{path} does not hold the entries {shown} covers"
            ))),
            Err(why) => problems.push(problem(format!("{path}: {why}"))),
        }
    }
    Ok(())
}

/// Entries `from..to` missing: named one by one (a few), else as a range.
fn missing(from: u64, to: u64, problems: &mut Vec<Problem>) {
    missing_from("entries", from, to, " (a row deleted?)", problems);
}

/// Entries `from..to` missing (from the entries, or an index: `what`),
/// named one by one up to a few, else as one range.
fn missing_from(step: &'static str, from: u64, to: u64, what: &str, problems: &mut Vec<Problem>) {
    const NAMED: u64 = 20;
    if to - from <= NAMED {
        for index in from..to {
            problems.push(Problem {
                step,
                index: Some(index),
                message: format!("entry {index} is missing{what}"),
                evidence: vec![],
            });
        }
    } else {
        problems.push(Problem {
            step,
            index: Some(from),
            message: format!(
                "entries {from} to {} are missing{what}, {} entries",
                to - 1,
                to - from
            ),
            evidence: vec![],
        });
    }
}

fn take_leaf(
    edge: &mut CompactRange,
    leaves: &mut Vec<Hash>,
    wanted: &mut BTreeMap<u64, Option<Hash>>,
    leaf: Hash,
) {
    edge.push(leaf);
    leaves.push(leaf);
    if let Some(slot) = wanted.get_mut(&edge.size()) {
        *slot = Some(edge.root());
    }
}

/// Step 8's state: the entries waiting to be checked again (a few
/// thousand at a time, on all cores), the counts, and the print of each
/// accepted entry's label.
#[derive(Default)]
struct Recheck {
    pending: Vec<(u64, Vec<u8>)>,
    refused: u64,
    checked: u64,
    prints: Prints,
}

/// What a verdict gives one entry's rows: its label's print, its art id's
/// and its packet row's (where it has them), and half prints of its kind
/// and stream ([`Prints::keys`]).
type EntryPrints = ([u8; 16], Option<[u8; 16]>, Option<[u8; 16]>, [u8; 16]);

fn reverify(opts: &Options, again: &mut Recheck, problems: &mut Vec<Problem>) {
    let Some(policy) = opts.reverify else {
        again.pending.clear();
        return;
    };
    let decided: Vec<(u64, Result<EntryPrints, String>)> = again
        .pending
        .par_iter()
        .map(|(i, data)| {
            let verdict = match policy.decide(data) {
                Admission::Accept {
                    kind,
                    art_id,
                    packet,
                    ..
                } => {
                    let art = art_id.as_deref().map(|a| print(&[a]));
                    let row = packet.as_ref().map(|p| {
                        packet_print(&PacketRow {
                            stream_id: p.stream_id.to_string(),
                            sequence: p.sequence,
                            packet_id: p.packet_id.to_string(),
                            prev_packet_id: p.prev_packet_id.as_deref().map(str::to_string),
                            index: *i,
                        })
                    });
                    let label = label_print(&crate::store::Label {
                        index: *i,
                        kind: kind.to_string(),
                        art_id,
                        stream_id: packet.as_ref().map(|p| p.stream_id.to_string()),
                    });
                    // Half a print of the kind, then of the stream (zeros
                    // where there is none).
                    let mut keys = [0u8; 16];
                    keys[..8].copy_from_slice(&half_print(kind));
                    if let Some(p) = &packet {
                        keys[8..].copy_from_slice(&half_print(&p.stream_id));
                    }
                    Ok((label, art, row, keys))
                }
                Admission::Refuse(r) => Err(r
                    .errors
                    .first()
                    .map(|f| format!("{}: {}", f.rule, f.message))
                    .unwrap_or_else(|| r.status().name().to_string())),
                Admission::Unreadable(why) => Err(why),
            };
            (*i, verdict)
        })
        .collect();
    let mut bad: Vec<(u64, String)> = Vec::new();
    for (i, verdict) in decided {
        match verdict {
            Ok((label, art, row, keys)) => {
                again.prints.set(
                    i,
                    label,
                    art.unwrap_or(NO_PRINT),
                    row.unwrap_or(NO_PRINT),
                    keys,
                );
            }
            Err(why) => bad.push((i, why)),
        }
    }
    again.checked += again.pending.len() as u64;
    again.refused += bad.len() as u64;
    for (i, why) in bad {
        problems.push(Problem {
            step: "reverify",
            index: Some(i),
            message: format!("entry {i} is not valid under the log's policy: {why}"),
            evidence: vec![],
        });
    }
    again.pending.clear();
}

/// The first 16 bytes of a hash: enough to tell rows apart in an audit's
/// memory (no one chooses a collision of them).
fn first16(h: &Hash) -> [u8; 16] {
    let mut out = [0u8; 16];
    out.copy_from_slice(&h[..16]);
    out
}

/// The print of some fields: each with its length, so that no two lists
/// print alike.
fn print(fields: &[&str]) -> [u8; 16] {
    let text: String = fields.iter().map(|v| format!("{}:{v}", v.len())).collect();
    first16(&chit_core::digest::sha256(text.as_bytes()))
}

/// A label's print: its kind, art id and stream (not its index).
fn label_print(l: &crate::store::Label) -> [u8; 16] {
    // An absent field is "-", which no field (written with its length) is.
    let field = |f: Option<&str>| f.map_or("-".to_owned(), |v| format!("{}:{v}", v.len()));
    let text = format!(
        "{}{}{}",
        field(Some(&l.kind)),
        field(l.art_id.as_deref()),
        field(l.stream_id.as_deref())
    );
    first16(&chit_core::digest::sha256(text.as_bytes()))
}

/// A packet row's print: its stream, sequence, packet id and previous
/// packet id (not its index).
fn packet_print(p: &PacketRow) -> [u8; 16] {
    let sequence = p.sequence.to_string();
    match &p.prev_packet_id {
        Some(prev) => print(&[&p.stream_id, &sequence, &p.packet_id, "prev", prev]),
        None => print(&[&p.stream_id, &sequence, &p.packet_id, "first"]),
    }
}

/// Step 8, before the walk: the content index a store keeps apart from
/// its entries, if it keeps one, read whole. Named here: a row that names
/// no entry (a negative index, a key that is no address), two rows for one
/// entry, a row at or above the index's bound (a merge raises the bound in
/// the transaction that writes its rows), and one past the checkpoint
/// that the store's size now does not cover either (a live log's merge
/// since the head was read is not a problem).
fn read_content_index(
    src: &mut dyn Source,
    size: u64,
    problems: &mut Vec<Problem>,
) -> Result<Option<ContentIndex>, SourceError> {
    const SAID: usize = 100;
    let mut rows: Vec<[u8; 16]> = Vec::new();
    let mut odd: Vec<Problem> = Vec::new();
    let mut past: Vec<u64> = Vec::new();
    let say = |odd: &mut Vec<Problem>, index: Option<u64>, message: String| {
        if odd.len() < SAID {
            odd.push(Problem {
                step: "index",
                index,
                message,
                evidence: vec![],
            });
        }
    };
    let upto = src.index_rows(crate::store::IndexKind::Content, &mut |i, key| {
        let (Ok(at), Ok(address)) = (u64::try_from(i), <&[u8; 32]>::try_from(key)) else {
            let message = format!(
                "the content index has a row ({} bytes at index {i}) that names no entry by its \
                 address",
                key.len()
            );
            say(&mut odd, u64::try_from(i).ok(), message);
            return;
        };
        if at >= size {
            if past.len() < SAID {
                past.push(at);
            }
            return;
        }
        let at = at as usize;
        if rows.capacity() == 0 {
            rows.reserve_exact(size.min(1 << 24) as usize);
        }
        if rows.len() <= at {
            rows.resize(at + 1, NO_PRINT);
        }
        if rows[at] != NO_PRINT {
            let message = format!("the content index maps two addresses to entry {i}");
            say(&mut odd, Some(at as u64), message);
        }
        rows[at] = first16(address);
    })?;
    let Some(upto) = upto else {
        return Ok(None);
    };
    let above = |i: u64| {
        format!("the content index has a row for entry {i}, at or above its bound ({upto}): a row no merge wrote")
    };
    for (i, row) in rows.iter().enumerate().skip(upto as usize) {
        if *row != NO_PRINT {
            say(&mut odd, Some(i as u64), above(i as u64));
        }
    }
    if upto > size || !past.is_empty() {
        let now = src.size_now()?;
        if upto > now {
            say(
                &mut odd,
                None,
                format!("the content index claims to cover {upto} entries; the log holds {now}"),
            );
        }
        for i in past {
            if i >= upto {
                say(&mut odd, Some(i), above(i));
            } else if i >= now {
                let message =
                    format!("the content index names entry {i}, which the log does not hold");
                say(&mut odd, Some(i), message);
            }
        }
    }
    problems.extend(odd);
    Ok(Some(ContentIndex {
        upto,
        rows,
        missing: Vec::new(),
        wrong: 0,
    }))
}

impl ContentIndex {
    /// Step 8, as entry `i` (with content address `address`) is walked.
    fn check(&mut self, i: u64, address: &Hash, problems: &mut Vec<Problem>) {
        let row = self.rows.get(i as usize).copied().unwrap_or(NO_PRINT);
        if row == first16(address) {
            return;
        }
        if row != NO_PRINT {
            self.wrong += 1;
            if self.wrong <= 100 {
                problems.push(Problem {
                    step: "index",
                    index: Some(i),
                    message: format!(
                        "the content index maps another address to entry {i}: a duplicate of \
                         that address would be answered with this entry"
                    ),
                    evidence: vec![],
                });
            }
        }
        if i < self.upto {
            match self.missing.last_mut() {
                Some((_, last)) if *last + 1 == i => *last = i,
                _ => self.missing.push((i, i)),
            }
        }
    }

    fn finish(self, problems: &mut Vec<Problem>) {
        for (first, last) in self.missing {
            missing_from(
                "index",
                first,
                last + 1,
                " from the content index: a duplicate would be appended again",
                problems,
            );
        }
    }
}

/// An index of one search key kept apart from the labels: how an audit
/// reads it and names it.
struct KeyIndex {
    kind: crate::store::IndexKind,
    /// The key, as a message says it ("art id").
    key: &'static str,
    /// The index, as a message names it ("art-id").
    name: &'static str,
}

impl KeyIndex {
    const ART: KeyIndex = KeyIndex {
        kind: crate::store::IndexKind::Art,
        key: "art id",
        name: "art-id",
    };
    const KIND: KeyIndex = KeyIndex {
        kind: crate::store::IndexKind::Kind,
        key: "kind",
        name: "kind",
    };
    const STREAM: KeyIndex = KeyIndex {
        kind: crate::store::IndexKind::Stream,
        key: "stream",
        name: "stream",
    };
}

/// Step 8, with `reverify`: an index of a search key kept apart from the
/// labels (art ids; kinds and streams where a store keeps them so) holds
/// each entry's key as its verdict gives it, and every one below its
/// bound. `expected(at)` is the print of entry `at`'s key (None where it
/// has none), `print_of` a key's print; `judged` the entries' label
/// prints (an entry with none was refused or is missing, said already:
/// its rows are not held to anything).
fn check_key_index(
    src: &mut dyn Source,
    index: KeyIndex,
    judged: &[[u8; 16]],
    expected: impl Fn(usize) -> Option<[u8; 16]>,
    print_of: impl Fn(&str) -> [u8; 16],
    size: u64,
    problems: &mut Vec<Problem>,
) -> Result<(), SourceError> {
    let KeyIndex {
        kind,
        key: what,
        name,
    } = index;
    let mut indexed = vec![false; usize::try_from(size).unwrap_or(0)];
    let mut wrong: Vec<Problem> = Vec::new();
    let mut past: Vec<(u64, String)> = Vec::new();
    let upto = src.index_rows(kind, &mut |i, key| {
        let key = String::from_utf8_lossy(key);
        if let Ok(at) = u64::try_from(i).map(|at| at >= size) {
            if at && past.len() < 100 {
                // Past the entries walked: held to the size now, below.
                past.push((i as u64, key.into_owned()));
                return;
            }
        }
        let at = usize::try_from(i).unwrap_or(usize::MAX);
        if at < indexed.len() && judged.get(at).is_none_or(|p| *p == NO_PRINT) {
            return;
        }
        match expected(at) {
            Some(p) if at < indexed.len() && p == print_of(&key) => indexed[at] = true,
            _ if wrong.len() < 100 => wrong.push(Problem {
                step: "index",
                index: u64::try_from(i).ok(),
                message: format!(
                    "the {name} index maps {key} to entry {i}, which is not that entry's {what}"
                ),
                evidence: vec![],
            }),
            _ => {}
        }
    })?;
    let Some(upto) = upto else {
        return Ok(());
    };
    if !past.is_empty() {
        let now = src.size_now()?;
        for (i, key) in past.into_iter().filter(|(i, _)| *i >= now.min(upto)) {
            wrong.push(Problem {
                step: "index",
                index: Some(i),
                message: format!(
                    "the {name} index maps {key} to entry {i}, which the log does not hold"
                ),
                evidence: vec![],
            });
        }
    }
    problems.extend(wrong);
    for (i, seen) in indexed.iter().enumerate().take(upto as usize) {
        if !seen && expected(i).is_some() {
            problems.push(Problem {
                step: "index",
                index: Some(i as u64),
                message: format!(
                    "entry {i}'s {what} is missing from the {name} index: a search would not find it"
                ),
                evidence: vec![],
            });
        }
    }
    Ok(())
}

/// Step 9, with `reverify`: each stored packet row against the one its
/// entry's verdict gives (`expected`, by index).
struct PacketRows {
    expected: Vec<[u8; 16]>,
    seen: Vec<bool>,
    wrong: Vec<Problem>,
}

impl PacketRows {
    fn new(expected: Vec<[u8; 16]>) -> PacketRows {
        PacketRows {
            seen: vec![false; expected.len()],
            expected,
            wrong: Vec::new(),
        }
    }

    fn check(&mut self, p: &PacketRow) {
        let at = usize::try_from(p.index).unwrap_or(usize::MAX);
        match self.expected.get(at) {
            Some(e) if *e != NO_PRINT && *e == packet_print(p) && !self.seen[at] => {
                self.seen[at] = true;
            }
            _ if self.wrong.len() < 100 => self.wrong.push(Problem {
                step: "streams",
                index: Some(p.index),
                message: format!(
                    "the packet row (stream {}, sequence {}, packet {}) names entry {}, which is \
                     not that packet",
                    p.stream_id, p.sequence, p.packet_id, p.index
                ),
                evidence: vec![],
            }),
            _ => {}
        }
    }

    fn finish(self, problems: &mut Vec<Problem>) {
        problems.extend(self.wrong);
        for (i, e) in self.expected.iter().enumerate() {
            if *e != NO_PRINT && !self.seen[i] {
                problems.push(Problem {
                    step: "streams",
                    index: Some(i as u64),
                    message: format!(
                        "entry {i} is a packet with no packet row: the stream rules (P1, P2, P4) \
                         would not see it"
                    ),
                    evidence: vec![],
                });
            }
        }
    }
}

/// Step 10 (with `reverify`): every stored search label is the one its
/// entry's verdict gives (`labels`, by index), and every entry that passed
/// has one.
fn check_labels(
    src: &mut dyn Source,
    labels: &[[u8; 16]],
    problems: &mut Vec<Problem>,
) -> Result<(), SourceError> {
    let mut labelled = vec![false; labels.len()];
    let mut wrong: Vec<Problem> = Vec::new();
    let kept = src.labels(&mut |l| {
        let at = usize::try_from(l.index).unwrap_or(usize::MAX);
        let Some(expected) = labels.get(at).filter(|p| **p != NO_PRINT) else {
            // An entry refused or missing: said already.
            return;
        };
        labelled[at] = true;
        if *expected != label_print(l) {
            wrong.push(Problem {
                step: "labels",
                index: Some(l.index),
                message: format!(
                    "entry {}'s search label (kind {}, art id {}, stream {}) is not what the entry gives",
                    l.index,
                    l.kind,
                    l.art_id.as_deref().unwrap_or("none"),
                    l.stream_id.as_deref().unwrap_or("none")
                ),
                evidence: vec![],
            });
        }
    })?;
    if !kept {
        return Ok(());
    }
    problems.extend(wrong);
    for (i, p) in labels.iter().enumerate() {
        if *p != NO_PRINT && !labelled[i] {
            problems.push(Problem {
                step: "labels",
                index: Some(i as u64),
                message: format!("entry {i} has no search label: a search would not find it"),
                evidence: vec![],
            });
        }
    }
    Ok(())
}

/// The gaps (P3) in each stream, from its packets in (stream, sequence)
/// order: sequences missing from 0 to its highest. One stream's state at a
/// time, so a million packets take no memory.
#[derive(Default)]
pub struct Gaps {
    out: Vec<String>,
    stream: Option<String>,
    next: i64,
    count: i64,
    missing: Vec<String>,
}

impl Gaps {
    pub fn push(&mut self, p: &PacketRow) {
        if self.stream.as_deref() != Some(p.stream_id.as_str()) {
            self.close();
            self.stream = Some(p.stream_id.clone());
        }
        let s = p.sequence;
        if s > self.next {
            self.count += s - self.next;
            if self.missing.len() < 5 {
                self.missing.push(if s == self.next + 1 {
                    self.next.to_string()
                } else {
                    format!("{}-{}", self.next, s - 1)
                });
            }
        }
        self.next = self.next.max(s.saturating_add(1));
    }

    fn close(&mut self) {
        if let Some(stream) = self.stream.take() {
            if self.count > 0 {
                self.out.push(format!(
                    "stream {stream}: {} packet(s) missing (P3): sequence {}{}",
                    self.count,
                    self.missing.join(", "),
                    if self.missing.len() == 5 { ", …" } else { "" }
                ));
            }
        }
        self.next = 0;
        self.count = 0;
        self.missing.clear();
    }

    pub fn finish(mut self) -> Vec<String> {
        self.close();
        self.out
    }
}

/// What an auditor keeps of a log between runs: the last checkpoint it
/// saw, with the key it opened it with.
pub fn load_state(path: &Path, verifier_key: &str) -> Result<Option<Vec<u8>>, StateError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(StateError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let v: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|source| StateError::NotChits {
            path: path.to_path_buf(),
            source,
        })?;
    let key = v.get("verifier_key").and_then(|k| k.as_str());
    if key != Some(verifier_key) {
        return Err(StateError::OtherLog {
            path: path.to_path_buf(),
            found: key.unwrap_or("(none)").to_string(),
            wanted: verifier_key.to_string(),
        });
    }
    let note = v
        .get("checkpoint")
        .and_then(|c| c.as_str())
        .ok_or_else(|| StateError::NoCheckpoint(path.to_path_buf()))?;
    Ok(Some(note.as_bytes().to_vec()))
}

/// Saves the last checkpoint seen, atomically (a new file renamed over the
/// state file this command wrote before).
pub fn save_state(path: &Path, verifier_key: &str, note: &[u8]) -> Result<(), StateError> {
    let text = serde_json::json!({
        "type": "chit.log.audit-state.v1",
        "verifier_key": verifier_key,
        "checkpoint": String::from_utf8_lossy(note),
    })
    .to_string();
    write_state_file(path, text.as_bytes())
}

/// Writes a state file atomically: a new file of a fresh name beside it
/// (never a link followed), synced, renamed over the one this command
/// wrote before (anything but a regular file there is refused).
pub(crate) fn write_state_file(path: &Path, bytes: &[u8]) -> Result<(), StateError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| StateError::Folder {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if !m.is_file() {
            return Err(StateError::NotAFile(path.to_path_buf()));
        }
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let fail = |source: std::io::Error| StateError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".chit-state-")
        .tempfile_in(dir)
        .map_err(fail)?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(fail)?;
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}
