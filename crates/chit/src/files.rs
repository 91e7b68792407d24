//! Writing files: every command that writes one goes through here, so each
//! write keeps the same promises:
//!
//! - a new file is created whole (written beside, then linked in place, so
//!   no one sees half of it) and never over one that appeared meanwhile;
//! - an existing regular file is replaced only when the user asked
//!   ([`Replace::IfForced`] without `--force` refuses), atomically (the old
//!   bytes or the new, never a mix), only if the user could write it in
//!   place, and keeping its owner and mode;
//! - a device, a FIFO or a link to one (`/dev/stdout`) is written into,
//!   never replaced;
//! - a symbolic link is followed: its target is written, the link stays;
//! - a file with several hard links is refused: replacing it would split
//!   them.

use crate::exit::Failure;
use crate::inputs;
use std::fs::{File, Metadata, OpenOptions};
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

/// When an existing regular file may be replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replace {
    /// Always (`seal` rewriting its own input: that is its job).
    Yes,
    /// Only with `--force` (the flag's value); refused otherwise.
    IfForced(bool),
}

/// Where a write went.
#[derive(Debug)]
pub enum Written {
    /// A regular file, created or replaced: its real path.
    File(PathBuf),
    /// Into a device, a FIFO or a link to one (as `/dev/stdout`).
    Into,
}

/// What is at a path, followed through links.
enum Target {
    /// Nothing: a new file (at this real path).
    New(PathBuf),
    /// A regular file (at this real path) and what it is.
    File(PathBuf, Metadata),
    /// Something written into: a character device or a FIFO.
    Stream,
}

/// Checks, before any work is done, that `path` could be written as
/// [`write`] would write it; [`write`] checks again.
pub fn check(path: &Path, replace: Replace) -> Result<(), Failure> {
    match target(path)? {
        Target::New(_) | Target::Stream => Ok(()),
        Target::File(real, meta) => replaceable(path, &real, &meta, replace),
    }
}

/// Writes `bytes` to `path` as this module's promises say.
pub fn write(path: &Path, bytes: &[u8], replace: Replace) -> Result<Written, Failure> {
    let cannot = |e: std::io::Error| {
        Failure::error(format!(
            "cannot write {}: {}",
            path.display(),
            inputs::describe_io(&e)
        ))
    };
    match target(path)? {
        Target::Stream => {
            let mut f = open_stream(path)?;
            f.write_all(bytes).and_then(|_| f.flush()).map_err(cannot)?;
            Ok(Written::Into)
        }
        Target::New(real) => {
            let tmp = beside(path, &real)?;
            let mut file = tmp.as_file();
            file.write_all(bytes)
                .and_then(|_| file.sync_all())
                .map_err(cannot)?;
            tmp.persist_noclobber(&real).map_err(|e| {
                if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                    Failure::error(format!(
                        "{} appeared while chit was writing it; it is left as it is \
                         (run again, with --force to replace it)",
                        path.display()
                    ))
                } else {
                    cannot(e.error)
                }
            })?;
            Ok(Written::File(real))
        }
        Target::File(real, meta) => {
            replaceable(path, &real, &meta, replace)?;
            replace_atomically(path, &real, &meta, bytes)?;
            Ok(Written::File(real))
        }
    }
}

/// What is at `path`, following links.
fn target(path: &Path) -> Result<Target, Failure> {
    let link = match std::fs::symlink_metadata(path) {
        Ok(m) => m.file_type().is_symlink(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Target::New(path.to_path_buf()))
        }
        Err(e) => {
            return Err(Failure::error(format!(
                "cannot write {}: {}",
                path.display(),
                inputs::describe_io(&e)
            )))
        }
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if link && e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Failure::error(format!(
                "{} is a link to nothing; chit follows links and never replaces them \
                 (remove the link, or write elsewhere with --out)",
                path.display()
            )))
        }
        Err(e) => {
            return Err(Failure::error(format!(
                "cannot follow {}: {}",
                path.display(),
                inputs::describe_io(&e)
            )))
        }
    };
    let ft = meta.file_type();
    if ft.is_dir() {
        return Err(Failure::error(format!(
            "{} is a folder; give a file name",
            path.display()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_char_device() || ft.is_fifo() {
            return Ok(Target::Stream);
        }
        if ft.is_block_device() || ft.is_socket() {
            return Err(Failure::error(format!(
                "{} is a {}; chit writes only to a file, a character device or a FIFO \
                 (write a file, then copy it there)",
                path.display(),
                if ft.is_socket() {
                    "socket"
                } else {
                    "block device"
                }
            )));
        }
    }
    if !ft.is_file() {
        return Err(Failure::error(format!(
            "{} is not a regular file; write elsewhere with --out",
            path.display()
        )));
    }
    // Through /proc/self/fd/N (what /dev/stdout is) a regular file is the
    // file a shell redirected to: write into it, as the shell would.
    if link && through_fd(path) {
        return Ok(Target::Stream);
    }
    let real = if link {
        std::fs::canonicalize(path).map_err(|e| {
            Failure::error(format!(
                "cannot follow the link {}: {}",
                path.display(),
                inputs::describe_io(&e)
            ))
        })?
    } else {
        path.to_path_buf()
    };
    Ok(Target::File(real, meta))
}

/// True when `path` leads through a `/proc/…/fd/` or `/dev/fd/` link: an
/// open file descriptor, not a name.
fn through_fd(path: &Path) -> bool {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        let s = p.to_string_lossy();
        if s.starts_with("/dev/fd/") || (s.starts_with("/proc/") && s.contains("/fd/")) {
            return true;
        }
        match std::fs::read_link(&p) {
            Ok(next) => {
                p = match p.parent() {
                    Some(dir) if next.is_relative() => dir.join(next),
                    _ => next,
                }
            }
            Err(_) => return false,
        }
    }
    false
}

/// Opens a device or a FIFO for writing, without truncating or creating;
/// a FIFO with no reader is refused rather than waited on.
fn open_stream(path: &Path) -> Result<File, Failure> {
    let cannot = |e: std::io::Error| {
        Failure::error(format!(
            "cannot write into {}: {}",
            path.display(),
            inputs::describe_io(&e)
        ))
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        // Opened without blocking, a FIFO with no reader fails with ENXIO
        // instead of waiting for one.
        const O_NONBLOCK: i32 = libc::O_NONBLOCK;
        const ENXIO: i32 = libc::ENXIO;
        if std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo()) {
            // The probe holds the FIFO open, so the blocking open below
            // finds the reader there and returns at once.
            let _probe = OpenOptions::new()
                .append(true)
                .custom_flags(O_NONBLOCK)
                .open(path)
                .map_err(|e| {
                    if e.raw_os_error() == Some(ENXIO) {
                        Failure::error(format!(
                            "{} is a FIFO with no reader; start its reader first",
                            path.display()
                        ))
                    } else {
                        cannot(e)
                    }
                })?;
            return OpenOptions::new().append(true).open(path).map_err(cannot);
        }
    }
    OpenOptions::new().append(true).open(path).map_err(cannot)
}

