//! Verifiable Intent credentials, judged by chit and by treeship-core
//! 0.32's own `vi` module: an L1 and an L2 the reference SDK signed
//! (`tests/data/vi/`), L3 pairs Treeship's `build_l3` signs from them, and
//! tampers of each. Where Treeship's `verify_l2_against_l1` or `verify_l3`
//! fails, chit's check across inputs is INVALID; where Treeship passes,
//! chit's is SIGNED (never valid: the issuer's signature, the constraints
//! and the validity windows are left unchecked, and said).

mod common;
use common::{chit_in, Run};
use serde_json::Value;
use std::path::Path;
use treeship_core::vi::jws::{b64u, b64u_decode, CompactJws};
use treeship_core::vi::sd_jwt::presentation_hash;
use treeship_core::vi::{
    build_l3, verify_l2_against_l1, verify_l3, AgentKey, Jwk, L2View, L3Bundle, L3Request,
    LineItem, SdJwt,
};

const NOW: u64 = 1_757_000_100;

fn fixture() -> Value {
    let path = common::repo().join("crates/chit/tests/data/vi/reference-v0.1.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn request(fx: &Value) -> L3Request {
    L3Request {
        nonce: "n-fixture".into(),
        iat: 1_757_000_000,
        exp: 1_757_000_300,
        iss: Some("https://agent.example.com".into()),
        aud_network: "https://www.mastercard.com".into(),
        aud_merchant: "https://tennis-warehouse.com".into(),
        payee: fx["merchants"][0].clone(),
        payment_amount: serde_json::json!({"currency": "USD", "amount": 27_999}),
        checkout_jwt: fx["checkout_jwt"].as_str().unwrap().to_string(),
        line_items: vec![LineItem {
            id: "BAB86345".into(),
            quantity: 1,
        }],
        attestation: None,
    }
}

/// The files a user has, as named in the tests: the L1, the L2, the L3
/// pair and the two L2 presentations each half was made under.
const FILES: [&str; 6] = [
    "l1.sdjwt",
    "l2.sdjwt",
    "l3a.sdjwt",
    "l3b.sdjwt",
    "l2-payment.sdjwt",
    "l2-checkout.sdjwt",
];

/// The files' contents.
struct Files {
    l1: String,
    l2: String,
    l3a: String,
    l3b: String,
    pay: String,
    checkout: String,
}

impl Files {
    fn from(fx: &Value, b: &L3Bundle) -> Files {
        Files {
            l1: fx["l1"].as_str().unwrap().to_owned(),
            l2: fx["l2"].as_str().unwrap().to_owned(),
            l3a: b.l3a.serialize(),
            l3b: b.l3b.serialize(),
            pay: b.l2_payment_presentation.clone(),
            checkout: b.l2_checkout_presentation.clone(),
        }
    }

    fn write(&self, d: &Path) {
        let texts = [
            &self.l1,
            &self.l2,
            &self.l3a,
            &self.l3b,
            &self.pay,
            &self.checkout,
        ];
        for (name, text) in FILES.into_iter().zip(texts) {
            std::fs::write(d.join(name), format!("{text}\n")).unwrap();
        }
    }

    /// Treeship's verdicts: the L2 against the L1 (under the issuer's key),
    /// and the L3 pair against the L2 and the presentations.
    fn treeship(&self, issuer: &Jwk) -> (bool, bool) {
        let (Ok(l1), Ok(l2)) = (SdJwt::parse(&self.l1), SdJwt::parse(&self.l2)) else {
            return (false, false);
        };
        let l2_ok = verify_l2_against_l1(&l1, &l2, Some(issuer), NOW).ok();
        let l3_ok = match (
            L2View::parse(&self.l2),
            SdJwt::parse(&self.l3a),
            SdJwt::parse(&self.l3b),
        ) {
            (Ok(view), Ok(a), Ok(b)) => verify_l3(
                &view,
                Some(&a),
                Some(&b),
                Some(&self.pay),
                Some(&self.checkout),
                NOW,
            )
            .ok(),
            _ => false,
        };
        (l2_ok, l3_ok)
    }
}

/// An L3 whose final mandate (`vct`) is changed by `change`, signed again
/// by the agent the fixture's L2 delegates to, as Treeship's `build_l3`
/// would sign it.
fn refinal(l3: &str, vct: &str, change: impl Fn(&mut Value)) -> String {
    use treeship_core::vi::sd_jwt::{create_disclosure, decode_disclosure, hash_disclosure};
    let key = AgentKey::from_private_jwk(&fixture()["agent_private_jwk"]).unwrap();
    let parsed = SdJwt::parse(l3).unwrap();
    let mut payload = parsed.payload().clone();
    let mut disclosures = parsed.disclosures.clone();
    for d in disclosures.iter_mut() {
        let mut value = decode_disclosure(d).unwrap().pop().unwrap();
        if value["vct"] != vct {
            continue;
        }
        let old = hash_disclosure(d);
        change(&mut value);
        *d = create_disclosure(None, &value, None);
        for r in payload["delegate_payload"].as_array_mut().unwrap() {
            if r["..."] == old.as_str() {
                r["..."] = hash_disclosure(d).into();
            }
        }
    }
    SdJwt::create(parsed.header(), &payload, disclosures, &key).serialize()
}

fn chit(d: &Path) -> (Run, Vec<Value>) {
    let mut args = vec!["verify", "--json", "--allow-unchecked"];
    args.extend(FILES);
    let run = chit_in(d, &args, None);
    let lines = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (run, lines)
}

/// The status of the check across inputs of `file` against its layer above.
fn across<'a>(lines: &'a [Value], file: &str) -> Option<&'a Value> {
    lines.iter().find(|l| l["intent"] == file)
}

