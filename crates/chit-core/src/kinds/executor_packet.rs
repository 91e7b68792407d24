//! `lattice.executor_packet.v1`: the context packet Lattice issues an
//! executor at dispatch. X1-X5 hold for one packet; X6 needs an earlier and
//! a later packet for the same `todo_id` ([`rebinds`]). Its bytes and
//! digests follow Lattice's canonical profile ([`crate::lattice`]), not
//! RFC 8785.

use crate::checked::Checked;
use crate::digest::sha256_hex;
use crate::doc::{JsonType, Val};
pub use crate::facts::RebindFacts;
use crate::facts::{Facts, Origin};
use crate::lattice::{self, Value};
use crate::report::Report;
use crate::schema;

pub const KIND: &str = crate::kind::Kind::LatticePacket.name();

/// The rule ids of `lattice.executor_packet.v1`. X1, the schema, is
/// reported under [`SCHEMA`](crate::rule::SCHEMA) as for every kind.
pub mod rule {
    pub use crate::rule::SCHEMA;

    /// The schema (reported as [`SCHEMA`]).
    pub const X1: &str = "X1";
    /// The bytes are the canonical bytes (one trailing LF allowed), within
    /// Lattice's limits.
    pub const X2: &str = "X2";
    /// `context_content_digest` is the digest of exactly the six projected
    /// fields.
    pub const X3: &str = "X3";
    /// `packet_digest` is the digest of the packet without it.
    pub const X4: &str = "X4";
    /// (Warning) `forbidden_operations` is empty, as Lattice writes it.
    pub const X5: &str = "X5";
    /// Packets of one `todo_id`, ordered by `plan_epoch`: each keeps the
    /// content digest, names another `plan_ref` and a greater epoch, and is
    /// valid on its own.
    pub const X6: &str = "X6";
}

/// The six fields `context_content_digest` covers.
pub const CONTEXT_FIELDS: [&str; 6] = [
    "todo_id",
    "task_ref",
    "scope",
    "base_sha",
    "verifier_refs",
    "forbidden_operations",
];

/// Both digests, cut from the packet's canonical bytes: (the digest of the
/// six projected fields, the digest of all but `packet_digest`).
fn digests_of(c: &lattice::Canonical) -> Option<(String, String)> {
    let context = c.members(|k| CONTEXT_FIELDS.iter().any(|f| lattice::key_is(k, f)))?;
    let packet = c.members(|k| !lattice::key_is(k, "packet_digest"))?;
    Some((sha256_hex(&context), sha256_hex(&packet)))
}

/// The packet with both digests set, and the two digests: the context
/// digest first (it does not cover either digest), then the self-digest
/// over the packet with that context digest in place.
fn with_digests(v: &Value) -> Result<(Value, String, String), lattice::Error> {
    let not_object = || lattice::Error::Profile("a packet is a JSON object".into());
    let Value::Obj(members) = v else {
        return Err(not_object());
    };
    let set = |members: &mut Vec<(Vec<u16>, Value)>, key: &str, value: &str| {
        let val = Value::Str(value.encode_utf16().collect());
        match members.iter_mut().find(|(k, _)| lattice::key_is(k, key)) {
            Some(m) => m.1 = val,
            None => members.push((key.encode_utf16().collect(), val)),
        }
    };
    let mut members = members.clone();
    let (context, _) = digests_of(&lattice::Canonical::of(v)?).ok_or_else(not_object)?;
    set(&mut members, "context_content_digest", &context);
    let partial = Value::Obj(members);
    let (_, packet) = digests_of(&lattice::Canonical::of(&partial)?).ok_or_else(not_object)?;
    let Value::Obj(mut members) = partial else {
        return Err(not_object());
    };
    set(&mut members, "packet_digest", &packet);
    Ok((Value::Obj(members), context, packet))
}

/// The digests the packet should carry: `context_content_digest`, and
/// `packet_digest` over the packet with that context digest in place (what
/// [`seal`] writes).
pub fn sealed_digests(v: &Value) -> Result<(String, String), lattice::Error> {
    with_digests(v).map(|(_, context, packet)| (context, packet))
}

