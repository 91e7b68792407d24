//! Who may write: a TOML file of bearer tokens, each stored as the SHA-256
//! of the token (never the token), with a name and the kinds it may submit.
//!
//! ```toml
//! [[token]]
//! name = "ci"
//! sha256 = "…64 hex digits: printf %s "$TOKEN" | sha256sum"
//! kinds = ["run-receipt", "verification.packet.v1"]   # omitted: every kind
//! rate = 200    # receipts a second, in bursts of as many; omitted: no limit
//! ```
//!
//! The file is checked as a log's policy is: a kind chit never reports,
//! an empty `kinds` and a file with no token are refused (a token that can
//! never write is a mistake), and so is a file other users may write.

use sha2::{Digest, Sha256};

/// One token's entry.
#[derive(Clone, Debug)]
pub struct Token {
    pub name: String,
    sha256: [u8; 32],
    /// None: every kind.
    pub kinds: Option<Vec<String>>,
    /// Write requests a second (and the burst allowed); None: no limit.
    pub rate: Option<u32>,
}

impl Token {
    pub fn may_submit(&self, kind: &str) -> bool {
        self.kinds
            .as_ref()
            .is_none_or(|ks| ks.iter().any(|k| k == kind))
    }
}

/// The tokens file, read once at start. A request holds the token it
/// was made with by reference count, not by a copy of its entry.
#[derive(Clone, Debug, Default)]
pub struct Tokens(Vec<std::sync::Arc<Token>>);

/// The file as written: `[[token]]` tables and nothing else.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    token: Vec<Entry>,
}

/// One `[[token]]` table as written, every key known.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    sha256: String,
    kinds: Option<Vec<String>>,
    rate: Option<u32>,
}

/// Why a tokens file is refused.
#[derive(Debug, thiserror::Error)]
pub enum TokensError {
    /// Not TOML, or not the file's shape: where, and what is wrong.
    #[error("{0}")]
    Toml(String),
    #[error(
        "no [[token]] in the file: a server started with --tokens takes writes with them (start \
         it without --tokens to serve reads only)"
    )]
    NoToken,
    #[error("token {0}: needs a name")]
    NoName(usize),
    #[error("token {0}: sha256 is not 64 hex digits")]
    Digest(usize),
    #[error(
        "token {0}: kinds is empty, so the token could never write: name the kinds it may \
         submit, or leave kinds out for every kind"
    )]
    NoKinds(usize),
    #[error(
        "token {at}: kinds names {kind:?}, a kind chit never logs under; the kinds are {}",
        chit_core::kinds::LABELS.join(", ")
    )]
    UnknownKind { at: usize, kind: String },
    #[error("token {0}: rate is not a whole number of receipts a second above 0")]
    Rate(usize),
    #[error("token {0}: the same token twice")]
    SameToken(usize),
    #[error(
        "token {at}: a second token named {name:?}: names tell tokens apart in the log and in \
         their rates"
    )]
    SameName { at: usize, name: String },
    #[error("cannot read {}: {source}", .path.display())]
    Unreadable {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} can be written by other users (mode {mode:04o}), who could give themselves a token: \
         chmod 600 {}",
        .path.display(),
        .path.display()
    )]
    Writable { path: std::path::PathBuf, mode: u32 },
}

impl Tokens {
    /// Reads a tokens file (TOML, read by serde: an unknown key anywhere is
    /// refused), then holds it to what a token must be: named once, its
    /// digest 64 hex digits and given once, its kinds ones chit logs
    /// under (and some), its rate above 0, and at least one token.
    pub fn parse(text: &str) -> Result<Tokens, TokensError> {
        let file: File =
            toml::from_str(text).map_err(|e| TokensError::Toml(toml_error(text, &e)))?;
        if file.token.is_empty() {
            return Err(TokensError::NoToken);
        }
        let mut out: Vec<std::sync::Arc<Token>> = Vec::new();
        for (i, t) in file.token.into_iter().enumerate() {
            let at = i + 1;
            if t.name.is_empty() {
                return Err(TokensError::NoName(at));
            }
            let sha256 = chit_core::digest::unhex32(&t.sha256).ok_or(TokensError::Digest(at))?;
            if let Some(kinds) = &t.kinds {
                if kinds.is_empty() {
                    return Err(TokensError::NoKinds(at));
                }
                if let Some(k) = kinds.iter().find(|k| !chit_core::kinds::is_label(k)) {
                    return Err(TokensError::UnknownKind {
                        at,
                        kind: k.clone(),
                    });
                }
            }
            if t.rate == Some(0) {
                return Err(TokensError::Rate(at));
            }
            if out.iter().any(|o| o.sha256 == sha256) {
                return Err(TokensError::SameToken(at));
            }
            if out.iter().any(|o| o.name == t.name) {
                return Err(TokensError::SameName { at, name: t.name });
            }
            out.push(std::sync::Arc::new(Token {
                name: t.name,
                sha256,
                kinds: t.kinds,
                rate: t.rate,
            }));
        }
        Ok(Tokens(out))
    }

