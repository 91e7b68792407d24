//! Verifiable Intent credentials (draft v0.1; Treeship 0.32 reads and
//! writes them): SD-JWTs signed ES256, in three layers. L1 (`typ`
//! `sd+jwt`) is an issuer's credential binding a user's key (`cnf.jwk`);
//! L2 (`kb-sd-jwt+kb`) is the user's mandate, signed by that key, binding
//! the L1 it was made under (`sd_hash`) and, in autonomous mode, an
//! agent's key; L3 (`kb-sd-jwt`) is the agent's final payment (L3a) or
//! checkout (L3b) mandate, signed by the agent's key, binding the L2
//! presentation it saw.
//!
//! Each file is read as treeship-core 0.32.0's `vi` module reads it
//! (`SdJwt::parse`, `L2View`) and checked for what it says alone; its
//! signature is checked across inputs with the key of the layer above,
//! found among the inputs by the hash the layer binds (as `verify_l3` and
//! `verify_l2_against_l1` check them). What chit does not check is named
//! in a warning, and such a credential is never valid: an L1 issuer's
//! signature (its key is the issuer's, published elsewhere), and every
//! validity window against the current time (a receipt is judged as a
//! record, the same on every day). An L3 is also held to the constraints
//! of the L2 mandate it was made under ([`constraints`]) and its Treeship
//! attestation claim checked.

use crate::checked::Checked;
use crate::facts::{Facts, Origin};
use crate::report::Report;
use base64::Engine;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

pub mod constraints;

/// The kind chit reports for a credential.
pub const KIND: &str = "vi.credential";

/// The rule ids a credential is checked by.
pub mod rule {
    /// The SD-JWT reads: a compact JWS, base64url, JSON, disclosures of
    /// two or three members.
    pub const FORMAT: &str = "vi_format";
    /// Its header: ES256, and the `typ` of a layer.
    pub const HEADER: &str = "vi_header";
    /// An L2's mandates, as `L2View` reads them.
    pub const MANDATE: &str = "vi_mandate";
    /// An L3's final mandate and its members.
    pub const FINAL: &str = "vi_final";
    /// An L3's Treeship attestation claim.
    pub const ATTESTATION: &str = "vi_attestation";
    /// An L3 against the constraints of the L2 mandate it was made under.
    pub const CONSTRAINTS: &str = "vi_constraints";
    /// A layer's `iat` and `exp`, not judged against the current time.
    pub const WINDOW: &str = "vi_window";
    /// Across inputs: the hash a layer binds is the one given.
    pub const SD_HASH: &str = "sd_hash";
    pub use crate::rule::SIGNATURE;
}

const VCT_CHECKOUT_OPEN: &str = "mandate.checkout.open.1";
const VCT_PAYMENT_OPEN: &str = "mandate.payment.open.1";
const VCT_CHECKOUT_FINAL: &str = "mandate.checkout.1";
const VCT_PAYMENT_FINAL: &str = "mandate.payment.1";
const ATTESTATION_SCHEME: &str = "treeship.receipt-chain.v1";
const ATTESTATION_ACTION: &str = "vi.l3.attested";
const ATTESTATION_TYPE: &str = "treeship/vi-attestation/v1";

/// Which layer a credential is, by its header's `typ`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    L1,
    L2,
    /// An L3 carrying a final payment mandate.
    L3a,
    /// An L3 carrying a final checkout mandate.
    L3b,
}

impl Layer {
    pub fn name(self) -> &'static str {
        match self {
            Layer::L1 => "L1",
            Layer::L2 => "L2",
            Layer::L3a => "L3a",
            Layer::L3b => "L3b",
        }
    }
}

/// A P-256 key as a JWK names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Jwk {
    x: String,
    y: String,
    kid: Option<String>,
}

impl Jwk {
    /// As Treeship's `Jwk::from_value`: `kty` EC, `crv` P-256, `x` and `y`
    /// strings, `kid` when a string.
    fn read(v: &Value) -> Result<Jwk, String> {
        let get = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or(format!("its jwk has no '{k}'"))
        };
        let (kty, crv) = (get("kty")?, get("crv")?);
        if kty != "EC" || crv != "P-256" {
            return Err(format!("its jwk must be EC/P-256, not {kty}/{crv}"));
        }
        Ok(Jwk {
            x: get("x")?,
            y: get("y")?,
            kid: v.get("kid").and_then(Value::as_str).map(str::to_owned),
        })
    }

    /// Whether `sig` (`r || s`) is this key's ES256 signature over `input`.
    fn verifies(&self, input: &[u8], sig: &[u8]) -> Result<(), String> {
        use p256::ecdsa::signature::Verifier;
        let (Ok(x), Ok(y)) = (b64u_decode(&self.x), b64u_decode(&self.y)) else {
            return Err("the key's x or y is not base64url".to_owned());
        };
        if x.len() != 32 || y.len() != 32 {
            return Err("the key's x and y must be 32 bytes each".to_owned());
        }
        let sec1 = [&[4u8][..], &x, &y].concat();
        let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1)
            .map_err(|_| "the key is not a point on P-256".to_owned())?;
        let sig = p256::ecdsa::Signature::from_slice(sig)
            .map_err(|_| "the signature is not 64 bytes of r and s".to_owned())?;
        key.verify(input, &sig)
            .map_err(|_| "the ES256 signature does not verify".to_owned())
    }
}

