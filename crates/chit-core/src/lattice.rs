//! Lattice's canonical JSON profile, beside RFC 8785 ([`crate::canon`]).
//!
//! As JCS (keys sorted by UTF-16 code unit, strings and numbers as
//! ECMAScript's `JSON.stringify` writes them, no whitespace, UTF-8), but:
//!
//! - `-0` is refused (JCS writes it `0`), as are numbers past a double;
//! - a lone surrogate is kept and written as its `\udxxx` escape (JCS
//!   refuses it), so strings are held as UTF-16 code units, as JavaScript
//!   holds them;
//! - Lattice's limits, counted as Lattice counts them: every value at most
//!   32 levels below the top (the top is level 0), at most 10,000 values,
//!   256 keys in an object, 16 KiB of UTF-8 in a string or key (a lone
//!   surrogate counts 3 bytes, as `Buffer.byteLength` counts it), and 1 MiB
//!   of canonical bytes in all.
//!
//! Duplicate keys are refused when reading (JavaScript would keep the last).

use std::fmt;

pub const MAX_DEPTH: usize = 32;
pub const MAX_NODES: usize = 10_000;
pub const MAX_KEYS: usize = 256;
pub const MAX_STRING_BYTES: usize = 16_384;
pub const MAX_CANONICAL_BYTES: usize = 1_048_576;

/// A JSON value as JavaScript holds it: strings as UTF-16 code units.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Num(f64),
    Str(Vec<u16>),
    Arr(Vec<Value>),
    /// Members in document order.
    Obj(Vec<(Vec<u16>, Value)>),
}

impl Value {
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Obj(m) => m
                .iter()
                .find(|(k, _)| k.iter().copied().eq(key.encode_utf16()))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string, if it is one and is Unicode text (no lone surrogate).
    pub fn as_text(&self) -> Option<String> {
        match self {
            Value::Str(u) => String::from_utf16(u).ok(),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Num(x) => Some(*x),
            _ => None,
        }
    }
}

/// Why bytes are not a Lattice document: unreadable JSON (with its byte
/// offset, and the 1-based line and character column shown, as the strict
/// reader's errors show them), or a value past the profile's rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    Read {
        offset: usize,
        line: usize,
        column: usize,
        message: String,
        /// Whether the reader stopped at its caller's limit on values
        /// ([`parse_limited`]) rather than at something unreadable.
        past_limit: bool,
    },
    Profile(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Read {
                line,
                column,
                message,
                ..
            } => write!(f, "line {line}, column {column}: {message}"),
            Error::Profile(m) => f.write_str(m),
        }
    }
}

impl Error {
    /// The same error for a document that starts on line `first` of a
    /// larger file (a line of JSON Lines), so positions name the file's lines.
    pub fn starting_at_line(mut self, first: usize) -> Error {
        if let Error::Read { line, .. } = &mut self {
            *line += first.saturating_sub(1);
        }
        self
    }

    /// Places a read error at its line and column in `input`.
    fn located(mut self, input: &[u8]) -> Error {
        if let Error::Read {
            offset,
            line,
            column,
            ..
        } = &mut self
        {
            let before = &input[..(*offset).min(input.len())];
            let start = before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1);
            *line = 1 + before.iter().filter(|&&b| b == b'\n').count();
            // Columns count characters; invalid UTF-8 counts a byte each.
            *column = 1 + String::from_utf8_lossy(&before[start..]).chars().count();
        }
        self
    }
}

fn read<T>(offset: usize, message: impl Into<String>) -> Result<T, Error> {
    Err(Error::Read {
        offset,
        line: 0,
        column: 0,
        message: message.into(),
        past_limit: false,
    })
}

/// Reads a JSON document as JavaScript's `JSON.parse` would (UTF-8 text,
/// lone surrogate escapes kept), refusing duplicate keys. Nesting past
/// Lattice's depth is refused as a profile error, before it can cost stack.
pub fn parse(bytes: &[u8]) -> Result<Value, Error> {
    parse_limited(bytes, usize::MAX)
}

/// [`parse`], stopping at more than `max_values` values (a read error
/// marked `past_limit`): a caller that bounds its memory reads no more.
/// Lattice's own limit (10,000 values) is a profile rule, told apart from
/// this one: a document past it is still read whole, as Lattice reads it.
pub fn parse_limited(bytes: &[u8], max_values: usize) -> Result<Value, Error> {
    parse_at(bytes, max_values).map_err(|e| e.located(bytes))
}

