//! Gates fail closed (issue 10, items 3-9): `--require-authorized`,
//! `--request` and `--call` accept only Reason certificates; `--trust`
//! trusts only the keys it lists, for every kind, within their kinds and
//! `--threshold`, and an input not signed by enough of them fails and
//! counts toward nothing; a recompute `match` carries its evidence.

use chit_core::across::{Across, Origin, Subject};
use chit_core::keys::SecretKey;
use chit_core::kinds::treeship::statement::{sign, sign_checked, Claim};
use chit_core::trust::Trust;
use chit_core::{check, json, Checked, Context, Report};
use serde_json::{json, Value};

const RECEIPT: &str = include_str!("data/lineage/coupled.receipt.json");
const RUN_RECEIPT: &str = include_str!("../../../examples/run-receipts/agreed-verified.json");

fn receipt_did() -> String {
    let v: Value = serde_json::from_str(RECEIPT).unwrap();
    v["key_id"].as_str().unwrap().to_owned()
}

fn key(n: u8) -> SecretKey {
    SecretKey::from_seed(&[n; 32])
}

/// A trust file of `(name, public key, kinds)` entries.
fn trust(entries: &[(&str, String, Option<&str>)]) -> Trust {
    let mut text = String::new();
    for (name, key, kinds) in entries {
        text.push_str(&format!(
            "[[key]]\nname = \"{name}\"\npublic_key = \"{key}\"\n"
        ));
        if let Some(k) = kinds {
            text.push_str(&format!("kinds = {k}\n"));
        }
    }
    Trust::parse(&text).unwrap()
}

fn signed(keys: &[&SecretKey], kind: &str, payload: Value) -> Vec<u8> {
    let claim = Claim {
        kind,
        system: "test://gates",
        subject: None,
        at_unix_secs: 1_796_025_600,
    };
    let mut env: Value =
        serde_json::from_str(&sign(keys[0], claim, payload.clone()).unwrap().to_json()).unwrap();
    for k in &keys[1..] {
        let other: Value =
            serde_json::from_str(&sign(k, claim, payload.clone()).unwrap().to_json()).unwrap();
        let sig = other["signatures"][0].clone();
        env["signatures"].as_array_mut().unwrap().push(sig);
    }
    serde_json::to_vec(&env).unwrap()
}

fn checked(bytes: &[u8], ctx: &Context) -> Checked {
    check(bytes, ctx).expect("readable")
}

fn rules(r: &Report) -> Vec<&'static str> {
    let mut v: Vec<&str> = r.errors.iter().map(|f| f.rule).collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn packet(seq: u64) -> Value {
    let mut p = json!({
        "schema": "verification.packet.v1",
        "stream_id": "s",
        "packet_id": format!("p{seq}"),
        "sequence": seq,
        "model_digest": format!("sha256:{}", "a".repeat(64)),
        "input_digest": format!("sha256:{}", "b".repeat(64)),
        "output_digest": format!("sha256:{:064x}", seq),
        "produced_at": "2026-11-30T09:00:00Z",
        "reproducibility": "bit_exact",
    });
    if seq > 0 {
        p["prev_packet_id"] = format!("p{}", seq - 1).into();
    }
    p
}

fn result(packet_art: &str, packet_id: &str, method: &str, out: Option<&str>) -> Value {
    let mut r = json!({
        "schema": "verification.recompute.v1",
        "packet": packet_art,
        "packet_id": packet_id,
        "method": method,
        "verdict": "match",
        "recomputed_at": "2026-11-30T09:05:00Z",
    });
    if let Some(o) = out {
        r["output_digest_recomputed"] = o.into();
    }
    r
}

// Item 3.