fn status(line: Option<&Value>) -> &str {
    line.and_then(|l| l["status"].as_str()).unwrap_or("none")
}

#[test]
fn credentials_treeship_signs_are_judged_as_treeship_judges_them() {
    let fx = fixture();
    let issuer = Jwk::from_value(&fx["issuer_public_jwk"]).unwrap();
    let l2 = L2View::parse(fx["l2"].as_str().unwrap()).unwrap();
    let key = AgentKey::from_private_jwk(&fx["agent_private_jwk"]).unwrap();
    let bundle = build_l3(&l2, &key, &request(&fx)).unwrap();
    let honest = Files::from(&fx, &bundle);
    assert_eq!(honest.treeship(&issuer), (true, true));

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    honest.write(d);
    let (run, lines) = chit(d);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    // Each file alone: its own rules, its signature left to the layer above.
    for l in lines.iter().filter(|l| l.get("file").is_some()) {
        assert_eq!(l["kind"], "vi.credential", "{l}");
        assert_eq!(l["status"], "unchecked", "{l}");
    }
    // Each layer against the one above it: signed, not valid.
    for (file, against) in [
        ("l2.sdjwt", "L2 against l1.sdjwt"),
        ("l2-payment.sdjwt", "L2 against l1.sdjwt"),
        ("l2-checkout.sdjwt", "L2 against l1.sdjwt"),
        ("l3a.sdjwt", "L3a against l2-payment.sdjwt"),
        ("l3b.sdjwt", "L3b against l2-checkout.sdjwt"),
    ] {
        let line = across(&lines, file).unwrap_or_else(|| panic!("{file}: {}", run.stdout));
        assert_eq!(line["status"], "signed", "{line}");
        assert!(line["errors"].as_array().unwrap().is_empty(), "{line}");
        // Human output names the layer it was checked against.
        let mut args = vec!["verify", "--allow-unchecked"];
        args.extend(FILES);
        let run = chit_in(d, &args, None);
        assert!(
            run.stdout
                .lines()
                .any(|l| l.starts_with("SIGNED intent") && l.contains(file) && l.contains(against)),
            "{file}: {}",
            run.stdout
        );
    }
    assert!(across(&lines, "l1.sdjwt").is_none());
    // Without --allow-unchecked nothing here passes: none of it is valid.
    let run = chit_in(d, &["verify", "l1.sdjwt", "l2.sdjwt"], None);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);

    // Tampers: each fails Treeship, and chit's check across inputs.
    let other = AgentKey::generate();
    let resign = |jwt: &str, header: Option<Value>, by: &AgentKey| {
        let (token, rest) = jwt.split_once('~').unwrap();
        let jws = CompactJws::parse(token).unwrap();
        let header = header.unwrap_or(jws.header.clone());
        let signed = CompactJws::sign(&header, &jws.payload, by);
        format!("{}~{rest}", signed.serialize())
    };
    let edit_payload = |jwt: &str, from: &str, to: &str| {
        let (token, rest) = jwt.split_once('~').unwrap();
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        let payload = String::from_utf8(b64u_decode(&parts[1]).unwrap()).unwrap();
        assert!(payload.contains(from), "{payload}");
        parts[1] = b64u(payload.replacen(from, to, 1).as_bytes());
        format!("{}~{rest}", parts.join("."))
    };
    let flip_sig = |jwt: &str| {
        let (token, rest) = jwt.split_once('~').unwrap();
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        let mut sig = b64u_decode(&parts[2]).unwrap();
        sig[10] ^= 1;
        parts[2] = b64u(&sig);
        format!("{}~{rest}", parts.join("."))
    };
    type Tamper = Box<dyn Fn(&mut Files)>;
    let key_kid = key.kid.clone();
    let cases: Vec<(&str, Tamper, &str, &str)> = vec![
        (
            "an L3b payload edited",
            Box::new(move |f: &mut Files| f.l3b = edit_payload(&f.l3b, "tennis-warehouse", "evil")),
            "l3b.sdjwt",
            "signature",
        ),
        (
            "an L3a signed by another agent key",
            Box::new({
                let other = other.clone();
                move |f: &mut Files| f.l3a = resign(&f.l3a, None, &other)
            }),
            "l3a.sdjwt",
            "signature",
        ),
        (
            "an L3a whose header names another kid",
            Box::new(move |f: &mut Files| {
                let key = AgentKey::from_private_jwk(&fixture()["agent_private_jwk"]).unwrap();
                let h = serde_json::json!({"alg": "ES256", "typ": "kb-sd-jwt", "kid": format!("{key_kid}-x")});
                f.l3a = resign(&f.l3a, Some(h), &key)
            }),
            "l3a.sdjwt",
            "signature",
        ),
        (
            "an L3a bound to the checkout presentation",
            Box::new(|f: &mut Files| f.pay = f.checkout.clone()),
            "l3a.sdjwt",
            "sd_hash",
        ),
        (
            "an L2 signature bit",
            Box::new(move |f: &mut Files| f.l2 = flip_sig(&f.l2)),
            "l2.sdjwt",
            "signature",
        ),
        (
            "an L1 binding another user key",
            Box::new(move |f: &mut Files| f.l1 = edit_payload(&f.l1, "\"x\":\"", "\"x\":\"A")),
            "l2.sdjwt",
            "sd_hash",
        ),
        // Signed by the agent, but past what the user's mandate allows.
        (
            "an L3a paying more than the mandate's maximum",
            Box::new(|f: &mut Files| {
                f.l3a = refinal(&f.l3a, "mandate.payment.1", |m| {
                    m["payment_amount"]["amount"] = 40_001.into()
                })
            }),
            "l3a.sdjwt",
            "vi_constraints",
        ),
        (
            "an L3b buying an item the mandate does not list",
            Box::new(|f: &mut Files| {
                f.l3b = refinal(&f.l3b, "mandate.checkout.1", |m| {
                    m["line_items"][0]["id"] = "ZX-9999".into()
                })
            }),
            "l3b.sdjwt",
            "vi_constraints",
        ),
        (
            "an L3b for another checkout than its L3a's",
            Box::new(|f: &mut Files| {
                f.l3b = refinal(&f.l3b, "mandate.checkout.1", |m| {
                    let jwt = format!("{}x", m["checkout_jwt"].as_str().unwrap());
                    m["checkout_hash"] = treeship_core::vi::jws::sha256_b64u(jwt.as_bytes()).into();
                    m["checkout_jwt"] = jwt.into();
                })
            }),
            "l3b.sdjwt",
            "vi_constraints",
        ),
    ];
    for (what, tamper, file, rule) in cases {
        let mut files = Files::from(&fx, &bundle);
        tamper(&mut files);
        let (l2_ok, l3_ok) = files.treeship(&issuer);
        assert!(!(l2_ok && l3_ok), "{what}: Treeship passes it");
        let dir = tempfile::tempdir().unwrap();
        files.write(dir.path());
        let (run, lines) = chit(dir.path());
        assert_eq!(run.code, 1, "{what}: {}", run.stdout);
        let line = across(&lines, file);
        assert_eq!(status(line), "invalid", "{what}: {}", run.stdout);
        let errors = line.unwrap()["errors"].as_array().unwrap();
        assert!(
            errors.iter().any(|e| e["rule"] == rule),
            "{what}: {}",
            run.stdout
        );
    }
    // The presentation hash chit binds by is Treeship's.
    assert_eq!(
        presentation_hash(&honest.pay),
        SdJwt::parse(&honest.l3a).unwrap().payload()["sd_hash"]
    );
}

