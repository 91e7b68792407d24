//! One file per command. Each reads its inputs, asks `chit_core` for every
//! verdict and digest, renders, and returns the exit status.

pub mod canon;
pub mod digest;
pub mod key;
pub mod lineage;
pub mod log;
pub mod reason;
pub mod recompute;
pub mod seal;
pub mod sign;
pub mod verify;
pub mod watch;

use crate::exit::Failure;
use crate::inputs::{self, Source};
use std::path::Path;

/// An INPUT argument as a source: `-` is standard input.
pub fn source_of(p: &Path) -> Source {
    if p.as_os_str() == "-" {
        Source::Stdin
    } else {
        Source::File(p.to_path_buf())
    }
}

/// Reads one input whole, or fails with exit 2 and a one-line reason.
pub fn read_input(p: &Path, max_size: usize) -> Result<Vec<u8>, Failure> {
    let source = source_of(p);
    inputs::read(&source, max_size)
        .map_err(|why| Failure::error(format!("cannot read {}: {why}", source.label())))
}

/// "name its kind with --kind (run-receipt, …)".
pub fn unknown_kind(p: &Path) -> Failure {
    let known: Vec<&str> = chit_core::Kind::ALL.iter().map(|k| k.name()).collect();
    Failure::error(format!(
        "{} is not a receipt chit recognises; name its kind with --kind ({})",
        p.display(),
        known.join(", ")
    ))
}
