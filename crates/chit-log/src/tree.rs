//! RFC 6962 / RFC 9162 Merkle trees: hashes, roots and proofs.
//!
//! Leaf hash `SHA-256(0x00 ‖ entry)`, node hash `SHA-256(0x01 ‖ left ‖
//! right)`, the root of `n` leaves for any `n` (RFC 9162 §2.1.1: the left
//! subtree holds the largest power of two smaller than `n`), inclusion
//! proofs (§2.1.3) and consistency proofs (§2.1.4), generated and
//! verified. Verification follows the numbered steps of §2.1.3.2 and
//! §2.1.4.2 literally.
//!
//! Generation reads complete subtrees through [`HashSource`], so a store
//! that keeps the hashes of complete subtrees (as a tiled log does) serves
//! a proof in `O(log n)` reads; [`MemoryTree`] is such a source in memory.

use sha2::{Digest, Sha256};

/// A SHA-256 hash.
pub type Hash = [u8; 32];

/// The root of the empty tree: SHA-256 of the empty string (RFC 9162 §2.1.1).
pub const EMPTY_ROOT: Hash = [
    0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
    0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55,
];

/// The hash of one entry: `SHA-256(0x00 ‖ bytes)`.
pub fn leaf_hash(entry: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(entry);
    h.finalize().into()
}

/// The hash of an interior node: `SHA-256(0x01 ‖ left ‖ right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// Why a proof could not be made or did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error("index {index} is not in a tree of size {size}")]
    IndexOutOfRange { index: u64, size: u64 },
    #[error("sizes {old} and {new} do not name an older and a newer tree")]
    BadSizes { old: u64, new: u64 },
    #[error("the tree has only {have} leaves, {want} were asked for")]
    TreeTooSmall { have: u64, want: u64 },
    #[error("the proof has the wrong number of hashes")]
    WrongLength,
    #[error("the proof does not lead to the expected root")]
    RootMismatch,
    #[error("reading a subtree hash failed: {0}")]
    Source(String),
}

/// Gives the hash of any complete subtree of a log: the `2^level` leaves
/// `[index << level, (index + 1) << level)`. Level 0 is a leaf hash.
///
/// A store implements this from what it keeps (every level, or tiles); the
/// proof generators here only ever ask for subtrees that lie wholly inside
/// the tree size they were given.
pub trait HashSource {
    /// The number of leaves available.
    fn size(&self) -> u64;
    /// The hash of the complete subtree `index` at `level`.
    fn subtree_hash(&self, level: u8, index: u64) -> Result<Hash, ProofError>;
}

/// A slice of leaf hashes is a source: a subtree is recomputed from its
/// leaves (`O(2^level)`), fine for tests and small trees.
impl HashSource for [Hash] {
    fn size(&self) -> u64 {
        self.len() as u64
    }
    fn subtree_hash(&self, level: u8, index: u64) -> Result<Hash, ProofError> {
        if level >= 64 {
            return Err(ProofError::Source("no such level".into()));
        }
        let width = 1u64 << level;
        // A multiplication, not a shift: a shift drops the high bits of a
        // huge index and would name a subtree inside the tree.
        let start = index
            .checked_mul(width)
            .ok_or(ProofError::Source("subtree out of range".into()))?;
        let end = start
            .checked_add(width)
            .filter(|&e| e <= self.len() as u64)
            .ok_or(ProofError::TreeTooSmall {
                have: self.len() as u64,
                want: start.saturating_add(width),
            })?;
        Ok(slice_root(&self[start as usize..end as usize]))
    }
}

/// The root of a slice of leaf hashes, by the RFC's recursion.
fn slice_root(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => EMPTY_ROOT,
        1 => leaves[0],
        n => {
            let k = split(n as u64) as usize;
            node_hash(&slice_root(&leaves[..k]), &slice_root(&leaves[k..]))
        }
    }
}

