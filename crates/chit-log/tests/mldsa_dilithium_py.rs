//! ML-DSA-44 cosignatures against an independent implementation:
//! `dilithium-py`, a pure-Python FIPS 204 ML-DSA.
//!
//! A Python script, written here from C2SP `tlog-cosignature` alone,
//! parses chit's verifier keys, checkpoints and signature lines, builds
//! the `subtree/v1` message itself, checks each key id and verifies each
//! signature with dilithium-py; then it derives keys from seeds, signs
//! messages it built, and chit verifies those.
//!
//! The interpreter is `CHIT_TEST_PYTHON`: a Python with `dilithium-py`
//! installed (`.ci/run` makes a virtual environment for it). Without it the
//! test says so and passes, except under `CI=true`, where it fails.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use chit_log::checkpoint::Checkpoint;
use chit_log::cosignature::{mldsa44_public_key, subtree_message, CosignatureVerifier, Cosigner};
use chit_log::note::{Signature, Verifier as _};
use serde_json::{json, Value};

/// The independent side: the standard library and dilithium-py only.
const SCRIPT: &str = r#"
import base64, hashlib, json, struct, sys
from dilithium_py.ml_dsa import ML_DSA_44

MLDSA44 = 0x06

def opaque8(b):
    # TLS opaque<1..2^8-1>: a one-byte length, then the bytes.
    if not 1 <= len(b) <= 255:
        raise ValueError("length out of range")
    return bytes([len(b)]) + b

def subtree_message(cosigner, timestamp, origin, size, root):
    assert len(root) == 32
    return (b"subtree/v1\n\x00" + opaque8(cosigner) + struct.pack(">Q", timestamp)
            + opaque8(origin) + struct.pack(">Q", 0) + struct.pack(">Q", size) + root)

def key_id(name, public):
    return hashlib.sha256(name + b"\n" + bytes([MLDSA44]) + public).digest()[:4]

def parse_checkpoint(text):
    origin, size, root = text.split("\n")[:3]
    root = base64.b64decode(root, validate=True)
    assert len(root) == 32
    return origin.encode(), int(size), root

def parse_vkey(vkey):
    name, hex_id, key = vkey.split("+", 2)
    raw = base64.b64decode(key, validate=True)
    assert raw[0] == MLDSA44 and len(raw) == 1 + 1312, "not an ML-DSA-44 key"
    return name.encode(), bytes.fromhex(hex_id), raw[1:]

def parse_signature_line(line):
    assert line.startswith("\u2014 ") and line.endswith("\n")
    name, b64 = line[2:-1].split(" ")
    raw = base64.b64decode(b64, validate=True)
    return name.encode(), raw[:4], struct.unpack(">Q", raw[4:12])[0], raw[12:]

def verify(case):
    name, vkey_id, public = parse_vkey(case["vkey"])
    sig_name, sig_id, timestamp, sig = parse_signature_line(case["signature"])
    origin, size, root = parse_checkpoint(case["checkpoint"])
    want = key_id(name, public)
    message = subtree_message(sig_name, timestamp, origin, size, root)
    return {
        "id": case["id"],
        "key_id": sig_name == name and sig_id == want and vkey_id == want,
        "verified": len(sig) == 2420 and ML_DSA_44.verify(public, message, sig),
    }

def sign(case):
    public, secret = ML_DSA_44.key_derive(bytes.fromhex(case["seed"]))
    message = subtree_message(case["name"].encode(), case["timestamp"],
                              case["origin"].encode(), case["size"],
                              bytes.fromhex(case["root"]))
    sig = ML_DSA_44.sign(secret, message, ctx=b"", deterministic=True)
    assert ML_DSA_44.verify(public, message, sig)
    return {"id": case["id"], "public_key": public.hex(), "message": message.hex(),
            "signature": sig.hex()}

with open(sys.argv[1]) as f:
    cases = json.load(f)
json.dump({"verify": [verify(c) for c in cases["verify"]],
           "sign": [sign(c) for c in cases["sign"]]}, sys.stdout)
"#;

/// The Python to run, or `None` (after saying so) when none is set up.
fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHIT_TEST_PYTHON").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let how = "set CHIT_TEST_PYTHON to a Python with dilithium-py installed \
               (python3 -m venv V && V/bin/pip install dilithium-py==1.5.1; \
               CHIT_TEST_PYTHON=V/bin/python); .ci/run does this";
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CHIT_TEST_PYTHON is not set: {how}");
    }
    eprintln!("skipped: the dilithium-py cross-check needs CHIT_TEST_PYTHON: {how}");
    None
}

fn run_python(python: &PathBuf, cases: &Value) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("check.py");
    let input = dir.path().join("cases.json");
    std::fs::write(&script, SCRIPT).unwrap();
    std::fs::write(&input, serde_json::to_vec(cases).unwrap()).unwrap();
    let out = Command::new(python)
        .arg(&script)
        .arg(&input)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        out.status.success(),
        "{} failed ({}):\n{}",
        python.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the script writes JSON")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// 32 varied bytes (a seed, a root), from `k`.
fn bytes32(k: u8) -> [u8; 32] {
    std::array::from_fn(|i| (i as u8).wrapping_mul(31).wrapping_add(k))
}

