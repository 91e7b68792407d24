//! `chit canon`: a document's canonical bytes (RFC 8785, or Lattice's
//! profile), exactly.

use super::{read_input, source_of};
use crate::cli::{CanonArgs, ProfileArg};
use crate::exit::{CmdResult, Exit, Failure};
use crate::inputs;
use crate::output::Output;
use chit_core::canon::{self, Profile};
use chit_core::lattice::Error;
use chit_core::{json, Limits};
use std::io::{IsTerminal, Write};

/// Appends one document's canonical bytes under `profile` to `out`, or
/// says why there are none; `line` places an error in JSON Lines.
fn canonicalise(
    bytes: &[u8],
    profile: ProfileArg,
    limits: &Limits,
    line: Option<usize>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let at = |why: String| match line {
        Some(n) => format!("line {n}: {why}"),
        None => why,
    };
    match profile {
        ProfileArg::Jcs => json::parse(bytes, limits)
            .map(|doc| canon::write(doc.root(), Profile::Jcs, out))
            .map_err(|e| match line {
                Some(n) => e.starting_at_line(n).to_string(),
                None => e.to_string(),
            }),
        // Lattice's profile reads lone surrogates chit's strict reader refuses.
        // A read error names its line and column (in the file, with --lines);
        // a value past the profile's rules names the line, with --lines.
        ProfileArg::Lattice => chit_core::lattice::parse(bytes)
            .map_err(|e| match (e, line) {
                (e @ Error::Profile(_), _) => at(format!("not writable in Lattice's profile: {e}")),
                (e, Some(n)) => e.starting_at_line(n).to_string(),
                (e, None) => e.to_string(),
            })
            .and_then(|v| {
                chit_core::lattice::canonical(&v)
                    .map_err(|e| at(format!("not writable in Lattice's profile: {e}")))
            })
            .map(|c| out.extend_from_slice(&c)),
    }
}

pub fn run(a: &CanonArgs, out: &mut Output) -> CmdResult {
    let limits = a.limits.limits();
    let source = source_of(&a.input);
    let mut buf = Vec::with_capacity(1 << 16);
    if !a.lines {
        let text = read_input(&a.input, limits.max_size)?;
        canonicalise(&text, a.profile, &limits, None, &mut buf)
            .map_err(|why| Failure::error(format!("cannot read {}: {why}", source.label())))?;
        // A newline for the person reading a terminal; a pipe gets the
        // canonical bytes alone.
        if std::io::stdout().is_terminal() {
            buf.push(b'\n');
        }
        out.write_all(&buf).map_err(Failure::write)?;
        return Ok(Exit::Ok);
    }
    let reader = inputs::open(&source)
        .map_err(|why| Failure::error(format!("cannot read {}: {why}", source.label())))?;
    for (n, line) in inputs::Lines::new(reader, limits.max_size) {
        let parsed = line
            .map_err(|why| format!("line {n}: {why}"))
            .and_then(|l| canonicalise(&l, a.profile, &limits, Some(n), &mut buf));
        if let Err(why) = parsed {
            // What was converted before the bad line is still written.
            out.write_all(&buf).map_err(Failure::write)?;
            return Err(Failure::error(format!(
                "cannot read {}: {why}",
                source.label()
            )));
        }
        buf.push(b'\n');
        if buf.len() > 1 << 20 {
            out.write_all(&buf).map_err(Failure::write)?;
            buf.clear();
        }
    }
    out.write_all(&buf).map_err(Failure::write)?;
    Ok(Exit::Ok)
}
