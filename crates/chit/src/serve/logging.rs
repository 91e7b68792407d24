//! Structured logs with `tracing`: one JSON object a line on standard
//! error, with `timestamp`, `level`, `target` and the event's fields.
//!
//! | target | level | fields |
//! | --- | --- | --- |
//! | `chit::access` | info | `method`, `path`, `status`, `ms`, `token` (the token's name) |
//! | `chit::serve` | info | `origin`, `addr` (listening), then `stopping`, `stopped` |
//! | `chit::serve` | warn | `error`: a connection not accepted |
//! | `chit::sequencer` | info, warn, error | `entries`, `size`, `ms` (a batch written); `error` |
//!
//! The lines are written by a thread of their own, many in one write under
//! load: a request never waits on standard error. `--quiet` keeps warnings
//! and errors only.

use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;
use tracing_subscriber::fmt::MakeWriter;

enum Msg {
    Line(Vec<u8>),
    Flush(mpsc::SyncSender<()>),
}

/// Where the subscriber writes: each event a fresh [`Line`].
#[derive(Clone)]
struct Lines(mpsc::Sender<Msg>);

/// One event's bytes, handed to the writer thread when dropped.
struct Line {
    buf: Vec<u8>,
    to: mpsc::Sender<Msg>,
}

impl Write for Line {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            let _ = self.to.send(Msg::Line(std::mem::take(&mut self.buf)));
        }
    }
}

impl<'a> MakeWriter<'a> for Lines {
    type Writer = Line;
    fn make_writer(&'a self) -> Line {
        Line {
            buf: Vec::with_capacity(256),
            to: self.0.clone(),
        }
    }
}

/// The installed logger; [`Logging::flush`] waits until every line so far
/// is written.
pub struct Logging(mpsc::Sender<Msg>);

impl Logging {
    pub fn flush(&self) {
        let (tx, rx) = mpsc::sync_channel(1);
        if self.0.send(Msg::Flush(tx)).is_ok() {
            let _ = rx.recv_timeout(Duration::from_secs(2));
        }
    }
}

/// Installs the JSON logger for this process (once; a second call only
/// returns a handle on the first's writer).
pub fn init(quiet: bool) -> Logging {
    let (tx, rx) = mpsc::channel::<Msg>();
    let _ = std::thread::Builder::new()
        .name("chit-log-writer".into())
        .spawn(move || {
            let mut err = std::io::BufWriter::with_capacity(1 << 16, std::io::stderr());
            let write = |m: Msg, err: &mut std::io::BufWriter<std::io::Stderr>| match m {
                Msg::Line(b) => {
                    let _ = err.write_all(&b);
                }
                Msg::Flush(done) => {
                    let _ = err.flush();
                    let _ = done.send(());
                }
            };
            while let Ok(first) = rx.recv() {
                write(first, &mut err);
                while let Ok(more) = rx.try_recv() {
                    write(more, &mut err);
                }
                let _ = err.flush();
            }
        });
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
        .with_writer(Lines(tx.clone()))
        .finish();
    let _ = tracing::subscriber::set_global_default(subscriber);
    Logging(tx)
}