fn parse_at(bytes: &[u8], max_values: usize) -> Result<Value, Error> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return read(e.valid_up_to(), "not valid UTF-8"),
    };
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        values: 0,
        max_values,
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return read(p.i, "more data after the end of the JSON value");
    }
    Ok(v)
}

/// A key's hash under `state` (random keys, one state an object), for
/// the duplicate check of a large object.
fn hash_key(state: &std::collections::hash_map::RandomState, k: &[u16]) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = state.build_hasher();
    for &u in k {
        h.write_u16(u);
    }
    h.finish()
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    /// Values begun so far, and the most the caller reads.
    values: usize,
    max_values: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, Error> {
        self.values += 1;
        if self.values > self.max_values {
            return Err(Error::Read {
                offset: self.i,
                line: 0,
                column: 0,
                message: format!("more than {} values", self.max_values),
                past_limit: true,
            });
        }
        if depth > MAX_DEPTH + 1 {
            return Err(Error::Profile(format!(
                "nested more than {MAX_DEPTH} levels below the top (Lattice's limit)"
            )));
        }
        match self.s.get(self.i) {
            None => read(self.i, "the input ends where a value belongs (truncated?)"),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Value::Str(self.string()?)),
            Some(b't') => self.word(b"true", Value::Bool(true)),
            Some(b'f') => self.word(b"false", Value::Bool(false)),
            Some(b'n') => self.word(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => read(self.i, "found something that is not a JSON value"),
        }
    }

    fn word(&mut self, w: &[u8], v: Value) -> Result<Value, Error> {
        if self.s[self.i..].starts_with(w) {
            self.i += w.len();
            Ok(v)
        } else {
            read(self.i, "found something that is not a JSON value")
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, Error> {
        self.i += 1;
        let mut members: Vec<(Vec<u16>, Value)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let state = std::collections::hash_map::RandomState::new();
        self.ws();
        if self.s.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(Value::Obj(members));
        }
        loop {
            self.ws();
            if self.s.get(self.i) != Some(&b'"') {
                return read(self.i, "an object key must be a string");
            }
            let at = self.i;
            let key = self.string()?;
            // Past a few members, by hash (a large object would otherwise
            // cost its count of keys squared), each hit compared in full.
            let duplicate = if members.len() < 16 {
                members.iter().any(|(k, _)| *k == key)
            } else {
                if seen.is_empty() {
                    seen.extend(members.iter().map(|(k, _)| hash_key(&state, k)));
                }
                !seen.insert(hash_key(&state, &key)) && members.iter().any(|(k, _)| *k == key)
            };
            if duplicate {
                return read(at, "duplicate key");
            }
            self.ws();
            if self.s.get(self.i) != Some(&b':') {
                return read(self.i, "expected ':' after an object key");
            }
            self.i += 1;
            self.ws();
            let v = self.value(depth + 1)?;
            members.push((key, v));
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Obj(members));
                }
                None => return read(self.i, "the input ends inside an object (truncated?)"),
                _ => return read(self.i, "expected ',' or '}' in an object"),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, Error> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.s.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(Value::Arr(items));
        }
        loop {
            self.ws();
            items.push(self.value(depth + 1)?);
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Value::Arr(items));
                }
                None => return read(self.i, "the input ends inside an array (truncated?)"),
                _ => return read(self.i, "expected ',' or ']' in an array"),
            }
        }
    }

    fn hex4(&self, at: usize) -> Option<u16> {
        let h = self.s.get(at..at + 4)?;
        let t = std::str::from_utf8(h).ok()?;
        if !t.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u16::from_str_radix(t, 16).ok()
    }

    fn string(&mut self) -> Result<Vec<u16>, Error> {
        self.i += 1;
        let mut out: Vec<u16> = Vec::new();
        loop {
            let start = self.i;
            while let Some(&b) = self.s.get(self.i) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.i += 1;
            }
            // The input is UTF-8 and the run stops only at ASCII bytes.
            let run = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
            out.extend(run.encode_utf16());
            match self.s.get(self.i) {
                None => return read(self.i, "the input ends inside a string (truncated?)"),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(&b) if b < 0x20 => {
                    return read(
                        self.i,
                        format!("unescaped control character U+{b:04X} in a string"),
                    )
                }
                Some(_) => {
                    let esc = self.i;
                    let unit = match self.s.get(self.i + 1) {
                        Some(b'"') => u16::from(b'"'),
                        Some(b'\\') => u16::from(b'\\'),
                        Some(b'/') => u16::from(b'/'),
                        Some(b'b') => 8,
                        Some(b'f') => 12,
                        Some(b'n') => 10,
                        Some(b'r') => 13,
                        Some(b't') => 9,
                        Some(b'u') => match self.hex4(self.i + 2) {
                            Some(u) => {
                                self.i += 4;
                                u
                            }
                            None => return read(esc, "invalid \\u escape"),
                        },
                        _ => return read(esc, "invalid escape sequence in a string"),
                    };
                    self.i += 2;
                    out.push(unit);
                }
            }
        }
    }

    fn number(&mut self) -> Result<Value, Error> {
        let start = self.i;
        let s = self.s;
        let mut i = self.i;
        if s.get(i) == Some(&b'-') {
            i += 1;
        }
        match s.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                while let Some(b'0'..=b'9') = s.get(i) {
                    i += 1;
                }
            }
            _ => return read(start, "malformed number"),
        }
        if s.get(i) == Some(&b'.') {
            i += 1;
            if !matches!(s.get(i), Some(b'0'..=b'9')) {
                return read(start, "malformed number");
            }
            while let Some(b'0'..=b'9') = s.get(i) {
                i += 1;
            }
        }
        if let Some(b'e' | b'E') = s.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = s.get(i) {
                i += 1;
            }
            if !matches!(s.get(i), Some(b'0'..=b'9')) {
                return read(start, "malformed number");
            }
            while let Some(b'0'..=b'9') = s.get(i) {
                i += 1;
            }
        }
        self.i = i;
        let text = std::str::from_utf8(&s[start..i]).unwrap_or("x");
        match text.parse::<f64>() {
            Ok(x) => Ok(Value::Num(x)),
            Err(_) => read(start, "malformed number"),
        }
    }
}

