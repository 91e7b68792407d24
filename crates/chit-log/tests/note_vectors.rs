//! Signed notes against Go's `golang.org/x/mod/sumdb/note` and the C2SP
//! specifications, and hostile input.
//!
//! The keys, the text and the signature lines of the Go tests are copied
//! from `sumdb/note/note_test.go` (Copyright 2019 The Go Authors, BSD
//! 3-Clause licence). The example checkpoint and cosignature are copied
//! from C2SP `tlog-cosignature.md` (CC BY 4.0).

use chit_log::checkpoint::{
    add_signatures, cosignature_time, cosigned_message, open_checkpoint, Checkpoint,
    CheckpointError, CosignatureVerifier, Cosigner,
};
use chit_log::note::{
    self, decode_verifier_key, open, parse, NoteError, NoteSigner, NoteVerifier, Verifier,
    ALG_COSIGNATURE_V1, ALG_ED25519, MAX_NOTE_BYTES,
};

const PETER_VKEY: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const PETER_SKEY: &str =
    "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const ENOCH_VKEY: &str = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop";
const TEXT: &str = "If you think cryptography is the answer to your problem,\n\
                    then you don't know what your problem is.\n";
const PETER_SIG: &str = "\u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
const ENOCH_SIG: &str = "\u{2014} EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n";

fn peter() -> NoteVerifier {
    NoteVerifier::from_verifier_key(PETER_VKEY).unwrap()
}
fn enoch() -> NoteVerifier {
    NoteVerifier::from_verifier_key(ENOCH_VKEY).unwrap()
}
fn note(sigs: &[&str]) -> Vec<u8> {
    format!("{TEXT}\n{}", sigs.concat()).into_bytes()
}

#[test]
fn go_verifier_keys_read_and_write_back() {
    let (name, alg, public) = decode_verifier_key(PETER_VKEY).unwrap();
    assert_eq!((name.as_str(), alg), ("PeterNeumann", ALG_ED25519));
    assert_eq!(peter().key_id(), 0xc74f20a3);
    assert_eq!(enoch().key_id(), 0xaf0cfe78);
    assert_eq!(
        note::encode_verifier_key(&name, alg, &public),
        PETER_VKEY,
        "key id = SHA-256(name || 0x0A || 0x01 || key)[:4]"
    );
}

#[test]
fn every_mangled_go_verifier_key_is_refused() {
    let b = PETER_VKEY.as_bytes();
    for i in 0..=b.len() {
        for j in i + 1..=b.len() {
            if (i, j) != (0, b.len()) {
                let k = String::from_utf8_lossy(&b[i..j]);
                assert!(NoteVerifier::from_verifier_key(&k).is_err(), "{k}");
            }
        }
    }
    for i in 0..b.len() {
        let mut m = b.to_vec();
        m[i] = m[i].wrapping_add(1);
        let k = String::from_utf8_lossy(&m);
        assert!(NoteVerifier::from_verifier_key(&k).is_err(), "{k}");
    }
    // Go's: a key of the wrong length, and an unknown algorithm, each with
    // its id adjusted to match.
    assert!(NoteVerifier::from_verifier_key(
        "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY=="
    )
    .is_err());
    assert!(NoteVerifier::from_verifier_key(
        "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
    )
    .is_err());
}

#[test]
fn signing_gos_text_with_gos_key_gives_gos_note_byte_for_byte() {
    let signer = NoteSigner::from_go_private_key(PETER_SKEY).unwrap();
    assert_eq!(signer.verifier_key(), PETER_VKEY);
    let msg = note::sign(TEXT, &[&signer]).unwrap();
    assert_eq!(
        String::from_utf8(msg).unwrap(),
        format!("{TEXT}\n{PETER_SIG}")
    );
    let b = PETER_SKEY.as_bytes();
    for i in 0..b.len() {
        let mut m = b.to_vec();
        m[i] = m[i].wrapping_add(1);
        assert!(NoteSigner::from_go_private_key(&String::from_utf8_lossy(&m)).is_err());
    }
    assert!(note::sign("abc", &[&signer]).is_err(), "no final line feed");
}

