//! The one thread that stores a witness's new latest checkpoints: it
//! takes every advance waiting, writes them in one transaction (one sync)
//! and only then lets their requests answer. A request holds its origin's
//! lock until its advance is stored, so a batch never holds two advances
//! of one origin.

use chit_logstore::witness::{Advance, WitnessState};
use tokio::sync::oneshot;

/// The most advances written in one transaction.
const BATCH: usize = 1024;

type Job = (Advance, oneshot::Sender<Result<(), String>>);

/// The writer's queue.
pub struct Writer {
    jobs: std::sync::mpsc::Sender<Job>,
}

impl Writer {
    /// Starts the thread; it ends when the writer is dropped.
    pub fn start(mut state: WitnessState) -> Writer {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("chit-witness-writer".into())
            .spawn(move || {
                while let Ok(first) = queue.recv() {
                    let mut batch = vec![first];
                    while batch.len() < BATCH {
                        match queue.try_recv() {
                            Ok(j) => batch.push(j),
                            Err(_) => break,
                        }
                    }
                    let advances: Vec<Advance> = batch.iter().map(|(a, _)| a.clone()).collect();
                    if batch.len() > 1 && state.advance(&advances).is_err() {
                        // One advance the store refuses fails no other:
                        // each on its own.
                        for (a, done) in batch {
                            let _ = done.send(
                                state
                                    .advance(std::slice::from_ref(&a))
                                    .map_err(|e| e.to_string()),
                            );
                        }
                        continue;
                    }
                    let result = if batch.len() > 1 {
                        Ok(())
                    } else {
                        state.advance(&advances).map_err(|e| e.to_string())
                    };
                    for (_, done) in batch {
                        let _ = done.send(result.clone());
                    }
                }
            })
            .expect("a thread");
        Writer { jobs }
    }

    /// Stores one advance, with whatever else is waiting.
    pub async fn advance(&self, a: Advance) -> Result<(), String> {
        let (done, stored) = oneshot::channel();
        self.jobs
            .send((a, done))
            .map_err(|_| "the writer stopped".to_string())?;
        stored.await.map_err(|_| "the writer stopped".to_string())?
    }
}
