//! Trust files as the commands read them.

use crate::exit::Failure;
use crate::inputs::{self, Source};
use chit_core::trust::Trust;

/// Reads a trust file of at most `max` bytes (--max-size, which applies to
/// every file a command reads), or fails with exit 2 naming what is wrong.
pub fn read_trust(path: &std::path::Path, max: usize) -> Result<Trust, Failure> {
    let bytes = inputs::read(&Source::File(path.to_path_buf()), max).map_err(|why| {
        Failure::error(format!("cannot read trust file {}: {why}", path.display()))
    })?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Failure::error(format!("trust file {} is not UTF-8", path.display())))?;
    Trust::parse(&text).map_err(|e| Failure::error(format!("trust file {}: {e}", path.display())))
}