#[test]
fn gos_open_cases() {
    let (p, e) = (peter(), enoch());
    // One known, one unknown.
    let o = open(&note(&[PETER_SIG, ENOCH_SIG]), &[&p]).unwrap();
    assert_eq!(o.text, TEXT);
    assert_eq!(o.verified.len(), 1);
    assert_eq!(o.verified[0].1.key_id, 0xc74f20a3);
    assert_eq!(o.unknown.len(), 1);
    assert_eq!(o.unknown[0].name, "EnochRoot");
    // Both known.
    let o = open(&note(&[PETER_SIG, ENOCH_SIG]), &[&p, &e]).unwrap();
    assert_eq!(o.verified.iter().map(|v| v.0).collect::<Vec<_>>(), [0, 1]);
    assert!(o.unknown.is_empty());
    // None known.
    assert_eq!(
        open(&note(&[PETER_SIG, ENOCH_SIG]), &[]),
        Err(NoteError::NoKnownSignature { unknown: 2 })
    );
    // A duplicated verifier, used and unused.
    assert!(matches!(
        open(&note(&[ENOCH_SIG]), &[&e, &p, &e]),
        Err(NoteError::AmbiguousKey { .. })
    ));
    assert!(open(&note(&[PETER_SIG]), &[&e, &p, &e]).is_ok());
    // 101 signatures.
    assert!(matches!(
        open(&note(&[PETER_SIG; 101]), &[&p]),
        Err(NoteError::Malformed(_))
    ));
    // A signature that does not verify.
    let bad = format!("{}ABCD{}", &PETER_SIG[..60], &PETER_SIG[60..]);
    assert!(matches!(
        open(&note(&[&bad]), &[&p]),
        Err(NoteError::InvalidSignature { .. })
    ));
    // Unknown signatures, even repeated or broken, are ignored.
    let enoch_abcd = format!("{}ABCD{}", &ENOCH_SIG[..60], &ENOCH_SIG[60..]);
    let o = open(
        &note(&[PETER_SIG, ENOCH_SIG, ENOCH_SIG, &enoch_abcd]),
        &[&p],
    )
    .unwrap();
    assert_eq!((o.verified.len(), o.unknown.len()), (1, 3));
    // Go's malformed messages.
    let bad_msgs = [
        TEXT.to_string(),
        format!("{TEXT}\n"),
        format!("{TEXT}\n{}", &PETER_SIG[..PETER_SIG.len() - 1]),
        format!("\x01{TEXT}\n{PETER_SIG}"),
        format!("{TEXT}\n\u{2014} Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM="),
        format!("{TEXT}\n{PETER_SIG}Unexpected line.\n"),
    ];
    for m in bad_msgs {
        assert!(
            matches!(open(m.as_bytes(), &[&p]), Err(NoteError::Malformed(_))),
            "{m}"
        );
    }
    let mut ff = b"\xff".to_vec();
    ff.extend_from_slice(&note(&[PETER_SIG]));
    assert!(matches!(open(&ff, &[&p]), Err(NoteError::Malformed(_))));
}

#[test]
fn hostile_notes_are_refused() {
    let p = peter();
    let good = note(&[PETER_SIG]);
    assert!(open(&good, &[&p]).is_ok());
    // Truncated anywhere.
    for n in 0..good.len() {
        assert!(open(&good[..n], &[&p]).is_err(), "prefix of {n} bytes");
    }
    // Extra blank lines: before the signatures the text changes (and the
    // signature fails); after them, or between two, the form breaks.
    for m in [
        format!("{TEXT}\n\n{PETER_SIG}"),
        format!("\n{TEXT}\n{PETER_SIG}"),
        format!("{TEXT}\n{PETER_SIG}\n"),
        format!("{TEXT}\n{PETER_SIG}\n{ENOCH_SIG}"),
    ] {
        assert!(open(m.as_bytes(), &[&p, &enoch()]).is_err(), "{m:?}");
    }
    // Oversized.
    let mut big = "a".repeat(MAX_NOTE_BYTES);
    big.push('\n');
    big.push('\n');
    big.push_str(PETER_SIG);
    assert_eq!(open(big.as_bytes(), &[&p]), Err(NoteError::TooLarge));
    // Non-UTF-8 inside the text.
    let mut m = good.clone();
    m[3] = 0xc3;
    assert!(matches!(open(&m, &[&p]), Err(NoteError::Malformed(_))));
    // CR LF line ends.
    let crlf = String::from_utf8(good.clone())
        .unwrap()
        .replace('\n', "\r\n");
    assert!(open(crlf.as_bytes(), &[&p]).is_err());
    // The same known key twice.
    assert!(matches!(
        open(&note(&[PETER_SIG, PETER_SIG]), &[&p]),
        Err(NoteError::Malformed(_))
    ));
    // Only an unknown key.
    assert_eq!(
        open(&note(&[ENOCH_SIG]), &[&p]),
        Err(NoteError::NoKnownSignature { unknown: 1 })
    );
    // Non-canonical base64 (stray bits, missing padding), a bad name.
    for sig in [
        PETER_SIG.replace("AM=\n", "AN=\n"),
        PETER_SIG.replace("AM=\n", "AM\n"),
        PETER_SIG.replace("PeterNeumann", "Peter+Neumann"),
        PETER_SIG.replace("\u{2014} ", "- "),
        PETER_SIG.replace(" x08go", "  x08go"),
        "\u{2014} PeterNeumann xw8=\n".to_string(),
    ] {
        assert!(
            matches!(open(&note(&[&sig]), &[&p]), Err(NoteError::Malformed(_))),
            "{sig}"
        );
    }
    // A changed byte of the text.
    let mut m = good.clone();
    m[0] ^= 0x20;
    assert!(matches!(
        open(&m, &[&p]),
        Err(NoteError::InvalidSignature { .. })
    ));
}

