//! The one thread that appends: submissions from every request, already
//! checked on the request's side, are gathered into batches (whatever is
//! waiting, up to [`BATCH`] submissions) and appended in one durable tree
//! update each. A request is answered only after its batch is committed;
//! a second thread proves and answers each committed batch while the next
//! is appended.

use chit_log::Hash;
use chit_logstore::{Log, Outcome, Submitted};
use tokio::sync::mpsc;

/// Submissions per tree update, at most.
pub const BATCH: usize = 4096;

/// A batch of fewer submissions than this waits (in steps of
/// [`GATHER_STEP`], [`GATHER_WAIT`] at most) while requests are still
/// being checked. A batch has a fixed cost of the sequencer's CPU
/// whatever its size (the checkpoint's signature, the partial tiles, the
/// commit's sync); under load many batches held a handful of entries
/// (docs/decisions/serve-sequencer.md). A lone request (nothing else being
/// checked) never waits.
pub const GATHER: usize = 64;
const GATHER_STEP: std::time::Duration = std::time::Duration::from_micros(100);
const GATHER_WAIT: std::time::Duration = std::time::Duration::from_micros(500);

/// How long a batch waits for another server's batch.
const LEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// How many requests are being checked on their way to the sequencer: a
/// batch short of [`GATHER`] waits a little for them.
#[derive(Clone, Default)]
pub struct Checking(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Checking {
    /// Counts one request until the returned guard is dropped (after its
    /// job is queued, or when it has none).
    pub fn enter(&self) -> CheckingGuard {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        CheckingGuard(self.0.clone())
    }
    fn now(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// See [`Checking::enter`].
pub struct CheckingGuard(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for CheckingGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Where a request's batch is answered: called once, with what its batch
/// gave or why it was not written (from the prover's or the sequencer's
/// thread).
pub type Reply = Box<dyn FnOnce(Result<Appended, WriteError>) + Send>;

/// Why a batch was not written (or not answered), said to each of its
/// requests: every one says whether anything of it was acknowledged.
#[derive(Clone, Debug, thiserror::Error)]
pub enum WriteError {
    #[error("the sequencer's turn was not taken ({0}); nothing of this batch was acknowledged")]
    Lease(String),
    /// The store refused the batch: its words say nothing of it was
    /// acknowledged.
    #[error("{0}")]
    Store(String),
    #[error("{0}; nothing of this batch was acknowledged")]
    Log(String),
    #[error("{0}; the batch is logged, but its proofs could not be made")]
    Proofs(String),
    #[error("the server is shutting down; nothing of this batch was acknowledged")]
    ShuttingDown,
    #[error("the server stopped before the batch was written; nothing of it was acknowledged")]
    Stopped,
}

/// One request's submissions, checked, and where to answer.
pub struct Job {
    pub checked: Vec<Submitted>,
    pub reply: Reply,
}

/// A request's outcomes (in its order), the checkpoint that covers them,
/// and each logged one's inclusion proof in that checkpoint's tree.
pub struct Appended {
    pub outcomes: Vec<Outcome>,
    pub proofs: Vec<Option<Vec<Hash>>>,
    pub size: u64,
    /// The checkpoint as a JSON string (quoted and escaped; a lossy view
    /// of bytes that are not UTF-8), made once for the whole batch.
    pub checkpoint: std::sync::Arc<str>,
}

/// `note` as a JSON string, as serde_json writes it.
pub fn json_string(note: &[u8]) -> std::sync::Arc<str> {
    serde_json::to_string(&*String::from_utf8_lossy(note))
        .unwrap_or_else(|_| "\"\"".into())
        .into()
}

/// A committed batch on its way to the prover: the requests' shapes (how
/// many submissions each, where to answer) and what the batch gave.
struct Committed {
    shape: Vec<(usize, Reply)>,
    outcomes: Vec<Outcome>,
    size: u64,
    checkpoint: Vec<u8>,
    /// The tiles the batch wrote: its proofs are made from them.
    tiles: Vec<(u8, u64, Vec<u8>)>,
}

/// Starts the two threads and returns the sequencer's, which ends once
/// every sender is dropped (the server shut down) and the prover has
/// answered every committed batch: the batch in hand is finished, nothing
/// queued after the last batch is left unanswered (its senders get an
/// error when the queue is dropped).
///
/// `chit-sequencer` appends batch after batch; `chit-prover` (on a store
/// connection of its own) makes each committed batch's inclusion proofs
/// and answers its requests, so the next batch's append does not wait for
/// them. A request is answered only after its batch is committed.
pub fn start(
    log: Log,
    prover: Log,
    jobs: mpsc::UnboundedReceiver<Job>,
    checking: Checking,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let (to_prover, committed) = std::sync::mpsc::channel::<Committed>();
    let proving = std::thread::Builder::new()
        .name("chit-prover".into())
        .spawn(move || prove(prover, committed))?;
    std::thread::Builder::new()
        .name("chit-sequencer".into())
        .spawn(move || {
            sequence(log, to_prover, jobs, checking);
            // The sender is dropped: the prover ends once it has answered
            // every committed batch.
            let _ = proving.join();
        })
}

fn sequence(
    mut log: Log,
    to_prover: std::sync::mpsc::Sender<Committed>,
    mut jobs: mpsc::UnboundedReceiver<Job>,
    checking: Checking,
) {
    while let Some(first) = jobs.blocking_recv() {
        let mut batch = vec![first];
        let mut count = batch[0].checked.len();
        let mut waited = std::time::Duration::ZERO;
        loop {
            take_waiting(&mut jobs, &mut batch, &mut count);
            // A short batch waits for requests being checked (at most
            // GATHER_WAIT); with none being checked, it goes at once.
            if count >= GATHER || waited >= GATHER_WAIT || checking.now() == 0 {
                break;
            }
            std::thread::sleep(GATHER_STEP);
            waited += GATHER_STEP;
        }
        // The lease for this batch only: several servers on one store take
        // turns, and a server that dies gives its turn up with its
        // connection.
        let started = std::time::Instant::now();
        let leased = log
            .lease(LEASE_WAIT)
            .map_err(|e| WriteError::Lease(e.to_string()));
        if leased.is_ok() {
            // What came while the lease was awaited (another server's
            // batch) joins this batch: its wait is over too.
            take_waiting(&mut jobs, &mut batch, &mut count);
        }
        let mut checked = Vec::with_capacity(count);
        let mut shape = Vec::with_capacity(batch.len());
        for j in batch {
            shape.push((j.checked.len(), j.reply));
            checked.extend(j.checked);
        }
        let appended = leased.and_then(|()| {
            let r = log.submit_checked(&checked).map_err(|e| match e {
                // A store's write error says already that nothing of the
                // batch was acknowledged.
                chit_logstore::LogError::Store(
                    chit_logstore::StoreError::Write(why) | chit_logstore::StoreError::Fenced(why),
                ) => {
                    WriteError::Store(why)
                }
                e => WriteError::Log(e.to_string()),
            });
            // What was committed is answered as committed; a lease not
            // given back is the connection's until it ends.
            if let Err(e) = log.release() {
                tracing::warn!(target: "chit::sequencer", error = %e, "the lease was not given back");
            }
            r
        });
        match appended {
            Ok(sub) => {
                tracing::info!(
                    target: "chit::sequencer",
                    entries = checked.len(),
                    size = sub.size,
                    ms = started.elapsed().as_secs_f64() * 1e3,
                    "batch written"
                );
                let c = Committed {
                    shape,
                    outcomes: sub.outcomes,
                    size: sub.size,
                    checkpoint: sub.checkpoint,
                    tiles: sub.tiles,
                };
                // A prover that has stopped (it panicked): answered here.
                if let Err(std::sync::mpsc::SendError(c)) = to_prover.send(c) {
                    answer(&mut log, c);
                }
            }
            Err(why) => {
                tracing::error!(target: "chit::sequencer", error = %why, entries = checked.len(), "a batch was not written; its requests are answered 503");
                for (_, reply) in shape {
                    reply(Err(why.clone()));
                }
            }
        }
    }
}

/// Adds the jobs already queued to `batch` (its submissions counted in
/// `count`), without waiting, until it holds [`BATCH`] submissions.
fn take_waiting(jobs: &mut mpsc::UnboundedReceiver<Job>, batch: &mut Vec<Job>, count: &mut usize) {
    while *count < BATCH {
        match jobs.try_recv() {
            Ok(j) => {
                *count += j.checked.len();
                batch.push(j);
            }
            Err(_) => break,
        }
    }
}

/// The prover's loop: each committed batch proven and answered, in order.
fn prove(mut log: Log, committed: std::sync::mpsc::Receiver<Committed>) {
    while let Ok(c) = committed.recv() {
        answer(&mut log, c);
    }
}

/// Answers a committed batch's requests: every proof of the batch at once
/// (their subtrees shared), each request its own outcomes and proofs.
fn answer(log: &mut Log, c: Committed) {
    let indexes: Vec<u64> = c.outcomes.iter().filter_map(Outcome::index).collect();
    let mut proofs = match log.inclusion_proofs_over(&indexes, c.size, &c.tiles) {
        Ok(p) => p.into_iter(),
        Err(e) => {
            let why = WriteError::Proofs(e.to_string());
            tracing::error!(target: "chit::sequencer", error = %why);
            for (_, reply) in c.shape {
                reply(Err(why.clone()));
            }
            return;
        }
    };
    let mut outcomes = c.outcomes.into_iter();
    let checkpoint = json_string(&c.checkpoint);
    for (n, reply) in c.shape {
        let mine: Vec<Outcome> = outcomes.by_ref().take(n).collect();
        let mine_proofs = mine
            .iter()
            .map(|o| o.index().and_then(|_| proofs.next()))
            .collect();
        reply(Ok(Appended {
            outcomes: mine,
            proofs: mine_proofs,
            size: c.size,
            checkpoint: checkpoint.clone(),
        }));
    }
}
