//! A log folder under faults: each write, sync and rename step of a commit
//! made to fail, or to lose what it had not synced (a power cut: the new
//! bytes of a growing file torn, a rename undone), at its first to third
//! time in a batch. After the store is opened again, the audit is clean,
//! the head is exactly what was acknowledged, and every acknowledged entry
//! is at its index with its bytes; the log appends on (and, after a
//! failure a server outlives, appended on before it was closed).

use chit_log::note::NoteSigner;
use chit_logstore::audit::{self, Options};
use chit_logstore::folder::faults::{self, Fault};
use chit_logstore::folder::FolderStore;
use chit_logstore::{Log, Policy};

const ORIGIN: &str = "faults.example/log";

/// The faults are armed process-wide: one test at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn key() -> NoteSigner {
    NoteSigner::from_seed(ORIGIN, &[3; 32]).unwrap()
}

fn entry(n: usize) -> Vec<u8> {
    let text = include_str!("../../../examples/run-receipts/agreed-verified.json");
    let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
    v["id"] = serde_json::json!(format!("run-{n}"));
    let bytes = serde_json::to_vec(&v).unwrap();
    chit_core::seal::seal(&bytes, None, &chit_core::Limits::default())
        .unwrap()
        .bytes
}

/// Appends `range` as one batch: the entries it acknowledged.
fn append(log: &mut Log, range: std::ops::Range<usize>) -> Result<Vec<(u64, Vec<u8>)>, String> {
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
fn create(path: &std::path::Path) -> Log {
    let store = Box::new(FolderStore::create_dir(path).unwrap());
    Log::init(store, key(), &Policy::default(), None).unwrap()
}

fn open(path: &std::path::Path) -> Log {
    Log::open(Box::new(FolderStore::open(path).unwrap()))
        .unwrap()
        .with_signer(
            &chit_core::keys::SecretKey::from_seed(&[3; 32])
                .to_pem()
                .unwrap(),
        )
        .unwrap()
}

/// One run: a log of 260 entries, a batch of 260 more (across a bundle's
/// end) with `step` armed, the store dropped and opened again, 10 more;
/// then the checks.
fn run(step: &str, nth: u32, fault: Fault) -> bool {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("log");
    let mut acked = Vec::new();
    {
        let mut log = create(&path);
        acked.extend(append(&mut log, 0..260).unwrap());
        faults::arm(step, nth, fault);
        let batch = append(&mut log, 260..520);
        // A step before the commit that failed fails the batch.
        let before = ["tail-write", "tail-sync", "index-commit"].contains(&step);
        if before && faults::fired() {
            assert!(batch.is_err(), "{step} #{nth} {fault:?}: acknowledged");
        }
        if let Ok(a) = batch {
            acked.extend(a);
        }
        // Publishing, at most once a second, is left to the close.
        if step != "publish" {
            faults::disarm();
        }
        // A failure a server outlives: the same log appends on.
        if fault == Fault::Fail {
            let from = 2000 + acked.len();
            acked.extend(
                append(&mut log, from..from + 5)
                    .unwrap_or_else(|e| panic!("{step} #{nth}: no append after: {e}")),
            );
        }
    }
    let fired = faults::fired();
    faults::disarm();
    let mut log = open(&path);
    let from = 1000 + acked.len();
    acked.extend(
        append(&mut log, from..from + 10)
            .unwrap_or_else(|e| panic!("{step} #{nth} {fault:?}: no append after: {e}")),
    );
    drop(log);
    let mut log = open(&path);
    let (size, _) = log.head().unwrap();
    assert_eq!(size, acked.len() as u64, "{step} #{nth} {fault:?}");
    for (i, bytes) in &acked {
        let e = log
            .store()
            .entry(*i)
            .unwrap()
            .expect("an acknowledged entry");
        assert!(
            &e.data == bytes,
            "{step} #{nth} {fault:?}: entry {i} changed"
        );
    }
    drop(log);
    let mut source: Box<dyn chit_logstore::Store> = Box::new(FolderStore::open(&path).unwrap());
    let verifier = key().verifier();
    let r = audit::audit(
        &mut source,
        &Options {
            verifier: &verifier,
            witnesses: &[],
            min_witnesses: 0,
            previous: None,
            reverify: None,
            progress: &|_| {},
        },
    )
    .unwrap();
    assert!(r.ok(), "{step} #{nth} {fault:?}: {:?}", r.problems);
    fired
}

#[test]
fn every_step_of_a_commit_faulted_loses_nothing_acknowledged() {
    let _alone = alone();
    for step in [
        "tail-write",
        "tail-sync",
        "index-commit",
        "settle",
        "settle-sync",
        "publish",
    ] {
        let mut fired = 0;
        for fault in [Fault::Fail, Fault::PowerCut] {
            for nth in 1..=3 {
                fired += u32::from(run(step, nth, fault));
            }
        }
        eprintln!("{step}: faulted in {fired} of 6 runs");
        assert!(fired > 0, "{step} was never reached");
    }
}

/// Two writers on one folder: one whose batch failed at its commit, then
/// the other commits as many entries, of other sizes, in the same bundle:
/// the first appends on after it, at the right place (what it wrote for
/// the failed batch is nobody's, and nothing of it is remembered).
#[test]
fn a_writer_whose_batch_failed_appends_after_another_writer() {
    let _alone = alone();
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("log");
    let mut acked = Vec::new();
    let mut first = create(&path);
    acked.extend(append(&mut first, 0..10).unwrap());
    faults::arm("index-commit", 1, Fault::Fail);
    assert!(append(&mut first, 10..20).is_err());
    faults::disarm();
    let mut second = open(&path);
    acked.extend(append(&mut second, 100_000..100_010).unwrap());
    drop(second);
    acked.extend(append(&mut first, 20..30).unwrap());
    drop(first);
    let mut log = open(&path);
    assert_eq!(log.head().unwrap().0, acked.len() as u64);
    for (i, bytes) in &acked {
        let e = log
            .store()
            .entry(*i)
            .unwrap()
            .expect("an acknowledged entry");
        assert!(&e.data == bytes, "entry {i} changed");
    }
}
