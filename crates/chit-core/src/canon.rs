//! Canonical JSON.
//!
//! [`Profile::Jcs`] is RFC 8785: object keys sorted by UTF-16 code unit at
//! every level, no whitespace, numbers as ECMAScript's `Number::toString`
//! writes them and strings as `JSON.stringify` writes them. Values come from
//! [`crate::json::parse`], which has already refused lone surrogates and
//! numbers a double cannot hold, so JCS cannot fail on them; the profile type
//! leaves room for profiles with rules of their own.

use crate::json::number_as_f64;
use serde_json::{Map, Number, Value};
use std::cmp::Ordering;

/// Which canonical form to write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Profile {
    /// RFC 8785, the JSON Canonicalization Scheme.
    #[default]
    Jcs,
}

/// The canonical bytes of `v`.
pub fn to_vec(v: &Value, profile: Profile) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write(v, profile, &mut out);
    out
}

/// Appends the canonical bytes of `v` to `out`.
pub fn write(v: &Value, profile: Profile, out: &mut Vec<u8>) {
    match v {
        Value::Object(map) => write_object(map, None, profile, out),
        _ => write_scalar_or_array(v, profile, out),
    }
}

/// Appends the canonical bytes of the object `map` without its member `skip`
/// (how a document's own digest field is left out of what it digests).
pub fn write_object_without(
    map: &Map<String, Value>,
    skip: &str,
    profile: Profile,
    out: &mut Vec<u8>,
) {
    write_object(map, Some(skip), profile, out)
}

fn write_scalar_or_array(v: &Value, profile: Profile, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(item, profile, out);
            }
            out.push(b']');
        }
        Value::Object(map) => write_object(map, None, profile, out),
    }
}

fn write_object(map: &Map<String, Value>, skip: Option<&str>, profile: Profile, out: &mut Vec<u8>) {
    out.push(b'{');
    let mut first = true;
    let mut member = |k: &String, v: &Value, out: &mut Vec<u8>| {
        if Some(k.as_str()) == skip {
            return;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        write_string(k, out);
        out.push(b':');
        write(v, profile, out);
    };
    if in_utf16_order(map) {
        for (k, v) in map {
            member(k, v, out);
        }
    } else {
        let mut members: Vec<(&String, &Value)> = map.iter().collect();
        members.sort_unstable_by(|a, b| cmp_utf16(a.0, b.0));
        for (k, v) in members {
            member(k, v, out);
        }
    }
    out.push(b'}');
}

/// Whether the map already iterates in UTF-16 code unit order: its keys
/// ascend byte-wise (a sorted map's do) and none holds a character at or
/// above U+E000, the only place UTF-8 order and UTF-16 order part.
fn in_utf16_order(map: &Map<String, Value>) -> bool {
    let mut prev: Option<&[u8]> = None;
    for k in map.keys() {
        let k = k.as_bytes();
        if k.iter().any(|&b| b >= 0xEE) || prev.is_some_and(|p| p >= k) {
            return false;
        }
        prev = Some(k);
    }
    true
}

/// Orders strings by their UTF-16 code units, as JavaScript's default sort
/// and RFC 8785 do. UTF-8 byte order agrees with it except where a character
/// above U+FFFF meets one in U+E000..=U+FFFF.
pub fn cmp_utf16(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.as_bytes().cmp(b.as_bytes());
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Writes a number as ECMAScript's `Number::toString` does (`-0` as `0`).
pub fn write_number(n: &Number, out: &mut Vec<u8>) {
    if let Some(i) = n.as_i64() {
        // Up to 2^53 every integer is a double of its own, and ECMAScript
        // writes it as its plain digits. Above, it writes the shortest digits
        // that identify the double, padded with zeros: ryu-js's job.
        if i.unsigned_abs() <= 1 << 53 {
            out.extend_from_slice(i.to_string().as_bytes());
            return;
        }
    }
    write_f64(number_as_f64(n), out);
}

/// Writes a finite double as ECMAScript's `Number::toString` does.
pub fn write_f64(x: f64, out: &mut Vec<u8>) {
    if x == 0.0 {
        out.push(b'0');
        return;
    }
    let mut buf = ryu_js::Buffer::new();
    out.extend_from_slice(buf.format_finite(x).as_bytes());
}

/// Writes a string as `JSON.stringify` does.
pub fn write_string(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => &[],
            _ => continue,
        };
        out.extend_from_slice(&bytes[run..i]);
        if esc.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 15) as usize]);
        } else {
            out.extend_from_slice(esc);
        }
        run = i + 1;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{parse, Limits};

    fn canon(s: &str) -> String {
        String::from_utf8(to_vec(
            &parse(s.as_bytes(), &Limits::default()).unwrap(),
            Profile::Jcs,
        ))
        .unwrap()
    }

    #[test]
    fn numbers_as_ecmascript() {
        for (input, want) in [
            ("0", "0"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("1.0", "1"),
            ("1e3", "1000"),
            ("1e21", "1e+21"),
            ("1e20", "100000000000000000000"),
            ("123456789012345678901", "123456789012345680000"),
            ("1e-7", "1e-7"),
            ("0.000001", "0.000001"),
            ("-1.5e-10", "-1.5e-10"),
            ("9007199254740993", "9007199254740992"),
            ("4.35", "4.35"),
            ("0.1", "0.1"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("5e-324", "5e-324"),
            ("-9223372036854775808", "-9223372036854776000"),
            ("18446744073709551615", "18446744073709552000"),
        ] {
            assert_eq!(canon(input), want, "{input}");
        }
    }

    #[test]
    fn strings_as_json_stringify() {
        assert_eq!(
            canon(r#""\u0000\u001f\u007f\u2028\b\f\n\r\t\"\\\/é😂""#),
            "\"\\u0000\\u001f\u{7f}\u{2028}\\b\\f\\n\\r\\t\\\"\\\\/é😂\""
        );
    }

    #[test]
    fn keys_sort_by_utf16_units() {
        // U+1F602 sorts after U+FB33 by code point, but before it by UTF-16
        // unit (its first unit is 0xD83D).
        assert_eq!(
            canon("{\"\u{FB33}\":2,\"\u{1F602}\":1,\"b\":3,\"a\":4}"),
            "{\"a\":4,\"b\":3,\"\u{1F602}\":1,\"\u{FB33}\":2}"
        );
    }

    #[test]
    fn leaves_out_one_member() {
        let v = parse(
            br#"{"digest":"x","b":{"digest":1},"a":2}"#,
            &Limits::default(),
        )
        .unwrap();
        let mut out = Vec::new();
        write_object_without(v.as_object().unwrap(), "digest", Profile::Jcs, &mut out);
        assert_eq!(out, br#"{"a":2,"b":{"digest":1}}"#);
    }
}
