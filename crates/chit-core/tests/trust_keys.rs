//! What a trust file and an envelope may claim: the art id a file name
//! carries, keys with a small-order part or a non-canonical encoding, a DID
//! listed twice, a payload with a byte-order mark, a `keyid` that is not a
//! string, and the work one envelope may ask of a large trust file.

use chit_core::envelope::{art_id_in_file_name, pae, Envelope, Sig, TREESHIP_RECEIPT};
use chit_core::keys::{decode_base64, encode_base64url, PublicKey, SecretKey};
use chit_core::trust::Trust;
use chit_core::{check, json, Context, Limits, Report};
use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT as B, EIGHT_TORSION};
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use sha2::{Digest, Sha512};
use std::path::Path;

const TREESHIP_KEY: &str = "ed25519:SeVxSanX9yDn1yvX3DdaNsLaqXcy2X3FUHSyz8QRHFY";
const PKT0: &str = "pkt-0__art_b06bd32e47eab4c537f21be003e5b852.envelope.json";
const PKT0_ART: &str = "art_b06bd32e47eab4c537f21be003e5b852";

fn treeship(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/treeship")
            .join(name),
    )
    .unwrap()
}

fn trust_of(keys: &[String]) -> String {
    keys.iter()
        .enumerate()
        .map(|(i, k)| format!("[[key]]\nname = \"k{i}\"\npublic_key = \"{k}\"\n"))
        .collect()
}

fn report(bytes: &[u8], ctx: &Context) -> Report {
    check(bytes, ctx).expect("readable").report
}

/// A Treeship statement that is valid on its own: the payload of
/// Treeship's own packet envelope.
fn statement() -> Vec<u8> {
    let text = treeship(PKT0);
    let doc = json::parse(&text, &Limits::default()).unwrap();
    let mut r = Report::new("t");
    Envelope::read(&doc, &mut r).unwrap().payload
}

// Item 10: the art id in a file name.

#[test]
fn the_art_id_is_the_names_last_token_in_any_case() {
    let bytes = treeship(PKT0);
    let trust = Trust::parse(&trust_of(&[TREESHIP_KEY.to_owned()])).unwrap();
    let wrong = "art_0123456789abcdef0123456789abcdef";
    let upper = PKT0_ART.to_ascii_uppercase().replacen("ART_", "art_", 1);
    for (name, fails) in [
        (PKT0.to_owned(), false),
        (format!("{PKT0_ART}.json"), false),
        (format!("start__{PKT0_ART}.json"), false),
        (format!("start__{wrong}.json"), true),
        (format!("pkt__{wrong}.json"), true),
        (format!("{PKT0_ART}__{wrong}.json"), true),
        (format!("{upper}.json"), true),
        (format!("start__{upper}.json"), true),
    ] {
        let ctx = Context {
            trust: Some(&trust),
            expected_art: art_id_in_file_name(&name),
            ..Context::default()
        };
        let r = report(&bytes, &ctx);
        assert_eq!(r.breaks("art"), fails, "{name}: {r:?}");
        assert_eq!(r.valid(), !fails, "{name}: {r:?}");
    }
}

// Item 11: keys.

/// `A + T` for a torsion point `T`, as a trust file writes it.
fn with_torsion(a: &PublicKey, t: &EdwardsPoint) -> String {
    let p = CompressedEdwardsY(a.bytes()).decompress().unwrap() + t;
    format!("ed25519:{}", encode_base64url(&p.compress().0))
}

#[test]
fn keys_with_a_small_order_part_are_refused() {
    let a = SecretKey::from_seed(&[5; 32]).public();
    for (i, t) in EIGHT_TORSION.iter().enumerate().skip(1) {
        let key = with_torsion(&a, t);
        let e = PublicKey::parse(&key).expect_err(&key);
        assert!(e.to_string().contains("small-order part"), "T{i}: {e}");
        // The same point as a did:key.
        let mut raw = vec![0xed, 0x01];
        raw.extend_from_slice(&decode_base64(&key["ed25519:".len()..]).unwrap());
        let did = format!("did:key:z{}", bs58::encode(raw).into_string());
        assert!(PublicKey::parse(&did).is_err(), "{did}");
    }
    assert!(PublicKey::parse(&a.treeship()).is_ok());
}

