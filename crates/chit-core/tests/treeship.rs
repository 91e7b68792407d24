//! Byte compatibility with Treeship: its artifact-id vectors, and envelopes
//! its CLI signed (tests/data/treeship, Apache-2.0; see SOURCE.md there).

use chit_core::envelope::{looks_like_envelope, Envelope, Ids, TREESHIP_RECEIPT};
use chit_core::keys::{decode_base64, PublicKey};
use chit_core::{json, Limits, Report};
use std::path::Path;

const KEY: &str = "ed25519:SeVxSanX9yDn1yvX3DdaNsLaqXcy2X3FUHSyz8QRHFY";

fn data() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/treeship")
}

#[test]
fn artifact_id_vectors() {
    let text = std::fs::read(data().join("artifact-ids.json")).unwrap();
    let doc = json::parse(&text, &Limits::default()).unwrap();
    let vectors = doc.root().get("vectors").unwrap();
    assert_eq!(vectors.len(), 4);
    for v in vectors.items() {
        let get = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap();
        let body = decode_base64(get("payload_b64")).unwrap();
        let ids = Ids::of_pae(&chit_core::envelope::pae(get("payload_type"), &body));
        assert_eq!(ids.artifact_id, get("artifact_id"), "{}", get("name"));
        assert_eq!(ids.digest, get("digest"), "{}", get("name"));
    }
}

#[test]
fn treeship_signed_envelopes_verify() {
    let trusted = [PublicKey::parse(KEY).unwrap()];
    let mut seen = 0;
    for entry in std::fs::read_dir(data()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(art) = name
            .strip_suffix(".envelope.json")
            .and_then(|n| n.split("__").nth(1))
        else {
            continue;
        };
        let text = std::fs::read(&path).unwrap();
        let doc = json::parse(&text, &Limits::default()).unwrap();
        assert!(looks_like_envelope(&doc), "{name}");
        let mut r = Report::new("envelope");
        let env = Envelope::read(&doc, &mut r).unwrap();
        assert_eq!(env.payload_type, TREESHIP_RECEIPT);
        assert_eq!(env.ids().artifact_id, art, "{name}");
        assert_eq!(
            env.signers(&env.pae(), &trusted, &mut r).len(),
            1,
            "{name}: {r:?}"
        );
        assert!(r.valid(), "{name}: {r:?}");

        // One flipped bit anywhere in the payload or the signature: refused.
        let mut forged = env.clone();
        forged.payload[10] ^= 1;
        let mut r = Report::new("envelope");
        assert!(forged.signers(&forged.pae(), &trusted, &mut r).is_empty());
        assert!(r.breaks("signature"));
        let mut forged = env.clone();
        forged.signatures[0].sig[40] ^= 0x80;
        let mut r = Report::new("envelope");
        assert!(forged.signers(&forged.pae(), &trusted, &mut r).is_empty());
        // A swapped payloadType changes what was signed.
        let mut swapped = env.clone();
        swapped.payload_type = "application/vnd.in-toto+json".into();
        let mut r = Report::new("envelope");
        assert!(swapped.signers(&swapped.pae(), &trusted, &mut r).is_empty());
        seen += 1;
    }
    assert_eq!(seen, 6);
}

#[test]
fn broken_envelopes_are_named() {
    for (text, needle) in [
        (
            r#"{"payload": "%%%", "payloadType": "t", "signatures": [{"sig": "AA"}]}"#,
            "payload is not valid base64",
        ),
        (
            r#"{"payload": "e30", "payloadType": "t", "signatures": []}"#,
            "carries no signature",
        ),
        (
            r#"{"payload": "e30", "payloadType": 5, "signatures": [{"sig": "AA"}]}"#,
            "needs a payloadType",
        ),
        (
            r#"{"payload": "e30", "payloadType": "t", "signatures": [{"sig": "!"}]}"#,
            "signature 0 is not valid base64",
        ),
        (
            r#"{"payload": "e30", "payloadType": "t", "signatures": [{"keyid": "k"}]}"#,
            "signature 0 has no sig",
        ),
    ] {
        let doc = json::parse(text.as_bytes(), &Limits::default()).unwrap();
        let mut r = Report::new("envelope");
        assert!(Envelope::read(&doc, &mut r).is_none(), "{text}");
        assert!(
            r.errors
                .iter()
                .any(|f| f.rule == "envelope" && f.message.contains(needle)),
            "{text}: {r:?}"
        );
    }
}