/// What the checks across inputs need of a credential.
#[derive(Clone, Debug)]
pub struct IntentFacts {
    pub layer: Layer,
    pub source: Origin,
    /// `B64U(SHA-256(serialization))`: what a layer below binds as its
    /// `sd_hash`.
    pub hash: String,
    /// The hash of the layer above it this one binds.
    pub sd_hash: Option<String>,
    /// The key this layer hands down: an L1's user key, an L2's agent key
    /// (or why it has none).
    key: Result<Jwk, String>,
    signing_input: Vec<u8>,
    signature: Vec<u8>,
    /// An L3's header `kid`.
    kid: Option<String>,
    /// An L2's mode (only autonomous mandates have an L3).
    autonomous: bool,
    /// An L2's payment instrument; an L3a's.
    instrument: Option<Value>,
    /// An L2's mandates' constraints, their references to its other
    /// disclosures inlined: the checkout's and the payment's.
    constraints: (Vec<Value>, Vec<Value>),
    /// An L3's final mandate, resolved, and its nonce.
    fulfils: Value,
    nonce: Option<Value>,
    /// An L3's verified Treeship attestation claim.
    attested: Option<Attested>,
    /// `B64U(SHA-256(h.p.s))`: what an attestation names an L2 by.
    base: String,
}

/// A parsed SD-JWT, as Treeship's `SdJwt::parse` reads it.
struct SdJwt {
    header: Value,
    payload: Value,
    raw_header: String,
    raw_payload: String,
    signature: Vec<u8>,
    disclosures: Vec<String>,
    /// Bytes its references may still copy in (see [`Expansion`]).
    expansion: Expansion,
}

/// What references to disclosures may copy in, at most: a few times the
/// credential's own size. One disclosure referenced ten thousand times
/// would otherwise be copied ten thousand times.
struct Expansion(std::cell::Cell<usize>);

impl Expansion {
    fn of(text: &str) -> Expansion {
        Expansion(std::cell::Cell::new(
            text.len().saturating_mul(4).max(1 << 16),
        ))
    }

    /// Takes `bytes` from what is left, or says it is spent.
    fn take(&self, bytes: usize) -> Result<(), String> {
        let left = self.0.get();
        if bytes > left {
            return Err(
                "its references to its disclosures copy in more than four times its own size"
                    .into(),
            );
        }
        self.0.set(left - bytes);
        Ok(())
    }
}

use crate::keys::encode_base64url as b64u;

/// base64url, unpadded (trailing `=` dropped first, as Treeship does).
fn b64u_decode(s: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s.trim_end_matches('='))
        .map_err(|e| format!("not base64url: {e}"))
}

fn sha256_b64u(bytes: &[u8]) -> String {
    b64u(&crate::digest::sha256(bytes))
}

fn json(bytes: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))
}

impl SdJwt {
    /// Read as Treeship reads it; each JSON part first held to chit's
    /// reader's limits (depth, values, keys), which a credential passes
    /// like any other input.
    fn parse(text: &str, limits: &crate::Limits) -> Result<SdJwt, String> {
        let guarded = |what: &str, b64: &str| -> Result<Value, String> {
            let bytes = b64u_decode(b64).map_err(|e| format!("{what} is {e}"))?;
            crate::json::parse(&bytes, limits).map_err(|e| format!("{what} is not JSON: {e}"))?;
            json(&bytes).map_err(|e| format!("{what} is {e}"))
        };
        let mut parts = text.trim().split('~');
        let jwt = parts.next().unwrap_or_default();
        let segments: Vec<&str> = jwt.split('.').collect();
        let [h, p, s] = segments[..] else {
            return Err(format!(
                "the JWT has {} parts separated by '.', not 3",
                segments.len()
            ));
        };
        let header = guarded("its header", h)?;
        let payload = guarded("its payload", p)?;
        let signature = b64u_decode(s).map_err(|e| format!("its signature is {e}"))?;
        let disclosures: Vec<String> = parts.filter(|d| !d.is_empty()).map(str::to_owned).collect();
        for (i, d) in disclosures.iter().enumerate() {
            let what = format!("disclosure {}", i + 1);
            guarded(&what, d)?;
            disclosure(d).map_err(|e| format!("{what} {e}"))?;
        }
        Ok(SdJwt {
            header,
            payload,
            raw_header: h.to_owned(),
            raw_payload: p.to_owned(),
            signature,
            disclosures,
            expansion: Expansion::of(text),
        })
    }

    /// `h.p.s~d1~…~`, as Treeship serializes it back.
    fn serialize(&self) -> String {
        let mut s = format!(
            "{}.{}.{}",
            self.raw_header,
            self.raw_payload,
            b64u(&self.signature)
        );
        for d in &self.disclosures {
            s.push('~');
            s.push_str(d);
        }
        s.push('~');
        s
    }

