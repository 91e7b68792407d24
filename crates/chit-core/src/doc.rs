//! A read document: every value in one flat arena, strings pointing into the
//! text they came from.
//!
//! [`crate::json::parse`] builds a [`Doc`] without a heap allocation per
//! value; [`Val`] is a cheap handle to one value in it. An object's members
//! are stored sorted by key bytes, so a lookup is a binary search and, in the
//! common case, canonical JSON can walk them in order without sorting.
//!
//! A number keeps both readings: the double it was read as
//! ([`Val::as_f64`]) and its literal as written ([`Val::number_text`]), from
//! which [`Val::as_number`] gives the exact integer where the literal is
//! one. Kinds that need numbers beyond the double use these; there is no
//! second reader.

use serde_json::{Map, Value};

/// A string: where its text lies, in the source (as written, no escapes) or
/// in the document's buffer of decoded strings. Eight bytes: the flag rides
/// in the top bit of the length (documents are under 2 GiB).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Str {
    at: u32,
    len_flag: u32,
}

impl Str {
    const DECODED: u32 = 1 << 31;

    pub fn new(at: usize, len: usize, decoded: bool) -> Str {
        Str {
            at: at as u32,
            len_flag: len as u32 | if decoded { Str::DECODED } else { 0 },
        }
    }
    pub fn range(self) -> std::ops::Range<usize> {
        let at = self.at as usize;
        at..at + (self.len_flag & !Str::DECODED) as usize
    }
    pub fn decoded(self) -> bool {
        self.len_flag & Str::DECODED != 0
    }
}

/// One value. Twelve bytes: no variant holds more than two `u32`s (a
/// number's double and literal wait in [`Doc::numbers`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    /// The number is `numbers[i]`.
    Number(u32),
    String(Str),
    /// Children are `kids[start..start + len]`.
    Array {
        start: u32,
        len: u32,
    },
    /// Members are `members[start..start + len]`, sorted by key bytes.
    /// Each is (key, the key's [`key_prefix`], value).
    Object {
        start: u32,
        len: u32,
    },
}

/// A parsed JSON document.
#[derive(Debug)]
pub struct Doc<'a> {
    pub(crate) text: &'a str,
    pub(crate) nodes: Vec<Node>,
    pub(crate) kids: Vec<u32>,
    pub(crate) members: Vec<(Str, u64, u32)>,
    /// Each number's double and its literal in `text` (never decoded: a
    /// number has no escapes).
    pub(crate) numbers: Vec<(f64, Str)>,
    pub(crate) decoded: String,
    pub(crate) root: u32,
}

/// A number exactly as a reader that keeps integers apart from doubles
/// (`serde_json` without `arbitrary_precision`) reads it: a literal with no
/// fraction and no exponent is an integer when it fits (`u64` when it has no
/// sign, `i64` when it has one); anything else, and `-0`, is the double.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// A non-negative integer literal that fits a `u64`.
    PosInt(u64),
    /// A negative integer literal that fits an `i64` (never zero).
    NegInt(i64),
    /// Every other literal, as the nearest double: a fraction or exponent
    /// (`1.0`, `1e2`), `-0`, or an integer too large for the integer types.
    Float(f64),
}

impl Number {
    /// The number for the literal `text`, whose double is `x`.
    fn exact(text: &str, x: f64) -> Number {
        if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
            return Number::Float(x);
        }
        match text.strip_prefix('-') {
            None => text.parse().map_or(Number::Float(x), Number::PosInt),
            Some(_) => match text.parse::<i64>() {
                Ok(n) if n != 0 => Number::NegInt(n),
                _ => Number::Float(x),
            },
        }
    }

    /// The number as a double (integers past 2^53 rounded to the nearest).
    pub fn as_f64(self) -> f64 {
        match self {
            Number::PosInt(n) => n as f64,
            Number::NegInt(n) => n as f64,
            Number::Float(x) => x,
        }
    }
}

/// The JSON type of a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonType {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl<'a> Doc<'a> {
    /// The document's top-level value.
    pub fn root(&self) -> Val<'_> {
        Val {
            doc: self,
            id: self.root,
        }
    }

    /// The text the document was read from (without a byte-order mark).
    pub fn text(&self) -> &'a str {
        self.text
    }

    pub(crate) fn str(&self, s: Str) -> &str {
        let base = if s.decoded() {
            self.decoded.as_str()
        } else {
            self.text
        };
        &base[s.range()]
    }

    /// The document as a `serde_json::Value` (numbers as [`number_from_f64`]).
    pub fn to_value(&self) -> Value {
        self.root().to_value()
    }
}