#[test]
fn the_text_of_a_note_may_hold_empty_lines_as_c2sp_says() {
    let signer = NoteSigner::from_seed("example.com/poem", &[7; 32]).unwrap();
    let text = "Ognuno sta solo sul cuor della terra\ntrafitto da un raggio di sole:\n\ned è subito sera.\n";
    let msg = note::sign(text, &[&signer]).unwrap();
    let o = open(&msg, &[&signer.verifier()]).unwrap();
    assert_eq!(o.text, text);
    // But a checkpoint may not.
    assert!(Checkpoint::parse(text).is_err());
}

// C2SP tlog-cosignature's example.
const C2SP_CHECKPOINT: &str =
    "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";
const C2SP_NOTE_SIGS: &str = "\u{2014} example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n\u{2014} witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==\n";

#[test]
fn the_c2sp_example_checkpoint_and_cosignature_read_as_the_spec_says() {
    let n = parse(format!("{C2SP_CHECKPOINT}\n{C2SP_NOTE_SIGS}").as_bytes()).unwrap();
    let c = Checkpoint::parse(&n.text).unwrap();
    assert_eq!(c.origin, "example.com/behind-the-sofa");
    assert_eq!(c.size, 20852163);
    assert_eq!(c.text(), C2SP_CHECKPOINT);
    assert_eq!(n.signatures.len(), 2);
    // The witness line: key id, then the timestamp of the spec's example
    // message (1679315147), then 64 bytes of signature.
    let w = &n.signatures[1];
    assert_eq!(w.name, "witness.example.com/w1");
    assert_eq!(w.key_id, 0x8d66cf3f);
    assert_eq!(cosignature_time(&w.bytes), Some(1679315147));
    assert_eq!(
        String::from_utf8(cosigned_message(1679315147, C2SP_CHECKPOINT)).unwrap(),
        "cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
    );
}