    /// `(disclosure, hash, value)`: the value a disclosure discloses.
    fn entries(&self) -> Vec<(&str, String, Value)> {
        self.disclosures
            .iter()
            .filter_map(|d| {
                let mut arr = disclosure(d).ok()?;
                Some((d.as_str(), sha256_b64u(d.as_bytes()), arr.pop()?))
            })
            .collect()
    }

    /// The payload with its disclosures resolved, as Treeship's
    /// `SdJwt::resolve`: named ones whose hash is in `_sd` merged in,
    /// `delegate_payload` references replaced by what they disclose.
    fn resolve(&self) -> Result<Value, String> {
        let mut out = self.payload.clone();
        let sd: HashSet<String> = strings(out.get("_sd")).into_iter().collect();
        let mut named = Vec::new();
        // The first disclosure of each hash, as a search in order finds it.
        let mut by_hash: HashMap<String, (usize, Vec<Value>)> = HashMap::new();
        for d in &self.disclosures {
            if let Ok(arr) = disclosure(d) {
                let h = sha256_b64u(d.as_bytes());
                if sd.contains(&h) && arr.len() == 3 {
                    if let Some(name) = arr[1].as_str() {
                        named.push((name.to_owned(), arr[2].clone()));
                    }
                }
                by_hash.entry(h).or_insert((d.len(), arr));
            }
        }
        if let Some(obj) = out.as_object_mut() {
            for (k, v) in named {
                obj.insert(k, v);
            }
        }
        if let Some(items) = out.get("delegate_payload").and_then(Value::as_array) {
            let resolved: Vec<Value> = items
                .iter()
                .map(|item| {
                    let found = item
                        .get("...")
                        .and_then(Value::as_str)
                        .and_then(|h| by_hash.get(h));
                    match found.and_then(|(len, arr)| Some((len, arr.last()?))) {
                        Some((len, v)) => self.expansion.take(*len).map(|()| v.clone()),
                        None => Ok(item.clone()),
                    }
                })
                .collect::<Result<_, String>>()?;
            if let Some(obj) = out.as_object_mut() {
                obj.insert("delegate_payload".into(), Value::Array(resolved));
            }
        }
        Ok(out)
    }
}