/// Whether `bytes` are a Lattice executor packet, read under Lattice's
/// profile: `None` when they are not one (no `schema` naming this kind, or
/// unreadable), unless `forced` (`--kind`) says they are, in which case a
/// read or profile error is returned. A cheap scan for the kind's name
/// keeps other documents from being read twice.
/// At most `max_values` values are read (see [`lattice::parse_limited`]).
pub fn recognise(
    bytes: &[u8],
    forced: bool,
    max_values: usize,
) -> Option<Result<Value, lattice::Error>> {
    if !forced && memchr::memmem::find(bytes, KIND.as_bytes()).is_none() {
        return None;
    }
    match lattice::parse_limited(bytes, max_values) {
        Ok(v) if forced || v.get("schema").and_then(Value::as_text).as_deref() == Some(KIND) => {
            Some(Ok(v))
        }
        Err(e) if forced => Some(Err(e)),
        _ => None,
    }
}

/// A packet Lattice's profile refuses outright (past a limit), as X2.
pub fn refused(why: &str) -> Checked {
    let mut r = Report::new(KIND);
    r.error(rule::X2, "", format!("{why}; Lattice refuses the packet"));
    Checked::of(r)
}

/// Checks a packet's bytes: all of X1-X5. A read error is returned as is
/// (the input is unreadable, not an invalid packet).
pub fn check_bytes(bytes: &[u8], source: Origin) -> Result<Checked, lattice::Error> {
    match lattice::parse(bytes) {
        Ok(v) => Ok(check_value(&v, Some(bytes), source)),
        Err(lattice::Error::Profile(why)) => Ok(refused(&why)),
        Err(e) => Err(e),
    }
}

/// Checks a packet read by chit's strict reader (inside an envelope, or
/// under `--kind`): X1, X3-X5, and X2's limits; its bytes are not checked.
pub fn check(v: Val) -> Report {
    check_value(&from_val(v), None, Origin::new("", None)).report
}

/// A value of chit's strict reader as Lattice holds it.
pub fn from_val(v: Val) -> Value {
    match v.json_type() {
        JsonType::Null => Value::Null,
        JsonType::Bool => Value::Bool(v.as_bool().unwrap_or(false)),
        JsonType::Number => Value::Num(v.as_f64().unwrap_or(0.0)),
        JsonType::String => Value::Str(v.as_str().unwrap_or("").encode_utf16().collect()),
        JsonType::Array => Value::Arr(v.items().map(from_val).collect()),
        JsonType::Object => Value::Obj(
            v.members()
                .map(|(k, x)| (k.encode_utf16().collect(), from_val(x)))
                .collect(),
        ),
    }
}

pub fn check_value(v: &Value, bytes: Option<&[u8]>, source: Origin) -> Checked {
    let mut r = Report::new(KIND);
    let canonical = match lattice::Canonical::of(v) {
        Ok(c) => Some(c),
        Err(e) => {
            r.error(rule::X2, "", format!("{e}; Lattice refuses the packet"));
            None
        }
    };
    let schema_ok = x1_schema(v, canonical.as_ref(), &mut r);
    if let (Some(c), Some(b)) = (&canonical, bytes) {
        x2_canonical_bytes(b, &c.bytes, &mut r);
    }
    if let Some((context, packet)) = canonical.as_ref().and_then(digests_of) {
        x3_context_digest(v, &context, &mut r);
        x4_packet_digest(v, &packet, &mut r);
    }
    x5_forbidden_operations(v, &mut r);
    let text = |k: &str| v.get(k).and_then(Value::as_text);
    let facts = schema_ok
        .then(|| {
            Some(RebindFacts {
                source,
                todo_id: text("todo_id")?,
                packet_id: text("packet_id")?,
                plan_ref: text("plan_ref")?,
                plan_epoch: v
                    .get("plan_epoch")
                    .and_then(Value::as_f64)
                    .filter(|x| *x >= 0.0 && x.fract() == 0.0 && *x <= MAX_SAFE_INTEGER)
                    .map(|x| x as u64),
                context_content_digest: text("context_content_digest"),
                valid: r.valid(),
            })
        })
        .flatten();
    Checked {
        facts: facts.map(Facts::Rebind),
        ..Checked::of(r)
    }
}

