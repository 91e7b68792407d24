//! Treeship 0.32's command artifacts (`application/vnd.treeship.command.*`):
//! kill, approval decision, mandate update, budget update and terminate
//! session. Treeship's `verify_command` checks the signature and that the
//! payload reads as its command; chit checks the same (the signature as for
//! any envelope, the payload's members here), so a command is judged, not
//! only signed.

use crate::context::Context;
use crate::report::Report;

/// The kind chit reports for a command artifact.
pub const KIND: &str = "treeship.command";
/// The payload type prefix every command shares.
pub const PREFIX: &str = "application/vnd.treeship.command.";

/// What a member must be.
#[derive(Clone, Copy)]
enum Is {
    Text,
    Texts,
    Integer,
    Decision,
}

/// A member: its name, what it must be, and whether it may be absent (or
/// null).
type Member = (&'static str, Is, bool);

/// Each command's payload type and members, as treeship-core 0.32.0 reads
/// them (members it does not know are ignored, as serde ignores them).
const COMMANDS: &[(&str, &[Member])] = &[
    (
        "application/vnd.treeship.command.kill.v1+json",
        &[
            ("session_id", Is::Text, false),
            ("reason", Is::Text, false),
            ("issued_at", Is::Text, false),
        ],
    ),
    (
        "application/vnd.treeship.command.approval_decision.v1+json",
        &[
            ("approval_artifact_id", Is::Text, false),
            ("decision", Is::Decision, false),
            ("reason", Is::Text, true),
            ("decided_at", Is::Text, false),
        ],
    ),
    (
        "application/vnd.treeship.command.mandate_update.v1+json",
        &[
            ("ship_id", Is::Text, false),
            ("new_bounded_actions", Is::Texts, false),
            ("new_forbidden", Is::Texts, false),
            ("valid_until", Is::Text, true),
        ],
    ),
    (
        "application/vnd.treeship.command.budget_update.v1+json",
        &[
            ("ship_id", Is::Text, false),
            ("token_limit_delta", Is::Integer, false),
            ("valid_until", Is::Text, true),
        ],
    ),
    (
        "application/vnd.treeship.command.terminate_session.v1+json",
        &[
            ("session_id", Is::Text, false),
            ("reason", Is::Text, false),
            ("requested_at", Is::Text, false),
        ],
    ),
];

/// Whether a payload type is a command's (a known one or not).
pub fn is_command(payload_type: &str) -> bool {
    payload_type.starts_with(PREFIX)
}

/// Checks a command's payload as Treeship reads it; an unknown command
/// type is an error, as in Treeship.
pub(crate) fn check(payload_type: &str, payload: &[u8], ctx: &Context, r: &mut Report) {
    let rule = crate::rule::STATEMENT;
    let Some((_, members)) = COMMANDS.iter().find(|(t, _)| *t == payload_type) else {
        r.error(
            rule,
            "/payloadType",
            format!("{payload_type} is not a command Treeship knows"),
        );
        return;
    };
    let doc = match crate::json::parse(payload, &ctx.limits) {
        Ok(d) => d,
        Err(e) => {
            r.error(rule, "/payload", format!("the command is not JSON: {e}"));
            return;
        }
    };
    let root = doc.root();
    if !root.is_object() {
        r.error(rule, "/payload", "the command is not a JSON object");
        return;
    }
    for &(name, is, optional) in *members {
        let v = root.get(name).filter(|v| !(optional && v.is_null()));
        let Some(v) = v else {
            if !optional {
                r.error(
                    rule,
                    format!("/payload/{name}"),
                    format!("the command needs {name}"),
                );
            }
            continue;
        };
        let ok = match is {
            Is::Text => v.as_str().is_some(),
            Is::Texts => v
                .as_array()
                .is_some_and(|mut items| items.all(|i| i.as_str().is_some())),
            // As serde reads an i64: an integer literal, no fraction or
            // exponent, in range.
            Is::Integer => v.number_text().is_some_and(|t| t.parse::<i64>().is_ok()),
            Is::Decision => matches!(v.as_str(), Some("approve" | "reject")),
        };
        if !ok {
            let want = match is {
                Is::Text => "a string",
                Is::Texts => "an array of strings",
                Is::Integer => "a whole number (a signed 64-bit integer)",
                Is::Decision => "approve or reject",
            };
            r.error(
                rule,
                format!("/payload/{name}"),
                format!("the command's {name} must be {want}"),
            );
        }
    }
}
