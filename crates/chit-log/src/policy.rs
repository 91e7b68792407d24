//! C2SP `tlog-policy`: which logs a reader trusts, which witnesses, and
//! which sets of witnesses' cosignatures make a checkpoint trustworthy.
//!
//! ```text
//! log <vkey> [<url>]
//! witness <name> <vkey> [<url>]
//! group <name> all|any|<k> <name>...
//! quorum <name>|none
//! ```
//!
//! Read as the specification says: lines of octets split on line feeds,
//! items separated by spaces and tabs, empty and `#` comment lines
//! ignored, only tab, line feed, `0x20`-`0x7E` and `0x80`-`0xFF` allowed,
//! names opaque octet strings sharing one namespace (`none` reserved), a
//! group or the quorum naming only what was defined above it, each name a
//! group member at most once, `1 <= k <= n`, exactly one quorum line, no
//! two logs or two witnesses with one public key.
//!
//! chit checks Ed25519 log keys (type `0x01`, the log's origin is the
//! key's name) and witness keys of both cosignature types (`0x04`
//! Ed25519, `0x06` ML-DSA-44).
//!
//! [`Policy::open`] checks a signed checkpoint against the policy: a log
//! of its origin must have signed it, every signature by a listed witness
//! must verify, and [`Witnessed::quorum`] says whether the witnesses that
//! cosigned meet the quorum.

use crate::checkpoint::{Checkpoint, CheckpointError};
use crate::cosignature::{cosignature_time, CosignatureVerifier};
use crate::lines::parse_decimal;
use crate::note::{self, NoteError, NoteVerifier, Verifier, ALG_ED25519};

/// The largest policy file read.
pub const MAX_POLICY_BYTES: usize = 1 << 20;
/// The most logs, witnesses or groups a policy may define (the
/// specification asks for at least 32 of each).
pub const MAX_DEFINED: usize = 1024;

/// What is wrong with a policy file: the line, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct PolicyError {
    pub line: usize,
    pub message: String,
}

/// A log the policy trusts.
#[derive(Debug, Clone)]
pub struct PolicyLog {
    /// The log's origin: its key's name.
    pub origin: String,
    pub verifier: NoteVerifier,
    pub url: Option<String>,
}

/// A witness the policy names.
#[derive(Debug, Clone)]
pub struct PolicyWitness {
    /// The witness's name in the policy (shown as text).
    pub name: String,
    pub verifier: CosignatureVerifier,
    pub url: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Witness(usize),
    Group(usize),
}

#[derive(Debug, Clone)]
struct Group {
    name: String,
    k: usize,
    members: Vec<Member>,
}

/// A trust policy, read.
#[derive(Debug, Clone)]
pub struct Policy {
    pub logs: Vec<PolicyLog>,
    pub witnesses: Vec<PolicyWitness>,
    groups: Vec<Group>,
    /// `None` for `quorum none`.
    quorum: Option<Member>,
}

/// A checkpoint checked against a policy.
#[derive(Debug, Clone)]
pub struct Witnessed {
    pub checkpoint: Checkpoint,
    /// The exact note text that was signed.
    pub text: String,
    /// Which of the policy's logs signed it.
    pub log: usize,
    /// The policy's witnesses whose cosignatures verified, with their
    /// timestamps, in note order.
    pub cosigned: Vec<(usize, u64)>,
    /// Signatures by keys the policy does not list.
    pub unknown: usize,
    /// Whether the witnesses that cosigned meet the policy's quorum.
    pub quorum: bool,
}

/// Why a checkpoint does not meet a policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// Not a signed checkpoint, a log the policy does not list, or a log
    /// signature that fails.
    #[error("{0}")]
    Checkpoint(String),
    /// Signed by the log, but its cosignatures do not meet the quorum.
    #[error("{0}")]
    Quorum(String),
}

