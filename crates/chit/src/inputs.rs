//! Turning INPUT arguments into documents to check: files, folders walked
//! safely, standard input, and JSON Lines.

use std::collections::HashSet;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use walkdir::WalkDir;

/// Where one document comes from.
#[derive(Clone, Debug)]
pub enum Source {
    File(PathBuf),
    Stdin,
    /// An input that could not even be listed (a missing path, an unreadable
    /// folder), with the reason.
    Broken(PathBuf, String),
    /// A Treeship session package: a `*.treeship` folder holding a
    /// `receipt.json`, checked as one input.
    Package(PathBuf),
    /// A Treeship Approval Use Journal: a folder holding `records/` and
    /// `heads/current.json` (or `journal.json`), checked as one input.
    Journal(PathBuf),
}

impl Source {
    pub fn label(&self) -> String {
        match self {
            Source::File(p) | Source::Broken(p, _) | Source::Package(p) | Source::Journal(p) => {
                p.display().to_string()
            }
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
/// What makes two paths one file.
#[cfg(unix)]
type FileId = (u64, u64);
#[cfg(not(unix))]
type FileId = PathBuf;

/// The file `p` names, links followed: its device and inode on Unix, its
/// real path elsewhere.
#[cfg(unix)]
fn file_id(p: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(p: &Path) -> Option<FileId> {
    fs::canonicalize(p).ok()
}

pub fn expand(inputs: &[PathBuf], notes: &mut Vec<String>) -> Vec<Source> {
    let out = expand_all(inputs, notes);
    if out.len() < 2 {
        return out;
    }
    // By identity: `packets/p1.json`, `./packets/p1.json` and a link to it
    // are one file, and a packet counted twice would break its stream (P1).
    // One stat a file (device and inode) rather than resolving every path:
    // 20,000 realpath calls cost a folder's check an eighth of its time.
    let mut first: std::collections::HashMap<FileId, usize> =
        std::collections::HashMap::with_capacity(out.len());
    let mut kept: Vec<Source> = Vec::with_capacity(out.len());
    for source in out {
        if let Source::File(p) = &source {
            if let Some(id) = file_id(p) {
                if let Some(&i) = first.get(&id) {
                    notes.push(format!(
                        "{} is {} again (the same file): checked once",
                        p.display(),
                        kept[i].label()
                    ));
                    continue;
                }
                first.insert(id, kept.len());
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
            Ok(m) if m.is_dir() && is_package(input) => out.push(Source::Package(input.clone())),
            Ok(m) if m.is_dir() && is_journal(input) => out.push(Source::Journal(input.clone())),
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
    let mut packages: Vec<PathBuf> = Vec::new();
    let mut journals: Vec<PathBuf> = Vec::new();
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
                } else if m.is_file() {
                    if is_json(path) {
                        found.push(entry.into_path());
                    }
                } else {
                    notes.push(special_note(path, m.file_type()));
                }
            } else if ft.is_dir() {
                if let Ok(real) = fs::canonicalize(entry.path()) {
                    if !seen.insert(real) {
                        entries.skip_current_dir();
                        continue;
                    }
                }
                if is_package(entry.path()) {
                    entries.skip_current_dir();
                    packages.push(entry.into_path());
                    continue;
                }
                if is_journal(entry.path()) {
                    entries.skip_current_dir();
                    journals.push(entry.into_path());
                    continue;
                }
                opened = Some(entry.into_path());
            } else if ft.is_file() {
                if is_json(entry.path()) {
                    found.push(entry.into_path());
                }
            } else {
                notes.push(special_note(entry.path(), ft));
            }
        }
    }
    found.sort_unstable_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
    out.extend(found.into_iter().map(Source::File));
    packages.sort_unstable();
    out.extend(packages.into_iter().map(Source::Package));
    journals.sort_unstable();
    out.extend(journals.into_iter().map(Source::Journal));
}

/// Whether a folder is a Treeship session package: named `*.treeship`, with
/// a `receipt.json` in it.
pub fn is_package(dir: &Path) -> bool {
    dir.extension().is_some_and(|e| e == "treeship") && dir.join("receipt.json").is_file()
}

/// Whether a folder is a Treeship Approval Use Journal: `records/` beside
/// `heads/current.json` or `journal.json`.
pub fn is_journal(dir: &Path) -> bool {
    dir.join("records").is_dir()
        && (dir.join("heads/current.json").is_file() || dir.join("journal.json").is_file())
}

/// Reads the files of a folder that is one input (a package, a journal)
/// under one limit for them all: `--max-size` bounds the input, however
/// many files it holds.
struct Together {
    left: std::cell::Cell<usize>,
    max: usize,
}

impl Together {
    fn new(max: usize) -> Together {
        Together {
            left: std::cell::Cell::new(max),
            max,
        }
    }

    fn read(&self, path: PathBuf) -> Result<Vec<u8>, InputError> {
        let left = self.left.get();
        match read(&Source::File(path), left) {
            Ok(b) => {
                self.left.set(left - b.len().min(left));
                Ok(b)
            }
            Err(e) if e.is_size() => Err(InputError::FolderTooLarge(self.max)),
            Err(e) => Err(e),
        }
    }

    /// The `.json` files directly in `dir`, by name.
    fn jsons(&self, dir: &Path) -> Vec<(String, Result<Vec<u8>, InputError>)> {
        let mut found = Vec::new();
        if let Ok(list) = fs::read_dir(dir) {
            for e in list.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.ends_with(".json") && e.file_type().is_ok_and(|t| t.is_file()) {
                    found.push((name, e.path()));
                }
            }
        }
        found.sort();
        found
            .into_iter()
            .map(|(name, path)| (name, self.read(path)))
            .collect()
    }
}

/// The files of a journal, read under `max` bytes together: its head and
/// the `.json` files in `records/`.
pub struct JournalFiles {
    pub head: Option<Result<Vec<u8>, InputError>>,
    pub records: Vec<(String, Result<Vec<u8>, InputError>)>,
}

pub fn read_journal(dir: &Path, max: usize) -> JournalFiles {
    let together = Together::new(max);
    let head = dir.join("heads/current.json");
    JournalFiles {
        head: head.exists().then(|| together.read(head)),
        records: together.jsons(&dir.join("records")),
    }
}

/// The files of a session package, read under `max` bytes together: its
/// receipt (or why it could not be read), `merkle.json`, `render.json`,
/// `proofs/*.json`, 0.32's sealed files, and the names of the other files,
/// which chit does not check.
pub struct PackageFiles {
    pub receipt: Result<Vec<u8>, InputError>,
    pub merkle: Option<Result<Vec<u8>, InputError>>,
    pub render: Option<Result<Vec<u8>, InputError>>,
    pub proofs: Vec<(String, Result<Vec<u8>, InputError>)>,
    /// Treeship 0.32's sealed files: `record.json`, `keys.json` and the
    /// envelopes under `artifacts/`.
    pub record: Option<Result<Vec<u8>, InputError>>,
    pub keys: Option<Result<Vec<u8>, InputError>>,
    pub redaction: Option<Result<Vec<u8>, InputError>>,
    pub artifacts: Vec<(String, Result<Vec<u8>, InputError>)>,
    /// The approval evidence: `approvals/grants/`, `uses/` and
    /// `checkpoints/`.
    pub grants: Vec<(String, Result<Vec<u8>, InputError>)>,
    pub uses: Vec<(String, Result<Vec<u8>, InputError>)>,
    pub checkpoints: Vec<(String, Result<Vec<u8>, InputError>)>,
    pub others: Vec<String>,
}

pub fn read_package(dir: &Path, max: usize) -> PackageFiles {
    let together = Together::new(max);
    let receipt = together.read(dir.join("receipt.json"));
    let file = |name: &str| {
        let p = dir.join(name);
        p.exists().then(|| together.read(p))
    };
    let merkle = file("merkle.json");
    let render = file("render.json");
    let record = file("record.json");
    let keys = file("keys.json");
    let redaction = file("redaction.json");
    let proofs = together.jsons(&dir.join("proofs"));
    let artifacts = together.jsons(&dir.join("artifacts"));
    let grants = together.jsons(&dir.join("approvals/grants"));
    let uses = together.jsons(&dir.join("approvals/uses"));
    let checkpoints = together.jsons(&dir.join("approvals/checkpoints"));
    let mut others = Vec::new();
    for sub in ["approvals", "artifacts", "anchors"] {
        for e in WalkDir::new(dir.join(sub))
            .follow_links(false)
            .into_iter()
            .flatten()
        {
            let json = e.file_name().to_string_lossy().ends_with(".json");
            let read = match sub {
                "artifacts" => e.depth() == 1 && json,
                // Witness proofs, not read yet: named as not checked.
                "anchors" => false,
                // Evidence the approval rules read.
                _ => {
                    e.depth() == 2
                        && json
                        && e.path()
                            .parent()
                            .and_then(|p| p.file_name())
                            .is_some_and(|d| {
                                ["grants", "uses", "checkpoints"].contains(&&*d.to_string_lossy())
                            })
                }
            };
            // A link is never read (only regular files are), so it is
            // named too: a package's evidence is not silently left out.
            if (e.file_type().is_file() && !read) || e.path_is_symlink() {
                if let Ok(rel) = e.path().strip_prefix(dir) {
                    others.push(rel.display().to_string());
                }
            }
        }
    }
    others.sort();
    PackageFiles {
        receipt,
        merkle,
        render,
        proofs,
        record,
        keys,
        redaction,
        artifacts,
        grants,
        uses,
        checkpoints,
        others,
    }
}

/// The note for a FIFO, socket or device met inside a folder: chit reads
/// only regular files there (a FIFO could wait forever, a device never end);
/// name one as an input to read it.
fn special_note(path: &Path, ft: fs::FileType) -> String {
    #[cfg(unix)]
    let what = {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            "a FIFO"
        } else if ft.is_socket() {
            "a socket"
        } else if ft.is_block_device() || ft.is_char_device() {
            "a device"
        } else {
            "a special file"
        }
    };
    #[cfg(not(unix))]
    let what = {
        let _ = ft;
        "a special file"
    };
    format!(
        "skipped {}: {what}, not a regular file (inside a folder chit reads regular files only; name it as an input to read it)",
        path.display()
    )
}

/// Why an input (or a line of one) could not be read, in words a user can
/// act on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// Found so while folders were walked (a broken link, a loop).
    #[error("{0}")]
    Broken(String),
    #[error("a session package or a journal is read as a folder, not a stream")]
    Package,
    #[error("is a folder")]
    Folder,
    #[error(
        "is a FIFO with no writer (none came within {0} s); start the program that writes to it \
         first, or pipe its output to chit's standard input ('-')"
    )]
    NoWriter(u64),
    /// The system's error, in a short sentence ([`describe_io`]).
    #[error("{0}")]
    Io(String),
    #[error("the input is {len} bytes, over the limit of {max} (raise it with --max-size)")]
    TooLarge { len: u64, max: usize },
    #[error("the input is over the limit of {0} bytes (raise it with --max-size)")]
    OverLimit(usize),
    #[error("the line is over the limit of {0} bytes (raise it with --max-size)")]
    LineTooLong(usize),
    /// A folder read as one input (a package, a journal): its files
    /// together.
    #[error("the folder's files are over the limit of {0} bytes together, as one input (raise it with --max-size)")]
    FolderTooLarge(usize),
    #[error(
        "the line is over the limit of {max} bytes and has no end within {seen} bytes; the rest \
         of the input is not read (raise the limit with --max-size)"
    )]
    NoLineEnd { max: usize, seen: u64 },
}

