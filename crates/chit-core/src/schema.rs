//! The JSON Schemas chit embeds, each compiled once (draft 2020-12) and
//! reused for every document.
//!
//! The `jsonschema` crate gives `pattern` ECMA-262 semantics (`\d` is ASCII
//! only) and counts string lengths in code points, as JSON Schema defines.
//! It validates chit's own [`Doc`] in place, through the crate's interface
//! for custom JSON representations ([`ChitJson`]), so a document is never
//! copied into a `serde_json::Value` to be checked.

use crate::doc::{self, number_from_f64, Items, Members, Val};
use crate::report::Report;
use jsonschema::json::{Array, Json, JsonNumber, Node, NodeIdentity, Object};
use jsonschema::JsonType;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::OnceLock;

/// The most schema errors reported for one document.
pub const MAX_SCHEMA_ERRORS: usize = 20;

/// Past this many values, only a document's first schema error is listed.
const LARGE: usize = 100_000;

/// An embedded schema: its text and, once first used, its compiled validator.
pub struct Embedded {
    pub name: &'static str,
    pub text: &'static str,
    compiled: OnceLock<jsonschema::Validator<ChitJson>>,
}

impl Embedded {
    pub const fn new(name: &'static str, text: &'static str) -> Self {
        Embedded {
            name,
            text,
            compiled: OnceLock::new(),
        }
    }

    /// The compiled validator. Embedded schemas are tested to compile, so a
    /// failure here is a build defect, not bad input.
    pub fn validator(&self) -> &jsonschema::Validator<ChitJson> {
        self.compiled.get_or_init(|| {
            let schema: Value = serde_json::from_str(self.text)
                .unwrap_or_else(|e| panic!("embedded schema {} is not JSON: {e}", self.name));
            jsonschema::options_for::<ChitJson>()
                .with_draft(jsonschema::Draft::Draft202012)
                .build(&schema)
                .unwrap_or_else(|e| panic!("embedded schema {} does not compile: {e}", self.name))
        })
    }

    /// Checks `doc`, adding each violation to `report` under rule `schema`.
    /// Returns whether `doc` is valid.
    pub fn check(&self, value: Val, report: &mut Report) -> bool {
        let v = self.validator();
        let root = SchemaNode::Val(value);
        if v.is_valid(root) {
            return true;
        }
        // Only the first few errors are built: a document with ten million
        // bad items must not cost ten million messages. Past LARGE values
        // the validator is asked for its first error alone, which it can
        // find without walking the rest.
        if value.doc_values() > LARGE {
            if let Err(e) = v.validate(root) {
                schema_finding(&e, report);
                report.error(
                    crate::rule::SCHEMA,
                    "",
                    format!("further schema errors are not listed for a document of over {LARGE} values"),
                );
                return false;
            }
        }
        let mut n = 0usize;
        for e in v.iter_errors(root).take(MAX_SCHEMA_ERRORS + 1) {
            if n < MAX_SCHEMA_ERRORS {
                schema_finding(&e, report);
            } else {
                report.error(
                    crate::rule::SCHEMA,
                    "",
                    format!("and more schema errors (the first {MAX_SCHEMA_ERRORS} are shown)"),
                );
            }
            n += 1;
        }
        if n == 0 {
            // is_valid and iter_errors disagree: never let that pass.
            report.error(
                crate::rule::SCHEMA,
                "",
                "the document does not match the schema",
            );
        }
        false
    }
}

/// One validator error as a finding of rule `schema`, at the instance's path.
fn schema_finding(e: &jsonschema::ValidationError, report: &mut Report) {
    let path = e.instance_path().to_string();
    let shown = if path.is_empty() { "/" } else { path.as_str() };
    report.error(
        crate::rule::SCHEMA,
        path.clone(),
        format!("{shown}: {}", one_line(&e.to_string())),
    );
}

