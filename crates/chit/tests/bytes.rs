//! Machine-readable output is the exact bytes, through a pipe as on a
//! terminal: every character U+0000-U+00FF (every byte value, U+0080-U+00FF
//! as their UTF-8 encodings), a few multi-byte characters and astral ones,
//! in string content, in every command whose output a program reads.
//!
//! The expected bytes are worked out here, independently of chit, with
//! JSON.stringify's string escapes (RFC 8785, section 3.2.2.2): `\b \t \n
//! \f \r`, `\"`, `\\`, other controls below U+0020 as `\u00xx` in lower-case
//! hex, and everything else, DEL (U+007F) and the C1 controls (U+0080-U+009F)
//! included, as raw UTF-8. Outputs are compared as bytes, never as lossy
//! strings, so a byte dropped or changed on the way out fails.

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::ffi::OsStr;
use std::path::Path;

mod common;

use common::RawRun as Out;

/// Runs chit with its standard output a pipe, keeping the exact bytes.
fn chit<S: AsRef<OsStr>>(dir: &Path, args: &[S], stdin: Option<&[u8]>) -> Out {
    common::chit_raw(dir, args, stdin)
}

/// The characters under test: U+0000-U+00FF (every byte value; those from
/// 0x80 up as the UTF-8 of U+0080-U+00FF), then multi-byte characters of
/// each length, the JavaScript line separators, a BOM, noncharacters and
/// astral characters.
fn characters() -> Vec<char> {
    let mut all: Vec<char> = (0u32..=0xFF).map(|c| char::from_u32(c).unwrap()).collect();
    all.extend([
        '\u{100}',
        '\u{7FF}',
        '\u{800}',
        '\u{20AC}',
        '\u{2028}',
        '\u{2029}',
        '\u{E000}',
        '\u{FEFF}',
        '\u{FFFD}',
        '\u{FFFF}',
        '\u{10000}',
        '\u{1F600}',
        '\u{10FFFF}',
    ]);
    all
}

/// All the characters under test, in one string.
fn everything() -> String {
    characters().into_iter().collect()
}

/// One short string per character: `x`, the character, `y`.
fn probe(c: char) -> String {
    format!("x{c}y")
}

