//! Values read as Reason reads them: `serde_json` values, each number
//! parsed from its literal by `serde_json` (whole numbers exactly as `u64`
//! or `i64`, past 2^53 - 1 included; anything else as a double), objects in
//! key order, no more than 127 containers deep (where `serde_json` stops).
//!
//! One class of number is refused rather than guessed: a fraction or an
//! exponent whose double depends on the parser (more than 2^53 in its
//! significand, a power of ten past 10^22, or one that `serde_json` writes
//! in exponent form, which its versions spell differently). Reason's build
//! reads such a literal with `serde_json`'s fast path, chit's with the
//! correctly rounded one; where the two could differ, a digest chit
//! recomputed could pass what Reason rejects, so chit refuses instead.

use std::str::FromStr;

use serde_json::{Map, Number, Value};

use crate::doc::{JsonType, Val};
use crate::report::pointer_token;

/// The deepest nesting `serde_json` reads (it refuses the 128th container).
pub const MAX_NESTING: usize = 127;

/// Why a value cannot be read as Reason reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueError {
    /// A JSON Pointer relative to the value converted.
    pub path: String,
    pub message: String,
}

/// `v` as a `serde_json` value; `depth` is how many containers hold it.
pub fn convert(v: Val, depth: usize) -> Result<Value, ValueError> {
    walk(v, depth)
}

/// The conversion; a failure's path is built on the way out, so a value
/// that converts costs no path at all.
fn walk(v: Val, depth: usize) -> Result<Value, ValueError> {
    let nested = || ValueError {
        path: String::new(),
        message: format!(
            "nested more than {MAX_NESTING} deep: Reason (serde_json) refuses the input"
        ),
    };
    let under = |token: String, mut e: ValueError| {
        e.path = format!("/{token}{}", e.path);
        e
    };
    Ok(match v.json_type() {
        JsonType::Null => Value::Null,
        JsonType::Bool => Value::Bool(v.as_bool().unwrap_or_default()),
        JsonType::String => Value::String(v.as_str().unwrap_or_default().to_owned()),
        JsonType::Number => Value::Number(number(v.number_text().unwrap_or("0"), "")?),
        JsonType::Array => {
            if depth + 1 > MAX_NESTING {
                return Err(nested());
            }
            let mut out = Vec::with_capacity(v.len());
            for (i, x) in v.items().enumerate() {
                out.push(walk(x, depth + 1).map_err(|e| under(i.to_string(), e))?);
            }
            Value::Array(out)
        }
        JsonType::Object => {
            if depth + 1 > MAX_NESTING {
                return Err(nested());
            }
            let mut out = Map::new();
            for (k, x) in v.members() {
                let x = walk(x, depth + 1).map_err(|e| under(pointer_token(k), e))?;
                out.insert(k.to_owned(), x);
            }
            Value::Object(out)
        }
    })
}

/// Whether a literal could be refused by [`number`]: anything but a whole
/// number of at most 18 digits (which every reader reads exactly).
pub fn needs_check(literal: &str) -> bool {
    let digits = literal.strip_prefix('-').unwrap_or(literal);
    digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit())
}

/// A number literal as `serde_json` reads it, refusing those whose double
/// could depend on the parser (see the module's notes).
pub fn number(literal: &str, path: &str) -> Result<Number, ValueError> {
    let refuse = |why: &str| ValueError {
        path: path.to_owned(),
        message: format!("the number {literal} {why}"),
    };
    let n = Number::from_str(literal)
        .map_err(|_| refuse("is out of range for Reason (serde_json refuses it)"))?;
    if n.is_f64() && !exact_double(literal, &n) {
        return Err(refuse(
            "cannot be read exactly the way Reason reads it (its double depends on the JSON parser); write it as a string",
        ));
    }
    Ok(n)
}

/// Whether a fraction or exponent literal reads as the same double under
/// every correct and every fast parser: a significand of at most 2^53 and
/// a power of ten of at most 22 make both operands exact, so the one
/// rounding is the same; and the double prints without an exponent.
fn exact_double(literal: &str, n: &Number) -> bool {
    let body = literal.trim_start_matches('-');
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], body[i + 1..].parse::<i64>().ok()),
        None => (body, Some(0)),
    };
    let Some(exp) = exp else { return false };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    let scale = exp - frac.len() as i64;
    let significand = match digits {
        "" => Some(0),
        d if d.len() <= 16 => d.parse::<u64>().ok(),
        _ => None,
    };
    let small = significand.is_some_and(|s| s <= 1 << 53) && (-22..=22).contains(&scale);
    small && !n.to_string().contains(['e', 'E'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_are_exact_and_risky_doubles_refused() {
        for ok in [
            "9007199254740993",
            "-9223372036854775808",
            "18446744073709551615",
            "1.5",
            "0.1",
            "100.25",
            "-0.0",
            "-0",
            "1e2",
        ] {
            assert!(number(ok, "").is_ok(), "{ok}");
        }
        assert_eq!(
            number("9007199254740993", "").unwrap().to_string(),
            "9007199254740993"
        );
        assert_eq!(number("1e2", "").unwrap().to_string(), "100.0");
        for bad in [
            "18446744073709551616",
            "0.1000000000000000055511151231257827",
            "1e23",
            "1e-30",
            "12345678901234567.5",
            "1e400",
        ] {
            assert!(number(bad, "").is_err(), "{bad}");
        }
    }
}
