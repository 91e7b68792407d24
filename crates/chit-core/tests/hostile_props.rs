//! Property tests: the four readers on generated hostile input (random
//! bytes, truncations, deep nesting, duplicate keys, bad UTF-8, huge
//! numbers, mutated valid documents). None panics; each error is one line
//! and names a position inside the input; what reads back is consistent.
//!
//! A few seconds each by default (`PROPTEST_CASES` overrides the count). For
//! a long run by hand, one test at a time:
//!
//! ```text
//! PROPTEST_CASES=500000 cargo test -p chit-core --test hostile_props -- --exact strict_reader
//! ```

use chit_core::check::Context;
use chit_core::kinds::numeric_lineage::transcript::Transcript;
use chit_core::trust::Trust;
use chit_core::{json, lattice, Limits};
use proptest::prelude::*;
use proptest::test_runner::Config;
use std::path::Path;

/// 1024 cases unless `PROPTEST_CASES` says otherwise; no failure files.
fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(1024);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

fn data(rel: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(rel),
    )
    .unwrap()
}

const TREESHIP_KEY: &str = "ed25519:SeVxSanX9yDn1yvX3DdaNsLaqXcy2X3FUHSyz8QRHFY";
const ENVELOPES: [&str; 3] = [
    "treeship/pkt-0__art_b06bd32e47eab4c537f21be003e5b852.envelope.json",
    "treeship/pkt-1__art_a6cdffeb437b41f0b28cbabe03b52550.envelope.json",
    "treeship/recompute__art_a219f7fb395f43421eafd87d60872452.envelope.json",
];

/// Valid documents of every kind the readers see, to mutate.
fn seeds() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = ENVELOPES.iter().map(|e| data(e)).collect();
    out.push(data("lineage/coupled.receipt.json"));
    out.push(data("jcs/input/structures.json"));
    out.push(lattice_packet());
    out.push(br#"{"a":[1,-0,1e400,"\ud800",{"a":2,"a":3}],"b":"\u00e9\t"}"#.to_vec());
    out
}

fn lattice_packet() -> Vec<u8> {
    use chit_core::kinds::executor_packet as xp;
    use lattice::Value;
    let s = |t: &str| Value::Str(t.encode_utf16().collect());
    let k = |t: &str| t.encode_utf16().collect::<Vec<u16>>();
    let v = Value::Obj(vec![
        (k("schema"), s(xp::KIND)),
        (k("packet_id"), s("pkt-1")),
        (k("todo_id"), s("todo-1")),
        (k("task_ref"), s("task-1")),
        (
            k("scope"),
            Value::Obj(vec![
                (k("\u{ff61}k"), Value::Num(1e21)),
                (k("😀"), s("\u{1}")),
            ]),
        ),
        (k("base_sha"), s("0123456789abcdef0123456789abcdef01234567")),
        (k("plan_ref"), s("plan-a")),
        (k("plan_epoch"), Value::Num(1.0)),
        (k("verifier_refs"), Value::Arr(vec![s("cargo test")])),
        (k("forbidden_operations"), Value::Arr(vec![])),
    ]);
    xp::seal(&v).unwrap()
}

/// One edit to a document.
#[derive(Clone, Debug)]
enum Edit {
    Truncate(usize),
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Repeat(usize, usize, usize),
}

fn edit(doc: &mut Vec<u8>, e: &Edit) {
    let at = |i: usize, doc: &Vec<u8>| {
        if doc.is_empty() {
            0
        } else {
            i % (doc.len() + 1)
        }
    };
    match e {
        Edit::Truncate(i) => {
            let i = at(*i, doc);
            doc.truncate(i)
        }
        Edit::Flip(i, mask) if !doc.is_empty() => {
            let i = i % doc.len();
            doc[i] ^= mask.max(&1);
        }
        Edit::Flip(..) => {}
        Edit::Insert(i, bytes) => {
            let i = at(*i, doc);
            doc.splice(i..i, bytes.iter().copied());
        }
        Edit::Delete(i, n) => {
            let i = at(*i, doc);
            let end = (i + n).min(doc.len());
            doc.drain(i..end);
        }
        Edit::Repeat(i, n, times) => {
            let i = at(*i, doc);
            let end = (i + n).min(doc.len());
            let part = doc[i..end].to_vec();
            for _ in 0..*times {
                doc.splice(end..end, part.iter().copied());
            }
        }
    }
}

