//! `chit serve --witness-policy`: the log asks its witnesses to cosign
//! its checkpoints (C2SP tlog-witness), beside the sequencing, never in
//! its way.
//!
//! - One task a witness (each witness line of the policy with a URL): it
//!   takes the newest checkpoint to cosign, sends it with the consistency
//!   proof from the size the witness last cosigned (learnt from a 409 when
//!   unknown), and reports the cosignature, or why there is none.
//! - One coordinator: it follows the log's head, sets the checkpoint to
//!   cosign (a new one once the last reached the quorum or every witness
//!   answered for it, at most one every `--witness-interval`; the same
//!   one again, of the witnesses that did not cosign it, while the log
//!   has not grown and its quorum is not met), checks and stores each cosignature with its
//!   checkpoint (so it survives a restart and reaches every proof made
//!   from the store), and publishes the newest checkpoint whose
//!   cosignatures meet the policy's quorum.
//!
//! A witness that is down, slow (past `--witness-timeout`) or lying (a
//! cosignature that does not verify) holds up nothing but its own
//! cosignature: it is logged and counted, and asked again, after a pause
//! that doubles up to 30 s, with the newest checkpoint.

use chit_log::checkpoint::add_signatures;
use chit_log::note::{self, Signature, Verifier};
use chit_log::policy::Policy;
use chit_log::witness::{self, AddCheckpoint};
use chit_log::CosignatureVerifier;
use chit_logstore::Log;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// How often the coordinator looks at the log's head.
const POLL: Duration = Duration::from_millis(50);
/// The longest pause before a failed witness is asked again.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A checkpoint and its note.
#[derive(Clone, Debug)]
pub struct Cosigned {
    pub size: u64,
    pub note: Vec<u8>,
}

/// One witness's counts, for `/metrics`.
#[derive(Default)]
pub struct Counts {
    pub cosigned: AtomicU64,
    pub failed: AtomicU64,
}

/// What the rest of the server reads of the witnessing.
pub struct Witnessing {
    pub policy: Policy,
    /// The newest checkpoint whose cosignatures meet the quorum.
    pub cosigned: watch::Receiver<Option<Arc<Cosigned>>>,
    /// By witness (the policy's order).
    pub counts: Vec<Counts>,
}

impl Witnessing {
    /// The size of the newest cosigned checkpoint (0 for none).
    pub fn cosigned_size(&self) -> u64 {
        self.cosigned.borrow().as_ref().map_or(0, |c| c.size)
    }
}

/// A checkpoint to have cosigned, and the witnesses whose cosignature on
/// it is stored already (not asked again).
struct Round {
    checkpoint: Arc<Cosigned>,
    stored: Vec<usize>,
}

/// A witness's answer about one checkpoint.
struct Report {
    witness: usize,
    size: u64,
    result: Result<Signature, String>,
}

/// The newest checkpoint the store keeps that meets the quorum (with the
/// cosignatures stored before a restart).
fn stored_cosigned(log: &mut Log, policy: &Policy) -> Result<Option<Cosigned>, String> {
    Ok(log
        .newest_cosigned(policy, 0)
        .map_err(|e| e.to_string())?
        .map(|(size, note)| Cosigned { size, note }))
}

/// Starts the coordinator and one task a witness, on the current runtime.
/// `log` is a store connection of the witnessing's own.
pub fn start(
    policy: Policy,
    mut log: Log,
    timeout: Duration,
    interval: Duration,
) -> Result<Arc<Witnessing>, String> {
    let initial = stored_cosigned(&mut log, &policy)?.map(Arc::new);
    let (publish, cosigned) = watch::channel(initial);
    let w = Arc::new(Witnessing {
        counts: policy.witnesses.iter().map(|_| Counts::default()).collect(),
        policy,
        cosigned,
    });
    let log = Arc::new(Mutex::new(log));
    let (target_tx, target_rx) = watch::channel::<Option<Arc<Round>>>(None);
    let (reports, inbox) = mpsc::unbounded_channel();
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    let mut asked = Vec::new();
    for (i, witness) in w.policy.witnesses.iter().enumerate() {
        let Some(url) = &witness.url else {
            tracing::warn!(
                target: "chit::witnessing",
                witness = %witness.name,
                "the policy gives this witness no URL: it is never asked"
            );
            continue;
        };
        asked.push(i);
        tokio::spawn(ask(
            Asker {
                index: i,
                name: witness.name.clone(),
                url: format!("{}/add-checkpoint", url.trim_end_matches('/')),
                key: witness.verifier.clone(),
                client: client.clone(),
                log: log.clone(),
            },
            target_rx.clone(),
            reports.clone(),
        ));
    }
    if asked.is_empty() {
        return Err(
            "the policy gives none of its witnesses a URL (witness NAME VKEY URL): none can be asked"
                .into(),
        );
    }
    tokio::spawn(coordinate(
        w.clone(),
        log,
        target_tx,
        inbox,
        publish,
        asked,
        interval,
    ));
    Ok(w)
}

