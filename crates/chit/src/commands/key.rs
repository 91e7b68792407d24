//! `chit keygen` and `chit key show`.

use crate::cli::{KeyAlgorithm, KeygenArgs};
use crate::exit::{CmdResult, Exit, Failure};
use crate::files;
use crate::inputs;
use crate::output::Output;
use chit_core::keys::SecretKey;
use chit_log::cosignature;
use std::io::Write;
use std::path::Path;

pub fn keygen(a: &KeygenArgs, out: &mut Output) -> CmdResult {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .map_err(|e| Failure::error(format!("no randomness from the system: {e}")))?;
    match a.algorithm {
        KeyAlgorithm::Ed25519 => {
            let key = SecretKey::from_seed(&seed);
            seed.fill(0);
            let pem = key.to_pem().map_err(|e| Failure::error(e.to_string()))?;
            write_key(&a.out, &pem)?;
            writeln!(out, "wrote {} (keep it secret)", a.out.display()).map_err(Failure::write)?;
            show_public(&key, out)
        }
        KeyAlgorithm::MlDsa44 => {
            let pem = cosignature::mldsa44_pem_from_seed(&seed);
            seed.fill(0);
            write_key(&a.out, &pem)?;
            writeln!(
                out,
                "wrote {f} (keep it secret)\n\
                 an ML-DSA-44 witness key, for 'chit witness serve --key {f} --name NAME'; its \
                 verifier key depends on the name the witness is given, and the witness prints \
                 it when it starts",
                f = a.out.display()
            )
            .map_err(Failure::write)?;
            Ok(Exit::Ok)
        }
    }
}

/// Writes a new private key file, never over an existing one.
fn write_key(path: &Path, pem: &str) -> Result<(), Failure> {
    files::write_private(path, pem.as_bytes()).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Failure::error(format!(
                "{} exists; chit never overwrites a key (choose another --out)",
                path.display()
            ))
        } else {
            Failure::error(format!(
                "cannot write {}: {}",
                path.display(),
                inputs::describe_io(&e)
            ))
        }
    })
}

pub fn show(path: &Path, out: &mut Output) -> CmdResult {
    match crate::shared::keys::read_key(path) {
        Ok(key) => show_public(&key, out),
        Err(failure) => match mldsa44_public_key(path) {
            Some(public) => {
                let digest = chit_core::digest::sha256_hex(&public);
                write!(
                    out,
                    "type        ML-DSA-44 witness key (its verifier key names the witness: \
                     chit witness serve prints it)\npublic key  sha256:{digest}\n"
                )
                .map_err(Failure::write)?;
                Ok(Exit::Ok)
            }
            None => Err(failure),
        },
    }
}

/// The public key of an ML-DSA-44 PEM private key file, `None` when the
/// file is not one (the Ed25519 reader has said why).
fn mldsa44_public_key(path: &Path) -> Option<Vec<u8>> {
    let text = crate::shared::keys::read_key_text(path).ok()?;
    let mut seed = cosignature::mldsa44_seed_from_pem(&text).ok()?;
    let public = cosignature::mldsa44_public_key(&seed);
    seed.fill(0);
    crate::shared::keys::warn_if_open(path);
    Some(public)
}

fn show_public(key: &SecretKey, out: &mut Output) -> CmdResult {
    let p = key.public();
    write!(
        out,
        "did:key     {}\ntreeship    {}\nkey id      {}\n",
        p.did_key(),
        p.treeship(),
        p.key_id()
    )
    .map_err(Failure::write)?;
    Ok(Exit::Ok)
}
