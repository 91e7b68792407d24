//! Output a person and a program can trust: names escaped, the progress bar
//! out of the way, a closed pipe ended quietly, summaries that count every
//! failure, Markdown as complete as human text, limits applied everywhere.

mod common;

use common::{chit_in, example_text};
use std::path::Path;

const GOOD: &str = "agreed-verified.json";

/// A schema-valid packet of stream `s`, its `prev_packet_id` the packet
/// before it in sequence.
fn packet(seq: u64) -> String {
    let prev = match seq {
        0 => "null".to_string(),
        n => format!("\"p{}\"", n - 1),
    };
    format!(
        "{{\"schema\":\"verification.packet.v1\",\"packet_id\":\"p{seq}\",\"stream_id\":\"s\",\"sequence\":{seq},\"prev_packet_id\":{prev},\
         \"model_digest\":\"sha256:{m}\",\"input_digest\":\"sha256:{m}\",\"output_digest\":\"sha256:{m}\",\"produced_at\":\"2026-11-30T09:00:0{seq}Z\"}}\n",
        m = "a".repeat(64)
    )
}

/// Writes packets with these sequence numbers into `dir/packets/`.
fn packets(dir: &Path, seqs: &[u64]) {
    let d = dir.join("packets");
    std::fs::create_dir_all(&d).unwrap();
    for &n in seqs {
        std::fs::write(d.join(format!("p{n}.json")), packet(n)).unwrap();
    }
}

// 15. A file name cannot forge a line of human output.
#[test]
fn control_characters_in_names_are_escaped_in_human_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("evil\nVALID all-good.json"), "{").unwrap();
    std::fs::write(d.join("cr\rVALID also-good.json"), "{").unwrap();
    std::fs::write(d.join("esc\u{1b}[2Jx.json"), "{").unwrap();
    let run = chit_in(d, &["verify", "--color", "never", "."], None);
    assert_eq!(run.code, 2, "{}", run.stdout);
    for line in run.stdout.lines() {
        assert!(
            !line.starts_with("VALID"),
            "a forged line: {line:?} in {}",
            run.stdout
        );
    }
    assert!(!run.stdout.contains('\r') && !run.stdout.contains('\u{1b}'));
    assert!(
        run.stdout
            .contains("UNREADABLE ./evil\\nVALID all-good.json\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("UNREADABLE ./cr\\rVALID also-good.json\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("UNREADABLE ./esc\\x1b[2Jx.json\n"),
        "{}",
        run.stdout
    );
}
