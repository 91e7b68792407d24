//! chit's log read by an independent implementation of the same formats:
//! `tlog_tiles` and `signed_note` (Cloudflare azul's ports of Go's
//! golang.org/x/mod/sumdb/tlog and sumdb/note, the code Go's checksum
//! database clients run). A log chit wrote and exported is opened with
//! chit's printed key, its tiles are authenticated against the checkpoint
//! by Go's tile reader, and Go's proofs equal chit's, byte for byte.

mod common;

use base64::Engine;
use common::{chit_in, chit_raw};
use serde_json::Value;
use std::path::PathBuf;

struct Folder(PathBuf);

impl tlog_tiles::TileReader for Folder {
    fn height(&self) -> u8 {
        8
    }
    fn read_tiles(&self, tiles: &[tlog_tiles::Tile]) -> Result<Vec<Vec<u8>>, tlog_tiles::Error> {
        Ok(tiles
            .iter()
            .map(|t| {
                let ours = chit_log::tiles::Tile {
                    kind: chit_log::tiles::TileKind::Hashes(t.level()),
                    index: t.level_index(),
                    width: t.width() as u16,
                };
                // The same tile as Go names it, less the height C2SP drops.
                assert_eq!(
                    t.path().replacen("tile/8/", "tile/", 1),
                    ours.path(),
                    "tile paths"
                );
                std::fs::read(self.0.join(ours.path())).expect("an exported tile")
            })
            .collect())
    }
    fn save_tiles(&self, _tiles: &[tlog_tiles::Tile], _data: &[Vec<u8>]) {}
}

/// A proof chit printed (base64 hashes under `field`), as raw hashes.
fn proof(v: &Value, field: &str) -> Vec<[u8; 32]> {
    v[field].as_array().unwrap().iter().map(b64).collect()
}

/// Go's proof, as raw hashes.
fn raw(go: &[tlog_tiles::Hash]) -> Vec<[u8; 32]> {
    go.iter().map(|h| h.0).collect()
}

fn b64(v: &Value) -> [u8; 32] {
    base64::engine::general_purpose::STANDARD
        .decode(v.as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap()
}

#[test]
fn go_s_tlog_and_note_read_chit_s_log() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let vkey = common::log_init(dir, "r.db", "log.pem", "interop.example/log");
    // 65,600 entries: tile levels 0 and 1 full, level 2 partial. Each a
    // bare packet valid by its own rules, in a stream of its own.
    let mut receipts = Vec::new();
    for n in 0..65_600u64 {
        let packet = serde_json::json!({
            "schema": "verification.packet.v1",
            "packet_id": format!("p{n}"),
            "stream_id": format!("s{n}"),
            "sequence": 0,
            "prev_packet_id": null,
            "model_digest": format!("sha256:{:064x}", 1),
            "input_digest": format!("sha256:{:064x}", 2 * n),
            "output_digest": format!("sha256:{:064x}", 2 * n + 1),
            "reproducibility": "bit_exact",
            "produced_at": "2026-11-30T09:00:00Z",
            "token_count": 3
        });
        receipts.extend_from_slice(packet.to_string().as_bytes());
        receipts.push(b'\n');
    }
    std::fs::write(dir.join("in.jsonl"), &receipts).unwrap();
    let r = chit_in(
        dir,
        &[
            "log", "append", "--store", "r.db", "--lines", "--json", "in.jsonl",
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = chit_in(
        dir,
        &["log", "export-tiles", "--store", "r.db", "tiles"],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);

    // Go's note verifier opens chit's checkpoint with chit's printed key.
    let note = std::fs::read(dir.join("tiles/checkpoint")).unwrap();
    let verifier = signed_note::StandardVerifier::new(&vkey).unwrap();
    let parsed = signed_note::Note::from_bytes(&note).unwrap();
    let (verified, _) = parsed
        .verify(&signed_note::VerifierList::new(vec![Box::new(verifier)]))
        .unwrap();
    assert_eq!(verified.len(), 1);
    let cp = tlog_tiles::Checkpoint::from_bytes(parsed.text()).unwrap();
    assert_eq!(cp.origin(), "interop.example/log");
    assert_eq!(cp.size(), 65_600);
    let size = cp.size();
    let root = *cp.hash();

    // Go's tile reader authenticates every tile it reads against the root.
    let folder = Folder(dir.join("tiles"));
    let reader = tlog_tiles::TileHashReader::new(size, root, &folder);
    assert_eq!(tlog_tiles::tree_hash(size, &reader).unwrap(), root);
    let entries: Vec<&[u8]> = receipts
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    for index in [0u64, 1, 255, 256, 65_535, 65_536, 65_599] {
        let go = tlog_tiles::prove_record(size, index, &reader).unwrap();
        tlog_tiles::check_record(
            &go,
            size,
            root,
            index,
            tlog_tiles::record_hash(entries[index as usize]),
        )
        .unwrap();
        // chit's proof is Go's, hash for hash.
        let p = chit_raw(
            dir,
            &["log", "prove", "--store", "r.db", &index.to_string()],
            None,
        );
        let p: Value = serde_json::from_slice(&p.stdout).unwrap();
        assert_eq!(
            proof(&p, "inclusion_proof"),
            raw(&go),
            "inclusion proof of {index}"
        );
        assert_eq!(b64(&p["root"]), root.0);
    }
    for old in [1u64, 256, 1000, 65_536, 65_599] {
        let go = tlog_tiles::prove_tree(size, old, &reader).unwrap();
        let c = chit_raw(
            dir,
            &[
                "log",
                "consistency",
                "--store",
                "r.db",
                &old.to_string(),
                &size.to_string(),
            ],
            None,
        );
        let c: Value = serde_json::from_slice(&c.stdout).unwrap();
        assert_eq!(
            proof(&c, "consistency_proof"),
            raw(&go),
            "consistency proof from {old}"
        );
        let old_root = tlog_tiles::Hash(b64(&c["old_root"]));
        tlog_tiles::check_tree(&go, size, root, old, old_root).unwrap();
    }
}
