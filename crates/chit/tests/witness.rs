//! `chit witness serve`: the C2SP tlog-witness protocol over loopback,
//! every status it answers, its state across restarts, and the atomicity
//! of one origin's check and store.

mod common;

use chit_log::checkpoint::{add_signatures, Checkpoint};
use chit_log::cosignature::CosignatureVerifier;
use chit_log::note::{self, NoteSigner, Verifier};
use chit_log::tree::{consistency_proof, Hash, MemoryTree};
use chit_log::witness::AddCheckpoint;
use common::serving::{self, http, Server};
use std::io::{Read, Write};
use std::path::Path;

const ORIGIN: &str = "log.example/witnessed";

/// A log in memory: its key and `n` entries.
struct TestLog {
    key: NoteSigner,
    tree: MemoryTree,
}

impl TestLog {
    fn new(origin: &str, seed: u8, n: u64) -> TestLog {
        let mut tree = MemoryTree::new();
        for i in 0..n {
            tree.push(format!("{origin} entry {i}").as_bytes());
        }
        TestLog {
            key: NoteSigner::from_seed(origin, &[seed; 32]).unwrap(),
            tree,
        }
    }
    fn checkpoint(&self, size: u64) -> Checkpoint {
        Checkpoint::new(self.key.name(), size, self.tree.root(size).unwrap())
    }
    fn signed(&self, size: u64) -> Vec<u8> {
        self.checkpoint(size).sign(&self.key).unwrap()
    }
    fn request(&self, old: u64, new: u64) -> Vec<u8> {
        let proof = if old == 0 || old > new {
            Vec::new()
        } else {
            consistency_proof(&self.tree, old, new).unwrap()
        };
        AddCheckpoint {
            old_size: old,
            proof,
            note: self.signed(new),
        }
        .to_bytes()
    }
}

/// The witness `witness.example/w1` of the logs in `logs.policy`, its state
/// in `w.db`.
fn start_witness(dir: &Path, key: &str) -> Server {
    witness_named(dir, key, "witness.example/w1", "w.db", "127.0.0.1:0")
}

fn vkey_of(server: &Server) -> String {
    common::printed(&server.before, "witness key: ")
}

fn add(addr: &str, body: &[u8]) -> (u16, Vec<u8>) {
    http(addr, "POST", "/add-checkpoint", &[], body)
}

/// The response head (lower-cased) and body of one raw request.
fn raw(addr: &str, request: &[u8]) -> (String, Vec<u8>) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    s.write_all(request).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    (
        String::from_utf8_lossy(&out[..split]).to_ascii_lowercase(),
        out[split + 4..].to_vec(),
    )
}