/// One secret signs as A and as A + T (T of order 8): with both listed,
/// it would meet --threshold 2 alone. The trust file is refused.
#[test]
fn one_secret_cannot_meet_a_threshold_of_two() {
    let seed = [5u8; 32];
    let sk = SecretKey::from_seed(&seed);
    let a = sk.public();
    let t = EIGHT_TORSION[1];
    let twin = with_torsion(&a, &t);
    let twin_bytes: [u8; 32] = decode_base64(&twin["ed25519:".len()..])
        .unwrap()
        .try_into()
        .unwrap();
    let body = statement();
    let msg = pae(TREESHIP_RECEIPT, &body);
    // A signature under A + T from A's secret: [s]B - [k](A + T) = R when
    // [k]T is the identity, so find a nonce whose k is a multiple of 8.
    let secret = ed25519_dalek::SigningKey::from_bytes(&seed).to_scalar();
    let forged = (1u64..)
        .find_map(|n| {
            let r = Scalar::from(n);
            let big_r = (r * B).compress().0;
            let mut h = Sha512::new();
            h.update(big_r);
            h.update(twin_bytes);
            h.update(&msg);
            let k = Scalar::from_hash(h);
            ((k * t) == EdwardsPoint::default()).then(|| {
                let mut sig = big_r.to_vec();
                sig.extend_from_slice((r + k * secret).as_bytes());
                sig
            })
        })
        .unwrap();
    let env = Envelope {
        payload: body,
        payload_type: TREESHIP_RECEIPT.to_owned(),
        signatures: vec![
            Sig {
                keyid: None,
                sig: sk.sign(&msg).to_vec(),
            },
            Sig {
                keyid: None,
                sig: forged,
            },
        ],
    }
    .to_json();
    match Trust::parse(&trust_of(&[a.treeship(), twin])) {
        Err(e) => {
            let e = e.to_string();
            assert!(
                e.starts_with("[[key]] number 2 (k1): ") && e.contains("small-order part"),
                "{e}"
            );
        }
        Ok(trust) => {
            let ctx = Context {
                trust: Some(&trust),
                threshold: 2,
                ..Context::default()
            };
            let r = report(env.as_bytes(), &ctx);
            panic!(
                "a trust file listing A and A + T loads; one secret's envelope at --threshold 2 is {}",
                if r.valid() { "VALID" } else { "invalid" }
            );
        }
    }
}

/// p + y for small y: the same y coordinate, written past the field.
#[test]
fn non_canonical_encodings_are_refused() {
    let mut refused = 0;
    for y in 0u8..19 {
        for sign in [0u8, 0x80] {
            // p = 2^255 - 19, little-endian: ed ff .. ff 7f.
            let mut enc = [0xffu8; 32];
            enc[0] = 0xed + y;
            enc[31] = 0x7f | sign;
            let Some(p) = CompressedEdwardsY(enc).decompress() else {
                continue;
            };
            assert_ne!(p.compress().0, enc, "not canonical");
            let key = format!("ed25519:{}", encode_base64url(&enc));
            let e = PublicKey::parse(&key).expect_err(&key);
            if !p.is_small_order() && p.is_torsion_free() {
                assert!(e.to_string().contains("not canonical"), "{key}: {e}");
            }
            refused += 1;
        }
    }
    assert!(refused >= 2, "{refused}");
    // The canonical encoding of each such point still loads when it is a
    // point of the prime-order subgroup; no such point exists among these,
    // so check a real key's canonical form instead.
    let k = SecretKey::from_seed(&[6; 32]).public();
    assert_eq!(PublicKey::parse(&k.treeship()).unwrap(), k);
}