/// X1: the schema, under rule `schema`. The canonical bytes are read by
/// chit's strict reader where they hold no lone surrogate; where they do
/// (the schema's ASCII patterns refuse those anyway), each is seen as a
/// private-use character ([`lattice::unicode_json`]).
fn x1_schema(v: &Value, canonical: Option<&lattice::Canonical>, r: &mut Report) -> bool {
    let plain = canonical
        .map(|c| c.bytes.as_slice())
        .filter(|b| memchr::memmem::find(b, b"\\ud").is_none());
    let text;
    let json: &[u8] = match plain {
        Some(b) => b,
        None => {
            text = lattice::unicode_json(v);
            &text
        }
    };
    let schema_ok = match crate::json::parse(json, &crate::json::Limits::default()) {
        Ok(doc) => schema::LATTICE_PACKET.check(doc.root(), r),
        Err(e) => {
            r.error(
                rule::SCHEMA,
                "",
                format!("cannot be checked against the schema: {e}"),
            );
            false
        }
    };
    // The schema's `integer` takes any whole double (2^53, 1e300); Lattice's
    // `nonNegativeInteger` is `Number.isSafeInteger`, at most 2^53 - 1.
    let unsafe_epoch = matches!(
        v.get("plan_epoch"),
        Some(Value::Num(x)) if x.fract() == 0.0 && *x > MAX_SAFE_INTEGER
    );
    if unsafe_epoch {
        r.error(
            rule::SCHEMA,
            "/plan_epoch",
            "plan_epoch is past 2^53 - 1, the largest safe integer (Lattice's Number.isSafeInteger)",
        );
    }
    schema_ok && !unsafe_epoch
}

/// `Number.MAX_SAFE_INTEGER`, 2^53 - 1.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// X2: the bytes are the canonical bytes (one trailing LF allowed).
fn x2_canonical_bytes(bytes: &[u8], canonical: &[u8], r: &mut Report) {
    if !lattice::is_canonical(bytes, canonical) {
        let at = bytes
            .iter()
            .zip(canonical)
            .position(|(a, b)| a != b)
            .unwrap_or(bytes.len().min(canonical.len()));
        r.error(
            rule::X2,
            "",
            format!(
                "not Lattice's canonical bytes (they differ from byte {at}); 'chit canon --profile lattice' writes them, 'chit seal' writes them with the digests"
            ),
        );
    }
}

/// X3: `context_content_digest` is the digest of exactly the six fields.
fn x3_context_digest(v: &Value, want: &str, r: &mut Report) {
    if v.get("context_content_digest")
        .and_then(Value::as_text)
        .as_deref()
        != Some(want)
    {
        r.error(
            rule::X3,
            "/context_content_digest",
            format!(
                "context_content_digest should be {want}, the SHA-256 of the canonical {{{}}}",
                CONTEXT_FIELDS.join(", ")
            ),
        );
    }
}

/// X4: `packet_digest` is the digest of the packet without it.
fn x4_packet_digest(v: &Value, want: &str, r: &mut Report) {
    if v.get("packet_digest").and_then(Value::as_text).as_deref() != Some(want) {
        r.error(
            rule::X4,
            "/packet_digest",
            format!("packet_digest should be {want}, the SHA-256 of the canonical packet without packet_digest"),
        );
    }
}

/// X5 (warning): Lattice itself always writes `forbidden_operations: []`.
fn x5_forbidden_operations(v: &Value, r: &mut Report) {
    if let Some(Value::Arr(items)) = v.get("forbidden_operations") {
        if !items.is_empty() {
            r.warning(
                rule::X5,
                "/forbidden_operations",
                format!(
                    "{} forbidden operation(s): Lattice writes [] (operation authority belongs to the host)",
                    items.len()
                ),
            );
        }
    }
}

