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
                    name,
                    None,
                    c.artifact_id.as_deref(),
                    Ok(&c.report),
                    &mut out,
                );
                across.add_checked(Origin::new(name.as_str(), None), c);
            }
            Err(e) => verdict_line(name, None, None, Err(&e.to_string()), &mut out),
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
