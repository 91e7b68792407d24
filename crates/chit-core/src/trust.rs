//! The keys a verifier trusts: a TOML file of `[[key]]` tables.
//!
//! ```toml
//! [[key]]
//! name = "prover"
//! public_key = "ed25519:SeVxSanX9yDn1yvX3DdaNsLaqXcy2X3FUHSyz8QRHFY"   # or did:key:z6Mk…
//! kinds = ["verification.packet.v1"]   # optional: the kinds it may sign
//! did = "did:web:example.com"          # optional: the DID it answers for
//! ```

use crate::envelope::KeyRing;
use crate::keys::{KeyError, PublicKey};

/// Why a trust file could not be read. Each problem inside a `[[key]]`
/// table names the table by its number, counted from 1.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    /// The TOML parser's message.
    #[error("not valid TOML: {0}")]
    NotToml(String),
    #[error("unknown entry '{0}' (a trust file holds [[key]] tables)")]
    UnknownEntry(String),
    #[error("'key' must be a list of [[key]] tables")]
    KeyNotList,
    #[error("no [[key]] tables: the file trusts nothing")]
    NoKeys,
    #[error("[[key]] number {number} is not a table")]
    NotTable { number: usize },
    #[error("[[key]] number {number}: unknown field '{field}' (name, public_key, kinds, did)")]
    UnknownField { number: usize, field: String },
    #[error("[[key]] number {number} needs a name")]
    NoName { number: usize },
    #[error("[[key]] number {number}: the name '{name}' is used twice")]
    NameTwice { number: usize, name: String },
    #[error("[[key]] number {number} ({name}) needs a public_key")]
    NoPublicKey { number: usize, name: String },
    #[error("[[key]] number {number} ({name}): {source}")]
    BadPublicKey {
        number: usize,
        name: String,
        source: KeyError,
    },
    #[error("[[key]] number {number} ({name}): kinds must be strings")]
    KindsNotStrings { number: usize, name: String },
    #[error("[[key]] number {number} ({name}): kinds must be a list of strings")]
    KindsNotList { number: usize, name: String },
    #[error("[[key]] number {number} ({name}): did must be a string starting did:")]
    BadDid { number: usize, name: String },
    #[error("[[key]] number {number} ({name}): the did '{did}' is already key {first}'s: a DID resolves to one key, so list it once")]
    DidTwice {
        number: usize,
        name: String,
        did: String,
        first: String,
    },
}

/// One trusted key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustedKey {
    /// Shared with the facts of every packet it signed.
    pub name: std::sync::Arc<str>,
    pub key: PublicKey,
    /// The DID this key answers for (`did:web:…`, `did:hive:…`), if any:
    /// how a numeric lineage receipt's `key_id` is resolved, never over the
    /// network.
    pub did: Option<String>,
    /// The statement kinds this key may sign; `None` for any.
    pub kinds: Option<Vec<String>>,
}

impl TrustedKey {
    /// Whether this key may sign a statement of `kind`: any kind, or one
    /// listed by either of its names (chit's, or Treeship's registered one).
    pub fn may_sign(&self, kind: &str) -> bool {
        let Some(ks) = &self.kinds else {
            return true;
        };
        ks.iter().any(|k| k == kind)
            || crate::kind::Kind::from_name(kind)
                .is_some_and(|known| ks.iter().any(|k| known.is_named(k)))
    }
}

/// A trust file, read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trust {
    pub keys: Vec<TrustedKey>,
    /// The keys' public halves, each once, indexed by `keyid`, gathered
    /// once for the signature step of every envelope.
    public: KeyRing,
    /// Where each public key's entries are in `keys`: a signer's entries are
    /// found without a pass over the whole file.
    by_key: std::collections::HashMap<[u8; 32], Vec<usize>>,
}

