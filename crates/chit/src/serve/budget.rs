//! The bytes of request bodies the server holds at once, across every
//! connection (`--max-in-flight`). A body takes its bytes from the budget
//! as they arrive (so what a client holds is what it sent) and gives them
//! back when its request is answered; one that would pass the budget is
//! refused (503, Retry-After), never buffered: at once when its announced
//! length is more than is free.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The budget, shared by every request.
#[derive(Clone, Debug)]
pub struct Budget(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    limit: usize,
    held: AtomicUsize,
}

impl Budget {
    pub fn new(limit: usize) -> Budget {
        Budget(Arc::new(Inner {
            limit,
            held: AtomicUsize::new(0),
        }))
    }

    pub fn limit(&self) -> usize {
        self.0.limit
    }

    /// Bytes held now.
    pub fn held(&self) -> usize {
        self.0.held.load(Ordering::Relaxed)
    }

    /// Bytes free now (taken by nobody: what another may take at once).
    pub fn free(&self) -> usize {
        self.0.limit.saturating_sub(self.held())
    }

    /// A share of nothing yet, grown with [`Held::take`].
    pub fn share(&self) -> Held {
        Held {
            budget: self.clone(),
            bytes: 0,
        }
    }
}

/// Bytes taken from the budget, given back when dropped.
#[derive(Debug)]
pub struct Held {
    budget: Budget,
    bytes: usize,
}

impl Held {
    /// Takes `n` more bytes; false (and nothing taken) when that would pass
    /// the budget.
    pub fn take(&mut self, n: usize) -> bool {
        let inner = &self.budget.0;
        let taken = inner
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(n).filter(|&t| t <= inner.limit)
            })
            .is_ok();
        if taken {
            self.bytes += n;
        }
        taken
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.0.held.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_bounded_and_given_back() {
        let b = Budget::new(100);
        let mut one = b.share();
        assert!(one.take(60));
        let mut two = b.share();
        assert!(!two.take(41), "past the budget");
        assert!(two.take(40));
        assert_eq!(b.held(), 100);
        assert!(!two.take(1));
        drop(one);
        assert_eq!(b.held(), 40);
        assert!(two.take(60));
        drop(two);
        assert_eq!(b.held(), 0);
        assert!(!b.share().take(usize::MAX), "no overflow");
    }

    #[test]
    fn many_threads_never_pass_the_budget() {
        let b = Budget::new(1000);
        let peak = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..8 {
                let (b, peak) = (b.clone(), peak.clone());
                s.spawn(move || {
                    for _ in 0..2000 {
                        let mut h = b.share();
                        if h.take(300) {
                            peak.fetch_max(b.held(), Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert!(peak.load(Ordering::Relaxed) <= 1000);
        assert_eq!(b.held(), 0);
    }
}
