//! chit: produce, verify and audit receipts of AI work.

mod cli;
mod inputs;
mod keycmd;
mod lineage;
mod recompute;
mod render;
mod verify;

use chit_core::canon::{self, Profile};
use chit_core::{json, Doc, Kind, Limits};
use clap::Parser;
use cli::{
    CanonArgs, Cli, ColorWhen, Command, DigestArgs, KeyCommand, LineageCommand, PacketsCommand,
    ProfileArg, SealArgs,
};
use inputs::Source;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Checking is allocation-heavy and runs on every core; mimalloc's per-thread
/// heaps keep the allocator off the critical path.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A failure that ends a command: the exit status and the message.
pub struct Fail(pub i32, pub String);

type CmdResult = Result<i32, Fail>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let choice = match cli.color {
        ColorWhen::Always => anstream::ColorChoice::Always,
        ColorWhen::Never => anstream::ColorChoice::Never,
        ColorWhen::Auto => anstream::ColorChoice::Auto,
    };
    choice.write_global();
    let stdout = anstream::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let result = match &cli.command {
        Command::Verify(a) => verify::run(a, &mut out),
        Command::Digest(a) => digest(a, &mut out),
        Command::Seal(a) => seal(a, &mut out),
        Command::Canon(a) => canon_cmd(a, &mut out),
        Command::Keygen(a) => keycmd::keygen(a, &mut out),
        Command::Key(KeyCommand::Show { file }) => keycmd::key_show(file, &mut out),
        Command::Sign(a) => keycmd::sign(a, &mut out),
        Command::Packets(PacketsCommand::Recompute(a)) => recompute::run(a, &mut out),
        Command::Lineage(LineageCommand::Bound(a)) => lineage::bound(a, &mut out),
        Command::Lineage(LineageCommand::Measure(a)) => lineage::measure(a, &mut out),
        Command::Lineage(LineageCommand::Open(a)) => lineage::open(a, &mut out),
    };
    let flushed = out.flush();
    let code = match result {
        Ok(code) => code,
        Err(Fail(code, msg)) => {
            let mut err = anstream::stderr();
            let style = anstyle::AnsiColor::Red.on_default().bold();
            let _ = writeln!(err, "{style}chit:{style:#} {msg}");
            code
        }
    };
    if let Err(e) = flushed {
        // A closed pipe (`chit verify ... | head`) is not worth a message.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("chit: cannot write output: {e}");
            return ExitCode::from(2);
        }
    }
    ExitCode::from(code as u8)
}

fn source_of(p: &Path) -> Source {
    if p.as_os_str() == "-" {
        Source::Stdin
    } else {
        Source::File(p.to_path_buf())
    }
}

/// Reads one input whole, or fails with exit 2 and a one-line reason.
fn read_bytes(p: &Path, limits: &Limits) -> Result<Vec<u8>, Fail> {
    let source = source_of(p);
    inputs::read(&source, limits.max_size)
        .map_err(|why| Fail(2, format!("cannot read {}: {why}", source.label())))
}

/// Parses a document read by [`read_bytes`], or fails with exit 2.
fn parse_doc<'a>(p: &Path, bytes: &'a [u8], limits: &Limits) -> Result<Doc<'a>, Fail> {
    json::parse(bytes, limits)
        .map_err(|e| Fail(2, format!("cannot read {}: {e}", source_of(p).label())))
}

fn kind_of(doc: &Doc, kind: Option<Kind>, p: &Path) -> Result<Kind, Fail> {
    kind.or_else(|| Kind::detect(doc)).ok_or_else(|| {
        let known: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        Fail(
            2,
            format!(
                "{} is not a receipt chit recognises; name its kind with --kind ({})",
                p.display(),
                known.join(", ")
            ),
        )
    })
}

/// The input as a Lattice executor packet, when it is one (or `--kind`
/// says so): read under Lattice's profile, which keeps lone surrogates.
fn lattice_packet(
    bytes: &[u8],
    kind: Option<Kind>,
    p: &Path,
) -> Result<Option<chit_core::lattice::Value>, Fail> {
    let forced = kind == Some(Kind::LatticePacket);
    if kind.is_some() && !forced {
        return Ok(None);
    }
    chit_core::kinds::executor_packet::recognise(bytes, forced)
        .transpose()
        .map_err(|e| Fail(2, format!("cannot read {}: {e}", source_of(p).label())))
}