fn disclosure(d: &str) -> Result<Vec<Value>, String> {
    match json(&b64u_decode(d)?)? {
        Value::Array(a) if a.len() == 2 || a.len() == 3 => Ok(a),
        _ => Err("is not a JSON array of 2 or 3 members".to_owned()),
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `input` looks like an SD-JWT: UTF-8 text of base64url, `.`,
/// `~` and `=`, whose first part reads as a JWS header (a JSON object
/// naming an `alg`).
pub fn recognise(input: &[u8]) -> bool {
    // Most inputs are JSON: told apart by their first byte, before any
    // pass over the whole.
    let first = input.iter().find(|b| !b.is_ascii_whitespace());
    if !first.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_') {
        return false;
    }
    let Ok(text) = std::str::from_utf8(input) else {
        return false;
    };
    let text = text.trim();
    if text.is_empty()
        || !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~=".contains(&b))
    {
        return false;
    }
    // A JWS header is enough to tell it: one cut short is then said to be
    // so, not taken for broken JSON.
    let header = text.split(['.', '~']).next().unwrap_or_default();
    b64u_decode(header)
        .ok()
        .and_then(|h| json(&h).ok())
        .is_some_and(|h| h.get("alg").is_some())
}

/// Checks one credential alone; its facts carry what the checks across
/// inputs need.
pub fn check(input: &[u8], limits: &crate::Limits) -> Checked {
    let mut r = Report::new(KIND);
    let text = std::str::from_utf8(input).unwrap_or_default();
    let jwt = match SdJwt::parse(text, limits) {
        Ok(j) => j,
        Err(e) => {
            r.error(
                rule::FORMAT,
                "",
                format!("not an SD-JWT as Verifiable Intent writes one: {e}"),
            );
            return Checked::of(r);
        }
    };
    let Some(layer) = header(&jwt, &mut r) else {
        return Checked::of(r);
    };
    let mut facts = IntentFacts {
        layer,
        source: Origin::new("", None),
        hash: sha256_b64u(jwt.serialize().as_bytes()),
        sd_hash: jwt
            .payload
            .get("sd_hash")
            .and_then(Value::as_str)
            .map(str::to_owned),
        key: Err("it was not read far enough to name one".to_owned()),
        signing_input: format!("{}.{}", jwt.raw_header, jwt.raw_payload).into_bytes(),
        signature: jwt.signature.clone(),
        kid: jwt
            .header
            .get("kid")
            .and_then(Value::as_str)
            .map(str::to_owned),
        autonomous: false,
        instrument: None,
        constraints: (Vec::new(), Vec::new()),
        fulfils: Value::Null,
        nonce: jwt.payload.get("nonce").cloned(),
        attested: None,
        base: sha256_b64u(
            format!(
                "{}.{}.{}",
                jwt.raw_header,
                jwt.raw_payload,
                b64u(&jwt.signature)
            )
            .as_bytes(),
        ),
    };
    let layer = match layer {
        Layer::L1 => {
            l1(&jwt, &mut facts, &mut r);
            layer
        }
        Layer::L2 => {
            l2(&jwt, &mut facts, &mut r);
            layer
        }
        Layer::L3a | Layer::L3b => match l3(&jwt, &mut facts, &mut r) {
            Some(l) => l,
            None => return Checked::of(r),
        },
    };
    facts.layer = layer;
    // Alone, no signature of it was checked: the checks across inputs do
    // that, with the key of the layer above.
    r.partial = true;
    r.warning(
        rule::SIGNATURE,
        "",
        match layer {
            Layer::L1 => "its issuer's ES256 signature is not checked: the issuer's key is not in \
                 the credential, and chit holds none"
                .to_owned(),
            Layer::L2 => "its ES256 signature is not checked on its own: give the L1 it binds \
                 (sd_hash) with it, whose user key signs it"
                .to_owned(),
            _ => "its ES256 signature is not checked on its own: give the L2 presentation it \
                 binds (sd_hash) with it, whose agent key signs it"
                .to_owned(),
        },
    );
    let mut checked = Checked::of(r);
    checked.facts = Some(Facts::Intent(Box::new(facts)));
    checked
}

/// `vi_header`: ES256, and a layer's `typ`.
fn header(jwt: &SdJwt, r: &mut Report) -> Option<Layer> {
    let h = &jwt.header;
    let layer = match h.get("typ").and_then(Value::as_str) {
        Some("sd+jwt") => Layer::L1,
        Some("kb-sd-jwt+kb") => Layer::L2,
        Some("kb-sd-jwt") => Layer::L3a,
        other => {
            r.error(
                rule::HEADER,
                "/header/typ",
                format!(
                    "typ must be sd+jwt (L1), kb-sd-jwt+kb (L2) or kb-sd-jwt (L3), not {}",
                    other.map_or("absent".to_owned(), |t| format!("'{t}'"))
                ),
            );
            return None;
        }
    };
    if h.get("alg").and_then(Value::as_str) != Some("ES256") {
        r.error(
            rule::HEADER,
            "/header/alg",
            format!(
                "alg must be ES256, not {}",
                h.get("alg").cloned().unwrap_or(Value::Null)
            ),
        );
    }
    Some(layer)
}

/// An L1: the user key it binds (`cnf.jwk`).
fn l1(jwt: &SdJwt, facts: &mut IntentFacts, r: &mut Report) {
    facts.key = match jwt.payload.get("cnf").and_then(|c| c.get("jwk")) {
        Some(j) => Jwk::read(j),
        None => Err("it has no cnf.jwk".to_owned()),
    };
    window(&jwt.payload, r);
}

/// An L2, as Treeship's `L2View` reads it: its mandates referenced from
/// `delegate_payload`, one checkout and one payment at most, the agent
/// key both name the same.
fn l2(jwt: &SdJwt, facts: &mut IntentFacts, r: &mut Report) {
    let p = &jwt.payload;
    if !p.is_object() {
        return r.error(
            rule::MANDATE,
            "/payload",
            "an L2's payload must be a JSON object",
        );
    }
    let refs: HashSet<&str> = p
        .get("delegate_payload")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|i| i.get("...").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    let (mut checkout, mut payment) = (None::<Value>, None::<Value>);
    // The other disclosures, the first of each hash, with their size.
    let mut standalone: HashMap<String, (usize, Value)> = HashMap::new();
    for (raw, hash, value) in jwt.entries() {
        let vct = value.get("vct").and_then(Value::as_str).unwrap_or_default();
        let slot = match vct {
            VCT_CHECKOUT_OPEN | VCT_CHECKOUT_FINAL if refs.contains(hash.as_str()) => &mut checkout,
            VCT_PAYMENT_OPEN | VCT_PAYMENT_FINAL if refs.contains(hash.as_str()) => &mut payment,
            _ => {
                standalone.entry(hash).or_insert((raw.len(), value));
                continue;
            }
        };
        if slot.is_some() {
            return r.error(
                rule::MANDATE,
                "/payload/delegate_payload",
                "the L2 carries more than one mandate of a kind (checkout or payment)",
            );
        }
        *slot = Some(value);
    }
    if checkout.is_none() && payment.is_none() {
        return r.error(
            rule::MANDATE,
            "/payload/delegate_payload",
            "the L2's delegate_payload resolves to no mandate disclosure",
        );
    }
    let mandates: Vec<&Value> = [&checkout, &payment].into_iter().flatten().collect();
    facts.autonomous = mandates.iter().any(|m| {
        let vct = m.get("vct").and_then(Value::as_str);
        vct == Some(VCT_CHECKOUT_OPEN) || vct == Some(VCT_PAYMENT_OPEN)
    });
    let mut agent: Option<Jwk> = None;
    for m in &mandates {
        let Some(j) = m.get("cnf").and_then(|c| c.get("jwk")) else {
            continue;
        };
        let jwk = match Jwk::read(j) {
            Ok(k) => k,
            Err(e) => {
                return r.error(
                    rule::MANDATE,
                    "/payload/delegate_payload",
                    format!("a mandate's cnf: {e}"),
                )
            }
        };
        if agent.as_ref().is_some_and(|a| *a != jwk) {
            return r.error(
                rule::MANDATE,
                "/payload/delegate_payload",
                "the checkout and payment mandates delegate to different agent keys (cnf.jwk)",
            );
        }
        agent = Some(jwk);
    }
    facts.key = match agent {
        Some(k) => Ok(k),
        None if facts.autonomous => {
            return r.error(
                rule::MANDATE,
                "/payload/delegate_payload",
                "the L2's open mandates delegate to no agent key (cnf.jwk)",
            )
        }
        None => Err("it delegates to no agent".to_owned()),
    };
    let inlined = |m: &Option<Value>| -> Result<Vec<Value>, String> {
        m.as_ref()
            .and_then(|m| m.get("constraints"))
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .map(|c| inline_refs(c, &standalone, &jwt.expansion))
                    .collect()
            })
            .unwrap_or(Ok(Vec::new()))
    };
    match (inlined(&checkout), inlined(&payment)) {
        (Ok(c), Ok(p)) => facts.constraints = (c, p),
        (Err(why), _) | (_, Err(why)) => {
            return r.error(rule::MANDATE, "/payload/delegate_payload", why)
        }
    }
    facts.instrument = payment.and_then(|m| m.get("payment_instrument").cloned());
}