/// A JSON string as JSON.stringify (and RFC 8785) writes it: the expected
/// output, worked out without chit.
fn stringify(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON string spelt otherwise than the canonical form, as input to
/// canonicalise: every control as an upper-case `\u00XX` (so `\u0008` must
/// come out as `\b`), `/` as `\/`, U+1F600 as an escaped surrogate pair and
/// U+00E9 as `\u00e9`; everything else raw.
fn spelt(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2 + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' => out.push_str("\\/"),
            '\u{E9}' => out.push_str("\\u00e9"),
            '\u{1F600}' => out.push_str("\\uD83D\\uDE00"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A document holding every character under test, in a value, in a key
/// and one character per string; `write` spells its strings. The canonical
/// form has the keys in UTF-16 order: the key of every character (it begins
/// with U+0000), then "a", then "b".
fn document(write: fn(&str) -> String) -> String {
    let probes: Vec<String> = characters().into_iter().map(|c| write(&probe(c))).collect();
    let all = everything();
    format!(
        "{{\"b\":{},\"a\":[{}],{}:0}}",
        write(&all),
        probes.join(","),
        write(&all)
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Fails unless `got` is exactly `want`, naming where they part and the
/// characters whose probe string is written otherwise than expected.
fn same_bytes(what: &str, got: &[u8], want: &[u8]) {
    if got == want {
        return;
    }
    let at = got
        .iter()
        .zip(want)
        .position(|(g, w)| g != w)
        .unwrap_or(got.len().min(want.len()));
    let window = |b: &[u8]| {
        let from = at.saturating_sub(24);
        format!(
            "{:?}",
            String::from_utf8_lossy(&b[from..(at + 24).min(b.len())])
        )
    };
    let lost = dropped(got, want);
    panic!(
        "{what}: the output is not the exact bytes expected ({} bytes, {} expected); \
         they part at byte {at}: got {} where {} was expected; the expected characters \
         missing from the output: {lost:?}",
        got.len(),
        want.len(),
        window(got),
        window(want),
    );
}

/// The characters of `want` that `got` lacks, found by walking both and
/// skipping a character of `want` wherever they part (at most 32).
fn dropped(got: &[u8], want: &[u8]) -> Vec<String> {
    let (mut i, mut j, mut lost) = (0, 0, Vec::new());
    while i < want.len() && lost.len() < 32 {
        if j < got.len() && want[i] == got[j] {
            i += 1;
            j += 1;
            continue;
        }
        let len = match want[i] {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        let c = std::str::from_utf8(&want[i..(i + len).min(want.len())])
            .ok()
            .and_then(|s| s.chars().next());
        lost.push(match c {
            Some(c) => format!("U+{:04X}", c as u32),
            None => format!("byte {:#04x}", want[i]),
        });
        i += len;
    }
    lost
}

/// RFC 8785 canonical bytes of a value, for the documents these tests build
/// (integers, and fractions that Rust and ECMAScript both write in plain
/// decimal), keys sorted by their UTF-16 code units.
fn jcs(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) => {
                assert!(
                    f.fract() != 0.0 && f.abs() >= 1e-6 && f.abs() < 1e21,
                    "{f}: a number this test cannot write as ECMAScript does"
                );
                format!("{f}")
            }
            _ => unreachable!(),
        },
        Value::String(s) => stringify(s),
        Value::Array(a) => format!("[{}]", a.iter().map(jcs).collect::<Vec<_>>().join(",")),
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            let members: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", stringify(k), jcs(&o[k.as_str()])))
                .collect();
            format!("{{{}}}", members.join(","))
        }
    }
}

/// Base64 (standard or URL alphabet, padded or not) decoded.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a') as u32 + 26,
            b'0'..=b'9' => (c - b'0') as u32 + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => panic!("{c:#04x} is not base64"),
        }
    };
    let digits: Vec<u8> = text.bytes().filter(|&b| b != b'=').collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &c)| n | value(c) << (18 - 6 * i as u32));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

const RECEIPT: &str = include_str!("../../../examples/run-receipts/agreed-verified.json");