impl Policy {
    /// Reads a policy file (see the module documentation).
    pub fn parse(bytes: &[u8]) -> Result<Policy, PolicyError> {
        let err = |line: usize, m: &str| PolicyError {
            line,
            message: m.to_string(),
        };
        if bytes.len() > MAX_POLICY_BYTES {
            return Err(err(0, "the policy is larger than 1 MiB"));
        }
        let mut p = Policy {
            logs: Vec::new(),
            witnesses: Vec::new(),
            groups: Vec::new(),
            quorum: None,
        };
        let mut quorum_seen = false;
        // Names defined so far, and whether each was listed in a group.
        let mut names: Vec<(Vec<u8>, Member, bool)> = Vec::new();
        for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
            let n = i + 1;
            if let Some(b) = line
                .iter()
                .find(|&&b| b != b'\t' && (b < 0x20 || b == 0x7f))
            {
                return Err(err(n, &format!("a control character (0x{b:02x})")));
            }
            let items: Vec<&[u8]> = line
                .split(|&b| b == b' ' || b == b'\t')
                .filter(|s| !s.is_empty())
                .collect();
            let Some((&keyword, args)) = items.split_first() else {
                continue;
            };
            if keyword.starts_with(b"#") {
                continue;
            }
            let text = |s: &[u8]| String::from_utf8_lossy(s).into_owned();
            let ascii = |s: &[u8], what: &str| {
                std::str::from_utf8(s)
                    .map(str::to_string)
                    .map_err(|_| err(n, &format!("{what} is not UTF-8")))
            };
            let new_name = |s: &[u8], names: &[(Vec<u8>, Member, bool)]| {
                if s == b"none" {
                    return Err(err(n, "\"none\" is reserved"));
                }
                if names.iter().any(|(x, _, _)| x == s) {
                    return Err(err(n, &format!("{:?} is defined twice", text(s))));
                }
                Ok(())
            };
            match keyword {
                b"log" => {
                    let (vkey, url) = match args {
                        [k] => (k, None),
                        [k, u] => (k, Some(text(u))),
                        _ => return Err(err(n, "want: log <vkey> [<url>]")),
                    };
                    let k = note::parse_verifier_key(&ascii(vkey, "the key")?)
                        .map_err(|e| err(n, &e.to_string()))?;
                    if k.alg != ALG_ED25519 {
                        return Err(err(
                            n,
                            "a log key chit cannot check (an Ed25519 note key, type 0x01, is)",
                        ));
                    }
                    let public: [u8; 32] = k.public.as_slice().try_into().expect("32 bytes");
                    if p.logs.iter().any(|l| l.verifier.public_key() == public) {
                        return Err(err(n, "a log listed twice (one public key)"));
                    }
                    if p.logs.len() == MAX_DEFINED {
                        return Err(err(n, "too many logs"));
                    }
                    let verifier =
                        NoteVerifier::new(&k.name, &public).map_err(|e| err(n, &e.to_string()))?;
                    p.logs.push(PolicyLog {
                        origin: k.name,
                        verifier,
                        url,
                    });
                }
                b"witness" => {
                    let (name, vkey, url) = match args {
                        [w, k] => (w, k, None),
                        [w, k, u] => (w, k, Some(text(u))),
                        _ => return Err(err(n, "want: witness <name> <vkey> [<url>]")),
                    };
                    new_name(name, &names)?;
                    let verifier = CosignatureVerifier::from_verifier_key(&ascii(vkey, "the key")?)
                        .map_err(|e| err(n, &e.to_string()))?;
                    if p.witnesses
                        .iter()
                        .any(|w| w.verifier.public_key() == verifier.public_key())
                    {
                        return Err(err(n, "a witness listed twice (one public key)"));
                    }
                    if p.witnesses.len() == MAX_DEFINED {
                        return Err(err(n, "too many witnesses"));
                    }
                    names.push((name.to_vec(), Member::Witness(p.witnesses.len()), false));
                    p.witnesses.push(PolicyWitness {
                        name: text(name),
                        verifier,
                        url,
                    });
                }
                b"group" => {
                    let [name, threshold, members @ ..] = args else {
                        return Err(err(n, "want: group <name> all|any|<k> <name>..."));
                    };
                    new_name(name, &names)?;
                    if members.is_empty() {
                        return Err(err(n, "a group with no members"));
                    }
                    let k = match *threshold {
                        b"all" => members.len(),
                        b"any" => 1,
                        d => parse_decimal(d)
                            .filter(|k| (1..=members.len()).contains(k))
                            .ok_or_else(|| {
                                err(
                                    n,
                                    "the threshold must be all, any or a number from 1 to the \
                                     number of members",
                                )
                            })?,
                    };
                    let mut listed = Vec::new();
                    for m in members.iter() {
                        let Some(entry) = names.iter_mut().find(|(x, _, _)| x == m) else {
                            return Err(err(
                                n,
                                &format!("{:?} is not defined above this line", text(m)),
                            ));
                        };
                        if entry.2 {
                            return Err(err(n, &format!("{:?} is a group member twice", text(m))));
                        }
                        entry.2 = true;
                        listed.push(entry.1);
                    }
                    if p.groups.len() == MAX_DEFINED {
                        return Err(err(n, "too many groups"));
                    }
                    names.push((name.to_vec(), Member::Group(p.groups.len()), false));
                    p.groups.push(Group {
                        name: text(name),
                        k,
                        members: listed,
                    });
                }
                b"quorum" => {
                    let [name] = args else {
                        return Err(err(n, "want: quorum <name>"));
                    };
                    if quorum_seen {
                        return Err(err(n, "a second quorum line"));
                    }
                    quorum_seen = true;
                    p.quorum = if *name == b"none" {
                        None
                    } else {
                        let Some((_, m, _)) = names.iter().find(|(x, _, _)| x == name) else {
                            return Err(err(
                                n,
                                &format!("{:?} is not defined above this line", text(name)),
                            ));
                        };
                        Some(*m)
                    };
                }
                other => {
                    return Err(err(
                        n,
                        &format!(
                            "unknown line {:?} (want log, witness, group or quorum)",
                            text(other)
                        ),
                    ))
                }
            }
        }
        if !quorum_seen {
            return Err(err(0, "no quorum line"));
        }
        Ok(p)
    }

    /// The policy of one log's key alone: that log, no witnesses, no
    /// quorum (what `--log-key` states, and what a log holds itself to).
    pub fn of_log(verifier: NoteVerifier) -> Policy {
        Policy {
            logs: vec![PolicyLog {
                origin: verifier.name().to_string(),
                verifier,
                url: None,
            }],
            witnesses: Vec::new(),
            groups: Vec::new(),
            quorum: None,
        }
    }

    /// The policy the shorthands state: these logs, these witnesses, and
    /// a quorum of `min` of them (none when `min` is 0). `min` must be at
    /// most the number of witnesses.
    pub fn from_keys(
        logs: Vec<NoteVerifier>,
        witnesses: Vec<CosignatureVerifier>,
        min: usize,
    ) -> Result<Policy, PolicyError> {
        if min > witnesses.len() {
            return Err(PolicyError {
                line: 0,
                message: format!(
                    "a quorum of {min} but only {} witness key(s)",
                    witnesses.len()
                ),
            });
        }
        for (i, w) in witnesses.iter().enumerate() {
            if witnesses[..i]
                .iter()
                .any(|o| o.public_key() == w.public_key())
            {
                return Err(PolicyError {
                    line: 0,
                    message: "a witness key given twice (one public key)".into(),
                });
            }
        }
        let n = witnesses.len();
        let witnesses = witnesses
            .into_iter()
            .enumerate()
            .map(|(i, verifier)| PolicyWitness {
                name: format!("w{}", i + 1),
                verifier,
                url: None,
            })
            .collect();
        let logs = logs
            .into_iter()
            .map(|verifier| PolicyLog {
                origin: verifier.name().to_string(),
                verifier,
                url: None,
            })
            .collect();
        let (groups, quorum) = if min == 0 {
            (Vec::new(), None)
        } else {
            (
                vec![Group {
                    name: "witnesses".into(),
                    k: min,
                    members: (0..n).map(Member::Witness).collect(),
                }],
                Some(Member::Group(0)),
            )
        };
        Ok(Policy {
            logs,
            witnesses,
            groups,
            quorum,
        })
    }

    /// Whether witnesses `cosigned` (indexes into [`Policy::witnesses`])
    /// meet the quorum.
    pub fn quorum_met(&self, cosigned: &[usize]) -> bool {
        match self.quorum {
            None => true,
            Some(m) => self.witnessed(m, cosigned),
        }
    }

    fn witnessed(&self, m: Member, cosigned: &[usize]) -> bool {
        match m {
            Member::Witness(i) => cosigned.contains(&i),
            Member::Group(g) => {
                let g = &self.groups[g];
                g.members
                    .iter()
                    .filter(|&&m| self.witnessed(m, cosigned))
                    .count()
                    >= g.k
            }
        }
    }

    /// Whether the policy asks for no cosignature.
    pub fn quorum_is_none(&self) -> bool {
        self.quorum.is_none()
    }

    /// The quorum, said in a few words: `none`, a witness's name, or a
    /// group's (with its threshold).
    pub fn quorum_text(&self) -> String {
        match self.quorum {
            None => "none".into(),
            Some(Member::Witness(i)) => format!("witness {}", self.witnesses[i].name),
            Some(Member::Group(g)) => {
                let g = &self.groups[g];
                format!("{} of group {}", g.k, g.name)
            }
        }
    }

    /// The logs the policy lists for `origin`.
    pub fn logs_of(&self, origin: &str) -> Vec<(usize, &PolicyLog)> {
        self.logs
            .iter()
            .enumerate()
            .filter(|(_, l)| l.origin == origin)
            .collect()
    }

    /// Opens a signed checkpoint under the policy: parsed strictly, its
    /// origin a log of the policy whose key signed it, every signature by
    /// a listed witness verified (one that fails fails the note), and the
    /// quorum reckoned. A checkpoint that misses the quorum is returned
    /// with [`Witnessed::quorum`] false; [`Policy::verify`] refuses it.
    pub fn open(&self, msg: &[u8]) -> Result<Witnessed, OpenError> {
        let bad = |e: &dyn std::fmt::Display| OpenError::Checkpoint(e.to_string());
        let parsed = note::parse(msg).map_err(|e| bad(&e))?;
        let checkpoint = Checkpoint::parse(&parsed.text).map_err(|e| bad(&e))?;
        let logs = self.logs_of(&checkpoint.origin);
        if logs.is_empty() {
            return Err(OpenError::Checkpoint(format!(
                "the checkpoint is from log {:?}, which the policy does not list",
                checkpoint.origin
            )));
        }
        let mut vs: Vec<&dyn Verifier> = logs.iter().map(|(_, l)| &l.verifier as _).collect();
        vs.extend(self.witnesses.iter().map(|w| &w.verifier as &dyn Verifier));
        let opened = note::open(msg, &vs).map_err(|e| match e {
            NoteError::NoKnownSignature { .. } => OpenError::Checkpoint(format!(
                "the checkpoint of {:?} is not signed by the policy's key for that log",
                checkpoint.origin
            )),
            e => bad(&CheckpointError::from(e)),
        })?;
        let Some(&(log_at, _)) = opened.verified.iter().find(|(i, _)| *i < logs.len()) else {
            return Err(OpenError::Checkpoint(format!(
                "the checkpoint of {:?} is not signed by the policy's key for that log",
                checkpoint.origin
            )));
        };
        let cosigned: Vec<(usize, u64)> = opened
            .verified
            .iter()
            .filter(|(i, _)| *i >= logs.len())
            .map(|(i, s)| {
                (
                    i - logs.len(),
                    cosignature_time(&s.bytes).expect("a verified cosignature"),
                )
            })
            .collect();
        let who: Vec<usize> = cosigned.iter().map(|(i, _)| *i).collect();
        Ok(Witnessed {
            quorum: self.quorum_met(&who),
            checkpoint,
            text: opened.text,
            log: logs[log_at].0,
            cosigned,
            unknown: opened.unknown.len(),
        })
    }

    /// [`Policy::open`], and the quorum met.
    pub fn verify(&self, msg: &[u8]) -> Result<Witnessed, OpenError> {
        let w = self.open(msg)?;
        if !w.quorum {
            let names: Vec<&str> = w
                .cosigned
                .iter()
                .map(|(i, _)| self.witnesses[*i].name.as_str())
                .collect();
            return Err(OpenError::Quorum(format!(
                "the checkpoint's cosignatures ({}) do not meet the policy's quorum ({})",
                if names.is_empty() {
                    "none by the policy's witnesses".to_string()
                } else {
                    format!("by {}", names.join(", "))
                },
                self.quorum_text()
            )));
        }
        Ok(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cosignature::Cosigner;
    use crate::note::NoteSigner;

    fn keys() -> (NoteSigner, Vec<Cosigner>) {
        let log = NoteSigner::from_seed("log.example/a", &[1; 32]).unwrap();
        let ws = (0..4)
            .map(|i| Cosigner::from_seed(&format!("w{i}.example"), &[10 + i; 32]).unwrap())
            .collect();
        (log, ws)
    }

    #[test]
    fn the_specifications_example_quorum() {
        let (log, w) = keys();
        let text = format!(
            "# two levels\nlog {}\n\twitness X1 {}  \nwitness X2 {}\nwitness X3 {}\n\
             group X 2 X1 X2 X3\nwitness Y1 {} https://y1.example/\ngroup Y any Y1\n\
             group XY all X Y\nquorum XY\n",
            log.verifier_key(),
            w[0].verifier_key(),
            w[1].verifier_key(),
            w[2].verifier_key(),
            w[3].verifier_key(),
        );
        let p = Policy::parse(text.as_bytes()).unwrap();
        assert_eq!(p.witnesses.len(), 4);
        assert_eq!(p.witnesses[3].url.as_deref(), Some("https://y1.example/"));
        assert!(!p.quorum_met(&[0, 1]));
        assert!(!p.quorum_met(&[0, 3]));
        assert!(p.quorum_met(&[0, 1, 3]));
        assert!(p.quorum_met(&[2, 1, 3]));
        assert!(!p.quorum_met(&[]));
        assert_eq!(p.quorum_text(), "2 of group XY");
    }

    #[test]
    fn malformed_policies_are_refused_with_their_line() {
        let (log, w) = keys();
        let (l, a, b) = (log.verifier_key(), w[0].verifier_key(), w[1].verifier_key());
        let cases: Vec<(String, &str)> = vec![
            (format!("log {l}\n"), "no quorum"),
            ("quorum none\nquorum none\n".to_string(), "second quorum"),
            (format!("witness A {a}\nquorum B\n"), "not defined"),
            (format!("quorum A\nwitness A {a}\n"), "not defined"),
            (format!("witness A {a}\nwitness A {b}\nquorum A\n"), "twice"),
            (
                format!("witness A {a}\nwitness B {a}\nquorum A\n"),
                "listed twice",
            ),
            (format!("log {l}\nlog {l}\nquorum none\n"), "listed twice"),
            (format!("witness none {a}\nquorum none\n"), "reserved"),
            (
                format!("witness A {a}\ngroup G 2 A\nquorum G\n"),
                "threshold",
            ),
            (
                format!("witness A {a}\ngroup G 0 A\nquorum G\n"),
                "threshold",
            ),
            (
                format!("witness A {a}\ngroup G 01 A\nquorum G\n"),
                "threshold",
            ),
            (
                format!("witness A {a}\ngroup G any\nquorum G\n"),
                "no members",
            ),
            (
                format!("witness A {a}\ngroup G any A\ngroup H any A\nquorum G\n"),
                "member twice",
            ),
            (
                format!("witness A {a}\ngroup G any A A\nquorum G\n"),
                "member twice",
            ),
            (format!("witness A {l}\nquorum A\n"), "witness key"),
            (format!("log {a}\nquorum none\n"), "log key"),
            (format!("log {l} u extra\nquorum none\n"), "want: log"),
            (format!("logs {l}\nquorum none\n"), "unknown line"),
            (format!("log {l}\r\nquorum none\n"), "control character"),
            ("quorum\n".to_string(), "want: quorum"),
        ];
        for (text, want) in cases {
            let e = Policy::parse(text.as_bytes()).unwrap_err();
            assert!(e.to_string().contains(want), "{text:?}: {e} (want {want})");
        }
        // The shorthand refuses one witness key given twice, as a file does
        // (an Ed25519 cosignature does not name its witness: it would count
        // twice).
        let twice = Policy::from_keys(
            vec![log.verifier()],
            vec![w[0].verifier(), w[0].verifier()],
            2,
        );
        assert!(twice.unwrap_err().message.contains("twice"));
        // Opaque octets in names, URLs and comments are allowed.
        let url =
            Policy::parse(format!("witness A {a} http://\u{e9}.example/\nquorum A\n").as_bytes())
                .unwrap();
        assert_eq!(
            url.witnesses[0].url.as_deref(),
            Some("http://\u{e9}.example/")
        );
        let ok = format!("# caf\u{e9}\nwitness \u{212a} {a}\nquorum \u{212a}\n");
        assert!(Policy::parse(ok.as_bytes()).is_ok());
        let e = Policy::parse(format!("witness K {a}\nquorum \u{212a}\n").as_bytes()).unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn a_checkpoint_opens_under_the_policy() {
        let (log, w) = keys();
        let text = format!(
            "log {}\nwitness A {}\nwitness B {}\ngroup G 2 A B\nquorum G\n",
            log.verifier_key(),
            w[0].verifier_key(),
            w[1].verifier_key()
        );
        let p = Policy::parse(text.as_bytes()).unwrap();
        let cp = Checkpoint::new("log.example/a", 5, [7; 32]);
        let signed = cp.sign(&log).unwrap();
        let opened = p.open(&signed).unwrap();
        assert!(!opened.quorum);
        assert!(matches!(p.verify(&signed), Err(OpenError::Quorum(_))));
        let one =
            crate::checkpoint::add_signatures(&signed, &[w[0].cosign(&cp.text(), 100).unwrap()])
                .unwrap();
        assert!(!p.open(&one).unwrap().quorum);
        let two = crate::checkpoint::add_signatures(
            &one,
            &[
                w[1].cosign(&cp.text(), 101).unwrap(),
                w[2].cosign(&cp.text(), 102).unwrap(),
            ],
        )
        .unwrap();
        let ok = p.verify(&two).unwrap();
        assert_eq!(ok.cosigned, vec![(0, 100), (1, 101)]);
        assert_eq!(ok.unknown, 1);
        // Another log's checkpoint, and one the log did not sign.
        let other = NoteSigner::from_seed("log.example/b", &[2; 32]).unwrap();
        let e = p
            .open(
                &Checkpoint::new("log.example/b", 5, [7; 32])
                    .sign(&other)
                    .unwrap(),
            )
            .unwrap_err();
        assert!(e.to_string().contains("does not list"), "{e}");
        let forged = NoteSigner::from_seed("log.example/a", &[3; 32]).unwrap();
        let e = p.open(&cp.sign(&forged).unwrap()).unwrap_err();
        assert!(e.to_string().contains("not signed by"), "{e}");
        // A listed witness's cosignature that fails fails the note.
        let mut bad = w[0].cosign(&cp.text(), 100).unwrap();
        bad.bytes[20] ^= 1;
        let e = p
            .open(&crate::checkpoint::add_signatures(&signed, &[bad]).unwrap())
            .unwrap_err();
        assert!(matches!(e, OpenError::Checkpoint(_)), "{e}");
    }
}
