//! What the log folder's tests share: a key, entries, a log made and
//! opened, batches appended, an audit.

#![allow(dead_code)]

use chit_log::note::NoteSigner;
use chit_logstore::audit::{self, Options};
use chit_logstore::folder::FolderStore;
use chit_logstore::{Log, Policy};
use std::path::Path;

pub const ORIGIN: &str = "faults.example/log";

pub fn key() -> NoteSigner {
    NoteSigner::from_seed(ORIGIN, &[3; 32]).unwrap()
}

/// A sealed run receipt, its id `run-n`.
pub fn entry(n: usize) -> Vec<u8> {
    let text = include_str!("../../../../examples/run-receipts/agreed-verified.json");
    let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
    v["id"] = serde_json::json!(format!("run-{n}"));
    let bytes = serde_json::to_vec(&v).unwrap();
    chit_core::seal::seal(&bytes, None, &chit_core::Limits::default())
        .unwrap()
        .bytes
}

/// Appends `range` as one batch: the entries it acknowledged.
pub fn append(log: &mut Log, range: std::ops::Range<usize>) -> Result<Vec<(u64, Vec<u8>)>, String> {
    let inputs: Vec<Vec<u8>> = range.map(entry).collect();
    let s = log.submit(&inputs).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (o, bytes) in s.outcomes.iter().zip(inputs) {
        let i = o.index().expect("appended");
        out.push((i, bytes));
    }
    Ok(out)
}

/// A new log folder at `path`.
pub fn create(path: &Path) -> Log {
    let store = Box::new(FolderStore::create_dir(path).unwrap());
    Log::init(store, key(), &Policy::default(), None).unwrap()
}

/// The log folder at `path`, to write.
pub fn open(path: &Path) -> Log {
    Log::open(Box::new(FolderStore::open(path).unwrap()))
        .unwrap()
        .with_signer(
            &chit_core::keys::SecretKey::from_seed(&[3; 32])
                .to_pem()
                .unwrap(),
        )
        .unwrap()
}

/// The audit of the log folder at `path`, its `public/` included.
pub fn audit_folder(path: &Path) -> audit::AuditReport {
    let mut source: Box<dyn chit_logstore::Store> = Box::new(FolderStore::open(path).unwrap());
    run_audit(&mut source, Some(&path.join("public")))
}

/// The audit of a folder of tiles (what a static copy of `public/` is).
pub fn audit_tiles(root: &Path) -> audit::AuditReport {
    let mut source = audit::TilesDir {
        root: root.to_path_buf(),
    };
    run_audit(&mut source, None)
}

fn run_audit(source: &mut dyn audit::Source, published: Option<&Path>) -> audit::AuditReport {
    let verifier = key().verifier();
    audit::audit(
        source,
        &Options {
            verifier: &verifier,
            trust: None,
            previous: None,
            reverify: None,
            progress: &|_| {},
            published,
        },
    )
    .unwrap()
}
