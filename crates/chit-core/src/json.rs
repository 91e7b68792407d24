//! Strict JSON reading.
//!
//! Everything chit reads goes through [`parse`]. It accepts exactly RFC 8259
//! JSON in UTF-8 (a leading byte-order mark is tolerated) and refuses what a
//! lenient parser would quietly accept: duplicate keys, numbers a double
//! cannot hold, lone surrogates, documents past the configured limits. The
//! parser keeps its own stack, so a deep document cannot overflow the
//! program's.
//!
//! Numbers are read as IEEE doubles, as JavaScript and RFC 8785 read them,
//! and each also keeps its literal as written, so a kind that needs an
//! integer past 2^53 exactly reads it from the same document
//! ([`crate::doc::Val::as_number`]). The result is a [`Doc`]: one arena for
//! the whole document, strings and number literals pointing into the input,
//! so reading allocates a few vectors, not a value at a time.

use crate::doc::{key_prefix as prefix, Doc, Node, Str};
use std::fmt;

/// Bounds on what a document may contain. The defaults suit every receipt
/// kind chit knows; a caller may lower or raise them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most nested arrays and objects (the top-level value counts as 1).
    pub max_depth: usize,
    /// Most bytes in the whole document, byte-order mark included.
    pub max_size: usize,
    /// Most keys in any one object.
    pub max_keys: usize,
    /// Most values in the whole document, every key's value and every
    /// item counted (a reader's memory grows with them: a few tens of
    /// bytes each, however short their text). No limit by default.
    pub max_values: usize,
}

impl Limits {
    /// The highest depth a caller may set: the rest of chit walks values
    /// recursively, and this keeps every such walk well inside a thread's stack.
    pub const DEPTH_CEILING: usize = 4096;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 128,
            max_size: 64 * 1024 * 1024,
            max_keys: 10_000,
            max_values: usize::MAX,
        }
    }
}

/// Why a document could not be read, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    /// 1-based line of the offending byte.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
    /// Byte offset of the offending byte.
    pub offset: usize,
    pub kind: ReadErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadErrorKind {
    Empty,
    TooLarge {
        size: usize,
        limit: usize,
    },
    InvalidUtf8,
    Unexpected {
        found: String,
        expected: &'static str,
    },
    UnexpectedEnd {
        expected: &'static str,
    },
    TrailingData,
    TooDeep {
        limit: usize,
    },
    TooManyKeys {
        limit: usize,
    },
    TooManyValues {
        limit: usize,
    },
    DuplicateKey(String),
    ControlCharacter(u8),
    BadEscape,
    LoneSurrogate(u16),
    BadNumber,
    NumberOutOfRange,
}

impl fmt::Display for ReadErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ReadErrorKind::*;
        match self {
            Empty => write!(f, "the input is empty"),
            TooLarge { size, limit } => {
                write!(f, "the input is {size} bytes, over the limit of {limit}")
            }
            InvalidUtf8 => write!(f, "the input is not valid UTF-8"),
            Unexpected { found, expected } => write!(f, "found {found} where {expected} belongs"),
            UnexpectedEnd { expected } => {
                write!(f, "the input ends where {expected} belongs (truncated?)")
            }
            TrailingData => write!(f, "more data after the end of the JSON value"),
            TooDeep { limit } => write!(f, "nested deeper than {limit} levels"),
            TooManyKeys { limit } => write!(f, "an object has more than {limit} keys"),
            TooManyValues { limit } => write!(f, "more than {limit} values"),
            DuplicateKey(k) => write!(f, "duplicate key {}", short_quoted(k)),
            ControlCharacter(b) => write!(
                f,
                "unescaped control character U+{b:04X} in a string (write it as \\u{b:04x})"
            ),
            BadEscape => write!(f, "invalid escape sequence in a string"),
            LoneSurrogate(u) => write!(
                f,
                "lone surrogate \\u{u:04x} in a string (not Unicode text)"
            ),
            BadNumber => write!(f, "malformed number"),
            NumberOutOfRange => write!(f, "number outside the range of an IEEE double"),
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ReadErrorKind::Empty | ReadErrorKind::TooLarge { .. } => write!(f, "{}", self.kind),
            _ => write!(
                f,
                "line {}, column {}: {}",
                self.line, self.column, self.kind
            ),
        }
    }
}

