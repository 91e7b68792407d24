//! Turning INPUT arguments into documents to check: files, folders walked
//! safely, standard input, and JSON Lines.

use std::collections::HashSet;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Where one document comes from.
#[derive(Clone, Debug)]
pub enum Source {
    File(PathBuf),
    Stdin,
    /// An input that could not even be listed (a missing path, an unreadable
    /// folder), with the reason.
    Broken(PathBuf, String),
}

impl Source {
    pub fn label(&self) -> String {
        match self {
            Source::File(p) | Source::Broken(p, _) => p.display().to_string(),
            Source::Stdin => "-".to_string(),
        }
    }
}

/// Expands the INPUT arguments, in order. Folders contribute every `*.json`
/// file below them, sorted by path. Links inside a folder are followed only
/// where their target stays inside that folder, and each folder is entered
/// once, so a link loop ends. Anything passed over is described in `notes`.
pub fn expand(inputs: &[PathBuf], notes: &mut Vec<String>) -> Vec<Source> {
    let mut out = Vec::new();
    for input in inputs {
        if input.as_os_str() == "-" {
            out.push(Source::Stdin);
            continue;
        }
        match fs::metadata(input) {
            Err(e) => out.push(Source::Broken(input.clone(), describe_io(&e))),
            Ok(m) if m.is_dir() => walk(input, &mut out, notes),
            Ok(_) => out.push(Source::File(input.clone())),
        }
    }
    out
}

fn walk(root: &Path, out: &mut Vec<Source>, notes: &mut Vec<String>) {
    let root_real = match fs::canonicalize(root) {
        Ok(p) => p,
        Err(e) => {
            out.push(Source::Broken(root.to_path_buf(), describe_io(&e)));
            return;
        }
    };
    let mut seen: HashSet<PathBuf> = HashSet::new();
    seen.insert(root_real.clone());
    let mut found: Vec<PathBuf> = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) => {
                out.push(Source::Broken(dir.clone(), describe_io(&e)));
                continue;
            }
        };
        for entry in entries {
            let Ok(entry) = entry else { continue };
            let path = entry.path();
            let Ok(ft) = entry.file_type() else { continue };
            let (is_dir, is_file) = if ft.is_symlink() {
                let real = match fs::canonicalize(&path) {
                    Ok(r) => r,
                    Err(e) => {
                        notes.push(format!(
                            "skipped {}: a link that leads nowhere ({})",
                            path.display(),
                            describe_io(&e)
                        ));
                        continue;
                    }
                };
                if !real.starts_with(&root_real) {
                    notes.push(format!(
                        "skipped {}: a link out of {}, not followed",
                        path.display(),
                        root.display()
                    ));
                    continue;
                }
                match fs::metadata(&real) {
                    Ok(m) if m.is_dir() => {
                        if !seen.insert(real) {
                            continue; // a folder already walked: a loop or a second way in
                        }
                        (true, false)
                    }
                    Ok(m) => (false, m.is_file()),
                    Err(_) => continue,
                }
            } else if ft.is_dir() {
                if let Ok(real) = fs::canonicalize(&path) {
                    if !seen.insert(real) {
                        continue;
                    }
                }
                (true, false)
            } else {
                (false, ft.is_file())
            };
            if is_dir {
                stack.push(path);
            } else if is_file && path.extension().is_some_and(|e| e == "json") {
                found.push(path);
            }
        }
    }
    found.sort_unstable_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
    out.extend(found.into_iter().map(Source::File));
}

/// The most a JSON Lines input may hold; each line is still bounded by
/// --max-size.
pub const STREAM_MAX: usize = 1 << 40;

/// Reads a whole source, refusing more than `max` bytes without reading them.
pub fn read(source: &Source, max: usize) -> Result<Vec<u8>, String> {
    match source {
        Source::Broken(_, why) => Err(why.clone()),
        Source::Stdin => read_bounded(io::stdin().lock(), None, max),
        Source::File(p) => {
            let f = fs::File::open(p).map_err(|e| describe_io(&e))?;
            let meta = f.metadata().map_err(|e| describe_io(&e))?;
            if meta.is_dir() {
                return Err("is a folder".into());
            }
            let len = meta.is_file().then_some(meta.len());
            if let Some(len) = len.filter(|&l| l > max as u64) {
                return Err(format!(
                    "the input is {len} bytes, over the limit of {max} (raise it with --max-size)"
                ));
            }
            read_bounded(f, len, max)
        }
    }
}

fn read_bounded(r: impl Read, hint: Option<u64>, max: usize) -> Result<Vec<u8>, String> {
    // One byte more than the file's size, so the read that finds its end
    // does not grow the buffer.
    let mut buf = Vec::with_capacity(hint.map_or(8192, |h| h + 1).min(max as u64 + 1) as usize);
    r.take(max as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| describe_io(&e))?;
    if buf.len() > max {
        return Err(format!(
            "the input is over the limit of {max} bytes (raise it with --max-size)"
        ));
    }
    Ok(buf)
}

/// An I/O error in a short sentence, without Rust's "(os error N)" tail.
pub fn describe_io(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such file or folder".into(),
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => {
            let s = e.to_string();
            match s.find(" (os error") {
                Some(i) => s[..i].to_string(),
                None => s,
            }
        }
    }
}

/// The non-empty lines of a JSON Lines document: (1-based line number, bytes).
/// A line may end in CR LF.
pub fn json_lines(bytes: &[u8]) -> Vec<(usize, &[u8])> {
    bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix(b"\r").unwrap_or(l)))
        .filter(|(_, l)| l.iter().any(|b| !b.is_ascii_whitespace()))
        .collect()
}