#[test]
fn checkpoints_sign_open_and_are_cosigned() {
    let log = NoteSigner::from_seed("chit.example/log", &[1; 32]).unwrap();
    let mut c = Checkpoint::new("chit.example/log", 42, [9; 32]);
    c.extensions.push("an extension".into());
    let signed = c.sign(&log).unwrap();
    let w1 = Cosigner::from_seed("witness.example/1", &[2; 32]).unwrap();
    let w2 = Cosigner::from_seed("witness.example/2", &[3; 32]).unwrap();
    let ws = [w1.verifier(), w2.verifier()];

    let o = open_checkpoint(&signed, "chit.example/log", &log.verifier(), &ws).unwrap();
    assert_eq!(o.checkpoint, c);
    assert!(o.cosignatures.is_empty());

    let cs = w2.cosign(&c.text(), 1_700_000_000).unwrap();
    let cosigned = add_signatures(&signed, std::slice::from_ref(&cs)).unwrap();
    let o = open_checkpoint(&cosigned, "chit.example/log", &log.verifier(), &ws).unwrap();
    assert_eq!(o.cosignatures, [(1, 1_700_000_000)]);
    // Unknown to a verifier that lists no witnesses: counted, ignored.
    let o = open_checkpoint(&cosigned, "chit.example/log", &log.verifier(), &[]).unwrap();
    assert_eq!(o.unknown, 1);

    // Another time in the line than the one signed.
    let mut forged = cs.clone();
    forged.bytes[7] ^= 1;
    let bad = add_signatures(&signed, &[forged]).unwrap();
    assert!(matches!(
        open_checkpoint(&bad, "chit.example/log", &log.verifier(), &ws),
        Err(CheckpointError::Note(NoteError::InvalidSignature { .. }))
    ));
    // A cosignature of another checkpoint.
    let other = Checkpoint::new("chit.example/log", 43, [9; 32]);
    let moved = w2.cosign(&other.text(), 1_700_000_000).unwrap();
    let bad = add_signatures(&signed, &[moved]).unwrap();
    assert!(open_checkpoint(&bad, "chit.example/log", &log.verifier(), &ws).is_err());
    // A witness's cosignature is not a log signature, nor the reverse: the
    // key ids differ by type even for one key and name.
    let same = NoteSigner::from_seed("witness.example/2", &[3; 32]).unwrap();
    assert_ne!(same.key_id(), w2.verifier().key_id());
    assert!(NoteVerifier::from_verifier_key(&w2.verifier_key()).is_err());
    assert!(CosignatureVerifier::from_verifier_key(&same.verifier_key()).is_err());
    assert_eq!(
        decode_verifier_key(&w2.verifier_key()).unwrap().1,
        ALG_COSIGNATURE_V1
    );
    // The wrong origin, the wrong log key, no log signature.
    assert!(open_checkpoint(&signed, "other", &log.verifier(), &ws).is_err());
    let stranger = NoteSigner::from_seed("chit.example/log", &[4; 32]).unwrap();
    assert!(open_checkpoint(&signed, "chit.example/log", &stranger.verifier(), &ws).is_err());
    let only_witness = format!("{}\n{}", c.text(), cs.line());
    assert!(open_checkpoint(
        only_witness.as_bytes(),
        "chit.example/log",
        &log.verifier(),
        &ws
    )
    .is_err());
    // Timestamps above 2^63 - 1 are neither made nor accepted.
    assert!(w1.cosign(&c.text(), 1 << 63).is_err());
    let mut big = cs;
    big.bytes[0] = 0x80;
    assert_eq!(cosignature_time(&big.bytes), None);
    // Only checkpoints are cosigned.
    assert!(w1.cosign("not a checkpoint\n", 1).is_err());
}

#[test]
fn malformed_checkpoints_are_refused() {
    let root = "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=";
    for t in [
        String::new(),
        "origin\n".into(),
        "origin\n5\n".into(),
        format!("origin\n5\n{root}"),
        format!("\n5\n{root}\n"),
        format!("origin\n05\n{root}\n"),
        format!("origin\n-5\n{root}\n"),
        format!("origin\n+5\n{root}\n"),
        format!("origin\n 5\n{root}\n"),
        format!("origin\n\n{root}\n"),
        format!("origin\n18446744073709551616\n{root}\n"),
        "origin\n5\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I\n".into(),
        "origin\n5\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2J=\n".into(),
        "origin\n5\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=AAAA\n".into(),
        format!("origin\n5\n{root}\n\next\n"),
        format!("origin\n5\n{root}\n\n"),
        format!("origin\r\n5\n{root}\n"),
    ] {
        assert!(Checkpoint::parse(&t).is_err(), "{t:?}");
    }
    let c = Checkpoint::parse(&format!("origin\n18446744073709551615\n{root}\nx\ny\n")).unwrap();
    assert_eq!((c.size, c.extensions.len()), (u64::MAX, 2));
    assert!(Checkpoint::parse(&format!("origin\n0\n{root}\n")).is_ok());
}

#[test]
fn a_pkcs8_pem_key_as_chit_keygen_writes_signs_notes() {
    // RFC 8410 §10.3's example private key (the seed d4ee72db…), as
    // OpenSSL and `chit keygen` write PKCS#8 v1.
    let pem = "-----BEGIN PRIVATE KEY-----\n\
               MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n\
               -----END PRIVATE KEY-----\n";
    let s = NoteSigner::from_pkcs8_pem("log.example", pem).unwrap();
    // RFC 8410 §10.1's public key for it.
    let want_pub = "19bf44096984cdfe8541bac167dc3b96c85086aa30b6b6cb0c5c38ad703166e1";
    let got: String = s
        .verifying_key()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(got, want_pub);
    let msg = note::sign("hello\n", &[&s]).unwrap();
    assert!(open(&msg, &[&s.verifier()]).is_ok());
    assert!(NoteSigner::from_pkcs8_pem("log.example", "not a key").is_err());
}
