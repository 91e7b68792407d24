//! `chit keygen` and `chit key show`.

use crate::cli::KeygenArgs;
use crate::exit::{CmdResult, Exit, Failure};
use crate::files;
use crate::inputs::{self, Source};
use crate::output::Output;
use chit_core::keys::SecretKey;
use std::io::Write;
use std::path::Path;

/// The most a key file may be: a PEM key is a few hundred bytes.
const KEY_FILE_MAX: usize = 16 * 1024;

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

/// Reads an Ed25519 private key (PKCS#8 PEM), warning on standard error,
/// as ssh does, when others may read or write the file.
pub fn read_key(path: &Path) -> Result<SecretKey, Failure> {
    // --max-size is for documents; a key file has its own fixed limit, and
    // the message names it.
    let bytes = inputs::read(&Source::File(path.to_path_buf()), KEY_FILE_MAX).map_err(|why| {
        let why = why.replace(
            "(raise it with --max-size)",
            "for a key file (a PEM key is a few hundred bytes: is this the key?)",
        );
        Failure::error(format!("cannot read key {}: {why}", path.display()))
    })?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Failure::error(format!("{} is not a PEM key file", path.display())))?;
    let key = SecretKey::from_pem(&text)
        .map_err(|e| Failure::error(format!("{}: {e}", path.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(m) = std::fs::metadata(path) {
            let mode = m.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                anstream::eprintln!(
                    "chit: warning: the private key {p} is open to others (mode {mode:04o}); \
                     anyone who can read it can sign as you: run 'chmod 600 {p}'",
                    p = path.display()
                );
            }
        }
    }
    Ok(key)
}

pub fn show(path: &Path, out: &mut Output) -> CmdResult {
    let key = read_key(path)?;
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
