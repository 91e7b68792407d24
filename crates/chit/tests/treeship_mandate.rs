//! Treeship 0.32's mandate receipts (`treeship/action/v2`) made by
//! treeship-core's own API, judged by chit and by Treeship: its
//! `verify_mandate` (no revocation source, as offline), the CLI's holder
//! check (the envelope's signer is the grant's grantee) and serde's reading
//! of the statement. Over a generated corpus of honest receipts and
//! receipts with one to three faults, chit's verdict is Treeship's: a
//! mandate that fails is INVALID, one Treeship leaves unverified is SIGNED
//! (never valid), one Treeship cannot read is INVALID.

mod common;
use base64::Engine;
use common::chit_in;
use serde_json::Value;
use treeship_core::attestation::{sign, Ed25519Signer};
use treeship_core::statements::{
    payload_type_v2, verify_mandate, ActionStatementV2, Grant, Mandate, MandateVerdict,
    NoRevocationSource, Revocation,
};

fn b64(s: &Ed25519Signer) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s.verifying_key().as_bytes())
}

/// The parties: an operator who grants to an agent, who delegates to a
/// worker, who acts; and a stranger.
struct Parties {
    operator: Ed25519Signer,
    agent: Ed25519Signer,
    worker: Ed25519Signer,
    stranger: Ed25519Signer,
}

impl Parties {
    fn new() -> Parties {
        let key = |id: &str| Ed25519Signer::generate(id).unwrap();
        Parties {
            operator: key("key_operator"),
            agent: key("key_agent"),
            worker: key("key_worker"),
            stranger: key("key_stranger"),
        }
    }
}

/// A grant signed by `by`, its id derived from what it says.
fn grant(mut g: Grant, by: &Ed25519Signer) -> Grant {
    g.grantor = b64(by);
    g.issuer_sig = None;
    g.grant_id = g.derive_grant_id();
    g.issuer_sig = Some(g.sign_canonical(by).unwrap());
    g
}

fn root(p: &Parties) -> Grant {
    grant(
        Grant {
            grant_id: String::new(),
            grantor: String::new(),
            scope: vec!["payments.*".into(), "mail.send".into()],
            audience: "api.example.com".into(),
            parent_request_id: Some("req_1".into()),
            delegation_depth: 0,
            issued_at: "2026-12-01T00:00:00Z".into(),
            expiry: "2026-12-31T00:00:00Z".into(),
            max_delegation: 2,
            objective_hash: Some("sha256:aa".into()),
            issuer_sig: None,
            parent_grant_id: None,
            grantee: Some(b64(&p.agent)),
        },
        &p.operator,
    )
}

fn child(p: &Parties, parent: &Grant) -> Grant {
    grant(
        Grant {
            grant_id: String::new(),
            grantor: String::new(),
            scope: vec!["payments.charge".into()],
            audience: "api.example.com".into(),
            parent_request_id: Some("req_2".into()),
            delegation_depth: 1,
            issued_at: "2026-12-02T00:00:00Z".into(),
            expiry: "2026-12-20T00:00:00Z".into(),
            max_delegation: 2,
            objective_hash: Some("sha256:aa".into()),
            issuer_sig: None,
            parent_grant_id: Some(parent.grant_id.clone()),
            grantee: Some(b64(&p.worker)),
        },
        &p.agent,
    )
}

fn mandate(leaf: &Grant, chain: Vec<Grant>) -> Mandate {
    Mandate {
        grant_id: leaf.grant_id.clone(),
        grantor: leaf.grantor.clone(),
        issuer_sig: leaf.issuer_sig.clone(),
        objective_hash: leaf.objective_hash.clone(),
        scope: leaf.scope.clone(),
        audience: leaf.audience.clone(),
        parent_request_id: leaf.parent_request_id.clone(),
        delegation_depth: leaf.delegation_depth,
        issued_at: leaf.issued_at.clone(),
        expiry: leaf.expiry.clone(),
        max_delegation: leaf.max_delegation,
        revocation: Revocation {
            path: "hub://local/grants".into(),
            revoked_at: None,
        },
        grantee: leaf.grantee.clone(),
        chain,
    }
}