impl std::error::Error for ReadError {}

/// Which of a reader's [`Limits`] a document passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Size,
    Depth,
    Keys,
    Values,
}

impl ReadErrorKind {
    /// The limit this error is about, if any: a front end names its own
    /// way to raise it (a flag, a server's setting) after the message.
    pub fn limit(&self) -> Option<Limit> {
        match self {
            ReadErrorKind::TooLarge { .. } => Some(Limit::Size),
            ReadErrorKind::TooDeep { .. } => Some(Limit::Depth),
            ReadErrorKind::TooManyKeys { .. } => Some(Limit::Keys),
            ReadErrorKind::TooManyValues { .. } => Some(Limit::Values),
            _ => None,
        }
    }
}

impl ReadError {
    /// The same error for a document that starts on line `first` of a
    /// larger file (a line of JSON Lines), so positions name the file's lines.
    pub fn starting_at_line(mut self, first: usize) -> Self {
        self.line += first.saturating_sub(1);
        self
    }
}

/// A key or string, quoted and cut short enough for a one-line message.
pub fn short_quoted(s: &str) -> String {
    const MAX: usize = 40;
    let mut out = String::with_capacity(s.len().min(MAX * 4) + 2);
    out.push('"');
    for (n, c) in s.chars().enumerate() {
        if n == MAX {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// Reads one JSON document under `limits`.
pub fn parse<'a>(input: &'a [u8], limits: &Limits) -> Result<Doc<'a>, ReadError> {
    if input.len() > limits.max_size || input.len() > i32::MAX as usize {
        return Err(ReadError {
            line: 1,
            column: 1,
            offset: 0,
            kind: ReadErrorKind::TooLarge {
                size: input.len(),
                limit: limits.max_size.min(i32::MAX as usize),
            },
        });
    }
    let body = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    let base = input.len() - body.len();
    let text = match std::str::from_utf8(body) {
        Ok(t) => t,
        Err(e) => {
            return Err(locate(
                input,
                base + e.valid_up_to(),
                ReadErrorKind::InvalidUtf8,
            ));
        }
    };
    let mut p = Parser {
        s: text.as_bytes(),
        text,
        i: 0,
        limits,
        nodes: Vec::with_capacity((text.len() / 8).min(limits.max_values) + 1),
        kids: Vec::new(),
        members: Vec::new(),
        // Run receipts hold about a number per 70 bytes: reserving for
        // that saves the vector's regrowth.
        numbers: Vec::with_capacity(text.len() / 64 + 1),
        decoded: String::new(),
        values: 0,
    };
    match p.document() {
        Ok(root) => Ok(Doc {
            text,
            nodes: p.nodes,
            kids: p.kids,
            members: p.members,
            numbers: p.numbers,
            decoded: p.decoded,
            root,
        }),
        Err((at, kind)) => Err(locate(input, base + at, kind)),
    }
}

/// Line and character column of byte `offset`.
fn locate(input: &[u8], offset: usize, kind: ReadErrorKind) -> ReadError {
    let before = &input[..offset.min(input.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    // Columns count characters; invalid UTF-8 counts a byte each.
    let column = 1 + String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count();
    ReadError {
        line,
        column,
        offset,
        kind,
    }
}

type PResult<T> = Result<T, (usize, ReadErrorKind)>;

/// An open container. Its contents wait on the parser's scratch stacks
/// from `start` on, and move into the document when it closes.
enum Frame {
    Array { start: usize },
    Object { start: usize },
}

/// A member waiting for its object to close: key, the key's first eight
/// bytes as a big-endian number (to order most keys without comparing
/// strings), the key's byte offset, and the value's node (`u32::MAX` while a
/// container value is still open).
type Pending = (Str, u64, usize, u32);

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
    limits: &'a Limits,
    nodes: Vec<Node>,
    kids: Vec<u32>,
    members: Vec<(Str, u64, u32)>,
    numbers: Vec<(f64, Str)>,
    decoded: String,
    /// Values begun so far (held to `limits.max_values`).
    values: usize,
}

impl<'a> Parser<'a> {
    fn document(&mut self) -> PResult<u32> {
        self.skip_ws();
        if self.i == self.s.len() {
            return Err((0, ReadErrorKind::Empty));
        }
        let v = self.value()?;
        self.skip_ws();
        if self.i != self.s.len() {
            return Err((self.i, ReadErrorKind::TrailingData));
        }
        Ok(v)
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(&b) = self.s.get(self.i) {
            if b == b' ' || b == b'\n' || b == b'\r' || b == b'\t' {
                self.i += 1;
            } else {
                break;
            }
        }
    }

    fn unexpected(&self, expected: &'static str) -> (usize, ReadErrorKind) {
        match self.text[self.i.min(self.s.len())..].chars().next() {
            None => (self.i, ReadErrorKind::UnexpectedEnd { expected }),
            Some(c) => {
                let found = if c.is_control() || c.is_whitespace() {
                    format!("U+{:04X}", c as u32)
                } else {
                    format!("'{c}'")
                };
                (self.i, ReadErrorKind::Unexpected { found, expected })
            }
        }
    }

    fn push(&mut self, n: Node) -> u32 {
        self.nodes.push(n);
        (self.nodes.len() - 1) as u32
    }

    /// Reads an object key and its colon, refusing one key too many for an
    /// object whose members so far number `count`.
    fn key(&mut self, count: usize) -> PResult<(Str, usize)> {
        self.skip_ws();
        if self.s.get(self.i) != Some(&b'"') {
            return Err(self.unexpected("a key in double quotes"));
        }
        let at = self.i;
        if count >= self.limits.max_keys {
            return Err((
                at,
                ReadErrorKind::TooManyKeys {
                    limit: self.limits.max_keys,
                },
            ));
        }
        let k = self.string()?;
        self.skip_ws();
        if self.s.get(self.i) != Some(&b':') {
            return Err(self.unexpected("':' after a key"));
        }
        self.i += 1;
        Ok((k, at))
    }

    fn value(&mut self) -> PResult<u32> {
        let mut stack: Vec<Frame> = Vec::new();
        let mut items: Vec<u32> = Vec::new();
        let mut pending: Vec<Pending> = Vec::new();
        // The key of the member whose value is being read.
        let mut key: Option<(Str, usize)> = None;
        'value: loop {
            self.skip_ws();
            self.values += 1;
            if self.values > self.limits.max_values {
                return Err((
                    self.i,
                    ReadErrorKind::TooManyValues {
                        limit: self.limits.max_values,
                    },
                ));
            }
            let node = match self.s.get(self.i) {
                Some(b'{') | Some(b'[') => {
                    if stack.len() + 1 > self.limits.max_depth {
                        return Err((
                            self.i,
                            ReadErrorKind::TooDeep {
                                limit: self.limits.max_depth,
                            },
                        ));
                    }
                    let open = self.s[self.i];
                    self.i += 1;
                    self.skip_ws();
                    if open == b'{' {
                        if self.s.get(self.i) == Some(&b'}') {
                            self.i += 1;
                            Node::Object { start: 0, len: 0 }
                        } else {
                            park(&mut key, &mut pending);
                            stack.push(Frame::Object {
                                start: pending.len(),
                            });
                            key = Some(self.key(0)?);
                            continue 'value;
                        }
                    } else if self.s.get(self.i) == Some(&b']') {
                        self.i += 1;
                        Node::Array { start: 0, len: 0 }
                    } else {
                        park(&mut key, &mut pending);
                        stack.push(Frame::Array { start: items.len() });
                        continue 'value;
                    }
                }
                Some(b'"') => Node::String(self.string()?),
                Some(b't') => self.literal(b"true", Node::Bool(true))?,
                Some(b'f') => self.literal(b"false", Node::Bool(false))?,
                Some(b'n') => self.literal(b"null", Node::Null)?,
                Some(b'-') | Some(b'0'..=b'9') => {
                    let start = self.i;
                    let x = self.number()?;
                    let at = self.numbers.len() as u32;
                    self.numbers
                        .push((x, Str::new(start, self.i - start, false)));
                    Node::Number(at)
                }
                _ => return Err(self.unexpected("a value")),
            };
            let mut v = self.push(node);
            // A complete value: hand it to its container, closing containers
            // as their ends arrive.
            loop {
                match stack.last() {
                    None => return Ok(v),
                    Some(&Frame::Array { start }) => {
                        items.push(v);
                        self.skip_ws();
                        match self.s.get(self.i) {
                            Some(b',') => {
                                self.i += 1;
                                continue 'value;
                            }
                            Some(b']') => {
                                self.i += 1;
                                stack.pop();
                                let first = self.kids.len() as u32;
                                self.kids.extend(items.drain(start..));
                                let len = self.kids.len() as u32 - first;
                                v = self.push(Node::Array { start: first, len });
                                unpark(&stack, &mut key, &mut pending);
                            }
                            _ => return Err(self.unexpected("',' or ']'")),
                        }
                    }
                    Some(&Frame::Object { start }) => {
                        let (k, at) = key.take().unwrap_or((Str::new(0, 0, false), 0));
                        let p = prefix(self.key_bytes(k));
                        pending.push((k, p, at, v));
                        self.skip_ws();
                        match self.s.get(self.i) {
                            Some(b',') => {
                                self.i += 1;
                                key = Some(self.key(pending.len() - start)?);
                                continue 'value;
                            }
                            Some(b'}') => {
                                self.i += 1;
                                stack.pop();
                                v = self.close_object(&mut pending, start)?;
                                unpark(&stack, &mut key, &mut pending);
                            }
                            _ => return Err(self.unexpected("',' or '}'")),
                        }
                    }
                }
            }
        }
    }

    fn key_bytes(&self, k: Str) -> &[u8] {
        let base = if k.decoded() {
            self.decoded.as_bytes()
        } else {
            self.s
        };
        &base[k.range()]
    }

    /// Moves an object's pending members into the document, sorted by key
    /// bytes, refusing a duplicate key at the later of its two places.
    fn close_object(&mut self, pending: &mut Vec<Pending>, start: usize) -> PResult<u32> {
        let text = self.s;
        let decoded = self.decoded.as_bytes();
        let key_of = |s: &Str| -> &[u8] {
            let base = if s.decoded() { decoded } else { text };
            &base[s.range()]
        };
        let run = &mut pending[start..];
        // Stable: equal keys stay in document order.
        run.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| key_of(&a.0).cmp(key_of(&b.0))));
        if let Some(w) = run
            .windows(2)
            .find(|w| w[0].1 == w[1].1 && key_of(&w[0].0) == key_of(&w[1].0))
        {
            let k = String::from_utf8_lossy(key_of(&w[1].0)).into_owned();
            return Err((w[1].2, ReadErrorKind::DuplicateKey(k)));
        }
        let first = self.members.len() as u32;
        self.members
            .extend(pending.drain(start..).map(|(k, p, _, v)| (k, p, v)));
        let len = self.members.len() as u32 - first;
        Ok(self.push(Node::Object { start: first, len }))
    }

    fn literal(&mut self, word: &'static [u8], v: Node) -> PResult<Node> {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.unexpected("a value"))
        }
    }

    fn number(&mut self) -> PResult<f64> {
        let start = self.i;
        let s = self.s;
        let mut i = self.i;
        let bad = |i: usize| (i, ReadErrorKind::BadNumber);
        if s.get(i) == Some(&b'-') {
            i += 1;
        }
        match s.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                while matches!(s.get(i), Some(b'0'..=b'9')) {
                    i += 1;
                }
            }
            _ => return Err(bad(i)),
        }
        let int_end = i;
        if s.get(i) == Some(&b'.') {
            i += 1;
            if !matches!(s.get(i), Some(b'0'..=b'9')) {
                return Err(bad(i));
            }
            while matches!(s.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        if matches!(s.get(i), Some(b'e') | Some(b'E')) {
            i += 1;
            if matches!(s.get(i), Some(b'+') | Some(b'-')) {
                i += 1;
            }
            if !matches!(s.get(i), Some(b'0'..=b'9')) {
                return Err(bad(i));
            }
            while matches!(s.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        self.i = i;
        let lit = &self.text[start..i];
        // Plain integers of at most 15 characters are below 2^53: exact in both.
        if int_end == i && lit.len() <= 15 {
            if let Ok(n) = lit.parse::<i64>() {
                return Ok(if n == 0 && lit.starts_with('-') {
                    -0.0
                } else {
                    n as f64
                });
            }
        }
        let x: f64 = lit.parse().map_err(|_| bad(start))?;
        if !x.is_finite() {
            return Err((start, ReadErrorKind::NumberOutOfRange));
        }
        Ok(x)
    }

    fn string(&mut self) -> PResult<Str> {
        // At the opening quote.
        self.i += 1;
        let s = self.s;
        let start = self.i;
        // Fast path: no escapes, so the text is the string. Eight bytes at a
        // time while none is a quote, a backslash or a control character.
        let mut i = start;
        while let Some(chunk) = s.get(i..i + 8) {
            let v = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            if has_special_byte(v) {
                break;
            }
            i += 8;
        }
        while let Some(&b) = s.get(i) {
            match b {
                b'"' => {
                    self.i = i + 1;
                    return Ok(Str::new(start, i - start, false));
                }
                b'\\' => break,
                0..=0x1f => return Err((i, ReadErrorKind::ControlCharacter(b))),
                _ => i += 1,
            }
        }
        let out_start = self.decoded.len();
        self.decoded.push_str(&self.text[start..i]);
        loop {
            let run = i;
            while let Some(&b) = s.get(i) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                i += 1;
            }
            self.decoded.push_str(&self.text[run..i]);
            match s.get(i) {
                None => {
                    self.i = i;
                    return Err((i, ReadErrorKind::UnexpectedEnd { expected: "'\"'" }));
                }
                Some(b'"') => {
                    self.i = i + 1;
                    return Ok(Str::new(out_start, self.decoded.len() - out_start, true));
                }
                Some(&b) if b < 0x20 => return Err((i, ReadErrorKind::ControlCharacter(b))),
                Some(_) => {
                    let esc = i;
                    i += 1;
                    let c = match s.get(i) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            let hi = hex4(s, i + 1).ok_or((esc, ReadErrorKind::BadEscape))?;
                            i += 4;
                            match hi {
                                0xD800..=0xDBFF => {
                                    let lo = if s.get(i + 1) == Some(&b'\\')
                                        && s.get(i + 2) == Some(&b'u')
                                    {
                                        hex4(s, i + 3)
                                    } else {
                                        None
                                    };
                                    match lo {
                                        Some(lo @ 0xDC00..=0xDFFF) => {
                                            i += 6;
                                            let cp = 0x10000
                                                + ((u32::from(hi) - 0xD800) << 10)
                                                + (u32::from(lo) - 0xDC00);
                                            char::from_u32(cp)
                                                .ok_or((esc, ReadErrorKind::LoneSurrogate(hi)))?
                                        }
                                        _ => return Err((esc, ReadErrorKind::LoneSurrogate(hi))),
                                    }
                                }
                                0xDC00..=0xDFFF => {
                                    return Err((esc, ReadErrorKind::LoneSurrogate(hi)))
                                }
                                _ => char::from_u32(u32::from(hi))
                                    .ok_or((esc, ReadErrorKind::BadEscape))?,
                            }
                        }
                        _ => return Err((esc, ReadErrorKind::BadEscape)),
                    };
                    self.decoded.push(c);
                    i += 1;
                }
            }
        }
    }
}