/// The largest power of two strictly smaller than `n` (`n >= 2`): where
/// RFC 9162 splits a tree of `n` leaves.
pub fn split(n: u64) -> u64 {
    debug_assert!(n >= 2);
    1u64 << (63 - (n - 1).leading_zeros())
}

/// A tree's right edge (its compact range from 0): the roots of its
/// complete subtrees, largest first, one for each bit set in its size.
/// Enough to append leaves and give the root of the tree as it grows,
/// without any of the leaves before.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactRange {
    /// `(height, hash)`, largest subtree first.
    stack: Vec<(u32, Hash)>,
    size: u64,
}

impl CompactRange {
    /// The empty tree's.
    pub fn new() -> Self {
        Self::default()
    }

    /// The edge of a tree of `size` leaves from its subtree roots, largest
    /// first ([`CompactRange::hashes`]); `None` when there are not exactly
    /// as many as `size` has bits set.
    pub fn from_hashes(size: u64, hashes: &[Hash]) -> Option<Self> {
        if hashes.len() != size.count_ones() as usize {
            return None;
        }
        let heights = (0..64u32).rev().filter(|h| size >> h & 1 == 1);
        Some(CompactRange {
            stack: heights.zip(hashes.iter().copied()).collect(),
            size,
        })
    }

    /// How many leaves the tree has.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The subtree roots, largest first.
    pub fn hashes(&self) -> Vec<Hash> {
        self.stack.iter().map(|(_, h)| *h).collect()
    }

    /// Appends a leaf by its hash.
    pub fn push(&mut self, leaf: Hash) {
        let mut h = leaf;
        let mut height = 0u32;
        while let Some(&(top_h, top)) = self.stack.last() {
            if top_h != height {
                break;
            }
            self.stack.pop();
            h = node_hash(&top, &h);
            height += 1;
        }
        self.stack.push((height, h));
        self.size += 1;
    }

    /// The tree's root (RFC 9162 §2.1.1).
    pub fn root(&self) -> Hash {
        let mut it = self.stack.iter().rev();
        let Some(&(_, mut h)) = it.next() else {
            return EMPTY_ROOT;
        };
        for (_, left) in it {
            h = node_hash(left, &h);
        }
        h
    }
}

/// A whole tree in memory: every level of complete subtrees. Appending is
/// amortised `O(1)` hashes; every subtree is a lookup.
#[derive(Debug, Clone, Default)]
pub struct MemoryTree {
    levels: Vec<Vec<Hash>>,
}

impl MemoryTree {
    pub fn new() -> Self {
        Self::default()
    }

    /// A tree of these leaf hashes.
    pub fn from_leaf_hashes(leaves: &[Hash]) -> Self {
        let mut t = Self::new();
        for h in leaves {
            t.push_leaf_hash(*h);
        }
        t
    }

    /// Appends an entry; returns its index.
    pub fn push(&mut self, entry: &[u8]) -> u64 {
        self.push_leaf_hash(leaf_hash(entry))
    }

    /// Appends a leaf by its hash; returns its index.
    pub fn push_leaf_hash(&mut self, h: Hash) -> u64 {
        let index = self.size();
        let mut level = 0;
        let mut cur = h;
        loop {
            if self.levels.len() == level {
                self.levels.push(Vec::new());
            }
            self.levels[level].push(cur);
            let len = self.levels[level].len();
            if len % 2 == 1 {
                break;
            }
            cur = node_hash(&self.levels[level][len - 2], &self.levels[level][len - 1]);
            level += 1;
        }
        index
    }

    /// The root of the first `size` leaves.
    pub fn root(&self, size: u64) -> Result<Hash, ProofError> {
        root(self, size)
    }
}

