//! The binary gives exactly the core's verdicts: the same inputs through
//! `chit_core::check` (and `chit_core::across::Across`) and through
//! `chit verify --json` give byte-identical JSON lines, over the whole
//! run-receipt parity corpus (8,000 cases) and the 6,000 Lattice parity
//! cases. The CLI holds no verdict logic of its own, so any difference
//! here is one.

mod common;

use chit_core::across::{Across, Origin};
use chit_core::report::json::{cross_line, verdict_line};
use chit_core::{check, Context};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Writes each case to its own file in `dir` (names sort in case order).
fn write_cases<'a>(dir: &Path, cases: impl Iterator<Item = &'a [u8]>) -> Vec<(String, Vec<u8>)> {
    cases
        .enumerate()
        .map(|(i, text)| {
            let path = dir.join(format!("case-{i:05}.json"));
            std::fs::write(&path, text).unwrap();
            (path.display().to_string(), text.to_vec())
        })
        .collect()
}

/// What the core says of `files` under `ctx`, as `chit verify --json` lines.
fn core_lines(files: &[(String, Vec<u8>)], ctx: Context) -> Vec<u8> {
    let mut across = Across::new(None)
        .trusted(ctx.trust.is_some())
        .allow_unchecked(ctx.allow_unchecked);
    let mut out = Vec::new();
    for (name, bytes) in files {
        let ctx = Context {
            expected_art: chit_core::envelope::art_id_in_file_name(name),
            ..ctx
        };
        match check(bytes, &ctx) {
            Ok(c) => {
                verdict_line(
                    Some(name),
                    None,
                    c.artifact_id.as_deref(),
                    Ok(&c.report),
                    &mut out,
                );
                across.add_checked(Origin::new(name.as_str(), None), c);
            }
            Err(e) => verdict_line(Some(name), None, None, Err(&e.explained()), &mut out),
        }
    }
    for c in across.finish() {
        cross_line(c.subject.name(), &c.name, c.status, &c.report, &mut out);
    }
    out
}

/// What the binary says of the folder, given `args` too.
fn binary_lines(dir: &Path, args: &[&str]) -> (i32, Vec<u8>) {
    let o = Command::new(env!("CARGO_BIN_EXE_chit"))
        .args(["verify", "--json"])
        .args(args)
        .arg(dir)
        .output()
        .expect("chit runs");
    let code = o.status.code().expect("chit exits");
    assert_ne!(
        code,
        101,
        "chit panicked: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (code, o.stdout)
}

fn assert_same(core: &[u8], binary: &[u8], cases: usize) {
    let core: Vec<&[u8]> = core.split(|&b| b == b'\n').collect();
    let binary: Vec<&[u8]> = binary.split(|&b| b == b'\n').collect();
    assert!(core.len() > cases, "{} lines for {cases} cases", core.len());
    for (i, (c, b)) in core.iter().zip(&binary).enumerate() {
        assert_eq!(
            String::from_utf8_lossy(c),
            String::from_utf8_lossy(b),
            "line {} differs",
            i + 1
        );
    }
    assert_eq!(core.len(), binary.len(), "the line counts differ");
}

#[test]
fn the_binary_gives_the_cores_verdicts_on_the_run_receipt_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let cases = chit_corpus::cases(2026, 8000);
    let files = write_cases(dir.path(), cases.iter().map(|c| c.text.as_bytes()));
    let core = core_lines(&files, Context::default());
    let (code, binary) = binary_lines(dir.path(), &[]);
    assert_same(&core, &binary, files.len());
    // Both kinds of verdict occur, so the comparison means something.
    let text = String::from_utf8_lossy(&core);
    assert!(text.contains("\"valid\":true") && text.contains("\"valid\":false"));
    assert_eq!(code, 1, "some cases are invalid");
}

#[test]
fn the_binary_gives_the_cores_verdicts_on_the_lattice_cases() {
    let dir = tempfile::tempdir().unwrap();
    let cases = chit_corpus::lattice_cases(2026, 6000);
    let files = write_cases(dir.path(), cases.iter().map(|c| c.text.as_bytes()));
    let core = core_lines(&files, Context::default());
    let (code, binary) = binary_lines(dir.path(), &[]);
    assert_same(&core, &binary, files.len());
    let text = String::from_utf8_lossy(&core);
    // Unreadable cases (duplicate keys, truncation), invalid and valid ones,
    // and rebinds across packets are all compared.
    assert!(text.contains("\"rule\":\"read\""));
    assert!(text.contains("\"valid\":true") && text.contains("\"valid\":false"));
    assert!(text.contains("{\"rebind\":"));
    assert_eq!(code, 2, "some cases are unreadable");
}