impl Trust {
    /// Reads a trust file's text. Every problem is named with the table it
    /// is in; a file that trusts nothing is refused.
    pub fn parse(text: &str) -> Result<Trust, TrustError> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| TrustError::NotToml(e.message().to_owned()))?;
        if let Some(k) = table.keys().find(|k| *k != "key") {
            return Err(TrustError::UnknownEntry(k.clone()));
        }
        let list = match table.get("key") {
            Some(toml::Value::Array(list)) => list,
            Some(_) => return Err(TrustError::KeyNotList),
            None => return Err(TrustError::NoKeys),
        };
        let mut keys: Vec<TrustedKey> = Vec::new();
        let mut names = std::collections::HashSet::new();
        let mut dids: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for (i, entry) in list.iter().enumerate() {
            let number = i + 1;
            let t = entry.as_table().ok_or(TrustError::NotTable { number })?;
            if let Some(k) = t
                .keys()
                .find(|k| !["name", "public_key", "kinds", "did"].contains(&k.as_str()))
            {
                return Err(TrustError::UnknownField {
                    number,
                    field: k.clone(),
                });
            }
            let name = t
                .get("name")
                .and_then(|v| v.as_str())
                .ok_or(TrustError::NoName { number })?
                .to_owned();
            let key = t
                .get("public_key")
                .and_then(|v| v.as_str())
                .ok_or_else(|| TrustError::NoPublicKey {
                    number,
                    name: name.clone(),
                })
                .and_then(|s| {
                    PublicKey::parse(s).map_err(|source| TrustError::BadPublicKey {
                        number,
                        name: name.clone(),
                        source,
                    })
                })?;
            let kinds = match t.get("kinds") {
                None => None,
                Some(toml::Value::Array(a)) => Some(
                    a.iter()
                        .map(|v| v.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| TrustError::KindsNotStrings {
                            number,
                            name: name.clone(),
                        })?,
                ),
                Some(_) => {
                    return Err(TrustError::KindsNotList {
                        number,
                        name: name.clone(),
                    })
                }
            };
            let did = match t.get("did") {
                None => None,
                Some(toml::Value::String(d)) if d.starts_with("did:") => Some(d.clone()),
                Some(_) => {
                    return Err(TrustError::BadDid {
                        number,
                        name: name.clone(),
                    })
                }
            };
            if !names.insert(name.clone()) {
                return Err(TrustError::NameTwice { number, name });
            }
            if let Some(d) = &did {
                if let Some(first) = dids.get(d) {
                    return Err(TrustError::DidTwice {
                        number,
                        did: d.clone(),
                        first: keys[*first].name.to_string(),
                        name,
                    });
                }
                dids.insert(d.clone(), keys.len());
            }
            keys.push(TrustedKey {
                name: name.into(),
                key,
                did,
                kinds,
            });
        }
        Ok(Trust::of(keys))
    }

    /// Keys that may sign any kind, by name: the keys a Treeship package
    /// names for its own signers (`keys.json`), which no trust file pins.
    pub fn named(keys: impl IntoIterator<Item = (String, PublicKey)>) -> Trust {
        Trust::of(
            keys.into_iter()
                .map(|(name, key)| TrustedKey {
                    name: name.into(),
                    key,
                    did: None,
                    kinds: None,
                })
                .collect(),
        )
    }

    fn of(keys: Vec<TrustedKey>) -> Trust {
        let public = KeyRing::new(keys.iter().map(|k| k.key));
        let mut by_key: std::collections::HashMap<[u8; 32], Vec<usize>> = Default::default();
        for (i, k) in keys.iter().enumerate() {
            by_key.entry(k.key.bytes()).or_default().push(i);
        }
        Trust {
            keys,
            public,
            by_key,
        }
    }

    /// The entries that list `key` (several may, with other names or kinds).
    pub fn entries_for(&self, key: &PublicKey) -> Vec<&TrustedKey> {
        self.by_key
            .get(&key.bytes())
            .map_or_else(Vec::new, |at| at.iter().map(|&i| &self.keys[i]).collect())
    }

    /// The trusted keys, each once, found by `keyid` or tried in turn.
    pub fn public_keys(&self) -> &KeyRing {
        &self.public
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "ed25519:SeVxSanX9yDn1yvX3DdaNsLaqXcy2X3FUHSyz8QRHFY";

    #[test]
    fn reads_keys_in_both_forms() {
        let did = PublicKey::parse(KEY).unwrap().did_key();
        let t = Trust::parse(&format!(
            "[[key]]\nname = \"a\"\npublic_key = \"{KEY}\"\nkinds = [\"x\"]\n\n[[key]]\nname = \"b\"\npublic_key = \"{did}\"\n"
        ))
        .unwrap();
        assert_eq!(t.keys.len(), 2);
        assert!(t.keys[0].may_sign("x") && !t.keys[0].may_sign("y"));
        assert!(t.keys[1].may_sign("anything"));
        assert_eq!(t.keys[0].key, t.keys[1].key);
    }

    #[test]
    fn refuses_what_it_cannot_use() {
        for (text, needle) in [
            ("", "trusts nothing"),
            ("key = 1", "must be a list"),
            ("[[key]]\nname = \"a\"", "needs a public_key"),
            ("[[key]]\npublic_key = \"ed25519:AAAA\"", "needs a name"),
            (
                "[[key]]\nname = \"a\"\npublic_key = \"ed25519:AAAA\"",
                "32 bytes",
            ),
            (
                "[[key]]\nname = \"a\"\npublic_key = \"x\"\nrole = 1",
                "unknown field 'role'",
            ),
            ("[[keys]]\nname = \"a\"", "unknown entry 'keys'"),
            ("[[key]\n", "not valid TOML"),
        ] {
            let e = Trust::parse(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn messages_name_the_table_and_the_key() {
        let e = |t: &str| Trust::parse(t).unwrap_err().to_string();
        assert_eq!(
            e("[[key]]\nname = \"a\""),
            "[[key]] number 1 (a) needs a public_key"
        );
        assert_eq!(
            e("[[key]]\nname = \"a\"\npublic_key = \"ed25519:AAAA\""),
            "[[key]] number 1 (a): an Ed25519 public key is 32 bytes"
        );
        assert_eq!(
            e(&format!(
                "[[key]]\nname = \"a\"\npublic_key = \"{KEY}\"\ndid = \"web\""
            )),
            "[[key]] number 1 (a): did must be a string starting did:"
        );
        assert_eq!(e("[[key]]\nname = 1"), "[[key]] number 1 needs a name");
    }
}