/// Before a container opens as a member's value, its key waits on the
/// pending stack (with no value yet) ...
fn park(key: &mut Option<(Str, usize)>, pending: &mut Vec<Pending>) {
    if let Some((k, at)) = key.take() {
        pending.push((k, 0, at, u32::MAX));
    }
}

/// ... and comes back when the container closes inside an object.
fn unpark(stack: &[Frame], key: &mut Option<(Str, usize)>, pending: &mut Vec<Pending>) {
    if let Some(Frame::Object { .. }) = stack.last() {
        *key = pending.pop().map(|(k, _, at, _)| (k, at));
    }
}

/// Whether any of the eight bytes in `v` is `"`, `\\` or below 0x20.
#[inline]
fn has_special_byte(v: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let below_space = v.wrapping_sub(ONES * 0x20) & !v & HIGH;
    (zero_byte(v ^ (ONES * b'"' as u64)) | zero_byte(v ^ (ONES * b'\\' as u64)) | below_space) != 0
}

fn hex4(s: &[u8], at: usize) -> Option<u16> {
    let digits = s.get(at..at + 4)?;
    let mut v: u16 = 0;
    for &d in digits {
        let n = (d as char).to_digit(16)? as u16;
        v = v << 4 | n;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Number;

    fn p(s: &str) -> Result<serde_json::Value, ReadError> {
        parse(s.as_bytes(), &Limits::default()).map(|d| d.to_value())
    }

    fn kind(s: &str) -> ReadErrorKind {
        p(s).unwrap_err().kind
    }

    #[test]
    fn reads_plain_documents() {
        assert_eq!(
            p(r#" {"a": [1, -2.5, true, false, null, "x\u00e9\ud83d\ude02"]} "#).unwrap(),
            serde_json::json!({"a": [1, -2.5, true, false, null, "xé😂"]})
        );
    }

    #[test]
    fn nested_members_keep_their_keys() {
        let text = r#"{"z":{"b":[{"c":1},{"d":[2,{}]}],"a":[],"e":{"f":{}}},"y":[[1],[2,[3]]],"x":"\u0041"}"#;
        let doc = parse(text.as_bytes(), &Limits::default()).unwrap();
        assert_eq!(
            doc.to_value(),
            serde_json::json!({"z":{"b":[{"c":1},{"d":[2,{}]}],"a":[],"e":{"f":{}}},"y":[[1],[2,[3]]],"x":"A"})
        );
        let root = doc.root();
        assert_eq!(root.get("x").and_then(|v| v.as_str()), Some("A"));
        assert_eq!(
            root.get("z").and_then(|z| z.get("b")).map(|b| b.len()),
            Some(2)
        );
        assert!(root.get("w").is_none());
        let keys: Vec<&str> = root.members().map(|(k, _)| k).collect();
        assert_eq!(keys, ["x", "y", "z"]);
    }

    #[test]
    fn numbers_become_doubles() {
        assert_eq!(p("1.0").unwrap(), serde_json::json!(1));
        assert_eq!(p("1e3").unwrap(), serde_json::json!(1000));
        assert_eq!(p("-0").unwrap(), serde_json::json!(0));
        assert_eq!(p("0.5").unwrap(), serde_json::json!(0.5));
        assert_eq!(
            p("12345678901234567890").unwrap(),
            serde_json::json!(12345678901234567168u64)
        );
        assert_eq!(kind("1e400"), ReadErrorKind::NumberOutOfRange);
        assert_eq!(kind("-1e400"), ReadErrorKind::NumberOutOfRange);
        assert_eq!(p("1e-400").unwrap(), serde_json::json!(0));
        for bad in [
            "01", "1.", ".5", "+1", "1e", "-", "0x10", "NaN", "Infinity", "1.e3",
        ] {
            assert!(p(bad).is_err(), "{bad} must be refused");
        }
    }

    /// The literal, double and exact reading of a one-number document.
    fn number(s: &str) -> (String, f64, Number) {
        let doc = parse(s.as_bytes(), &Limits::default()).unwrap();
        let v = doc.root();
        (
            v.number_text().unwrap().to_owned(),
            v.as_f64().unwrap(),
            v.as_number().unwrap(),
        )
    }

    #[test]
    fn numbers_keep_their_literals() {
        use Number::*;
        let two_53 = 9_007_199_254_740_992u64;
        for (lit, exact) in [
            ("0", PosInt(0)),
            ("-1", NegInt(-1)),
            ("9007199254740991", PosInt(two_53 - 1)),
            ("9007199254740992", PosInt(two_53)),
            ("9007199254740993", PosInt(two_53 + 1)),
            ("-9007199254740993", NegInt(-(two_53 as i64) - 1)),
            ("18446744073709551615", PosInt(u64::MAX)),
            ("18446744073709551616", Float(18_446_744_073_709_551_616.0)),
            ("-9223372036854775808", NegInt(i64::MIN)),
            ("-9223372036854775809", Float(-9_223_372_036_854_775_808.0)),
            ("1.0", Float(1.0)),
            ("1e2", Float(100.0)),
            ("1E+2", Float(100.0)),
            ("-2.50e-1", Float(-0.25)),
            ("1e308", Float(1e308)),
            ("1e-400", Float(0.0)),
            (
                "123456789012345678901234567890",
                Float(1.2345678901234568e29),
            ),
        ] {
            let (text, x, got) = number(lit);
            assert_eq!(text, lit);
            assert_eq!(got, exact, "{lit}");
            assert_eq!(x, exact.as_f64(), "{lit}");
            // The same reading as serde_json's.
            let theirs: serde_json::Value = serde_json::from_str(lit).unwrap();
            match got {
                PosInt(n) => assert_eq!(theirs.as_u64(), Some(n), "{lit}"),
                NegInt(n) => assert_eq!(theirs.as_i64(), Some(n), "{lit}"),
                Float(_) => assert!(theirs.is_f64(), "{lit}"),
            }
        }
        // 2^53 + 1 is exact as written, rounded as a double.
        assert_eq!(number("9007199254740993").1, 9_007_199_254_740_992.0);
        // -0 is the double -0, as serde_json reads it.
        let (text, x, exact) = number("-0");
        assert_eq!(text, "-0");
        assert!(x == 0.0 && x.is_sign_negative());
        assert!(matches!(exact, Float(z) if z == 0.0 && z.is_sign_negative()));
        assert!(serde_json::from_str::<serde_json::Value>("-0")
            .unwrap()
            .is_f64());
    }

    #[test]
    fn number_literals_inside_containers() {
        let text = "\u{feff}{\"b\": [ 1 , -2.50e+1 ,\"3\"], \"a\" :18446744073709551615 }";
        let doc = parse(text.as_bytes(), &Limits::default()).unwrap();
        let root = doc.root();
        let b: Vec<_> = root.get("b").unwrap().items().collect();
        assert_eq!(b[0].number_text(), Some("1"));
        assert_eq!(b[0].as_number(), Some(Number::PosInt(1)));
        assert_eq!(b[1].number_text(), Some("-2.50e+1"));
        assert_eq!(b[1].as_f64(), Some(-25.0));
        assert_eq!(b[2].number_text(), None);
        assert_eq!(b[2].as_number(), None);
        assert_eq!(root.number_text(), None);
        let a = root.get("a").unwrap();
        assert_eq!(a.number_text(), Some("18446744073709551615"));
        assert_eq!(a.as_number(), Some(Number::PosInt(u64::MAX)));
        assert_eq!(a.as_i64(), None);
    }

    #[test]
    fn a_node_is_twelve_bytes() {
        assert_eq!(std::mem::size_of::<crate::doc::Node>(), 12);
    }

    #[test]
    fn duplicate_keys_are_refused_with_position() {
        let e = p("{\n  \"a\": 1,\n  \"a\": 2\n}").unwrap_err();
        assert_eq!(e.kind, ReadErrorKind::DuplicateKey("a".into()));
        assert_eq!((e.line, e.column), (3, 3));
        // The same key spelled with an escape is the same key.
        assert!(matches!(
            kind(r#"{"a":1,"\u0061":2}"#),
            ReadErrorKind::DuplicateKey(_)
        ));
    }

    #[test]
    fn bom_is_tolerated_and_bad_utf8_is_not() {
        assert_eq!(
            parse(b"\xEF\xBB\xBF[1]", &Limits::default())
                .unwrap()
                .to_value(),
            serde_json::json!([1])
        );
        let e = parse(b"[\"a\xff\"]", &Limits::default()).unwrap_err();
        assert_eq!(e.kind, ReadErrorKind::InvalidUtf8);
        assert_eq!((e.line, e.column), (1, 4));
    }

    #[test]
    fn strings_are_strict() {
        assert_eq!(kind("\"\\ud800\""), ReadErrorKind::LoneSurrogate(0xd800));
        assert_eq!(
            kind("\"\\udc00\\ud800\""),
            ReadErrorKind::LoneSurrogate(0xdc00)
        );
        assert_eq!(
            kind("\"\\ud800\\u0041\""),
            ReadErrorKind::LoneSurrogate(0xd800)
        );
        assert_eq!(kind("\"a\tb\""), ReadErrorKind::ControlCharacter(9));
        assert_eq!(kind(r#""\x""#), ReadErrorKind::BadEscape);
        assert_eq!(kind(r#""\u12""#), ReadErrorKind::BadEscape);
        assert!(matches!(kind("\"abc"), ReadErrorKind::UnexpectedEnd { .. }));
    }

    #[test]
    fn limits_hold() {
        let deep = "[".repeat(200_000);
        assert_eq!(kind(&deep), ReadErrorKind::TooDeep { limit: 128 });
        let ok = format!("{}{}", "[".repeat(128), "]".repeat(128));
        assert!(p(&ok).is_ok());
        let too = format!("{}{}", "[".repeat(129), "]".repeat(129));
        assert_eq!(kind(&too), ReadErrorKind::TooDeep { limit: 128 });
        let small = Limits {
            max_keys: 2,
            max_size: 20,
            ..Limits::default()
        };
        assert!(matches!(
            parse(br#"{"a":1,"b":2,"c":3}"#, &small).unwrap_err().kind,
            ReadErrorKind::TooManyKeys { limit: 2 }
        ));
        assert!(matches!(
            parse(&[b' '; 21], &small).unwrap_err().kind,
            ReadErrorKind::TooLarge { .. }
        ));
        // Every value counts, containers and their members alike.
        let few = Limits {
            max_values: 5,
            ..Limits::default()
        };
        assert!(parse(br#"{"a":[1,{}],"b":"x"}"#, &few).is_ok());
        let e = parse(br#"{"a":[1,{}],"b":"x","c":null}"#, &few).unwrap_err();
        assert_eq!(e.kind, ReadErrorKind::TooManyValues { limit: 5 });
        assert_eq!(e.kind.limit(), Some(Limit::Values));
        assert_eq!((e.line, e.column), (1, 25));
        assert!(parse(b"[0,0,0,0]", &few).is_ok());
        assert!(parse(b"[0,0,0,0,0]", &few).is_err());
    }

    #[test]
    fn structure_errors() {
        assert_eq!(kind(""), ReadErrorKind::Empty);
        assert_eq!(kind("  \n "), ReadErrorKind::Empty);
        assert_eq!(kind("{} x"), ReadErrorKind::TrailingData);
        assert_eq!(kind("[1] [2]"), ReadErrorKind::TrailingData);
        assert!(matches!(
            kind("{\"a\":1"),
            ReadErrorKind::UnexpectedEnd { .. }
        ));
        assert!(matches!(kind("[1,]"), ReadErrorKind::Unexpected { .. }));
        assert!(matches!(
            kind("{\"a\":1,}"),
            ReadErrorKind::Unexpected { .. }
        ));
        assert!(matches!(kind("{a:1}"), ReadErrorKind::Unexpected { .. }));
        assert!(matches!(kind("tru"), ReadErrorKind::Unexpected { .. }));
        let e = p("{\"a\":\n  [1, 2,, 3]}").unwrap_err();
        assert_eq!((e.line, e.column), (2, 9));
        assert_eq!(
            e.to_string(),
            "line 2, column 9: found ',' where a value belongs"
        );
    }
}