/// One case: the statement, who signs it, and faults in its JSON after
/// serde wrote it.
struct Case {
    stmt: ActionStatementV2,
    signer: usize,
    json: Vec<fn(&mut Value)>,
}

/// The honest receipt: the worker charges under a two-grant chain.
fn honest(p: &Parties) -> Case {
    let r = root(p);
    let c = child(p, &r);
    let mut stmt = ActionStatementV2::new(
        "agent://worker",
        "payments.charge",
        mandate(&c, vec![r, c.clone()]),
    );
    stmt.timestamp = "2026-12-10T12:00:00Z".into();
    stmt.audience = Some("api.example.com".into());
    Case {
        stmt,
        signer: 2,
        json: Vec::new(),
    }
}

type Fault = fn(&Parties, &mut Case);

/// The chain's grant at `at` changed by `f` and signed again by its
/// grantor: an honest signature over a grant that says something else.
fn regrant(p: &Parties, c: &mut Case, at: usize, f: &dyn Fn(&mut Grant)) {
    let chain = &mut c.stmt.mandate.chain;
    if at < chain.len() {
        let mut g = chain[at].clone();
        f(&mut g);
        let by = if g.grantor == b64(&p.operator) {
            &p.operator
        } else if g.grantor == b64(&p.agent) {
            &p.agent
        } else {
            &p.stranger
        };
        let was = std::mem::replace(&mut chain[at], grant(g, by));
        // The mandate follows its grant when that is the one re-issued.
        if c.stmt.mandate.grant_id == was.grant_id {
            c.stmt.mandate.grant_id = c.stmt.mandate.chain[at].grant_id.clone();
        }
    }
}

