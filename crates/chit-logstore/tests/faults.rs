//! A log folder under faults: each write, sync and rename step of a commit
//! made to fail, or to lose what it had not synced (a power cut: the new
//! bytes of a growing file torn, a rename undone), at its first to third
//! time in a batch. After the store is opened again, the audit is clean,
//! the head is exactly what was acknowledged, and every acknowledged entry
//! is at its index with its bytes; the log appends on (and, after a
//! failure a server outlives, appended on before it was closed).

mod common;

use chit_logstore::folder::faults::{self, Fault};
use common::{append, audit_folder, audit_tiles, create, open};

/// The faults are armed process-wide: one test at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
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
        if !step.starts_with("publish") {
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
    let r = audit_folder(&path);
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
        "publish-checkpoint",
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

/// A publish cut before its checkpoint leaves `public/` as it was: the
/// checkpoint published before, and every file it needs (the partial
/// tiles it names are removed only once a newer checkpoint is out).
#[test]
fn a_publish_cut_before_its_checkpoint_leaves_a_whole_public_copy() {
    let _alone = alone();
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("log");
    let public = path.join("public");
    {
        let mut log = create(&path);
        append(&mut log, 0..10).unwrap();
    }
    let before = std::fs::read(public.join("checkpoint")).unwrap();
    let mut log = open(&path);
    faults::arm("publish-checkpoint", 1, Fault::Fail);
    // This store's first commit publishes at once.
    append(&mut log, 10..20).unwrap();
    assert!(faults::fired(), "the publish was not reached");
    faults::disarm();
    assert_eq!(std::fs::read(public.join("checkpoint")).unwrap(), before);
    assert!(
        public.join("tile/0/000.p/20").is_file(),
        "the new partial tile"
    );
    let r = audit_tiles(&public);
    assert!(r.ok(), "{:?}", r.problems);
    assert_eq!(r.size, 10);
    drop(log);
    let r = audit_tiles(&public);
    assert!(r.ok(), "{:?}", r.problems);
    assert_eq!(r.size, 20);
    assert!(!public.join("tile/0/000.p/10").exists(), "the old partial");
}