    /// The token a bearer value is, compared by digest (so in time that
    /// does not depend on where a guess first differs).
    pub fn find(&self, presented: &str) -> Option<&std::sync::Arc<Token>> {
        let d: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        self.0.iter().find(|t| {
            t.sha256
                .iter()
                .zip(d.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
        })
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A TOML error on one line: where it is and what is wrong.
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    match e.span() {
        Some(span) => {
            let before = &text.as_bytes()[..span.start.min(text.len())];
            let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
            let column = 1 + String::from_utf8_lossy(
                &before[before
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |p| p + 1)..],
            )
            .chars()
            .count();
            format!("line {line}, column {column}: {}", e.message().trim_end())
        }
        None => e.message().trim_end().to_string(),
    }
}

/// What a tokens file's permissions say: an error when users other than
/// its owner may write it (they could give themselves a token); a warning
/// when they may read it (the digests let them guess weak tokens offline).
#[cfg(unix)]
pub fn check_permissions(path: &std::path::Path) -> Result<Option<String>, TokensError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|source| TokensError::Unreadable {
            path: path.to_path_buf(),
            source,
        })?
        .permissions()
        .mode();
    if mode & 0o022 != 0 {
        return Err(TokensError::Writable {
            path: path.to_path_buf(),
            mode: mode & 0o7777,
        });
    }
    let shown = path.display();
    Ok((mode & 0o044 != 0).then(|| {
        format!(
            "{shown} can be read by other users (mode {:04o}); its digests let them guess weak \
             tokens offline: chmod 600 {shown}",
            mode & 0o7777
        )
    }))
}

#[cfg(not(unix))]
pub fn check_permissions(_path: &std::path::Path) -> Result<Option<String>, TokensError> {
    Ok(None)
}

/// Token buckets, one per token name: `rate` receipts a second, at most
/// `rate` at once.
#[derive(Default)]
pub struct Buckets(std::sync::Mutex<std::collections::HashMap<String, (f64, std::time::Instant)>>);

impl Buckets {
    /// Takes one receipt from the token's bucket: Ok, or the seconds until
    /// one is there.
    pub fn take(&self, t: &Token) -> Result<(), f64> {
        match self.take_up_to(t, 1) {
            (1, _) => Ok(()),
            (_, wait) => Err(wait),
        }
    }

    /// Takes as many of `n` receipts as the token's bucket holds: how
    /// many, and the seconds until one more is there.
    pub fn take_up_to(&self, t: &Token, n: usize) -> (usize, f64) {
        let Some(rate) = t.rate else { return (n, 0.0) };
        let rate = f64::from(rate);
        let now = std::time::Instant::now();
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (level, at) = map.entry(t.name.clone()).or_insert((rate, now));
        *level = (*level + now.duration_since(*at).as_secs_f64() * rate).min(rate);
        *at = now;
        let taken = (level.floor() as usize).min(n);
        *level -= taken as f64;
        (taken, (1.0 - *level).max(0.0) / rate)
    }

