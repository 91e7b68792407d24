//! Treeship 0.32's session participant (`treeship/session-participant/v1`):
//! "agent X joined session S by redeeming invitation I", signed twice over
//! a pipe-delimited text, not over the DSSE encoding:
//!
//! `v1|session-participant|{session_ref}|{invitation_ref}|{joining_agent}|
//! {joining_agent_cert_ref or empty}|{joined_at}|{capabilities digest}`,
//!
//! the digest `sha256:` and the hex SHA-256 of the capabilities'
//! sorted-key JSON (`{"action_types":[…]}`). The first signature is the
//! joining agent's, under the key the statement names; the second is the
//! host's countersign, under a trusted key, which must be the invitation's
//! issuer (held across inputs, where the invitation is among them). Its
//! art id is not the DSSE one ([`Envelope::ids`]).

use crate::context::Context;
use crate::envelope::{Envelope, Keys};
use crate::facts::Role;
use crate::keys::PublicKey;
use crate::report::Report;
use sha2::{Digest, Sha256};

/// The payload type of a session participant, and of an invitation.
pub use crate::envelope::TREESHIP_PARTICIPANT as PAYLOAD_TYPE;
pub const INVITATION_PAYLOAD_TYPE: &str = "application/vnd.treeship.invitation.v1+json";
const INVITATION_TYPE: &str = "treeship/invitation/v1";
const TYPE: &str = "treeship/session-participant/v1";

/// The text both signatures cover, from the decoded statement; `None`
/// names the member that is missing or not a string.
pub fn canonical_text(statement: crate::Val) -> Result<String, &'static str> {
    let text = |k: &'static str| statement.get(k).and_then(|v| v.as_str()).ok_or(k);
    if statement.get("type").and_then(|t| t.as_str()) != Some(TYPE) {
        return Err("type");
    }
    let cert = match statement.get("joining_agent_cert_ref") {
        None => "",
        Some(v) if v.is_null() => "",
        Some(v) => v.as_str().ok_or("joining_agent_cert_ref")?,
    };
    let caps = statement
        .get("capabilities")
        .filter(|c| c.is_object())
        .ok_or("capabilities")?;
    // Treeship reads the capabilities as {action_types: [strings]}, absent
    // meaning none, and digests what it read.
    let mut json = b"{\"action_types\":[".to_vec();
    if let Some(list) = caps.get("action_types") {
        let items = list.as_array().ok_or("capabilities")?;
        for (i, t) in items.enumerate() {
            if i > 0 {
                json.push(b',');
            }
            crate::canon::write_string(t.as_str().ok_or("capabilities")?, &mut json);
        }
    }
    json.extend_from_slice(b"]}");
    Ok(format!(
        "v1|session-participant|{}|{}|{}|{cert}|{}|sha256:{}",
        text("session_ref")?,
        text("invitation_ref")?,
        text("joining_agent")?,
        text("joined_at")?,
        crate::digest::hex(&Sha256::digest(&json)),
    ))
}

