//! A log folder's files changed, cut short or replaced behind the log's
//! back: the audit names what is wrong, a writer refuses to build on it
//! (or mends what it can from its own batch), and nothing planted in the
//! folder is read or written through.

mod common;

use chit_logstore::folder::FolderStore;
use chit_logstore::Tree;
use common::{append, audit_folder, create, open};
use std::path::{Path, PathBuf};

/// A log folder of 300 entries, published: one full bundle and level-0
/// tile, and the right edge's partial ones (44 entries; a level-1 tile of
/// one hash).
fn log_of_300() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("log");
    let mut log = create(&path);
    append(&mut log, 0..300).unwrap();
    drop(log);
    (t, path)
}

fn flip_last_byte(path: &Path) {
    let mut d = std::fs::read(path).unwrap();
    *d.last_mut().unwrap() ^= 1;
    std::fs::write(path, d).unwrap();
}

/// The audit's problems, as `step: message` lines.
fn problems(path: &Path) -> Vec<String> {
    audit_folder(path)
        .problems
        .iter()
        .map(|p| format!("{}: {}", p.step, p.message))
        .collect()
}

/// That the audit names a problem at `step` whose message holds `says`.
#[track_caller]
fn assert_named(path: &Path, step: &str, says: &str) {
    let p = problems(path);
    let head = format!("{step}: ");
    assert!(
        p.iter().any(|m| m.starts_with(&head) && m.contains(says)),
        "no {step} problem saying {says:?}: {p:?}"
    );
}

#[test]
fn an_untouched_log_folder_audits_clean() {
    let (_t, path) = log_of_300();
    assert_eq!(problems(&path), Vec::<String>::new());
}

#[test]
fn a_changed_partial_tile_in_public_is_named() {
    let (_t, path) = log_of_300();
    flip_last_byte(&path.join("public/tile/0/001.p/44"));
    assert_named(&path, "published", "do not give its root");
}

#[test]
fn a_changed_partial_bundle_in_public_is_named() {
    let (_t, path) = log_of_300();
    flip_last_byte(&path.join("public/tile/entries/001.p/44"));
    assert_named(
        &path,
        "published",
        "tile/entries/001.p/44 does not hold the entries",
    );
}

#[test]
fn bytes_after_a_full_public_tile_are_named() {
    let (_t, path) = log_of_300();
    let tile = path.join("public/tile/0/000");
    let mut d = std::fs::read(&tile).unwrap();
    d.push(0);
    std::fs::write(&tile, d).unwrap();
    assert_named(&path, "tiles", "tile/0/000 is damaged");
}

#[test]
fn a_forged_public_checkpoint_is_named_and_an_older_one_is_not() {
    let (_t, path) = log_of_300();
    let public = path.join("public/checkpoint");
    let real = std::fs::read(&public).unwrap();
    // Signed by another key with the log's origin.
    let other = chit_log::note::NoteSigner::from_seed(common::ORIGIN, &[9; 32]).unwrap();
    let body = String::from_utf8_lossy(&real);
    let body = body.split("\n\n").next().unwrap().to_string() + "\n";
    let forged = chit_log::note::sign(&body, &[&other]).unwrap();
    std::fs::write(&public, forged).unwrap();
    assert_named(&path, "published", "does not open with the log's key");
    // The log's first checkpoint (size 0) is older, not wrong.
    let mut store = FolderStore::open(&path).unwrap();
    let first = store
        .checkpoint_at(0)
        .unwrap()
        .expect("the first checkpoint");
    std::fs::write(&public, first).unwrap();
    assert_eq!(problems(&path), Vec::<String>::new());
}

#[test]
fn a_log_folders_index_given_alone_is_refused() {
    let (_t, path) = log_of_300();
    let index = path.join("index.db");
    let e = chit_logstore::open(index.to_str().unwrap())
        .err()
        .expect("refused");
    assert!(e.to_string().contains("give the folder"), "{e}");
}

#[test]
fn a_growing_bundle_cut_short_is_refused_not_filled_with_zeros() {
    let (_t, path) = log_of_300();
    let tail = path.join("tail/entries-1");
    let f = std::fs::OpenOptions::new().write(true).open(&tail).unwrap();
    f.set_len(5).unwrap();
    drop(f);
    let mut log = open(&path);
    let e = append(&mut log, 300..301).expect_err("refused");
    assert!(e.contains("tail/entries-1"), "{e}");
    assert_eq!(log.head().unwrap().0, 300);
    drop(log);
    assert_eq!(std::fs::metadata(&tail).unwrap().len(), 5);
    assert_named(&path, "entries", "tail/entries-1");
}