#[test]
fn the_expected_bytes_are_json_stringify_s() {
    // Spot checks of the escaper the other tests trust.
    assert_eq!(stringify("\u{0}\u{8}\u{1f}"), r#""\u0000\b\u001f""#);
    assert_eq!(stringify("\"\\/\u{7f}"), "\"\\\"\\\\/\u{7f}\"");
    assert_eq!(
        stringify("\u{80}\u{9f}\u{2028}").as_bytes()[1..3],
        [0xc2, 0x80]
    );
    assert_eq!(
        base64_decode("eyJhIjoieH9ZIn0"),
        b"{\"a\":\"x\x7fY\"}".to_vec()
    );
    let doc = document(stringify);
    let v: Value = serde_json::from_str(&doc).unwrap();
    assert_eq!(v["b"].as_str().unwrap(), everything());
    let spelt_doc: Value = serde_json::from_str(&document(spelt)).unwrap();
    assert_eq!(v, spelt_doc);
    assert_eq!(characters().len(), 256 + 13);
}

/// The canonical bytes of [`document`], worked out here.
fn canonical_document() -> String {
    let all = everything();
    let probes: Vec<String> = characters()
        .into_iter()
        .map(|c| stringify(&probe(c)))
        .collect();
    let want = format!(
        "{{{}:0,\"a\":[{}],\"b\":{}}}",
        stringify(&all),
        probes.join(","),
        stringify(&all)
    );
    // The worked-out form agrees with a generic RFC 8785 writer.
    assert_eq!(
        want,
        jcs(&serde_json::from_str(&document(stringify)).unwrap())
    );
    want
}

fn canon_once(profile: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let want = canonical_document();
    for input in [document(spelt), document(stringify)] {
        let mut args = vec!["canon"];
        args.extend_from_slice(profile);
        args.push("-");
        let run = chit(dir.path(), &args, Some(input.as_bytes()));
        assert_eq!(run.code, 0, "chit {args:?}: {}", run.stderr);
        same_bytes(&format!("chit {args:?}"), &run.stdout, want.as_bytes());
        assert_eq!(
            sha256_hex(&run.stdout),
            sha256_hex(want.as_bytes()),
            "chit {args:?}: the SHA-256 of the canonical bytes"
        );
    }
}

#[test]
fn canon_jcs_writes_every_character_exactly() {
    canon_once(&[]);
    canon_once(&["--profile", "jcs"]);
}

#[test]
fn canon_lattice_writes_every_character_exactly() {
    canon_once(&["--profile", "lattice"]);
}

#[test]
fn canon_lines_writes_every_character_exactly() {
    // One document a line: the whole document, then one per character (in
    // a key and in values; "k..." sorts before "v"), then a bare string.
    let mut input = document(spelt) + "\n";
    let mut want = canonical_document() + "\n";
    for c in characters() {
        let (key, p) = (format!("k{c}"), probe(c));
        input.push_str(&format!(
            "{{\"v\":{},{}:{}}}\n",
            spelt(&p),
            spelt(&key),
            spelt(&c.to_string())
        ));
        want.push_str(&format!(
            "{{{}:{},\"v\":{}}}\n",
            stringify(&key),
            stringify(&c.to_string()),
            stringify(&p)
        ));
    }
    input.push_str(&spelt(&everything()));
    want.push_str(&(stringify(&everything()) + "\n"));
    for profile in [&[][..], &["--profile", "lattice"][..]] {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["canon", "--lines"];
        args.extend_from_slice(profile);
        args.push("-");
        let run = chit(dir.path(), &args, Some(input.as_bytes()));
        assert_eq!(run.code, 0, "chit {args:?}: {}", run.stderr);
        same_bytes(&format!("chit {args:?}"), &run.stdout, want.as_bytes());
        assert_eq!(sha256_hex(&run.stdout), sha256_hex(want.as_bytes()));
    }
}

/// Characters a Unix file name may hold (any but NUL and `/`), a name each,
/// and a name holding all of U+0001-U+007F.
fn file_names() -> Vec<String> {
    let mut names: Vec<String> = characters()
        .into_iter()
        .filter(|&c| c != '\0' && c != '/')
        .map(|c| format!("f{c}g.json"))
        .collect();
    let ascii: String = (1u8..0x80).filter(|&b| b != b'/').map(char::from).collect();
    names.push(format!("{ascii}.json"));
    names
}

/// The example receipt on one line (valid, whatever its key order: its
/// digest is over its canonical form).
fn receipt_line() -> String {
    let v: Value = serde_json::from_str(RECEIPT).unwrap();
    serde_json::to_string(&v).unwrap()
}

#[test]
fn verify_json_writes_every_file_name_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let names = file_names();
    for name in &names {
        std::fs::write(dir.path().join(name), receipt_line() + "\n").unwrap();
    }
    for lines in [false, true] {
        let mut args: Vec<&str> = vec!["verify", "--json"];
        if lines {
            args.push("--lines");
        }
        args.extend(names.iter().map(String::as_str));
        let run = chit(dir.path(), &args, None);
        assert_eq!(run.code, 0, "lines {lines}: {}", run.stderr);
        let want: String = names
            .iter()
            .map(|n| {
                format!(
                    "{{\"file\":{}{},\"kind\":\"run-receipt\",\"valid\":true,\"status\":\"valid\",\"errors\":[],\"warnings\":[]}}\n",
                    stringify(n),
                    if lines { ",\"line\":1" } else { "" }
                )
            })
            .collect();
        let what = if lines {
            "chit verify --json --lines"
        } else {
            "chit verify --json"
        };
        if run.stdout != want.as_bytes() {
            let lost: Vec<String> = characters()
                .into_iter()
                .filter(|&c| c != '\0' && c != '/')
                .filter(|&c| {
                    let n = stringify(&format!("f{c}g.json"));
                    find(&run.stdout, n.as_bytes()).is_none()
                })
                .map(|c| format!("U+{:04X}", c as u32))
                .collect();
            let first = run
                .stdout
                .split_inclusive(|&b| b == b'\n')
                .zip(want.as_bytes().split_inclusive(|&b| b == b'\n'))
                .find(|(g, w)| g != w)
                .map(|(g, w)| {
                    format!(
                        "got {:?} where {:?} was expected",
                        String::from_utf8_lossy(g),
                        String::from_utf8_lossy(w)
                    )
                });
            panic!(
                "{what}: the \"file\" members are not the exact JSON strings of the names; \
                 names written otherwise: {lost:?}; the first line that differs: {first:?}"
            );
        }
    }
}