/// A validator message cut to one short line (messages quote the offending
/// value, which may be megabytes long or hold line breaks).
fn one_line(msg: &str) -> String {
    const MAX: usize = 160;
    let mut out = String::with_capacity(MAX.min(msg.len()) + 3);
    for (n, c) in msg.chars().enumerate() {
        if n == MAX {
            out.push('…');
            break;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}

pub static RUN_RECEIPT: Embedded = Embedded::new(
    "run-receipt-0.1",
    include_str!("../../../schemas/run-receipt-0.1.schema.json"),
);

pub static PACKET: Embedded = Embedded::new(
    "verification.packet.v1",
    include_str!("../../../schemas/verification.packet.v1.schema.json"),
);

pub static RECOMPUTE: Embedded = Embedded::new(
    "verification.recompute.v1",
    include_str!("../../../schemas/verification.recompute.v1.schema.json"),
);

pub static NUMERIC_LINEAGE: Embedded = Embedded::new(
    "numeric-lineage-v1",
    include_str!("../../../schemas/numeric-lineage-v1.schema.json"),
);

pub static LINEAGE_BOUND: Embedded = Embedded::new(
    "numeric.lineage.bound.v1",
    include_str!("../../../schemas/numeric.lineage.bound.v1.schema.json"),
);

pub static LATTICE_PACKET: Embedded = Embedded::new(
    "lattice.executor_packet.v1",
    include_str!("../../../schemas/lattice.executor_packet.v1.schema.json"),
);

pub static REASON_AUTHORIZATION: Embedded = Embedded::new(
    "zerker.reason.authorization.v1",
    include_str!("../../../schemas/reason.authorization.v1.schema.json"),
);

/// Every schema chit embeds.
pub const ALL: &[&Embedded] = &[
    &RUN_RECEIPT,
    &PACKET,
    &RECOMPUTE,
    &NUMERIC_LINEAGE,
    &LINEAGE_BOUND,
    &LATTICE_PACKET,
    &REASON_AUTHORIZATION,
];

// ── chit's Doc as a jsonschema instance ─────────────────────────────────

/// chit's [`Doc`] as a JSON representation the `jsonschema` crate validates.
pub struct ChitJson;

/// A value of a [`Doc`], or a bare string (an object key, for `propertyNames`).
#[derive(Clone, Copy)]
pub enum SchemaNode<'a> {
    Val(Val<'a>),
    Name(&'a str),
}

/// A number, as the double it was read as.
#[derive(Clone, Copy)]
pub struct SchemaNumber(f64);

/// An object or array of a [`Doc`].
#[derive(Clone, Copy)]
pub struct Container<'a>(Val<'a>);

impl Json for ChitJson {
    type Node<'a> = SchemaNode<'a>;
    type PreparedKey = Box<str>;
    type StringBuffer = ();
    // Members are sorted: a lookup is a binary search over a few keys.
    const KEYS_PER_LOOKUP: usize = 2;
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> Box<str> {
        key.into()
    }

    fn with_string_node<T>((): &mut (), string: &str, f: impl FnOnce(SchemaNode<'_>) -> T) -> T {
        f(SchemaNode::Name(string))
    }
}

impl JsonNumber for SchemaNumber {
    fn as_u64(&self) -> Option<u64> {
        number_from_f64(self.0).as_u64()
    }
    fn as_i64(&self) -> Option<i64> {
        number_from_f64(self.0).as_i64()
    }
    fn as_f64(&self) -> Option<f64> {
        Some(self.0)
    }
    fn as_str(&self) -> Cow<'_, str> {
        let mut out = Vec::new();
        crate::canon::write_f64(self.0, &mut out);
        Cow::Owned(String::from_utf8(out).unwrap_or_default())
    }
    fn to_number(&self) -> Cow<'_, serde_json::Number> {
        Cow::Owned(number_from_f64(self.0))
    }
    fn is_integer(&self) -> bool {
        self.0.fract() == 0.0
    }
    fn is_written_as_integer(&self) -> bool {
        self.0.fract() == 0.0
    }
}

impl<'a> Node<'a, ChitJson> for SchemaNode<'a> {
    type Object = Container<'a>;
    type Array = Container<'a>;
    type Number = SchemaNumber;

    fn as_object(&self) -> Option<Container<'a>> {
        match self {
            SchemaNode::Val(v) if v.json_type() == doc::JsonType::Object => Some(Container(*v)),
            _ => None,
        }
    }
    fn as_array(&self) -> Option<Container<'a>> {
        match self {
            SchemaNode::Val(v) if v.json_type() == doc::JsonType::Array => Some(Container(*v)),
            _ => None,
        }
    }
    fn as_string(&self) -> Option<Cow<'a, str>> {
        match self {
            SchemaNode::Val(v) => v.as_str().map(Cow::Borrowed),
            SchemaNode::Name(s) => Some(Cow::Borrowed(s)),
        }
    }
    fn as_number(&self) -> Option<SchemaNumber> {
        match self {
            SchemaNode::Val(v) => v.as_f64().map(SchemaNumber),
            SchemaNode::Name(_) => None,
        }
    }
    fn as_boolean(&self) -> Option<bool> {
        match self {
            SchemaNode::Val(v) => v.as_bool(),
            SchemaNode::Name(_) => None,
        }
    }
    fn is_null(&self) -> bool {
        matches!(self, SchemaNode::Val(v) if v.is_null())
    }
    fn json_type(&self) -> JsonType {
        match self {
            SchemaNode::Name(_) => JsonType::String,
            SchemaNode::Val(v) => match v.json_type() {
                doc::JsonType::Null => JsonType::Null,
                doc::JsonType::Bool => JsonType::Boolean,
                doc::JsonType::Number => JsonType::Number,
                doc::JsonType::String => JsonType::String,
                doc::JsonType::Array => JsonType::Array,
                doc::JsonType::Object => JsonType::Object,
            },
        }
    }
    /// For messages only: a summary of at most a few kilobytes, so that an
    /// error about a huge value costs little. Equality, which the default
    /// methods would derive from this, is overridden below to stay exact.
    fn to_value(&self) -> Cow<'a, Value> {
        match self {
            SchemaNode::Val(v) => Cow::Owned(summary(*v, 3)),
            SchemaNode::Name(s) => Cow::Owned(Value::String((*s).to_owned())),
        }
    }
    fn equals_value(&self, expected: &Value) -> bool {
        match self {
            SchemaNode::Val(v) => equal(*v, expected),
            SchemaNode::Name(s) => expected.as_str() == Some(s),
        }
    }
    fn identity(&self) -> Option<NodeIdentity> {
        match self {
            SchemaNode::Val(v) => {
                let (doc, id) = v.address();
                Some(NodeIdentity::tagged(doc, id))
            }
            SchemaNode::Name(_) => None,
        }
    }
}

