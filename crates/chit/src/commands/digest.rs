//! `chit digest`: the digests a receipt should carry.

use super::{read_input, source_of, unknown_kind};
use crate::cli::DigestArgs;
use crate::exit::{CmdResult, Exit, Failure};
use crate::output::Output;
use chit_core::seal::{self, SealError};
use std::io::Write;

pub fn run(a: &DigestArgs, out: &mut Output) -> CmdResult {
    let limits = a.limits.limits();
    let bytes = read_input(&a.input, limits.max_size)?;
    let (kind, digests) = seal::digests(&bytes, a.kind, &limits).map_err(|e| match e {
        SealError::Unreadable(why) => Failure::error(format!(
            "cannot read {}: {}",
            source_of(&a.input).label(),
            why.explained()
        )),
        SealError::UnknownKind => unknown_kind(&a.input),
        SealError::NotAnObject => {
            Failure::error(format!("{} is not a JSON object", a.input.display()))
        }
        e if e.is_invalid() => Failure::invalid(format!("{}: {e}", a.input.display())),
        e => Failure::error(e.to_string()),
    })?;
    let text = match kind {
        // One digest is printed alone, ready for a script.
        chit_core::Kind::RunReceipt => format!("{}\n", digests[0].1),
        _ => {
            let width = digests.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
            digests
                .iter()
                .map(|(name, d)| format!("{name:width$} {d}\n"))
                .collect()
        }
    };
    out.write_all(text.as_bytes()).map_err(Failure::write)?;
    Ok(Exit::Ok)
}