/// A constraint with each `{"...": hash}` that names one of the L2's other
/// disclosures replaced by what it discloses, as Treeship's `inline_refs`.
fn inline_refs(
    v: &Value,
    standalone: &HashMap<String, (usize, Value)>,
    expansion: &Expansion,
) -> Result<Value, String> {
    Ok(match v {
        Value::Object(m) => {
            let named = m
                .get("...")
                .and_then(Value::as_str)
                .filter(|_| m.len() == 1)
                .and_then(|h| standalone.get(h));
            if let Some((len, value)) = named {
                expansion.take(*len)?;
                return Ok(value.clone());
            }
            Value::Object(
                m.iter()
                    .map(|(k, x)| Ok((k.clone(), inline_refs(x, standalone, expansion)?)))
                    .collect::<Result<_, String>>()?,
            )
        }
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| inline_refs(x, standalone, expansion))
                .collect::<Result<_, String>>()?,
        ),
        other => other.clone(),
    })
}

/// The reference's merchant match: by id when both name one, else by the
/// same name and website.
fn merchant_matches(candidate: &Value, target: &Value) -> bool {
    let (Some(c), Some(t)) = (candidate.as_object(), target.as_object()) else {
        return false;
    };
    fn text<'v>(o: &'v serde_json::Map<String, Value>, k: &str) -> Option<&'v str> {
        o.get(k).and_then(Value::as_str).filter(|s| !s.is_empty())
    }
    if let (Some(a), Some(b)) = (text(c, "id"), text(t, "id")) {
        return a == b;
    }
    let (name, site) = (text(c, "name"), text(c, "website"));
    name.is_some()
        && site.is_some()
        && name == t.get("name").and_then(Value::as_str)
        && site == t.get("website").and_then(Value::as_str)
}

/// An L3, as `verify_l3` checks one alone: terminal (no `cnf`), its final
/// mandate and its members, `_sd_alg`, its lifetime. Which half it is, by
/// the final mandate it carries.
fn l3(jwt: &SdJwt, facts: &mut IntentFacts, r: &mut Report) -> Option<Layer> {
    let p = &jwt.payload;
    let claims = match jwt.resolve() {
        Ok(c) => c,
        Err(why) => {
            r.error(rule::FORMAT, "/payload/delegate_payload", why);
            return None;
        }
    };
    let delegates = claims
        .get("delegate_payload")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let find = |vct: &str| {
        delegates
            .iter()
            .find(|d| d.get("vct").and_then(Value::as_str) == Some(vct))
            .cloned()
    };
    let (layer, mandate) = match (find(VCT_PAYMENT_FINAL), find(VCT_CHECKOUT_FINAL)) {
        (Some(m), _) => (Layer::L3a, m),
        (None, Some(m)) => (Layer::L3b, m),
        (None, None) => {
            r.error(
                rule::FINAL,
                "/payload/delegate_payload",
                format!("an L3 carries a {VCT_PAYMENT_FINAL} or a {VCT_CHECKOUT_FINAL} disclosure; this carries neither"),
            );
            return None;
        }
    };
    if p.get("cnf").is_some() {
        r.error(
            rule::FINAL,
            "/payload/cnf",
            "an L3 is the last delegation: it carries no cnf",
        );
    }
    if p.get("_sd_alg").is_some_and(|v| v != "sha-256") {
        r.error(rule::FINAL, "/payload/_sd_alg", "_sd_alg must be sha-256");
    }
    let (iat, exp) = (
        p.get("iat").and_then(Value::as_u64),
        p.get("exp").and_then(Value::as_u64),
    );
    if let (Some(i), Some(e)) = (iat, exp) {
        if e < i || e - i > 3600 {
            r.error(
                rule::FINAL,
                "/payload/exp",
                "exp must be at most 1 hour after iat, and not before it",
            );
        }
    }
    window(p, r);
    match layer {
        Layer::L3a => payment_final(&mandate, facts, r),
        _ => checkout_final(&mandate, r),
    }
    facts.fulfils = mandate;
    if let Some(att) = p.get("agent_attestation") {
        if att.get("type").and_then(Value::as_str) == Some(ATTESTATION_SCHEME) {
            match attestation(att) {
                Ok(a) => {
                    r.warning(
                        rule::ATTESTATION,
                        "/payload/agent_attestation",
                        format!(
                            "its Treeship attestation {} verifies under the key the claim itself names ({}), \
                             which no trust file pins",
                            a.artifact_id, a.public_key
                        ),
                    );
                    facts.attested = Some(a);
                }
                Err(why) => r.error(
                    rule::ATTESTATION,
                    "/payload/agent_attestation",
                    format!("its Treeship attestation claim: {why}"),
                ),
            }
        }
    }
    Some(layer)
}