fn digest(a: &DigestArgs, out: &mut dyn Write) -> CmdResult {
    let limits = a.limits.limits();
    let bytes = read_bytes(&a.input, &limits)?;
    if let Some(v) = lattice_packet(&bytes, a.kind, &a.input)? {
        let (context, packet) = chit_core::kinds::executor_packet::sealed_digests(&v)
            .map_err(|e| Fail(1, format!("{}: {e}", a.input.display())))?;
        writeln!(
            out,
            "context_content_digest {context}\npacket_digest          {packet}"
        )
        .map_err(write_fail)?;
        return Ok(0);
    }
    let doc = parse_doc(&a.input, &bytes, &limits)?;
    let kind = kind_of(&doc, a.kind, &a.input)?;
    let d = kind.digest(&doc).ok_or_else(|| match kind {
        Kind::RunReceipt => Fail(2, format!("{} is not a JSON object", a.input.display())),
        _ => Fail(
            2,
            format!(
                "a {} carries no digest of its own (its envelope's art id names it)",
                kind.name()
            ),
        ),
    })?;
    writeln!(out, "{d}").map_err(write_fail)?;
    Ok(0)
}

fn seal(a: &SealArgs, out: &mut dyn Write) -> CmdResult {
    let limits = a.limits.limits();
    let source = source_of(&a.input);
    let text = inputs::read(&source, limits.max_size)
        .map_err(|why| Fail(2, format!("cannot read {}: {why}", source.label())))?;
    if let Some(v) = lattice_packet(&text, a.kind, &a.input)? {
        return seal_lattice(a, &source, &v, out);
    }
    let doc = json::parse(&text, &limits)
        .map_err(|e| Fail(2, format!("cannot read {}: {e}", source.label())))?;
    let kind = kind_of(&doc, a.kind, &a.input)?;
    // A stale digest is what sealing mends; every other error refuses.
    refuse_broken(&kind.check(&doc), &["D1"], &source)?;
    let d = kind
        .digest(&doc)
        .ok_or_else(|| Fail(2, format!("a {} has no digest to seal", kind.name())))?;
    // Only the digest's bytes change: formatting, key order and number
    // spellings stay as the user wrote them.
    let mut value = Vec::new();
    canon::write_string(&d, &mut value);
    let sealed = std::str::from_utf8(&value)
        .ok()
        .and_then(|v| chit_core::edit::set_top_level_member(&text, "digest", v))
        .ok_or_else(|| Fail(2, format!("{} is not a JSON object", source.label())))?;
    let recheck = json::parse(&sealed, &limits).map(|d| kind.check(&d));
    let valid = recheck.as_ref().is_ok_and(|r| r.valid());
    if let Some(target) = write_sealed(a, &source, &sealed, valid, out)? {
        writeln!(out, "sealed {} {d}", target.display()).map_err(write_fail)?;
    }
    Ok(0)
}

/// Refuses to seal a document that breaks any rule but those sealing mends
/// (`mended`), naming the rules.
fn refuse_broken(report: &chit_core::Report, mended: &[&str], source: &Source) -> Result<(), Fail> {
    let mut broken: Vec<&str> = report
        .errors
        .iter()
        .map(|f| f.rule)
        .filter(|r| !mended.contains(r))
        .collect();
    broken.sort_unstable();
    broken.dedup();
    if broken.is_empty() {
        return Ok(());
    }
    Err(Fail(
        1,
        format!(
            "refusing to seal {}: it breaks {} (run 'chit verify {}' for the details)",
            source.label(),
            broken.join(", "),
            source.label()
        ),
    ))
}

/// Writes sealed bytes where `seal` was asked to (over the input, to
/// `--out`, or to standard output for `-`), but never bytes that do not
/// verify. The path written, or `None` for standard output.
fn write_sealed(
    a: &SealArgs,
    source: &Source,
    sealed: &[u8],
    valid: bool,
    out: &mut dyn Write,
) -> Result<Option<PathBuf>, Fail> {
    if !valid {
        return Err(Fail(
            2,
            format!(
                "internal error: sealing {} did not give a valid receipt; nothing was written",
                source.label()
            ),
        ));
    }
    let target: PathBuf = a.out.clone().unwrap_or_else(|| a.input.clone());
    if target.as_os_str() == "-" {
        out.write_all(sealed).map_err(write_fail)?;
        return Ok(None);
    }
    let target = replaceable(&target)?;
    write_atomically(&target, sealed)
        .map_err(|e| Fail(2, format!("cannot write {}: {e}", target.display())))?;
    Ok(Some(target))
}