#[test]
fn sign_to_standard_output_signs_every_character_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(chit(d, &["keygen", "--out", "k.pem"], None).code, 0);
    std::fs::write(d.join("p.json"), document(spelt)).unwrap();
    for input in ["p.json", "-"] {
        let stdin = document(stringify);
        let run = chit(
            d,
            &["sign", "--key", "k.pem", "--kind", "chit.test.bytes", input],
            (input == "-").then_some(stdin.as_bytes()),
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        let text = std::str::from_utf8(&run.stdout).expect("the envelope is UTF-8");
        assert!(text.is_ascii(), "the envelope is ASCII: {text:?}");
        let env: Value = serde_json::from_str(text).expect("the envelope is JSON");
        let statement = base64_decode(env["payload"].as_str().unwrap());
        // The statement is RFC 8785 canonical: kind, payload, system,
        // timestamp, type.
        let parsed: Value = serde_json::from_slice(&statement).expect("the statement is JSON");
        let want = format!(
            "{{\"kind\":\"chit.test.bytes\",\"payload\":{},\"system\":\"chit://sign\",\"timestamp\":{},\"type\":{}}}",
            canonical_document(),
            stringify(parsed["timestamp"].as_str().unwrap()),
            stringify(parsed["type"].as_str().unwrap()),
        );
        same_bytes("chit sign (the statement)", &statement, want.as_bytes());
    }
}

