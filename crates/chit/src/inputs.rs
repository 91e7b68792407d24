//! Turning INPUT arguments into documents to check: files, folders walked
//! safely, standard input, and JSON Lines.

use std::collections::HashSet;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use walkdir::WalkDir;

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
/// once, so a link loop ends. A file reached more than once (named twice,
/// named and inside a folder named, or by a link) is checked once, where it
/// first comes. Anything passed over is described in `notes`.
pub fn expand(inputs: &[PathBuf], notes: &mut Vec<String>) -> Vec<Source> {
    let out = expand_all(inputs, notes);
    if out.len() < 2 {
        return out;
    }
    // By real path: `packets/p1.json`, `./packets/p1.json` and a link to it
    // are one file, and a packet counted twice would break its stream (P1).
    let mut first: std::collections::HashMap<PathBuf, usize> =
        std::collections::HashMap::with_capacity(out.len());
    let mut kept: Vec<Source> = Vec::with_capacity(out.len());
    for source in out {
        if let Source::File(p) = &source {
            if let Ok(real) = fs::canonicalize(p) {
                if let Some(&i) = first.get(&real) {
                    notes.push(format!(
                        "{} is {} again (the same file): checked once",
                        p.display(),
                        kept[i].label()
                    ));
                    continue;
                }
                first.insert(real, kept.len());
            }
        }
        kept.push(source);
    }
    kept
}

fn expand_all(inputs: &[PathBuf], notes: &mut Vec<String>) -> Vec<Source> {
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
    // Folders already entered, by their real path: a link loop or a second
    // way into a folder ends here.
    let mut seen: HashSet<PathBuf> = HashSet::new();
    seen.insert(root_real.clone());
    let mut found: Vec<PathBuf> = Vec::new();
    // walkdir can follow links, but not only those that stay inside the
    // root, and it would enter a folder reached by two paths twice. So it
    // walks without following links, and each link to a folder inside the
    // root that is not yet seen becomes one more walk of its own.
    let mut starts = vec![root.to_path_buf()];
    while let Some(start) = starts.pop() {
        let mut entries = WalkDir::new(&start).follow_links(false).into_iter();
        // The last folder handed out below the start: walkdir opens a folder
        // before handing it out, and reports a failure to open it next,
        // under its path (the start's own failures come at depth 0).
        let mut opened: Option<PathBuf> = None;
        while let Some(entry) = entries.next() {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    // An unreadable folder is reported; an entry that could
                    // not be looked at (gone since it was listed) is passed
                    // over, as before.
                    if let (Some(path), Some(io)) = (e.path(), e.io_error()) {
                        if e.depth() == 0 || opened.as_deref() == Some(path) {
                            out.push(Source::Broken(path.to_path_buf(), describe_io(io)));
                        }
                    }
                    continue;
                }
            };
            if entry.depth() == 0 {
                continue; // the start: already seen
            }
            let ft = entry.file_type();
            if ft.is_symlink() {
                let path = entry.path();
                let real = match fs::canonicalize(path) {
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
                let Ok(m) = fs::metadata(&real) else { continue };
                if m.is_dir() {
                    // A folder not yet walked; else a loop or a second way in.
                    if seen.insert(real) {
                        starts.push(entry.into_path());
                    }
                } else if m.is_file() && is_json(path) {
                    found.push(entry.into_path());
                }
            } else if ft.is_dir() {
                if let Ok(real) = fs::canonicalize(entry.path()) {
                    if !seen.insert(real) {
                        entries.skip_current_dir();
                        continue;
                    }
                }
                opened = Some(entry.into_path());
            } else if ft.is_file() && is_json(entry.path()) {
                found.push(entry.into_path());
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

fn is_json(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn labels(sources: &[Source], root: &Path) -> Vec<String> {
        sources
            .iter()
            .map(|s| match s {
                Source::File(p) => p.strip_prefix(root).unwrap().display().to_string(),
                Source::Broken(p, why) => format!("broken {} ({why})", p.display()),
                Source::Stdin => "-".into(),
            })
            .collect()
    }

    #[test]
    fn walks_json_files_sorted_by_path_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::create_dir_all(d.join("b/deep")).unwrap();
        fs::create_dir_all(d.join("a")).unwrap();
        for f in [
            "z.json",
            "B.json",
            "b/deep/x.json",
            "a/y.json",
            "a/n.txt",
            "b.json",
        ] {
            fs::write(d.join(f), "{}").unwrap();
        }
        fs::create_dir(d.join("folder.json")).unwrap();
        let mut notes = Vec::new();
        let got = expand(&[d.to_path_buf()], &mut notes);
        assert_eq!(
            labels(&got, d),
            ["B.json", "a/y.json", "b.json", "b/deep/x.json", "z.json"]
        );
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn links_are_followed_inside_the_folder_only_and_loops_end() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        let d = dir.path().join("tree");
        fs::create_dir_all(d.join("sub")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("o.json"), "{}").unwrap();
        fs::write(d.join("sub/s.json"), "{}").unwrap();
        symlink("sub/s.json", d.join("file-link.json")).unwrap();
        symlink(&outside, d.join("out")).unwrap();
        symlink("missing.json", d.join("dangling.json")).unwrap();
        symlink("..", d.join("sub/up")).unwrap(); // back to the root: a loop
        symlink(".", d.join("sub/self")).unwrap();
        let mut notes = Vec::new();
        let got = expand(std::slice::from_ref(&d), &mut notes);
        // The link and its target are one file, checked once (issue 10, 18).
        assert_eq!(labels(&got, &d), ["file-link.json"]);
        notes.sort();
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert_eq!(
            notes[0],
            format!(
                "{} is {} again (the same file): checked once",
                d.join("sub/s.json").display(),
                d.join("file-link.json").display()
            )
        );
        assert!(notes[1].starts_with(&format!(
            "skipped {}: a link that leads nowhere (",
            d.join("dangling.json").display()
        )));
        assert_eq!(
            notes[2],
            format!(
                "skipped {}: a link out of {}, not followed",
                d.join("out").display(),
                d.display()
            )
        );
    }

    #[test]
    fn a_folder_reached_only_through_a_link_is_walked_once() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::create_dir_all(d.join("hidden/inner")).unwrap();
        fs::write(d.join("hidden/inner/r.json"), "{}").unwrap();
        symlink("hidden", d.join("l1")).unwrap();
        symlink("hidden/inner", d.join("l2")).unwrap();
        let mut notes = Vec::new();
        let got = expand(&[d.to_path_buf()], &mut notes);
        assert_eq!(got.len(), 1, "{:?}", labels(&got, d));
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn an_unreadable_folder_is_broken() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::create_dir(d.join("locked")).unwrap();
        fs::write(d.join("ok.json"), "{}").unwrap();
        fs::set_permissions(d.join("locked"), fs::Permissions::from_mode(0o000)).unwrap();
        if fs::read_dir(d.join("locked")).is_ok() {
            return; // running as root: nothing is unreadable
        }
        let mut notes = Vec::new();
        let got = expand(&[d.to_path_buf()], &mut notes);
        fs::set_permissions(d.join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            labels(&got, d),
            [
                format!("broken {} (permission denied)", d.join("locked").display()),
                "ok.json".into()
            ]
        );
    }
}