/// `Buffer.byteLength(s, 'utf8')`: a lone surrogate counts 3 (as U+FFFD).
fn utf8_len(units: &[u16]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < units.len() {
        let u = units[i];
        n += match u {
            0..=0x7F => 1,
            0x80..=0x7FF => 2,
            0xD800..=0xDBFF if matches!(units.get(i + 1), Some(0xDC00..=0xDFFF)) => {
                i += 1;
                4
            }
            _ => 3,
        };
        i += 1;
    }
    n
}

/// Writes a string as `JSON.stringify` does (lone surrogates as escapes).
fn write_string(units: &[u16], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(units.len() + 2);
    out.push(b'"');
    let mut i = 0;
    while i < units.len() {
        // A run of printable ASCII needing no escape, copied at once.
        let run = units[i..]
            .iter()
            .position(|&u| !(0x20..0x7F).contains(&u) || u == 0x22 || u == 0x5C)
            .unwrap_or(units.len() - i);
        out.extend(units[i..i + run].iter().map(|&u| u as u8));
        i += run;
        let Some(&u) = units.get(i) else { break };
        match u {
            0x22 => out.extend_from_slice(b"\\\""),
            0x5C => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0C => out.extend_from_slice(b"\\f"),
            0x0A => out.extend_from_slice(b"\\n"),
            0x0D => out.extend_from_slice(b"\\r"),
            0x09 => out.extend_from_slice(b"\\t"),
            0..=0x1F => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(u >> 4) as usize]);
                out.push(HEX[(u & 15) as usize]);
            }
            0x7F => out.push(0x7F),
            0xD800..=0xDBFF if matches!(units.get(i + 1), Some(0xDC00..=0xDFFF)) => {
                let lo = units[i + 1];
                let cp = 0x10000 + ((u32::from(u) - 0xD800) << 10) + (u32::from(lo) - 0xDC00);
                let mut buf = [0u8; 4];
                let c = char::from_u32(cp).unwrap_or('\u{FFFD}');
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                i += 1;
            }
            0xD800..=0xDFFF => {
                out.extend_from_slice(b"\\u");
                for shift in [12, 8, 4, 0] {
                    out.push(HEX[((u >> shift) & 15) as usize]);
                }
            }
            _ => {
                let mut buf = [0u8; 4];
                let c = char::from_u32(u32::from(u)).unwrap_or('\u{FFFD}');
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
        i += 1;
    }
    out.push(b'"');
}

