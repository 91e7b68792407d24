//! A certificate held to its request, as Reason's `verify-authorization`
//! holds it: the request validated, the program rebuilt from it (the
//! policy plus the predicates, authority class and facts Reason binds the
//! mission and action with), the reasoning re-run, and every member of the
//! certificate compared with what the re-run gives (A5, A7, A8), its proofs
//! replayed (A9).
//!
//! [`verify`] gives every failure it finds, in Reason's order, so the first
//! is the one Reason would report; a certificate with none is one Reason
//! verifies, and [`Verification`] is what Reason prints for it.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

use super::engine::{self, Refused};
use super::model::{
    digest, Atom, AuthorizationStatus, Certificate, Fact, Issue, Predicate, Program, Reasoning,
    Request, ScalarType,
};
use super::replay::{self, Replay, RuleFailure};
use super::rule;

pub const VERIFICATION: &str = "zerker.reason.authorization-verification.v1";
const SYSTEM_AUTHORITY: &str = "system-bound";
const SYSTEM_FACT_PREFIX: &str = "zerker.action.binding.";
const AUTHORIZATION_PREDICATE: &str = "action_authorized";

/// The predicates only the request's bindings may state, with their arity.
const RESERVED: [(&str, usize); 9] = [
    (AUTHORIZATION_PREDICATE, 1),
    ("mission_active", 1),
    ("mission_action", 2),
    ("mission_principal", 2),
    ("mission_instruction", 2),
    ("mission_constraint", 3),
    ("action_tool", 2),
    ("action_argument", 3),
    ("action_effect", 4),
];

/// What Reason's `verify-authorization` prints for a certificate it
/// verifies (`zerker.reason.authorization-verification.v1`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verification {
    pub schema: &'static str,
    pub status: &'static str,
    pub authorization_status: AuthorizationStatus,
    pub request_digest: String,
    pub reasoning_result_digest: String,
}

/// What holding a certificate to its request found: failures under the
/// request (paths relative to it) and under the certificate, and, when
/// there are none, Reason's verification.
#[derive(Clone, Debug, Default)]
pub struct Authorization {
    pub request: Vec<RuleFailure>,
    pub certificate: Vec<RuleFailure>,
    pub verification: Option<Verification>,
}

impl Authorization {
    pub fn first(&self) -> Option<&RuleFailure> {
        self.request.first().or(self.certificate.first())
    }
}

fn failure(rule: &'static str, path: impl Into<String>, message: impl Into<String>) -> RuleFailure {
    RuleFailure {
        rule,
        path: path.into(),
        message: message.into(),
    }
}

// ---------------------------------------------------------------------------
// The request

fn query(action_id: &str) -> Atom {
    Atom {
        predicate: AUTHORIZATION_PREDICATE.into(),
        arguments: vec![Value::String(action_id.into())],
        negated: false,
    }
}