/// Bytes that JSON readers find awkward.
fn awkward() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Bad UTF-8: overlong, surrogates, out of range, lone continuation, cut.
        prop::sample::select(vec![
            b"\xc0\x80".to_vec(),
            b"\xed\xa0\x80".to_vec(),
            b"\xf4\x90\x80\x80".to_vec(),
            b"\xf8\x88\x80\x80\x80".to_vec(),
            b"\x80".to_vec(),
            b"\xe2\x82".to_vec(),
            b"\xef\xbb\xbf".to_vec(),
            b"\xff".to_vec(),
        ]),
        // Escapes, good and bad.
        prop::sample::select(vec![
            br#"\ud800"#.to_vec(),
            br#"\udc00\ud800"#.to_vec(),
            br#"\u12"#.to_vec(),
            br#"\x"#.to_vec(),
            br#"\u0000"#.to_vec(),
            b"\"".to_vec(),
            b"\\".to_vec(),
        ]),
        // Structure.
        prop::sample::select(vec![
            b"{".to_vec(),
            b"}".to_vec(),
            b"[".to_vec(),
            b"]".to_vec(),
            b",".to_vec(),
            b":".to_vec(),
            b"\n".to_vec(),
            b"\r\n".to_vec(),
            b"\t".to_vec(),
            b"\0".to_vec(),
        ]),
        huge_number().prop_map(String::into_bytes),
        any::<Vec<u8>>(),
    ]
}

/// Numbers past every range: many digits, huge exponents, -0, odd forms.
fn huge_number() -> impl Strategy<Value = String> {
    prop_oneof![
        (1usize..2000).prop_map(|n| "9".repeat(n)),
        (1usize..2000).prop_map(|n| format!("0.{}1", "0".repeat(n))),
        any::<i64>().prop_map(|e| format!("1e{e}")),
        any::<i64>().prop_map(|e| format!("-1.5E+{}", e.unsigned_abs())),
        prop::sample::select(vec![
            "-0".to_owned(),
            "1e400".to_owned(),
            "-1e-400".to_owned(),
            "01".to_owned(),
            "1.".to_owned(),
            ".5".to_owned(),
            "+1".to_owned(),
            "1e".to_owned(),
            "NaN".to_owned(),
            "Infinity".to_owned(),
            "18446744073709551616".to_owned(),
            "4312E-4".to_owned(),
            "1e99999999999999999999999".to_owned(),
            "-1E-99999999999999999999999".to_owned(),
        ]),
    ]
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let one = prop_oneof![
        any::<usize>().prop_map(Edit::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(i, m)| Edit::Flip(i, m)),
        (any::<usize>(), awkward()).prop_map(|(i, b)| Edit::Insert(i, b)),
        (any::<usize>(), 0usize..64).prop_map(|(i, n)| Edit::Delete(i, n)),
        (any::<usize>(), 0usize..32, 0usize..8).prop_map(|(i, n, t)| Edit::Repeat(i, n, t)),
    ];
    prop::collection::vec(one, 1..6)
}

/// Nesting to a depth past every limit, closed or not.
fn deep() -> impl Strategy<Value = Vec<u8>> {
    (1usize..20_000, any::<bool>(), any::<bool>()).prop_map(|(depth, objects, close)| {
        let (open, shut): (&[u8], &[u8]) = if objects {
            (b"{\"a\":", b"}")
        } else {
            (b"[", b"]")
        };
        let mut out = open.repeat(depth);
        out.extend_from_slice(b"0");
        if close {
            out.extend(shut.repeat(depth));
        }
        out
    })
}

/// Objects whose keys repeat, spelled the same or through escapes.
fn duplicate_keys() -> impl Strategy<Value = Vec<u8>> {
    (1usize..50, 2usize..400, any::<bool>()).prop_map(|(distinct, n, escaped)| {
        let mut out = b"{".to_vec();
        for i in 0..n {
            if i > 0 {
                out.push(b',');
            }
            let k = i % distinct;
            if escaped && i % 2 == 1 {
                out.extend(format!("\"\\u006b{k}\":{i}").bytes());
            } else {
                out.extend(format!("\"k{k}\":{i}").bytes());
            }
        }
        out.push(b'}');
        out
    })
}

/// Any hostile document: generated, or a valid one edited.
fn hostile() -> impl Strategy<Value = Vec<u8>> {
    let seeds = seeds();
    prop_oneof![
        any::<Vec<u8>>(),
        deep(),
        duplicate_keys(),
        huge_number().prop_map(|n| format!("{{\"n\":[{n}]}}").into_bytes()),
        (prop::sample::select(seeds), edits()).prop_map(|(mut doc, es)| {
            for e in &es {
                edit(&mut doc, e);
            }
            doc
        }),
    ]
}

