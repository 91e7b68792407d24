//! RFC 8785 conformance: the published vectors, ECMAScript's number output
//! over 20,000 recorded doubles, and generated properties over a million more.

use chit_core::canon::{self, Profile};
use chit_core::json::{parse, Limits, ReadErrorKind};
use std::path::Path;

fn data(rel: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(rel),
    )
    .unwrap()
}

#[test]
fn rfc8785_vectors() {
    let names = [
        "arrays",
        "french",
        "structures",
        "unicode",
        "values",
        "weird",
    ];
    for name in names {
        let input = data(&format!("jcs/input/{name}.json"));
        let want = data(&format!("jcs/output/{name}.json"));
        let v = parse(&input, &Limits::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = canon::to_vec(v.root(), Profile::Jcs);
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "vector {name}"
        );
    }
}

#[test]
fn numbers_match_ecmascript() {
    let table = String::from_utf8(data("es-numbers.txt")).unwrap();
    let mut n = 0;
    for line in table.lines() {
        let (hex, want) = line.split_once(' ').unwrap();
        let x = f64::from_bits(u64::from_str_radix(hex, 16).unwrap());
        let mut out = Vec::new();
        canon::write_f64(x, &mut out);
        assert_eq!(std::str::from_utf8(&out).unwrap(), want, "bits {hex}");
        // Through the reader as well: the literal V8 wrote reads back to a
        // stored number that canonicalises to the same text.
        let v = parse(want.as_bytes(), &Limits::default()).unwrap();
        assert_eq!(
            canon::to_vec(v.root(), Profile::Jcs),
            want.as_bytes(),
            "reparse {want}"
        );
        n += 1;
    }
    assert!(n > 20_000, "the table has {n} rows");
}

/// SplitMix64: a fixed, seeded sequence.
struct Rng(u64);
impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Checks the ECMAScript Number::toString shape: plain digits for exponents
/// in [-7, 21), otherwise d[.ddd]e±n; never a leading zero or trailing
/// fractional zero; and the text reads back to the same double.
#[test]
fn generated_doubles_round_trip_in_ecmascript_form() {
    let mut rng = Rng(0x8785);
    for _ in 0..1_000_000 {
        let x = f64::from_bits(rng.next_u64());
        if !x.is_finite() {
            continue;
        }
        let mut out = Vec::new();
        canon::write_f64(x, &mut out);
        let s = std::str::from_utf8(&out).unwrap();
        let back: f64 = s.parse().unwrap();
        assert!(
            back == x || (x == 0.0 && back == 0.0),
            "{s} does not read back to {x:e}"
        );
        let body = s.strip_prefix('-').unwrap_or(s);
        let exp = x.abs().log10().floor();
        if let Some((mant, e)) = body.split_once('e') {
            assert!(
                !(-7.0..21.0).contains(&exp) || (exp - 21.0).abs() < 1.0 || (exp + 7.0).abs() < 1.0,
                "{s}"
            );
            assert!(e.starts_with('+') || e.starts_with('-'), "{s}");
            assert!(!mant.ends_with('0') || mant.len() == 1, "{s}");
        } else {
            assert!(!body.starts_with("00"), "{s}");
            if body.contains('.') {
                assert!(!body.ends_with('0'), "{s}");
            }
        }
    }
}

#[test]
fn integers_and_their_double_spellings_agree() {
    let mut rng = Rng(21);
    for _ in 0..200_000 {
        let i = (rng.next_u64() >> (rng.next_u64() % 64)) as i64
            * if rng.next_u64().is_multiple_of(2) {
                1
            } else {
                -1
            };
        let x = i as f64;
        for lit in [i.to_string(), format!("{x:e}"), format!("{x:?}")] {
            let v = parse(lit.as_bytes(), &Limits::default()).unwrap();
            let mut want = Vec::new();
            canon::write_f64(x, &mut want);
            assert_eq!(canon::to_vec(v.root(), Profile::Jcs), want, "{lit}");
        }
    }
}

#[test]
fn duplicate_keys_and_lone_surrogates_are_refused() {
    for (doc, want) in [
        (r#"{"a":1,"a":1}"#, "duplicate"),
        (r#"{"a":{"b":1,"b":2}}"#, "duplicate"),
        (r#"["\ud83d"]"#, "surrogate"),
        (r#"["\ude02\ud83d"]"#, "surrogate"),
    ] {
        let e = parse(doc.as_bytes(), &Limits::default()).unwrap_err();
        assert!(
            matches!(
                e.kind,
                ReadErrorKind::DuplicateKey(_) | ReadErrorKind::LoneSurrogate(_)
            ),
            "{doc}"
        );
        assert!(e.to_string().contains(want), "{e}");
    }
}