/// Refuses to replace the regular file `real` (reached as `path`) unless
/// the user asked, could write it in place, and it has one name.
fn replaceable(path: &Path, real: &Path, meta: &Metadata, replace: Replace) -> Result<(), Failure> {
    if replace == Replace::IfForced(false) {
        return Err(Failure::error(format!(
            "{} exists; chit does not replace it unless you pass --force (or choose another --out)",
            path.display()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.nlink() > 1 {
            return Err(Failure::error(format!(
                "{} has {} hard links; replacing it would split them, so it is left as it was \
                 (write elsewhere with --out)",
                path.display(),
                meta.nlink()
            )));
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    // Writable by this user in place (opened for writing, not truncated)?
    if let Err(e) = OpenOptions::new().write(true).open(real) {
        return Err(if e.kind() == std::io::ErrorKind::PermissionDenied {
            Failure::error(format!(
                "{} is not writable by you, so chit leaves it as it is \
                 (make it writable with chmod u+w {}, or write elsewhere with --out)",
                path.display(),
                path.display()
            ))
        } else {
            Failure::error(format!(
                "cannot write {}: {}",
                path.display(),
                inputs::describe_io(&e)
            ))
        });
    }
    Ok(())
}

/// A temporary file beside `real`, to be renamed onto it.
fn beside(path: &Path, real: &Path) -> Result<tempfile::NamedTempFile, Failure> {
    let dir = match real.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    tempfile::Builder::new()
        .prefix(".chit-")
        .tempfile_in(dir)
        .map_err(|e| {
            Failure::error(format!(
                "cannot write {}: its folder {} {} (chit writes a file beside it, then renames it \
                 into place); make the folder writable, or write elsewhere with --out{}",
                path.display(),
                dir.display(),
                if e.kind() == std::io::ErrorKind::PermissionDenied {
                    "is not writable by you".to_owned()
                } else {
                    format!("cannot take a new file: {}", inputs::describe_io(&e))
                },
                if path == real {
                    String::new()
                } else {
                    format!(" ({} is a link to {})", path.display(), real.display())
                }
            ))
        })
}

/// Replaces the regular file `real` with `bytes` so that a crash leaves
/// the old file or the new one, never a mix: write beside it, sync, give
/// it the old file's mode and owner, rename over it.
fn replace_atomically(
    path: &Path,
    real: &Path,
    meta: &Metadata,
    bytes: &[u8],
) -> Result<(), Failure> {
    let cannot = |e: std::io::Error| {
        Failure::error(format!(
            "cannot write {}: {}",
            path.display(),
            inputs::describe_io(&e)
        ))
    };
    let tmp = beside(path, real)?;
    let mut file = tmp.as_file();
    file.write_all(bytes).map_err(cannot)?;
    file.set_permissions(meta.permissions()).map_err(cannot)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let mine = file.metadata().map_err(cannot)?;
        if (mine.uid(), mine.gid()) != (meta.uid(), meta.gid())
            && std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid())).is_err()
        {
            // The file would change owner: write it in place instead
            // (the user may: [`replaceable`] opened it for writing).
            drop(tmp);
            let mut f = OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(real)
                .map_err(cannot)?;
            return f
                .write_all(bytes)
                .and_then(|_| f.sync_all())
                .map_err(cannot);
        }
    }
    file.sync_all().map_err(cannot)?;
    tmp.persist(real).map_err(|e| cannot(e.error))?;
    Ok(())
}