/// Each fault one thing a producer or an attacker could do.
fn faults() -> Vec<(&'static str, Fault)> {
    vec![
        ("out of scope", |_, c| {
            c.stmt.action = "payments.refund".into()
        }),
        ("in a family", |_, c| c.stmt.action = "payments".into()),
        ("other audience", |_, c| {
            c.stmt.audience = Some("evil.example.com".into())
        }),
        ("no audience", |_, c| c.stmt.audience = None),
        ("before issue", |_, c| {
            c.stmt.timestamp = "2026-12-01T12:00:00Z".into()
        }),
        ("at expiry", |_, c| {
            c.stmt.timestamp = "2026-12-20T00:00:00Z".into()
        }),
        ("fractional time", |_, c| {
            c.stmt.timestamp = "2026-12-10T12:00:00.5Z".into()
        }),
        ("plus month", |_, c| {
            c.stmt.timestamp = "2026-+2-10T12:00:00Z".into()
        }),
        ("february 31", |_, c| {
            c.stmt.mandate.expiry = "2027-02-31T00:00:00Z".into()
        }),
        ("expiry first", |_, c| {
            c.stmt.mandate.expiry = "2026-11-01T00:00:00Z".into()
        }),
        ("bad expiry", |_, c| {
            c.stmt.mandate.expiry = "tomorrow".into()
        }),
        ("empty scope", |_, c| c.stmt.mandate.scope.clear()),
        ("wider scope", |_, c| {
            c.stmt.mandate.scope = vec!["payments.*".into()]
        }),
        ("blank audience", |_, c| {
            c.stmt.mandate.audience = " \t".into()
        }),
        ("mandate audience", |_, c| {
            c.stmt.mandate.audience = "evil.example.com".into();
            c.stmt.audience = Some("evil.example.com".into());
        }),
        ("reordered", |_, c| c.stmt.mandate.chain.reverse()),
        ("no chain", |_, c| c.stmt.mandate.chain.clear()),
        ("root dropped", |_, c| {
            if c.stmt.mandate.chain.len() > 1 {
                c.stmt.mandate.chain.remove(0);
            }
        }),
        ("leaf dropped", |_, c| {
            c.stmt.mandate.chain.pop();
        }),
        ("decoy", |p, c| {
            c.stmt.mandate.chain.push(root(p).clone_with(p))
        }),
        ("edited grant", |_, c| {
            if let Some(g) = c.stmt.mandate.chain.first_mut() {
                g.scope.push("admin.*".into());
            }
        }),
        ("unsigned edit", |_, c| {
            if let Some(g) = c.stmt.mandate.chain.first_mut() {
                g.scope.push("admin.*".into());
                g.grant_id = g.derive_grant_id();
            }
        }),
        ("unsigned", |_, c| {
            if let Some(g) = c.stmt.mandate.chain.first_mut() {
                g.issuer_sig = None;
            }
        }),
        ("bit flipped", |_, c| {
            if let Some(g) = c.stmt.mandate.chain.last_mut() {
                let mut sig = g.issuer_sig.clone().unwrap_or_default().into_bytes();
                if let Some(b) = sig.get_mut(5) {
                    *b = if *b == b'A' { b'B' } else { b'A' };
                }
                g.issuer_sig = Some(String::from_utf8(sig).unwrap());
            }
        }),
        ("child widens", |p, c| {
            regrant(p, c, 1, &|g| g.scope.push("admin.delete".into()))
        }),
        ("child outlives", |p, c| {
            regrant(p, c, 1, &|g| g.expiry = "2027-01-01T00:00:00Z".into())
        }),
        ("depth skips", |p, c| {
            regrant(p, c, 1, &|g| g.delegation_depth = 2)
        }),
        ("no delegation", |p, c| {
            regrant(p, c, 0, &|g| g.max_delegation = 0)
        }),
        ("child audience", |p, c| {
            regrant(p, c, 1, &|g| g.audience = "other.example.com".into())
        }),
        ("objective changed", |p, c| {
            regrant(p, c, 1, &|g| g.objective_hash = Some("sha256:bb".into()))
        }),
        ("objective dropped", |p, c| {
            regrant(p, c, 1, &|g| g.objective_hash = None)
        }),
        ("mandate objective", |_, c| {
            c.stmt.mandate.objective_hash = Some("sha256:cc".into())
        }),
        ("mandate drops objective", |_, c| {
            c.stmt.mandate.objective_hash = None
        }),
        ("stranger delegates", |p, c| {
            if c.stmt.mandate.chain.len() > 1 {
                let mut g = c.stmt.mandate.chain[1].clone();
                g.issuer_sig = None;
                c.stmt.mandate.chain[1] = grant(g, &p.stranger);
                c.stmt.mandate.grant_id = c.stmt.mandate.chain[1].grant_id.clone();
                c.stmt.mandate.grantor = b64(&p.stranger);
            }
        }),
        ("bearer", |_, c| c.stmt.mandate.grantee = None),
        ("bearer everywhere", |p, c| {
            c.stmt.mandate.grantee = None;
            regrant(p, c, 1, &|g| g.grantee = None);
        }),
        ("claims to hold", |p, c| {
            c.stmt.mandate.grantee = Some(b64(&p.stranger))
        }),
        ("signed by another", |_, c| c.signer = 3),
        ("signed by the agent", |_, c| c.signer = 1),
        ("not v2", |_, c| c.stmt.type_ = "treeship/action/v1".into()),
        ("depth as text", |_, c| {
            c.json
                .push(|v| v["mandate"]["delegation_depth"] = "1".into())
        }),
        ("depth negative", |_, c| {
            c.json
                .push(|v| v["mandate"]["delegation_depth"] = (-1).into())
        }),
        ("depth fractional", |_, c| {
            c.json
                .push(|v| v["mandate"]["delegation_depth"] = 1.0.into())
        }),
        ("scope null", |_, c| {
            c.json.push(|v| v["mandate"]["scope"] = Value::Null)
        }),
        ("chain null", |_, c| {
            c.json.push(|v| v["mandate"]["chain"] = Value::Null)
        }),
        ("grantee null", |_, c| {
            c.json.push(|v| v["mandate"]["grantee"] = Value::Null)
        }),
        ("subject null", |_, c| {
            c.json.push(|v| v["subject"] = Value::Null)
        }),
        ("no revocation", |_, c| {
            c.json.push(|v| {
                v["mandate"].as_object_mut().unwrap().remove("revocation");
            })
        }),
        ("bad cause", |_, c| {
            c.json.push(|v| {
                v["retry"] = serde_json::json!({"of": "art_1", "attempt": 2, "cause": "panic"})
            })
        }),
        ("good retry", |_, c| {
            c.json.push(|v| {
                v["retry"] =
                    serde_json::json!({"of": "art_1", "attempt": 2, "cause": "rate_limited"})
            })
        }),
        ("bad cost", |_, c| {
            c.json
                .push(|v| v["effect"] = serde_json::json!({"cost": {"unit": "usd", "amount": "5"}}))
        }),
        ("good effect", |_, c| {
            c.json.push(|v| {
                v["effect"] = serde_json::json!({"cost": {"unit": "usd", "amount": 5},
                    "effect_confidence": "partial", "witnesses": [{"observer": "x", "observation": "y"}]})
            })
        }),
        ("unknown member", |_, c| {
            c.json.push(|v| v["extra"] = 1.into())
        }),
    ]
}

