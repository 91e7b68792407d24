//! `chit packets recompute`: re-run a packet's workload and sign the result.

use crate::cli::RecomputeArgs;
use crate::inputs::{self, Source};
use crate::keycmd;
use crate::Fail;
use chit_core::envelope::Envelope;
use chit_core::{json, Limits, Report};
use serde_json::{json, Map, Value};
use sha2::Digest;
use std::io::{Read, Write};
use std::process::{Command, Stdio};

/// The most input read into memory when it is not a regular file.
const INPUT_IN_MEMORY: u64 = 1 << 30;

/// A running digest in one of the algorithms a packet may name.
enum Hasher {
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
}

impl Hasher {
    fn for_digest(d: &str) -> Result<(&str, Hasher), String> {
        let alg = d.split_once(':').map(|(a, _)| a).unwrap_or("");
        let h = match alg {
            "sha256" => Hasher::Sha256(sha2::Sha256::new()),
            "sha384" => Hasher::Sha384(sha2::Sha384::new()),
            "sha512" => Hasher::Sha512(sha2::Sha512::new()),
            _ => {
                return Err(format!(
                    "chit cannot compute {alg:?} digests (it computes sha256, sha384 and sha512)"
                ))
            }
        };
        Ok((alg, h))
    }
    fn update(&mut self, b: &[u8]) {
        match self {
            Hasher::Sha256(h) => h.update(b),
            Hasher::Sha384(h) => h.update(b),
            Hasher::Sha512(h) => h.update(b),
        }
    }
    fn finish(self, alg: &str) -> String {
        let bytes: Vec<u8> = match self {
            Hasher::Sha256(h) => h.finalize().to_vec(),
            Hasher::Sha384(h) => h.finalize().to_vec(),
            Hasher::Sha512(h) => h.finalize().to_vec(),
        };
        format!("{alg}:{}", chit_core::digest::hex(&bytes))
    }
}

fn digest_reader(
    claimed: &str,
    mut r: impl Read,
    mut copy: Option<&mut Vec<u8>>,
) -> Result<String, String> {
    let (alg, mut h) = Hasher::for_digest(claimed)?;
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
    Ok(h.finish(alg))
}

/// The packet inside an envelope, with the envelope's art id.
struct Packet {
    art_id: String,
    payload: Value,
}

fn read_packet(a: &RecomputeArgs) -> Result<Packet, Fail> {
    let limits = Limits::default();
    let label = a.packet.display().to_string();
    let bytes = inputs::read(&Source::File(a.packet.clone()), limits.max_size)
        .map_err(|why| Fail(2, format!("cannot read {label}: {why}")))?;
    let doc =
        json::parse(&bytes, &limits).map_err(|e| Fail(2, format!("cannot read {label}: {e}")))?;
    if !chit_core::envelope::looks_like_envelope(&doc) {
        return Err(Fail(
            1,
            format!("{label} is not a signed envelope (payload, payloadType, signatures)"),
        ));
    }
    let trust = match &a.trust {
        Some(p) => Some(crate::verify::read_trust(p)?),
        None => None,
    };
    let policy = chit_core::statement::Policy {
        trust: trust.as_ref(),
        threshold: 1,
        expected_art: None,
        limits: &limits,
        source: &chit_core::streams::Origin::new(label.as_str(), None),
        expected_kind: Some(chit_core::kinds::packet::KIND),
    };
    let checked = chit_core::statement::check(&doc, &policy);
    let mut errors: Vec<&str> = checked.report.errors.iter().map(|f| f.rule).collect();
    if trust.is_none() {
        eprintln!(
            "chit: warning: the packet's signature was not checked (give --trust FILE to check it)"
        );
        errors.retain(|r| *r != "trust");
    }
    errors.sort_unstable();
    errors.dedup();
    if !errors.is_empty() {
        return Err(Fail(
            1,
            format!("the packet {label} is not valid: it breaks {} (run 'chit verify' on it for the details)", errors.join(", ")),
        ));
    }
    if checked.statement_kind.as_deref() != Some(chit_core::kinds::packet::KIND) {
        return Err(Fail(
            1,
            format!("{label} is not a verification.packet.v1 receipt"),
        ));
    }
    let mut env_report = Report::new("envelope");
    let env = Envelope::read(&doc, &mut env_report)
        .ok_or_else(|| Fail(1, format!("{label}: unreadable envelope")))?;
    let statement: Value =
        serde_json::from_slice(&env.payload).map_err(|e| Fail(1, format!("{label}: {e}")))?;
    Ok(Packet {
        art_id: env.ids().artifact_id,
        payload: statement["payload"].clone(),
    })
}

