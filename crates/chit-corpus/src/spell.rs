//! JSON text for a value, spelled at random: key order, whitespace, string
//! escapes and number spellings, always reading back to the same value.

use crate::Rng;
use serde_json::Value;
use std::fmt::Write;

/// Writes `v` as JSON text with random key order, whitespace, escapes and
/// number spellings. The text always reads back to the same value.
pub fn spell(v: &Value, rng: &mut Rng) -> String {
    let mut out = String::with_capacity(2048);
    let pretty = rng.chance(0.3);
    write_value(v, rng, pretty, 0, &mut out);
    out
}

fn write_value(v: &Value, rng: &mut Rng, pretty: bool, level: usize, out: &mut String) {
    let nl = |out: &mut String, level: usize| {
        if pretty {
            out.push('\n');
            for _ in 0..level {
                out.push_str("  ");
            }
        }
    };
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(n, rng, out),
        Value::String(s) => write_string(s, rng, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                nl(out, level + 1);
                write_value(x, rng, pretty, level + 1, out);
            }
            if !a.is_empty() {
                nl(out, level);
            }
            out.push(']');
        }
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            if rng.chance(0.6) {
                for i in (1..keys.len()).rev() {
                    keys.swap(i, rng.below(i as u64 + 1) as usize);
                }
            }
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                nl(out, level + 1);
                write_string(k, rng, out);
                out.push_str(if pretty { ": " } else { ":" });
                write_value(&o[k.as_str()], rng, pretty, level + 1, out);
            }
            if !keys.is_empty() {
                nl(out, level);
            }
            out.push('}');
        }
    }
}

fn write_number(n: &serde_json::Number, rng: &mut Rng, out: &mut String) {
    if let Some(i) = n.as_i64() {
        if !rng.chance(0.15) {
            let _ = write!(out, "{i}");
            return;
        }
        let _ = match rng.below(5) {
            0 => write!(out, "{i}.0"),
            1 => write!(out, "{i}e0"),
            2 if i == 0 => write!(out, "-0"),
            2 => write!(out, "{i}00E-2"),
            3 if i % 10 == 0 && i != 0 => write!(out, "{}e1", i / 10),
            3 => write!(out, "{i}.000"),
            _ => write!(out, "{i}E+0"),
        };
        return;
    }
    let x = n.as_f64().unwrap_or(0.0);
    let plain = format!("{x:?}");
    if !rng.chance(0.2) {
        out.push_str(&plain);
        return;
    }
    let _ = match (rng.below(3), scaled_by_10k(x)) {
        (0, _) if plain.contains('.') && !plain.contains('e') => write!(out, "{plain}0"),
        (1, _) => write!(out, "{x:e}"),
        (_, Some(scaled)) => write!(out, "{scaled}E-4"),
        _ => write!(out, "{plain}"),
    };
}

/// `x` × 10⁴ written as an integer when `x` is a short plain decimal, so
/// that `{that}E-4` spells the same number (`0.4312` → `4312`).
fn scaled_by_10k(x: f64) -> Option<String> {
    let s = format!("{x:?}");
    let (sign, body) = match s.strip_prefix('-') {
        Some(b) => ("-", b),
        None => ("", s.as_str()),
    };
    let (int, frac) = body.split_once('.')?;
    if frac.len() > 4
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let digits = format!("{int}{frac:0<4}");
    let t = digits.trim_start_matches('0');
    Some(format!("{sign}{}", if t.is_empty() { "0" } else { t }))
}

fn write_string(s: &str, rng: &mut Rng, out: &mut String) {
    out.push('"');
    let escape_some = rng.chance(0.1);
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str(if escape_some { "\\u0009" } else { "\\t" }),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            '/' if escape_some => out.push_str("\\/"),
            c if escape_some && rng.chance(0.3) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{:04X}", u);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
