//! Treeship 0.32's own code (`treeship-core`, a dev-dependency only) against
//! chit, both ways: Treeship signs and stores, chit judges, and its verdict
//! is Treeship's (its `Verifier` and its `signed_parent` rule); chit signs,
//! and Treeship verifies and derives the same art ids.

mod common;
use common::{chit_in, Run};
use ed25519_dalek::VerifyingKey;
use serde_json::{json, Value};
use std::path::Path;
use treeship_core::attestation::{
    artifact_id_from_pae, pae, sign, Ed25519Signer, Envelope, Verifier,
};
use treeship_core::statements::{
    payload_type, ActionStatement, EndorsementStatement, HandoffStatement, ReceiptStatement,
    SubjectRef,
};
use treeship_core::storage::{Record, Store};
use treeship_core::verify::{signed_parent, SignedParent};

/// A Treeship key, and a trust file naming it for chit.
fn ship(dir: &Path) -> Ed25519Signer {
    let signer = Ed25519Signer::generate("key_ship").unwrap();
    write_trust(dir, &signer.verifying_key());
    signer
}

fn write_trust(dir: &Path, key: &VerifyingKey) {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key.as_bytes());
    std::fs::write(
        dir.join("trust.toml"),
        format!("[[key]]\nname = \"ship\"\npublic_key = \"ed25519:{b64}\"\n"),
    )
    .unwrap();
}

fn verify(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["verify", "--trust", "trust.toml", "--json"];
    all.extend_from_slice(args);
    chit_in(dir, &all, None)
}

/// `--json` lines of a run.
fn lines(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A file under `examples/`.
fn example_path(name: &str) -> std::path::PathBuf {
    common::repo().join("examples").join(name)
}

fn example(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(example_path(name)).unwrap()).unwrap()
}

/// A signed statement filed in a Treeship store under `parent` (storage's
/// unsigned edge), as `treeship attest` files it.
fn file<T: serde::Serialize>(
    store: &Store,
    signer: &Ed25519Signer,
    kind: &str,
    statement: &T,
    parent: Option<&str>,
) -> String {
    let signed = sign(&payload_type(kind), statement, signer).unwrap();
    let body: Value = serde_json::from_slice(&signed.envelope.payload_bytes().unwrap()).unwrap();
    store
        .write(&Record {
            artifact_id: signed.artifact_id.clone(),
            digest: signed.digest.clone(),
            payload_type: payload_type(kind),
            key_id: "key_ship".into(),
            signed_at: body["timestamp"].as_str().unwrap().into(),
            parent_id: parent.map(str::to_owned),
            envelope: signed.envelope,
            hub_url: None,
            anchors: Vec::new(),
        })
        .unwrap();
    signed.artifact_id
}

/// Two actions filed in a store, the second signing the first as parent:
/// their art ids.
fn two_actions(store: &Store, signer: &Ed25519Signer) -> (String, String) {
    let build = ActionStatement::new("agent://t", "build");
    let root = file(store, signer, "action", &build, None);
    let mut test = ActionStatement::new("agent://t", "test");
    test.parent_id = Some(root.clone());
    let child = file(store, signer, "action", &test, Some(&root));
    (root, child)
}

/// Treeship's verdict on a stored record: every signature verifies, and
/// its storage edge is the parent its statement signs (an endorsement
/// that signs none is accepted on the edge, with a warning).
#[derive(Debug, PartialEq)]
enum Verdict {
    Valid,
    Warned,
    Invalid,
}

fn treeship_verdict(store: &Store, signer: &Ed25519Signer, id: &str) -> Verdict {
    let rec = store.read(id).unwrap();
    if Verifier::from_signer(signer).verify(&rec.envelope).is_err() {
        return Verdict::Invalid;
    }
    let statement: Value = serde_json::from_slice(&rec.envelope.payload_bytes().unwrap()).unwrap();
    match (rec.parent_id.as_deref(), signed_parent(&statement)) {
        (None, SignedParent::Named(_)) if statement.get("parentId").is_some() => Verdict::Invalid,
        (None, _) => Verdict::Valid,
        (Some(p), SignedParent::Named(s)) if p == s => Verdict::Valid,
        (Some(_), SignedParent::LegacyEndorsement) => Verdict::Warned,
        (Some(_), _) => Verdict::Invalid,
    }
}

/// chit's verdict on the same record, with its whole store.
fn chit_verdict(dir: &Path, id: &str) -> Verdict {
    let run = verify(dir, &["store"]);
    let out = lines(&run);
    let line = out
        .iter()
        .find(|l| {
            l["file"]
                .as_str()
                .is_some_and(|f| f.ends_with(&format!("{id}.json")))
        })
        .unwrap_or_else(|| panic!("no line for {id}: {}", run.stdout));
    // Treeship's own statement types are SIGNED (signature and art id:
    // what Treeship checks of them); the record's link is chit's verdict.
    let has = |what: &str, rule: &str| {
        line[what]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| rule.is_empty() || f["rule"] == rule)
    };
    if has("errors", "") {
        Verdict::Invalid
    } else if has("warnings", "record") {
        Verdict::Warned
    } else {
        Verdict::Valid
    }
}