    /// Whether the token's bucket holds a receipt now (nothing taken), or
    /// the seconds until it does.
    pub fn ready(&self, t: &Token) -> Result<(), f64> {
        let Some(rate) = t.rate else { return Ok(()) };
        let rate = f64::from(rate);
        let now = std::time::Instant::now();
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let level = match map.get(&t.name) {
            None => rate,
            Some((level, at)) => (level + now.duration_since(*at).as_secs_f64() * rate).min(rate),
        };
        if level >= 1.0 {
            Ok(())
        } else {
            Err((1.0 - level) / rate)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_found_by_digest_and_hold_their_kinds() {
        let hex: String = Sha256::digest(b"s3cret")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let t = Tokens::parse(&format!(
            "[[token]]\nname = \"ci\"\nsha256 = \"{hex}\"\nkinds = [\"run-receipt\"]\n"
        ))
        .unwrap();
        let ci = t.find("s3cret").unwrap();
        assert_eq!(ci.name, "ci");
        assert!(ci.may_submit("run-receipt"));
        assert!(!ci.may_submit("verification.packet.v1"));
        assert!(t.find("s3cre").is_none());
        assert!(t.find("").is_none());
        assert!(Tokens::parse("[[token]]\nname = \"x\"\nsha256 = \"00\"\n").is_err());
        assert!(Tokens::parse("[[tokens]]\n").is_err());
    }

    /// A token that could never write is refused, naming what is wrong.
    #[test]
    fn tokens_that_can_never_write_are_refused() {
        let hex = "ab".repeat(32);
        let one = |extra: &str| {
            Tokens::parse(&format!(
                "[[token]]\nname = \"ci\"\nsha256 = \"{hex}\"\n{extra}"
            ))
        };
        let e = one("kinds = [\"no-such-kind\"]\n").unwrap_err().to_string();
        assert!(
            e.contains("\"no-such-kind\"") && e.contains("run-receipt"),
            "{e}"
        );
        let e = one("kinds = []\n").unwrap_err().to_string();
        assert!(e.contains("kinds is empty"), "{e}");
        let two = format!(
            "[[token]]\nname = \"ci\"\nsha256 = \"{hex}\"\n[[token]]\nname = \"ci\"\nsha256 = \"{}\"\n",
            "cd".repeat(32)
        );
        assert!(Tokens::parse(&two)
            .unwrap_err()
            .to_string()
            .contains("a second token named"));
        for text in ["", "# no tokens\n", "token = []\n"] {
            let e = Tokens::parse(text).unwrap_err().to_string();
            assert!(e.contains("no [[token]]"), "{text:?}: {e}");
        }
        // Every kind chit logs under may be named, "envelope" too.
        for k in chit_core::kinds::LABELS {
            assert!(one(&format!("kinds = [\"{k}\"]\n")).is_ok(), "{k}");
        }
        // An unknown key, in a table or beside them, is refused, named.
        let e = one("color = \"red\"\n").unwrap_err().to_string();
        assert!(e.contains("color"), "{e}");
        let e = Tokens::parse(&format!(
            "owner = 1\n[[token]]\nname = \"ci\"\nsha256 = \"{hex}\"\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("owner"), "{e}");
        assert!(one("rate = 0\n").is_err() && one("rate = -1\n").is_err());
        assert!(one("rate = 5\n").is_ok());
        // A TOML error is one line, with where it is.
        let e = Tokens::parse("[[token]\nname = 1\n")
            .unwrap_err()
            .to_string();
        assert!(
            !e.contains('\n') && e.starts_with("line 1, column "),
            "{e:?}"
        );
    }

    /// A bucket gives a request's receipts as far as it holds them.
    #[test]
    fn a_bucket_gives_up_to_what_it_holds() {
        let t = Token {
            name: "t".into(),
            sha256: [0; 32],
            kinds: None,
            rate: Some(3),
        };
        let b = Buckets::default();
        assert!(b.ready(&t).is_ok());
        assert_eq!(b.take_up_to(&t, 5).0, 3);
        let (n, wait) = b.take_up_to(&t, 5);
        assert_eq!(n, 0);
        assert!(wait > 0.0 && wait <= 1.0 / 3.0 + 1e-9, "{wait}");
        assert!(b.ready(&t).is_err());
        assert!(b.take(&t).is_err());
        let free = Token { rate: None, ..t };
        assert_eq!(b.take_up_to(&free, 1_000_000).0, 1_000_000);
    }
}
