//! Writing files: every command that writes one goes through here, so each
//! write keeps the same promises. A file is replaced atomically (the old
//! bytes or the new, never a mix), a link is followed, not replaced, and a
//! file that must be new is never written over.

use crate::exit::Failure;
use crate::inputs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to a new file (never over an existing one).
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Failure::error(format!(
                    "{} exists; chit never overwrites it (choose another name)",
                    path.display()
                ))
            } else {
                Failure::error(format!("cannot write {}: {e}", path.display()))
            }
        })?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| Failure::error(format!("cannot write {}: {e}", path.display())))
}

/// Creates `path` readable by its owner only, refusing an existing file.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Replaces the file at `path` with `bytes`, atomically; a link's target is
/// replaced, so the link stays a link.
pub fn replace(path: &Path, bytes: &[u8]) -> Result<PathBuf, Failure> {
    let target = replaceable(path)?;
    write_atomically(&target, bytes)
        .map_err(|e| Failure::error(format!("cannot write {}: {e}", target.display())))?;
    Ok(target)
}

/// The file to replace when writing to `path`: a link's target (so the link
/// stays a link), refusing a file with several hard links (replacing it
/// would split them).
fn replaceable(path: &Path) -> Result<PathBuf, Failure> {
    let real = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).map_err(|e| {
            Failure::error(format!(
                "cannot follow the link {}: {}",
                path.display(),
                inputs::describe_io(&e)
            ))
        })?,
        _ => path.to_path_buf(),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Ok(m) = std::fs::metadata(&real) {
            if m.nlink() > 1 {
                return Err(Failure::error(format!(
                    "{} has {} hard links; replacing it would split them, so it is left as it was \
                     (write elsewhere with --out)",
                    path.display(),
                    m.nlink()
                )));
            }
        }
    }
    Ok(real)
}

/// Replaces `path` with `bytes` so that a crash leaves the old file or the
/// new one, never a mix: write beside it, sync, rename over it.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".chit-seal-")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(tmp.path(), meta.permissions());
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
