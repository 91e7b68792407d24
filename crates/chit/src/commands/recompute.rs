//! `chit packets recompute`: re-run a packet's workload and sign the result.

use crate::cli::RecomputeArgs;
use crate::exit::{CmdResult, Failure};
use crate::inputs::{self, Source};
use crate::output::Output;
use chit_core::digest::Hasher;
use chit_core::json;
use chit_core::kinds::recompute::{self, PacketToRerun, Rerun, RerunError};
use chit_core::kinds::treeship::statement::{self, Claim};
use std::io::{Read, Write};
use std::process::{Command, Stdio};

/// The most input read into memory when it is not a regular file.
const INPUT_IN_MEMORY: u64 = 1 << 30;

fn digest_reader(
    claimed: &str,
    mut r: impl Read,
    mut copy: Option<&mut Vec<u8>>,
) -> Result<String, String> {
    let mut h = Hasher::like(claimed).map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = r.read(&mut buf).map_err(|e| inputs::describe_io(&e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        if let Some(c) = copy.as_deref_mut() {
            c.extend_from_slice(&buf[..n]);
        }
    }
    Ok(h.finish())
}

/// The signed packet to re-run, checked first (exit 1 if it is not valid).
fn read_packet(a: &RecomputeArgs) -> Result<PacketToRerun, Failure> {
    let limits = a.limits.limits();
    let label = a.packet.display().to_string();
    let bytes = inputs::read(&Source::File(a.packet.clone()), limits.max_size)
        .map_err(|why| Failure::error(format!("cannot read {label}: {why}")))?;
    let doc = json::parse(&bytes, &limits)
        .map_err(|e| Failure::error(format!("cannot read {label}: {e}")))?;
    let trust = match &a.trust {
        Some(p) => Some(crate::shared::trust::read_trust(p, limits.max_size)?),
        None => None,
    };
    let ctx = chit_core::Context {
        limits,
        ..recompute::rerun_context(trust.as_ref())
    };
    let checked = chit_core::check(&bytes, &ctx)
        .map_err(|e| Failure::error(format!("cannot read {label}: {e}")))?;
    let packet = recompute::packet_to_rerun(&doc, &checked, trust.is_some()).map_err(|e| match e {
        RerunError::Breaks(rules) => Failure::invalid(format!(
            "the packet {label} is not valid: it breaks {} (run 'chit verify' on it for the details)",
            rules.join(", ")
        )),
        e => Failure::invalid(format!("{label} is {e}")),
    })?;
    if trust.is_none() {
        eprintln!(
            "chit: warning: the packet's signature was not checked (give --trust FILE to check it)"
        );
    }
    Ok(packet)
}

pub fn run(a: &RecomputeArgs, out: &mut Output) -> CmdResult {
    if let Some(path) = &a.out {
        crate::files::check(path, crate::files::Replace::IfForced(a.force))?;
    }
    let key = crate::shared::keys::read_key(&a.key)?;
    let packet = read_packet(a)?;
    let (input_digest, output_digest, claim) = (
        packet.input_digest.clone(),
        packet.output_digest.clone(),
        packet.reproducibility.clone(),
    );

    // The input must be the packet's. It is read once: a regular file is
    // hashed, rewound and handed to the workload as the same open file (no
    // second open, so no other file can take its place); anything else (a
    // pipe) is read into memory first.
    let cannot_read = |e: std::io::Error| {
        Failure::error(format!(
            "cannot read {}: {}",
            a.input.display(),
            inputs::describe_io(&e)
        ))
    };
    let mut file = std::fs::File::open(&a.input).map_err(cannot_read)?;
    let regular = file.metadata().is_ok_and(|m| m.is_file());
    let mut held = Vec::new();
    let got = if regular {
        let d = digest_reader(&input_digest, &mut file, None).map_err(Failure::error)?;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(0))
            .map_err(|e| Failure::error(format!("cannot rewind {}: {e}", a.input.display())))?;
        d
    } else {
        (&mut file)
            .take(INPUT_IN_MEMORY + 1)
            .read_to_end(&mut held)
            .map_err(cannot_read)?;
        if held.len() as u64 > INPUT_IN_MEMORY {
            return Err(Failure::error(format!(
                "{} is not a regular file and is over {INPUT_IN_MEMORY} bytes",
                a.input.display()
            )));
        }
        digest_reader(&input_digest, held.as_slice(), None).map_err(Failure::error)?
    };
    if got != input_digest {
        return Err(Failure::invalid(format!(
            "{} is not the packet's input: its digest is {got}, the packet's {input_digest}",
            a.input.display()
        )));
    }

    // Run the workload with the input on its standard input.
    let (program, args) = a
        .command
        .split_first()
        .ok_or_else(|| Failure::error("no command given after --"))?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| {
            Failure::error(format!("cannot run {program}: {}", inputs::describe_io(&e)))
        })?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| Failure::error("no stdin for the command"))?;
    let feeder = std::thread::spawn(move || -> std::io::Result<()> {
        let fed = if regular {
            std::io::copy(&mut file, &mut stdin).map(|_| ())
        } else {
            stdin.write_all(&held)
        };
        match fed {
            // The workload stopped reading: its output says what it did.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        }
    });
    let keep_output = claim == "bounded" && a.distance_cmd.is_some();
    let mut output = Vec::new();
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| Failure::error("no stdout from the command"))?;
    let recomputed = digest_reader(&output_digest, stdout, keep_output.then_some(&mut output))
        .map_err(Failure::error);
    let status = child
        .wait()
        .map_err(|e| Failure::error(format!("waiting for {program}: {e}")))?;
    let _ = feeder.join();
    let recomputed = recomputed?;

    let distance = match (&a.distance_cmd, a.max_distance) {
        (Some(cmd), Some(max)) if status.success() && claim == "bounded" => {
            Some((distance(cmd, &output)?, max))
        }
        _ => None,
    };
    let rerun = Rerun {
        failed: (!status.success()).then(|| status.to_string()),
        output_digest: recomputed,
        distance,
    };
    let (verdict, result) = recompute::result(
        &packet,
        &rerun,
        chit_core::time::format_unix_utc(crate::shared::envelopes::now_secs()),
    );
    let claim = Claim {
        kind: recompute::KIND,
        system: "chit://recompute",
        subject: Some(&packet.art_id),
        at_unix_secs: crate::shared::envelopes::now_secs(),
    };
    let env = statement::sign(&key, claim, result).map_err(|e| Failure::error(e.to_string()))?;
    crate::shared::envelopes::write_envelope(&env, a.out.as_deref(), a.force, out, |path, art| {
        format!(
            "{verdict}: wrote {} {art} (checks {})",
            path.display(),
            packet.art_id
        )
    })
}

/// Runs the distance command with the recomputed output on its standard
/// input; it prints one number.
fn distance(cmd: &str, output: &[u8]) -> Result<f64, Failure> {
    let mut child = Command::new("sh")
        .args(["-c", cmd])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| Failure::error(format!("cannot run --distance-cmd: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(output);
    }
    let o = child
        .wait_with_output()
        .map_err(|e| Failure::error(format!("--distance-cmd: {e}")))?;
    if !o.status.success() {
        return Err(Failure::error(format!(
            "--distance-cmd exited with {}",
            o.status
        )));
    }
    let text = String::from_utf8_lossy(&o.stdout);
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|d| d.is_finite())
        .ok_or_else(|| {
            Failure::error(format!(
                "--distance-cmd printed {:?}, not a number",
                text.trim()
            ))
        })
}