/// One cosignature chit makes: the cosigner's seed and name, the
/// checkpoint text it cosigns (extension lines included), the time.
struct Cosigned {
    id: &'static str,
    seed: [u8; 32],
    name: String,
    checkpoint: Checkpoint,
    timestamp: u64,
}

fn cosigned() -> Vec<Cosigned> {
    let long_origin = format!("log.example/{}", "o".repeat(255 - 12));
    assert_eq!(long_origin.len(), 255);
    let mut extended = Checkpoint::new("example.com/receipts", 1_000_003, bytes32(5));
    extended.extensions = vec!["chit-extension 1".to_string()];
    vec![
        Cosigned {
            id: "small",
            seed: [1; 32],
            name: "witness.example/w1".to_string(),
            checkpoint: Checkpoint::new("log.example/a", 1, [0; 32]),
            timestamp: 0,
        },
        Cosigned {
            id: "long-origin",
            seed: bytes32(2),
            name: "w2".to_string(),
            checkpoint: Checkpoint::new(&long_origin, 42, bytes32(9)),
            timestamp: 1_700_000_123,
        },
        Cosigned {
            id: "long-name-large-size",
            seed: bytes32(3),
            name: format!("witness.example.org/{}", "n".repeat(200)),
            checkpoint: Checkpoint::new("go.sum.example/tlog", (1 << 40) + 3, bytes32(77)),
            timestamp: i64::MAX as u64,
        },
        Cosigned {
            id: "extension-line",
            seed: [0xa5; 32],
            name: "witness.example/pq".to_string(),
            checkpoint: extended,
            timestamp: 1_754_000_000,
        },
    ]
}

/// The same checkpoint at another size.
fn resized(c: &Checkpoint) -> Checkpoint {
    let mut other = c.clone();
    other.size ^= 1;
    other
}

#[test]
fn mldsa44_cosignatures_agree_with_dilithium_py() {
    let Some(python) = python() else {
        return;
    };

    // (a) chit signs, dilithium-py verifies; (b) dilithium-py signs from a
    // seed, chit verifies.
    let mut verify = Vec::new();
    let mut expected = BTreeMap::new();
    for c in cosigned() {
        let w = Cosigner::mldsa44_from_seed(&c.name, &c.seed).unwrap();
        let text = c.checkpoint.text();
        let sig = w.cosign(&text, c.timestamp).unwrap();
        let mut flipped = sig.clone();
        flipped.bytes[8 + 1000] ^= 0x10;
        let cases = [
            ("", &text, &sig, true),
            ("/flipped-byte", &text, &flipped, false),
            ("/other-size", &resized(&c.checkpoint).text(), &sig, false),
        ];
        for (suffix, checkpoint, sig, verified) in cases {
            let id = format!("{}{suffix}", c.id);
            verify.push(json!({
                "id": id,
                "vkey": w.verifier_key(),
                "checkpoint": checkpoint,
                "signature": sig.line(),
            }));
            expected.insert(id, (true, verified));
        }
    }
    let signers = [
        (
            [0x42; 32],
            "witness.example/py",
            "log.example/b",
            7,
            1_650_000_000,
        ),
        (bytes32(200), "py2", "example.com/receipts", 0, 12),
    ];
    let sign: Vec<Value> = signers
        .iter()
        .map(|(seed, name, origin, size, ts)| {
            json!({
                "id": name, "seed": hex(seed), "name": name, "origin": origin,
                "size": size, "root": hex(&bytes32(*size as u8)), "timestamp": ts,
            })
        })
        .collect();

    let answer = run_python(&python, &json!({ "verify": verify, "sign": sign }));

    let got: BTreeMap<String, (bool, bool)> = answer["verify"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let verdict = (
                v["key_id"].as_bool().unwrap(),
                v["verified"].as_bool().unwrap(),
            );
            (v["id"].as_str().unwrap().to_string(), verdict)
        })
        .collect();
    assert_eq!(
        got, expected,
        "dilithium-py's verdicts on chit's cosignatures"
    );

    let signed = answer["sign"].as_array().unwrap();
    assert_eq!(signed.len(), signers.len());
    for ((seed, name, origin, size, ts), s) in signers.iter().zip(signed) {
        let public = unhex(s["public_key"].as_str().unwrap());
        assert_eq!(
            public,
            mldsa44_public_key(seed),
            "{name}: the seed's public key"
        );
        let checkpoint = Checkpoint::new(origin, *size, bytes32(*size as u8));
        assert_eq!(
            unhex(s["message"].as_str().unwrap()),
            subtree_message(name, *ts, &checkpoint).unwrap(),
            "{name}: the subtree/v1 message"
        );
        let mut bytes = ts.to_be_bytes().to_vec();
        bytes.extend_from_slice(&unhex(s["signature"].as_str().unwrap()));
        let v = CosignatureVerifier::new(name, 0x06, &public).unwrap();
        let text = checkpoint.text();
        assert!(v.verify(text.as_bytes(), &bytes), "{name}: chit verifies");
        assert!(!v.verify(resized(&checkpoint).text().as_bytes(), &bytes));
        // Both sign deterministically (FIPS 204, rnd all zero): the same bytes.
        let ours: Signature = Cosigner::mldsa44_from_seed(name, seed)
            .unwrap()
            .cosign(&text, *ts)
            .unwrap();
        assert_eq!(ours.bytes, bytes, "{name}: chit's own signature");
    }
}