impl HashSource for MemoryTree {
    fn size(&self) -> u64 {
        self.levels.first().map_or(0, |l| l.len() as u64)
    }
    fn subtree_hash(&self, level: u8, index: u64) -> Result<Hash, ProofError> {
        self.levels
            .get(level as usize)
            .and_then(|l| l.get(usize::try_from(index).ok()?))
            .copied()
            .ok_or(ProofError::TreeTooSmall {
                have: self.size(),
                want: index
                    .saturating_add(1)
                    .saturating_mul(1u64 << level.min(63)),
            })
    }
}

/// The hash of the leaves `[start, end)` as the RFC's recursion shapes it.
/// Every range it is called with starts at a multiple of the largest power
/// of two not above its length, so complete parts come from the source.
fn range_hash<S: HashSource + ?Sized>(src: &S, start: u64, end: u64) -> Result<Hash, ProofError> {
    let n = end - start;
    if n == 0 {
        return Ok(EMPTY_ROOT);
    }
    if n.is_power_of_two() {
        let level = n.trailing_zeros() as u8;
        debug_assert_eq!(start % n, 0);
        return src.subtree_hash(level, start >> level);
    }
    let k = split(n);
    Ok(node_hash(
        &range_hash(src, start, start + k)?,
        &range_hash(src, start + k, end)?,
    ))
}

fn check_size<S: HashSource + ?Sized>(src: &S, size: u64) -> Result<(), ProofError> {
    if size > src.size() {
        return Err(ProofError::TreeTooSmall {
            have: src.size(),
            want: size,
        });
    }
    Ok(())
}

/// The root hash of the first `size` leaves (MTH, RFC 9162 §2.1.1).
pub fn root<S: HashSource + ?Sized>(src: &S, size: u64) -> Result<Hash, ProofError> {
    check_size(src, size)?;
    range_hash(src, 0, size)
}

/// The inclusion proof of leaf `index` in the tree of `size` leaves
/// (PATH, RFC 9162 §2.1.3.1), nearest the leaf first.
pub fn inclusion_proof<S: HashSource + ?Sized>(
    src: &S,
    index: u64,
    size: u64,
) -> Result<Vec<Hash>, ProofError> {
    check_size(src, size)?;
    if index >= size {
        return Err(ProofError::IndexOutOfRange { index, size });
    }
    let mut proof = Vec::new();
    path(src, index, 0, size, &mut proof)?;
    Ok(proof)
}

fn path<S: HashSource + ?Sized>(
    src: &S,
    m: u64,
    start: u64,
    end: u64,
    out: &mut Vec<Hash>,
) -> Result<(), ProofError> {
    let n = end - start;
    if n <= 1 {
        return Ok(());
    }
    let k = split(n);
    if m < k {
        path(src, m, start, start + k, out)?;
        out.push(range_hash(src, start + k, end)?);
    } else {
        path(src, m - k, start + k, end, out)?;
        out.push(range_hash(src, start, start + k)?);
    }
    Ok(())
}

/// The consistency proof between the trees of `old` and `new` leaves
/// (PROOF, RFC 9162 §2.1.4.1). Requires `0 < old < new`, as the RFC does;
/// `old == new` and `old == 0` need no proof and get an empty one.
pub fn consistency_proof<S: HashSource + ?Sized>(
    src: &S,
    old: u64,
    new: u64,
) -> Result<Vec<Hash>, ProofError> {
    check_size(src, new)?;
    if old > new {
        return Err(ProofError::BadSizes { old, new });
    }
    let mut proof = Vec::new();
    if old == 0 || old == new {
        return Ok(proof);
    }
    subproof(src, old, 0, new, true, &mut proof)?;
    Ok(proof)
}

fn subproof<S: HashSource + ?Sized>(
    src: &S,
    m: u64,
    start: u64,
    end: u64,
    b: bool,
    out: &mut Vec<Hash>,
) -> Result<(), ProofError> {
    let n = end - start;
    if m == n {
        if !b {
            out.push(range_hash(src, start, end)?);
        }
        return Ok(());
    }
    let k = split(n);
    if m <= k {
        subproof(src, m, start, start + k, b, out)?;
        out.push(range_hash(src, start + k, end)?);
    } else {
        subproof(src, m - k, start + k, end, false, out)?;
        out.push(range_hash(src, start, start + k)?);
    }
    Ok(())
}

