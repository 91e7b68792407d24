//! tlog-tiles paths and contents. The path and tile-count examples are
//! C2SP tlog-tiles.md's (CC BY 4.0); the rest checks tiles against the tree.

use chit_log::tiles::{
    encode_entry_bundle, encode_index, hash_tile, parse_entry_bundle, parse_hash_tile,
    tiles_for_size, Tile, TileError, TileKind, MAX_ENTRY_BYTES, TILE_WIDTH,
};
use chit_log::tree::{leaf_hash, HashSource, MemoryTree};

fn t(kind: TileKind, index: u64, width: u16) -> Tile {
    Tile { kind, index, width }
}

#[test]
fn paths_as_the_spec_writes_them() {
    assert_eq!(encode_index(1234067), "x001/x234/067");
    assert_eq!(encode_index(0), "000");
    assert_eq!(encode_index(999), "999");
    assert_eq!(encode_index(1000), "x001/000");
    assert_eq!(encode_index(u64::MAX), "x018/x446/x744/x073/x709/x551/615");
    for (tile, path) in [
        (t(TileKind::Hashes(0), 1234067, 256), "tile/0/x001/x234/067"),
        (
            t(TileKind::Hashes(5), 123456078, 256),
            "tile/5/x123/x456/078",
        ),
        (
            t(TileKind::Hashes(1), 3057500, 2),
            "tile/1/x003/x057/500.p/2",
        ),
        (t(TileKind::Hashes(0), 1, 16), "tile/0/001.p/16"),
        (t(TileKind::Entries, 0, 255), "tile/entries/000.p/255"),
        (t(TileKind::Entries, 1000, 256), "tile/entries/x001/000"),
    ] {
        assert_eq!(tile.path(), path);
        assert_eq!(Tile::parse_path(path), Some(tile), "{path}");
    }
    for bad in [
        "tile/0/123/456/078",
        "tile/-1/000",
        "tile/64/000",
        "tile/00/000",
        "tile/0/000.p/0",
        "tile/0/000.p/256",
        "tile/0/000.p/016",
        "tile/0/x000/001",
        "tile/0/1",
        "tile/0/0001",
        "tile/0/x001",
        "tile/0/x001/",
        "tile/entries",
        "tile/data/000",
        "/tile/0/000",
        "tile/0/000/",
        "tile/0/000.p/",
    ] {
        assert_eq!(Tile::parse_path(bad), None, "{bad}");
    }
}

#[test]
fn the_spec_s_tile_counts() {
    // "a tree of size 70,000 will be represented by 273 full level 0 tiles,
    // one partial level 0 tile of width 112, one full level 1 tile, one
    // partial level 1 tile of width 17, and one partial level 2 tile of
    // width 1."
    let tiles = tiles_for_size(70_000);
    let level = |l| {
        tiles
            .iter()
            .filter(|x| x.kind == TileKind::Hashes(l))
            .map(|x| x.width)
            .collect::<Vec<_>>()
    };
    let l0 = level(0);
    assert_eq!(l0.len(), 274);
    assert!(l0[..273].iter().all(|&w| w == 256));
    assert_eq!(l0[273], 112);
    assert_eq!(level(1), [256, 17]);
    assert_eq!(level(2), [1]);
    assert_eq!(level(3), Vec::<u16>::new());
    let entries: Vec<_> = tiles
        .iter()
        .filter(|x| x.kind == TileKind::Entries)
        .collect();
    assert_eq!(entries.len(), 274);
    // "a tree of size 256 will be represented by a full level 0 tile and a
    // partial level 1 tile of width 1."
    assert_eq!(
        tiles_for_size(256),
        [
            t(TileKind::Hashes(0), 0, 256),
            t(TileKind::Hashes(1), 0, 1),
            t(TileKind::Entries, 0, 256)
        ]
    );
    assert!(tiles_for_size(0).is_empty());
}