trait CloneWith {
    fn clone_with(self, p: &Parties) -> Grant;
}

impl CloneWith for Grant {
    /// Another grant from the same operator: a decoy in a chain.
    fn clone_with(mut self, p: &Parties) -> Grant {
        self.parent_request_id = Some("req_decoy".into());
        self.issuer_sig = None;
        grant(self, &p.operator)
    }
}

#[derive(Debug, PartialEq, Clone, Copy)]
enum Verdict {
    Invalid,
    Signed,
}

/// Treeship's verdict: its reading of the statement, `verify_mandate`
/// without a revocation source, and the CLI's holder check.
fn treeship(bytes: &[u8], signer: &Ed25519Signer) -> Verdict {
    let Ok(stmt) = serde_json::from_slice::<ActionStatementV2>(bytes) else {
        return Verdict::Invalid;
    };
    let holder_ok = match stmt.mandate.grantee.as_deref().filter(|g| !g.is_empty()) {
        Some(g) => g == b64(signer),
        None => true,
    };
    match verify_mandate(&stmt, &NoRevocationSource) {
        MandateVerdict::Fail(_) => Verdict::Invalid,
        _ if !holder_ok => Verdict::Invalid,
        MandateVerdict::Unverified(_) => Verdict::Signed,
        MandateVerdict::Pass => panic!("no mandate passes without a revocation source"),
    }
}

