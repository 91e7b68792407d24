//! Who may write: a TOML file of bearer tokens, each stored as the SHA-256
//! of the token (never the token), with a name and the kinds it may submit.
//!
//! ```toml
//! [[token]]
//! name = "ci"
//! sha256 = "…64 hex digits: printf %s "$TOKEN" | sha256sum"
//! kinds = ["run-receipt", "verification.packet.v1"]   # omitted: every kind
//! rate = 200    # requests a second, in bursts of as many; omitted: no limit
//! ```

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

/// The tokens file, read once at start.
#[derive(Clone, Debug, Default)]
pub struct Tokens(Vec<Token>);

impl Tokens {
    pub fn parse(text: &str) -> Result<Tokens, String> {
        let v: toml::Value = toml::from_str(text).map_err(|e| e.to_string())?;
        let table = v.as_table().ok_or("not a TOML table")?;
        if let Some(k) = table.keys().find(|k| *k != "token") {
            return Err(format!(
                "unknown key {k:?}: the file holds [[token]] tables"
            ));
        }
        let list = match table.get("token") {
            None => return Ok(Tokens::default()),
            Some(l) => l
                .as_array()
                .ok_or("token must be an array of tables ([[token]])")?,
        };
        let mut out = Vec::new();
        for (i, t) in list.iter().enumerate() {
            let at = |what: &str| format!("token {}: {what}", i + 1);
            let t = t.as_table().ok_or_else(|| at("not a table"))?;
            for k in t.keys() {
                if !["name", "sha256", "kinds", "rate"].contains(&k.as_str()) {
                    return Err(at(&format!("unknown key {k:?}")));
                }
            }
            let name = t
                .get("name")
                .and_then(|n| n.as_str())
                .filter(|n| !n.is_empty())
                .ok_or_else(|| at("needs a name"))?
                .to_string();
            let hex = t
                .get("sha256")
                .and_then(|h| h.as_str())
                .ok_or_else(|| at("needs sha256, the token's SHA-256 in hex"))?;
            let sha256 =
                chit_core::digest::unhex32(hex).ok_or_else(|| at("sha256 is not 64 hex digits"))?;
            let kinds = match t.get("kinds") {
                None => None,
                Some(k) => Some(
                    k.as_array()
                        .ok_or_else(|| at("kinds is not a list"))?
                        .iter()
                        .map(|x| x.as_str().map(str::to_string))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| at("kinds holds something not a string"))?,
                ),
            };
            let rate = match t.get("rate") {
                None => None,
                Some(r) => Some(
                    r.as_integer()
                        .and_then(|r| u32::try_from(r).ok())
                        .filter(|&r| r > 0)
                        .ok_or_else(|| {
                            at("rate is not a whole number of requests a second above 0")
                        })?,
                ),
            };
            if out.iter().any(|o: &Token| o.sha256 == sha256) {
                return Err(at("the same token twice"));
            }
            out.push(Token {
                name,
                sha256,
                kinds,
                rate,
            });
        }
        Ok(Tokens(out))
    }

    /// The token a bearer value is, compared by digest (so in time that
    /// does not depend on where a guess first differs).
    pub fn find(&self, presented: &str) -> Option<&Token> {
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

/// Token buckets, one per token name: `rate` requests a second, at most
/// `rate` at once.
#[derive(Default)]
pub struct Buckets(std::sync::Mutex<std::collections::HashMap<String, (f64, std::time::Instant)>>);

impl Buckets {
    /// Takes one request from the token's bucket: Ok, or the seconds until
    /// one is there.
    pub fn take(&self, t: &Token) -> Result<(), f64> {
        let Some(rate) = t.rate else { return Ok(()) };
        let rate = f64::from(rate);
        let now = std::time::Instant::now();
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (level, at) = map.entry(t.name.clone()).or_insert((rate, now));
        *level = (*level + now.duration_since(*at).as_secs_f64() * rate).min(rate);
        *at = now;
        if *level >= 1.0 {
            *level -= 1.0;
            Ok(())
        } else {
            Err((1.0 - *level) / rate)
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
}