#[test]
fn the_binary_gives_the_cores_verdicts_on_a_signed_stream() {
    use chit_core::keys::SecretKey;
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    let key = SecretKey::from_seed(&[7; 32]);
    let stranger = SecretKey::from_seed(&[8; 32]);
    let mut texts: Vec<Vec<u8>> = Vec::new();
    for seq in 0..300u64 {
        if seq == 17 {
            continue; // a gap: P3
        }
        let signer = if seq == 40 { &stranger } else { &key };
        let mut text = chit_corpus::signed_packet(signer, "s1", seq).into_bytes();
        if seq == 5 {
            // A payload byte changed after signing.
            let at = text
                .windows(9)
                .position(|w| w == b"payload\":")
                .unwrap_or(20)
                + 12;
            text[at] = if text[at] == b'A' { b'B' } else { b'A' };
        }
        texts.push(text);
    }
    let mut files = write_cases(&inputs, texts.iter().map(Vec::as_slice));
    // Filed under its art id, and under a wrong one.
    for (i, (name, bytes)) in files.iter_mut().enumerate().take(2) {
        let env = chit_core::json::parse(bytes, &Default::default()).unwrap();
        let mut r = chit_core::Report::new("");
        let art = chit_core::envelope::Envelope::read(&env, &mut r)
            .unwrap()
            .ids()
            .artifact_id;
        let art = if i == 0 {
            art
        } else {
            format!("art_{}", "0".repeat(32))
        };
        let named = inputs.join(format!("case-{i:05}__{art}.json"));
        std::fs::rename(name.as_str(), &named).unwrap();
        *name = named.display().to_string();
    }
    files.sort();
    let trust_file = dir.path().join("trust.toml");
    std::fs::write(
        &trust_file,
        format!(
            "[[key]]\nname = \"me\"\npublic_key = \"{}\"\n",
            key.public().treeship()
        ),
    )
    .unwrap();
    let trust =
        chit_core::trust::Trust::parse(&std::fs::read_to_string(&trust_file).unwrap()).unwrap();
    let ctx = Context {
        trust: Some(&trust),
        ..Context::default()
    };
    let core = core_lines(&files, ctx);
    let trust_arg = trust_file.display().to_string();
    let (code, binary) = binary_lines(&inputs, &["--trust", &trust_arg]);
    assert_same(&core, &binary, files.len());
    let text = String::from_utf8_lossy(&core);
    for rule in ["signature", "art", "P3"] {
        assert!(
            text.contains(&format!("\"rule\":\"{rule}\"")),
            "{rule} never fires"
        );
    }
    assert!(text.contains("{\"stream\":\"s1\""));
    assert_eq!(code, 1);
}