struct Writer {
    out: Vec<u8>,
    nodes: usize,
    /// The top-level object's members, in canonical order: each key and the
    /// byte range of `"key":value` in `out`.
    top: Vec<(Vec<u16>, std::ops::Range<usize>)>,
}

fn profile<T>(m: impl Into<String>) -> Result<T, Error> {
    Err(Error::Profile(m.into()))
}

impl Writer {
    fn value(&mut self, v: &Value, depth: usize) -> Result<(), Error> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return profile(format!("more than {MAX_NODES} values (Lattice's limit)"));
        }
        if depth > MAX_DEPTH {
            return profile(format!(
                "nested more than {MAX_DEPTH} levels below the top (Lattice's limit)"
            ));
        }
        match v {
            Value::Null => self.out.extend_from_slice(b"null"),
            Value::Bool(true) => self.out.extend_from_slice(b"true"),
            Value::Bool(false) => self.out.extend_from_slice(b"false"),
            Value::Num(x) => {
                if !x.is_finite() {
                    return profile("a number past the range of a double");
                }
                if *x == 0.0 && x.is_sign_negative() {
                    return profile(
                        "-0 (negative zero) is not allowed in Lattice's canonical JSON",
                    );
                }
                crate::canon::write_f64(*x, &mut self.out);
            }
            Value::Str(u) => {
                if utf8_len(u) > MAX_STRING_BYTES {
                    return profile(format!(
                        "a string over {MAX_STRING_BYTES} bytes (Lattice's limit)"
                    ));
                }
                write_string(u, &mut self.out);
            }
            Value::Arr(items) => {
                self.out.push(b'[');
                for (n, item) in items.iter().enumerate() {
                    if n > 0 {
                        self.out.push(b',');
                    }
                    self.value(item, depth + 1)?;
                }
                self.out.push(b']');
            }
            Value::Obj(members) => {
                if members.len() > MAX_KEYS {
                    return profile(format!(
                        "an object with more than {MAX_KEYS} keys (Lattice's limit)"
                    ));
                }
                let mut sorted: Vec<&(Vec<u16>, Value)> = members.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(&b.0));
                self.out.push(b'{');
                for (n, (k, val)) in sorted.into_iter().enumerate() {
                    if n > 0 {
                        self.out.push(b',');
                    }
                    if utf8_len(k) > MAX_STRING_BYTES {
                        return profile(format!(
                            "a key over {MAX_STRING_BYTES} bytes (Lattice's limit)"
                        ));
                    }
                    let at = self.out.len();
                    write_string(k, &mut self.out);
                    self.out.push(b':');
                    self.value(val, depth + 1)?;
                    if depth == 0 {
                        self.top.push((k.clone(), at..self.out.len()));
                    }
                }
                self.out.push(b'}');
            }
        }
        Ok(())
    }
}

/// The canonical bytes of `v` under Lattice's profile, or the rule it
/// breaks.
pub fn canonical(v: &Value) -> Result<Vec<u8>, Error> {
    Ok(Canonical::of(v)?.bytes)
}

/// A document's canonical bytes, with where each top-level member lies in
/// them, so that the canonical bytes of the object with some members left
/// out (a projection, a self-digest) are cut from them instead of written
/// again. Leaving members out keeps every limit the whole document kept.
pub struct Canonical {
    pub bytes: Vec<u8>,
    top: Vec<(Vec<u16>, std::ops::Range<usize>)>,
}

impl Canonical {
    pub fn of(v: &Value) -> Result<Canonical, Error> {
        let mut w = Writer {
            out: Vec::with_capacity(512),
            nodes: 0,
            top: Vec::new(),
        };
        w.value(v, 0)?;
        if w.out.len() > MAX_CANONICAL_BYTES {
            return profile(format!(
                "over {MAX_CANONICAL_BYTES} canonical bytes (Lattice's limit)"
            ));
        }
        Ok(Canonical {
            bytes: w.out,
            top: w.top,
        })
    }