#[test]
fn seal_to_standard_output_writes_every_character_exactly() {
    let dir = tempfile::tempdir().unwrap();
    // The example with every character in free text (the schema bounds
    // its strings: a command to 300 characters, a gap to 200, 50 gaps),
    // written as JSON.stringify(receipt, null, 2) writes it; its digest is
    // now stale.
    let chunks: Vec<String> = characters()
        .chunks(6)
        .map(|c| stringify(&format!("x{}y", c.iter().collect::<String>())))
        .collect();
    let input = RECEIPT
        .replace("\"npm test\"", &stringify(&everything()))
        .replace(
            "\"Behaviour under production load\"",
            &chunks.join(",\n    "),
        );
    assert_ne!(input, RECEIPT);
    let mut v: Value = serde_json::from_str(&input).unwrap();
    let old = v["digest"].as_str().unwrap().to_owned();
    v.as_object_mut().unwrap().remove("digest");
    let digest = format!("sha256:{}", sha256_hex(jcs(&v).as_bytes()));
    assert_ne!(digest, old);
    let want = input.replace(&old, &digest);
    let run = chit(dir.path(), &["seal", "-"], Some(input.as_bytes()));
    assert_eq!(run.code, 0, "{}", run.stderr);
    same_bytes("chit seal -", &run.stdout, want.as_bytes());
    let run = chit(
        dir.path(),
        &["seal", "--out", "-", "-"],
        Some(input.as_bytes()),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    same_bytes("chit seal --out - -", &run.stdout, want.as_bytes());
}

#[test]
fn lineage_open_writes_every_character_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let salt = "5a".repeat(32);
    let all = everything();
    let gateway = all.clone();
    let endpoint = format!("http://127.0.0.1:1/{all}");
    let reroute = format!("r{all}");
    std::fs::write(
        d.join("t.jsonl"),
        format!(
            "{{\"salt\":\"{salt}\",\"endpoint\":{},\"gateway\":{},\"reroute\":{}}}\n{{\"requests\":[{{\"prompt\":\"p\",\"max_tokens\":1}}]}}\n",
            spelt(&endpoint),
            spelt(&gateway),
            spelt(&reroute)
        ),
    )
    .unwrap();
    // (what, value, preimage): the preimages are RFC 8785 canonical JSON.
    let mut items = vec![("salt", None, format!("{{\"salt\":\"{salt}\"}}"))];
    for (what, value) in [
        ("gateway", &gateway),
        ("endpoint", &endpoint),
        ("reroute target", &reroute),
    ] {
        items.push((
            what,
            Some(value.as_str()),
            format!("{{\"salt\":\"{salt}\",\"value\":{}}}", stringify(value)),
        ));
    }
    let value = |v: Option<&str>| v.map(stringify).unwrap_or_else(|| "null".into());

    // --json: one object; serde_json writes its keys sorted, or in the
    // order they were given (with its preserve_order feature).
    let run = chit(
        d,
        &["lineage", "open", "--transcript", "t.jsonl", "--json"],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let sorted: Vec<String> = items
        .iter()
        .map(|(what, v, pre)| {
            format!(
                "{{\"commitment_sha256\":\"{}\",\"preimage\":{},\"value\":{},\"what\":\"{what}\"}}",
                sha256_hex(pre.as_bytes()),
                stringify(pre),
                value(*v)
            )
        })
        .collect();
    let given: Vec<String> = items
        .iter()
        .map(|(what, v, pre)| {
            format!(
                "{{\"what\":\"{what}\",\"value\":{},\"commitment_sha256\":\"{}\",\"preimage\":{}}}",
                value(*v),
                sha256_hex(pre.as_bytes()),
                stringify(pre)
            )
        })
        .collect();
    let want_sorted = format!(
        "{{\"commitments\":[{}],\"salt\":\"{salt}\"}}\n",
        sorted.join(",")
    );
    let want_given = format!(
        "{{\"salt\":\"{salt}\",\"commitments\":[{}]}}\n",
        given.join(",")
    );
    if run.stdout != want_given.as_bytes() {
        same_bytes(
            "chit lineage open --json",
            &run.stdout,
            want_sorted.as_bytes(),
        );
    }

    // The text form prints each preimage for `printf '%s' PREIMAGE |
    // sha256sum`: its bytes must be exact too.
    let run = chit(d, &["lineage", "open", "--transcript", "t.jsonl"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for (what, _, pre) in &items {
        let line = format!("  preimage    {pre}\n");
        let commitment = format!("  commitment  {}\n", sha256_hex(pre.as_bytes()));
        assert!(
            find(&run.stdout, commitment.as_bytes()).is_some(),
            "chit lineage open: no commitment line for the {what}"
        );
        if find(&run.stdout, line.as_bytes()).is_none() {
            let got = run
                .stdout
                .split(|&b| b == b'\n')
                .filter(|l| l.starts_with(b"  preimage    "))
                .map(|l| format!("{:?}", String::from_utf8_lossy(l)))
                .collect::<Vec<_>>();
            panic!(
                "chit lineage open: the {what}'s preimage is not written as its exact bytes \
                 ({}); the preimage lines written: {got:?}",
                sha256_hex(pre.as_bytes())
            );
        }
    }
}