/// Treeship 0.32 registers a Zerker Reason certificate as a receipt of kind
/// `reason.authorization.v1`: chit recomputes it as it does a bare one.
#[test]
fn treeship_wraps_a_reason_certificate_and_chit_recomputes_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let signer = ship(d);
    let certificate = example("reason/certificate.json");
    treeship_core::predicates::validate("reason.authorization.v1", Some(&certificate)).unwrap();
    let mut stmt = ReceiptStatement::new("system://reason", "reason.authorization.v1");
    stmt.payload = Some(certificate);
    let signed = sign(&payload_type("receipt"), &stmt, &signer).unwrap();
    Verifier::from_signer(&signer)
        .verify(&signed.envelope)
        .unwrap();
    std::fs::write(d.join("wrapped.json"), signed.envelope.to_json().unwrap()).unwrap();
    std::fs::copy(example_path("reason/request.json"), d.join("request.json")).unwrap();

    let run = verify(d, &["wrapped.json", "--request", "request.json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let out = lines(&run);
    assert_eq!(out[0]["kind"], "zerker.reason.authorization.v1");
    assert_eq!(out[0]["status"], "valid");

    // --require-authorized: recomputed from its request and authorized.
    let run = verify(
        d,
        &[
            "wrapped.json",
            "--request",
            "request.json",
            "--require-authorized",
        ],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    // A certificate alone is not recomputed, so not passed.
    let run = verify(d, &["wrapped.json", "--require-authorized"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);

    // The same certificate made out for another request: Treeship's
    // signature holds, the recomputation does not.
    let mut other = example("reason/request.json");
    other["action"]["arguments"]["replicas"] = json!(4);
    std::fs::write(d.join("other.json"), other.to_string()).unwrap();
    let run = verify(d, &["wrapped.json", "--request", "other.json"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
}

/// chit signs a Reason certificate as Treeship registers it; treeship-core
/// verifies the envelope, validates the predicate and derives the art id
/// chit reports.
#[test]
fn chit_wraps_a_reason_certificate_as_treeship_registers_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let keygen = chit_in(d, &["keygen", "--out", "k.pem"], None);
    assert_eq!(keygen.code, 0, "{}", keygen.stderr);
    let public = common::printed(&keygen.stdout, "treeship");
    let public = public.trim();
    let key_id = common::printed(&keygen.stdout, "key id").trim().to_owned();
    // chit signs canonical JSON (RFC 8785), whose numbers are doubles: the
    // example's ticket past 2^53 is refused, so this one is small.
    let mut certificate = example("reason/certificate.json");
    certificate["action"]["arguments"]["ticket"] = json!(7);
    std::fs::write(d.join("certificate.json"), certificate.to_string()).unwrap();
    let run = chit_in(
        d,
        &[
            "sign",
            "--key",
            "k.pem",
            "--kind",
            "reason.authorization.v1",
            "--out",
            "env.json",
            "certificate.json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);

    let envelope = Envelope::from_json(&std::fs::read(d.join("env.json")).unwrap()).unwrap();
    let key = {
        use base64::Engine;
        let b = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(public.strip_prefix("ed25519:").unwrap())
            .unwrap();
        VerifyingKey::from_bytes(&b.try_into().unwrap()).unwrap()
    };
    let mut verifier = Verifier::new(Default::default());
    verifier.add_key(key_id, key);
    verifier.verify(&envelope).unwrap();
    let statement: ReceiptStatement = envelope.unmarshal_statement().unwrap();
    assert_eq!(statement.kind, "reason.authorization.v1");
    treeship_core::predicates::validate(&statement.kind, statement.payload.as_ref()).unwrap();

    // chit reads it back as the certificate it is: signed, and (without
    // its request, which this changed certificate no longer matches)
    // not recomputed, so not valid.
    write_trust(d, &key);
    let run = verify(d, &["env.json"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(lines(&run)[0]["kind"], "zerker.reason.authorization.v1");
    assert_eq!(lines(&run)[0]["status"], "unchecked");
    let art = artifact_id_from_pae(&pae(
        &envelope.payload_type,
        &envelope.payload_bytes().unwrap(),
    ));
    assert_eq!(lines(&run)[0]["artifact_id"], art.as_str());
}

/// Every link kind Treeship 0.32 signs, stored as `treeship attest` stores
/// it, and each edited storage edge: chit's verdict is Treeship's on each.
#[test]
fn store_links_are_judged_by_treeships_signed_parent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let signer = ship(d);
    let store = Store::open(d.join("store")).unwrap();
    let (root, child) = two_actions(&store, &signer);

    // An endorsement that signs its parent (0.32), and one that does not
    // (0.31.9 and earlier): its storage edge is accepted, with a warning.
    let endorse = |parent: Option<&str>| {
        let mut e = EndorsementStatement::new("human://reviewer", "review");
        e.subject = SubjectRef {
            artifact_id: Some(root.clone()),
            digest: None,
            uri: None,
        };
        e.parent_id = parent.map(str::to_owned);
        e
    };
    let signed_endorsement = file(
        &store,
        &signer,
        "endorsement",
        &endorse(Some(&child)),
        Some(&child),
    );
    let legacy_endorsement = file(&store, &signer, "endorsement", &endorse(None), Some(&child));
    // A handoff's signed parent is its first artifact.
    let handoff = file(
        &store,
        &signer,
        "handoff",
        &HandoffStatement::new("agent://a", "agent://b", vec![child.clone()]),
        Some(&child),
    );
    // A receipt signs the parent it chains onto (0.32).
    let mut receipt = ReceiptStatement::new("system://ci", "confirmation");
    receipt.parent_id = Some(handoff.clone());
    let receipt = file(&store, &signer, "receipt", &receipt, Some(&handoff));

    let ids = [
        &root,
        &child,
        &signed_endorsement,
        &legacy_endorsement,
        &handoff,
        &receipt,
    ];
    for id in ids {
        assert_eq!(
            chit_verdict(d, id),
            treeship_verdict(&store, &signer, id),
            "{id}: {}",
            verify(d, &["store"]).stdout
        );
    }
    assert_eq!(chit_verdict(d, &legacy_endorsement), Verdict::Warned);
    let run = verify(d, &["store", "--allow-unchecked"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("0.31.9"), "{}", run.stdout);

    // Each storage edge moved to another artifact: Treeship fails the ones
    // whose statement signs a parent, and so does chit.
    for id in [&child, &signed_endorsement, &handoff, &receipt] {
        let mut rec = store.read(id).unwrap();
        let was = rec.parent_id.replace(root.clone());
        if was.as_deref() == Some(&root) {
            rec.parent_id = Some(child.clone());
        }
        store.write(&rec).unwrap();
        assert_eq!(
            treeship_verdict(&store, &signer, id),
            Verdict::Invalid,
            "{id}"
        );
        assert_eq!(chit_verdict(d, id), Verdict::Invalid, "{id}");
        rec.parent_id = was;
        store.write(&rec).unwrap();
    }
    let run = verify(d, &["store", "--allow-unchecked"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

/// A receipt export of a 0.32 receipt, which signs its parent: the export
/// carries one artifact, so the parent outside it is said, not an error.
#[test]
fn an_export_of_a_receipt_that_signs_its_parent_verifies_alone() {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let signer = ship(d);
    let mut stmt = ReceiptStatement::new("system://reason", "reason.authorization.v1");
    stmt.payload = Some(example("reason/certificate.json"));
    stmt.parent_id = Some("art_0123456789abcdef0123456789abcdef".into());
    let signed = sign(&payload_type("receipt"), &stmt, &signer).unwrap();
    let env = &signed.envelope;
    // As `treeship receipt export --format json` writes it.
    let message = pae(&env.payload_type, &env.payload_bytes().unwrap());
    let export = json!({
        "artifact_id": signed.artifact_id,
        "algorithm": "ed25519",
        "encoding": "base64",
        "message_b64": STANDARD.encode(&message),
        "signature_b64": STANDARD.encode(Envelope::sig_bytes(&env.signatures[0]).unwrap()),
        "public_key_b64": STANDARD.encode(signer.verifying_key().as_bytes()),
        "key_id": env.signatures[0].keyid,
    });
    std::fs::write(d.join("export.json"), export.to_string()).unwrap();
    std::fs::copy(example_path("reason/request.json"), d.join("request.json")).unwrap();
    let run = verify(d, &["export.json", "--request", "request.json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("not the chain above them"),
        "{}",
        run.stdout
    );

    // A signature bit flipped: Treeship's verifier and chit both fail it.
    let mut bad = export.clone();
    let mut sig = Envelope::sig_bytes(&env.signatures[0]).unwrap();
    sig[0] ^= 1;
    bad["signature_b64"] = STANDARD.encode(&sig).into();
    std::fs::write(d.join("bad.json"), bad.to_string()).unwrap();
    assert_eq!(
        verify(d, &["bad.json", "--request", "request.json"]).code,
        1
    );
}

/// One signed artifact for a package: its id, digest, envelope bytes and
/// entry in the receipt.
#[derive(Clone)]
struct Sealed {
    id: String,
    digest: String,
    envelope: Vec<u8>,
    signed_at: String,
    kind: &'static str,
    /// Sealed off the chain (an invitation, a participant).
    unchained: bool,
}

fn seal<T: serde::Serialize>(signer: &Ed25519Signer, kind: &'static str, statement: &T) -> Sealed {
    let r = sign(&payload_type(kind), statement, signer).unwrap();
    let body: Value = serde_json::from_slice(&r.envelope.payload_bytes().unwrap()).unwrap();
    Sealed {
        id: r.artifact_id,
        digest: r.digest,
        envelope: r.envelope.to_json().unwrap(),
        signed_at: body["timestamp"]
            .as_str()
            .unwrap_or("2026-12-01T00:00:05Z")
            .into(),
        kind,
        unchained: false,
    }
}

const SESSION: &str = "ssn_0123456789abcdef";

/// A session's action, `meta.session_id` naming it.
fn session_action(name: &str, parent: Option<&str>) -> ActionStatement {
    let mut a = ActionStatement::new("agent://t", name);
    a.parent_id = parent.map(str::to_owned);
    a.meta = Some(json!({ "session_id": SESSION }));
    a
}

/// A package folder's name, as given to chit.
fn name_of(pkg: &Path) -> String {
    pkg.file_name().unwrap().to_str().unwrap().to_owned()
}

/// The session.close of the session, signing `parent` as its parent.
fn close_after(signer: &Ed25519Signer, parent: &Sealed) -> Sealed {
    seal(
        signer,
        "action",
        &session_action("session.close", Some(&parent.id)),
    )
}

/// A Treeship 0.32 package, built by treeship-core: the receipt, the
/// sealed envelopes under `artifacts/`, `keys.json`, and the close record
/// (`record.json`, a `session.v1` receipt over the digest of
/// `receipt.json` naming the session.close as subject, as `treeship
/// session close` signs it). `arts` runs from a session.start to a
/// session.close.
fn package(dir: &Path, signer: &Ed25519Signer, arts: &[Sealed]) -> std::path::PathBuf {
    package_with(dir, signer, arts, Default::default())
}

/// [`package`], with approval evidence (`extra`'s grants, uses and
/// checkpoints) under `approvals/`.
fn package_with(
    dir: &Path,
    signer: &Ed25519Signer,
    arts: &[Sealed],
    extra: treeship_core::session::ApprovalsBundle,
) -> std::path::PathBuf {
    use base64::Engine;
    use sha2::Digest;
    use treeship_core::session::{
        build_package_with_approvals, manifest::SessionManifest, receipt::ArtifactEntry,
        receipt::ReceiptComposer, ApprovalsBundle,
    };
    let entries = arts
        .iter()
        .map(|s| ArtifactEntry {
            artifact_id: s.id.clone(),
            payload_type: payload_type(s.kind),
            digest: Some(s.digest.clone()),
            signed_at: Some(s.signed_at.clone()),
            unchained: s.unchained,
        })
        .collect();
    let manifest = SessionManifest::new(
        SESSION.into(),
        "agent://t".into(),
        "2026-12-01T00:00:00Z".into(),
        1_764_547_200_000,
    );
    let receipt = ReceiptComposer::compose(&manifest, &[], entries);
    let bundle = ApprovalsBundle {
        sealed_envelopes: arts
            .iter()
            .map(|s| (s.id.clone(), s.envelope.clone()))
            .collect(),
        signer_keys: vec![(
            "key_ship".into(),
            format!(
                "ed25519:{}",
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(signer.verifying_key().as_bytes())
            ),
        )],
        ..extra
    };
    let _: &ApprovalsBundle = &bundle;
    let pkg = build_package_with_approvals(&receipt, dir, Some(&bundle))
        .unwrap()
        .path;
    let bytes = std::fs::read(pkg.join("receipt.json")).unwrap();
    let digest = format!("sha256:{}", hex(&sha2::Sha256::digest(&bytes)));
    let mut close = ReceiptStatement::new("system://treeship", "session.v1");
    close.subject = Some(SubjectRef {
        artifact_id: Some(arts.last().unwrap().id.clone()),
        digest: None,
        uri: None,
    });
    close.payload = Some(json!({
        "session_id": SESSION,
        "actor": "agent://t",
        "outcome": "completed",
        "started_at": "2026-12-01T00:00:00Z",
        "closed_at": "2026-12-01T00:01:00Z",
        "attestation_class": "self",
        "receipt_digest": digest,
        "receipt_merkle_root": receipt.merkle.root,
    }));
    treeship_core::predicates::validate("session.v1", close.payload.as_ref()).unwrap();
    let record = sign(&payload_type("receipt"), &close, signer).unwrap();
    std::fs::write(pkg.join("record.json"), record.envelope.to_json().unwrap()).unwrap();
    pkg
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Treeship's verdict on a package (`treeship package verify`): every row
/// passes or warns.
fn treeship_passes(pkg: &Path, signer: &Ed25519Signer) -> Result<(), String> {
    use treeship_core::session::{verify_package_with_options, VerifyStatus};
    let _ = signer;
    let checks =
        verify_package_with_options(pkg, &treeship_core::trust::TrustRootStore::empty(), false)
            .map_err(|e| e.to_string())?;
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| c.status == VerifyStatus::Fail)
        .map(|c| format!("{}: {}", c.name, c.detail))
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; "))
    }
}

/// A 0.32 package verifies alone, from its own bytes, as Treeship's package
/// verify does; each file it binds, changed, fails it in both.
#[test]
fn a_package_verifies_alone_and_every_file_it_binds_is_bound() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let signer = ship(d);
    let a = seal(&signer, "action", &session_action("session.start", None));
    let b = seal(&signer, "action", &session_action("test", Some(&a.id)));
    // A 0.31.9 endorsement: no signed parent, a warning.
    let mut e = EndorsementStatement::new("human://reviewer", "review");
    e.subject = SubjectRef {
        artifact_id: Some(a.id.clone()),
        digest: None,
        uri: None,
    };
    let e = seal(&signer, "endorsement", &e);
    let c = close_after(&signer, &e);
    let (b_id, e_id) = (b.id.clone(), e.id.clone());
    let pkg = package(d, &signer, &[a, b, e, c]);
    let name = name_of(&pkg);
    treeship_passes(&pkg, &signer).unwrap();

    // Under the trust file, and alone under the keys it names.
    let run = verify(d, &[&name, "--allow-unchecked"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(&e_id) && run.stdout.contains("0.31.9"),
        "{}",
        run.stdout
    );
    let alone = chit_in(d, &["verify", "--json", "--allow-unchecked", &name], None);
    assert_eq!(alone.code, 0, "{}{}", alone.stdout, alone.stderr);
    assert!(alone.stdout.contains("keys.json"), "{}", alone.stdout);
    // Under keys nobody pinned it is signed, not valid: without
    // --allow-unchecked it fails.
    let unpinned = chit_in(d, &["verify", "--json", &name], None);
    assert_eq!(unpinned.code, 1, "{}", unpinned.stdout);
    assert_eq!(lines(&unpinned)[0]["status"], "signed");

    // Each tamper, on a fresh copy: Treeship fails it, and so does chit.
    type Tamper = Box<dyn Fn(&Path)>;
    let edit_json = |file: &'static str, change: fn(&mut Value)| -> Tamper {
        Box::new(move |p: &Path| {
            let path = p.join(file);
            let mut v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            change(&mut v);
            std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
        })
    };
    let b_file = format!("artifacts/{b_id}.json");
    let b_file: &'static str = Box::leak(b_file.into_boxed_str());
    let tampers: Vec<(&str, Tamper)> = vec![
        (
            "a payload byte in an artifact's sealed copy",
            edit_json(b_file, |v| {
                use base64::Engine;
                let e = base64::engine::general_purpose::URL_SAFE_NO_PAD;
                let mut p = e.decode(v["payload"].as_str().unwrap()).unwrap();
                let at = p.windows(4).position(|w| w == b"test").unwrap();
                p[at] = b'b';
                v["payload"] = e.encode(p).into();
            }),
        ),
        (
            "a signature bit in record.json",
            edit_json("record.json", |v| {
                use base64::Engine;
                let e = base64::engine::general_purpose::URL_SAFE_NO_PAD;
                let mut s = e
                    .decode(v["signatures"][0]["sig"].as_str().unwrap())
                    .unwrap();
                s[5] ^= 1;
                v["signatures"][0]["sig"] = e.encode(s).into();
            }),
        ),
        (
            "keys.json naming another key for the ship's key id",
            edit_json("keys.json", |v| {
                v["keys"]["key_ship"] =
                    "ed25519:SeVxSanX9yDn1yvX3DdaNsLaqXcy2X3FUHSyz8QRHFY".into();
            }),
        ),
        (
            "keys.json removed",
            Box::new(|p: &Path| std::fs::remove_file(p.join("keys.json")).unwrap()),
        ),
        (
            "record.json removed",
            Box::new(|p: &Path| std::fs::remove_file(p.join("record.json")).unwrap()),
        ),
        (
            "the receipt edited after it was sealed",
            edit_json("receipt.json", |v| {
                v["session"]["actor"] = "agent://someone-else".into();
            }),
        ),
        (
            "a sealed envelope removed",
            Box::new(move |p: &Path| std::fs::remove_file(p.join(b_file)).unwrap()),
        ),
    ];
    for (what, tamper) in &tampers {
        let copy = tempfile::tempdir().unwrap();
        let to = copy.path().join(&name);
        copy_dir(&pkg, &to);
        std::fs::copy(d.join("trust.toml"), copy.path().join("trust.toml")).unwrap();
        tamper(&to);
        assert!(
            treeship_passes(&to, &signer).is_err(),
            "Treeship passed {what}"
        );
        let run = verify(copy.path(), &[&name, "--allow-unchecked"]);
        assert_eq!(
            run.code, 1,
            "chit passed {what}: {}{}",
            run.stdout, run.stderr
        );
        let alone = chit_in(copy.path(), &["verify", "--allow-unchecked", &name], None);
        assert_eq!(
            alone.code, 1,
            "chit alone passed {what}: {}{}",
            alone.stdout, alone.stderr
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A package sealed whole whose chain is out of order: an artifact that
/// signs a parent other than the one it follows. Treeship's chain_linkage
/// fails it, and so does chit's, naming both.
#[test]
fn a_package_whose_signed_parent_is_not_the_one_before_fails() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let signer = ship(d);
    let a = seal(&signer, "action", &session_action("session.start", None));
    let x = seal(&signer, "action", &session_action("x", Some(&a.id)));
    // Follows x, but signs a as its parent.
    let y = seal(&signer, "action", &session_action("y", Some(&a.id)));
    let c = close_after(&signer, &y);
    let (x_id, y_id) = (x.id.clone(), y.id.clone());
    let pkg = package(d, &signer, &[a, x, y, c]);
    let name = name_of(&pkg);
    let treeship = treeship_passes(&pkg, &signer).unwrap_err();
    assert!(treeship.contains("chain_linkage"), "{treeship}");
    let run = verify(d, &[&name, "--allow-unchecked"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let line = &lines(&run)[0];
    let linkage: Vec<&Value> = line["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["rule"] == "chain_linkage")
        .collect();
    assert_eq!(linkage.len(), 1, "{line}");
    let message = linkage[0]["message"].as_str().unwrap();
    assert!(
        message.contains(&y_id) && message.contains(&x_id),
        "{message}"
    );
}

/// An export bundle (`treeship bundle export`, `treeship-export/v1`), made
/// by treeship-core: Treeship's import and chit both accept it, and both
/// refuse an artifact changed in it or an unknown version. chit also holds
/// the signed list to the envelopes carried (beyond Treeship's import).
#[test]
fn an_export_bundle_is_judged_as_treeships_import_judges_it() {
    use treeship_core::bundle;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let signer = ship(d);
    let store = Store::open(d.join("store")).unwrap();
    let (a, b) = two_actions(&store, &signer);
    let mut rs = ReceiptStatement::new("system://ci", "confirmation");
    rs.parent_id = Some(b.clone());
    let c = file(&store, &signer, "receipt", &rs, Some(&b));
    // b's parent, a, stays outside the bundle.
    let made = bundle::create(&[&b, &c], Some("release"), None, &store, &signer).unwrap();
    let out = d.join("release.treeship");
    bundle::export(&made.artifact_id, &out, &store).unwrap();

    let imports = |path: &Path| {
        let into = Store::open(tempfile::tempdir().unwrap().keep().join("s")).unwrap();
        bundle::import(path, &into, &Verifier::from_signer(&signer)).is_ok()
    };
    assert!(imports(&out));
    let run = verify(d, &["release.treeship", "--allow-unchecked"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let out_lines = lines(&run);
    assert_eq!(out_lines[0]["kind"], "treeship.export-bundle");
    assert!(
        run.stdout.contains(&a),
        "the outside parent is named: {}",
        run.stdout
    );
    // Its members count as inputs: b's parent outside is said, not failed.
    let chain = out_lines.iter().find(|l| l["chain"].is_string()).unwrap();
    assert_eq!(chain["errors"].as_array().unwrap().len(), 0, "{chain}");

    let tamper = |name: &str, change: &dyn Fn(&mut Value)| {
        let mut v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        change(&mut v);
        let path = d.join(name);
        std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
        path
    };
    // A payload byte in an artifact: both refuse it.
    let edited = tamper("edited.treeship", &|v| {
        use base64::Engine;
        let e = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut p = e
            .decode(v["artifacts"][0]["payload"].as_str().unwrap())
            .unwrap();
        let at = p.windows(4).position(|w| w == b"test").unwrap();
        p[at] = b'b';
        v["artifacts"][0]["payload"] = e.encode(p).into();
    });
    assert!(!imports(&edited));
    let run = verify(d, &["edited.treeship", "--allow-unchecked"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    // An unknown version: both refuse it.
    let version = tamper("version.treeship", &|v| {
        v["version"] = "treeship-export/v9".into()
    });
    assert!(!imports(&version));
    let run = verify(d, &["version.treeship", "--allow-unchecked"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    // An artifact dropped: Treeship's import takes what is left; chit holds
    // the signed list to what the file carries.
    let dropped = tamper("dropped.treeship", &|v| {
        v["artifacts"].as_array_mut().unwrap().remove(0);
    });
    assert!(imports(&dropped));
    let run = verify(d, &["dropped.treeship", "--allow-unchecked"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains(&b), "{}", run.stdout);
}

/// A session participant (two signatures over Treeship's pipe-delimited
/// text, its art id from the envelope before the countersign) redeeming an
/// invitation, both stored as Treeship stores them: chit's verdict is
/// treeship-core's `verify_participant_artifact`, on it and on each tamper.
#[test]
fn a_session_participant_is_judged_as_treeship_judges_it() {
    use base64::Engine;
    use treeship_core::statements::invitation::{
        GrantedCapabilities, InvitationStatement, InviteeRestriction,
    };
    use treeship_core::statements::session_participant::{
        participant_artifact_id, verify_participant_artifact, SessionParticipantStatement,
    };
    use treeship_core::statements::SessionLivenessStatement;
    let b64 =
        |k: &VerifyingKey| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(k.as_bytes());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let host = Ed25519Signer::generate("key_ship").unwrap();
    let other = Ed25519Signer::generate("key_other").unwrap();
    let agent = Ed25519Signer::generate("key_agent").unwrap();
    // Both the host and another key are trusted; the joining agent is not.
    std::fs::write(
        d.join("trust.toml"),
        format!(
            "[[key]]\nname = \"ship\"\npublic_key = \"ed25519:{}\"\n\n[[key]]\nname = \"other\"\npublic_key = \"ed25519:{}\"\n",
            b64(&host.verifying_key()),
            b64(&other.verifying_key())
        ),
    )
    .unwrap();
    let caps = GrantedCapabilities {
        action_types: vec!["tool.call".into(), "agent.handoff".into()],
    };
    let invitation = InvitationStatement::new(
        SESSION,
        b64(&host.verifying_key()),
        InviteeRestriction::Open,
        caps.clone(),
        "2027-01-01T00:00:00Z",
        "00112233445566778899aabbccddeeff",
    );
    let inv = sign(&payload_type("invitation"), &invitation, &host).unwrap();
    let inv_env = inv.envelope.clone();

    // Files a participant envelope as Treeship stores it.
    let store_participant = |env: &Envelope| {
        let id = participant_artifact_id(env).unwrap();
        // As Treeship's package lists it: of the countersigned envelope.
        use sha2::Digest;
        let digest = format!(
            "sha256:{}",
            hex(&sha2::Sha256::digest(env.to_json().unwrap()))
        );
        let dir = tempfile::tempdir().unwrap().keep();
        let store = Store::open(dir.join("store")).unwrap();
        store
            .write(&Record {
                artifact_id: inv.artifact_id.clone(),
                digest: inv.digest.clone(),
                payload_type: payload_type("invitation"),
                key_id: "key_ship".into(),
                signed_at: "2026-12-01T00:00:00Z".into(),
                parent_id: None,
                envelope: inv_env.clone(),
                hub_url: None,
                anchors: Vec::new(),
            })
            .unwrap();
        store
            .write(&Record {
                artifact_id: id.clone(),
                digest,
                payload_type: payload_type("session-participant"),
                key_id: "key_agent".into(),
                signed_at: "2026-12-01T00:00:05Z".into(),
                parent_id: Some(inv.artifact_id.clone()),
                envelope: env.clone(),
                hub_url: None,
                anchors: Vec::new(),
            })
            .unwrap();
        std::fs::copy(d.join("trust.toml"), dir.join("trust.toml")).unwrap();
        (dir, id)
    };
    let treeship = |env: &Envelope| {
        participant_artifact_id(env).is_ok_and(|id| {
            verify_participant_artifact(env, &id, &inv_env, host.verifying_key(), SESSION).is_ok()
        })
    };
    let chit = |env: &Envelope| {
        let (dir, id) = store_participant(env);
        let run = verify(&dir, &["store", "--allow-unchecked"]);
        let line = lines(&run)
            .into_iter()
            .find(|l| l["file"].as_str().is_some_and(|f| f.contains(&id)))
            .unwrap();
        (run.code == 0, format!("{line}\n{}", run.stdout))
    };

    let mut joined = SessionParticipantStatement::new(
        SESSION,
        inv.artifact_id.clone(),
        b64(&agent.verifying_key()),
        "2026-12-01T00:00:05Z",
        caps,
    );
    let countersigned = |stmt: &SessionParticipantStatement, by: &Ed25519Signer| {
        let pending = stmt.pending_envelope(&agent).unwrap();
        SessionParticipantStatement::attach_host_countersign(&pending, by).unwrap()
    };
    let good = countersigned(&joined, &host);
    assert!(treeship(&good));
    let (ok, out) = chit(&good);
    assert!(ok, "{out}");

    // Countersigned by a trusted key that did not issue the invitation.
    let wrong_host = countersigned(&joined, &other);
    assert!(!treeship(&wrong_host));
    let (ok, out) = chit(&wrong_host);
    assert!(!ok && out.contains("issuer"), "{out}");
    // Only the joining agent's signature.
    let pending = joined.pending_envelope(&agent).unwrap();
    assert!(!treeship(&pending));
    let (ok, out) = chit(&pending);
    assert!(!ok && out.contains("countersign"), "{out}");
    // A bit of the joining agent's signature.
    let mut flipped = good.clone();
    let e = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut sig = e.decode(&flipped.signatures[0].sig).unwrap();
    sig[3] ^= 1;
    flipped.signatures[0].sig = e.encode(sig);
    assert!(!treeship(&flipped));
    assert!(!chit(&flipped).0);
    // The capabilities changed after both signed.
    let mut widened = good.clone();
    joined
        .capabilities
        .action_types
        .push("payments.send".into());
    widened.payload = e.encode(serde_json::to_vec(&joined).unwrap());
    assert!(!treeship(&widened));
    assert!(!chit(&widened).0);

    // The host's liveness record, filed as Treeship's countersign files it:
    // under the participant it attests, which its statement signs as
    // `participant_ref`. Filed under another artifact, it fails.
    let (dir, participant) = store_participant(&good);
    let store = Store::open(dir.join("store")).unwrap();
    let liveness = SessionLivenessStatement::new(
        SESSION,
        participant.clone(),
        b64(&agent.verifying_key()),
        "nonce-0001",
        "2026-12-01T00:00:01Z",
        "2026-12-01T00:00:04Z",
    );
    let signed = sign(&payload_type("session-liveness"), &liveness, &host).unwrap();
    assert!(Verifier::from_signer(&host)
        .verify(&signed.envelope)
        .is_ok());
    let mut record = Record {
        artifact_id: signed.artifact_id.clone(),
        digest: signed.digest.clone(),
        payload_type: payload_type("session-liveness"),
        key_id: "key_ship".into(),
        signed_at: "2026-12-01T00:00:06Z".into(),
        parent_id: Some(participant),
        envelope: signed.envelope.clone(),
        hub_url: None,
        anchors: Vec::new(),
    };
    store.write(&record).unwrap();
    let run = verify(&dir, &["store", "--allow-unchecked"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    record.parent_id = Some(inv.artifact_id.clone());
    store.write(&record).unwrap();
    let run = verify(&dir, &["store", "--allow-unchecked"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("participant"), "{}", run.stdout);
}

/// Treeship's five command artifacts: treeship-core's `verify_command`
/// (signature, then the payload read as its command) and chit agree on
/// each, and on each payload Treeship cannot read as its command.
#[test]
fn commands_are_judged_as_treeships_verify_command_judges_them() {
    use treeship_core::artifacts::verify_command;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let signer = ship(d);
    let keys: std::collections::HashMap<String, VerifyingKey> =
        [("key_ship".to_owned(), signer.verifying_key())].into();
    let cases: Vec<(&str, Value, bool)> = vec![
        (
            "kill",
            json!({"session_id": "ssn_1", "reason": "runaway", "issued_at": "2026-12-01T00:00:00Z"}),
            true,
        ),
        (
            "approval_decision",
            json!({"approval_artifact_id": "art_1", "decision": "approve", "decided_at": "2026-12-01T00:00:00Z"}),
            true,
        ),
        (
            "approval_decision",
            json!({"approval_artifact_id": "art_1", "decision": "reject", "reason": null, "decided_at": "2026-12-01T00:00:00Z"}),
            true,
        ),
        (
            "approval_decision",
            json!({"approval_artifact_id": "art_1", "decision": "maybe", "decided_at": "2026-12-01T00:00:00Z"}),
            false,
        ),
        (
            "mandate_update",
            json!({"ship_id": "ship_1", "new_bounded_actions": ["deploy"], "new_forbidden": [], "extra": 1}),
            true,
        ),
        (
            "mandate_update",
            json!({"ship_id": "ship_1", "new_bounded_actions": ["deploy", 7], "new_forbidden": []}),
            false,
        ),
        (
            "budget_update",
            json!({"ship_id": "ship_1", "token_limit_delta": -500}),
            true,
        ),
        (
            "budget_update",
            json!({"ship_id": "ship_1", "token_limit_delta": 3.0}),
            false,
        ),
        ("budget_update", json!({"ship_id": "ship_1"}), false),
        (
            "terminate_session",
            json!({"session_id": "ssn_1", "reason": "done", "requested_at": "2026-12-01T00:00:00Z"}),
            true,
        ),
        (
            "terminate_session",
            json!({"session_id": "ssn_1", "reason": 5, "requested_at": "2026-12-01T00:00:00Z"}),
            false,
        ),
    ];
    for (i, (command, payload, good)) in cases.iter().enumerate() {
        let pt = format!("application/vnd.treeship.command.{command}.v1+json");
        let signed = sign(&pt, payload, &signer).unwrap();
        assert_eq!(
            verify_command(&signed.envelope, &keys).is_ok(),
            *good,
            "Treeship on {payload}"
        );
        let name = format!("c{i}.json");
        std::fs::write(d.join(&name), signed.envelope.to_json().unwrap()).unwrap();
        let run = verify(d, &[&name]);
        assert_eq!(run.code == 0, *good, "chit on {payload}: {}", run.stdout);
        assert_eq!(lines(&run)[0]["kind"], "treeship.command");
    }
}

/// chit signs a packet, a recompute result, a run receipt and a numeric
/// lineage receipt; each
/// envelope verifies under treeship-core's `Verifier`, has the art id chit
/// reports, and a payload of a kind Treeship registers passes its
/// predicate schema.
#[test]
fn what_chit_signs_treeship_verifies() {
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let keygen = chit_in(d, &["keygen", "--out", "k.pem"], None);
    assert_eq!(keygen.code, 0, "{}", keygen.stderr);
    let public = common::printed(&keygen.stdout, "treeship");
    let key_id = common::printed(&keygen.stdout, "key id").trim().to_owned();
    let key = VerifyingKey::from_bytes(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(public.trim().strip_prefix("ed25519:").unwrap())
            .unwrap()
            .try_into()
            .unwrap(),
    )
    .unwrap();
    let mut verifier = Verifier::new(Default::default());
    verifier.add_key(key_id, key);
    // The packet inside an example envelope, signed again by this key.
    let packet: Value = {
        let env = Envelope::from_json(&std::fs::read(example_path("packets/p0.env.json")).unwrap())
            .unwrap();
        let statement: Value = serde_json::from_slice(&env.payload_bytes().unwrap()).unwrap();
        statement["payload"].clone()
    };
    std::fs::write(d.join("packet.json"), packet.to_string()).unwrap();
    std::fs::copy(
        example_path("run-receipts/agreed-verified.json"),
        d.join("run.json"),
    )
    .unwrap();
    std::fs::copy(example_path("lineage/receipt.json"), d.join("lineage.json")).unwrap();
    // A recompute result names the packet it checks, as its subject too.
    let packet_art = "art_0123456789abcdef0123456789abcdef";
    std::fs::write(
        d.join("recompute.json"),
        json!({
            "schema": "verification.recompute.v1",
            "packet": packet_art,
            "packet_id": "p0",
            "method": "difr",
            "verdict": "match",
            "distance": 0.05,
            "threshold": 0.1,
            "recomputed_at": "2026-12-01T00:00:00Z",
        })
        .to_string(),
    )
    .unwrap();
    for (file, kind) in [
        ("packet.json", "verification.packet.v1"),
        ("recompute.json", "verification.recompute.v1"),
        ("run.json", "run-receipt"),
        ("lineage.json", "numeric.lineage"),
    ] {
        let out = format!("{file}.env");
        let mut args = vec!["sign", "--key", "k.pem", "--kind", kind, "--out", &out];
        if kind == "verification.recompute.v1" {
            args.extend(["--subject", packet_art]);
        }
        args.push(file);
        let run = chit_in(d, &args, None);
        assert_eq!(run.code, 0, "{kind}: {}{}", run.stdout, run.stderr);
        let envelope = Envelope::from_json(&std::fs::read(d.join(&out)).unwrap()).unwrap();
        let verified = verifier.verify(&envelope).unwrap();
        let statement: ReceiptStatement = envelope.unmarshal_statement().unwrap();
        assert_eq!(statement.kind, kind);
        if treeship_core::predicates::schema_json(kind).is_some() {
            treeship_core::predicates::validate(kind, statement.payload.as_ref()).unwrap();
        }
        // The art id chit reports is Treeship's.
        let shown = chit_in(d, &["verify", "--json", &out], None);
        let line: Value = serde_json::from_str(shown.stdout.lines().next().unwrap()).unwrap();
        assert_eq!(line["artifact_id"], verified.artifact_id.as_str(), "{kind}");
        // One payload byte changed after signing: Treeship refuses it.
        let mut bad = envelope.clone();
        let mut p = envelope.payload_bytes().unwrap();
        let at = p.iter().position(|&b| b == b':').unwrap();
        p[at + 1] ^= 0x01;
        bad.payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(p);
        assert!(verifier.verify(&bad).is_err(), "{kind}");
    }
}

/// An Approval Use Journal written by treeship-core (uses, a revocation, a
/// checkpoint): `verify_integrity` and chit agree on it, and on each change
/// Treeship's hash chain catches.
#[test]
fn a_journal_is_judged_as_treeships_verify_integrity_judges_it() {
    use treeship_core::journal::{
        append_checkpoint, append_revocation, append_use, verify_integrity, Journal,
    };
    use treeship_core::statements::{ApprovalRevocation, ApprovalUse, JournalCheckpoint};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = d.join("journal");
    let journal = Journal::new(&path);
    let approval_use = |n: u32| ApprovalUse {
        type_: String::new(),
        use_id: format!("use_{n}"),
        grant_id: "grant_1".into(),
        grant_digest: "sha256:aa".into(),
        nonce_digest: format!("sha256:{n:02}"),
        actor: "agent://t".into(),
        action: "deploy \"prod\"\n".into(),
        subject: "env://prod".into(),
        session_id: Some(SESSION.into()),
        action_artifact_id: None,
        receipt_digest: None,
        use_number: n,
        max_uses: Some(3),
        idempotency_key: None,
        created_at: "2026-12-01T00:00:00Z".into(),
        expires_at: None,
        previous_record_digest: String::new(),
        record_digest: String::new(),
        signature: None,
        signature_alg: None,
        signing_key_id: None,
    };
    append_use(&journal, approval_use(1)).unwrap();
    append_use(&journal, approval_use(2)).unwrap();
    append_revocation(
        &journal,
        ApprovalRevocation {
            type_: String::new(),
            revocation_id: "rev_1".into(),
            grant_id: "grant_1".into(),
            grant_digest: "sha256:aa".into(),
            revoker: "human://lead".into(),
            reason: None,
            created_at: "2026-12-01T00:01:00Z".into(),
            previous_record_digest: String::new(),
            record_digest: String::new(),
            signature: None,
            signature_alg: None,
            signing_key_id: None,
        },
    )
    .unwrap();
    append_checkpoint(
        &journal,
        JournalCheckpoint {
            type_: String::new(),
            checkpoint_id: "cp_1".into(),
            checkpoint_kind: Default::default(),
            from_record_index: 1,
            to_record_index: 3,
            merkle_root: "sha256:bb".into(),
            leaf_count: 3,
            journal_id: "j_1".into(),
            created_at: "2026-12-01T00:02:00Z".into(),
            hub_id: String::new(),
            hub_public_key: String::new(),
            hub_signature: String::new(),
            signed_at: String::new(),
            covered_use_ids: vec!["use_1".into(), "use_2".into()],
            covered_grant_ids: Vec::new(),
            previous_record_digest: String::new(),
            record_digest: String::new(),
            signature: None,
            signature_alg: None,
            signing_key_id: None,
        },
    )
    .unwrap();
    assert_eq!(verify_integrity(&journal).unwrap(), 4);
    let run = chit_in(d, &["verify", "--json", "journal"], None);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(lines(&run)[0]["kind"], "treeship.journal");
    // Signed by no one: under a trust file it passes as an unsigned
    // document does, with --accept-unsigned; --allow-unchecked (signatures
    // alone) is not that.
    let _ = ship(d);
    assert_eq!(verify(d, &["journal"]).code, 1);
    assert_eq!(verify(d, &["journal", "--allow-unchecked"]).code, 1);
    assert_eq!(verify(d, &["journal", "--accept-unsigned"]).code, 0);
    // Without its head, Treeship checks no truncation, nor does chit; it
    // says so.
    assert!(path.join("journal.json").is_file());
    let copy = d.join("headless");
    copy_dir(&path, &copy);
    std::fs::remove_file(copy.join("heads/current.json")).unwrap();
    assert_eq!(verify_integrity(&Journal::new(&copy)).unwrap(), 4);
    let run = chit_in(d, &["verify", "--json", "headless"], None);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let said = lines(&run)[0]["warnings"].to_string();
    assert!(said.contains("no heads/current.json"), "{said}");

    // Each change on a fresh copy: Treeship's chain catches it, and so
    // does chit's.
    type Tamper = Box<dyn Fn(&Path)>;
    let tampers: Vec<(&str, Tamper)> = vec![
        (
            "a record's field edited",
            Box::new(|j: &Path| {
                let f = first_json(&j.join("records"), 1);
                let t = std::fs::read_to_string(&f)
                    .unwrap()
                    .replace("env://prod", "env://dev");
                std::fs::write(f, t).unwrap();
            }),
        ),
        (
            "a middle record removed",
            Box::new(|j: &Path| std::fs::remove_file(first_json(&j.join("records"), 1)).unwrap()),
        ),
        (
            "the last record removed",
            Box::new(|j: &Path| std::fs::remove_file(first_json(&j.join("records"), 3)).unwrap()),
        ),
    ];
    for (what, tamper) in &tampers {
        let copy = tempfile::tempdir().unwrap();
        copy_dir(&path, &copy.path().join("journal"));
        tamper(&copy.path().join("journal"));
        assert!(
            verify_integrity(&Journal::new(copy.path().join("journal"))).is_err(),
            "Treeship passed {what}"
        );
        let run = chit_in(copy.path(), &["verify", "journal"], None);
        assert_eq!(
            run.code, 1,
            "chit passed {what}: {}{}",
            run.stdout, run.stderr
        );
    }
    // Members reordered in a record: the same record to Treeship, and to chit.
    let copy = tempfile::tempdir().unwrap();
    copy_dir(&path, &copy.path().join("journal"));
    let f = first_json(&copy.path().join("journal/records"), 0);
    let v: serde_json::Map<String, Value> =
        serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
    let reversed: String = {
        let parts: Vec<String> = v
            .iter()
            .rev()
            .map(|(k, v)| format!("{}:{}", json!(k), v))
            .collect();
        format!("{{{}}}", parts.join(","))
    };
    std::fs::write(&f, reversed).unwrap();
    assert!(verify_integrity(&Journal::new(copy.path().join("journal"))).is_ok());
    let run = chit_in(copy.path(), &["verify", "journal"], None);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

/// The `n`th `.json` file of a folder, by name.
fn first_json(dir: &Path, n: usize) -> std::path::PathBuf {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files.swap_remove(n)
}

/// A 0.32 package with a join sealed off the chain: the invitation and the
/// countersigned participant (listed by its own art id and the digest of
/// the countersigned envelope, as Treeship lists it). Treeship's package
/// verify and chit pass it; countersigned by a key other than the
/// invitation's issuer, both fail it.
#[test]
fn a_package_with_a_join_is_judged_as_treeship_judges_it() {
    use base64::Engine;
    use sha2::Digest;
    use treeship_core::statements::invitation::{
        GrantedCapabilities, InvitationStatement, InviteeRestriction,
    };
    use treeship_core::statements::session_participant::{
        participant_artifact_id, SessionParticipantStatement,
    };
    let b64 =
        |k: &VerifyingKey| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(k.as_bytes());
    let caps = || GrantedCapabilities {
        action_types: vec!["tool.call".into()],
    };
    let build = |countersigner: &str| {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_owned();
        let host = ship(&d);
        let other = Ed25519Signer::generate("key_ship").unwrap();
        let agent = Ed25519Signer::generate("key_agent").unwrap();
        let invitation = InvitationStatement::new(
            SESSION,
            b64(&host.verifying_key()),
            InviteeRestriction::Open,
            caps(),
            "2099-01-01T00:00:00Z",
            "00112233445566778899aabbccddeeff",
        );
        let mut inv = seal(&host, "invitation", &invitation);
        inv.unchained = true;
        let joined = SessionParticipantStatement::new(
            SESSION,
            inv.id.clone(),
            b64(&agent.verifying_key()),
            "2026-12-01T00:00:10Z",
            caps(),
        );
        let pending = joined.pending_envelope(&agent).unwrap();
        let by = if countersigner == "host" {
            &host
        } else {
            &other
        };
        let env = SessionParticipantStatement::attach_host_countersign(&pending, by).unwrap();
        let participant = Sealed {
            id: participant_artifact_id(&pending).unwrap(),
            digest: format!(
                "sha256:{}",
                hex(&sha2::Sha256::digest(env.to_json().unwrap()))
            ),
            envelope: env.to_json().unwrap(),
            signed_at: "2026-12-01T00:00:10Z".into(),
            kind: "session-participant",
            unchained: true,
        };
        let start = seal(&host, "action", &session_action("session.start", None));
        let close = close_after(&host, &start);
        let pkg = package(&d, &host, &[start, inv, participant, close]);
        (dir, pkg)
    };

    let (dir, pkg) = build("host");
    let name = name_of(&pkg);
    treeship_passes(&pkg, &Ed25519Signer::generate("x").unwrap()).unwrap();
    let run = verify(dir.path(), &[&name, "--allow-unchecked"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);

    // Countersigned by another key, whatever keys.json says of it.
    let (dir, pkg) = build("other");
    let name = name_of(&pkg);
    assert!(treeship_passes(&pkg, &Ed25519Signer::generate("x").unwrap()).is_err());
    let run = verify(dir.path(), &[&name, "--allow-unchecked"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
}

/// A hub-org checkpoint in a journal vouches only under a signature by a
/// hub the trust file lists, as treeship-core's
/// `verify_hub_checkpoint_signature` requires: the hub's own checkpoint
/// passes; one a stranger minted (its chain whole) fails.
#[test]
fn a_hub_checkpoint_is_taken_only_from_a_trusted_hub() {
    use base64::Engine;
    use ed25519_dalek::Signer as _;
    use treeship_core::journal::{append_checkpoint, verify_integrity, Journal};
    use treeship_core::statements::{CheckpointKind, JournalCheckpoint};
    let e = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let checkpoint_by = |dir: &Path, hub: &ed25519_dalek::SigningKey| {
        let journal = Journal::new(dir.join("journal"));
        let mut cp = JournalCheckpoint {
            type_: "treeship/journal-checkpoint/v1".into(),
            checkpoint_id: "cp_hub".into(),
            checkpoint_kind: CheckpointKind::HubOrg,
            from_record_index: 0,
            to_record_index: 0,
            merkle_root: "sha256:cc".into(),
            leaf_count: 0,
            journal_id: "j_1".into(),
            created_at: "2026-12-01T00:03:00Z".into(),
            hub_id: "hub://example".into(),
            hub_public_key: e.encode(hub.verifying_key().as_bytes()),
            hub_signature: String::new(),
            signed_at: "2026-12-01T00:03:00Z".into(),
            covered_use_ids: vec!["use_1".into()],
            covered_grant_ids: vec!["grant_1".into()],
            previous_record_digest: String::new(),
            record_digest: String::new(),
            signature: None,
            signature_alg: None,
            signing_key_id: None,
        };
        cp.hub_signature = e.encode(hub.sign(&cp.canonical_hub_signing_bytes()).to_bytes());
        append_checkpoint(&journal, cp).unwrap();
        assert!(verify_integrity(&journal).is_ok());
    };
    let hub = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    let stranger = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let trust = |dir: &Path| write_trust(dir, &hub.verifying_key());

    let ours = tempfile::tempdir().unwrap();
    checkpoint_by(ours.path(), &hub);
    trust(ours.path());
    let run = verify(ours.path(), &["journal", "--accept-unsigned"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    // Without a trust file no hub can be taken.
    let run = chit_in(ours.path(), &["verify", "journal"], None);
    assert_eq!(run.code, 1, "{}", run.stdout);

    let theirs = tempfile::tempdir().unwrap();
    checkpoint_by(theirs.path(), &stranger);
    trust(theirs.path());
    let run = verify(theirs.path(), &["journal", "--accept-unsigned"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("not in the trust file"),
        "{}",
        run.stdout
    );
    let untrusted = treeship_core::statements::verify_hub_checkpoint_signature(
        &serde_json::from_slice(
            &std::fs::read(first_json(&theirs.path().join("journal/records"), 0)).unwrap(),
        )
        .unwrap(),
        &treeship_core::trust::TrustRootStore::empty(),
    );
    assert_eq!(
        untrusted,
        treeship_core::statements::HubCheckpointVerification::UntrustedIssuer
    );
}

/// A package whose action consumed an approval: the grant carried under
/// `approvals/grants`, the journal's use record under `approvals/uses`.
/// Treeship's package verify and chit pass it, and each change to the
/// evidence that Treeship fails, chit fails, naming Treeship's row.
#[test]
fn a_packages_approval_evidence_is_judged_as_treeship_judges_it() {
    use treeship_core::session::ApprovalsBundle;
    use treeship_core::statements::{
        approval_use_record_digest, nonce_digest, ApprovalScope, ApprovalStatement, ApprovalUse,
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let signer = ship(d);
    let mut approval = ApprovalStatement::new("human://lead", "nonce-1");
    approval.scope = Some(ApprovalScope {
        max_actions: Some(1),
        ..Default::default()
    });
    let grant = sign(&payload_type("approval"), &approval, &signer).unwrap();
    let start = seal(&signer, "action", &session_action("session.start", None));
    let mut deploy = session_action("deploy", Some(&start.id));
    deploy.approval_nonce = Some("nonce-1".into());
    deploy.meta = Some(json!({ "session_id": SESSION, "approval_use_id": "use_1" }));
    let deploy = seal(&signer, "action", &deploy);
    let close = close_after(&signer, &deploy);
    let use_record = |n: u32, previous: &str| {
        let mut u = ApprovalUse {
            type_: "treeship/approval-use/v1".into(),
            use_id: format!("use_{n}"),
            grant_id: grant.artifact_id.clone(),
            grant_digest: grant.digest.clone(),
            nonce_digest: nonce_digest("nonce-1"),
            actor: "agent://t".into(),
            action: "deploy".into(),
            subject: String::new(),
            session_id: Some(SESSION.into()),
            action_artifact_id: None,
            receipt_digest: None,
            use_number: n,
            max_uses: Some(1),
            idempotency_key: None,
            created_at: "2026-12-01T00:00:10Z".into(),
            expires_at: None,
            previous_record_digest: previous.into(),
            record_digest: String::new(),
            signature: None,
            signature_alg: None,
            signing_key_id: None,
        };
        u.record_digest = approval_use_record_digest(&u);
        u
    };
    let first = use_record(1, "");
    let build = |uses: Vec<ApprovalUse>, grants: Vec<(String, Vec<u8>)>| {
        let at = tempfile::tempdir().unwrap().keep();
        let pkg = package_with(
            &at,
            &signer,
            &[start.clone(), deploy.clone(), close.clone()],
            ApprovalsBundle {
                grants,
                uses,
                ..Default::default()
            },
        );
        std::fs::copy(d.join("trust.toml"), at.join("trust.toml")).unwrap();
        (at, pkg)
    };
    let honest_grants = vec![(grant.artifact_id.clone(), grant.envelope.to_json().unwrap())];
    let chit = |at: &Path, pkg: &Path| verify(at, &[&name_of(pkg), "--allow-unchecked"]);

    let (at, pkg) = build(vec![first.clone()], honest_grants.clone());
    treeship_passes(&pkg, &signer).unwrap();
    let run = chit(&at, &pkg);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);

    let edited = |f: &dyn Fn(&mut ApprovalUse), redigest: bool| {
        let mut u = first.clone();
        f(&mut u);
        if redigest {
            u.record_digest = approval_use_record_digest(&u);
        }
        u
    };
    let mut other = ApprovalStatement::new("human://lead", "nonce-2");
    other.scope = approval.scope.clone();
    let other = sign(&payload_type("approval"), &other, &signer).unwrap();
    type Grants = Vec<(String, Vec<u8>)>;
    let cases: Vec<(&str, Vec<ApprovalUse>, Grants, &str)> = vec![
        (
            "a use record edited",
            vec![edited(&|u| u.actor = "agent://x".into(), false)],
            honest_grants.clone(),
            "approval-use-record-digest",
        ),
        (
            "a use record edited, its digest recomputed",
            vec![edited(&|u| u.actor = "agent://x".into(), true)],
            honest_grants.clone(),
            "approval-use-action-binding",
        ),
        (
            "a use naming another nonce",
            vec![edited(&|u| u.nonce_digest = nonce_digest("nonce-9"), true)],
            honest_grants.clone(),
            "approval-use-nonce-binding",
        ),
        (
            "the use record dropped",
            Vec::new(),
            honest_grants.clone(),
            "approval_evidence",
        ),
        (
            "a second use of a single-use approval",
            vec![first.clone(), {
                let mut u = use_record(2, &first.record_digest);
                u.use_number = 2;
                u.record_digest = approval_use_record_digest(&u);
                u
            }],
            honest_grants.clone(),
            "approval-use-limit",
        ),
        (
            "its max_uses raised",
            vec![edited(&|u| u.max_uses = Some(5), true)],
            honest_grants.clone(),
            "approval-use-limit",
        ),
        (
            "another approval filed as the grant",
            vec![first.clone()],
            vec![(grant.artifact_id.clone(), other.envelope.to_json().unwrap())],
            "approval-use-nonce-binding",
        ),
        (
            "a use that does not follow the one before",
            vec![edited(
                &|u| u.previous_record_digest = "sha256:00".into(),
                true,
            )],
            honest_grants.clone(),
            "approval-use-chain-continuity",
        ),
    ];
    for (what, uses, grants, rule) in cases {
        let (at, pkg) = build(uses, grants);
        assert!(
            treeship_passes(&pkg, &signer).is_err(),
            "{what}: Treeship passes it"
        );
        let run = chit(&at, &pkg);
        assert_eq!(run.code, 1, "{what}: {}", run.stdout);
        let line = &lines(&run)[0];
        assert!(
            line["errors"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["rule"] == rule),
            "{what}: {line}"
        );
    }
}

/// A package whose producer withheld a step under a signed redaction
/// (`redaction.json`, a `redaction.v1` receipt statement bound to the
/// session and its Merkle root): Treeship's package verify and chit accept
/// the missing envelope, and the edge across it as the producer's word;
/// a redaction not signed by a key the package names, lifted from another
/// package, asserting another parent, or naming another receipt digest
/// excuses nothing, in both.
#[test]
fn a_redacted_package_is_judged_as_treeship_judges_it() {
    use sha2::Digest;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let signer = ship(d);
    let stranger = Ed25519Signer::generate("key_ship").unwrap();
    let a = seal(&signer, "action", &session_action("session.start", None));
    let b = seal(&signer, "action", &session_action("secret", Some(&a.id)));
    let c = seal(&signer, "action", &session_action("test", Some(&b.id)));
    let close = close_after(&signer, &c);
    let pkg = package(d, &signer, &[a.clone(), b.clone(), c, close]);
    let name = name_of(&pkg);
    let receipt: Value =
        serde_json::from_slice(&std::fs::read(pkg.join("receipt.json")).unwrap()).unwrap();
    let root = receipt["merkle"]["root"].as_str().unwrap().to_owned();
    let digest = |p: &Path| {
        format!(
            "sha256:{}",
            hex(&sha2::Sha256::digest(
                std::fs::read(p.join("receipt.json")).unwrap()
            ))
        )
    };
    let sealed_digest = digest(&pkg);
    struct Case {
        what: &'static str,
        by_stranger: bool,
        root: Option<&'static str>,
        parent: fn(&Sealed, &Sealed) -> String,
        edit_receipt: bool,
        honest_digests: bool,
        passes: bool,
    }
    let honest = |_: &Sealed, a: &Sealed| a.id.clone();
    let cases = [
        Case {
            what: "a step withheld",
            by_stranger: false,
            root: None,
            parent: honest,
            edit_receipt: false,
            honest_digests: true,
            passes: true,
        },
        Case {
            what: "a step withheld, the receipt redacted",
            by_stranger: false,
            root: None,
            parent: honest,
            edit_receipt: true,
            honest_digests: true,
            passes: true,
        },
        Case {
            what: "a redaction signed by a key the package does not name",
            by_stranger: true,
            root: None,
            parent: honest,
            edit_receipt: false,
            honest_digests: true,
            passes: false,
        },
        Case {
            what: "a redaction lifted from another package",
            by_stranger: false,
            root: Some("sha256:00"),
            parent: honest,
            edit_receipt: false,
            honest_digests: true,
            passes: false,
        },
        Case {
            what: "a redaction asserting another parent",
            by_stranger: false,
            root: None,
            parent: |b, _| b.id.clone(),
            edit_receipt: false,
            honest_digests: true,
            passes: false,
        },
        Case {
            what: "a redacted receipt the redaction does not name",
            by_stranger: false,
            root: None,
            parent: honest,
            edit_receipt: true,
            honest_digests: false,
            passes: false,
        },
    ];
    for case in cases {
        let copy = tempfile::tempdir().unwrap();
        let to = copy.path().join(&name);
        copy_dir(&pkg, &to);
        std::fs::copy(d.join("trust.toml"), copy.path().join("trust.toml")).unwrap();
        std::fs::remove_file(to.join(format!("artifacts/{}.json", b.id))).unwrap();
        if case.edit_receipt {
            let mut v = receipt.clone();
            v["session"]["actor"] = "agent://redacted".into();
            std::fs::write(to.join("receipt.json"), serde_json::to_vec(&v).unwrap()).unwrap();
        }
        let now = digest(&to);
        let mut statement = ReceiptStatement::new("system://treeship", "redaction.v1");
        statement.payload = Some(json!({
            "session_id": SESSION,
            "merkle_root": case.root.unwrap_or(&root),
            "withheld": [{ "artifact_id": b.id, "parent_id": (case.parent)(&b, &a) }],
            "source_receipt_digest": sealed_digest,
            "receipt_digest": if case.honest_digests { now } else { "sha256:11".into() },
            "reason": "contains a customer's name",
        }));
        let by = if case.by_stranger { &stranger } else { &signer };
        let red = sign(&payload_type("receipt"), &statement, by).unwrap();
        std::fs::write(to.join("redaction.json"), red.envelope.to_json().unwrap()).unwrap();
        let treeship = treeship_passes(&to, &signer);
        assert_eq!(
            treeship.is_ok(),
            case.passes,
            "{}: Treeship {treeship:?}",
            case.what
        );
        let run = verify(copy.path(), &[&name, "--allow-unchecked"]);
        assert_eq!(
            run.code,
            if case.passes { 0 } else { 1 },
            "{}: {}{}",
            case.what,
            run.stdout,
            run.stderr
        );
        if case.passes {
            assert!(run.stdout.contains("withheld"), "{}", run.stdout);
            // Accounted for, not checked: never valid on its own.
            let strict = verify(copy.path(), &[&name]);
            assert_eq!(strict.code, 1, "{}: {}", case.what, strict.stdout);
            assert_eq!(
                lines(&strict)[0]["status"],
                "unchecked",
                "{}",
                strict.stdout
            );
        }
    }
}
