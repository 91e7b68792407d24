//! `chit keygen --algorithm ml-dsa-44`: an ML-DSA-44 witness key that
//! chit-log's cosigner reads, and `chit key show` describes.

mod common;

use chit_log::checkpoint::Checkpoint;
use chit_log::cosignature::{self, CosignatureVerifier, Cosigner};
use chit_log::note::Verifier as _;
use common::chit_in;

#[test]
fn keygen_writes_an_mldsa44_witness_key_that_cosigns() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = chit_in(
        d,
        &["keygen", "--algorithm", "ml-dsa-44", "--out", "w.pem"],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut lines = run.stdout.lines();
    assert_eq!(lines.next(), Some("wrote w.pem (keep it secret)"));
    let about = lines.next().unwrap();
    assert!(about.contains("ML-DSA-44 witness key"), "{about}");
    assert!(
        about.contains("chit witness serve --key w.pem --name NAME"),
        "{about}"
    );
    assert!(!run.stdout.contains("PRIVATE"), "the key is never printed");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(d.join("w.pem"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let pem = std::fs::read_to_string(d.join("w.pem")).unwrap();
    assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{pem}");
    let w = Cosigner::from_pkcs8_pem("witness.example/w1", &pem).unwrap();
    assert_eq!(w.alg(), 0x06);
    let v = CosignatureVerifier::from_verifier_key(&w.verifier_key()).unwrap();
    let cp = Checkpoint::new("log.example/receipts", 17, [7; 32]);
    let sig = w.cosign(&cp.text(), 1_750_000_000).unwrap();
    assert_eq!(sig.bytes.len(), 8 + cosignature::MLDSA44_SIGNATURE_BYTES);
    assert!(v.verify(cp.text().as_bytes(), &sig.bytes));
    let grown = Checkpoint::new("log.example/receipts", 18, [7; 32]);
    assert!(!v.verify(grown.text().as_bytes(), &sig.bytes));

    // Each key is new.
    let other = chit_in(
        d,
        &["keygen", "--algorithm", "ml-dsa-44", "--out", "w2.pem"],
        None,
    );
    assert_eq!(other.code, 0, "{}", other.stderr);
    assert_ne!(std::fs::read(d.join("w2.pem")).unwrap(), pem.as_bytes());
}

#[test]
fn keygen_never_overwrites_an_mldsa44_key() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = ["keygen", "--algorithm", "ml-dsa-44", "--out", "w.pem"];
    assert_eq!(chit_in(d, &args, None).code, 0);
    let before = std::fs::read(d.join("w.pem")).unwrap();
    for args in [&args[..], &["keygen", "--out", "w.pem"][..]] {
        let again = chit_in(d, args, None);
        assert_eq!(again.code, 2, "{args:?}");
        assert!(
            again.stderr.contains("never overwrites"),
            "{}",
            again.stderr
        );
        assert_eq!(std::fs::read(d.join("w.pem")).unwrap(), before);
    }
}

#[test]
fn key_show_describes_an_mldsa44_key() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let gen = chit_in(
        d,
        &["keygen", "--algorithm", "ml-dsa-44", "--out", "w.pem"],
        None,
    );
    assert_eq!(gen.code, 0, "{}", gen.stderr);
    let show = chit_in(d, &["key", "show", "w.pem"], None);
    assert_eq!(show.code, 0, "{}", show.stderr);
    let seed =
        cosignature::mldsa44_seed_from_pem(&std::fs::read_to_string(d.join("w.pem")).unwrap())
            .unwrap();
    let public = cosignature::mldsa44_public_key(&seed);
    assert_eq!(public.len(), 1312);
    assert!(
        show.stdout.contains("ML-DSA-44 witness key"),
        "{}",
        show.stdout
    );
    let digest = show
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("public key  sha256:"))
        .unwrap_or_else(|| panic!("{}", show.stdout));
    assert_eq!(digest, chit_core::digest::sha256_hex(&public));
    assert!(!show.stdout.contains("did:key"), "{}", show.stdout);
    assert!(!show.stderr.contains("open to others"), "{}", show.stderr);
    // A key file others may read is shown, with the warning an Ed25519
    // key gets.
    std::fs::set_permissions(
        d.join("w.pem"),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let open = chit_in(d, &["key", "show", "w.pem"], None);
    assert_eq!(open.code, 0, "{}", open.stderr);
    assert!(open.stderr.contains("open to others"), "{}", open.stderr);

    // Not a key at all still fails, as before.
    std::fs::write(d.join("junk.pem"), "not a key\n").unwrap();
    let junk = chit_in(d, &["key", "show", "junk.pem"], None);
    assert_ne!(junk.code, 0);
    assert!(junk.stdout.is_empty(), "{}", junk.stdout);
}