/// An error's message is one line, and not empty.
fn one_line(msg: &str) -> Result<(), TestCaseError> {
    prop_assert!(!msg.is_empty(), "an empty message");
    prop_assert!(!msg.contains(['\n', '\r']), "more than one line: {msg:?}");
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// The strict reader: an error names a position inside the input; a
    /// document it reads writes canonical JSON that reads back the same.
    #[test]
    fn strict_reader(input in hostile()) {
        match json::parse(&input, &Limits::default()) {
            Err(e) => {
                one_line(&e.to_string())?;
                prop_assert!(e.offset <= input.len(), "{e:?} past {} bytes", input.len());
                prop_assert!(e.line >= 1 && e.column >= 1, "{e:?}");
            }
            Ok(doc) => {
                let canon = chit_core::canon::to_vec(doc.root(), chit_core::canon::Profile::Jcs);
                let again = json::parse(&canon, &Limits::default());
                prop_assert!(again.is_ok(), "canonical form does not read back: {again:?}");
                let twice = chit_core::canon::to_vec(again.unwrap().root(), chit_core::canon::Profile::Jcs);
                prop_assert_eq!(canon, twice);
            }
        }
    }

    /// Lattice's reader: an error names a byte inside the input; a value it
    /// reads has a canonical form that reads back to the same form.
    #[test]
    fn lattice_reader(input in hostile()) {
        match lattice::parse(&input) {
            Err(e) => {
                one_line(&e.to_string())?;
                if let lattice::Error::Read { offset, .. } = e {
                    prop_assert!(offset <= input.len(), "byte {offset} past {} bytes", input.len());
                }
            }
            Ok(v) => {
                if let Ok(canon) = lattice::canonical(&v) {
                    let back = lattice::parse(&canon);
                    prop_assert!(back.is_ok(), "canonical form does not read back: {back:?}");
                    let again = lattice::canonical(&back.unwrap());
                    prop_assert_eq!(again.as_ref(), Ok(&canon), "{}", String::from_utf8_lossy(&canon));
                }
            }
        }
    }

    /// The envelope reader, through `check`: never a panic, and never a
    /// valid verdict for an envelope no trusted key signed as it is.
    #[test]
    fn envelope_reader(input in hostile_envelope(), art in any::<bool>()) {
        let trust = Trust::parse(&format!("[[key]]\nname = \"t\"\npublic_key = \"{TREESHIP_KEY}\"\n")).unwrap();
        let signed: Vec<String> = ENVELOPES
            .iter()
            .map(|e| e.split("__").nth(1).unwrap()[..36].to_owned())
            .collect();
        let ctx = Context {
            trust: Some(&trust),
            expected_art: if art { Some(signed[0].as_str()) } else { None },
            ..Context::default()
        };
        match chit_core::check(&input, &ctx) {
            Err(e) => one_line(&e.to_string())?,
            Ok(checked) => {
                for f in checked.report.errors.iter().chain(&checked.report.warnings) {
                    one_line(&f.message)?;
                }
                if checked.report.valid() && chit_core::envelope::looks_like_envelope(
                    &json::parse(&input, &Limits::default()).unwrap(),
                ) {
                    let id = checked.artifact_id.clone().unwrap_or_default();
                    prop_assert!(signed.contains(&id), "valid, but not signed: {id}");
                }
            }
        }
    }

    /// A Treeship store record around a hostile envelope, its fields the
    /// envelope's own (or not): never a panic, and never valid unless a
    /// trusted key signed the envelope as it is and every field agrees.
    #[test]
    fn record_reader(input in hostile_envelope(), honest in any::<bool>(), key_id in any::<bool>()) {
        let trust = Trust::parse(&format!("[[key]]\nname = \"t\"\npublic_key = \"{TREESHIP_KEY}\"\n")).unwrap();
        let signed: Vec<String> = ENVELOPES
            .iter()
            .map(|e| e.split("__").nth(1).unwrap()[..36].to_owned())
            .collect();
        let Ok(text) = std::str::from_utf8(&input) else { return Ok(()) };
        let Ok(doc) = json::parse(&input, &Limits::default()) else { return Ok(()) };
        let mut r = chit_core::Report::default();
        let ids = chit_core::envelope::Envelope::read(&doc, &mut r).map(|e| (e.ids(), e.payload_type));
        let (art, digest, ty) = match (&ids, honest) {
            (Some((ids, ty)), true) => (ids.artifact_id.clone(), ids.digest.clone(), ty.clone()),
            _ => (signed[0].clone(), format!("sha256:{}", "0".repeat(64)), "x".to_owned()),
        };
        let record = serde_json::json!({
            "artifact_id": art,
            "digest": digest,
            "payload_type": ty,
            "key_id": if key_id { "key_0392421668c57f3a" } else { "key_x" },
            "signed_at": "2026-11-30T09:00:00Z",
        });
        let mut bytes = serde_json::to_string(&record).unwrap();
        bytes.pop();
        bytes.push_str(",\"envelope\":");
        bytes.push_str(text);
        bytes.push('}');
        let ctx = Context { trust: Some(&trust), ..Context::default() };
        match chit_core::check(bytes.as_bytes(), &ctx) {
            Err(e) => one_line(&e.to_string())?,
            Ok(checked) => {
                for f in checked.report.errors.iter().chain(&checked.report.warnings) {
                    one_line(&f.message)?;
                }
                if checked.report.valid() {
                    let id = checked.artifact_id.clone().unwrap_or_default();
                    prop_assert!(signed.contains(&id), "valid, but not signed: {id}");
                    prop_assert_eq!(&id, &art, "valid, but the record names another art id");
                }
            }
        }
    }

    /// The transcript reader: an error is one line.
    #[test]
    fn transcript_reader(input in hostile_transcript()) {
        if let Err(e) = Transcript::read(&input, &Limits::default()) {
            one_line(&e.to_string())?;
        }
    }
}