/// What a verified Treeship attestation claim binds.
#[derive(Clone, Debug)]
struct Attested {
    artifact_id: String,
    public_key: String,
    mandate_digest: String,
    transaction_id: String,
}

/// `AttestationStatement`, as Treeship reads an attestation's `meta`.
const ATTESTATION_META: &[crate::kinds::treeship::shape::Field] = {
    use crate::kinds::treeship::shape::{Has, Ty};
    &[
        ("type", Ty::Str, Has::Req),
        ("timestamp", Ty::Str, Has::Req),
        ("actor", Ty::Str, Has::Req),
        ("session", Ty::Str, Has::Opt),
        ("chain_head", Ty::Str, Has::Req),
        ("checkpoint", Ty::Str, Has::Req),
        ("approval_use", Ty::Str, Has::Opt),
        ("mandate_digest", Ty::Str, Has::Req),
        ("transaction_id", Ty::Str, Has::Req),
        ("chain_length", Ty::U64, Has::Req),
    ]
};

/// A Treeship attestation claim (`treeship.receipt-chain.v1`), checked as
/// Treeship's `verify_attestation_claim` checks it: a Treeship action
/// (`vi.l3.attested`) signed, under the key id the claim names, by the
/// Ed25519 key it names, with the art id it names; its `meta` an
/// attestation statement whose chain head is the action's parent and
/// whose actor is the action's.
fn attestation(claim: &Value) -> Result<Attested, String> {
    let v = claim.get("value").ok_or("it has no value")?;
    let text = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(format!("it has no {k}"))
    };
    let (artifact_id, key_id, public_key) =
        (text("artifact_id")?, text("key_id")?, text("public_key")?);
    let raw = public_key
        .strip_prefix("ed25519:")
        .ok_or("public_key must be 'ed25519:<base64url>'")?;
    let key = b64u_decode(raw)
        .ok()
        .and_then(|k| crate::keys::PublicKey::parse(&format!("ed25519:{}", b64u(&k))).ok())
        .ok_or("public_key is not an Ed25519 public key")?;
    let bytes = serde_json::to_vec(v.get("envelope").ok_or("it has no envelope")?)
        .map_err(|e| e.to_string())?;
    let doc =
        crate::json::parse(&bytes, &crate::json::Limits::default()).map_err(|e| e.to_string())?;
    let env = crate::envelope::Envelope::read_val(doc.root(), &mut Report::default())
        .ok_or("its envelope is not a DSSE envelope")?;
    if env.payload_type != "application/vnd.treeship.action.v1+json" {
        return Err(format!(
            "its envelope's payloadType is '{}'",
            env.payload_type
        ));
    }
    let pae = env.pae();
    let signed = env
        .signatures
        .iter()
        .any(|s| s.keyid.as_deref() == Some(key_id.as_str()) && key.verify_strict(&pae, &s.sig));
    if !signed {
        return Err(format!(
            "no signature under key id {key_id} verifies with the key it names"
        ));
    }
    let derived = crate::envelope::Ids::of_pae(&pae).artifact_id;
    if derived != artifact_id {
        return Err(format!(
            "it names art id {artifact_id}, but its envelope's is {derived}"
        ));
    }
    let action = json(&env.payload)?;
    let field = |k: &str| action.get(k).and_then(Value::as_str);
    if field("type") != Some("treeship/action/v1") || field("action") != Some(ATTESTATION_ACTION) {
        return Err(format!(
            "its statement is not a Treeship action {ATTESTATION_ACTION}"
        ));
    }
    let meta = action.get("meta").ok_or("its action has no meta")?;
    let meta_bytes = serde_json::to_vec(meta).map_err(|e| e.to_string())?;
    let meta_doc = crate::json::parse(&meta_bytes, &crate::json::Limits::default())
        .map_err(|e| e.to_string())?;
    crate::kinds::treeship::shape::object(meta_doc.root(), ATTESTATION_META, "/meta")
        .map_err(|(at, what)| format!("{at} {what}"))?;
    let m = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or_default();
    if m("type") != ATTESTATION_TYPE {
        return Err(format!("its meta type is '{}'", m("type")));
    }
    if field("parentId") != Some(m("chain_head")) {
        return Err("its parentId is not the chain head it names".to_owned());
    }
    if field("actor") != Some(m("actor")) {
        return Err("its actor differs between the action and its meta".to_owned());
    }
    Ok(Attested {
        artifact_id,
        public_key,
        mandate_digest: m("mandate_digest").to_owned(),
        transaction_id: m("transaction_id").to_owned(),
    })
}

