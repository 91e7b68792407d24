//! Canonical JSON.
//!
//! [`Profile::Jcs`] is RFC 8785: object keys sorted by UTF-16 code unit at
//! every level, no whitespace, numbers as ECMAScript's `Number::toString`
//! writes them and strings as `JSON.stringify` writes them. Values come from
//! [`crate::json::parse`], which has already refused lone surrogates and
//! numbers a double cannot hold, so JCS cannot fail on them; the profile type
//! leaves room for profiles with rules of their own.

use crate::doc::{JsonType, Val};
use std::cmp::Ordering;

/// Which canonical form to write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Profile {
    /// RFC 8785, the JSON Canonicalization Scheme.
    #[default]
    Jcs,
}

/// The canonical bytes of `v`.
pub fn to_vec(v: Val, profile: Profile) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write(v, profile, &mut out);
    out
}

/// Appends the canonical bytes of `v` to `out`.
pub fn write(v: Val, profile: Profile, out: &mut Vec<u8>) {
    write_inner(v, None, profile, out)
}

/// Appends the canonical bytes of the object `v` without its member `skip`
/// (how a document's own digest field is left out of what it digests).
pub fn write_without(v: Val, skip: &str, profile: Profile, out: &mut Vec<u8>) {
    write_inner(v, Some(skip), profile, out)
}

fn write_inner(v: Val, skip: Option<&str>, profile: Profile, out: &mut Vec<u8>) {
    match v.json_type() {
        JsonType::Null => out.extend_from_slice(b"null"),
        JsonType::Bool => out.extend_from_slice(if v.as_bool() == Some(true) {
            b"true"
        } else {
            b"false"
        }),
        JsonType::Number => write_f64(v.as_f64().unwrap_or(0.0), out),
        JsonType::String => {
            if let Some((s, plain)) = v.str_and_plain() {
                write_read_string(s, plain, out);
            }
        }
        JsonType::Array => {
            out.push(b'[');
            for (i, item) in v.items().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(item, profile, out);
            }
            out.push(b']');
        }
        JsonType::Object => write_object(v, skip, profile, out),
    }
}

fn write_object(v: Val, skip: Option<&str>, profile: Profile, out: &mut Vec<u8>) {
    out.push(b'{');
    let mut first = true;
    let mut member = |k: &str, plain: bool, v: Val, out: &mut Vec<u8>| {
        if Some(k) == skip {
            return;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        write_read_string(k, plain, out);
        out.push(b':');
        write(v, profile, out);
    };
    // Members come in key byte order, which is UTF-16 order unless a key
    // holds a character at or above U+E000 (lead byte 0xEE or more).
    if v.members().all(|(k, _)| k.bytes().all(|b| b < 0xEE)) {
        for (k, plain, m) in v.members_plain() {
            member(k, plain, m, out);
        }
    } else {
        let mut members: Vec<(&str, bool, Val)> = v.members_plain().collect();
        members.sort_unstable_by(|a, b| cmp_utf16(a.0, b.0));
        for (k, plain, m) in members {
            member(k, plain, m, out);
        }
    }
    out.push(b'}');
}

/// Writes a string read from a document. One its source spelled without
/// escapes (`plain`) cannot hold a quote, a backslash or a control
/// character, so its text is already what `JSON.stringify` writes.
fn write_read_string(s: &str, plain: bool, out: &mut Vec<u8>) {
    if plain {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        write_string(s, out);
    }
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

/// Writes a finite double as ECMAScript's `Number::toString` does.
pub fn write_f64(x: f64, out: &mut Vec<u8>) {
    if x == 0.0 {
        out.push(b'0');
        return;
    }
    // Integers up to 2^53 are written as their plain digits.
    if x.fract() == 0.0 && x.abs() <= 9_007_199_254_740_992.0 {
        let mut n = x.abs() as u64;
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        while n > 0 {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        if x < 0.0 {
            out.push(b'-');
        }
        out.extend_from_slice(&digits[at..]);
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
            parse(s.as_bytes(), &Limits::default()).unwrap().root(),
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
        write_without(v.root(), "digest", Profile::Jcs, &mut out);
        assert_eq!(out, br#"{"a":2,"b":{"digest":1}}"#);
    }
}