/// One value in a [`Doc`].
#[derive(Clone, Copy)]
pub struct Val<'d> {
    doc: &'d Doc<'d>,
    id: u32,
}

impl std::fmt::Debug for Val<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.to_value())
    }
}

impl<'d> Val<'d> {
    fn node(&self) -> Node {
        self.doc.nodes[self.id as usize]
    }

    /// How many values the whole document holds.
    pub fn doc_values(&self) -> usize {
        self.doc.nodes.len()
    }

    /// The whole document's text and its number literals, when this is
    /// the document's top-level value (so the text is exactly this value).
    pub fn as_whole_document(&self) -> Option<(&'d str, impl Iterator<Item = &'d str> + 'd)> {
        let doc = self.doc;
        (self.id == doc.root).then(|| {
            let literals = doc.numbers.iter().map(move |(_, s)| &doc.text[s.range()]);
            (doc.text, literals)
        })
    }

    /// Identifies this value within its document (for cycle checks).
    pub fn address(&self) -> (usize, u32) {
        (self.doc as *const Doc as usize, self.id)
    }

    pub fn json_type(&self) -> JsonType {
        match self.node() {
            Node::Null => JsonType::Null,
            Node::Bool(_) => JsonType::Bool,
            Node::Number(_) => JsonType::Number,
            Node::String(_) => JsonType::String,
            Node::Array { .. } => JsonType::Array,
            Node::Object { .. } => JsonType::Object,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.node(), Node::Null)
    }

    pub fn is_object(&self) -> bool {
        matches!(self.node(), Node::Object { .. })
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.node() {
            Node::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// A number's double and its literal.
    fn number(&self) -> Option<(f64, Str)> {
        match self.node() {
            Node::Number(i) => Some(self.doc.numbers[i as usize]),
            _ => None,
        }
    }

    /// The number, as the double it was read as.
    pub fn as_f64(&self) -> Option<f64> {
        self.number().map(|(x, _)| x)
    }

    /// The number's literal exactly as the document wrote it (`1.0`, `1e2`,
    /// `-0`, `18446744073709551615`).
    pub fn number_text(&self) -> Option<&'d str> {
        self.number().map(|(_, s)| &self.doc.text[s.range()])
    }

    /// The number as read by its literal (see [`Number`]): integers exactly,
    /// past 2^53 - 1 included, as Zerker Reason (Rust, reading JSON with
    /// `serde_json`) sees them. Reason's A5 and A6 are to compare whole
    /// numbers with this rather than with [`Val::as_f64`].
    pub fn as_number(&self) -> Option<Number> {
        self.number()
            .map(|(x, s)| Number::exact(&self.doc.text[s.range()], x))
    }

    /// The number, where it is integral and fits an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        const TWO_63: f64 = 9_223_372_036_854_775_808.0;
        self.as_f64()
            .filter(|x| x.fract() == 0.0 && (-TWO_63..TWO_63).contains(x))
            .map(|x| x as i64)
    }