/// L3a's final payment mandate: a transaction id, a payee with name and
/// website, an amount with currency and an integer amount, an instrument
/// with id and type.
fn payment_final(m: &Value, facts: &mut IntentFacts, r: &mut Report) {
    let text = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .is_some_and(|s| !s.trim().is_empty())
    };
    let mut need = |ok: bool, what: &str| {
        if !ok {
            r.error(
                rule::FINAL,
                "/payload/delegate_payload",
                format!("the final payment mandate needs {what}"),
            );
        }
    };
    need(text(m.get("transaction_id")), "a transaction_id");
    let payee = m.get("payee").filter(|p| p.is_object());
    need(
        payee.is_some_and(|p| text(p.get("name")) && text(p.get("website"))),
        "a payee with a name and a website",
    );
    let amount = m.get("payment_amount").filter(|a| a.is_object());
    need(
        amount.is_some_and(|a| {
            text(a.get("currency")) && a.get("amount").is_some_and(|x| x.is_i64() || x.is_u64())
        }),
        "a payment_amount with a currency and a whole amount",
    );
    let pi = m.get("payment_instrument");
    let filled = |k: &str| {
        pi.and_then(|p| p.get(k))
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    need(
        filled("id") && filled("type"),
        "a payment_instrument with an id and a type",
    );
    facts.instrument = Some(pi.cloned().unwrap_or(Value::Null));
}

/// L3b's final checkout mandate: the checkout JWT and its hash.
fn checkout_final(m: &Value, r: &mut Report) {
    let text = |k: &str| m.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    match (text("checkout_jwt"), text("checkout_hash")) {
        (Some(jwt), Some(hash)) => {
            if sha256_b64u(jwt.as_bytes()) != hash {
                r.error(
                    rule::FINAL,
                    "/payload/delegate_payload",
                    "the final checkout mandate's checkout_hash is not B64U(SHA-256(checkout_jwt))",
                );
            }
        }
        _ => r.error(
            rule::FINAL,
            "/payload/delegate_payload",
            "the final checkout mandate needs a checkout_jwt and a checkout_hash",
        ),
    }
}

/// A layer's `iat` and `exp` are not judged against the current time.
fn window(p: &Value, r: &mut Report) {
    if p.get("exp").is_some() || p.get("iat").is_some() {
        r.warning(
            rule::WINDOW,
            "/payload/exp",
            "its validity window (iat, exp) is not judged against the current time",
        );
    }
}

/// `vi_constraints`: what an L3 fulfils, against the constraints of the
/// L2 mandate it was made under; for an L3b, with the payee of the L3a of
/// its pair (the one given with its nonce), whose transaction id must be
/// its checkout hash.
fn fulfils(layer: &IntentFacts, l2: &IntentFacts, given: &Above, r: &mut Report) {
    let m = &layer.fulfils;
    let field = |k: &str| m.get(k).cloned().unwrap_or(Value::Null);
    let (checkout, payment) = &l2.constraints;
    let found = if layer.layer == Layer::L3a {
        let fulfilment = serde_json::json!({
            "payment_amount": field("payment_amount"),
            "payee": field("payee"),
        });
        constraints::violations(payment, &fulfilment)
    } else {
        let pair = given
            .payments
            .iter()
            .find(|a| a.nonce.is_some() && a.nonce == layer.nonce);
        if let Some(a) = pair {
            let tid = a.fulfils.get("transaction_id").and_then(Value::as_str);
            if tid.is_none() || tid != m.get("checkout_hash").and_then(Value::as_str) {
                r.error(
                    rule::CONSTRAINTS,
                    "",
                    "the L3a of its pair names another transaction_id than its checkout_hash",
                );
            }
        }
        if m.get("line_items").and_then(Value::as_array).is_none() {
            Vec::new()
        } else {
            let merchant = pair
                .and_then(|a| a.fulfils.get("payee").cloned())
                .unwrap_or(Value::Null);
            let merchants = |c: &&Value| {
                c.get("type").and_then(Value::as_str) == Some("mandate.checkout.allowed_merchants")
            };
            if !merchant.is_object() && checkout.iter().any(|c| merchants(&c)) {
                // As Treeship: the merchant is the payee of the L3a.
                r.warning(
                    rule::CONSTRAINTS,
                    "",
                    "the mandate's merchant allowlist is not checked: the L3a of this pair (the one \
                     with its nonce) is not among the inputs",
                );
            }
            let kept: Vec<Value> = checkout
                .iter()
                .filter(|c| merchant.is_object() || !merchants(c))
                .cloned()
                .collect();
            let fulfilment = serde_json::json!({
                "merchant": merchant,
                "line_items": field("line_items"),
            });
            constraints::violations(&kept, &fulfilment)
        }
    };
    if !found.is_empty() {
        r.error(
            rule::CONSTRAINTS,
            "/payload/delegate_payload",
            format!("the L2 mandate's constraints: {}", found.join("; ")),
        );
    }
}

