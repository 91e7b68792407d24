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

/// The files a user has: the L1, the L2, the L3 pair and the two L2
/// presentations each half was made under.
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
        for (name, text) in [
            ("l1.sdjwt", &self.l1),
            ("l2.sdjwt", &self.l2),
            ("l3a.sdjwt", &self.l3a),
            ("l3b.sdjwt", &self.l3b),
            ("l2-payment.sdjwt", &self.pay),
            ("l2-checkout.sdjwt", &self.checkout),
        ] {
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

fn chit(d: &Path) -> (Run, Vec<Value>) {
    let run = chit_in(
        d,
        &[
            "verify",
            "--json",
            "--allow-unchecked",
            "l1.sdjwt",
            "l2.sdjwt",
            "l3a.sdjwt",
            "l3b.sdjwt",
            "l2-payment.sdjwt",
            "l2-checkout.sdjwt",
        ],
        None,
    );
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
        let run = chit_in(
            d,
            &[
                "verify",
                "--allow-unchecked",
                "l1.sdjwt",
                "l2.sdjwt",
                "l3a.sdjwt",
                "l3b.sdjwt",
                "l2-payment.sdjwt",
                "l2-checkout.sdjwt",
            ],
            None,
        );
        assert!(
            run.stdout
                .lines()
                .any(|l| l.contains(file) && l.contains(against)),
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
    let cases: Vec<(&str, Tamper, &str)> = vec![
        (
            "an L3b payload edited",
            Box::new(move |f: &mut Files| f.l3b = edit_payload(&f.l3b, "tennis-warehouse", "evil")),
            "l3b.sdjwt",
        ),
        (
            "an L3a signed by another agent key",
            Box::new({
                let other = other.clone();
                move |f: &mut Files| f.l3a = resign(&f.l3a, None, &other)
            }),
            "l3a.sdjwt",
        ),
        (
            "an L3a whose header names another kid",
            Box::new(move |f: &mut Files| {
                let key = AgentKey::from_private_jwk(&fixture()["agent_private_jwk"]).unwrap();
                let h = serde_json::json!({"alg": "ES256", "typ": "kb-sd-jwt", "kid": format!("{key_kid}-x")});
                f.l3a = resign(&f.l3a, Some(h), &key)
            }),
            "l3a.sdjwt",
        ),
        (
            "an L3a bound to the checkout presentation",
            Box::new(|f: &mut Files| f.pay = f.checkout.clone()),
            "l3a.sdjwt",
        ),
        (
            "an L2 signature bit",
            Box::new(move |f: &mut Files| f.l2 = flip_sig(&f.l2)),
            "l2.sdjwt",
        ),
        (
            "an L1 binding another user key",
            Box::new(move |f: &mut Files| f.l1 = edit_payload(&f.l1, "\"x\":\"", "\"x\":\"A")),
            "l2.sdjwt",
        ),
    ];
    for (what, tamper, file) in cases {
        let mut files = Files::from(&fx, &bundle);
        tamper(&mut files);
        let (l2_ok, l3_ok) = files.treeship(&issuer);
        assert!(!(l2_ok && l3_ok), "{what}: Treeship passes it");
        let dir = tempfile::tempdir().unwrap();
        files.write(dir.path());
        let (run, lines) = chit(dir.path());
        assert_eq!(run.code, 1, "{what}: {}", run.stdout);
        assert_eq!(
            status(across(&lines, file)),
            "invalid",
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