/// Seals a Lattice executor packet: both digests set, written as its
/// canonical bytes. A packet that breaks any rule other than X2-X4 (which
/// sealing mends) is refused.
fn seal_lattice(
    a: &SealArgs,
    source: &Source,
    v: &chit_core::lattice::Value,
    out: &mut dyn Write,
) -> CmdResult {
    use chit_core::kinds::executor_packet as xp;
    use chit_core::streams::Origin;
    let before = xp::check_value(v, None, Origin::new(source.label(), None)).report;
    refuse_broken(&before, &["X2", "X3", "X4"], source)?;
    let sealed =
        xp::seal(v).map_err(|e| Fail(1, format!("refusing to seal {}: {e}", source.label())))?;
    let again = xp::check_bytes(&sealed, Origin::new(source.label(), None));
    let valid = again.as_ref().is_ok_and(|c| c.report.valid());
    let Some(target) = write_sealed(a, source, &sealed, valid, out)? else {
        return Ok(0);
    };
    let sealed_value = chit_core::lattice::parse(&sealed).map_err(|e| Fail(2, e.to_string()))?;
    let digest = sealed_value
        .get("packet_digest")
        .and_then(|d| d.as_text())
        .unwrap_or_default();
    writeln!(out, "sealed {} packet_digest {digest}", target.display()).map_err(write_fail)?;
    Ok(0)
}

/// The file to replace when writing to `path`: a link's target (so the link
/// stays a link), refusing a file with several hard links (replacing it
/// would split them).
fn replaceable(path: &Path) -> Result<PathBuf, Fail> {
    let real = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).map_err(|e| {
            Fail(
                2,
                format!(
                    "cannot follow the link {}: {}",
                    path.display(),
                    inputs::describe_io(&e)
                ),
            )
        })?,
        _ => path.to_path_buf(),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Ok(m) = std::fs::metadata(&real) {
            if m.nlink() > 1 {
                return Err(Fail(
                    2,
                    format!(
                        "{} has {} hard links; replacing it would split them, so it is left as it was \
                         (write elsewhere with --out)",
                        path.display(),
                        m.nlink()
                    ),
                ));
            }
        }
    }
    Ok(real)
}

/// Replaces `path` with `bytes` so that a crash leaves the old file or the
/// new one, never a mix: write beside it, sync, rename over it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
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

/// Appends one document's canonical bytes under `profile` to `out`, or
/// says why there are none; `line` places an error in JSON Lines.
fn canonicalise(
    bytes: &[u8],
    profile: ProfileArg,
    limits: &Limits,
    line: Option<usize>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let at = |why: String| match line {
        Some(n) => format!("line {n}: {why}"),
        None => why,
    };
    match profile {
        ProfileArg::Jcs => json::parse(bytes, limits)
            .map(|doc| canon::write(doc.root(), Profile::Jcs, out))
            .map_err(|e| match line {
                Some(n) => e.starting_at_line(n).to_string(),
                None => e.to_string(),
            }),
        // Lattice's profile reads lone surrogates chit's strict reader refuses.
        ProfileArg::Lattice => chit_core::lattice::parse(bytes)
            .and_then(|v| chit_core::lattice::canonical(&v))
            .map(|c| out.extend_from_slice(&c))
            .map_err(|e| at(format!("not writable in Lattice's profile: {e}"))),
    }
}

fn canon_cmd(a: &CanonArgs, out: &mut dyn Write) -> CmdResult {
    let limits = a.limits.limits();
    let source = source_of(&a.input);
    let mut buf = Vec::with_capacity(1 << 16);
    if !a.lines {
        let text = read_bytes(&a.input, &limits)?;
        canonicalise(&text, a.profile, &limits, None, &mut buf)
            .map_err(|why| Fail(2, format!("cannot read {}: {why}", source.label())))?;
        if std::io::stdout().is_terminal() {
            buf.push(b'\n');
        }
        out.write_all(&buf).map_err(write_fail)?;
        return Ok(0);
    }
    let reader = inputs::open(&source)
        .map_err(|why| Fail(2, format!("cannot read {}: {why}", source.label())))?;
    for (n, line) in inputs::Lines::new(reader, limits.max_size) {
        let parsed = line
            .map_err(|why| format!("line {n}: {why}"))
            .and_then(|l| canonicalise(&l, a.profile, &limits, Some(n), &mut buf));
        if let Err(why) = parsed {
            // What was converted before the bad line is still written.
            out.write_all(&buf).map_err(write_fail)?;
            return Err(Fail(2, format!("cannot read {}: {why}", source.label())));
        }
        buf.push(b'\n');
        if buf.len() > 1 << 20 {
            out.write_all(&buf).map_err(write_fail)?;
            buf.clear();
        }
    }
    out.write_all(&buf).map_err(write_fail)?;
    Ok(0)
}

pub fn write_fail(e: std::io::Error) -> Fail {
    Fail(2, format!("cannot write output: {e}"))
}
