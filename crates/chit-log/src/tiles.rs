//! C2SP `tlog-tiles`: the read side as static files.
//!
//! A log is cut into tiles of height 8: the level-`L` tile `N` holds the
//! hashes of the complete subtrees of `2^(8L)` leaves numbered `256N` to
//! `256N + W - 1` (`W` at most 256), concatenated, 32 bytes each. Level 0
//! holds leaf hashes. A tile is served at
//!
//! ```text
//! tile/<L>/<N>            a full tile (W = 256)
//! tile/<L>/<N>.p/<W>      a partial tile, 1 <= W <= 255
//! tile/entries/<N>[.p/<W>] the entries of level-0 tile N
//! ```
//!
//! where `<N>` is written in groups of three decimal digits, every group
//! but the last prefixed with `x`: 1234067 is `x001/x234/067`. An entry
//! bundle is the entries one after another, each preceded by its length as
//! a 2-byte big-endian number, hence entries of at most 65,535 bytes.
//!
//! Full tiles never change; a partial tile is replaced by a wider one as
//! the log grows. A client that holds a checkpoint recomputes any hash it
//! needs from tiles and checks it against the checkpoint's root: tiles need
//! no signature.

use crate::tree::{node_hash, Hash, HashSource, ProofError};

/// Tile height: each tile spans 8 levels of the tree.
pub const TILE_HEIGHT: u32 = 8;
/// Hashes (or entries) in a full tile.
pub const TILE_WIDTH: u16 = 256;
/// The largest entry an entry bundle can carry.
pub const MAX_ENTRY_BYTES: usize = 65_535;

/// Which kind of tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TileKind {
    /// Hashes at tile level `L` (tree level `8L`).
    Hashes(u8),
    /// The entries of a level-0 tile.
    Entries,
}

/// One tile: kind, index and width (1..=256).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tile {
    pub kind: TileKind,
    pub index: u64,
    pub width: u16,
}