/// Verifies an inclusion proof, step by step as RFC 9162 §2.1.3.2.
pub fn verify_inclusion(
    leaf: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), ProofError> {
    // 1. leaf_index must be in the tree.
    if index >= size {
        return Err(ProofError::IndexOutOfRange { index, size });
    }
    // 2. fn = leaf_index, sn = tree_size - 1.
    let (mut fnn, mut sn) = (index, size - 1);
    // 3. r = hash.
    let mut r = *leaf;
    // 4. For each p in the path:
    for p in proof {
        // a. If sn is 0, fail.
        if sn == 0 {
            return Err(ProofError::WrongLength);
        }
        // b.
        if fnn & 1 == 1 || fnn == sn {
            r = node_hash(p, &r);
            if fnn & 1 == 0 {
                while fnn & 1 == 0 && fnn != 0 {
                    fnn >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            r = node_hash(&r, p);
        }
        // c.
        fnn >>= 1;
        sn >>= 1;
    }
    // 5. sn must be 0 and r the root.
    if sn != 0 {
        return Err(ProofError::WrongLength);
    }
    if &r != root {
        return Err(ProofError::RootMismatch);
    }
    Ok(())
}

/// Verifies a consistency proof, step by step as RFC 9162 §2.1.4.2, for
/// `0 < old < new`. Outside that range: `old == new` is consistent exactly
/// when the roots are equal and the proof empty; the empty tree (`old ==
/// 0`) is consistent with every tree, by an empty proof; `old > new` never.
pub fn verify_consistency(
    old: u64,
    new: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> Result<(), ProofError> {
    if old > new {
        return Err(ProofError::BadSizes { old, new });
    }
    if old == new || old == 0 {
        if !proof.is_empty() {
            return Err(ProofError::WrongLength);
        }
        if old == new && old_root != new_root {
            return Err(ProofError::RootMismatch);
        }
        if old == 0 && old_root != &EMPTY_ROOT {
            return Err(ProofError::RootMismatch);
        }
        return Ok(());
    }
    // 1. An empty path fails.
    if proof.is_empty() {
        return Err(ProofError::WrongLength);
    }
    // 2. If first is an exact power of 2, prepend first_hash.
    let mut path: Vec<&Hash> = Vec::with_capacity(proof.len() + 1);
    if old.is_power_of_two() {
        path.push(old_root);
    }
    path.extend(proof.iter());
    // 3. fn = first - 1, sn = second - 1.
    let (mut fnn, mut sn) = (old - 1, new - 1);
    // 4. If LSB(fn) is set, shift both until it is not.
    while fnn & 1 == 1 {
        fnn >>= 1;
        sn >>= 1;
    }
    // 5. fr = sr = the first value.
    let (mut fr, mut sr) = (*path[0], *path[0]);
    // 6. For each subsequent value c:
    for c in &path[1..] {
        // a.
        if sn == 0 {
            return Err(ProofError::WrongLength);
        }
        // b.
        if fnn & 1 == 1 || fnn == sn {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            if fnn & 1 == 0 {
                while fnn & 1 == 0 && fnn != 0 {
                    fnn >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            sr = node_hash(&sr, c);
        }
        // c.
        fnn >>= 1;
        sn >>= 1;
    }
    // 7. fr == first_hash, sr == second_hash, sn == 0.
    if sn != 0 {
        return Err(ProofError::WrongLength);
    }
    if &fr != old_root || &sr != new_root {
        return Err(ProofError::RootMismatch);
    }
    Ok(())
}

/// The complete subtrees that appending `leaves` to a tree of `src.size()`
/// leaves completes, as `(level, index, hash)`: what a store writes, in
/// one batch, to serve every later proof. Hashes of the existing tree are
/// read from `src` (only the right edge, `O(log n)` of them).
pub fn append_subtrees<S: HashSource + ?Sized>(
    src: &S,
    leaves: &[Hash],
) -> Result<Vec<(u8, u64, Hash)>, ProofError> {
    let start = src.size();
    let mut new: std::collections::HashMap<(u8, u64), Hash> = std::collections::HashMap::new();
    let mut out = Vec::with_capacity(leaves.len() * 2);
    let get =
        |new: &std::collections::HashMap<(u8, u64), Hash>, l: u8, i: u64| match new.get(&(l, i)) {
            Some(h) => Ok(*h),
            None => src.subtree_hash(l, i),
        };
    for (k, leaf) in leaves.iter().enumerate() {
        let i = start
            .checked_add(k as u64)
            .filter(|&i| i < u64::MAX)
            .ok_or(ProofError::Source("the tree is full".into()))?;
        new.insert((0, i), *leaf);
        out.push((0, i, *leaf));
        let mut level = 1u8;
        while level < 64 && (i + 1) % (1u64 << level) == 0 {
            let j = ((i + 1) >> level) - 1;
            let h = node_hash(
                &get(&new, level - 1, 2 * j)?,
                &get(&new, level - 1, 2 * j + 1)?,
            );
            new.insert((level, j), h);
            out.push((level, j, h));
            level += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_the_largest_power_of_two_below() {
        for (n, k) in [(2, 1), (3, 2), (4, 2), (5, 4), (8, 4), (9, 8), (1000, 512)] {
            assert_eq!(split(n), k, "n = {n}");
        }
        assert_eq!(split(u64::MAX), 1 << 63);
        assert_eq!(split((1 << 63) + 1), 1 << 63);
    }

    #[test]
    fn appended_subtrees_are_the_memory_tree_s() {
        let leaves: Vec<Hash> = (0u32..300).map(|i| leaf_hash(&i.to_be_bytes())).collect();
        let full = MemoryTree::from_leaf_hashes(&leaves);
        for cut in [0usize, 1, 2, 3, 7, 8, 100, 255, 256, 299] {
            let first = MemoryTree::from_leaf_hashes(&leaves[..cut]);
            let added = append_subtrees(&first, &leaves[cut..]).unwrap();
            let mut want = 0;
            for level in 0..10u8 {
                let before = (cut as u64) >> level;
                let after = 300u64 >> level;
                want += after - before;
                for j in before..after {
                    let h = full.subtree_hash(level, j).unwrap();
                    assert!(added.contains(&(level, j, h)), "cut {cut}: ({level}, {j})");
                }
            }
            assert_eq!(added.len() as u64, want, "cut {cut}");
        }
    }

    #[test]
    fn a_huge_index_is_not_wrapped_into_the_tree() {
        let leaves: Vec<Hash> = (0u32..4).map(|i| leaf_hash(&i.to_be_bytes())).collect();
        assert!(leaves[..].subtree_hash(1, 1 << 63).is_err());
        assert!(leaves[..].subtree_hash(2, 1 << 62).is_err());
        assert!(leaves[..].subtree_hash(64, 0).is_err());
        let t = MemoryTree::from_leaf_hashes(&leaves);
        assert!(t.subtree_hash(1, 1 << 63).is_err());
        assert!(t.subtree_hash(200, 0).is_err());
    }

    #[test]
    fn memory_tree_and_slice_agree() {
        let leaves: Vec<Hash> = (0u32..70).map(|i| leaf_hash(&i.to_be_bytes())).collect();
        let t = MemoryTree::from_leaf_hashes(&leaves);
        for n in 0..=70u64 {
            assert_eq!(t.root(n).unwrap(), root(&leaves[..], n).unwrap());
        }
        assert!(t.root(71).is_err());
    }
}