/// A small deterministic generator: the corpus is the same on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[test]
fn mandates_are_judged_as_treeship_judges_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let p = Parties::new();
    let signers = [&p.operator, &p.agent, &p.worker, &p.stranger];
    let mut trust = String::new();
    for (i, s) in signers.iter().enumerate() {
        trust += &format!(
            "[[key]]\nname = \"k{i}\"\npublic_key = \"ed25519:{}\"\n\n",
            b64(s)
        );
    }
    std::fs::write(d.join("trust.toml"), trust).unwrap();

    let faults = faults();
    // Every fault alone, then combinations of two and three.
    let mut plans: Vec<Vec<usize>> = vec![Vec::new()];
    plans.extend((0..faults.len()).map(|i| vec![i]));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..300 {
        let n = 2 + rng.below(2);
        plans.push((0..n).map(|_| rng.below(faults.len())).collect());
    }
    let mut want = Vec::new();
    let mut names = Vec::new();
    for (n, plan) in plans.iter().enumerate() {
        let mut case = honest(&p);
        for &f in plan {
            (faults[f].1)(&p, &mut case);
        }
        let mut json = serde_json::to_value(&case.stmt).unwrap();
        for f in &case.json {
            f(&mut json);
        }
        let signer = signers[case.signer];
        let signed = sign(&payload_type_v2("action"), &json, signer).unwrap();
        let bytes = signed.envelope.payload_bytes().unwrap();
        want.push(treeship(&bytes, signer));
        names.push(
            plan.iter()
                .map(|&f| faults[f].0)
                .collect::<Vec<_>>()
                .join(" + "),
        );
        std::fs::write(
            d.join(format!("case-{n:04}.json")),
            signed.envelope.to_json().unwrap(),
        )
        .unwrap();
    }
    let mut args = vec!["verify", "--trust", "trust.toml", "--json"];
    let files: Vec<String> = (0..plans.len())
        .map(|n| format!("case-{n:04}.json"))
        .collect();
    args.extend(files.iter().map(String::as_str));
    let run = chit_in(d, &args, None);
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), plans.len(), "{}", run.stderr);
    let (mut invalid, mut signed) = (0, 0);
    for (n, line) in lines.iter().enumerate() {
        assert_eq!(line["file"], files[n].as_str());
        let got = match line["status"].as_str().unwrap() {
            "invalid" => Verdict::Invalid,
            "signed" => Verdict::Signed,
            other => panic!("{}: {other}: {line}", names[n]),
        };
        assert_eq!(got, want[n], "{}: {line}", names[n]);
        assert_eq!(line["kind"], "treeship.action.v2", "{line}");
        match got {
            Verdict::Invalid => invalid += 1,
            Verdict::Signed => signed += 1,
        }
    }
    // The corpus exercises both verdicts, each many times.
    assert!(
        invalid > 100 && signed > 10,
        "{invalid} invalid, {signed} signed"
    );
    // The honest receipt is SIGNED, saying what could not be checked.
    let honest = &lines[0];
    let said = honest["warnings"].to_string();
    assert!(said.contains("revocation"), "{honest}");
    assert!(honest["errors"].as_array().unwrap().is_empty(), "{honest}");
}

/// Each failing layer is named by its rule, and the path says where.
#[test]
fn a_failing_mandate_says_which_layer_failed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let p = Parties::new();
    std::fs::write(
        d.join("trust.toml"),
        format!(
            "[[key]]\nname = \"worker\"\npublic_key = \"ed25519:{}\"\n",
            b64(&p.worker)
        ),
    )
    .unwrap();
    let write = |name: &str, case: &Case| {
        let signed = sign(&payload_type_v2("action"), &case.stmt, &p.worker).unwrap();
        std::fs::write(d.join(name), signed.envelope.to_json().unwrap()).unwrap();
    };
    let all = faults();
    let find = |name: &str| all.iter().find(|(n, _)| *n == name).unwrap().1;
    for (fault, rule, path, says) in [
        (
            "out of scope",
            "mandate",
            "/payload/action",
            "not in mandate scope",
        ),
        (
            "child widens",
            "grant_chain",
            "/payload/mandate/chain",
            "scope widens at hop 0->1",
        ),
        (
            "root dropped",
            "grant_chain",
            "/payload/mandate/chain",
            "is missing from the chain",
        ),
        (
            "claims to hold",
            "mandate",
            "/payload/mandate/grantee",
            "leaf grant's grantee",
        ),
    ] {
        let mut case = honest(&p);
        find(fault)(&p, &mut case);
        write("case.json", &case);
        let run = chit_in(
            d,
            &["verify", "--trust", "trust.toml", "--json", "case.json"],
            None,
        );
        assert_eq!(run.code, 1, "{fault}: {}", run.stdout);
        let line: Value = serde_json::from_str(run.stdout.trim()).unwrap();
        let errors = line["errors"].as_array().unwrap();
        assert!(
            errors.iter().any(|e| e["rule"] == rule
                && e["path"] == path
                && e["message"].as_str().unwrap().contains(says)),
            "{fault}: {line}"
        );
    }
    // Unverified layers leave it SIGNED: exit 1 unless unchecked receipts
    // are allowed, then 0.
    write("honest.json", &honest(&p));
    let run = chit_in(d, &["verify", "--trust", "trust.toml", "honest.json"], None);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let run = chit_in(
        d,
        &[
            "verify",
            "--trust",
            "trust.toml",
            "--allow-unchecked",
            "honest.json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}