async fn blocking<T: Send + 'static>(
    log: &Arc<Mutex<Log>>,
    f: impl FnOnce(&mut Log) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let log = log.clone();
    tokio::task::spawn_blocking(move || {
        let mut l = log.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut l)
    })
    .await
    .map_err(|e| e.to_string())?
}

async fn coordinate(
    w: Arc<Witnessing>,
    log: Arc<Mutex<Log>>,
    target_tx: watch::Sender<Option<Arc<Round>>>,
    mut inbox: mpsc::UnboundedReceiver<Report>,
    publish: watch::Sender<Option<Arc<Cosigned>>>,
    asked: Vec<usize>,
    interval: Duration,
) {
    // The checkpoint being cosigned, and who answered for it.
    let mut target: Option<Arc<Cosigned>> = None;
    let mut answered: Vec<usize> = Vec::new();
    let mut cosigners: Vec<usize> = Vec::new();
    let mut tick = tokio::time::interval(POLL);
    let mut last_round: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            report = inbox.recv() => {
                let Some(r) = report else { return };
                let is_target = target.as_ref().is_some_and(|t| t.size == r.size);
                match r.result {
                    Ok(sig) => {
                        match blocking(&log, move |l| merge(l, r.size, sig)).await {
                            Ok(note) => {
                                w.counts[r.witness].cosigned.fetch_add(1, Ordering::Relaxed);
                                if is_target && !cosigners.contains(&r.witness) {
                                    cosigners.push(r.witness);
                                }
                                if w.policy.open(&note).is_ok_and(|o| o.quorum)
                                    && r.size > w.cosigned_size()
                                {
                                    tracing::info!(target: "chit::witnessing", size = r.size, "cosigned checkpoint published");
                                    publish.send_replace(Some(Arc::new(Cosigned { size: r.size, note })));
                                }
                            }
                            Err(e) => tracing::error!(target: "chit::witnessing", size = r.size, error = %e, "a cosignature could not be stored"),
                        }
                    }
                    Err(e) => {
                        w.counts[r.witness].failed.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(
                            target: "chit::witnessing",
                            witness = %w.policy.witnesses[r.witness].name,
                            size = r.size,
                            error = %e,
                            "no cosignature"
                        );
                    }
                }
                if is_target && !answered.contains(&r.witness) {
                    answered.push(r.witness);
                }
            }
            _ = tick.tick() => {}
        }
        // A new checkpoint to cosign, once the last is settled: its
        // quorum met, or every witness answered for it.
        let settled = match &target {
            None => true,
            Some(_) => {
                w.policy.quorum_met(&cosigners) || asked.iter().all(|i| answered.contains(i))
            }
        };
        if !settled || last_round.is_some_and(|t| t.elapsed() < interval) {
            continue;
        }
        let head = blocking(&log, |l| l.head().map_err(|e| e.to_string())).await;
        let Ok((size, note)) = head else { continue };
        if size == 0 || w.cosigned_size() >= size {
            continue;
        }
        match &target {
            // The same checkpoint again, its quorum not met: asked of the
            // witnesses that did not cosign it (one back from a failure
            // cosigns what the log has, not what it had).
            Some(t) if t.size >= size => {
                answered.retain(|i| cosigners.contains(i));
                last_round = Some(tokio::time::Instant::now());
                target_tx.send_replace(Some(Arc::new(Round {
                    checkpoint: t.clone(),
                    stored: cosigners.clone(),
                })));
            }
            _ => {
                let t = Arc::new(Cosigned { size, note });
                last_round = Some(tokio::time::Instant::now());
                target = Some(t.clone());
                answered.clear();
                cosigners.clear();
                target_tx.send_replace(Some(Arc::new(Round {
                    checkpoint: t,
                    stored: Vec::new(),
                })));
            }
        }
    }
}

/// Adds a witness's cosignature to the stored note of checkpoint `size`
/// (as it is now: another may have added one), and returns the new note.
fn merge(log: &mut Log, size: u64, sig: Signature) -> Result<Vec<u8>, String> {
    for _ in 0..8 {
        let old = log
            .store()
            .checkpoint_at(size)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("no checkpoint of size {size} is kept"))?;
        let new = add_signatures(&old, std::slice::from_ref(&sig)).map_err(|e| e.to_string())?;
        if log
            .store()
            .replace_checkpoint(size, &old, &new)
            .map_err(|e| e.to_string())?
        {
            return Ok(new);
        }
    }
    Err("the checkpoint kept changing".into())
}

/// One witness's connection.
struct Asker {
    index: usize,
    name: String,
    url: String,
    key: CosignatureVerifier,
    client: reqwest::Client,
    log: Arc<Mutex<Log>>,
}