fn setup(dir: &Path, logs: &[&TestLog]) {
    let run = common::chit_in(dir, &["keygen", "--out", "w.pem"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut policy = String::from("# the logs this witness witnesses\n");
    for l in logs {
        policy.push_str(&format!("log {}\n", l.key.verifier_key()));
    }
    policy.push_str("quorum none\n");
    std::fs::write(dir.join("logs.policy"), policy).unwrap();
}

/// Checks a 200's body: one cosignature line by the witness over the
/// checkpoint, with a non-zero timestamp.
fn assert_cosigned(body: &[u8], vkey: &str, log: &TestLog, size: u64) {
    let w = CosignatureVerifier::from_verifier_key(vkey).unwrap();
    let text = String::from_utf8(body.to_vec()).unwrap();
    assert!(text.starts_with("\u{2014} witness.example/w1 "), "{text}");
    assert_eq!(text.matches('\n').count(), 1, "{text}");
    let note = [log.signed(size), body.to_vec()].concat();
    let opened = note::open(&note, &[&w as &dyn Verifier]).unwrap();
    assert_eq!(opened.verified.len(), 1);
    let ts = chit_log::cosignature::cosignature_time(&opened.verified[0].1.bytes).unwrap();
    assert!(ts > 1_700_000_000, "{ts}");
}

#[test]
fn the_witness_answers_each_status_and_keeps_its_state() {
    let dir = tempfile::tempdir().unwrap();
    let log = TestLog::new(ORIGIN, 1, 40);
    setup(dir.path(), &[&log]);
    let mut w = start_witness(dir.path(), "w.pem");
    let vkey = vkey_of(&w);
    let addr = w.addr.clone();

    // Nothing cosigned yet: a GET of its checkpoint is 404.
    let hash = chit_core::digest::sha256_hex(ORIGIN.as_bytes());
    let (code, _) = http(&addr, "GET", &format!("/{hash}/checkpoint"), &[], b"");
    assert_eq!(code, 404);

    // 200: the first checkpoint, from 0.
    let (code, body) = add(&addr, &log.request(0, 4));
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    assert_cosigned(&body, &vkey, &log, 4);

    // 409: an old size that is not the latest cosigned, which the body
    // names as text/x.tlog.size.
    let stale = log.request(0, 7);
    let (head, body) = raw(
        &addr,
        &[
            format!(
                "POST /add-checkpoint HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
                stale.len()
            )
            .into_bytes(),
            stale,
        ]
        .concat(),
    );
    assert!(head.starts_with("http/1.1 409"), "{head}");
    assert!(head.contains("content-type: text/x.tlog.size"), "{head}");
    assert_eq!(body, b"4\n");

    // 400: an old size above the checkpoint's, and a malformed body.
    assert_eq!(add(&addr, &log.request(4, 3)).0, 400);
    assert_eq!(add(&addr, b"old 4\nnot base64\n\nx").0, 400);
    assert_eq!(add(&addr, b"old 04\n\n").0, 400);

    // 404: a log the policy does not list.
    let stranger = TestLog::new("log.example/stranger", 2, 10);
    assert_eq!(add(&addr, &stranger.request(0, 5)).0, 404);

    // 403: signed by another key under the log's name, or a log
    // signature that fails.
    let impostor = TestLog::new(ORIGIN, 3, 40);
    assert_eq!(add(&addr, &impostor.request(0, 9)).0, 403);
    let mut broken = log.request(4, 9);
    let at = broken.len() - 10;
    broken[at] = if broken[at] == b'A' { b'B' } else { b'A' };
    assert_eq!(add(&addr, &broken).0, 403);

    // 422: a proof that fails, and another root at the same size.
    let mut wrong = AddCheckpoint::parse(&log.request(4, 9)).unwrap();
    wrong.proof[0][0] ^= 1;
    assert_eq!(add(&addr, &wrong.to_bytes()).0, 422);
    let other = TestLog::new(ORIGIN, 1, 5);
    let fork = AddCheckpoint {
        old_size: 4,
        proof: Vec::new(),
        note: Checkpoint::new(ORIGIN, 4, other.tree.root(5).unwrap())
            .sign(&log.key)
            .unwrap(),
    };
    assert_eq!(add(&addr, &fork.to_bytes()).0, 422);

    // 413: a body larger than any request the protocol allows.
    let huge = vec![b'A'; chit_log::witness::MAX_REQUEST_BYTES + 1];
    assert_eq!(add(&addr, &huge).0, 413);

    // 200 again, with a consistency proof; then the same size again.
    let (code, body) = add(&addr, &log.request(4, 10));
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    assert_cosigned(&body, &vkey, &log, 10);
    assert_eq!(add(&addr, &log.request(10, 10)).0, 200);

    // The latest cosigned checkpoint, with the log's signature and the
    // witness's cosignature.
    let (code, note) = http(&addr, "GET", &format!("/{hash}/checkpoint"), &[], b"");
    assert_eq!(code, 200);
    let w_key = CosignatureVerifier::from_verifier_key(&vkey).unwrap();
    let opened =
        chit_log::checkpoint::open_checkpoint(&note, ORIGIN, &log.key.verifier(), &[w_key])
            .unwrap();
    assert_eq!(opened.checkpoint.size, 10);
    assert_eq!(opened.cosignatures.len(), 1);

    // Every answer is counted.
    let (_, metrics) = http(&addr, "GET", "/metrics", &[], b"");
    let metrics = String::from_utf8(metrics).unwrap();
    for (status, n) in [
        (200, 3),
        (400, 3),
        (403, 2),
        (404, 1),
        (409, 1),
        (413, 1),
        (422, 2),
    ] {
        let line = format!("chit_witness_requests_total{{status=\"{status}\"}} {n}\n");
        assert!(metrics.contains(&line), "{line} in {metrics}");
    }

    // Restarted, it resumes from its stored size; a second witness on the
    // same store is refused while the first holds it.
    let second = common::chit_in(
        dir.path(),
        &[
            "witness",
            "serve",
            "--key",
            "w.pem",
            "--name",
            "w2",
            "--store",
            "w.db",
            "--policy",
            "logs.policy",
            "--listen",
            "127.0.0.1:0",
        ],
        None,
    );
    assert_eq!(second.code, 2, "{}", second.stderr);
    assert!(
        second.stderr.contains("held by another witness"),
        "{}",
        second.stderr
    );
    w.child.kill().unwrap();
    w.child.wait().unwrap();
    let w = start_witness(dir.path(), "w.pem");
    assert_eq!(vkey_of(&w), vkey);
    let (code, body) = add(&w.addr, &log.request(4, 12));
    assert_eq!((code, body.as_slice()), (409, &b"10\n"[..]));
    let (code, body) = add(&w.addr, &log.request(10, 12));
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
}

#[test]
fn of_submissions_from_one_old_size_one_is_cosigned() {
    let dir = tempfile::tempdir().unwrap();
    let log = std::sync::Arc::new(TestLog::new(ORIGIN, 1, 200));
    let other = TestLog::new("log.example/other", 4, 50);
    setup(dir.path(), &[&log, &other]);
    let w = start_witness(dir.path(), "w.pem");
    let addr = w.addr.clone();
    assert_eq!(add(&addr, &log.request(0, 10)).0, 200);
    let mut size = 10;
    for round in 0..5 {
        // 16 different checkpoints, each consistent with `size`, sent at
        // once: exactly one is cosigned, the rest told the new size.
        let handles: Vec<_> = (1..=16u64)
            .map(|k| {
                let (log, addr) = (log.clone(), addr.clone());
                let new = size + k + round;
                std::thread::spawn(move || (new, add(&addr, &log.request(size, new))))
            })
            .collect();
        let answers: Vec<(u64, (u16, Vec<u8>))> =
            handles.into_iter().map(|h| h.join().unwrap()).collect();
        let won: Vec<u64> = answers
            .iter()
            .filter(|(_, (c, _))| *c == 200)
            .map(|(n, _)| *n)
            .collect();
        assert_eq!(won.len(), 1, "round {round}: {won:?}");
        for (_, (code, body)) in answers.iter().filter(|(_, (c, _))| *c != 200) {
            assert_eq!(*code, 409);
            assert_eq!(body, format!("{}\n", won[0]).as_bytes());
        }
        size = won[0];
    }
    // Another origin was never held up by these.
    assert_eq!(add(&addr, &other.request(0, 50)).0, 200);
}

/// A cosigned checkpoint is what a reader with the witness's key accepts:
/// the cosignature lines are added to the log's note as they came back.
#[test]
fn a_cosignature_added_to_the_note_opens_with_the_witness_key() {
    let dir = tempfile::tempdir().unwrap();
    let log = TestLog::new(ORIGIN, 1, 3);
    setup(dir.path(), &[&log]);
    let w = start_witness(dir.path(), "w.pem");
    let (code, body) = add(&w.addr, &log.request(0, 3));
    assert_eq!(code, 200);
    let line = note::parse(&[log.signed(3), body].concat())
        .unwrap()
        .signatures
        .pop()
        .unwrap();
    let note = add_signatures(&log.signed(3), &[line]).unwrap();
    let key = CosignatureVerifier::from_verifier_key(&vkey_of(&w)).unwrap();
    let opened =
        chit_log::checkpoint::open_checkpoint(&note, ORIGIN, &log.key.verifier(), &[key]).unwrap();
    assert_eq!(opened.cosignatures.len(), 1);
    let _: Hash = opened.checkpoint.root;
}

/// A witness started under its own name and store.
fn witness_named(dir: &Path, key: &str, name: &str, store: &str, listen: &str) -> Server {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("{store}.log")))
        .unwrap();
    serving::start(
        dir,
        &[
            "witness",
            "serve",
            "--key",
            key,
            "--name",
            name,
            "--store",
            store,
            "--policy",
            "logs.policy",
            "--listen",
            listen,
        ],
        &[],
        log.into(),
    )
}