#[test]
fn hash_tiles_hold_the_tree_s_subtrees() {
    let mut tree = MemoryTree::new();
    for i in 0u32..(256 * 256 + 3 * 256 + 5) {
        tree.push(&i.to_be_bytes());
    }
    let size = tree.size();
    for tile in tiles_for_size(size) {
        let TileKind::Hashes(l) = tile.kind else {
            continue;
        };
        let data = hash_tile(&tree, l, tile.index, tile.width).unwrap();
        let hashes = parse_hash_tile(&data, tile.width).unwrap();
        for (i, h) in hashes.iter().enumerate() {
            let n = tile.index * 256 + i as u64;
            assert_eq!(*h, tree.subtree_hash(8 * l, n).unwrap());
        }
    }
    // Level 0 holds leaf hashes; level 1 the roots of full level 0 tiles.
    let l0 = parse_hash_tile(&hash_tile(&tree, 0, 0, 256).unwrap(), 256).unwrap();
    assert_eq!(l0[3], leaf_hash(&3u32.to_be_bytes()));
    let l1 = parse_hash_tile(&hash_tile(&tree, 1, 0, 256).unwrap(), 256).unwrap();
    assert_eq!(l1[0], tree.root(256).unwrap());
    // Past the tree, or of the wrong length.
    assert!(hash_tile(&tree, 2, 0, 2).is_err());
    assert!(hash_tile(&tree, 0, 0, 0).is_err());
    assert!(parse_hash_tile(&[0; 63], 2).is_err());
    assert!(parse_hash_tile(&[0; 64], 2).is_ok());
}

#[test]
fn entry_bundles() {
    let entries: Vec<Vec<u8>> = vec![vec![], b"one".to_vec(), vec![7; MAX_ENTRY_BYTES]];
    let b = encode_entry_bundle(&entries).unwrap();
    assert_eq!(&b[..7], &[0, 0, 0, 3, b'o', b'n', b'e']);
    assert_eq!(&b[7..9], &[0xff, 0xff]);
    assert_eq!(parse_entry_bundle(&b, 3).unwrap(), entries);
    assert_eq!(
        encode_entry_bundle(&[vec![0; MAX_ENTRY_BYTES + 1]]),
        Err(TileError::EntryTooLarge(65_536))
    );
    assert!(encode_entry_bundle::<Vec<u8>>(&[]).is_err());
    assert!(encode_entry_bundle(&vec![b"x"; TILE_WIDTH as usize + 1]).is_err());
    // Truncated anywhere, too many, too few, trailing bytes.
    for n in 0..b.len() {
        assert!(parse_entry_bundle(&b[..n], 3).is_err(), "prefix {n}");
    }
    assert!(parse_entry_bundle(&b, 2).is_err());
    assert!(parse_entry_bundle(&b, 4).is_err());
    let mut extra = b.clone();
    extra.push(0);
    assert!(parse_entry_bundle(&extra, 3).is_err());
    assert!(parse_entry_bundle(&b, 0).is_err());
}

#[test]
fn proofs_made_from_tiles_are_the_tree_s() {
    use chit_log::tiles::TileSource;
    use chit_log::tree::{consistency_proof, inclusion_proof, root};
    use std::collections::HashMap;

    let mut tree = MemoryTree::new();
    let size = 256 * 256 + 2 * 256 + 77;
    for i in 0u32..size {
        tree.push(&i.to_be_bytes());
    }
    let size = u64::from(size);
    // Export every tile of this size, as a static folder would hold them.
    let mut files: HashMap<String, Vec<u8>> = HashMap::new();
    for tile in tiles_for_size(size) {
        if let TileKind::Hashes(l) = tile.kind {
            files.insert(
                tile.path(),
                hash_tile(&tree, l, tile.index, tile.width).unwrap(),
            );
        }
    }
    let src = TileSource::new(size, |t: &Tile| {
        files
            .get(&t.path())
            .cloned()
            .ok_or(format!("no {}", t.path()))
    });
    assert_eq!(root(&src, size).unwrap(), tree.root(size).unwrap());
    for index in [0, 1, 255, 256, 65_535, 65_536, size - 1] {
        assert_eq!(
            inclusion_proof(&src, index, size).unwrap(),
            inclusion_proof(&tree, index, size).unwrap()
        );
    }
    for old in [1, 255, 256, 257, 65_536, 65_537, size - 1] {
        assert_eq!(
            consistency_proof(&src, old, size).unwrap(),
            consistency_proof(&tree, old, size).unwrap()
        );
    }
    // A smaller tree reads the same full tiles and its own partial ones:
    // 65,536 needs only tiles this folder has (tile/2/000.p/1 among them);
    // 1,000 needs tile/1/000.p/3, which it does not have.
    let fetch = |t: &Tile| {
        files
            .get(&t.path())
            .cloned()
            .ok_or(format!("no {}", t.path()))
    };
    let at_65536 = TileSource::new(65_536, fetch);
    assert_eq!(root(&at_65536, 65_536).unwrap(), tree.root(65_536).unwrap());
    let at_1000 = TileSource::new(1000, fetch);
    let err = root(&at_1000, 1000).unwrap_err().to_string();
    assert!(err.contains("tile/1/000.p/3"), "{err}");
    // Past the tree.
    assert!(src.subtree_hash(0, size).is_err());
}