/// Members of a [`Doc`] object, as the validator walks them.
pub struct SchemaMembers<'a>(Members<'a>);

impl<'a> Iterator for SchemaMembers<'a> {
    type Item = (&'a str, SchemaNode<'a>);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k, SchemaNode::Val(v)))
    }
}

/// Elements of a [`Doc`] array, as the validator walks them.
pub struct SchemaItems<'a>(Items<'a>);

impl<'a> Iterator for SchemaItems<'a> {
    type Item = SchemaNode<'a>;
    fn next(&mut self) -> Option<SchemaNode<'a>> {
        self.0.next().map(SchemaNode::Val)
    }
}

impl<'a> Object<'a, ChitJson> for Container<'a> {
    type Node = SchemaNode<'a>;
    type MemberName = &'a str;
    type MembersIter = SchemaMembers<'a>;

    fn len(&self) -> usize {
        self.0.len()
    }
    fn get(&self, key: &Box<str>) -> Option<SchemaNode<'a>> {
        self.0.get(key).map(SchemaNode::Val)
    }
    fn members(&self) -> SchemaMembers<'a> {
        SchemaMembers(self.0.members())
    }
}

impl<'a> Array<'a, ChitJson> for Container<'a> {
    type Node = SchemaNode<'a>;
    type ElementsIter = SchemaItems<'a>;

    fn len(&self) -> usize {
        self.0.len()
    }
    fn elements(&self) -> SchemaItems<'a> {
        SchemaItems(self.0.items())
    }
    fn is_unique(&self) -> bool {
        let values: Vec<Value> = self.0.items().map(|v| v.to_value()).collect();
        let cows: Vec<Cow<Value>> = values.iter().map(Cow::Borrowed).collect();
        jsonschema::json::unique::is_unique(&cows)
    }
}

