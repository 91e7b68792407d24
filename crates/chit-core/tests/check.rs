//! The one entry point: a document carried in a signed envelope gets
//! exactly the checks it gets bare, whatever the caller's context adds
//! (`require_authorized`, a call, a transcript).

use chit_core::keys::SecretKey;
use chit_core::kinds::numeric_lineage::transcript::Transcript;
use chit_core::kinds::reason;
use chit_core::kinds::treeship::statement::{sign, Claim};
use chit_core::trust::Trust;
use chit_core::{check, json, Context, Report};
use serde_json::{json, Value};

const RECEIPT: &str = include_str!("data/lineage/coupled.receipt.json");
const SEQUENCES: &str = include_str!("data/lineage/coupled.sequences.jsonl");

fn digest(c: char) -> String {
    format!("sha256:{}", c.to_string().repeat(64))
}

/// A well-formed Reason certificate whose status is `denied`.
fn denied() -> Value {
    json!({
        "schema": reason::KIND,
        "status": "denied",
        "request_digest": digest('a'),
        "mission": {"id": "mission-7", "digest": digest('b')},
        "action": {
            "id": "action-42",
            "digest": digest('c'),
            "tool": "fs.write",
            "arguments": {"path": "/srv/q3.csv"},
            "effects": [{"kind": "write", "target": "/srv/q3.csv"}],
        },
        "reasoning": {
            "schema": "zerker.reason.result.v1",
            "status": "disproved",
            "query": {"goal": "authorized(action-42)"},
            "program_digest": digest('d'),
            "ontology": {"name": "ops"},
            "authority": {"issuer": "policy"},
            "proof": null,
            "disproof": {"steps": [3]},
            "conflict": null,
            "missing": [],
            "assumptions": [],
            "metrics": {"steps": 3},
        },
        "issues": [],
    })
}

struct Signer {
    key: SecretKey,
    trust: Trust,
}

fn signer() -> Signer {
    let key = SecretKey::from_seed(&[3; 32]);
    // The lineage receipt's own signer is listed too (issue 10, item 6).
    let lab: Value = serde_json::from_str(RECEIPT).unwrap();
    let trust = Trust::parse(&format!(
        "[[key]]\nname = \"gw\"\npublic_key = \"{}\"\n\n[[key]]\nname = \"lab\"\npublic_key = \"{}\"\n",
        key.public().treeship(),
        lab["key_id"].as_str().unwrap()
    ))
    .unwrap();
    Signer { key, trust }
}

/// `payload` signed into an envelope of kind `kind`.
fn envelope(s: &Signer, kind: &str, payload: Value) -> Vec<u8> {
    let claim = Claim {
        kind,
        system: "test://check",
        subject: None,
        at_unix_secs: 1_796_025_600,
    };
    sign(&s.key, claim, payload).unwrap().to_json().into_bytes()
}

fn rules(r: &Report) -> Vec<&'static str> {
    let mut v: Vec<&str> = r.errors.iter().map(|f| f.rule).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The report for `bytes` under `ctx`.
fn report(bytes: &[u8], ctx: &Context) -> Report {
    check(bytes, ctx).expect("readable").report
}

#[test]
fn require_authorized_holds_inside_an_envelope() {
    let s = signer();
    let ctx = Context {
        trust: Some(&s.trust),
        require_authorized: true,
        ..Context::default()
    };
    let bare = serde_json::to_vec(&denied()).unwrap();
    let signed = envelope(&s, reason::KIND, denied());
    // Under --trust a bare certificate is unsigned (issue 10, item 8): checked bare without it.
    let unsigned = Context { trust: None, ..ctx };
    let (bare, signed) = (report(&bare, &unsigned), report(&signed, &ctx));
    assert_eq!(rules(&bare), vec!["authorized"]);
    assert_eq!(rules(&signed), vec!["authorized"]);
    // The signature itself is good: only the status fails.
    assert!(!signed.breaks("signature") && !signed.breaks("trust"));
    // Without the gate no rule fails, but a certificate without its
    // request is not recomputed: unchecked, so not valid.
    let open = Context {
        require_authorized: false,
        ..ctx
    };
    let r = report(&envelope(&s, reason::KIND, denied()), &open);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.status(), chit_core::report::Status::Unchecked);
}

#[test]
fn a_call_is_checked_inside_an_envelope() {
    let s = signer();
    let other = json::parse(
        br#"{"tool": "fs.delete", "arguments": {"path": "/srv/q3.csv"}}"#,
        &Default::default(),
    )
    .unwrap();
    let ctx = Context {
        trust: Some(&s.trust),
        call: Some(other.root()),
        ..Context::default()
    };
    let unsigned = Context { trust: None, ..ctx };
    let bare = report(&serde_json::to_vec(&denied()).unwrap(), &unsigned);
    let signed = report(&envelope(&s, reason::KIND, denied()), &ctx);
    assert_eq!(rules(&bare), vec!["A6"]);
    assert_eq!(rules(&signed), vec!["A6"]);
}

