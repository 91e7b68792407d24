//! Known answers from RFC 6962 as Certificate Transparency tests it.
//!
//! Data copied from transparency-dev/merkle (Apache License 2.0):
//! `testonly/constants.go` (leaf inputs, the hash of every complete subtree,
//! the root of every size 0..=8) and `proof/verify_test.go` (inclusion and
//! consistency proofs, and the corruptions a verifier must refuse). The
//! same eight leaves and roots appear in Certificate Transparency's C++
//! `merkle_tree_test.cc`.

use chit_log::tree::{
    consistency_proof, inclusion_proof, leaf_hash, root, verify_consistency, verify_inclusion,
    Hash, HashSource, MemoryTree, EMPTY_ROOT,
};

fn h(s: &str) -> Hash {
    let v: Vec<u8> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect();
    v.try_into().unwrap()
}

fn bytes(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const LEAF_INPUTS: [&str; 8] = [
    "",
    "00",
    "10",
    "2021",
    "3031",
    "40414243",
    "5051525354555657",
    "606162636465666768696a6b6c6d6e6f",
];

const ROOTS: [&str; 9] = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

/// NodeHashes(): level, then index within the level.
const NODES: [&[&str]; 4] = [
    &[
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
        "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
        "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
        "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
        "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
        "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1",
    ],
    &[
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
        "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
    ],
    &[
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
    &["5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"],
];

/// (leaf index, tree size, proof): verify_test.go's inclusionProofs, whose
/// leaf numbers are 1-based; here 0-based.
fn inclusion_vectors() -> Vec<(u64, u64, Vec<Hash>)> {
    vec![
        (0, 1, vec![]),
        (
            0,
            8,
            vec![
                h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
                h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
                h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
            ],
        ),
        (
            5,
            8,
            vec![
                h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
                h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
                h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
            ],
        ),
        (
            2,
            3,
            vec![h(
                "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
            )],
        ),
        (
            1,
            5,
            vec![
                h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
                h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
                h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
            ],
        ),
    ]
}

/// (old size, new size, proof): verify_test.go's consistencyProofs.
fn consistency_vectors() -> Vec<(u64, u64, Vec<Hash>)> {
    vec![
        (1, 1, vec![]),
        (
            1,
            8,
            vec![
                h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
                h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
                h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
            ],
        ),
        (
            6,
            8,
            vec![
                h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
                h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
                h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
            ],
        ),
        (
            2,
            5,
            vec![
                h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
                h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
            ],
        ),
        (
            6,
            7,
            vec![
                h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
                h("b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f"),
                h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
            ],
        ),
    ]
}

fn leaves() -> Vec<Hash> {
    LEAF_INPUTS.iter().map(|s| leaf_hash(&bytes(s))).collect()
}

const SOME_HASH: &str = "abacaba000000000000000000000000000000000000000000060061e00123456";

#[test]
fn roots_of_every_size_match() {
    assert_eq!(EMPTY_ROOT, h(ROOTS[0]));
    let l = leaves();
    let t = MemoryTree::from_leaf_hashes(&l);
    for (n, want) in ROOTS.iter().enumerate() {
        assert_eq!(root(&l[..], n as u64).unwrap(), h(want), "slice, size {n}");
        assert_eq!(t.root(n as u64).unwrap(), h(want), "memory tree, size {n}");
    }
}

#[test]
fn every_complete_subtree_matches() {
    let l = leaves();
    let t = MemoryTree::from_leaf_hashes(&l);
    for (level, hashes) in NODES.iter().enumerate() {
        for (i, want) in hashes.iter().enumerate() {
            assert_eq!(t.subtree_hash(level as u8, i as u64).unwrap(), h(want));
            assert_eq!(l[..].subtree_hash(level as u8, i as u64).unwrap(), h(want));
        }
    }
}

#[test]
fn inclusion_proofs_are_generated_and_verified_as_published() {
    let l = leaves();
    let t = MemoryTree::from_leaf_hashes(&l);
    for (index, size, proof) in inclusion_vectors() {
        let r = h(ROOTS[size as usize]);
        assert_eq!(
            inclusion_proof(&t, index, size).unwrap(),
            proof,
            "{index}/{size}"
        );
        verify_inclusion(&l[index as usize], index, size, &proof, &r).unwrap();
        // verify_test.go's corruptInclusionProof: all must fail.
        let mut probes: Vec<(u64, u64, Hash, Hash, Vec<Hash>)> = vec![
            (
                index.wrapping_sub(1),
                size,
                r,
                l[index as usize],
                proof.clone(),
            ),
            (index + 1, size, r, l[index as usize], proof.clone()),
            (index ^ 2, size, r, l[index as usize], proof.clone()),
            (index, size * 2, r, l[index as usize], proof.clone()),
            (index, size / 2, r, l[index as usize], proof.clone()),
            (index, size, r, leaf_hash(b"WrongLeaf"), proof.clone()),
            (index, size, EMPTY_ROOT, l[index as usize], proof.clone()),
            (index, size, h(SOME_HASH), l[index as usize], proof.clone()),
            (
                index,
                size,
                r,
                l[index as usize],
                [proof.clone(), vec![r]].concat(),
            ),
            (
                index,
                size,
                r,
                l[index as usize],
                [vec![r], proof.clone()].concat(),
            ),
            (
                index,
                size,
                r,
                l[index as usize],
                [proof.clone(), vec![[0; 32]]].concat(),
            ),
        ];
        for i in 0..proof.len() {
            let mut p = proof.clone();
            p[i][0] ^= 8;
            probes.push((index, size, r, l[index as usize], p));
        }
        if !proof.is_empty() {
            probes.push((
                index,
                size,
                r,
                l[index as usize],
                proof[..proof.len() - 1].to_vec(),
            ));
        }
        if proof.len() > 1 {
            let mut p = vec![proof[0], h(SOME_HASH)];
            p.extend_from_slice(&proof[1..]);
            probes.push((index, size, r, l[index as usize], p));
        }
        for (k, (i, s, root, leaf, p)) in probes.into_iter().enumerate() {
            assert!(
                verify_inclusion(&leaf, i, s, &p, &root).is_err(),
                "probe {k} of {index}/{size} verified"
            );
        }
    }
}

#[test]
fn consistency_proofs_are_generated_and_verified_as_published() {
    let l = leaves();
    let t = MemoryTree::from_leaf_hashes(&l);
    for (old, new, proof) in consistency_vectors() {
        let (r1, r2) = (h(ROOTS[old as usize]), h(ROOTS[new as usize]));
        assert_eq!(
            consistency_proof(&t, old, new).unwrap(),
            proof,
            "{old}->{new}"
        );
        verify_consistency(old, new, &r1, &r2, &proof).unwrap();
        if proof.is_empty() {
            continue;
        }
        // verify_test.go's corruptConsistencyProof: all must fail.
        let mut probes: Vec<(u64, u64, Hash, Hash, Vec<Hash>)> = vec![
            (old - 1, new, r1, r2, proof.clone()),
            (old + 1, new, r1, r2, proof.clone()),
            (old ^ 2, new, r1, r2, proof.clone()),
            (old, new * 2, r1, r2, proof.clone()),
            (old, new / 2, r1, r2, proof.clone()),
            (old, new, h(SOME_HASH), r2, proof.clone()),
            (old, new, r1, h(SOME_HASH), proof.clone()),
            (old, new, r2, r1, proof.clone()),
            (old, new, r1, r2, vec![]),
            (old, new, r1, r2, [proof.clone(), vec![[0; 32]]].concat()),
            (old, new, r1, r2, [proof.clone(), vec![r1]].concat()),
            (old, new, r1, r2, [proof.clone(), vec![r2]].concat()),
            (old, new, r1, r2, [vec![[0; 32]], proof.clone()].concat()),
            (old, new, r1, r2, [vec![r1], proof.clone()].concat()),
            (old, new, r1, r2, [vec![r2], proof.clone()].concat()),
            (old, new, r1, r2, [vec![proof[0]], proof.clone()].concat()),
            (old, new, r1, r2, proof[..proof.len() - 1].to_vec()),
        ];
        for i in 0..proof.len() {
            let mut p = proof.clone();
            p[i][0] ^= 16;
            probes.push((old, new, r1, r2, p));
        }
        for (k, (o, n, a, b, p)) in probes.into_iter().enumerate() {
            assert!(
                verify_consistency(o, n, &a, &b, &p).is_err(),
                "probe {k} of {old}->{new} verified"
            );
        }
    }
}

#[test]
fn the_edge_cases_of_verify_test_go() {
    let (a, b) = (h(SOME_HASH), leaf_hash(b"other"));
    // Equal sizes: consistent exactly when the roots are equal and the
    // proof empty.
    assert!(verify_consistency(1, 1, &a, &b, &[]).is_err());
    assert!(verify_consistency(1, 1, &b, &b, &[]).is_ok());
    assert!(verify_consistency(1, 1, &b, &b, &[EMPTY_ROOT]).is_err());
    // Time travel.
    assert!(verify_consistency(1, 0, &a, &b, &[]).is_err());
    assert!(verify_consistency(2, 1, &a, &b, &[]).is_err());
    // An empty proof between different sizes.
    assert!(verify_consistency(1, 2, &a, &b, &[]).is_err());
    // The empty tree is consistent with any tree, by an empty proof only.
    assert!(verify_consistency(0, 1, &EMPTY_ROOT, &b, &[]).is_ok());
    assert!(verify_consistency(0, 1, &EMPTY_ROOT, &b, &[EMPTY_ROOT]).is_err());
    assert!(verify_consistency(0, 0, &EMPTY_ROOT, &EMPTY_ROOT, &[EMPTY_ROOT]).is_err());
    // Inclusion in an empty or too small tree.
    for (i, s) in [(0, 0), (1, 0), (2, 1)] {
        assert!(verify_inclusion(&a, i, s, &[], &a).is_err());
    }
    // A one-leaf tree's root is its leaf.
    let d = leaf_hash(b"data");
    assert!(verify_inclusion(&d, 0, 1, &[], &d).is_ok());
    assert!(verify_inclusion(&d, 0, 1, &[], &a).is_err());
}
