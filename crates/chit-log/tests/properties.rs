//! Properties: for random tree sizes every inclusion and consistency proof
//! the crate makes verifies, and any flipped byte (in the proof, the leaf,
//! either root) or any other index or size makes it fail; the parsers never
//! panic on arbitrary input.

use chit_log::note;
use chit_log::tiles::{hash_tile, parse_entry_bundle, tiles_for_size, Tile, TileKind, TileSource};
use chit_log::tree::{
    consistency_proof, inclusion_proof, leaf_hash, root, verify_consistency, verify_inclusion,
    Hash, MemoryTree,
};
use chit_log::Checkpoint;
use proptest::prelude::*;
use std::collections::HashMap;

fn tree(size: u64) -> (MemoryTree, Vec<Hash>) {
    let leaves: Vec<Hash> = (0..size).map(|i| leaf_hash(&i.to_le_bytes())).collect();
    (MemoryTree::from_leaf_hashes(&leaves), leaves)
}

fn flip(h: &Hash, byte: usize, bit: u8) -> Hash {
    let mut h = *h;
    h[byte % 32] ^= 1 << (bit % 8);
    h
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn inclusion_proofs_verify_and_nothing_else_does(
        size in 1u64..3000, index_seed: u64, pick: usize, byte: usize, bit: u8,
    ) {
        let (t, leaves) = tree(size);
        let index = index_seed % size;
        let r = t.root(size).unwrap();
        prop_assert_eq!(r, root(&leaves[..], size).unwrap());
        let proof = inclusion_proof(&t, index, size).unwrap();
        let leaf = leaves[index as usize];
        prop_assert!(verify_inclusion(&leaf, index, size, &proof, &r).is_ok());
        // The slice source gives the same proof as the stored tree.
        prop_assert_eq!(&proof, &inclusion_proof(&leaves[..], index, size).unwrap());
        if !proof.is_empty() {
            let mut p = proof.clone();
            let k = pick % p.len();
            p[k] = flip(&p[k], byte, bit);
            prop_assert!(verify_inclusion(&leaf, index, size, &p, &r).is_err());
            prop_assert!(verify_inclusion(&leaf, index, size, &proof[1..], &r).is_err());
        }
        prop_assert!(verify_inclusion(&flip(&leaf, byte, bit), index, size, &proof, &r).is_err());
        prop_assert!(verify_inclusion(&leaf, index, size, &proof, &flip(&r, byte, bit)).is_err());
        let mut longer = proof.clone();
        longer.push(r);
        prop_assert!(verify_inclusion(&leaf, index, size, &longer, &r).is_err());
        if size > 1 {
            let other = (index + 1 + pick as u64 % (size - 1)) % size;
            prop_assert!(verify_inclusion(&leaf, other, size, &proof, &r).is_err());
        }
    }

    #[test]
    fn consistency_proofs_verify_and_nothing_else_does(
        new in 1u64..3000, old_seed: u64, pick: usize, byte: usize, bit: u8,
    ) {
        let (t, _) = tree(new);
        let old = old_seed % (new + 1);
        let (r1, r2) = (t.root(old).unwrap(), t.root(new).unwrap());
        let proof = consistency_proof(&t, old, new).unwrap();
        prop_assert!(verify_consistency(old, new, &r1, &r2, &proof).is_ok());
        if !proof.is_empty() {
            let mut p = proof.clone();
            let k = pick % p.len();
            p[k] = flip(&p[k], byte, bit);
            prop_assert!(verify_consistency(old, new, &r1, &r2, &p).is_err());
            prop_assert!(verify_consistency(old, new, &r1, &r2, &proof[1..]).is_err());
            prop_assert!(verify_consistency(old, new, &r1, &r2, &proof[..proof.len() - 1]).is_err());
        }
        // Any change to either root fails; but the empty tree is consistent
        // with every tree, so from size 0 only the old root is checked.
        prop_assert!(verify_consistency(old, new, &flip(&r1, byte, bit), &r2, &proof).is_err());
        if old > 0 {
            prop_assert!(verify_consistency(old, new, &r1, &flip(&r2, byte, bit), &proof).is_err());
        }
        // Another old size with this proof fails (unless it names the same tree).
        if old > 0 && old < new {
            let other = 1 + (old + pick as u64 % (new - 1)) % (new - 1);
            if other != old {
                let ro = t.root(other).unwrap();
                prop_assert!(verify_consistency(other, new, &ro, &r2, &proof).is_err());
            }
        }
    }

    #[test]
    fn a_changed_entry_changes_the_root_and_the_proofs_show_it(
        size in 2u64..500, at_seed: u64, byte: usize, bit: u8,
    ) {
        let (t, mut leaves) = tree(size);
        let at = (at_seed % size) as usize;
        leaves[at] = flip(&leaves[at], byte, bit);
        let forged = MemoryTree::from_leaf_hashes(&leaves);
        prop_assert_ne!(t.root(size).unwrap(), forged.root(size).unwrap());
        // A consistency proof from the honest prefix never covers the change.
        let old = at as u64 + 1;
        if old < size {
            let p = consistency_proof(&forged, old, size).unwrap();
            prop_assert!(verify_consistency(
                old, size, &t.root(old).unwrap(), &forged.root(size).unwrap(), &p
            ).is_err());
        }
    }

    #[test]
    fn proofs_from_exported_tiles_are_the_tree_s(
        size in 1u64..5000, index_seed: u64, old_seed: u64,
    ) {
        let (t, _) = tree(size);
        let mut files: HashMap<String, Vec<u8>> = HashMap::new();
        for tile in tiles_for_size(size) {
            if let TileKind::Hashes(l) = tile.kind {
                files.insert(tile.path(), hash_tile(&t, l, tile.index, tile.width).unwrap());
            }
        }
        let src = TileSource::new(size, |x: &Tile| files.get(&x.path()).cloned().ok_or("missing"));
        let (index, old) = (index_seed % size, old_seed % (size + 1));
        prop_assert_eq!(root(&src, size).unwrap(), t.root(size).unwrap());
        prop_assert_eq!(
            inclusion_proof(&src, index, size).unwrap(),
            inclusion_proof(&t, index, size).unwrap()
        );
        prop_assert_eq!(
            consistency_proof(&src, old, size).unwrap(),
            consistency_proof(&t, old, size).unwrap()
        );
    }

    #[test]
    fn tile_paths_round_trip(level in 0u8..64, index: u64, width in 1u16..=256, entries: bool) {
        let kind = if entries { TileKind::Entries } else { TileKind::Hashes(level) };
        let tile = Tile { kind, index, width };
        prop_assert_eq!(Tile::parse_path(&tile.path()), Some(tile));
    }

    #[test]
    fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400), w in 0u16..300) {
        let _ = note::parse(&bytes);
        let v = note::NoteVerifier::new("k", &[0x11; 32]);
        if let Ok(v) = v {
            let _ = note::open(&bytes, &[&v]);
        }
        if let Ok(s) = std::str::from_utf8(&bytes) {
            let _ = Checkpoint::parse(s);
            let _ = Tile::parse_path(s);
            let _ = note::decode_verifier_key(s);
        }
        let _ = parse_entry_bundle(&bytes, w);
    }

    #[test]
    fn notes_from_signatures_and_garbage_never_verify_a_changed_text(
        text in "[a-z ]{1,40}(\n[a-z0-9 ]{1,40}){0,3}\n", pos: usize,
    ) {
        let s = note::NoteSigner::from_seed("k.example", &[5; 32]).unwrap();
        let msg = note::sign(&text, &[&s]).unwrap();
        prop_assert!(note::open(&msg, &[&s.verifier()]).is_ok());
        let mut m = msg.clone();
        let i = pos % (text.len() - 1);
        m[i] = if m[i] == b'a' { b'b' } else { b'a' };
        if m != msg {
            prop_assert!(note::open(&m, &[&s.verifier()]).is_err());
        }
    }
}
