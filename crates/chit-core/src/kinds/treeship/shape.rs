//! Members as serde reads a Treeship type: each member's JSON type, and
//! whether it may be absent or null. A statement that does not read so is
//! one Treeship cannot read at all.

use crate::doc::Val;

/// What serde reads a member as.
#[derive(Clone, Copy)]
pub(crate) enum Ty {
    Str,
    Bool,
    U32,
    U64,
    Strs,
    /// One of these strings (a unit enum, `snake_case`).
    OneOf(&'static [&'static str]),
    Obj(&'static [Field]),
    Objs(&'static [Field]),
    /// Any JSON value (`serde_json::Value`).
    Any,
}

/// When a member may be absent: never (`Req`); absent or null (`Opt`, an
/// `Option`); absent but not null (`Dflt`, `#[serde(default)]` on a type
/// that does not read null).
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Has {
    Req,
    Opt,
    Dflt,
}

pub(crate) type Field = (&'static str, Ty, Has);

/// `SubjectRef`.
pub(crate) const SUBJECT: &[Field] = &[
    ("digest", Ty::Str, Has::Opt),
    ("uri", Ty::Str, Has::Opt),
    ("artifactId", Ty::Str, Has::Opt),
];

/// `Retry`.
pub(crate) const RETRY: &[Field] = &[
    ("of", Ty::Str, Has::Req),
    ("attempt", Ty::U32, Has::Req),
    (
        "cause",
        Ty::OneOf(&["timeout", "error", "rate_limited", "operator", "unknown"]),
        Has::Req,
    ),
    ("backoff_ms", Ty::U64, Has::Opt),
    ("idempotency_key", Ty::Str, Has::Opt),
];

/// Whether `v` reads as `ty`; the first member that does not is named.
pub(crate) fn fits(v: Val, ty: Ty, path: &str) -> Result<(), (String, String)> {
    let bad = |what: &str| Err((path.to_owned(), format!("must be {what}")));
    let whole = |max: u64| {
        v.number_text()
            .filter(|t| t.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|t| t.parse::<u64>().ok())
            .is_some_and(|n| n <= max)
    };
    match ty {
        Ty::Str if v.as_str().is_some() => Ok(()),
        Ty::Str => bad("a string"),
        Ty::Bool if v.as_bool().is_some() => Ok(()),
        Ty::Bool => bad("true or false"),
        Ty::U32 if whole(u32::MAX.into()) => Ok(()),
        Ty::U32 => bad("a whole number from 0 to 4294967295"),
        Ty::U64 if whole(u64::MAX) => Ok(()),
        Ty::U64 => bad("a whole number from 0 to 18446744073709551615"),
        Ty::Strs
            if v.as_array()
                .is_some_and(|mut items| items.all(|i| i.as_str().is_some())) =>
        {
            Ok(())
        }
        Ty::Strs => bad("an array of strings"),
        Ty::OneOf(names) if v.as_str().is_some_and(|s| names.contains(&s)) => Ok(()),
        Ty::OneOf(names) => bad(&format!("one of {}", names.join(", "))),
        Ty::Obj(fields) => object(v, fields, path),
        Ty::Objs(fields) => match v.as_array() {
            Some(items) => items
                .enumerate()
                .try_for_each(|(i, item)| object(item, fields, &format!("{path}/{i}"))),
            None => bad("an array of objects"),
        },
        Ty::Any => Ok(()),
    }
}

pub(crate) fn object(v: Val, fields: &[Field], path: &str) -> Result<(), (String, String)> {
    if !v.is_object() {
        return Err((path.to_owned(), "must be an object".to_owned()));
    }
    for &(name, ty, has) in fields {
        let at = format!("{path}/{name}");
        match v.get(name) {
            None if has == Has::Req => return Err((at, "is missing".to_owned())),
            None => {}
            Some(m) if m.is_null() && has == Has::Opt => {}
            Some(m) => fits(m, ty, &at)?,
        }
    }
    Ok(())
}
