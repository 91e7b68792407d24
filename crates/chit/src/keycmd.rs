//! `chit keygen`, `chit key show` and `chit sign`.

use crate::cli::{KeygenArgs, SignArgs};
use crate::inputs::{self, Source};
use crate::Fail;
use chit_core::envelope::{Envelope, TREESHIP_RECEIPT};
use chit_core::keys::SecretKey;
use chit_core::{canon, json, Kind};
use std::io::Write;
use std::path::Path;

/// The most a key file may be: a PEM key is a few hundred bytes.
const KEY_FILE_MAX: usize = 16 * 1024;

pub fn keygen(a: &KeygenArgs, out: &mut dyn Write) -> Result<i32, Fail> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .map_err(|e| Fail(2, format!("no randomness from the system: {e}")))?;
    let key = SecretKey::from_seed(&seed);
    seed.fill(0);
    let pem = key.to_pem().map_err(|e| Fail(2, e.to_string()))?;
    write_private(&a.out, pem.as_bytes()).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Fail(
                2,
                format!(
                    "{} exists; chit never overwrites a key (choose another --out)",
                    a.out.display()
                ),
            )
        } else {
            Fail(
                2,
                format!(
                    "cannot write {}: {}",
                    a.out.display(),
                    inputs::describe_io(&e)
                ),
            )
        }
    })?;
    writeln!(out, "wrote {} (keep it secret)", a.out.display()).map_err(crate::write_fail)?;
    show_public(&key, out)
}

/// Creates `path` readable by its owner only, refusing an existing file.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
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

pub fn read_key(path: &Path) -> Result<SecretKey, Fail> {
    let bytes = inputs::read(&Source::File(path.to_path_buf()), KEY_FILE_MAX)
        .map_err(|why| Fail(2, format!("cannot read key {}: {why}", path.display())))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Fail(2, format!("{} is not a PEM key file", path.display())))?;
    SecretKey::from_pem(&text).map_err(|e| Fail(2, format!("{}: {e}", path.display())))
}

pub fn key_show(path: &Path, out: &mut dyn Write) -> Result<i32, Fail> {
    let key = read_key(path)?;
    show_public(&key, out)
}

fn show_public(key: &SecretKey, out: &mut dyn Write) -> Result<i32, Fail> {
    let p = key.public();
    writeln!(out, "did:key     {}", p.did_key()).map_err(crate::write_fail)?;
    writeln!(out, "treeship    {}", p.treeship()).map_err(crate::write_fail)?;
    writeln!(out, "key id      {}", p.key_id()).map_err(crate::write_fail)?;
    Ok(0)
}

pub fn sign(a: &SignArgs, out: &mut dyn Write) -> Result<i32, Fail> {
    let limits = a.limits.limits();
    let key = read_key(&a.key)?;
    let source = if a.payload.as_os_str() == "-" {
        Source::Stdin
    } else {
        Source::File(a.payload.clone())
    };
    let bytes = inputs::read(&source, limits.max_size)
        .map_err(|why| Fail(2, format!("cannot read {}: {why}", source.label())))?;
    let doc = json::parse(&bytes, &limits)
        .map_err(|e| Fail(2, format!("cannot read {}: {e}", source.label())))?;
    if !doc.root().is_object() {
        return Err(Fail(
            1,
            format!("{}: a payload must be a JSON object", source.label()),
        ));
    }
    match Kind::from_name(&a.kind) {
        Some(kind) => {
            let report = kind.check(&doc);
            let mut broken: Vec<&str> = report.errors.iter().map(|f| f.rule).collect();
            broken.sort_unstable();
            broken.dedup();
            if !broken.is_empty() {
                return Err(Fail(
                    1,
                    format!(
                        "refusing to sign {}: as a {} it breaks {} (run 'chit verify --kind {} {}' for the details)",
                        source.label(),
                        kind.name(),
                        broken.join(", "),
                        kind.name(),
                        source.label()
                    ),
                ));
            }
        }
        None => eprintln!(
            "chit: warning: chit does not know the kind '{}'; the payload is signed as given, unchecked",
            a.kind
        ),
    }
    if let Some(s) = &a.subject {
        let ok = s.len() == 36
            && s.starts_with("art_")
            && s[4..]
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
        if !ok {
            return Err(Fail(
                2,
                format!("--subject {s} is not an art id (art_ and 32 lower-case hex digits)"),
            ));
        }
    }
    let env = sign_statement(
        &key,
        &a.kind,
        &a.system,
        a.subject.as_deref(),
        doc.to_value(),
    )?;
    write_envelope(&env, a.out.as_deref(), out, |path, art| {
        format!("signed {} {art} ({})", path.display(), a.kind)
    })
}

/// Writes a signed envelope to `path` (atomically), reporting it on `out`
/// with `said(path, art id)`, or to `out` itself when there is no path.
pub fn write_envelope(
    env: &Envelope,
    path: Option<&Path>,
    out: &mut dyn Write,
    said: impl FnOnce(&Path, &str) -> String,
) -> Result<i32, Fail> {
    let text = env.to_json();
    match path {
        None => out.write_all(text.as_bytes()).map_err(crate::write_fail)?,
        Some(path) => {
            crate::write_atomically(path, text.as_bytes())
                .map_err(|e| Fail(2, format!("cannot write {}: {e}", path.display())))?;
            writeln!(out, "{}", said(path, &env.ids().artifact_id)).map_err(crate::write_fail)?;
        }
    }
    Ok(0)
}

/// Signs a Treeship receipt statement around `payload`. The statement is
/// written as RFC 8785 canonical JSON: the same payload and options always
/// give the same bytes, whatever their spelling.
pub fn sign_statement(
    key: &SecretKey,
    kind: &str,
    system: &str,
    subject: Option<&str>,
    payload: serde_json::Value,
) -> Result<Envelope, Fail> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut st = serde_json::Map::new();
    st.insert("type".into(), chit_core::statement::STATEMENT_TYPE.into());
    st.insert(
        "timestamp".into(),
        chit_core::time::format_unix_utc(now).into(),
    );
    st.insert("system".into(), system.into());
    if let Some(s) = subject {
        st.insert("subject".into(), serde_json::json!({ "artifactId": s }));
    }
    st.insert("kind".into(), kind.into());
    st.insert("payload".into(), payload);
    let text =
        serde_json::to_vec(&serde_json::Value::Object(st)).map_err(|e| Fail(2, e.to_string()))?;
    let doc = json::parse(&text, &chit_core::Limits::default()).map_err(|e| {
        Fail(
            2,
            format!("internal error: the statement does not read back: {e}"),
        )
    })?;
    Ok(Envelope::sign(
        TREESHIP_RECEIPT,
        canon::to_vec(doc.root(), canon::Profile::Jcs),
        key,
    ))
}