/// The signature step for a participant: exactly two signatures over the
/// canonical text, the joining agent's under the key the statement names
/// and the host's under a trusted key. Returns the host's key.
pub(crate) fn signers(env: &Envelope, ctx: &Context, report: &mut Report) -> Vec<PublicKey> {
    let rule = crate::rule::SIGNATURE;
    let statement = match crate::json::parse(&env.payload, &ctx.limits) {
        Ok(s) => s,
        Err(e) => {
            report.error(
                crate::rule::STATEMENT,
                "/payload",
                format!("the payload is not JSON: {e}"),
            );
            return Vec::new();
        }
    };
    let text = match canonical_text(statement.root()) {
        Ok(t) => t,
        Err(member) => {
            report.error(
                crate::rule::STATEMENT,
                format!("/payload/{member}"),
                format!("a session participant needs {member} as Treeship writes it, so its signed text cannot be formed"),
            );
            return Vec::new();
        }
    };
    match env.signatures.len() {
        2 => {}
        1 => {
            report.error(
                rule,
                "/signatures",
                "a session participant carries only the joining agent's signature: the host's countersign is required",
            );
            return Vec::new();
        }
        n => {
            report.error(
                rule,
                "/signatures",
                format!("a session participant carries {n} signatures; Treeship requires exactly 2 (the joining agent's, then the host's)"),
            );
            return Vec::new();
        }
    }
    // Base64url without padding, as Treeship decodes it.
    let joining = statement
        .root()
        .get("joining_agent")
        .and_then(|k| k.as_str())
        .and_then(PublicKey::from_base64url);
    match joining {
        None => report.error(
            crate::rule::STATEMENT,
            "/payload/joining_agent",
            "joining_agent is not an Ed25519 public key (32 bytes, base64url)",
        ),
        Some(k) if !k.verify_strict(text.as_bytes(), &env.signatures[0].sig) => report.error(
            rule,
            "/signatures/0",
            "the joining agent's signature does not verify over the participant's signed text under the key it names",
        ),
        Some(_) => {}
    }
    let Some(trust) = ctx.trust else {
        report.error(
            crate::rule::TRUST,
            "",
            "no trusted keys, so the host's countersign cannot be checked: name the keys you trust with --trust FILE",
        );
        return Vec::new();
    };
    // The key its keyid names, else each trusted key in turn (as many as
    // an envelope's signatures may try).
    let countersign = &env.signatures[1];
    let keys = trust.public_keys();
    let named = countersign
        .keyid
        .as_deref()
        .map(|k| keys.with_keyid(k))
        .unwrap_or_default();
    let host = if named.is_empty() {
        keys.iter()
            .take(crate::envelope::MAX_KEYS_TRIED)
            .find(|k| k.verify_strict(text.as_bytes(), &countersign.sig))
    } else {
        named
            .into_iter()
            .find(|k| k.verify_strict(text.as_bytes(), &countersign.sig))
    };
    match host {
        Some(k) => vec![*k],
        None => {
            report.error(
                rule,
                "/signatures/1",
                "the host's countersign does not verify over the participant's signed text under any trusted key",
            );
            Vec::new()
        }
    }
}

/// A participant's or an invitation's part in a join, for the check across
/// inputs: the participant's countersigning key and the invitation it
/// redeems; an invitation's issuer, which must be a key that signed it (as
/// Treeship requires; else an error here).
pub(crate) fn role(
    env: &Envelope,
    statement: Option<crate::Val>,
    signers: &[PublicKey],
    report: &mut Report,
) -> Option<Role> {
    if env.payload_type != PAYLOAD_TYPE && env.payload_type != INVITATION_PAYLOAD_TYPE {
        return None;
    }
    let statement = statement?;
    let session = statement
        .get("session_ref")
        .and_then(|s| s.as_str())
        .unwrap_or("");
    if env.payload_type == PAYLOAD_TYPE {
        let invitation = statement.get("invitation_ref")?.as_str()?;
        return Some(Role::Participant {
            host: signers.first()?.bytes(),
            invitation: invitation.into(),
            session: session.into(),
        });
    }
    if env.payload_type != INVITATION_PAYLOAD_TYPE
        || statement.get("type").and_then(|t| t.as_str()) != Some(INVITATION_TYPE)
    {
        return None;
    }
    let issuer = statement.get("issuer").and_then(|i| i.as_str());
    let key = issuer.and_then(PublicKey::from_base64url);
    match key {
        Some(k) if signers.contains(&k) => Some(Role::Invitation {
            issuer: k.bytes(),
            session: session.into(),
        }),
        _ if signers.is_empty() => None,
        _ => {
            report.error(
                crate::rule::STATEMENT,
                "/payload/issuer",
                format!(
                    "the invitation names issuer {}, but is signed by another key",
                    issuer.unwrap_or("(none)")
                ),
            );
            None
        }
    }
}
