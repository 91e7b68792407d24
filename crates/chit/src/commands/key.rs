//! `chit keygen` and `chit key show`.

use crate::cli::KeygenArgs;
use crate::exit::{CmdResult, Exit, Failure};
use crate::files;
use crate::inputs;
use crate::output::Output;
use chit_core::keys::SecretKey;
use std::io::Write;
use std::path::Path;

pub fn keygen(a: &KeygenArgs, out: &mut Output) -> CmdResult {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .map_err(|e| Failure::error(format!("no randomness from the system: {e}")))?;
    let key = SecretKey::from_seed(&seed);
    seed.fill(0);
    let pem = key.to_pem().map_err(|e| Failure::error(e.to_string()))?;
    files::write_private(&a.out, pem.as_bytes()).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Failure::error(format!(
                "{} exists; chit never overwrites a key (choose another --out)",
                a.out.display()
            ))
        } else {
            Failure::error(format!(
                "cannot write {}: {}",
                a.out.display(),
                inputs::describe_io(&e)
            ))
        }
    })?;
    writeln!(out, "wrote {} (keep it secret)", a.out.display()).map_err(Failure::write)?;
    show_public(&key, out)
}

pub fn show(path: &Path, out: &mut Output) -> CmdResult {
    let key = crate::shared::keys::read_key(path)?;
    show_public(&key, out)
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
