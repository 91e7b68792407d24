//! Reading the C2SP text formats a line at a time: the request a witness
//! is sent and a tlog-proof both carry hashes, one a line, up to an empty
//! line, then a signed note.

use crate::note::decode_b64;
use crate::tree::Hash;

/// What is wrong with the lines read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineError {
    /// The text ends before a line feed.
    Ended,
    /// More hash lines than allowed.
    TooMany,
    /// A hash line that is not canonical base64 of 32 bytes.
    NotAHash,
}

/// Lines of bytes, each ending in a line feed, and what is left after.
pub(crate) struct Lines<'a> {
    rest: &'a [u8],
}

impl<'a> Lines<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Lines { rest: bytes }
    }

    /// The next line, without its line feed.
    pub(crate) fn line(&mut self) -> Result<&'a [u8], LineError> {
        let end = self
            .rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or(LineError::Ended)?;
        let line = &self.rest[..end];
        self.rest = &self.rest[end + 1..];
        Ok(line)
    }

    /// Hash lines up to and through the next empty line: at most `max`.
    pub(crate) fn hashes(&mut self, max: usize) -> Result<Vec<Hash>, LineError> {
        let mut out = Vec::new();
        loop {
            let line = self.line()?;
            if line.is_empty() {
                return Ok(out);
            }
            if out.len() == max {
                return Err(LineError::TooMany);
            }
            let h: Hash = std::str::from_utf8(line)
                .ok()
                .and_then(decode_b64)
                .and_then(|v| v.try_into().ok())
                .ok_or(LineError::NotAHash)?;
            out.push(h);
        }
    }

    /// What follows the lines read.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.rest
    }
}

/// A decimal number with no leading zero (but `0`), as the C2SP formats
/// write numbers.
pub(crate) fn parse_decimal<T: std::str::FromStr>(s: &[u8]) -> Option<T> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) || (s.len() > 1 && s[0] == b'0') {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}