/// JSON equality between a document value and a schema's value: numbers
/// compare by value (`1.0` equals `1`), objects regardless of order.
fn equal(v: Val, expected: &Value) -> bool {
    match expected {
        Value::Null => v.is_null(),
        Value::Bool(b) => v.as_bool() == Some(*b),
        Value::Number(n) => v.as_f64().is_some_and(|x| {
            // Exactly: an integer in the schema equals only the double that
            // is that integer, however large.
            if let Some(i) = n.as_i64() {
                x == i as f64 && number_from_f64(x).as_i64() == Some(i)
            } else if let Some(u) = n.as_u64() {
                x == u as f64 && number_from_f64(x).as_u64() == Some(u)
            } else {
                n.as_f64() == Some(x)
            }
        }),
        Value::String(s) => v.as_str() == Some(s.as_str()),
        Value::Array(items) => v.as_array().is_some_and(|got| {
            got.len() == items.len() && got.zip(items).all(|(g, e)| equal(g, e))
        }),
        Value::Object(members) => {
            v.is_object()
                && v.len() == members.len()
                && members
                    .iter()
                    .all(|(k, e)| v.get(k).is_some_and(|g| equal(g, e)))
        }
    }
}

/// A bounded picture of `v` for messages: strings cut at 100 characters,
/// containers at 10 entries, nesting at `depth`.
fn summary(v: Val, depth: usize) -> Value {
    const ENTRIES: usize = 10;
    const CHARS: usize = 100;
    match v.json_type() {
        doc::JsonType::String => {
            let s = v.as_str().unwrap_or("");
            if s.chars().count() > CHARS {
                Value::String(s.chars().take(CHARS).chain(['…']).collect())
            } else {
                Value::String(s.to_owned())
            }
        }
        doc::JsonType::Array if depth == 0 => Value::String(format!("[… {} items]", v.len())),
        doc::JsonType::Object if depth == 0 => Value::String(format!("{{… {} members}}", v.len())),
        doc::JsonType::Array => {
            let mut items: Vec<Value> = v
                .items()
                .take(ENTRIES)
                .map(|x| summary(x, depth - 1))
                .collect();
            if v.len() > ENTRIES {
                items.push(Value::String(format!("… {} more", v.len() - ENTRIES)));
            }
            Value::Array(items)
        }
        doc::JsonType::Object => {
            let mut m = serde_json::Map::new();
            for (k, x) in v.members().take(ENTRIES) {
                m.insert(k.to_owned(), summary(x, depth - 1));
            }
            if v.len() > ENTRIES {
                m.insert(
                    "…".into(),
                    Value::String(format!("{} more members", v.len() - ENTRIES)),
                );
            }
            Value::Object(m)
        }
        _ => v.to_value(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn embedded_schemas_compile() {
        for s in super::ALL {
            let _ = s.validator();
        }
    }

    #[test]
    fn messages_stay_short() {
        let text = format!("{{\"id\": \"{}\"}}", "x".repeat(5000));
        let doc = crate::json::parse(text.as_bytes(), &Default::default()).unwrap();
        let mut r = crate::report::Report::new("t");
        assert!(!super::RUN_RECEIPT.check(doc.root(), &mut r));
        assert!(r.errors.iter().all(|f| f.message.chars().count() < 200));
    }
}