/// A growing tile (level 1: a level-0 tile is no file until it is full)
/// cut short: a writer new to the log then refuses it (its tiles do not
/// give the signed root); one that held it open already writes the tile
/// again whole from its batch.
#[test]
fn a_growing_tile_cut_short_is_refused_or_written_again_whole() {
    let (_t, path) = log_of_300();
    let tail = path.join("tail/1-0");
    let cut = || {
        let f = std::fs::OpenOptions::new().write(true).open(&tail).unwrap();
        f.set_len(20).unwrap();
    };
    let mut writer = open(&path);
    append(&mut writer, 300..301).unwrap();
    cut();
    let mut fresh = open(&path);
    let e = append(&mut fresh, 301..302).expect_err("refused");
    assert!(e.contains("run chit log audit"), "{e}");
    drop(fresh);
    assert_named(&path, "tiles", "");
    append(&mut writer, 302..520).unwrap();
    drop(writer);
    assert_eq!(std::fs::metadata(&tail).unwrap().len(), 2 * 32);
    assert_eq!(problems(&path), Vec::<String>::new());
}

/// The growing level-0 tile is its bundle's leaf hashes: no file holds
/// it until it is full, when the batch that fills it writes it whole, and
/// what a store gives for it is what the entries give.
#[test]
fn the_growing_level_0_tile_is_its_bundles_hashes() {
    let (_t, path) = log_of_300();
    assert!(!path.join("tail/0-1").exists());
    let hashes = |store: &mut FolderStore, from: u64, to: u64| -> Vec<u8> {
        (from..to)
            .flat_map(|i| chit_log::tree::leaf_hash(&store.entry(i).unwrap().unwrap().data))
            .collect()
    };
    let mut store = FolderStore::open(&path).unwrap();
    let want = hashes(&mut store, 256, 300);
    assert_eq!(store.tile(0, 1).unwrap(), Some(want.clone()));
    // Published as the right edge's partial tile, from the same hashes.
    assert_eq!(
        std::fs::read(path.join("public/tile/0/001.p/44")).unwrap(),
        want
    );
    drop(store);
    let mut log = open(&path);
    append(&mut log, 300..530).unwrap();
    drop(log);
    let mut store = FolderStore::open(&path).unwrap();
    let full = std::fs::read(path.join("public/tile/0/001")).unwrap();
    assert_eq!(full, hashes(&mut store, 256, 512));
    assert!(!path.join("tail/0-1").exists());
    assert!(!path.join("tail/0-2").exists());
    assert_eq!(
        store.tile(0, 2).unwrap(),
        Some(hashes(&mut store, 512, 530))
    );
    drop(store);
    assert_eq!(problems(&path), Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn a_link_planted_in_the_tail_is_neither_read_nor_written_through() {
    let (t, path) = log_of_300();
    let tail = path.join("tail/entries-1");
    let elsewhere = t.path().join("elsewhere");
    std::fs::rename(&tail, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &tail).unwrap();
    let before = std::fs::read(&elsewhere).unwrap();
    let mut store = FolderStore::open(&path).unwrap();
    let e = store.entry(260).expect_err("refused");
    assert!(e.to_string().contains("it is a link"), "{e}");
    drop(store);
    let mut log = open(&path);
    assert!(append(&mut log, 300..301).is_err());
    drop(log);
    assert_eq!(std::fs::read(&elsewhere).unwrap(), before);
    let p = problems(&path);
    assert!(p.iter().any(|m| m.contains("it is a link")), "{p:?}");
}

#[cfg(unix)]
#[test]
fn a_fifo_planted_in_the_tail_is_refused_at_once() {
    let (_t, path) = log_of_300();
    let tail = path.join("tail/1-0");
    std::fs::remove_file(&tail).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&tail)
        .status()
        .unwrap();
    assert!(made.success());
    let mut store = FolderStore::open(&path).unwrap();
    let e = store.tile(1, 0).expect_err("refused");
    assert!(e.to_string().contains("not a regular file"), "{e}");
}

#[cfg(unix)]
#[test]
fn a_folder_link_planted_in_public_is_never_written_through() {
    let (t, path) = log_of_300();
    let tile = path.join("public/tile");
    let elsewhere = t.path().join("elsewhere");
    std::fs::rename(&tile, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &tile).unwrap();
    let listing = |dir: &Path| -> Vec<PathBuf> {
        let mut all = Vec::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                if e.file_type().unwrap().is_dir() {
                    todo.push(e.path());
                }
                all.push(e.path());
            }
        }
        all.sort();
        all
    };
    let before = listing(&elsewhere);
    let mut log = open(&path);
    // Past the next bundle's end: a bundle and a tile to publish.
    append(&mut log, 300..520).unwrap();
    drop(log);
    assert_eq!(listing(&elsewhere), before);
    // What the commits filled stays in tail/, and is read from there.
    let mut store = FolderStore::open(&path).unwrap();
    assert!(store.entry(515).unwrap().is_some());
}