pub fn run(a: &RecomputeArgs, out: &mut dyn Write) -> Result<i32, Fail> {
    let key = keycmd::read_key(&a.key)?;
    let packet = read_packet(a)?;
    let field = |k: &str| packet.payload[k].as_str().unwrap_or("").to_owned();
    let (input_digest, output_digest, claim) = (
        field("input_digest"),
        field("output_digest"),
        field("reproducibility"),
    );

    // The input must be the packet's. It is read once: a regular file is
    // hashed, rewound and handed to the workload as the same open file (no
    // second open, so no other file can take its place); anything else (a
    // pipe) is read into memory first.
    let cannot_read = |e: std::io::Error| {
        Fail(
            2,
            format!(
                "cannot read {}: {}",
                a.input.display(),
                inputs::describe_io(&e)
            ),
        )
    };
    let mut file = std::fs::File::open(&a.input).map_err(cannot_read)?;
    let regular = file.metadata().is_ok_and(|m| m.is_file());
    let mut held = Vec::new();
    let got = if regular {
        let d = digest_reader(&input_digest, &mut file, None).map_err(|e| Fail(2, e))?;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(0))
            .map_err(|e| Fail(2, format!("cannot rewind {}: {e}", a.input.display())))?;
        d
    } else {
        (&mut file)
            .take(INPUT_IN_MEMORY + 1)
            .read_to_end(&mut held)
            .map_err(cannot_read)?;
        if held.len() as u64 > INPUT_IN_MEMORY {
            return Err(Fail(
                2,
                format!(
                    "{} is not a regular file and is over {INPUT_IN_MEMORY} bytes",
                    a.input.display()
                ),
            ));
        }
        digest_reader(&input_digest, held.as_slice(), None).map_err(|e| Fail(2, e))?
    };
    if got != input_digest {
        return Err(Fail(
            1,
            format!(
                "{} is not the packet's input: its digest is {got}, the packet's {input_digest}",
                a.input.display()
            ),
        ));
    }

    // Run the workload with the input on its standard input.
    let (program, args) = a
        .command
        .split_first()
        .ok_or_else(|| Fail(2, "no command given after --".into()))?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| {
            Fail(
                2,
                format!("cannot run {program}: {}", inputs::describe_io(&e)),
            )
        })?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| Fail(2, "no stdin for the command".into()))?;
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
        .ok_or_else(|| Fail(2, "no stdout from the command".into()))?;
    let recomputed = digest_reader(&output_digest, stdout, keep_output.then_some(&mut output))
        .map_err(|e| Fail(2, e));
    let status = child
        .wait()
        .map_err(|e| Fail(2, format!("waiting for {program}: {e}")))?;
    let _ = feeder.join();
    let recomputed = recomputed?;

    let mut result = Map::new();
    result.insert("schema".into(), "verification.recompute.v1".into());
    result.insert("packet".into(), packet.art_id.clone().into());
    result.insert("packet_id".into(), field("packet_id").into());
    result.insert(
        "method".into(),
        if claim.is_empty() {
            "none".into()
        } else {
            claim.clone().into()
        },
    );
    let (verdict, notes): (&str, Option<String>) = if !status.success() {
        (
            "inconclusive",
            Some(format!("the workload exited with {status}")),
        )
    } else {
        result.insert("output_digest_recomputed".into(), recomputed.clone().into());
        match claim.as_str() {
            "bit_exact" => (
                if recomputed == output_digest {
                    "match"
                } else {
                    "mismatch"
                },
                None,
            ),
            "bounded" => match (&a.distance_cmd, a.max_distance) {
                (Some(cmd), Some(max)) => {
                    let d = distance(cmd, &output)?;
                    result.insert("distance".into(), json!(d));
                    result.insert("threshold".into(), json!(max));
                    (if d <= max { "match" } else { "mismatch" }, None)
                }
                _ => (
                    "inconclusive",
                    Some(
                        "a bounded claim needs --distance-cmd and --max-distance to decide".into(),
                    ),
                ),
            },
            _ => (
                "inconclusive",
                Some("the packet claims no reproducibility, so nothing decides a match".into()),
            ),
        }
    };
    result.insert("verdict".into(), verdict.into());
    if let Some(n) = notes {
        result.insert("notes".into(), n.into());
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    result.insert(
        "recomputed_at".into(),
        chit_core::time::format_unix_utc(now).into(),
    );

    let env = keycmd::sign_statement(
        &key,
        "verification.recompute.v1",
        "chit://recompute",
        Some(&packet.art_id),
        Value::Object(result),
    )?;
    keycmd::write_envelope(&env, a.out.as_deref(), out, |path, art| {
        format!(
            "{verdict}: wrote {} {art} (checks {})",
            path.display(),
            packet.art_id
        )
    })
}

/// Runs the distance command with the recomputed output on its standard
/// input; it prints one number.
fn distance(cmd: &str, output: &[u8]) -> Result<f64, Fail> {
    let mut child = Command::new("sh")
        .args(["-c", cmd])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| Fail(2, format!("cannot run --distance-cmd: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(output);
    }
    let o = child
        .wait_with_output()
        .map_err(|e| Fail(2, format!("--distance-cmd: {e}")))?;
    if !o.status.success() {
        return Err(Fail(2, format!("--distance-cmd exited with {}", o.status)));
    }
    let text = String::from_utf8_lossy(&o.stdout);
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|d| d.is_finite())
        .ok_or_else(|| {
            Fail(
                2,
                format!("--distance-cmd printed {:?}, not a number", text.trim()),
            )
        })
}