#[test]
fn item3_gates_accept_only_reason_certificates() {
    let gw = key(3);
    let t = trust(&[("gw", gw.public().treeship(), None)]);
    let call = json::parse(br#"{"tool": "x", "arguments": {}}"#, &Default::default()).unwrap();
    let request = json::parse(
        br#"{"schema": "zerker.reason.action.v1"}"#,
        &Default::default(),
    )
    .unwrap();
    let run: Value = serde_json::from_str(RUN_RECEIPT).unwrap();
    let gates = [
        Context {
            require_authorized: true,
            ..Context::default()
        },
        Context {
            call: Some(call.root()),
            ..Context::default()
        },
        Context {
            request: Some(request.root()),
            ..Context::default()
        },
    ];
    for gate in gates {
        let bare = checked(RUN_RECEIPT.as_bytes(), &gate).report;
        assert!(bare.breaks(chit_core::rule::AUTHORIZED), "{bare:?}");
        let env = signed(&[&gw], "run-receipt", run.clone());
        let inner = checked(
            &env,
            &Context {
                trust: Some(&t),
                ..gate
            },
        )
        .report;
        assert!(inner.breaks(chit_core::rule::AUTHORIZED), "{inner:?}");
        let p = checked(&serde_json::to_vec(&packet(0)).unwrap(), &gate).report;
        assert!(p.breaks(chit_core::rule::AUTHORIZED), "{p:?}");
    }
    // Without a gate, the run receipt is valid.
    assert!(checked(RUN_RECEIPT.as_bytes(), &Context::default())
        .report
        .valid());
}

// Item 4.

#[test]
fn item4_a_lineage_receipt_by_an_unlisted_key_fails_under_trust() {
    let other = trust(&[("other", key(9).public().treeship(), None)]);
    let ctx = Context {
        trust: Some(&other),
        ..Context::default()
    };
    let r = checked(RECEIPT.as_bytes(), &ctx).report;
    assert!(r.breaks(chit_core::rule::TRUST), "{r:?}");
    let listed = trust(&[("gw", receipt_did(), None)]);
    let ctx = Context {
        trust: Some(&listed),
        ..Context::default()
    };
    let r = checked(RECEIPT.as_bytes(), &ctx).report;
    assert!(r.valid(), "{r:?}");
}

// Item 5.

#[test]
fn item5_chit_does_not_sign_a_kind_its_payload_contradicts() {
    let doc = json::parse(RUN_RECEIPT.as_bytes(), &Default::default()).unwrap();
    let claim = Claim {
        kind: "my.custom.kind",
        system: "test://gates",
        subject: None,
        at_unix_secs: 1_796_025_600,
    };
    let e = sign_checked(&key(1), claim, doc.root()).unwrap_err();
    assert!(
        !e.is_invalid(),
        "a wrong --kind is a wrong command line: {e:?}"
    );
    assert!(e.to_string().contains("run-receipt"), "{e}");
    // Its own kind signs, and a payload that declares none signs as any kind.
    let own = Claim {
        kind: "run-receipt",
        ..claim
    };
    assert!(sign_checked(&key(1), own, doc.root()).is_ok());
    let plain = json::parse(br#"{"a": 1}"#, &Default::default()).unwrap();
    assert!(sign_checked(&key(1), claim, plain.root()).is_ok());
}

// Item 6: the inner lineage receipt's own signer answers to the trust file.

#[test]
fn item6_the_inner_lineage_signer_answers_to_trust() {
    let gw = key(3);
    let receipt: Value = serde_json::from_str(RECEIPT).unwrap();
    let env = signed(&[&gw], "numeric.lineage", receipt);
    let only_gw = trust(&[("gw", gw.public().treeship(), None)]);
    let r = checked(
        &env,
        &Context {
            trust: Some(&only_gw),
            ..Context::default()
        },
    )
    .report;
    assert!(r.breaks(chit_core::rule::TRUST), "{r:?}");
    let both = trust(&[
        ("gw", gw.public().treeship(), None),
        ("lab", receipt_did(), None),
    ]);
    let r = checked(
        &env,
        &Context {
            trust: Some(&both),
            ..Context::default()
        },
    )
    .report;
    assert!(r.valid(), "{r:?}");
}

// Item 7.

#[test]
fn item7_threshold_and_kinds_hold_for_lineage_receipts() {
    for kinds in ["[\"verification.packet.v1\"]", "[]"] {
        let t = trust(&[("lab", receipt_did(), Some(kinds))]);
        let ctx = Context {
            trust: Some(&t),
            ..Context::default()
        };
        let r = checked(RECEIPT.as_bytes(), &ctx).report;
        assert!(r.breaks(chit_core::rule::TRUST), "{kinds}: {r:?}");
    }
    let t = trust(&[("lab", receipt_did(), Some("[\"numeric.lineage\"]"))]);
    let one = Context {
        trust: Some(&t),
        ..Context::default()
    };
    assert!(checked(RECEIPT.as_bytes(), &one).report.valid());
    let two = Context {
        threshold: 2,
        ..one
    };
    let r = checked(RECEIPT.as_bytes(), &two).report;
    assert_eq!(rules(&r), vec![chit_core::rule::THRESHOLD], "{r:?}");

    // In an envelope: its signers and the receipt's own signer count
    // together, each distinct trusted key once.
    let gw = key(3);
    let receipt: Value = serde_json::from_str(RECEIPT).unwrap();
    let env = signed(&[&gw], "numeric.lineage", receipt);
    let both = trust(&[
        ("gw", gw.public().treeship(), None),
        ("lab", receipt_did(), None),
    ]);
    let ctx = Context {
        trust: Some(&both),
        threshold: 2,
        ..Context::default()
    };
    assert!(checked(&env, &ctx).report.valid());
    let three = Context {
        threshold: 3,
        ..ctx
    };
    assert_eq!(
        rules(&checked(&env, &three).report),
        vec![chit_core::rule::THRESHOLD]
    );
    // The envelope's signer may not sign numeric.lineage: it does not count.
    let limited = trust(&[
        (
            "gw",
            gw.public().treeship(),
            Some("[\"verification.packet.v1\"]"),
        ),
        ("lab", receipt_did(), None),
    ]);
    let r = checked(
        &env,
        &Context {
            trust: Some(&limited),
            ..Context::default()
        },
    )
    .report;
    assert!(r.breaks(chit_core::rule::TRUST), "{r:?}");
}

// Item 8.

#[test]
fn item8_under_trust_an_unsigned_input_fails_and_counts_for_nothing() {
    let gw = key(3);
    let t = trust(&[("gw", gw.public().treeship(), None)]);
    let ctx = Context {
        trust: Some(&t),
        ..Context::default()
    };
    // A bare packet, a bare recompute result claiming match, a run receipt.
    let bare = serde_json::to_vec(&packet(2)).unwrap();
    let c = checked(&bare, &ctx);
    assert!(
        c.report.breaks(chit_core::rule::THRESHOLD),
        "{:?}",
        c.report
    );
    assert!(
        c.facts.is_none(),
        "an unsigned packet counts toward no stream"
    );
    let two = Context {
        threshold: 2,
        ..ctx
    };
    assert!(!checked(&bare, &two).report.valid());
    let res = result(
        "art_x",
        "p2",
        "bit_exact",
        Some(&format!("sha256:{:064x}", 2)),
    );
    let r = checked(&serde_json::to_vec(&res).unwrap(), &ctx).report;
    assert!(r.breaks(chit_core::rule::THRESHOLD), "{r:?}");
    assert!(!checked(RUN_RECEIPT.as_bytes(), &ctx).report.valid());
    // Without --trust, bare documents are checked as they are.
    assert!(checked(&bare, &Context::default()).report.valid());

    // A stream signed but for packet 2, given bare: the gap stays.
    let mut across = Across::new(None);
    for seq in 0..5u64 {
        let bytes = if seq == 2 {
            bare.clone()
        } else {
            signed(&[&gw], "verification.packet.v1", packet(seq))
        };
        across.add_checked(
            Origin::new(format!("p{seq}.json"), None),
            checked(&bytes, &ctx),
        );
    }
    let out = across.finish();
    assert_eq!(out.len(), 1);
    assert!(out[0].report.breaks("P3"), "{:?}", out[0].report);

    // A packet whose envelope signature fails fills no slot.
    let forger = key(7);
    let forged = signed(&[&forger], "verification.packet.v1", packet(2));
    let c = checked(&forged, &ctx);
    assert!(c.report.breaks(chit_core::rule::SIGNATURE));
    assert!(c.facts.is_none());
    let good = checked(&signed(&[&gw], "verification.packet.v1", packet(2)), &ctx);
    assert!(good.report.valid() && good.facts.is_some());
}

// Item 9.

#[test]
fn item9_a_match_carries_its_evidence() {
    let c = Context::default();
    let bytes = |v: &Value| serde_json::to_vec(v).unwrap();
    let no_digest = result("art_x", "p2", "bit_exact", None);
    assert!(!checked(&bytes(&no_digest), &c).report.valid());
    let nothing = result("art_x", "p2", "none", None);
    assert!(!checked(&bytes(&nothing), &c).report.valid());
    let mut bounded = result("art_x", "p2", "bounded", None);
    bounded["distance"] = json!(0.1);
    bounded["threshold"] = json!(0.2);
    assert!(checked(&bytes(&bounded), &c).report.valid());
    let digest = result("art_x", "p2", "bit_exact", Some("sha256:00"));
    assert!(checked(&bytes(&digest), &c).report.valid());
}

/// An input checked alone, its facts there.
fn alone(bytes: &[u8]) -> chit_core::Checked {
    let c = checked(bytes, &Context::default());
    assert!(c.facts.is_some(), "facts");
    c
}

#[test]
fn item9_a_result_is_checked_against_its_packet() {
    // The packet claims no reproducibility; the result claims bit_exact and
    // match with another digest.
    let mut p = packet(2);
    p["reproducibility"] = "none".into();
    let wrong = format!("sha256:{:064x}", 99);
    let res = result("art_x", "p2", "bit_exact", Some(&wrong));
    let mut across = Across::new(None);
    across.add_checked(
        Origin::new("p.json", None),
        alone(&serde_json::to_vec(&p).unwrap()),
    );
    across.add_checked(
        Origin::new("r.json", None),
        alone(&serde_json::to_vec(&res).unwrap()),
    );
    let out = across.finish();
    let rec: Vec<_> = out
        .iter()
        .filter(|c| c.subject == Subject::Recompute)
        .collect();
    assert_eq!(rec.len(), 1, "the result is cross-checked by packet_id");
    assert!(rec[0].report.breaks("R2"), "{:?}", rec[0].report);

    // A result naming an art id not among the inputs, while a signed packet
    // with its packet_id is: checked against it, and R1 names the art ids.
    let gw = key(3);
    let env = signed(&[&gw], "verification.packet.v1", packet(2));
    let right = format!("sha256:{:064x}", 2);
    let res = result(
        &format!("art_{}", "0".repeat(32)),
        "p2",
        "bit_exact",
        Some(&right),
    );
    let t = trust(&[("gw", gw.public().treeship(), None)]);
    let ctx = Context {
        trust: Some(&t),
        ..Context::default()
    };
    let mut across = Across::new(None);
    across.add_checked(Origin::new("p.json", None), checked(&env, &ctx));
    across.add_checked(
        Origin::new("r.json", None),
        alone(&serde_json::to_vec(&res).unwrap()),
    );
    let out = across.finish();
    let rec: Vec<_> = out
        .iter()
        .filter(|c| c.subject == Subject::Recompute)
        .collect();
    assert_eq!(rec.len(), 1);
    assert!(rec[0].report.breaks("R1"), "{:?}", rec[0].report);
}