#[test]
fn which_tiles_a_tree_holds() {
    // 70,000 leaves: 273 full entry and level-0 tiles and a partial of 112;
    // level 1 holds 273 hashes (one full tile, a partial of 17); level 2 one.
    let size = 70_000;
    for kind in [TileKind::Entries, TileKind::Hashes(0)] {
        assert!(t(kind, 272, 256).in_tree(size));
        assert!(!t(kind, 273, 256).in_tree(size));
        assert!(t(kind, 273, 112).in_tree(size));
        assert!(t(kind, 273, 1).in_tree(size));
        assert!(!t(kind, 273, 113).in_tree(size));
        assert!(!t(kind, 274, 1).in_tree(size));
        assert!(!t(kind, u64::MAX, 1).in_tree(size));
    }
    assert!(t(TileKind::Hashes(1), 0, 256).in_tree(size));
    assert!(t(TileKind::Hashes(1), 1, 17).in_tree(size));
    assert!(!t(TileKind::Hashes(1), 1, 18).in_tree(size));
    assert!(t(TileKind::Hashes(2), 0, 1).in_tree(size));
    assert!(!t(TileKind::Hashes(3), 0, 1).in_tree(size));
    // Every tile a tree's export writes is in it.
    for tile in tiles_for_size(size) {
        assert!(tile.in_tree(size), "{}", tile.path());
    }
    // Levels past 7 hold nothing in any tree of at most 2^64 - 1 leaves
    // (the level's shift would pass 64 bits).
    for level in 7..=63u8 {
        assert!(
            !t(TileKind::Hashes(level), 0, 1).in_tree(u64::MAX >> 8),
            "{level}"
        );
    }
    assert!(t(TileKind::Hashes(7), 0, 255).in_tree(u64::MAX));
    assert!(!t(TileKind::Hashes(8), 0, 1).in_tree(u64::MAX));
    assert!(!t(TileKind::Hashes(0), 0, 1).in_tree(0));
}

#[test]
fn the_right_edge_is_the_partial_hash_tiles() {
    for size in [0u64, 1, 255, 256, 257, 65_536, 70_000] {
        let partial: Vec<Tile> = tiles_for_size(size)
            .into_iter()
            .filter(|t| matches!(t.kind, TileKind::Hashes(_)) && t.width < 256)
            .collect();
        assert_eq!(chit_log::tiles::right_edge(size), partial, "{size}");
    }
    // 2^24 + 1 leaves: one leaf at level 0, and the one level-3 hash.
    let edge = chit_log::tiles::right_edge(16_777_217);
    assert_eq!(
        edge.iter()
            .map(|t| (t.kind, t.index, t.width))
            .collect::<Vec<_>>(),
        vec![
            (TileKind::Hashes(0), 65_536, 1),
            (TileKind::Hashes(3), 0, 1)
        ]
    );
    // The largest tree: a partial tile of 255 at every level, none past 7.
    let edge = chit_log::tiles::right_edge(u64::MAX);
    assert_eq!(edge.len(), 8);
    assert!(edge.iter().all(|t| t.width == 255 && t.in_tree(u64::MAX)));
}
