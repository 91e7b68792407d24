//! Standard output. Every byte a command writes reaches the reader
//! exactly: canonical JSON, `--json`, JSON Lines and envelopes are data,
//! and nothing filters them, on a terminal or not. Colour is decided once
//! ([`Palette`]) and only human text asks for it; no layer strips escape
//! sequences (one that did once dropped U+007F from canonical JSON).

use anstyle::{AnsiColor, Style};
use std::io::{BufWriter, StdoutLock, Write};

/// The styles human text is written in: real ones when colour is wanted,
/// empty ones otherwise.
#[derive(Clone, Copy, Debug)]
pub struct Palette {
    pub good: Style,
    pub bad: Style,
    pub warn: Style,
    pub rule: Style,
}

impl Palette {
    pub fn new(colour: bool) -> Palette {
        if colour {
            Palette {
                good: AnsiColor::Green.on_default().bold(),
                bad: AnsiColor::Red.on_default().bold(),
                warn: AnsiColor::Yellow.on_default(),
                rule: Style::new().bold(),
            }
        } else {
            Palette::plain()
        }
    }

    pub fn plain() -> Palette {
        Palette {
            good: Style::new(),
            bad: Style::new(),
            warn: Style::new(),
            rule: Style::new(),
        }
    }
}

/// Standard output, buffered, with the palette for human text.
pub struct Output {
    w: BufWriter<StdoutLock<'static>>,
    pub palette: Palette,
}

impl Output {
    /// Standard output; `colour` as `--color` and the terminal decide it.
    pub fn stdout(colour: bool) -> Output {
        Output {
            w: BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
            palette: Palette::new(colour),
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.w.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.w.write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}