    pub fn as_str(&self) -> Option<&'d str> {
        match self.node() {
            Node::String(s) => Some(self.doc.str(s)),
            _ => None,
        }
    }

    /// The string and whether its source spelling had no escapes (so the
    /// source text is already as `JSON.stringify` would write it).
    pub(crate) fn str_and_plain(&self) -> Option<(&'d str, bool)> {
        match self.node() {
            Node::String(s) => Some((self.doc.str(s), !s.decoded())),
            _ => None,
        }
    }

    /// Elements of an array, or members of an object: how many.
    pub fn len(&self) -> usize {
        match self.node() {
            Node::Array { len, .. } | Node::Object { len, .. } => len as usize,
            _ => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements of an array (none for anything else).
    pub fn items(&self) -> Items<'d> {
        let range = match self.node() {
            Node::Array { start, len } => start as usize..(start + len) as usize,
            _ => 0..0,
        };
        Items {
            doc: self.doc,
            ids: self.doc.kids[range].iter(),
        }
    }

    /// The elements of an array, `None` for anything else.
    pub fn as_array(&self) -> Option<Items<'d>> {
        matches!(self.node(), Node::Array { .. }).then(|| self.items())
    }

    /// The members of an object in key byte order (none for anything else).
    pub fn members(&self) -> Members<'d> {
        Members {
            doc: self.doc,
            entries: self.doc.members[self.member_range()].iter(),
        }
    }

    /// The members with, for each key, whether its source spelling had no
    /// escapes (see [`Val::str_and_plain`]).
    pub(crate) fn members_plain(&self) -> impl Iterator<Item = (&'d str, bool, Val<'d>)> + 'd {
        let doc = self.doc;
        doc.members[self.member_range()]
            .iter()
            .map(move |&(k, _, id)| (doc.str(k), !k.decoded(), Val { doc, id }))
    }

    fn member_range(&self) -> std::ops::Range<usize> {
        match self.node() {
            Node::Object { start, len } => start as usize..(start + len) as usize,
            _ => 0..0,
        }
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<Val<'d>> {
        let doc = self.doc;
        let slice = &doc.members[self.member_range()];
        let want = key_prefix(key.as_bytes());
        slice
            .binary_search_by(|&(k, p, _)| {
                p.cmp(&want)
                    .then_with(|| doc.str(k).as_bytes().cmp(key.as_bytes()))
            })
            .ok()
            .map(|i| Val {
                doc,
                id: slice[i].2,
            })
    }

    /// This value as a `serde_json::Value`: for tests, messages and other
    /// cold paths.
    pub fn to_value(&self) -> Value {
        match self.node() {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(b),
            Node::Number(i) => Value::Number(number_from_f64(self.doc.numbers[i as usize].0)),
            Node::String(s) => Value::String(self.doc.str(s).to_owned()),
            Node::Array { .. } => Value::Array(self.items().map(|v| v.to_value()).collect()),
            Node::Object { .. } => {
                let mut m = Map::new();
                for (k, v) in self.members() {
                    m.insert(k.to_owned(), v.to_value());
                }
                Value::Object(m)
            }
        }
    }
}

/// The elements of an array, in order.
#[derive(Clone)]
pub struct Items<'d> {
    doc: &'d Doc<'d>,
    ids: std::slice::Iter<'d, u32>,
}

impl<'d> Iterator for Items<'d> {
    type Item = Val<'d>;
    fn next(&mut self) -> Option<Val<'d>> {
        let doc = self.doc;
        self.ids.next().map(|&id| Val { doc, id })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.ids.size_hint()
    }
}

impl ExactSizeIterator for Items<'_> {}

/// The members of an object, in key byte order.
#[derive(Clone)]
pub struct Members<'d> {
    doc: &'d Doc<'d>,
    entries: std::slice::Iter<'d, (Str, u64, u32)>,
}

impl<'d> Iterator for Members<'d> {
    type Item = (&'d str, Val<'d>);
    fn next(&mut self) -> Option<Self::Item> {
        let doc = self.doc;
        self.entries
            .next()
            .map(|&(k, _, id)| (doc.str(k), Val { doc, id }))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl ExactSizeIterator for Members<'_> {}

/// Up to the first eight bytes of a key, big-endian: numbers that order as
/// the keys do whenever they differ, so most comparisons need no `memcmp`.
#[inline]
pub(crate) fn key_prefix(k: &[u8]) -> u64 {
    match k.first_chunk::<8>() {
        Some(first) => u64::from_be_bytes(*first),
        None => k
            .iter()
            .enumerate()
            .fold(0u64, |p, (i, &b)| p | u64::from(b) << (56 - 8 * i)),
    }
}

/// The `serde_json` number for the double `x` (finite): an integer when `x`
/// is integral and fits `i64` or `u64`, otherwise the double. So `1.0`, `1e3`
/// and `-0` become `1`, `1000` and `0`.
pub fn number_from_f64(x: f64) -> serde_json::Number {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    const TWO_64: f64 = 18_446_744_073_709_551_616.0;
    if x.fract() == 0.0 {
        if (-TWO_63..TWO_63).contains(&x) {
            return serde_json::Number::from(x as i64);
        }
        if (0.0..TWO_64).contains(&x) {
            return serde_json::Number::from(x as u64);
        }
    }
    serde_json::Number::from_f64(x).unwrap_or_else(|| serde_json::Number::from(0))
}