async fn ask(
    a: Asker,
    mut targets: watch::Receiver<Option<Arc<Round>>>,
    reports: mpsc::UnboundedSender<Report>,
) {
    // The size this witness last cosigned, when known.
    let mut known: Option<u64> = None;
    let mut backoff = Duration::ZERO;
    while targets.changed().await.is_ok() {
        // Back from a failure: the newest target after the wait, not the
        // one that woke it.
        if !backoff.is_zero() {
            tokio::time::sleep(backoff).await;
        }
        let Some(round) = targets.borrow_and_update().clone() else {
            continue;
        };
        if round.stored.contains(&a.index) {
            continue;
        }
        let t = &round.checkpoint;
        let result = submit(&a, t, &mut known).await;
        backoff = match result {
            Ok(_) => Duration::ZERO,
            Err(_) => (backoff * 2).clamp(Duration::from_millis(500), MAX_BACKOFF),
        };
        if reports
            .send(Report {
                witness: a.index,
                size: t.size,
                result,
            })
            .is_err()
        {
            return;
        }
    }
    tracing::debug!(target: "chit::witnessing", witness = %a.name, "stopped");
}

/// Sends one checkpoint to the witness: from the size it last cosigned,
/// learning that size from a 409 once.
async fn submit(a: &Asker, t: &Cosigned, known: &mut Option<u64>) -> Result<Signature, String> {
    for _ in 0..2 {
        let old = known.unwrap_or(0);
        if old > t.size {
            return Err(format!(
                "the witness has cosigned size {old}, past this checkpoint's {}",
                t.size
            ));
        }
        let proof = if old == 0 || old == t.size {
            Vec::new()
        } else {
            let size = t.size;
            blocking(&a.log, move |l| {
                l.consistency_proof(old, size).map_err(|e| e.to_string())
            })
            .await?
        };
        let body = AddCheckpoint {
            old_size: old,
            proof,
            note: t.note.clone(),
        }
        .to_bytes();
        let response = a
            .client
            .post(&a.url)
            .body(body)
            .send()
            .await
            .map_err(|e| format!("{}: {e}", a.url))?;
        let status = response.status().as_u16();
        // At most 64 KiB: a few cosignature lines.
        let text = crate::shared::net::read_body(response, 64 * 1024).await?;
        match status {
            200 => {
                let sig = cosignature_of(&a.key, &t.note, &text)?;
                *known = Some(t.size);
                return Ok(sig);
            }
            409 => {
                let size = witness::parse_size(&text).ok_or("a 409 whose body is not a size")?;
                *known = Some(size);
            }
            code => {
                let why = String::from_utf8_lossy(&text);
                return Err(format!(
                    "HTTP {code}: {}",
                    why.lines()
                        .next()
                        .unwrap_or("")
                        .chars()
                        .take(200)
                        .collect::<String>()
                ));
            }
        }
    }
    Err("the witness's size changed twice while asked".into())
}

/// The witness's cosignature among the lines it answered, verified over
/// the checkpoint's text (not its note, which may hold an earlier
/// cosignature of this witness's): lines by other keys are ignored, as
/// the protocol asks; one with no timestamp is refused, as it must not be
/// made.
fn cosignature_of(
    key: &CosignatureVerifier,
    note: &[u8],
    lines: &[u8],
) -> Result<Signature, String> {
    let text = note::parse(note).map_err(|e| e.to_string())?.text;
    let joined = [text.as_bytes(), b"\n", lines].concat();
    let opened = note::open(&joined, &[key as &dyn Verifier])
        .map_err(|e| format!("its answer does not hold a valid cosignature: {e}"))?;
    let sig = opened
        .verified
        .into_iter()
        .next()
        .map(|(_, s)| s)
        .ok_or_else(|| format!("no cosignature by {}", key.name()))?;
    if chit_log::cosignature::cosignature_time(&sig.bytes) == Some(0) {
        return Err("a cosignature with no timestamp (0)".into());
    }
    Ok(sig)
}

/// The server's metrics text with the witnessing's series added before
/// its end marker: each witness's cosignatures and failures, and the size
/// of the newest cosigned checkpoint.
pub fn with_metrics(w: &Witnessing, text: String) -> String {
    use std::fmt::Write as _;
    let body = text.strip_suffix("# EOF\n").unwrap_or(&text);
    let mut out = body.to_string();
    let quoted = |s: &str| {
        s.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
    };
    for (name, help, pick) in [
        (
            "chit_witness_cosignatures",
            "Cosignatures a witness returned that verified and were stored.",
            0,
        ),
        (
            "chit_witness_failures",
            "Checkpoints a witness did not cosign (down, slow, refusing or lying).",
            1,
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (i, c) in w.counts.iter().enumerate() {
            let n = if pick == 0 { &c.cosigned } else { &c.failed };
            let _ = writeln!(
                out,
                "{name}_total{{witness=\"{}\"}} {}",
                quoted(&w.policy.witnesses[i].name),
                n.load(Ordering::Relaxed)
            );
        }
    }
    let _ = writeln!(
        out,
        "# HELP chit_cosigned_size The size of the newest checkpoint whose cosignatures meet the quorum.\n# TYPE chit_cosigned_size gauge\nchit_cosigned_size {}",
        w.cosigned_size()
    );
    if text.ends_with("# EOF\n") {
        out.push_str("# EOF\n");
    }
    out
}
