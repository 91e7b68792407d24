//! Numeric lineage transcripts as the commands read them.

use crate::exit::Failure;
use crate::inputs;
use chit_core::kinds::numeric_lineage::transcript::{Transcript, TranscriptReader};
use std::path::Path;

/// Reads a transcript for verify and open: streamed a line at a time, at
/// most `limits.max_size` bytes in all and in any one line, so memory stays
/// bounded whatever the file is (a FIFO with no writer is refused).
pub fn read_transcript(path: &Path, limits: &chit_core::Limits) -> Result<Transcript, Failure> {
    let cannot = |why: String| {
        Failure::error(format!(
            "cannot read the transcript {}: {why}",
            path.display()
        ))
    };
    let source = inputs::Source::File(path.to_path_buf());
    let reader =
        inputs::open_capped(&source, limits.max_size).map_err(|e| cannot(e.to_string()))?;
    let mut transcript = TranscriptReader::new(limits);
    for (n, line) in inputs::Lines::new(reader, limits.max_size) {
        let line = line.map_err(|why| cannot(format!("line {n}: {why}")))?;
        transcript
            .line(n, &line)
            .map_err(|e| cannot(e.to_string()))?;
    }
    transcript.finish().map_err(|e| cannot(e.to_string()))
}