impl InputError {
    fn io(e: &io::Error) -> InputError {
        InputError::Io(describe_io(e))
    }

    /// Whether the input was refused for its size (the limit `--max-size`
    /// sets, or another a caller sets for what it reads).
    pub fn is_size(&self) -> bool {
        matches!(
            self,
            InputError::TooLarge { .. }
                | InputError::OverLimit(_)
                | InputError::LineTooLong(_)
                | InputError::FolderTooLarge(_)
        )
    }
}

fn is_json(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

/// Reads a whole source, refusing more than `max` bytes without reading them.
pub fn read(source: &Source, max: usize) -> Result<Vec<u8>, InputError> {
    match source {
        Source::Broken(_, why) => Err(InputError::Broken(why.clone())),
        Source::Package(_) | Source::Journal(_) => Err(InputError::Package),
        Source::Stdin => read_bounded(io::stdin().lock(), None, max),
        Source::File(p) => {
            let opened = open_file(p)?;
            if let Some(len) = opened.len.filter(|&l| l > max as u64) {
                return Err(InputError::TooLarge { len, max });
            }
            read_bounded(opened.reader, opened.len, max)
        }
    }
}

/// How long a FIFO given as an input may go without a writer.
pub const FIFO_WAIT: Duration = Duration::from_secs(1);

/// A file opened for reading: its reader, and its length if it is a
/// regular file.
struct Opened {
    reader: Box<dyn Read + Send>,
    len: Option<u64>,
}

/// Opens a file named as an input without ever waiting on it: a FIFO
/// (named pipe) is opened without blocking and read only if a writer has
/// it open (or comes within [`FIFO_WAIT`]); with none, it is refused rather
/// than waited on forever. A device is read as it is (bounded by the
/// caller's limit); a folder is refused.
fn open_file(p: &Path) -> Result<Opened, InputError> {
    #[cfg(unix)]
    let f = {
        use std::os::unix::fs::OpenOptionsExt;
        fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(p)
            .map_err(|e| InputError::io(&e))?
    };
    #[cfg(not(unix))]
    let f = fs::File::open(p).map_err(|e| InputError::io(&e))?;
    let meta = f.metadata().map_err(|e| InputError::io(&e))?;
    if meta.is_dir() {
        return Err(InputError::Folder);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if meta.file_type().is_fifo() {
            let first = wait_for_writer(&f)?;
            set_blocking(&f)?;
            return Ok(Opened {
                reader: Box::new(io::Cursor::new(first).chain(f)),
                len: None,
            });
        }
        // O_NONBLOCK changes nothing for a regular file: only a device
        // (a terminal) needs blocking reads back, and two fewer system
        // calls a file matter over a folder of 20,000.
        if !meta.is_file() {
            set_blocking(&f)?;
        }
    }
    let len = meta.is_file().then_some(meta.len());
    Ok(Opened {
        reader: Box::new(f),
        len,
    })
}

/// Waits (up to [`FIFO_WAIT`]) for a FIFO opened without blocking to have
/// a writer: a read gives data (kept and returned), "would block" (a writer
/// that has not written yet), or end of file (no writer).
#[cfg(unix)]
fn wait_for_writer(mut f: &fs::File) -> Result<Vec<u8>, InputError> {
    let start = Instant::now();
    let mut buf = vec![0u8; 8192];
    loop {
        match f.read(&mut buf) {
            Ok(0) => {
                if start.elapsed() >= FIFO_WAIT {
                    return Err(InputError::NoWriter(FIFO_WAIT.as_secs()));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Vec::new()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(InputError::io(&e)),
        }
    }
}

/// Clears O_NONBLOCK, so reads wait for data as usual.
#[cfg(unix)]
fn set_blocking(f: &fs::File) -> Result<(), InputError> {
    use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
    fcntl_getfl(f)
        .and_then(|flags| fcntl_setfl(f, flags - OFlags::NONBLOCK))
        .map_err(|e| InputError::io(&e.into()))
}

fn read_bounded(r: impl Read, hint: Option<u64>, max: usize) -> Result<Vec<u8>, InputError> {
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
        .map_err(|e| InputError::io(&e))?;
    if buf.len() > max {
        return Err(InputError::OverLimit(max));
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

/// Opens a source for reading as a stream (see [`open_file`] for FIFOs).
pub fn open(source: &Source) -> Result<Box<dyn Read + Send>, InputError> {
    match source {
        Source::Broken(_, why) => Err(InputError::Broken(why.clone())),
        Source::Package(_) | Source::Journal(_) => Err(InputError::Package),
        Source::Stdin => Ok(Box::new(io::stdin())),
        Source::File(p) => Ok(open_file(p)?.reader),
    }
}

/// Opens a source as a stream of at most `max` bytes in all: a regular file
/// over it is refused before it is read, and any other source fails its
/// read once more than `max` bytes have come.
pub fn open_capped(source: &Source, max: usize) -> Result<Box<dyn Read + Send>, InputError> {
    let reader = match source {
        Source::Broken(_, why) => return Err(InputError::Broken(why.clone())),
        Source::Package(_) | Source::Journal(_) => return Err(InputError::Package),
        Source::Stdin => Box::new(io::stdin()) as Box<dyn Read + Send>,
        Source::File(p) => {
            let opened = open_file(p)?;
            if let Some(len) = opened.len.filter(|&l| l > max as u64) {
                return Err(InputError::TooLarge { len, max });
            }
            opened.reader
        }
    };
    Ok(Box::new(Capped {
        r: reader,
        left: max as u64,
        max,
    }))
}

/// A reader that fails once more than `max` bytes have come from it.
struct Capped<R> {
    r: R,
    left: u64,
    max: usize,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // One byte more than is left, to tell the end from too much.
        let want = (buf.len() as u64).min(self.left.saturating_add(1)) as usize;
        let n = self.r.read(&mut buf[..want])?;
        if n as u64 > self.left {
            return Err(io::Error::other(InputError::OverLimit(self.max)));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// One line of JSON Lines: its number, and its bytes or why they were not kept.
pub type Line = (usize, Result<Vec<u8>, InputError>);

/// The non-empty lines of a JSON Lines stream, read as they come, each
/// bounded by `max` bytes (a longer line is reported, not kept), so memory
/// does not grow with the stream. A line may end in CR LF.
///
/// A line over `max` is passed over to its end and the stream goes on; but
/// a line with no end within [`SKIP_FACTOR`] × `max` bytes (`/dev/zero`, a
/// sparse file) ends the stream there, reported, so reading always stops.
/// How many times `max` bytes an over-long line may run before the
/// stream is taken to have no line ends and reading stops.
pub const SKIP_FACTOR: u64 = 16;

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
            // Bytes of an over-long line read so far.
            let mut seen: u64 = 0;
            let give_up = (self.max as u64).saturating_mul(SKIP_FACTOR);
            loop {
                let buf = match self.r.fill_buf() {
                    Ok(b) => b,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.done = true;
                        return Some((self.number, Err(InputError::io(&e))));
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
                    if !too_long {
                        seen = line.len() as u64;
                        too_long = true;
                        line.clear();
                    }
                    seen = seen.saturating_add(take as u64);
                }
                self.r.consume(take + usize::from(end));
                if end {
                    break;
                }
                if too_long && seen > give_up {
                    self.done = true;
                    return Some((
                        self.number,
                        Err(InputError::NoLineEnd {
                            max: self.max,
                            seen,
                        }),
                    ));
                }
            }
            if too_long {
                return Some((self.number, Err(InputError::LineTooLong(self.max))));
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
                Source::Package(p) => {
                    format!("package {}", p.strip_prefix(root).unwrap().display())
                }
                Source::Journal(p) => {
                    format!("journal {}", p.strip_prefix(root).unwrap().display())
                }
                Source::Stdin => "-".into(),
            })
            .collect()
    }

    /// A `*.treeship` folder with a receipt.json is one input, found by a
    /// walk or named; its files are not inputs of their own. A folder so
    /// named without one is walked as any folder.
    /// A package or a journal is one input: `--max-size` bounds its files
    /// together, however many there are.
    #[test]
    fn a_folder_input_is_read_under_one_limit() {
        let d = tempfile::tempdir().unwrap();
        let pkg = d.path().join("s.treeship");
        fs::create_dir_all(pkg.join("proofs")).unwrap();
        fs::write(pkg.join("receipt.json"), [b'x'; 10]).unwrap();
        fs::write(pkg.join("proofs/a.json"), [b'x'; 10]).unwrap();
        fs::write(pkg.join("proofs/b.json"), [b'x'; 10]).unwrap();
        let files = read_package(&pkg, 25);
        assert!(files.receipt.is_ok());
        assert!(files.proofs[0].1.is_ok());
        assert_eq!(files.proofs[1].1, Err(InputError::FolderTooLarge(25)));
        assert!(files.proofs[1].1.as_ref().unwrap_err().is_size());

        let j = d.path().join("journal");
        fs::create_dir_all(j.join("records")).unwrap();
        fs::create_dir_all(j.join("heads")).unwrap();
        fs::write(j.join("heads/current.json"), [b'x'; 10]).unwrap();
        for n in 1..=3 {
            fs::write(
                j.join(format!("records/{n:010}.approval-use.x.json")),
                [b'x'; 10],
            )
            .unwrap();
        }
        assert!(is_journal(&j));
        let files = read_journal(&j, 35);
        let ok: Vec<bool> = files.records.iter().map(|(_, r)| r.is_ok()).collect();
        assert_eq!(ok, [true, true, false]);
    }

    #[test]
    fn a_session_package_is_one_input() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::create_dir_all(d.join("sessions/s1.treeship/proofs")).unwrap();
        fs::create_dir_all(d.join("sessions/s2.treeship")).unwrap();
        for f in [
            "s1.treeship/receipt.json",
            "s1.treeship/merkle.json",
            "s1.treeship/proofs/a.proof.json",
            "s2.treeship/x.json",
            "a.json",
        ] {
            fs::write(d.join("sessions").join(f), "{}").unwrap();
        }
        let mut notes = Vec::new();
        let got = expand(&[d.join("sessions")], &mut notes);
        assert_eq!(
            labels(&got, d),
            [
                "sessions/a.json",
                "sessions/s2.treeship/x.json",
                "package sessions/s1.treeship"
            ]
        );
        let got = expand(&[d.join("sessions/s1.treeship")], &mut notes);
        assert_eq!(labels(&got, d), ["package sessions/s1.treeship"]);
        let files = read_package(&d.join("sessions/s1.treeship"), 1 << 20);
        assert_eq!(files.receipt.as_deref(), Ok(&b"{}"[..]));
        assert!(files.render.is_none());
        assert_eq!(files.proofs.len(), 1);
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