/// What is not a credential, or not one whole, is said in one line, and
/// never passes.
#[test]
fn a_broken_credential_says_what_is_wrong() {
    let fx = fixture();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let l2 = fx["l2"].as_str().unwrap();
    let cases = [
        // A merchant's JWT is a JWT, not a layer of a credential.
        (
            fx["checkout_jwt"].as_str().unwrap().to_owned(),
            "vi_header",
            "typ must be",
        ),
        (l2.replacen('.', ".!", 1), "", ""),
        (format!("{l2}bad~"), "vi_format", "disclosure"),
        // Cut short inside its payload: said so, not taken for JSON.
        (l2[..500].to_owned(), "vi_format", "not 3"),
        // One large disclosure referenced thousands of times: refused, not
        // copied thousands of times.
        (
            {
                let d = b64u(
                    serde_json::json!(["s", {"vct": "mandate.payment.1", "pad": "x".repeat(100_000)}])
                        .to_string()
                        .as_bytes(),
                );
                let h = treeship_core::vi::jws::sha256_b64u(d.as_bytes());
                let refs: Vec<Value> = (0..5000).map(|_| serde_json::json!({"...": h})).collect();
                let header = b64u(br#"{"alg":"ES256","typ":"kb-sd-jwt"}"#);
                let payload = b64u(
                    serde_json::json!({"delegate_payload": refs})
                        .to_string()
                        .as_bytes(),
                );
                format!("{header}.{payload}.{}~{d}~", b64u(&[0u8; 64]))
            },
            "vi_format",
            "four times",
        ),
        (
            l2.split('~').next().unwrap().to_owned() + "~",
            "vi_mandate",
            "no mandate",
        ),
    ];
    for (n, (text, rule, says)) in cases.iter().enumerate() {
        let name = format!("c{n}.sdjwt");
        std::fs::write(d.join(&name), text).unwrap();
        let run = chit_in(d, &["verify", "--json", "--allow-unchecked", &name], None);
        assert_ne!(run.code, 0, "{name}: {}", run.stdout);
        if rule.is_empty() {
            // Not base64url at all: not recognised, so not JSON either.
            assert_eq!(run.code, 2, "{name}: {}{}", run.stdout, run.stderr);
            continue;
        }
        let line: Value = serde_json::from_str(run.stdout.lines().next().unwrap()).unwrap();
        assert_eq!(line["status"], "invalid", "{line}");
        assert!(
            line["errors"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["rule"] == *rule && e["message"].as_str().unwrap().contains(says)),
            "{name}: {line}"
        );
    }
}

/// The constraint checker, against treeship-core's own over a generated
/// corpus of constraints and fulfilments (every registered type, their
/// members missing, of the wrong type, at and past their bounds): the same
/// violations, in the same words and order.
#[test]
fn constraints_are_checked_as_treeships_checker_checks_them() {
    use serde_json::json;
    use treeship_core::vi::check_constraints;
    let amounts = [
        json!(1),
        json!(500),
        json!(40_001),
        json!("9"),
        json!(2.5),
        Value::Null,
    ];
    let merchants = [
        json!({"id": "m1", "name": "A", "website": "https://a"}),
        json!({"name": "A", "website": "https://a"}),
        json!({"id": "m2"}),
        json!({}),
        json!({"...": "h"}),
    ];
    let items = [
        json!({"id": "i1", "title": "One"}),
        json!({"sku": "i2", "title": "Two"}),
        json!({"id": "i3"}),
        json!({"...": "h"}),
    ];
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut pick = |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    let mut disagreements = Vec::new();
    let mut satisfied = 0;
    for _ in 0..3000 {
        let mut constraints = Vec::new();
        for _ in 0..1 + pick(3) {
            let c = match pick(9) {
                0 => {
                    json!({"type": "mandate.payment.amount_range", "min": amounts[pick(6)], "max": amounts[pick(6)], "currency": (["USD", "EUR"][pick(2)])})
                }
                1 => {
                    json!({"type": "mandate.payment.budget", "max": amounts[pick(6)], "min": amounts[pick(6)]})
                }
                2 => {
                    json!({"type": "mandate.payment.allowed_payees", "allowed": (0..pick(3)).map(|_| merchants[pick(5)].clone()).collect::<Vec<_>>()})
                }
                3 => {
                    json!({"type": "mandate.checkout.allowed_merchants", "allowed": (0..pick(3)).map(|_| merchants[pick(5)].clone()).collect::<Vec<_>>()})
                }
                4 => {
                    json!({"type": "mandate.checkout.line_items", "match_mode": (["minimum", "exact", "some"][pick(3)]),
                    "items": (0..pick(3)).map(|n| json!({"id": format!("e{n}"), "quantity": ([json!(1), json!(2), json!(0), json!("x")][pick(4)]),
                        "acceptable_items": (0..pick(3)).map(|_| items[pick(4)].clone()).collect::<Vec<_>>()})).collect::<Vec<_>>()})
                }
                5 => {
                    json!({"type": "mandate.payment.agent_recurrence", "start_date": "2026-01-01", "end_date": (["2026-12-31", "2025-01-01"][pick(2)])})
                }
                6 => {
                    json!({"type": (["mandate.payment.reference", "mandate.payment.recurrence"][pick(2)])})
                }
                7 => json!({"type": "mandate.unknown"}),
                _ => json!({"min": 1}),
            };
            constraints.push(c);
        }
        let fulfilment = json!({
            "payment_amount": ([json!({"currency": (["USD", "EUR"][pick(2)]), "amount": amounts[pick(6)]}), json!({"amount": 3}), Value::Null][pick(3)]),
            "payee": merchants[pick(5)],
            "merchant": merchants[pick(5)],
            "line_items": ([json!((0..pick(3)).map(|_| json!({"id": (["i1", "i2", "i9"][pick(3)]), "quantity": ([json!(1), json!(3), json!(-1)][pick(3)])})).collect::<Vec<_>>()), json!("none")][pick(2)]),
            "date": (["2026-06-01", "2027-01-01"][pick(2)]),
        });
        let theirs = check_constraints(&constraints, &fulfilment, true);
        let ours = chit_core::kinds::intent::constraints::violations(&constraints, &fulfilment);
        satisfied += usize::from(theirs.satisfied);
        if theirs.violations != ours || theirs.satisfied != ours.is_empty() {
            disagreements.push(format!(
                "{constraints:?} / {fulfilment}: {:?} vs {ours:?}",
                theirs.violations
            ));
        }
    }
    assert!(
        disagreements.is_empty(),
        "{}",
        disagreements[..disagreements.len().min(3)].join("\n")
    );
    // Both outcomes, many times each.
    assert!(
        (300..2700).contains(&satisfied),
        "{satisfied} of 3000 satisfied"
    );
}

/// An L3 pair carrying Treeship's attestation claim (a signed action
/// naming the session's chain head, the L2 and the transaction), as
/// `treeship vi attest` builds it: Treeship and chit pass it; a claim whose
/// action was edited, or that names another L2, fails both.
#[test]
fn an_attested_pair_is_judged_as_treeship_judges_it() {
    use treeship_core::attestation::Ed25519Signer;
    use treeship_core::vi::jws::sha256_b64u;
    use treeship_core::vi::{build_attestation_claim, AttestationStatement};
    let fx = fixture();
    let issuer = Jwk::from_value(&fx["issuer_public_jwk"]).unwrap();
    let l2 = L2View::parse(fx["l2"].as_str().unwrap()).unwrap();
    let key = AgentKey::from_private_jwk(&fx["agent_private_jwk"]).unwrap();
    let signer = Ed25519Signer::generate("key_test").unwrap();
    let checkout_hash = sha256_b64u(fx["checkout_jwt"].as_str().unwrap().as_bytes());
    let attested = |mandate_digest: &str, edit: bool| {
        let stmt = AttestationStatement::new(
            "agent://shopping",
            Some("ssn_fixture".into()),
            "art_head",
            "mroot_00",
            3,
            None,
            mandate_digest,
            &checkout_hash,
            "2026-09-08T00:00:00Z",
        );
        let (claim, _) = build_attestation_claim(&stmt, &signer).unwrap();
        let mut claim = serde_json::to_value(&claim).unwrap();
        if edit {
            let p = claim["value"]["envelope"]["payload"].as_str().unwrap();
            let text = String::from_utf8(b64u_decode(p).unwrap()).unwrap();
            claim["value"]["envelope"]["payload"] =
                b64u(text.replace("mroot_00", "mroot_01").as_bytes()).into();
        }
        let mut req = request(&fx);
        req.attestation = Some(claim);
        Files::from(&fx, &build_l3(&l2, &key, &req).unwrap())
    };
    let digest = sha256_b64u(l2.base_jwt().as_bytes());
    for (what, files, passes) in [
        ("an honest claim", attested(&digest, false), true),
        (
            "a claim whose action was edited",
            attested(&digest, true),
            false,
        ),
        (
            "a claim naming another L2",
            attested("another", false),
            false,
        ),
    ] {
        assert_eq!(files.treeship(&issuer), (true, passes), "{what}");
        let dir = tempfile::tempdir().unwrap();
        files.write(dir.path());
        let (run, lines) = chit(dir.path());
        assert_eq!(
            run.code,
            if passes { 0 } else { 1 },
            "{what}: {}",
            run.stdout
        );
        let said = run.stdout.contains("vi_attestation");
        assert!(said, "{what}: {}", run.stdout);
        if passes {
            for file in ["l3a.sdjwt", "l3b.sdjwt"] {
                assert_eq!(
                    status(across(&lines, file)),
                    "signed",
                    "{what}: {}",
                    run.stdout
                );
            }
        }
    }
}
