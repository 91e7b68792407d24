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
    let cap = (max as u64).saturating_add(1);
    let mut buf = Vec::with_capacity(
        hint.map_or(8192, |h| h.saturating_add(1))
            .min(cap)
            .min(1 << 30) as usize,
    );
    r.take(cap)
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

/// Opens a source for reading as a stream.
pub fn open(source: &Source) -> Result<Box<dyn Read + Send>, String> {
    match source {
        Source::Broken(_, why) => Err(why.clone()),
        Source::Stdin => Ok(Box::new(io::stdin())),
        Source::File(p) => {
            let f = fs::File::open(p).map_err(|e| describe_io(&e))?;
            if f.metadata().is_ok_and(|m| m.is_dir()) {
                return Err("is a folder".into());
            }
            Ok(Box::new(f))
        }
    }
}

/// One line of JSON Lines: its number, and its bytes or why they were not kept.
pub type Line = (usize, Result<Vec<u8>, String>);

/// The non-empty lines of a JSON Lines stream, read as they come, each
/// bounded by `max` bytes (a longer line is reported, not kept), so memory
/// does not grow with the stream. A line may end in CR LF.
pub struct Lines<R: Read> {
    r: io::BufReader<R>,
    max: usize,
    number: usize,
    done: bool,
}

impl<R: Read> Lines<R> {
    pub fn new(r: R, max: usize) -> Self {
        Lines {
            r: io::BufReader::with_capacity(1 << 16, r),
            max,
            number: 0,
            done: false,
        }
    }
}

impl<R: Read> Iterator for Lines<R> {
    type Item = Line;

    fn next(&mut self) -> Option<Line> {
        use io::BufRead;
        while !self.done {
            self.number += 1;
            let mut line = Vec::new();
            let mut too_long = false;
            loop {
                let buf = match self.r.fill_buf() {
                    Ok(b) => b,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.done = true;
                        return Some((self.number, Err(describe_io(&e))));
                    }
                };
                if buf.is_empty() {
                    self.done = true;
                    break;
                }
                let (take, end) = match memchr::memchr(b'\n', buf) {
                    Some(i) => (i, true),
                    None => (buf.len(), false),
                };
                if !too_long && line.len() + take <= self.max {
                    line.extend_from_slice(&buf[..take]);
                } else {
                    too_long = true;
                    line.clear();
                }
                self.r.consume(take + usize::from(end));
                if end {
                    break;
                }
            }
            if too_long {
                return Some((
                    self.number,
                    Err(format!(
                        "the line is over the limit of {} bytes (raise it with --max-size)",
                        self.max
                    )),
                ));
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.iter().any(|b| !b.is_ascii_whitespace()) {
                return Some((self.number, Ok(line)));
            }
        }
        None
    }
}