/// Envelopes: Treeship's own, edited; or built around a hostile payload
/// with odd members and signatures.
fn hostile_envelope() -> impl Strategy<Value = Vec<u8>> {
    let signed: Vec<Vec<u8>> = ENVELOPES.iter().map(|e| data(e)).collect();
    let member = prop_oneof![
        Just(None),
        Just(Some("null".to_owned())),
        Just(Some("7".to_owned())),
        Just(Some("[]".to_owned())),
        Just(Some("{}".to_owned())),
        Just(Some("\"key_0392421668c57f3a\"".to_owned())),
        "[a-zA-Z0-9_=+/-]{0,100}".prop_map(|s| Some(format!("\"{s}\""))),
    ];
    let sig = (member.clone(), member.clone());
    let built = (
        hostile(),
        prop::sample::select(vec![
            "application/vnd.treeship.receipt.v1+json",
            "application/json",
            "",
        ]),
        any::<bool>(),
        prop::collection::vec(sig, 0..20),
    )
        .prop_map(|(payload, kind, bom, sigs)| {
            use base64::Engine;
            let mut body = if bom {
                b"\xef\xbb\xbf".to_vec()
            } else {
                Vec::new()
            };
            body.extend(payload);
            let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&body);
            let sigs: Vec<String> = sigs
                .iter()
                .map(|(keyid, sig)| {
                    let mut m = Vec::new();
                    if let Some(k) = keyid {
                        m.push(format!("\"keyid\":{k}"));
                    }
                    if let Some(s) = sig {
                        m.push(format!("\"sig\":{s}"));
                    }
                    format!("{{{}}}", m.join(","))
                })
                .collect();
            format!(
                "{{\"payload\":\"{b64}\",\"payloadType\":\"{kind}\",\"signatures\":[{}]}}",
                sigs.join(",")
            )
            .into_bytes()
        });
    prop_oneof![
        (prop::sample::select(signed), edits()).prop_map(|(mut doc, es)| {
            for e in &es {
                edit(&mut doc, e);
            }
            doc
        }),
        built,
    ]
}

/// Transcripts: the public vector's sequences, edited line by line or as
/// a whole, with hostile lines mixed in.
fn hostile_transcript() -> impl Strategy<Value = Vec<u8>> {
    let text = data("lineage/coupled.sequences.jsonl");
    let lines: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    let line = prop_oneof![
        prop::sample::select(lines.clone()),
        (prop::sample::select(lines), edits()).prop_map(|(mut l, es)| {
            for e in &es {
                edit(&mut l, e);
            }
            l
        }),
        hostile(),
    ];
    prop_oneof![
        prop::collection::vec(line, 0..12).prop_map(|ls| ls.join(&b'\n')),
        (Just(text), edits()).prop_map(|(mut t, es)| {
            for e in &es {
                edit(&mut t, e);
            }
            t
        }),
    ]
}