/// The L1s and L2s given, by the hash a layer below binds them by.
pub struct Above<'a> {
    by_hash: HashMap<(bool, &'a str), &'a IntentFacts>,
    l1s: usize,
    l2s: usize,
    /// The L3a given, by nonce: the payment half of an L3b's pair.
    payments: Vec<&'a IntentFacts>,
}

impl<'a> Above<'a> {
    pub fn of(all: &'a [IntentFacts]) -> Above<'a> {
        let mut above = Above {
            by_hash: HashMap::new(),
            l1s: 0,
            l2s: 0,
            payments: Vec::new(),
        };
        for f in all {
            let l1 = match f.layer {
                Layer::L1 => true,
                Layer::L2 => false,
                Layer::L3a => {
                    above.payments.push(f);
                    continue;
                }
                Layer::L3b => continue,
            };
            *(if l1 { &mut above.l1s } else { &mut above.l2s }) += 1;
            above.by_hash.entry((l1, f.hash.as_str())).or_insert(f);
        }
        above
    }
}

/// Each L2 against the L1 it binds, and each L3 against the L2
/// presentation it binds, when given together: the layer's signature under
/// the key the one above hands down, and what binds them. `None` for a
/// layer given with no layer of the kind above it; an error (`sd_hash`)
/// for one given with such layers, none of them the one it binds.
pub fn against_above<'a>(
    layer: &IntentFacts,
    given: &Above<'a>,
) -> Option<(Report, Option<&'a IntentFacts>)> {
    let want = layer.sd_hash.as_deref().unwrap_or_default();
    let (l1, what, count) = match layer.layer {
        Layer::L1 => return None,
        Layer::L2 => (true, "L1", given.l1s),
        Layer::L3a | Layer::L3b => (false, "L2 presentation", given.l2s),
    };
    if count == 0 {
        return None;
    }
    let mut r = Report::new(KIND);
    let Some(&above) = given.by_hash.get(&(l1, want)) else {
        r.error(
            rule::SD_HASH,
            "/payload/sd_hash",
            format!(
                "it binds an {what} (sd_hash {}) that is none of those given: give the {what} it                  was made under, byte for byte",
                if want.is_empty() { "absent" } else { want }
            ),
        );
        return Some((r, None));
    };
    match &above.key {
        Err(why) => r.error(
            rule::SIGNATURE,
            "",
            format!(
                "the {} it binds hands down no key: {why}",
                above.layer.name()
            ),
        ),
        Ok(key) => {
            if let Err(e) = key.verifies(&layer.signing_input, &layer.signature) {
                r.error(
                    rule::SIGNATURE,
                    "",
                    format!(
                        "signed by the key the {} hands down? {e}",
                        above.layer.name()
                    ),
                );
            }
        }
    }
    if matches!(layer.layer, Layer::L3a | Layer::L3b) {
        if !above.autonomous {
            r.error(
                rule::MANDATE,
                "",
                "the L2 it binds is not autonomous (open mandates): an L3 has no meaning under it",
            );
        }
        let kid = layer.kid.as_deref().unwrap_or_default();
        let l2_kid = above.key.as_ref().ok().and_then(|k| k.kid.as_deref());
        if kid.is_empty() || l2_kid.is_some_and(|k| k != kid) {
            r.error(
                rule::SIGNATURE,
                "/header/kid",
                format!("its header kid '{kid}' must be the kid of the L2's cnf.jwk"),
            );
        }
        if layer.layer == Layer::L3a {
            if let (Some(want), Some(got)) = (&above.instrument, &layer.instrument) {
                if want.get("id") != got.get("id") || want.get("type") != got.get("type") {
                    r.error(
                        rule::FINAL,
                        "/payload/delegate_payload",
                        "its payment_instrument is not the one the L2 authorized",
                    );
                }
            }
        }
        fulfils(layer, above, given, &mut r);
        if let Some(a) = &layer.attested {
            if a.mandate_digest != above.base {
                r.error(
                    rule::ATTESTATION,
                    "/payload/agent_attestation",
                    "its attestation names another L2 (mandate_digest) than the one it was made under",
                );
            }
            let checkout = layer.fulfils.get("checkout_hash").and_then(Value::as_str);
            if checkout.is_some_and(|c| c != a.transaction_id) {
                r.error(
                    rule::ATTESTATION,
                    "/payload/agent_attestation",
                    "its attestation names another transaction than its checkout_hash",
                );
            }
        }
        r.unchecked = true;
        r.warning(
            rule::SIGNATURE,
            "",
            "the L2's authority rests on its L1, whose issuer signature chit does not check",
        );
    } else {
        // The L1's issuer signature is not checked: what it binds is
        // verified no further than the L1.
        r.unchecked = true;
        r.warning(
            rule::SIGNATURE,
            "",
            "the L1's issuer signature is not checked: chit holds no issuer key",
        );
    }
    Some((r, Some(above)))
}