    /// The canonical bytes of the top-level object keeping only the members
    /// `keep` says yes to (`None` if the document is not an object).
    pub fn members(&self, keep: impl Fn(&[u16]) -> bool) -> Option<Vec<u8>> {
        if self.bytes.first() != Some(&b'{') {
            return None;
        }
        let mut out = Vec::with_capacity(self.bytes.len());
        out.push(b'{');
        for (k, range) in &self.top {
            if keep(k) {
                if out.len() > 1 {
                    out.push(b',');
                }
                out.extend_from_slice(&self.bytes[range.clone()]);
            }
        }
        out.push(b'}');
        Some(out)
    }
}

/// Whether UTF-16 `units` spell `key`.
pub fn key_is(units: &[u16], key: &str) -> bool {
    units.iter().copied().eq(key.encode_utf16())
}

/// Whether `bytes` are exactly `canonical`, allowing one trailing LF.
pub fn is_canonical(bytes: &[u8], canonical: &[u8]) -> bool {
    bytes == canonical || bytes.strip_suffix(b"\n") == Some(canonical)
}

/// JSON text of `v` that chit's strict reader accepts (for schema checks):
/// a lone surrogate is written as a private-use character of plane 15
/// (U+F0000 + its offset from U+D800), which keeps distinct strings
/// distinct and, like the surrogate, matches no ASCII pattern.
pub fn unicode_json(v: &Value) -> Vec<u8> {
    fn go(v: &Value, out: &mut Vec<u8>) {
        match v {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Num(x) => {
                if x.is_finite() {
                    crate::canon::write_f64(*x, out)
                } else {
                    out.extend_from_slice(b"null")
                }
            }
            Value::Str(u) => string(u, out),
            Value::Arr(items) => {
                out.push(b'[');
                for (n, item) in items.iter().enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    go(item, out);
                }
                out.push(b']');
            }
            Value::Obj(members) => {
                out.push(b'{');
                for (n, (k, item)) in members.iter().enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    string(k, out);
                    out.push(b':');
                    go(item, out);
                }
                out.push(b'}');
            }
        }
    }
    fn string(u: &[u16], out: &mut Vec<u8>) {
        let text: String = char::decode_utf16(u.iter().copied())
            .map(|c| match c {
                Ok(c) => c,
                Err(e) => char::from_u32(0xF0000 + u32::from(e.unpaired_surrogate()) - 0xD800)
                    .unwrap_or('\u{FFFD}'),
            })
            .collect();
        crate::canon::write_string(&text, out);
    }
    let mut out = Vec::with_capacity(256);
    go(v, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> Result<String, Error> {
        canonical(&parse(s.as_bytes())?).map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn as_jcs_for_ordinary_documents() {
        assert_eq!(
            canon(r#"{ "b": [1.0, 2e1, "x\u0001"], "a": null, "é": true }"#).unwrap(),
            "{\"a\":null,\"b\":[1,20,\"x\\u0001\"],\"é\":true}"
        );
    }

    #[test]
    fn lone_surrogates_are_kept_as_escapes() {
        assert_eq!(
            canon(r#"["\uD800", "\udc00x"]"#).unwrap(),
            r#"["\ud800","\udc00x"]"#
        );
        // A pair is one character, written as UTF-8.
        assert_eq!(canon(r#""\ud83d\ude00""#).unwrap(), "\"😀\"");
    }

    #[test]
    fn keys_sort_by_utf16_units() {
        // U+FF61 sorts after U+1F600 by code point, before it by UTF-16 unit.
        assert_eq!(
            canon("{\"\u{ff61}\":1,\"\u{1f600}\":2}").unwrap(),
            "{\"\u{1f600}\":2,\"\u{ff61}\":1}"
        );
    }

    #[test]
    fn a_caller_s_value_limit_stops_the_reader_and_large_objects_find_duplicates() {
        assert!(parse_limited(b"[1,2,3]", 4).is_ok());
        match parse_limited(b"[1,2,3,4]", 4) {
            Err(Error::Read {
                past_limit: true,
                message,
                ..
            }) => assert_eq!(message, "more than 4 values"),
            other => panic!("{other:?}"),
        }
        // Without a limit, Lattice's own (10,000 values) is a profile rule.
        let many = format!("[{}0]", "0,".repeat(10_000));
        assert!(parse(many.as_bytes()).is_ok());
        // A duplicate among many keys, however far apart, is found.
        for at in [0, 15, 16, 17, 499] {
            let mut keys: Vec<String> = (0..500).map(|i| format!("\"k{i}\":{i}")).collect();
            keys.push(format!("\"k{at}\":0"));
            let doc = format!("{{{}}}", keys.join(","));
            match parse(doc.as_bytes()) {
                Err(Error::Read { message, .. }) => assert_eq!(message, "duplicate key"),
                other => panic!("{at}: {other:?}"),
            }
            let distinct = format!("{{{}}}", keys[..500].join(","));
            assert!(parse(distinct.as_bytes()).is_ok());
        }
    }

    #[test]
    fn negative_zero_and_limits_are_refused() {
        for doc in ["-0", "[-0.0]", "{\"a\":-0e5}", "-1e-400"] {
            assert!(matches!(canon(doc), Err(Error::Profile(_))), "{doc}");
        }
        assert_eq!(canon("0").unwrap(), "0");
        // Depth: a value 32 levels below the top is allowed, 33 is not.
        let ok = format!("{}1{}", "[".repeat(32), "]".repeat(32));
        assert!(canon(&ok).is_ok());
        let deep = format!("{}1{}", "[".repeat(33), "]".repeat(33));
        assert!(matches!(canon(&deep), Err(Error::Profile(_))));
        let very_deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(matches!(canon(&very_deep), Err(Error::Profile(_))));
        // Nodes: the array itself and its items.
        let items = |n: usize| format!("[{}]", vec!["0"; n].join(","));
        assert!(canon(&items(MAX_NODES - 1)).is_ok());
        assert!(canon(&items(MAX_NODES)).is_err());
        // Keys.
        let obj = |n: usize| {
            let m: Vec<String> = (0..n).map(|i| format!("\"k{i}\":0")).collect();
            format!("{{{}}}", m.join(","))
        };
        assert!(canon(&obj(MAX_KEYS)).is_ok());
        assert!(canon(&obj(MAX_KEYS + 1)).is_err());
        // String bytes: é is 2 bytes; a lone surrogate counts 3.
        let s = |body: &str| format!("\"{body}\"");
        assert!(canon(&s(&"é".repeat(MAX_STRING_BYTES / 2))).is_ok());
        assert!(canon(&s(&"é".repeat(MAX_STRING_BYTES / 2 + 1))).is_err());
        let lone = format!("\"{}\"", "\\ud800".repeat(MAX_STRING_BYTES / 3 + 1));
        assert!(canon(&lone).is_err());
        // Total size: 100 strings of 12,000 bytes.
        let big = format!(
            "[{}]",
            vec![format!("\"{}\"", "a".repeat(12_000)); 100].join(",")
        );
        assert!(matches!(canon(&big), Err(Error::Profile(m)) if m.contains("canonical bytes")));
    }

    #[test]
    fn unreadable_input_is_a_read_error() {
        for doc in [
            "{\"a\":1,\"a\":2}",
            "[1,]",
            "\"abc",
            "01",
            "{\"a\" 1}",
            "[1] x",
            "\"\\x\"",
        ] {
            assert!(
                matches!(parse(doc.as_bytes()), Err(Error::Read { .. })),
                "{doc}"
            );
        }
        assert!(parse(b"\"\xff\"").is_err());
    }

    #[test]
    fn projection_and_removal() {
        let v = parse(br#"{"a":1,"b":2,"c":3}"#).unwrap();
        let c = Canonical::of(&v).unwrap();
        assert_eq!(c.members(|k| !key_is(k, "b")).unwrap(), br#"{"a":1,"c":3}"#);
        assert_eq!(
            c.members(|k| ["c", "a", "z"].iter().any(|f| key_is(k, f)))
                .unwrap(),
            br#"{"a":1,"c":3}"#
        );
        assert!(is_canonical(b"{\"a\":1}\n", b"{\"a\":1}"));
        assert!(!is_canonical(b"{\"a\":1}\n\n", b"{\"a\":1}"));
    }
}