fn valid_digest(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Reason's checks on a request, in its order, then the rebuilt program's
/// validation: the rebuilt program, or every error.
pub fn validate_request(request: &Request) -> Result<Program, Vec<String>> {
    let mut errors = Vec::new();
    let required = |value: &str, path: &str, errors: &mut Vec<String>| {
        if value.trim().is_empty() {
            errors.push(format!("{path}: must not be empty"));
        }
    };
    if request.schema != super::REQUEST {
        errors.push(format!(
            "$.schema: expected {:?}, got {:?}",
            super::REQUEST,
            request.schema
        ));
    }
    let (mission, action, policy) = (&request.mission, &request.action, &request.policy);
    required(&mission.id, "$.mission.id", &mut errors);
    required(&mission.principal, "$.mission.principal", &mut errors);
    if !valid_digest(&mission.instruction_digest) {
        errors.push("$.mission.instruction_digest: expected sha256 followed by 64 lowercase hexadecimal characters".into());
    }
    required(&action.id, "$.action.id", &mut errors);
    required(&action.tool, "$.action.tool", &mut errors);
    for key in mission.constraints.keys() {
        required(key, "$.mission.constraints key", &mut errors);
    }
    for key in action.arguments.keys() {
        required(key, "$.action.arguments key", &mut errors);
    }
    for (i, effect) in action.effects.iter().enumerate() {
        required(
            &effect.kind,
            &format!("$.action.effects[{i}].kind"),
            &mut errors,
        );
        required(
            &effect.resource,
            &format!("$.action.effects[{i}].resource"),
            &mut errors,
        );
    }
    if policy.schema != engine::PROGRAM_V2 {
        errors.push(format!(
            "$.policy.schema: action authorization requires {:?}",
            engine::PROGRAM_V2
        ));
    }
    let authority = &policy.authority;
    if authority.classes.contains(SYSTEM_AUTHORITY) {
        errors.push(format!(
            "$.policy.authority.classes: {SYSTEM_AUTHORITY:?} is reserved for request bindings"
        ));
    }
    if authority.default_admit.contains(SYSTEM_AUTHORITY) {
        errors.push(format!(
            "$.policy.authority.default_admit: {SYSTEM_AUTHORITY:?} is reserved for request bindings"
        ));
    }
    for (predicate, admitted) in &authority.predicate_admit {
        if admitted.contains(SYSTEM_AUTHORITY) {
            errors.push(format!(
                "$.policy.authority.predicate_admit.{predicate}: {SYSTEM_AUTHORITY:?} is reserved for request bindings"
            ));
        }
    }
    for (predicate, _) in RESERVED {
        if policy.ontology.predicates.contains_key(predicate) {
            errors.push(format!(
                "$.policy.ontology.predicates.{predicate}: reserved for action authorization"
            ));
        }
        if authority.predicate_admit.contains_key(predicate) {
            errors.push(format!(
                "$.policy.authority.predicate_admit.{predicate}: reserved for action authorization"
            ));
        }
    }
    let reserved: BTreeSet<&str> = RESERVED.iter().map(|(p, _)| *p).collect();
    for (i, fact) in policy.facts.iter().enumerate() {
        if reserved.contains(fact.predicate.as_str()) {
            errors.push(format!(
                "$.policy.facts[{i}].predicate: {:?} is reserved for request bindings",
                fact.predicate
            ));
        }
        if fact.id.starts_with(SYSTEM_FACT_PREFIX) {
            errors.push(format!(
                "$.policy.facts[{i}].id: prefix {SYSTEM_FACT_PREFIX:?} is reserved"
            ));
        }
        if fact.authority == SYSTEM_AUTHORITY {
            errors.push(format!(
                "$.policy.facts[{i}].authority: {SYSTEM_AUTHORITY:?} is reserved"
            ));
        }
    }
    for (i, r) in policy.rules.iter().enumerate() {
        let head = r.then.predicate.as_str();
        if reserved.contains(head) && head != AUTHORIZATION_PREDICATE {
            errors.push(format!(
                "$.policy.rules[{i}].then.predicate: {head:?} can only be supplied by request bindings"
            ));
        }
    }
    if policy.query != query(&action.id) {
        errors.push(format!(
            "$.policy.query: expected action_authorized({:?})",
            action.id
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let program = rebuild(request);
    match engine::validate(&program) {
        Ok(()) => Ok(program),
        Err(Refused::Invalid(errors)) => Err(errors),
        Err(other) => Err(vec![other.to_string()]),
    }
}

/// A binding's value as the string an atom carries: strings as they are,
/// everything else tagged with its type.
fn bound_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => format!("number:{n}"),
        Value::Bool(b) => format!("boolean:{b}"),
        Value::Null => "null:".into(),
        Value::Array(_) | Value::Object(_) => {
            format!("json:{}", serde_json::to_string(value).unwrap_or_default())
        }
    }
}

/// The hex digest of a `(key, value)` binding, naming its fact.
fn binding_id(key: &str, value: &Value) -> String {
    let full = digest(&(key, value));
    full.trim_start_matches("sha256:").to_owned()
}

/// The program Reason reasons over: the policy, the reserved predicates
/// (all strings) admitted only from `system-bound`, the authorization
/// query, and one `system-bound` fact per binding of the mission and the
/// action, after the policy's own facts.
pub fn rebuild(request: &Request) -> Program {
    let mut program = request.policy.clone();
    program.authority.classes.insert(SYSTEM_AUTHORITY.into());
    for (name, arity) in RESERVED {
        program.ontology.predicates.insert(
            name.into(),
            Predicate {
                arguments: vec![ScalarType::String; arity],
            },
        );
        program
            .authority
            .predicate_admit
            .insert(name.into(), BTreeSet::from([SYSTEM_AUTHORITY.to_owned()]));
    }
    let (mission, action) = (&request.mission, &request.action);
    program.query = query(&action.id);
    // One `system-bound` fact per binding, named after its predicate
    // (`mission_active` is `zerker.action.binding.mission.active`), with a
    // qualifier where a predicate binds several.
    let fact = |predicate: &str,
                qualifier: Option<String>,
                arguments: &[&str],
                at: &str,
                until: Option<&String>| {
        let name = predicate.replace('_', ".");
        Fact {
            id: match qualifier {
                Some(q) => format!("{SYSTEM_FACT_PREFIX}{name}.{q}"),
                None => format!("{SYSTEM_FACT_PREFIX}{name}"),
            },
            predicate: predicate.into(),
            arguments: arguments
                .iter()
                .map(|s| Value::String((*s).into()))
                .collect(),
            negated: false,
            authority: SYSTEM_AUTHORITY.into(),
            observed_at: Some(at.into()),
            valid_from: None,
            valid_until: until.cloned(),
            supersedes: Vec::new(),
        }
    };
    let (m, a) = (&mission.id, &action.id);
    let until = mission.valid_until.as_ref();
    let issued = &mission.issued_at;
    let facts = &mut program.facts;
    facts.push(fact("mission_active", None, &[m], issued, until));
    facts.push(fact(
        "mission_action",
        None,
        &[m, a],
        &action.proposed_at,
        until,
    ));
    facts.push(fact(
        "mission_principal",
        None,
        &[m, &mission.principal],
        issued,
        until,
    ));
    facts.push(fact(
        "mission_instruction",
        None,
        &[m, &mission.instruction_digest],
        issued,
        until,
    ));
    for (key, value) in &mission.constraints {
        let id = Some(binding_id(key, value));
        facts.push(fact(
            "mission_constraint",
            id,
            &[m, key, &bound_value(value)],
            issued,
            until,
        ));
    }
    let at = &action.proposed_at;
    facts.push(fact("action_tool", None, &[a, &action.tool], at, None));
    for (key, value) in &action.arguments {
        let id = Some(binding_id(key, value));
        facts.push(fact(
            "action_argument",
            id,
            &[a, key, &bound_value(value)],
            at,
            None,
        ));
    }
    for (i, effect) in action.effects.iter().enumerate() {
        let value = effect
            .value
            .as_ref()
            .map_or_else(|| "none:".to_owned(), bound_value);
        let parts = [a.as_str(), &effect.kind, &effect.resource, &value];
        facts.push(fact(
            "action_effect",
            Some(format!("{i:04}")),
            &parts,
            at,
            None,
        ));
    }
    program
}

/// The issues a certificate lists for a reasoning result.
pub fn issues(reasoning: &Reasoning) -> Vec<Issue> {
    let issue = |code: &str, message: &str, atom: &Atom, fact_ids: Vec<String>| Issue {
        code: code.into(),
        message: message.into(),
        atom: Some(atom.clone()),
        fact_ids,
    };
    let mut out = Vec::new();
    match AuthorizationStatus::of(reasoning.status) {
        AuthorizationStatus::Authorized => {}
        AuthorizationStatus::Denied => out.push(issue(
            "explicit_denial",
            "The policy derives explicit denial for this exact action.",
            &reasoning.query.complement(),
            Vec::new(),
        )),
        AuthorizationStatus::Conflicted => out.push(issue(
            "conflicting_authorization",
            "The policy derives both authorization and explicit denial; action must fail closed.",
            &reasoning.query,
            reasoning
                .conflict
                .as_ref()
                .map(|c| c.fact_ids.clone())
                .unwrap_or_default(),
        )),
        AuthorizationStatus::InsufficientEvidence => {
            for atom in &reasoning.missing {
                out.push(issue(
                    "missing_requirement",
                    "A required premise is not currently derivable.",
                    atom,
                    Vec::new(),
                ));
            }
            if reasoning.missing.is_empty() {
                out.push(issue(
                    "no_authorization_derivation",
                    "No authorization or explicit denial derivation was found.",
                    &reasoning.query,
                    Vec::new(),
                ));
            }
        }
    }
    for w in &reasoning.authority.withheld {
        out.push(issue(
            "authority_withheld",
            &w.reason,
            &w.atom,
            vec![w.fact_id.clone()],
        ));
    }
    if let Some(t) = &reasoning.temporal {
        for w in &t.withheld {
            let code = if w.superseded_by.is_empty() {
                "temporally_ineligible"
            } else {
                "superseded"
            };
            let ids = std::iter::once(w.fact_id.clone())
                .chain(w.superseded_by.iter().cloned())
                .collect();
            out.push(issue(code, &w.reason, &w.atom, ids));
        }
    }
    out
}

/// The certificate Reason's `authorize` gives for a request (chit uses it
/// to build test vectors; verification never trusts it over the re-run).
pub fn authorize(request: &Request) -> Result<Certificate, String> {
    let program = validate_request(request).map_err(|e| e.join("; "))?;
    let reasoning = engine::check_valid(&program).map_err(|e| e.to_string())?;
    Ok(Certificate {
        schema: super::KIND.into(),
        status: AuthorizationStatus::of(reasoning.status),
        request_digest: digest(request),
        mission: super::model::BoundMission {
            id: request.mission.id.clone(),
            digest: digest(&request.mission),
        },
        action: super::model::BoundAction {
            id: request.action.id.clone(),
            digest: digest(&request.action),
            tool: request.action.tool.clone(),
            arguments: request.action.arguments.clone(),
            effects: request.action.effects.clone(),
        },
        issues: issues(&reasoning),
        reasoning,
    })
}

// ---------------------------------------------------------------------------
// Verification

/// Holds `cert` to `request`: every failure, Reason's first first.
pub fn verify(request: &Request, cert: &Certificate) -> Authorization {
    let mut out = Authorization::default();
    let program = match validate_request(request) {
        Ok(p) => p,
        Err(errors) => {
            out.request.push(failure(
                rule::A8,
                "",
                format!(
                    "the request is not one Reason reasons over, so the certificate cannot be recomputed: {}",
                    errors.join("; ")
                ),
            ));
            return out;
        }
    };
    let c = &mut out.certificate;
    if cert.schema != super::KIND {
        c.push(failure(
            rule::SCHEMA,
            "/schema",
            format!(
                "a certificate's schema is {}, not {:?}",
                super::KIND,
                cert.schema
            ),
        ));
    }
    let request_digest = digest(request);
    if cert.request_digest != request_digest {
        c.push(failure(
            rule::A7,
            "/request_digest",
            format!(
                "the request digests to {request_digest}, not {}: the request was changed after certification, or the digest forged",
                cert.request_digest
            ),
        ));
    }
    bound(request, cert, c);
    let expected = match engine::check_valid(&program) {
        Ok(r) => r,
        Err(e) => {
            c.push(failure(
                rule::A8,
                "/reasoning",
                format!("the reasoning cannot be re-run: {e}"),
            ));
            return out;
        }
    };
    reasoning(&program, &cert.reasoning, &expected, c);
    let status = AuthorizationStatus::of(expected.status);
    if cert.status != status {
        c.push(failure(
            rule::A8,
            "/status",
            format!(
                "the re-run reasoning is {}, so the status is {}, not {}",
                expected.status.as_str(),
                status.as_str(),
                cert.status.as_str()
            ),
        ));
    }
    let want = issues(&expected);
    if cert.issues != want {
        let at = cert
            .issues
            .iter()
            .zip(&want)
            .position(|(a, b)| a != b)
            .unwrap_or(cert.issues.len().min(want.len()));
        c.push(failure(
            rule::A8,
            format!("/issues/{at}"),
            format!(
                "the issues are not the re-run's: it lists {} ({}), the certificate {}",
                want.len(),
                want.iter()
                    .map(|i| i.code.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                cert.issues.len()
            ),
        ));
    }
    if out.certificate.is_empty() {
        out.verification = Some(Verification {
            schema: VERIFICATION,
            status: "verified",
            authorization_status: cert.status,
            request_digest,
            reasoning_result_digest: digest(&expected),
        });
    }
    out
}

/// A5 and A7 on the bound mission and action.
fn bound(request: &Request, cert: &Certificate, c: &mut Vec<RuleFailure>) {
    let (mission, action) = (&request.mission, &request.action);
    let same_id = |c: &mut Vec<RuleFailure>, path: &str, what: &str, got: &str, want: &str| {
        if got != want {
            let message = format!("{what} id is {got:?}, but the request's is {want:?}");
            c.push(failure(rule::A5, path, message));
        }
    };
    let same_digest =
        |c: &mut Vec<RuleFailure>, path: &str, what: &str, got: &str, want: String| {
            if got != want {
                let message = format!("the request's {what} digests to {want}, not {got}");
                c.push(failure(rule::A7, path, message));
            }
        };
    // Reason's order: the mission, then the action.
    same_id(c, "/mission/id", "mission", &cert.mission.id, &mission.id);
    same_digest(
        c,
        "/mission/digest",
        "mission",
        &cert.mission.digest,
        digest(mission),
    );
    same_id(c, "/action/id", "action", &cert.action.id, &action.id);
    same_digest(
        c,
        "/action/digest",
        "action",
        &cert.action.digest,
        digest(action),
    );
    if cert.action.tool != action.tool {
        c.push(failure(
            rule::A5,
            "/action/tool",
            format!(
                "tool is {:?}, but the request's is {:?}",
                cert.action.tool, action.tool
            ),
        ));
    }
    if cert.action.arguments != action.arguments {
        let keys: BTreeSet<&String> = cert
            .action
            .arguments
            .keys()
            .chain(action.arguments.keys())
            .collect();
        let key = keys
            .into_iter()
            .find(|k| cert.action.arguments.get(*k) != action.arguments.get(*k))
            .map(|k| crate::report::pointer_token(k))
            .unwrap_or_default();
        let show = |v: Option<&Value>| v.map_or("nothing".to_owned(), short);
        c.push(failure(
            rule::A5,
            format!("/action/arguments/{key}"),
            format!(
                "arguments differ from the request's at /{key}: {} here, {} in the request",
                show(cert.action.arguments.get(&unescape(&key))),
                show(action.arguments.get(&unescape(&key)))
            ),
        ));
    }
    if cert.action.effects != action.effects {
        let at = cert
            .action
            .effects
            .iter()
            .zip(&action.effects)
            .position(|(a, b)| a != b)
            .unwrap_or(cert.action.effects.len().min(action.effects.len()));
        c.push(failure(
            rule::A5,
            format!("/action/effects/{at}"),
            format!(
                "effects differ from the request's at /{at} ({} here, {} in the request)",
                cert.action.effects.len(),
                action.effects.len()
            ),
        ));
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// A value for a one-line message: its compact JSON, cut short.
fn short(v: &Value) -> String {
    const MAX: usize = 60;
    let s = serde_json::to_string(v).unwrap_or_default();
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s,
    }
}

/// A7, A8 and A9 on the reasoning: its digests, the re-run's members, the
/// proofs replayed; then, if nothing more precise was found, the whole
/// result against the re-run's.
fn reasoning(program: &Program, got: &Reasoning, want: &Reasoning, c: &mut Vec<RuleFailure>) {
    let before = c.len();
    let at = |field: &str| format!("/reasoning/{field}");
    let mut a7 = |field: &str, what: &str, g: &str, w: &str| {
        if g != w {
            c.push(failure(
                rule::A7,
                at(field),
                format!("the {what} digests to {w}, not {g}"),
            ));
        }
    };
    a7(
        "program_digest",
        "rebuilt program",
        &got.program_digest,
        &want.program_digest,
    );
    a7(
        "ontology/digest",
        "policy's ontology",
        &got.ontology.digest,
        &want.ontology.digest,
    );
    a7(
        "authority/policy_digest",
        "authority policy",
        &got.authority.policy_digest,
        &want.authority.policy_digest,
    );
    let mut a8 = |field: &str, differs: bool, what: String| {
        if differs {
            c.push(failure(rule::A8, at(field), what));
        }
    };
    a8(
        "schema",
        got.schema != want.schema,
        format!(
            "the re-run's result schema is {}, not {}",
            want.schema, got.schema
        ),
    );
    a8(
        "status",
        got.status != want.status,
        format!(
            "the reasoning re-run from the request is {}, not {}",
            want.status.as_str(),
            got.status.as_str()
        ),
    );
    a8(
        "query",
        got.query != want.query,
        format!("the query is {}", want.query.key()),
    );
    a8(
        "ontology",
        got.ontology.id != want.ontology.id || got.ontology.version != want.ontology.version,
        format!(
            "the policy's ontology is {}@{}, not {}@{}",
            want.ontology.id, want.ontology.version, got.ontology.id, got.ontology.version
        ),
    );
    a8(
        "authority",
        got.authority.admitted_fact_ids != want.authority.admitted_fact_ids
            || got.authority.withheld != want.authority.withheld,
        format!(
            "the authority policy admits {} facts and withholds {} ({}), not what the certificate says",
            want.authority.admitted_fact_ids.len(),
            want.authority.withheld.len(),
            want.authority
                .withheld
                .iter()
                .map(|w| w.fact_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    a8(
        "temporal",
        got.temporal != want.temporal,
        "the time window at the evaluation time is not the certificate's (eligible facts or withheld ones differ)".into(),
    );
    a8(
        "missing",
        got.missing != want.missing,
        format!(
            "the missing premises are [{}]",
            want.missing
                .iter()
                .map(Atom::key)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    a8(
        "assumptions",
        got.assumptions != want.assumptions,
        "the assumptions are not Reason's".into(),
    );
    a8(
        "metrics",
        got.metrics != want.metrics,
        format!(
            "the re-run's metrics are {} supplied, {} admitted, {} withheld, {} derived, {} rules evaluated, {} rounds",
            want.metrics.facts_supplied,
            want.metrics.facts_admitted,
            want.metrics.facts_withheld,
            want.metrics.facts_derived,
            want.metrics.rules_evaluated,
            want.metrics.rounds
        ),
    );
    // A9: each proof the certificate carries, replayed on its own.
    let replay = Replay::with_window(program, want.temporal.as_ref());
    let sides = [
        ("proof", &got.proof, &want.proof, got.query.clone()),
        (
            "disproof",
            &got.disproof,
            &want.disproof,
            got.query.complement(),
        ),
    ];
    for (field, g, w, concludes) in sides {
        match (g, w) {
            (Some(g), _) => {
                if let Err(f) = replay::replay(g, &concludes, &at(field), &replay, w.as_ref()) {
                    c.push(f);
                } else if w.as_ref() != Some(g) {
                    c.push(failure(
                        rule::A8,
                        at(field),
                        match w {
                            Some(w) => format!(
                                "the {field} replays, but it is not the one the re-run derives ({})",
                                w.digest
                            ),
                            None => format!("the re-run derives no {field}"),
                        },
                    ));
                }
            }
            (None, Some(w)) => c.push(failure(
                rule::A8,
                at(field),
                format!(
                    "the re-run derives a {field} ({}), but the certificate has none",
                    w.digest
                ),
            )),
            (None, None) => {}
        }
    }
    if got.conflict != want.conflict {
        c.push(failure(
            rule::A8,
            at("conflict"),
            "the conflict witness is not the two proofs' (facts and digests)".to_owned(),
        ));
    }
    // Equal members serialize to equal bytes (a re-run's atoms hold no
    // doubles, the one place equality and bytes could part), so this is
    // Reason's comparison of the two results' digests.
    if c.len() == before && got != want {
        c.push(failure(
            rule::A8,
            "/reasoning",
            format!(
                "the reasoning does not recompute from the request (the re-run digests to {})",
                digest(want)
            ),
        ));
    }
}