#[test]
fn a_did_listed_twice_is_refused() {
    let a = SecretKey::from_seed(&[1; 32]).public().treeship();
    let b = SecretKey::from_seed(&[2; 32]).public().treeship();
    let text = format!(
        "[[key]]\nname = \"a\"\npublic_key = \"{a}\"\ndid = \"did:web:example.com\"\n\n\
         [[key]]\nname = \"b\"\npublic_key = \"{b}\"\ndid = \"did:web:example.com\"\n"
    );
    let e = Trust::parse(&text).expect_err("a DID twice").to_string();
    assert_eq!(
        e,
        "[[key]] number 2 (b): the did 'did:web:example.com' is already key a's: \
         a DID resolves to one key, so list it once"
    );
    // Different DIDs, and the same key under two names, still load.
    let text = text.replacen("example.com\"\n\n", "example.org\"\n\n", 1);
    assert!(Trust::parse(&text).is_ok());
}

// Item 11: envelopes.

fn signed_json(sk: &SecretKey, body: Vec<u8>) -> String {
    Envelope::sign(TREESHIP_RECEIPT, body, sk).to_json()
}

#[test]
fn a_payload_with_a_byte_order_mark_is_refused() {
    let sk = SecretKey::from_seed(&[4; 32]);
    let trust = Trust::parse(&trust_of(&[sk.public().treeship()])).unwrap();
    let ctx = Context {
        trust: Some(&trust),
        ..Context::default()
    };
    let plain = signed_json(&sk, statement());
    assert!(report(plain.as_bytes(), &ctx).valid());
    let mut body = b"\xef\xbb\xbf".to_vec();
    body.extend(statement());
    let bom = signed_json(&sk, body);
    let r = report(bom.as_bytes(), &ctx);
    assert!(!r.valid(), "{r:?}");
    assert!(
        r.errors
            .iter()
            .any(|f| f.path == "/payload" && f.message.contains("byte-order mark")),
        "{r:?}"
    );
}

#[test]
fn a_keyid_that_is_not_a_string_is_refused() {
    let sk = SecretKey::from_seed(&[4; 32]);
    let trust = Trust::parse(&trust_of(&[sk.public().treeship()])).unwrap();
    let ctx = Context {
        trust: Some(&trust),
        ..Context::default()
    };
    let good = signed_json(&sk, statement());
    assert!(report(good.as_bytes(), &ctx).valid());
    let keyid = format!("\"keyid\": \"{}\"", sk.public().key_id());
    assert!(good.contains(&keyid));
    for bad in ["7", "null", "[]", "{}", "true"] {
        let text = good.replace(&keyid, &format!("\"keyid\": {bad}"));
        let r = report(text.as_bytes(), &ctx);
        assert!(!r.valid(), "{bad}: {r:?}");
        assert!(
            r.errors.iter().any(|f| f.rule == "envelope"
                && f.path == "/signatures/0/keyid"
                && f.message.contains("keyid is not a string")),
            "{bad}: {r:?}"
        );
    }
    // No keyid at all is allowed (DSSE makes it optional).
    let none = good.replace(&format!("{keyid},"), "");
    assert!(report(none.as_bytes(), &ctx).valid());
}

/// The keyid picks the key: a signature is checked under the trusted key
/// its keyid names, not under every key until one fits.
#[test]
fn the_keyid_picks_the_key() {
    let x = SecretKey::from_seed(&[10; 32]);
    let y = SecretKey::from_seed(&[11; 32]);
    let trust = Trust::parse(&trust_of(&[x.public().treeship(), y.public().treeship()])).unwrap();
    let ctx = Context {
        trust: Some(&trust),
        ..Context::default()
    };
    // Signed by y, but its keyid names x: it does not verify under x.
    let text = signed_json(&y, statement()).replace(&y.public().key_id(), &x.public().key_id());
    let r = report(text.as_bytes(), &ctx);
    assert!(r.breaks("signature"), "{r:?}");
    assert!(
        r.errors.iter().any(|f| f.message
            == format!(
                "signature 0 (keyid {}) does not verify under the trusted key its keyid names",
                x.public().key_id()
            )),
        "{r:?}"
    );
    // A keyid that names no trusted key: the keys are tried.
    let text = signed_json(&y, statement()).replace(&y.public().key_id(), "someone-else");
    assert!(report(text.as_bytes(), &ctx).valid());
}