/// `POST /v1/verify` answers with the verdict line `chit verify --json`
/// gives for the same input under the log's policy (here: none), its
/// `file` "request": over the whole run-receipt and Lattice corpora, the
/// shipped examples, and log bundles of the server's own log, which it
/// proves as `chit verify --log-key` does (a forged one, and one of
/// another log, included).
#[test]
fn the_server_gives_chit_verifys_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log_key = common::log_init(d, "s.db", "log.pem", "one.example/log");
    // Entries to bundle: the examples' run receipts and Lattice packet.
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let logged = ["run-receipts/agreed-verified.json", "lattice/packet.json"];
    for (i, name) in logged.iter().enumerate() {
        std::fs::copy(examples.join(name), d.join(format!("e{i}.json"))).unwrap();
    }
    let append = common::chit_in(
        d,
        &["log", "append", "--store", "s.db", "e0.json", "e1.json"],
        None,
    );
    assert_eq!(append.code, 0, "{}", append.stdout);
    let server = common::serving::start(
        d,
        &[
            "serve",
            "--store",
            "s.db",
            "--listen",
            "127.0.0.1:0",
            "--quiet",
        ],
        &[],
        std::process::Stdio::null(),
    );
    // The inputs, each in a file of its own.
    let inputs = d.join("in");
    std::fs::create_dir(&inputs).unwrap();
    let mut texts: Vec<Vec<u8>> = chit_corpus::cases(2026, 8000)
        .into_iter()
        .map(|c| c.text.into_bytes())
        .collect();
    texts.extend(
        chit_corpus::lattice_cases(2026, 6000)
            .into_iter()
            .map(|c| c.text.into_bytes()),
    );
    for e in walk(&examples) {
        texts.push(std::fs::read(e).unwrap());
    }
    let files = write_cases(&inputs, texts.iter().map(Vec::as_slice));
    let (_, binary) = binary_lines(&inputs, &[]);
    assert_server_says(&server.addr, &files, &binary);
    // Log bundles: proven with the log's key, as chit verify --log-key.
    let bundles = d.join("bundles");
    std::fs::create_dir(&bundles).unwrap();
    let mut files = Vec::new();
    for index in ["0", "1"] {
        let b = common::chit_in(d, &["log", "bundle", "--store", "s.db", index], None);
        assert_eq!(b.code, 0, "{}", b.stderr);
        let path = bundles.join(format!("b{index}.json"));
        std::fs::write(&path, &b.stdout).unwrap();
        files.push((path.display().to_string(), b.stdout.into_bytes()));
    }
    // The entry swapped for another receipt's: its inclusion fails.
    let mut v: Value = serde_json::from_slice(&files[0].1).unwrap();
    v["entry"] = serde_json::from_slice::<Value>(&files[1].1).unwrap()["entry"].clone();
    let forged = serde_json::to_vec(&v).unwrap();
    // Both in one file: one verdict over the two.
    let both = format!(
        "[{},{}]",
        String::from_utf8_lossy(&files[0].1).trim(),
        String::from_utf8_lossy(&files[1].1).trim()
    );
    for (name, bytes) in [("forged.json", forged), ("both.json", both.into_bytes())] {
        let path = bundles.join(name);
        std::fs::write(&path, &bytes).unwrap();
        files.push((path.display().to_string(), bytes));
    }
    files.sort();
    let (_, binary) = binary_lines(&bundles, &["--log-key", &log_key]);
    assert_server_says(&server.addr, &files, &binary);
    let text = String::from_utf8_lossy(&binary);
    assert!(text.contains("\"rule\":\"log-inclusion\""), "{text}");
    assert!(text.contains("\"valid\":true"), "{text}");
    // A bundle of another log: its checkpoint is not this log's.
    let other = tempfile::tempdir().unwrap();
    let other_key = common::log_init(other.path(), "o.db", "o.pem", "other.example/log");
    std::fs::copy(examples.join(logged[0]), other.path().join("r.json")).unwrap();
    assert_eq!(
        common::chit_in(
            other.path(),
            &["log", "append", "--store", "o.db", "r.json"],
            None
        )
        .code,
        0
    );
    let b = common::chit_in(
        other.path(),
        &["log", "bundle", "--store", "o.db", "0"],
        None,
    );
    let path = other.path().join("b.json");
    std::fs::write(&path, &b.stdout).unwrap();
    let (_, binary) = binary_lines(&path, &["--log-key", &log_key]);
    let file = vec![(path.display().to_string(), b.stdout.into_bytes())];
    assert_server_says(&server.addr, &file, &binary);
    assert!(String::from_utf8_lossy(&binary).contains("\"rule\":\"log-checkpoint\""));
    let (code, _) = binary_lines(&path, &["--log-key", &other_key]);
    assert_eq!(code, 0, "its own log's key proves it");
}

/// Every file below `dir`, sorted.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Each file's verdict line in `binary` (chit verify --json's output for
/// `files`) is, byte for byte, what `POST /v1/verify` answers for its
/// bytes, but for `file`, which the server calls "request"; and the
/// answer's status says the same (200 valid, 400 unreadable, else 422).
fn assert_server_says(addr: &str, files: &[(String, Vec<u8>)], binary: &[u8]) {
    let lines: std::collections::HashMap<String, (String, String)> = binary
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| {
            let v: Value = serde_json::from_slice(l).unwrap();
            let file = v.get("file")?.as_str()?.to_string();
            let status = v["status"].as_str().unwrap().to_string();
            let prefix = format!("{{\"file\":{}", serde_json::to_string(&file).unwrap());
            let text = String::from_utf8(l.to_vec()).unwrap();
            let rest = text.strip_prefix(&prefix).expect("file first").to_string();
            Some((file, (format!("{{\"file\":\"request\"{rest}"), status)))
        })
        .collect();
    assert_eq!(lines.len(), files.len(), "a verdict line a file");
    let chunks: Vec<&[(String, Vec<u8>)]> = files.chunks(files.len().div_ceil(4)).collect();
    std::thread::scope(|s| {
        for chunk in chunks {
            let lines = &lines;
            s.spawn(move || {
                for (name, bytes) in chunk {
                    let (code, answer) =
                        common::serving::http(addr, "POST", "/v1/verify", &[], bytes);
                    let (want, status) = &lines[name];
                    assert_eq!(String::from_utf8_lossy(&answer).trim_end(), want, "{name}");
                    let expected = match status.as_str() {
                        "valid" => 200,
                        "unreadable" => 400,
                        _ => 422,
                    };
                    assert_eq!(code, expected, "{name}: {status}");
                }
            });
        }
    });
}
