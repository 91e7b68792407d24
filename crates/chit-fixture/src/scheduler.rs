//! The central batching loop: one decoding step for every active sequence
//! per `step`, with the batch size fed into the model's reductions.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::model::{splits_for, Model, State};
use crate::server::Recorder;
use crate::Mode;

/// A request handed to the scheduler.
pub struct NewSeq {
    pub prompt: Vec<u32>,
    pub max_tokens: usize,
    /// Each generated token is sent here; a failed send means the client
    /// went away.
    pub tokens: UnboundedSender<u32>,
}

struct Seq {
    state: State,
    remaining: usize,
    tokens: UnboundedSender<u32>,
}

/// Runs until every submitting handle is gone and no sequence is left.
pub fn run(
    model: Model,
    mode: Mode,
    max_batch: usize,
    step: Duration,
    mut incoming: UnboundedReceiver<NewSeq>,
    recorder: Arc<Recorder>,
) {
    let slots = match mode {
        Mode::OneSlot => 1,
        _ => max_batch.max(1),
    };
    let mut seqs: VecDeque<Seq> = VecDeque::new();
    let mut open = true;
    let admit = |seqs: &mut VecDeque<Seq>, new: NewSeq| {
        seqs.push_back(Seq {
            state: model.prefill(&new.prompt),
            remaining: new.max_tokens,
            tokens: new.tokens,
        })
    };
    let mut batch_tokens: Vec<u32> = Vec::new();
    loop {
        if seqs.is_empty() {
            recorder.running.store(0, Ordering::Relaxed);
            if !open {
                return;
            }
            // Idle: wait for work without spinning.
            match incoming.blocking_recv() {
                Some(new) => admit(&mut seqs, new),
                None => return,
            }
        }
        let started = Instant::now();
        while open {
            match incoming.try_recv() {
                Ok(new) => admit(&mut seqs, new),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => open = false,
            }
        }
        // Finished and abandoned sequences leave before the batch is formed.
        seqs.retain(|s| s.remaining > 0 && !s.tokens.is_closed());
        let batch = seqs.len().min(slots);
        if batch > 0 {
            let splits = splits_for(mode, batch);
            batch_tokens.clear();
            for seq in seqs.iter_mut().take(batch) {
                let token = model.next_token(&seq.state, splits);
                model.push(&mut seq.state, token);
                batch_tokens.push(token);
            }
            for (seq, &token) in seqs.iter_mut().zip(&batch_tokens) {
                seq.remaining -= 1;
                if seq.tokens.send(token).is_err() {
                    seq.remaining = 0;
                }
            }
            // Dropping a finished sequence's sender ends its stream.
            seqs.retain(|s| s.remaining > 0);
            recorder.steps.fetch_add(1, Ordering::Relaxed);
            recorder.max_batch.fetch_max(batch, Ordering::Relaxed);
            recorder.running.store(batch, Ordering::Relaxed);
        }
        if let Some(rest) = step.checked_sub(started.elapsed()) {
            std::thread::sleep(rest);
        }
    }
}