/// What is wrong with a tile or an entry bundle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TileError {
    #[error("an entry of {0} bytes is larger than the 65,535 bytes an entry bundle can carry")]
    EntryTooLarge(usize),
    #[error("a tile holds 1 to 256 items, not {0}")]
    BadWidth(usize),
    #[error("malformed tile data: {0}")]
    Malformed(&'static str),
    #[error(transparent)]
    Proof(#[from] ProofError),
}

/// `N` as tlog-tiles writes it: `x001/x234/067`.
pub fn encode_index(n: u64) -> String {
    let digits = n.to_string();
    let pad = (3 - digits.len() % 3) % 3;
    let digits = format!("{}{digits}", "0".repeat(pad));
    let groups: Vec<&str> = (0..digits.len() / 3)
        .map(|i| &digits[3 * i..3 * i + 3])
        .collect();
    let mut out = String::new();
    for (i, g) in groups.iter().enumerate() {
        if i + 1 < groups.len() {
            out.push('x');
            out.push_str(g);
            out.push('/');
        } else {
            out.push_str(g);
        }
    }
    out
}

impl Tile {
    /// The tile's path, relative to the log's prefix.
    pub fn path(&self) -> String {
        let kind = match self.kind {
            TileKind::Hashes(l) => l.to_string(),
            TileKind::Entries => "entries".to_string(),
        };
        let mut p = format!("tile/{kind}/{}", encode_index(self.index));
        if self.width < TILE_WIDTH {
            p.push_str(&format!(".p/{}", self.width));
        }
        p
    }

    /// Whether this tile, at its width or wider, is in a tree of `size`
    /// leaves. Levels 8 to 63 are paths tlog-tiles allows, over trees of
    /// 2^64 leaves and more: never in one here.
    pub fn in_tree(&self, size: u64) -> bool {
        let count = match self.kind {
            TileKind::Hashes(l) => size.checked_shr(u32::from(l) * TILE_HEIGHT).unwrap_or(0),
            TileKind::Entries => size,
        };
        let w = u64::from(TILE_WIDTH);
        let have = count.saturating_sub(self.index.saturating_mul(w)).min(w);
        u64::from(self.width) <= have
    }

    /// Reads a tile path; only the one canonical spelling of each tile is
    /// accepted (a level of 0 to 63 without leading zeros, no `x000` groups
    /// in front, a partial width of 1 to 255 without leading zeros).
    pub fn parse_path(path: &str) -> Option<Tile> {
        let rest = path.strip_prefix("tile/")?;
        let (kind, rest) = rest.split_once('/')?;
        let kind = if kind == "entries" {
            TileKind::Entries
        } else {
            if kind.is_empty() || !kind.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let level: u8 = kind.parse().ok()?;
            if level > 63 {
                return None;
            }
            TileKind::Hashes(level)
        };
        let (index, width) = match rest.split_once(".p/") {
            Some((idx, w)) => {
                if w.is_empty() || !w.bytes().all(|b| b.is_ascii_digit()) || w.len() > 3 {
                    return None;
                }
                (idx, w.parse::<u16>().ok()?)
            }
            None => (rest, TILE_WIDTH),
        };
        if width == 0 || width > TILE_WIDTH {
            return None;
        }
        let mut digits = String::new();
        let groups: Vec<&str> = index.split('/').collect();
        for (i, g) in groups.iter().enumerate() {
            let g = if i + 1 < groups.len() {
                g.strip_prefix('x')?
            } else {
                g
            };
            if g.len() != 3 || !g.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.push_str(g);
        }
        let tile = Tile {
            kind,
            index: digits.parse().ok()?,
            width,
        };
        (tile.path() == path).then_some(tile)
    }
}

/// Every tile of a tree of `size` leaves, full and partial, hash tiles by
/// level then the entry tiles: what a static export writes.
pub fn tiles_for_size(size: u64) -> Vec<Tile> {
    let mut out = Vec::new();
    let mut level = 0u8;
    let mut count = size;
    while count > 0 {
        push_tiles(&mut out, TileKind::Hashes(level), count);
        level += 1;
        count >>= TILE_HEIGHT;
    }
    push_tiles(&mut out, TileKind::Entries, size);
    out
}

/// The partial hash tile of each level of a tree of `size` leaves, lowest
/// level first (a level of whole tiles has none): the tree's right edge,
/// which its root and the tiles of its next leaves are made from, beside
/// full tiles that never change.
pub fn right_edge(size: u64) -> Vec<Tile> {
    let w = TILE_WIDTH as u64;
    let mut out = Vec::new();
    let mut level = 0u8;
    let mut count = size;
    while count > 0 {
        if !count.is_multiple_of(w) {
            out.push(Tile {
                kind: TileKind::Hashes(level),
                index: count / w,
                width: (count % w) as u16,
            });
        }
        level += 1;
        count >>= TILE_HEIGHT;
    }
    out
}

fn push_tiles(out: &mut Vec<Tile>, kind: TileKind, count: u64) {
    let w = TILE_WIDTH as u64;
    for index in 0..count / w {
        out.push(Tile {
            kind,
            index,
            width: TILE_WIDTH,
        });
    }
    if !count.is_multiple_of(w) {
        out.push(Tile {
            kind,
            index: count / w,
            width: (count % w) as u16,
        });
    }
}

/// The contents of a hash tile, read from a source of complete subtrees.
pub fn hash_tile<S: HashSource + ?Sized>(
    src: &S,
    level: u8,
    index: u64,
    width: u16,
) -> Result<Vec<u8>, TileError> {
    if width == 0 || width > TILE_WIDTH {
        return Err(TileError::BadWidth(width as usize));
    }
    let tree_level = u32::from(level) * TILE_HEIGHT;
    if tree_level >= 64 {
        return Err(TileError::Malformed("level out of range"));
    }
    let mut out = Vec::with_capacity(width as usize * 32);
    for i in 0..u64::from(width) {
        let n = index
            .checked_mul(TILE_WIDTH as u64)
            .and_then(|x| x.checked_add(i))
            .ok_or(TileError::Malformed("index out of range"))?;
        out.extend_from_slice(&src.subtree_hash(tree_level as u8, n)?);
    }
    Ok(out)
}

/// The hashes of a hash tile of `width` hashes.
pub fn parse_hash_tile(data: &[u8], width: u16) -> Result<Vec<Hash>, TileError> {
    if width == 0 || width > TILE_WIDTH {
        return Err(TileError::BadWidth(width as usize));
    }
    if data.len() != width as usize * 32 {
        return Err(TileError::Malformed(
            "a hash tile's length is not 32 × its width",
        ));
    }
    Ok(data
        .chunks_exact(32)
        .map(|c| c.try_into().expect("32 bytes"))
        .collect())
}

/// An entry bundle: each entry behind its 2-byte big-endian length.
pub fn encode_entry_bundle<E: AsRef<[u8]>>(entries: &[E]) -> Result<Vec<u8>, TileError> {
    if entries.is_empty() || entries.len() > TILE_WIDTH as usize {
        return Err(TileError::BadWidth(entries.len()));
    }
    let mut out = Vec::new();
    for e in entries {
        let e = e.as_ref();
        let len = u16::try_from(e.len()).map_err(|_| TileError::EntryTooLarge(e.len()))?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(e);
    }
    Ok(out)
}

/// The entries of a bundle that should hold `width` of them; trailing
/// bytes, a short entry or the wrong count are refused.
pub fn parse_entry_bundle(data: &[u8], width: u16) -> Result<Vec<&[u8]>, TileError> {
    if width == 0 || width > TILE_WIDTH {
        return Err(TileError::BadWidth(width as usize));
    }
    let mut out = Vec::with_capacity(width as usize);
    let mut rest = data;
    while !rest.is_empty() {
        if out.len() == width as usize {
            return Err(TileError::Malformed("more entries than the tile's width"));
        }
        let [a, b, tail @ ..] = rest else {
            return Err(TileError::Malformed("a truncated length prefix"));
        };
        let len = u16::from_be_bytes([*a, *b]) as usize;
        if tail.len() < len {
            return Err(TileError::Malformed("a truncated entry"));
        }
        out.push(&tail[..len]);
        rest = &tail[len..];
    }
    if out.len() != width as usize {
        return Err(TileError::Malformed("fewer entries than the tile's width"));
    }
    Ok(out)
}

/// A tree read from its hash tiles: any complete subtree of a tree of
/// `size` leaves, from the one tile that holds its level's nodes (a
/// subtree of level `8L + r` is the root of `2^r` consecutive hashes of a
/// level-`L` tile). `fetch` returns a tile's bytes; tiles are not trusted:
/// a proof made from them verifies only if they agree with a checkpoint.
pub struct TileSource<F> {
    size: u64,
    fetch: F,
}

impl<F, E> TileSource<F>
where
    F: Fn(&Tile) -> Result<Vec<u8>, E>,
    E: std::fmt::Display,
{
    /// A source for the tree of `size` leaves, reading tiles with `fetch`.
    pub fn new(size: u64, fetch: F) -> Self {
        TileSource { size, fetch }
    }
}

/// Where the complete subtree `index` at `level` of the tree of `size`
/// leaves lies in the hash tiles: its tile (with the width that tile has in
/// this tree), the first of the subtree's nodes in it and how many (`2^r`
/// for a subtree of level `8L + r`); the subtree's hash is theirs hashed
/// up pairwise ([`hash_up`]). A subtree not wholly inside the tree is
/// refused.
pub fn subtree_in_tiles(
    size: u64,
    level: u8,
    index: u64,
) -> Result<(Tile, usize, usize), ProofError> {
    if level >= 64 {
        return Err(ProofError::Source("no such level".into()));
    }
    index
        .checked_add(1)
        .and_then(|x| x.checked_mul(1u64 << level))
        .filter(|&e| e <= size)
        .ok_or(ProofError::TreeTooSmall {
            have: size,
            want: index.saturating_add(1).saturating_mul(1u64 << level),
        })?;
    let tile_level = (u32::from(level) / TILE_HEIGHT) as u8;
    let r = u32::from(level) % TILE_HEIGHT;
    let first = index << r; // the first node at tree level 8L
    let tile_index = first / u64::from(TILE_WIDTH);
    let at = (first % u64::from(TILE_WIDTH)) as usize;
    // The tile's width in this tree: full, or the partial tile at the edge.
    let count = size >> (u32::from(tile_level) * TILE_HEIGHT);
    let width = if tile_index < count / u64::from(TILE_WIDTH) {
        TILE_WIDTH
    } else {
        (count % u64::from(TILE_WIDTH)) as u16
    };
    let tile = Tile {
        kind: TileKind::Hashes(tile_level),
        index: tile_index,
        width,
    };
    Ok((tile, at, 1usize << r))
}

/// The root of `2^r` consecutive nodes of one level (`r >= 0`): they are
/// hashed pairwise, level by level, up to one.
pub fn hash_up(nodes: &[Hash]) -> Hash {
    debug_assert!(nodes.len().is_power_of_two());
    let mut up = nodes.to_vec();
    while up.len() > 1 {
        let half = up.len() / 2;
        for i in 0..half {
            up[i] = node_hash(&up[2 * i], &up[2 * i + 1]);
        }
        up.truncate(half);
    }
    up[0]
}

impl<F, E> HashSource for TileSource<F>
where
    F: Fn(&Tile) -> Result<Vec<u8>, E>,
    E: std::fmt::Display,
{
    fn size(&self) -> u64 {
        self.size
    }

    fn subtree_hash(&self, level: u8, index: u64) -> Result<Hash, ProofError> {
        let (tile, at, count) = subtree_in_tiles(self.size, level, index)?;
        let data =
            (self.fetch)(&tile).map_err(|e| ProofError::Source(format!("{}: {e}", tile.path())))?;
        let hashes = parse_hash_tile(&data, tile.width)
            .map_err(|e| ProofError::Source(format!("{}: {e}", tile.path())))?;
        let nodes = hashes
            .get(at..at + count)
            .ok_or(ProofError::Source(format!(
                "{}: too few hashes",
                tile.path()
            )))?;
        Ok(hash_up(nodes))
    }
}
