//! `chit seal`: check a receipt, then write its digests in.

use super::{read_input, source_of, unknown_kind};
use crate::cli::SealArgs;
use crate::exit::{CmdResult, Exit, Failure};
use crate::files::{self, Replace, Written};
use crate::output::Output;
use chit_core::seal::{self, SealError};
use std::io::Write;
use std::path::PathBuf;

pub fn run(a: &SealArgs, out: &mut Output) -> CmdResult {
    let limits = a.limits.limits();
    let label = source_of(&a.input).label();
    // Over the input (its job), to --out (an existing file only with
    // --force), or to standard output for `-`.
    let (target, replace): (PathBuf, Replace) = match &a.out {
        Some(out) => (out.clone(), Replace::IfForced(a.force)),
        None => (a.input.clone(), Replace::Yes),
    };
    if target.as_os_str() != "-" {
        files::check(&target, replace)?;
    }
    let text = read_input(&a.input, limits.max_size)?;
    let sealed = seal::seal(&text, a.kind, &limits).map_err(|e| match e {
        SealError::Unreadable(why) => {
            Failure::error(format!("cannot read {label}: {}", why.explained()))
        }
        SealError::UnknownKind => unknown_kind(&a.input),
        SealError::Breaks(rules) => Failure::invalid(format!(
            "refusing to seal {label}: it breaks {} (run 'chit verify {label}' for the details)",
            rules.join(", ")
        )),
        SealError::Refused(why) => Failure::invalid(format!("refusing to seal {label}: {why}")),
        SealError::NotAnObject => Failure::error(format!("{label} is not a JSON object")),
        SealError::NoDigest(kind) => {
            Failure::error(format!("a {} has no digest to seal", kind.name()))
        }
        SealError::NotValidAfterSealing => Failure::error(format!(
            "internal error: sealing {label} did not give a valid receipt; nothing was written"
        )),
    })?;
    if target.as_os_str() == "-" {
        out.write_all(&sealed.bytes).map_err(Failure::write)?;
        return Ok(Exit::Ok);
    }
    if let Written::File(written) = files::write(&target, &sealed.bytes, replace)? {
        writeln!(out, "sealed {} {}", written.display(), sealed.digest).map_err(Failure::write)?;
    }
    Ok(Exit::Ok)
}