fn checkpoint_size(note: &[u8]) -> u64 {
    Checkpoint::from_note(note).unwrap().size
}

/// Polls `GET /checkpoint` until its size is `want` (at most 30 s).
fn await_cosigned(addr: &str, want: u64) -> Vec<u8> {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (code, note) = http(addr, "GET", "/checkpoint", &[], b"");
        assert_eq!(code, 200);
        if checkpoint_size(&note) == want {
            return note;
        }
        assert!(
            std::time::Instant::now() < until,
            "the cosigned checkpoint stayed at {} (want {want})",
            checkpoint_size(&note)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A log, two witnesses (Ed25519 and ML-DSA-44) and a third that lies (its
/// URL is another's, its key its own), under a policy of quorum 2: the
/// server gathers the cosignatures beside its writes, publishes what meets
/// the quorum, waits (losing nothing) while a witness is down, and goes on
/// from the witness's stored size when it is back; what it gathered
/// survives its restart and reaches proofs.
#[test]
fn a_log_gathers_a_quorum_of_cosignatures_and_waits_for_a_witness() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |args: &[&str]| {
        let r = common::chit_in(d, args, None);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        r
    };
    run(&["keygen", "--out", "a.pem"]);
    run(&["keygen", "--algorithm", "ml-dsa-44", "--out", "b.pem"]);
    run(&["keygen", "--out", "liar.pem"]);
    run(&["keygen", "--out", "log.pem"]);
    let init = run(&[
        "log",
        "init",
        "--store",
        "r.db",
        "--key",
        "log.pem",
        "--origin",
        "test.example/witnessed",
    ]);
    let log_key = common::printed(&init.stdout, "log key: ");
    std::fs::write(
        d.join("logs.policy"),
        format!("log {log_key}\nquorum none\n"),
    )
    .unwrap();
    let a = witness_named(d, "a.pem", "witness.example/a", "a.db", "127.0.0.1:0");
    let b = witness_named(d, "b.pem", "witness.example/b", "b.db", "127.0.0.1:0");
    let (a_key, b_key) = (vkey_of(&a), vkey_of(&b));
    assert!(b_key.len() > 1700, "an ML-DSA-44 key: {b_key}");
    // The liar's key is one nobody cosigns with; its URL is a's.
    let liar_key = {
        let pem = std::fs::read_to_string(d.join("liar.pem")).unwrap();
        chit_log::cosignature::Cosigner::from_pkcs8_pem("witness.example/liar", &pem)
            .unwrap()
            .verifier_key()
    };
    let b_addr = b.addr.clone();
    std::fs::write(
        d.join("witnessed.policy"),
        format!(
            "log {log_key}\nwitness A {a_key} http://{}\nwitness B {b_key} http://{}\n\
             witness L {liar_key} http://{}\ngroup two 2 A B L\nquorum two\n",
            a.addr, b.addr, a.addr
        ),
    )
    .unwrap();
    let token = "t0ken-for-the-witnessing-test";
    std::fs::write(
        d.join("tokens.toml"),
        format!(
            "[[token]]\nname = \"w\"\nsha256 = \"{}\"\n",
            chit_core::digest::sha256_hex(token.as_bytes())
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        d.join("tokens.toml"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let serve_args = [
        "serve",
        "--store",
        "r.db",
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        "tokens.toml",
        "--witness-policy",
        "witnessed.policy",
        "--witness-timeout",
        "2",
    ];
    let server_log = std::fs::File::create(d.join("serve.log")).unwrap();
    let mut server = serving::start(d, &serve_args, &[], server_log.into());
    let auth = format!("Bearer {token}");
    let post = |addr: &str, n: usize, query: &str| {
        let (code, body) = http(
            addr,
            "POST",
            &format!("/v1/entries{query}"),
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            &serving::receipt(n),
        );
        assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
        serving::json(&body)
    };
    // A write that waits for its cosigned checkpoint: proven under it.
    let v = post(&server.addr, 0, "?wait=cosigned");
    assert_eq!(v["cosigned"], true, "{v}");
    let note = v["checkpoint"].as_str().unwrap().as_bytes().to_vec();
    let policy =
        chit_log::policy::Policy::parse(&std::fs::read(d.join("witnessed.policy")).unwrap())
            .unwrap();
    let w = policy.verify(&note).unwrap();
    let mut who: Vec<usize> = w.cosigned.iter().map(|(i, _)| *i).collect();
    who.sort();
    assert_eq!(who, vec![0, 1], "A and B cosigned, the liar did not");
    // Without waiting, an answer says whether its checkpoint is cosigned.
    for n in 1..20 {
        let v = post(&server.addr, n, "");
        assert!(v["cosigned"].is_boolean(), "{v}");
    }
    await_cosigned(&server.addr, 20);

    // B down: the quorum waits, writes go on, nothing is lost.
    let mut b = b;
    b.child.kill().unwrap();
    b.child.wait().unwrap();
    for n in 20..30 {
        let v = post(&server.addr, n, "");
        assert_eq!(v["cosigned"], false, "{v}");
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let (_, note) = http(&server.addr, "GET", "/checkpoint", &[], b"");
    assert_eq!(checkpoint_size(&note), 20, "no quorum without B");
    let (_, metrics) = http(&server.addr, "GET", "/metrics", &[], b"");
    let metrics = String::from_utf8(metrics).unwrap();
    assert!(
        metrics.contains("chit_witness_failures_total{witness=\"L\"}"),
        "{metrics}"
    );
    let failed = |m: &str, w: &str| -> u64 {
        let key = format!("chit_witness_failures_total{{witness=\"{w}\"}} ");
        m.lines()
            .find_map(|l| l.strip_prefix(&key))
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(failed(&metrics, "L") > 0, "{metrics}");
    assert!(failed(&metrics, "B") > 0, "{metrics}");
    assert_eq!(failed(&metrics, "A"), 0, "{metrics}");

    // B back on its own store, at its address: it resumes from the size it
    // stored, and the quorum covers every entry.
    let b = witness_named(d, "b.pem", "witness.example/b", "b.db", &b_addr);
    assert_eq!(vkey_of(&b), b_key);
    let note = await_cosigned(&server.addr, 30);
    assert_eq!(policy.verify(&note).unwrap().cosigned.len(), 2);

    // The server restarted: what it gathered is in the store.
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let server_log = std::fs::File::create(d.join("serve2.log")).unwrap();
    let server = serving::start(d, &serve_args, &[], server_log.into());
    let (_, again) = http(&server.addr, "GET", "/checkpoint", &[], b"");
    assert_eq!(checkpoint_size(&again), 30);
    assert!(policy.verify(&again).is_ok());
    // A proof from the served log, verified offline under the policy; and
    // one from the store, over the checkpoint the witnesses cosigned.
    let proof = common::chit_raw(
        d,
        &["log", "proof", "7", &format!("http://{}", server.addr)],
        None,
    );
    assert_eq!(proof.code, 0);
    std::fs::write(d.join("e7.tlog-proof"), &proof.stdout).unwrap();
    let entry = common::chit_raw(d, &["log", "get", "--store", "r.db", "7"], None);
    std::fs::write(d.join("e7.json"), &entry.stdout).unwrap();
    let v = common::chit_in(
        d,
        &[
            "verify",
            "--policy",
            "witnessed.policy",
            "--proof",
            "e7.tlog-proof",
            "e7.json",
        ],
        None,
    );
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    drop(server);
    let stored = common::chit_raw(
        d,
        &[
            "log",
            "proof",
            "--store",
            "r.db",
            "--policy",
            "witnessed.policy",
            "7",
        ],
        None,
    );
    assert_eq!(stored.code, 0);
    std::fs::write(d.join("s7.tlog-proof"), &stored.stdout).unwrap();
    let v = common::chit_in(
        d,
        &[
            "verify",
            "--policy",
            "witnessed.policy",
            "--proof",
            "s7.tlog-proof",
            "e7.json",
        ],
        None,
    );
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    drop((a, b));
}