/// 9,000 trusted keys and an envelope of 16 signatures: the keyid finds
/// each signature's key, and keys are tried without one only up to a
/// bound, so one envelope cannot ask for 144,000 verifications.
#[test]
fn a_large_trust_file_costs_an_envelope_little() {
    let keys: Vec<SecretKey> = (0..9000u32)
        .map(|i| {
            let mut seed = [0u8; 32];
            seed[..4].copy_from_slice(&i.to_le_bytes());
            seed[4] = 0xaa;
            SecretKey::from_seed(&seed)
        })
        .collect();
    let publics: Vec<String> = keys.iter().map(|k| k.public().treeship()).collect();
    let trust = Trust::parse(&trust_of(&publics)).unwrap();
    let ctx = Context {
        trust: Some(&trust),
        ..Context::default()
    };
    let body = statement();
    // Signed by the last key, without a keyid: found within the bound?
    // No: the bound stops the search first, and says so.
    let mut env = Envelope::sign(TREESHIP_RECEIPT, body.clone(), &keys[8999]);
    env.signatures[0].keyid = None;
    let r = report(env.to_json().as_bytes(), &ctx);
    assert!(!r.valid(), "{r:?}");
    assert!(
        r.errors
            .iter()
            .any(|f| f.rule == "signature" && f.message.contains("without a keyid")),
        "{r:?}"
    );
    // With its keyid, the same signature verifies.
    env.signatures[0].keyid = Some(keys[8999].public().key_id());
    assert!(report(env.to_json().as_bytes(), &ctx).valid());
    // Signed by the first key without a keyid: found by trying.
    let mut first = Envelope::sign(TREESHIP_RECEIPT, body.clone(), &keys[0]);
    first.signatures[0].keyid = None;
    assert!(report(first.to_json().as_bytes(), &ctx).valid());

    // 16 bad signatures, each naming a trusted key: 16 verifications.
    let mut bad = Envelope::sign(TREESHIP_RECEIPT, body.clone(), &keys[0]);
    bad.signatures = (0..16)
        .map(|i| Sig {
            keyid: Some(keys[i * 500].public().key_id()),
            sig: keys[1].sign(b"something else").to_vec(),
        })
        .collect();
    let before = chit_core::keys::verifications();
    let r = report(bad.to_json().as_bytes(), &ctx);
    assert_eq!(chit_core::keys::verifications() - before, 16);
    assert_eq!(
        r.errors.iter().filter(|f| f.rule == "signature").count(),
        16
    );
    // 16 bad signatures naming no key: at most the bound, in all.
    for s in &mut bad.signatures {
        s.keyid = None;
    }
    let before = chit_core::keys::verifications();
    let r = report(bad.to_json().as_bytes(), &ctx);
    let spent = chit_core::keys::verifications() - before;
    assert!(
        spent <= chit_core::envelope::MAX_KEYS_TRIED as u64,
        "{spent}"
    );
    let sigs: Vec<&str> = r
        .errors
        .iter()
        .filter(|f| f.rule == "signature")
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(sigs.len(), 16);
    assert!(
        sigs[0].starts_with(
            "signature 0 (keyid none) does not verify under the first 1024 of 9000 trusted keys"
        ),
        "{}",
        sigs[0]
    );
    assert!(
        sigs[15].starts_with("signature 15 (keyid none) was not checked"),
        "{}",
        sigs[15]
    );
}