#[test]
fn a_transcript_is_checked_inside_an_envelope() {
    let s = signer();
    // Another salt: no commitment opens (L13), bare or signed.
    let wrong = Transcript::read(
        SEQUENCES.replacen("5a5a", "5a5b", 1).as_bytes(),
        &Default::default(),
    )
    .unwrap();
    let right = Transcript::read(SEQUENCES.as_bytes(), &Default::default()).unwrap();
    let receipt: Value = serde_json::from_str(RECEIPT).unwrap();
    let signed = envelope(&s, "numeric.lineage", receipt);
    for (transcript, want) in [(&wrong, vec!["L13"]), (&right, vec![])] {
        let ctx = Context {
            trust: Some(&s.trust),
            transcript: Some(transcript),
            ..Context::default()
        };
        let bare = report(RECEIPT.as_bytes(), &ctx);
        let inner = report(&signed, &ctx);
        assert_eq!(rules(&bare), want);
        assert_eq!(rules(&inner), want);
    }
}

/// Every kind a report on one input gives is one of the labels a log
/// entry can carry (what a log's search and a token's kinds accept): the
/// shipped examples, and an envelope whose payload is of no kind chit knows.
#[test]
fn every_reported_kind_is_a_label() {
    let key = SecretKey::from_seed(&[9; 32]);
    let claim = Claim {
        kind: "my.own.kind",
        system: "urn:test",
        subject: None,
        at_unix_secs: 1_700_000_000,
    };
    let unknown = sign(&key, claim, json!({"anything": 1})).unwrap().to_json();
    let mut inputs: Vec<(String, Vec<u8>)> = vec![("unknown payload".into(), unknown.into_bytes())];
    for dir in ["run-receipts", "packets", "lattice", "lineage", "reason"] {
        let path = format!("{}/../../examples/{dir}", env!("CARGO_MANIFEST_DIR"));
        for e in std::fs::read_dir(path).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "json") {
                inputs.push((p.display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for (name, bytes) in &inputs {
        let Ok(c) = check(bytes, &Context::default()) else {
            continue;
        };
        // No kind at all: refused by every log, so never a label.
        if c.report.kind.is_empty() {
            assert!(!c.report.valid(), "{name}");
            continue;
        }
        assert!(
            chit_core::kinds::is_label(c.report.kind),
            "{name}: {:?} is not a label",
            c.report.kind
        );
        seen.insert(c.report.kind);
    }
    assert!(seen.contains(chit_core::kinds::ENVELOPE), "{seen:?}");
    assert!(seen.len() >= 6, "{seen:?}");
}

/// A tlog-proof given is held to the input whatever else the context
/// asks, a bundles-only check included: never skipped.
#[test]
fn a_proof_given_is_never_skipped() {
    use chit_core::context::LogKeys;
    use chit_log::checkpoint::Checkpoint;
    use chit_log::note::NoteSigner;
    use chit_log::proof::TlogProof;
    use chit_log::tree::{inclusion_proof, MemoryTree};

    let log = NoteSigner::from_seed("log.example/core", &[3; 32]).unwrap();
    let receipt = include_bytes!("../../../examples/run-receipts/agreed-verified.json");
    let mut entries: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 9]).collect();
    entries[2] = receipt.to_vec();
    let mut tree = MemoryTree::new();
    for e in &entries {
        tree.push(e);
    }
    let checkpoint = Checkpoint::new("log.example/core", 5, tree.root(5).unwrap())
        .sign(&log)
        .unwrap();
    let bundle = chit_log::bundle::Bundle {
        origin: "log.example/core".into(),
        index: 2,
        entry: entries[2].clone(),
        inclusion_proof: inclusion_proof(&tree, 2, 5).unwrap(),
        checkpoint: checkpoint.clone(),
    };
    let bundle_bytes = bundle.to_json().to_string().into_bytes();
    let keys = LogKeys {
        policy: chit_log::policy::Policy::of_log(log.verifier()),
    };
    // A proof of entry 3, which is not the bundle's bytes.
    let proof = TlogProof {
        extra: None,
        index: 3,
        inclusion_proof: inclusion_proof(&tree, 3, 5).unwrap(),
        checkpoint,
    };
    let bundles_only = Context {
        log: Some(&keys),
        bundles_only: true,
        ..Context::default()
    };
    let alone = check(&bundle_bytes, &bundles_only).unwrap();
    assert!(alone.report.valid(), "{:?}", alone.report.errors);
    let proven = check(
        &bundle_bytes,
        &Context {
            proof: Some(&proof),
            ..bundles_only
        },
    )
    .unwrap();
    assert!(!proven.report.valid());
    assert!(
        proven
            .report
            .breaks(chit_core::kinds::log_bundle::rule::LOG_INCLUSION),
        "{:?}",
        proven.report.errors
    );
}
