//! Signed envelopes as the commands write them.

use crate::exit::{CmdResult, Exit, Failure};
use crate::files::{self, Replace, Written};
use crate::output::Output;
use chit_core::envelope::Envelope;
use std::io::Write;
use std::path::Path;

/// Seconds since 1970, for a statement's timestamp.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Writes a signed envelope to `path` (see [`files::write`]; an existing
/// file only with `force`), reporting a file written with
/// `said(path, art id)` (on standard error when written into a device or
/// a FIFO), or to standard output itself when there is no path.
pub fn write_envelope(
    env: &Envelope,
    path: Option<&Path>,
    force: bool,
    out: &mut Output,
    said: impl FnOnce(&Path, &str) -> String,
) -> CmdResult {
    let text = env.to_json();
    match path {
        None => out.write_all(text.as_bytes()).map_err(Failure::write)?,
        Some(path) => {
            let line = said(path, &env.ids().artifact_id);
            match files::write(path, text.as_bytes(), Replace::IfForced(force))? {
                Written::File(_) => writeln!(out, "{line}").map_err(Failure::write)?,
                // Written into a device or a FIFO (/dev/stdout, say), the
                // envelope stands alone there: the line goes to stderr.
                Written::Into => eprintln!("chit: {line}"),
            }
        }
    }
    Ok(Exit::Ok)
}
