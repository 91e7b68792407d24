//! Structured logs with `tracing`: one JSON object a line on standard
//! error, with `timestamp`, `level`, `target` and the event's fields.
//!
//! | target | level | fields |
//! | --- | --- | --- |
//! | `chit::access` | info | `method`, `path`, `status`, `ms`, `token` (the token's name) |
//! | `chit::serve` | info | `origin`, `addr` (listening), then `stopping`, `stopped` |
//! | `chit::net` | warn | `error`: a connection not accepted |
//! | `chit::sequencer` | info, warn, error | `entries`, `size`, `ms` (a batch written); `error` |
//!
//! The lines are written by a thread of their own, every 100 ms, all that
//! are waiting in one write: a request never waits on standard error, and
//! no line wakes a thread. Stopping the server writes what is left.
//! `--quiet` keeps warnings and errors only.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use tracing_subscriber::fmt::MakeWriter;

/// How long a line may wait in memory before the writer thread writes it.
const EVERY: Duration = Duration::from_millis(100);

/// Bytes waiting that wake the writer before its time.
const FULL: usize = 1 << 20;

/// Bytes that may wait at most: past them (standard error is not being
/// read) a line is dropped and counted, rather than the server's memory
/// growing without end (with the lines being written, at most twice this).
const CAP: usize = 64 << 20;

/// What the events write into and the writer thread takes from: lines are
/// appended under a lock that is held for a copy, and nobody is woken per
/// line (a wake-up a request cost a busy server more than the line).
#[derive(Default)]
struct Shared {
    state: Mutex<Pending>,
    /// The writer waits here: its time, a full buffer, or a flush.
    wake: Condvar,
    /// A flush waits here for its generation to be written.
    written: Condvar,
}

#[derive(Default)]
struct Pending {
    buf: Vec<u8>,
    /// Lines dropped since the last write (the buffer was at [`CAP`]).
    dropped: u64,
    /// Flushes asked for, and the last one written.
    asked: u64,
    done: u64,
}

/// Where the subscriber writes: each event a [`Line`].
#[derive(Clone)]
struct Lines(Arc<Shared>);

/// An event's bytes go straight to the pending ones (tracing's formatter
/// formats a whole line in a buffer of its own, then writes it once).
struct Line<'a>(&'a Shared);

impl Write for Line<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let mut p = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        if p.buf.len() + b.len() > CAP {
            p.dropped += 1;
        } else {
            p.buf.extend_from_slice(b);
            if p.buf.len() >= FULL {
                self.0.wake.notify_one();
            }
        }
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Lines {
    type Writer = Line<'a>;
    fn make_writer(&'a self) -> Line<'a> {
        Line(&self.0)
    }
}

/// The installed logger; [`Logging::flush`] waits until every line so far
/// is written.
pub struct Logging(Arc<Shared>);

/// What is pending is written when the handle goes, on every way out.
impl Drop for Logging {
    fn drop(&mut self) {
        self.flush();
    }
}

impl Logging {
    pub fn flush(&self) {
        let mut p = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        p.asked += 1;
        let want = p.asked;
        self.0.wake.notify_one();
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while p.done < want {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            p = match self.0.written.wait_timeout(p, left) {
                Ok((p, _)) => p,
                Err(e) => e.into_inner().0,
            };
        }
    }
}

/// The writer thread: every [`EVERY`] (or sooner, when a flush is asked or
/// [`FULL`] bytes wait), what is pending is taken and written to `err` in
/// one write.
fn write_lines(shared: &Shared, mut err: impl Write) -> ! {
    let mut out = Vec::new();
    loop {
        let (asked, dropped) = {
            let mut p = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            if p.asked == p.done && p.buf.len() < FULL {
                p = match shared.wake.wait_timeout(p, EVERY) {
                    Ok((p, _)) => p,
                    Err(e) => e.into_inner().0,
                };
            }
            std::mem::swap(&mut p.buf, &mut out);
            (p.asked, std::mem::take(&mut p.dropped))
        };
        if dropped > 0 {
            // Pending, and written next time.
            tracing::warn!(
                target: "chit::serve",
                dropped,
                "log lines were dropped: standard error was not being read"
            );
        }
        if !out.is_empty() {
            let _ = err.write_all(&out);
            let _ = err.flush();
            out.clear();
        }
        let mut p = shared.state.lock().unwrap_or_else(|e| e.into_inner());
        if asked > p.done {
            p.done = asked;
            shared.written.notify_all();
        }
    }
}

/// Installs the JSON logger for this process (once: a later call returns a
/// handle on the first's writer, and its level stays the first's).
pub fn init(quiet: bool) -> Logging {
    static INSTALLED: std::sync::OnceLock<Arc<Shared>> = std::sync::OnceLock::new();
    let shared = INSTALLED.get_or_init(|| {
        let shared = Arc::new(Shared::default());
        let writer = shared.clone();
        let _ = std::thread::Builder::new()
            .name("chit-log-writer".into())
            .spawn(move || write_lines(&writer, std::io::stderr()));
        let level = if quiet {
            tracing::Level::WARN
        } else {
            tracing::Level::INFO
        };
        let subscriber = tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .with_target(true)
            .with_max_level(level)
            .with_writer(Lines(shared.clone()))
            .finish();
        let _ = tracing::subscriber::set_global_default(subscriber);
        shared
    });
    Logging(shared.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the writer thread wrote, shared with the test.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn line(to: &Lines, text: &str) {
        to.make_writer().write_all(text.as_bytes()).unwrap();
    }

    #[test]
    fn lines_are_written_in_order_and_a_flush_waits_for_them() {
        let shared = Arc::new(Shared::default());
        let sink = Sink::default();
        let (w, s) = (shared.clone(), sink.clone());
        std::thread::spawn(move || write_lines(&w, s));
        let lines = Lines(shared.clone());
        for i in 0..1000 {
            line(&lines, &format!("{i}\n"));
        }
        Logging(shared).flush();
        let got = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let want: String = (0..1000).map(|i| format!("{i}\n")).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn past_the_cap_a_line_is_dropped_and_counted() {
        let shared = Arc::new(Shared::default());
        let lines = Lines(shared.clone());
        let big = "x".repeat(CAP / 2);
        line(&lines, &big);
        line(&lines, &big);
        line(&lines, "one more\n");
        let p = shared.state.lock().unwrap();
        assert_eq!(p.buf.len(), CAP);
        assert_eq!(p.dropped, 1);
    }
}