/// The packet with both digests set, as canonical bytes (and one LF).
pub fn seal(v: &Value) -> Result<Vec<u8>, lattice::Error> {
    let mut out = lattice::canonical(&with_digests(v)?.0)?;
    out.push(b'\n');
    Ok(out)
}

/// X6's order: by todo, by epoch, then by where each came from.
fn x6_order(a: &RebindFacts, b: &RebindFacts) -> std::cmp::Ordering {
    a.todo_id
        .cmp(&b.todo_id)
        .then(a.plan_epoch.cmp(&b.plan_epoch))
        .then_with(|| a.source.cmp(&b.source))
}

/// X6 over every packet given: for each `todo_id` with more than one
/// packet, each later epoch against the one before it. Returns the todo id,
/// how many packets it has, and the findings.
pub fn rebinds(mut facts: Vec<RebindFacts>) -> Vec<(String, usize, Report)> {
    facts.sort_by(x6_order);
    let mut out = Vec::new();
    for group in facts.chunk_by(|a, b| a.todo_id == b.todo_id) {
        if group.len() < 2 {
            continue;
        }
        out.push((group[0].todo_id.clone(), group.len(), x6_group(group)));
    }
    out
}

/// X6 over one todo's packets, in X6's order: each valid on its own, and
/// each a rebind of the one before it.
fn x6_group(group: &[RebindFacts]) -> Report {
    let mut r = Report::new(KIND);
    for p in group.iter().filter(|p| !p.valid) {
        r.error(
            rule::X6,
            "",
            format!("{} ({}) is not valid on its own", p.packet_id, p.source),
        );
    }
    for w in group.windows(2) {
        r.errors.extend(x6_pair(&w[0], &w[1]));
    }
    r
}

/// X6 for one packet `b` after `a` of the same todo: the same content
/// (`context_content_digest`) under a new plan (`plan_ref`) and a later
/// epoch (`plan_epoch`). Each finding's path names the field.
fn x6_pair(a: &RebindFacts, b: &RebindFacts) -> Vec<crate::report::Finding> {
    use crate::report::Finding;
    let names = format!(
        "{} ({}) then {} ({})",
        a.packet_id, a.source, b.packet_id, b.source
    );
    let mut out = Vec::new();
    if a.context_content_digest != b.context_content_digest {
        out.push(Finding::new(
            rule::X6,
            "/context_content_digest",
            format!("{names}: the content changed (context_content_digest differs), so this is not a rebind"),
        ));
    }
    if a.plan_ref == b.plan_ref {
        out.push(Finding::new(
            rule::X6,
            "/plan_ref",
            format!(
                "{names}: the same plan_ref {}; a rebind names a new plan",
                a.plan_ref
            ),
        ));
    }
    if a.plan_epoch.is_none() || a.plan_epoch == b.plan_epoch {
        out.push(Finding::new(
            rule::X6,
            "/plan_epoch",
            format!(
                "{names}: plan_epoch {} twice; the later packet's epoch must be greater",
                a.plan_epoch.map_or("?".into(), |e| e.to_string())
            ),
        ));
    }
    out
}

/// One todo's packets as X6 reads them: in X6's order, each with the
/// fields X6 names against the one before it (its `flagged` paths, the
/// first packet's none), and X6's findings over them all.
pub struct RebindChain {
    pub packets: Vec<(RebindFacts, Vec<String>)>,
    pub report: Report,
}

/// [`RebindChain`] of packets of one todo (a log's, say): sorted into
/// X6's order, each paired with the one before it by X6's own rule.
pub fn rebind_chain(mut facts: Vec<RebindFacts>) -> RebindChain {
    facts.sort_by(x6_order);
    let report = if facts.len() > 1 {
        x6_group(&facts)
    } else {
        Report::new(KIND)
    };
    let flagged: Vec<Vec<String>> = (0..facts.len())
        .map(|i| match i.checked_sub(1) {
            Some(j) => x6_pair(&facts[j], &facts[i])
                .into_iter()
                .map(|f| f.path)
                .collect(),
            None => Vec::new(),
        })
        .collect();
    RebindChain {
        packets: facts.into_iter().zip(flagged).collect(),
        report,
    }
}
