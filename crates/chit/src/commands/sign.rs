//! `chit sign`: check a payload as its kind, then sign a Treeship receipt
//! statement around it into a DSSE envelope.

use super::{read_input, source_of};
use crate::cli::SignArgs;
use crate::exit::{CmdResult, Exit, Failure};
use crate::files::{self, Replace, Written};
use crate::output::Output;
use chit_core::envelope::Envelope;
use chit_core::statement::{self, Claim, SignError};
use std::io::Write;
use std::path::Path;

pub fn run(a: &SignArgs, out: &mut Output) -> CmdResult {
    let limits = a.limits.limits();
    if let Some(path) = &a.out {
        files::check(path, Replace::IfForced(a.force))?;
    }
    let key = super::key::read_key(&a.key)?;
    let label = source_of(&a.payload).label();
    let bytes = read_input(&a.payload, limits.max_size)?;
    let doc = chit_core::json::parse(&bytes, &limits)
        .map_err(|e| Failure::error(format!("cannot read {label}: {e}")))?;
    let claim = Claim {
        kind: &a.kind,
        system: &a.system,
        subject: a.subject.as_deref(),
        at_unix_secs: now_secs(),
    };
    let env = statement::sign_checked(&key, claim, doc.root()).map_err(|e| match e {
        SignError::NotAnObject => Failure::invalid(format!("{label}: {e}")),
        SignError::Breaks { kind, .. } => Failure::invalid(format!(
            "refusing to sign {label}: {e} (run 'chit verify --kind {kind} {label}' for the details)"
        )),
        SignError::KindDiffers { .. } => Failure::error(format!("refusing to sign {label}: {e}")),
        SignError::Inexact { .. } => Failure::invalid(format!("refusing to sign {label}: {e}")),
        e => Failure::error(e.to_string()),
    })?;
    if chit_core::Kind::from_name(&a.kind).is_none() {
        eprintln!(
            "chit: warning: chit does not know the kind '{}'; the payload is signed as given, unchecked",
            a.kind
        );
    }
    write_envelope(&env, a.out.as_deref(), a.force, out, |path, art| {
        format!("signed {} {art} ({})", path.display(), a.kind)
    })
}

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
