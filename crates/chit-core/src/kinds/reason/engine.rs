//! Reason's reasoning, re-run: a program's validation, its authority and
//! time window, forward chaining to a fixpoint, the missing premises and
//! the proofs, giving the result Reason's `check` gives, member for member
//! (its digest is the certificate's `reasoning_result_digest`).
//!
//! The order of everything observable is Reason's: facts by id, rules by
//! id, known atoms by their compact JSON ([`Atom::key`]); a derived atom
//! keeps the first derivation found, rule by rule, binding by binding.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::model::{
    digest, Atom, AuthorityPolicy, AuthorityReport, Conflict, Fact, FactTemporal, Metrics,
    NodeKind, OntologyRef, Program, Proof, ProofNode, ProofStatus, Reasoning, Rule, ScalarType,
    TemporalReport, TemporallyWithheld, WithheldFact,
};

pub const PROGRAM_V1: &str = "zerker.reason.program.v1";
pub const PROGRAM_V2: &str = "zerker.reason.program.v2";
const RESULT_V1: &str = "zerker.reason.result.v1";
const RESULT_V2: &str = "zerker.reason.result.v2";

/// Reason stops chaining after this many rounds.
pub const MAX_ROUNDS: usize = 1_024;

/// chit's own bound on the work one re-run may do (candidate matches
/// tried), so that a hostile program cannot hold a verifier for minutes.
/// A program past it is refused, never passed.
pub const MAX_MATCHES: usize = 20_000_000;

/// chit's bound on the partial matches one rule may hold at once, so that
/// a rule joining large relations cannot exhaust memory.
pub const MAX_PARTIAL: usize = 1_000_000;

/// The assumptions every result states.
const ASSUMPTIONS: [&str; 3] = [
    "Only facts admitted by the explicit authority policy participate in inference.",
    "Explicit negation does not use absence as evidence of falsity.",
    "Contradictory support is preserved as inconsistent instead of resolved silently.",
];

/// Why a program could not be reasoned over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The program breaks Reason's validation: each line one error, as
    /// Reason words them (`$.facts[2].authority: …`).
    Invalid(Vec<String>),
    /// Chaining did not reach a fixpoint within [`MAX_ROUNDS`].
    NoFixpoint,
    /// The re-run would pass [`MAX_MATCHES`].
    TooMuchWork,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Invalid(errors) => write!(f, "invalid program: {}", errors.join("; ")),
            Refused::NoFixpoint => write!(
                f,
                "reasoning did not converge after {MAX_ROUNDS} rounds (Reason refuses such a program too)"
            ),
            Refused::TooMuchWork => write!(
                f,
                "re-running the program needs more than {MAX_MATCHES} candidate matches or {MAX_PARTIAL} partial matches of one rule; chit refuses to spend that on one certificate"
            ),
        }
    }
}

pub fn is_v2(program: &Program) -> bool {
    program.schema == PROGRAM_V2
}

/// A variable is a string `$name` with a non-empty name.
pub fn variable(value: &Value) -> Option<&str> {
    value
        .as_str()?
        .strip_prefix('$')
        .filter(|name| !name.is_empty())
}

/// A timestamp Reason accepts: UTC RFC 3339 to the second, written the one
/// way it formats it (`2026-08-14T12:00:00Z`), a real date, and (as its
/// date library reads them) a leap second `:60` at the end of any minute.
pub fn canonical_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 20 {
        return false;
    }
    if b.get(17..19) == Some(b"60".as_slice()) {
        // Bytes 17 and 18 are ASCII, so 17 is a character boundary.
        return crate::time::is_real_utc_timestamp(&format!("{}59Z", &s[..17]));
    }
    crate::time::is_real_utc_timestamp(s)
}

fn admitted<'p>(policy: &'p AuthorityPolicy, predicate: &str) -> &'p BTreeSet<String> {
    policy
        .predicate_admit
        .get(predicate)
        .unwrap_or(&policy.default_admit)
}

pub fn admits(policy: &AuthorityPolicy, fact: &Fact) -> bool {
    admitted(policy, &fact.predicate).contains(&fact.authority)
}

/// A fact's time evidence as a proof node carries it (program.v2 only).
pub fn fact_temporal(program: &Program, fact: &Fact) -> Option<FactTemporal> {
    is_v2(program).then(|| FactTemporal {
        observed_at: fact.observed_at.clone().unwrap_or_default(),
        valid_from: fact.valid_from.clone(),
        valid_until: fact.valid_until.clone(),
        supersedes: fact.supersedes.clone(),
    })
}

// ---------------------------------------------------------------------------
// Validation

/// Reason's validation of a program: every error, in Reason's order.
pub fn validate(program: &Program) -> Result<(), Refused> {
    let mut errors = Vec::new();
    let v2 = is_v2(program);
    if program.schema != PROGRAM_V1 && !v2 {
        errors.push(format!(
            "$.schema: expected {PROGRAM_V1:?} or {PROGRAM_V2:?}, got {:?}",
            program.schema
        ));
    }
    match (&program.evaluation_time, v2) {
        (Some(t), true) => timestamp(t, "$.evaluation_time", &mut errors),
        (None, true) => errors.push("$.evaluation_time: required by program.v2".into()),
        (Some(_), false) => errors.push(
            "$.evaluation_time: temporal fields require schema zerker.reason.program.v2".into(),
        ),
        (None, false) => {}
    }
    authority_and_ontology(program, &mut errors);
    let mut ids = BTreeSet::new();
    facts(program, v2, &mut ids, &mut errors);
    if v2 {
        supersession(program, &mut errors);
    }
    rules(program, &mut ids, &mut errors);
    let q = &program.query;
    atom(
        (&q.predicate, &q.arguments),
        program,
        false,
        &|| "$.query".into(),
        &mut errors,
    );
    if errors.is_empty() && v2 {
        let eligible: BTreeSet<String> = temporal_report(program)
            .map(|t| t.eligible_fact_ids.into_iter().collect())
            .unwrap_or_default();
        let mut atoms = BTreeMap::<String, &str>::new();
        for fact in &program.facts {
            if !eligible.contains(&fact.id) {
                continue;
            }
            if let Some(existing) = atoms.insert(fact.key(), &fact.id) {
                errors.push(format!(
                    "$.facts: active facts {existing:?} and {:?} duplicate the same atom; supersede one explicitly",
                    fact.id
                ));
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Refused::Invalid(errors))
    }
}

fn timestamp(value: &str, path: &str, errors: &mut Vec<String>) {
    if !canonical_timestamp(value) {
        errors.push(format!(
            "{path}: expected canonical UTC RFC 3339 seconds, for example 2026-08-14T12:00:00Z"
        ));
    }
}

fn authority_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && !s.ends_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn authority_and_ontology(program: &Program, errors: &mut Vec<String>) {
    let (ontology, authority) = (&program.ontology, &program.authority);
    if ontology.id.trim().is_empty() {
        errors.push("$.ontology.id: must not be empty".into());
    }
    if ontology.version.trim().is_empty() {
        errors.push("$.ontology.version: must not be empty".into());
    }
    if authority.classes.is_empty() {
        errors.push("$.authority.classes: declare at least one authority class".into());
    }
    for class in &authority.classes {
        if !authority_name(class) {
            errors.push(format!(
                "$.authority.classes: invalid authority class {class:?}; use lowercase letters, digits, and internal hyphens"
            ));
        }
    }
    let declared = |set: &BTreeSet<String>, path: &str, errors: &mut Vec<String>| {
        for a in set {
            if !authority.classes.contains(a) {
                errors.push(format!(
                    "{path}: undeclared authority {a:?}; add it to $.authority.classes"
                ));
            }
        }
    };
    declared(
        &authority.default_admit,
        "$.authority.default_admit",
        errors,
    );
    for (predicate, set) in &authority.predicate_admit {
        if !ontology.predicates.contains_key(predicate) {
            errors.push(format!(
                "$.authority.predicate_admit.{predicate}: predicate is not declared in the ontology"
            ));
        }
        declared(
            set,
            &format!("$.authority.predicate_admit.{predicate}"),
            errors,
        );
    }
}

fn facts<'p>(
    program: &'p Program,
    v2: bool,
    ids: &mut BTreeSet<&'p str>,
    errors: &mut Vec<String>,
) {
    let mut atoms = BTreeMap::<String, &str>::new();
    for (i, fact) in program.facts.iter().enumerate() {
        if fact.id.trim().is_empty() {
            errors.push(format!("$.facts[{i}].id: must not be empty"));
        } else if !ids.insert(&fact.id) {
            errors.push(format!("$.facts[{i}].id: duplicate id {:?}", fact.id));
        }
        if !program.authority.classes.contains(&fact.authority) {
            errors.push(format!(
                "$.facts[{i}].authority: undeclared authority {:?}; add it to $.authority.classes",
                fact.authority
            ));
        }
        if let Some(existing) = atoms.insert(fact.key(), &fact.id) {
            if !v2 {
                errors.push(format!(
                    "$.facts[{i}]: duplicates the atom from fact {existing:?}; combine provenance before reasoning"
                ));
            }
        }
        atom(
            (&fact.predicate, &fact.arguments),
            program,
            false,
            &|| format!("$.facts[{i}]"),
            errors,
        );
        if v2 {
            match &fact.observed_at {
                Some(t) => timestamp(t, &format!("$.facts[{i}].observed_at"), errors),
                None => errors.push(format!("$.facts[{i}].observed_at: required by program.v2")),
            }
            if let Some(t) = &fact.valid_from {
                timestamp(t, &format!("$.facts[{i}].valid_from"), errors);
            }
            if let Some(t) = &fact.valid_until {
                timestamp(t, &format!("$.facts[{i}].valid_until"), errors);
            }
            if let (Some(from), Some(until)) = (&fact.valid_from, &fact.valid_until) {
                if canonical_timestamp(from) && canonical_timestamp(until) && from >= until {
                    errors.push(format!(
                        "$.facts[{i}]: valid_from must be earlier than valid_until"
                    ));
                }
            }
            let mut targets = BTreeSet::new();
            for target in &fact.supersedes {
                if !targets.insert(target) {
                    errors.push(format!(
                        "$.facts[{i}].supersedes: duplicate fact id {target:?}"
                    ));
                }
                if target == &fact.id {
                    errors.push(format!(
                        "$.facts[{i}].supersedes: a fact cannot supersede itself"
                    ));
                }
            }
        } else if fact.observed_at.is_some()
            || fact.valid_from.is_some()
            || fact.valid_until.is_some()
            || !fact.supersedes.is_empty()
        {
            errors.push(format!(
                "$.facts[{i}]: temporal fields require schema zerker.reason.program.v2"
            ));
        }
    }
}

fn supersession(program: &Program, errors: &mut Vec<String>) {
    let by_id: BTreeMap<&str, &Fact> = program.facts.iter().map(|f| (f.id.as_str(), f)).collect();
    for (i, fact) in program.facts.iter().enumerate() {
        for target_id in &fact.supersedes {
            let Some(target) = by_id.get(target_id.as_str()) else {
                errors.push(format!(
                    "$.facts[{i}].supersedes: fact {target_id:?} does not exist"
                ));
                continue;
            };
            if fact.predicate != target.predicate || fact.arguments != target.arguments {
                errors.push(format!(
                    "$.facts[{i}].supersedes: fact {target_id:?} is about a different predicate or arguments"
                ));
            }
            if let (Some(seen), Some(target_seen)) = (&fact.observed_at, &target.observed_at) {
                if canonical_timestamp(seen)
                    && canonical_timestamp(target_seen)
                    && seen <= target_seen
                {
                    errors.push(format!(
                        "$.facts[{i}].supersedes: observed_at must be later than fact {target_id:?}"
                    ));
                }
            }
        }
    }
}

fn rules<'p>(program: &'p Program, ids: &mut BTreeSet<&'p str>, errors: &mut Vec<String>) {
    for (i, rule) in program.rules.iter().enumerate() {
        if rule.id.trim().is_empty() {
            errors.push(format!("$.rules[{i}].id: must not be empty"));
        } else if !ids.insert(&rule.id) {
            errors.push(format!("$.rules[{i}].id: duplicate id {:?}", rule.id));
        }
        let mut body = BTreeSet::new();
        for (j, a) in rule.when.iter().enumerate() {
            let path = || format!("$.rules[{i}].when[{j}]");
            atom((&a.predicate, &a.arguments), program, true, &path, errors);
            body.extend(a.arguments.iter().filter_map(variable));
        }
        let then = &rule.then;
        let path = || format!("$.rules[{i}].then");
        atom(
            (&then.predicate, &then.arguments),
            program,
            true,
            &path,
            errors,
        );
        let head: BTreeSet<&str> = rule.then.arguments.iter().filter_map(variable).collect();
        for v in head.difference(&body) {
            errors.push(format!(
                "$.rules[{i}].then: variable {v:?} is not bound in the rule body"
            ));
        }
    }
}

/// An atom against the ontology: its predicate declared, its arity, each
/// argument's type (variables only where `variables`). `path` names it in
/// an error (made only when there is one).
fn atom(
    (name, arguments): (&str, &[Value]),
    program: &Program,
    variables: bool,
    path: &dyn Fn() -> String,
    errors: &mut Vec<String>,
) {
    let Some(predicate) = program.ontology.predicates.get(name) else {
        errors.push(format!(
            "{}.predicate: unknown predicate {name:?}; declare it in $.ontology.predicates",
            path()
        ));
        return;
    };
    if predicate.arguments.len() != arguments.len() {
        errors.push(format!(
            "{}.arguments: predicate {name:?} expects {} arguments, got {}",
            path(),
            predicate.arguments.len(),
            arguments.len()
        ));
        return;
    }
    for (i, (value, expected)) in arguments.iter().zip(&predicate.arguments).enumerate() {
        if variable(value).is_some() {
            if !variables {
                errors.push(format!(
                    "{}.arguments[{i}]: variables are not allowed here",
                    path()
                ));
            }
            continue;
        }
        let (ok, want) = match expected {
            ScalarType::String => (value.is_string(), "string"),
            ScalarType::Integer => (value.as_i64().is_some(), "integer"),
            ScalarType::Boolean => (value.is_boolean(), "boolean"),
        };
        if !ok {
            let got = match value {
                Value::Null => "null",
                Value::Bool(_) => "boolean",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            };
            errors.push(format!(
                "{}.arguments[{i}]: expected {want}, got {got}",
                path()
            ));
        }
    }
}

// ---------------------------------------------------------------------------
// Authority and time

pub fn authority_report(program: &Program) -> AuthorityReport {
    let mut facts: Vec<&Fact> = program.facts.iter().collect();
    facts.sort_by(|a, b| a.id.cmp(&b.id));
    let mut admitted_fact_ids = Vec::new();
    let mut withheld = Vec::new();
    for fact in facts {
        let set = admitted(&program.authority, &fact.predicate);
        if set.contains(&fact.authority) {
            admitted_fact_ids.push(fact.id.clone());
        } else {
            withheld.push(WithheldFact {
                fact_id: fact.id.clone(),
                atom: fact.atom(),
                authority: fact.authority.clone(),
                admitted_authorities: set.iter().cloned().collect(),
                reason: format!(
                    "authority {:?} is not admitted for predicate {:?}",
                    fact.authority, fact.predicate
                ),
            });
        }
    }
    AuthorityReport {
        policy_digest: digest(&program.authority),
        admitted_fact_ids,
        withheld,
    }
}

/// The time window and supersession (program.v2 only): which admitted
/// facts hold at the evaluation time, and why the others do not.
pub fn temporal_report(program: &Program) -> Option<TemporalReport> {
    if !is_v2(program) {
        return None;
    }
    let now = program.evaluation_time.clone().unwrap_or_default();
    let mut facts: Vec<&Fact> = program.facts.iter().collect();
    facts.sort_by(|a, b| a.id.cmp(&b.id));
    let mut in_window = BTreeSet::new();
    let mut why = BTreeMap::<&str, String>::new();
    for fact in &facts {
        if !admits(&program.authority, fact) {
            continue;
        }
        let seen = fact.observed_at.as_deref().unwrap_or_default();
        let from = fact.valid_from.as_deref().filter(|f| *f > now.as_str());
        let until = fact.valid_until.as_deref().filter(|u| *u <= now.as_str());
        let reason = if seen > now.as_str() {
            Some(format!("observed_at {seen} is after evaluation_time {now}"))
        } else if let Some(from) = from {
            Some(format!("valid_from {from} is after evaluation_time {now}"))
        } else {
            until.map(|until| format!("valid_until {until} is at or before evaluation_time {now}"))
        };
        match reason {
            Some(reason) => {
                why.insert(&fact.id, reason);
            }
            None => {
                in_window.insert(fact.id.as_str());
            }
        }
    }
    let mut superseded_by = BTreeMap::<&str, BTreeSet<&str>>::new();
    for fact in &facts {
        if !in_window.contains(fact.id.as_str()) {
            continue;
        }
        for target in &fact.supersedes {
            if in_window.contains(target.as_str()) {
                superseded_by
                    .entry(target.as_str())
                    .or_default()
                    .insert(&fact.id);
            }
        }
    }
    let eligible_fact_ids: Vec<String> = in_window
        .iter()
        .filter(|id| !superseded_by.contains_key(*id))
        .map(|id| id.to_string())
        .collect();
    let mut withheld = Vec::new();
    for fact in facts {
        if !admits(&program.authority, fact) || eligible_fact_ids.binary_search(&fact.id).is_ok() {
            continue;
        }
        let by: Vec<String> = superseded_by
            .get(fact.id.as_str())
            .map(|s| s.iter().map(|x| x.to_string()).collect())
            .unwrap_or_default();
        let reason = why
            .get(fact.id.as_str())
            .cloned()
            .unwrap_or_else(|| format!("superseded by {}", by.join(", ")));
        withheld.push(TemporallyWithheld {
            fact_id: fact.id.clone(),
            atom: fact.atom(),
            reason,
            superseded_by: by,
        });
    }
    Some(TemporalReport {
        evaluation_time: now,
        eligible_fact_ids,
        withheld,
    })
}

// ---------------------------------------------------------------------------
// Chaining

/// How a known atom came to be known.
#[derive(Clone, Debug)]
enum Source {
    Fact {
        id: String,
        authority: String,
        temporal: Option<FactTemporal>,
    },
    Rule {
        id: String,
        premises: Vec<String>,
    },
}

#[derive(Clone, Debug)]
struct Known {
    atom: Atom,
    source: Source,
}

pub type Bindings = BTreeMap<String, Value>;

/// `fact` as an instance of `pattern` under `bindings` extended: the
/// bindings that make it so, if any.
pub fn unify(pattern: &Atom, fact: &Atom, bindings: &Bindings) -> Option<Bindings> {
    if pattern.predicate != fact.predicate
        || pattern.negated != fact.negated
        || pattern.arguments.len() != fact.arguments.len()
    {
        return None;
    }
    let mut out = bindings.clone();
    for (p, f) in pattern.arguments.iter().zip(&fact.arguments) {
        match variable(p) {
            Some(name) => match out.get(name) {
                Some(bound) if bound != f => return None,
                Some(_) => {}
                None => {
                    out.insert(name.to_owned(), f.clone());
                }
            },
            None if p != f => return None,
            None => {}
        }
    }
    Some(out)
}

/// `pattern` with its bound variables replaced.
pub fn instantiate(pattern: &Atom, bindings: &Bindings) -> Atom {
    Atom {
        predicate: pattern.predicate.clone(),
        arguments: pattern
            .arguments
            .iter()
            .map(|v| {
                variable(v)
                    .and_then(|name| bindings.get(name))
                    .unwrap_or(v)
                    .clone()
            })
            .collect(),
        negated: pattern.negated,
    }
}

/// Every way the patterns hold together over `known` (in its order): the
/// bindings and the keys of the atoms used, pattern by pattern.
/// (Premises are positions in `known`.)
fn satisfy(
    patterns: &[Atom],
    known: &[(&String, &Atom)],
    budget: &mut usize,
) -> Result<Vec<(Bindings, Vec<u32>)>, Refused> {
    let mut states = vec![(Bindings::new(), Vec::new())];
    for pattern in patterns {
        let mut next = Vec::new();
        for (bindings, premises) in &states {
            *budget = budget
                .checked_sub(known.len())
                .ok_or(Refused::TooMuchWork)?;
            for (i, (_, atom)) in known.iter().enumerate() {
                if let Some(b) = unify(pattern, atom, bindings) {
                    if next.len() == MAX_PARTIAL {
                        return Err(Refused::TooMuchWork);
                    }
                    let mut p = Vec::with_capacity(patterns.len());
                    p.extend_from_slice(premises);
                    p.push(i as u32);
                    next.push((b, p));
                }
            }
        }
        states = next;
        if states.is_empty() {
            break;
        }
    }
    Ok(states)
}

/// The reasoning result Reason's `check` gives for `program`.
pub fn check(program: &Program) -> Result<Reasoning, Refused> {
    validate(program)?;
    check_valid(program)
}

/// [`check`] on a program [`validate`] already passed.
pub fn check_valid(program: &Program) -> Result<Reasoning, Refused> {
    let authority = authority_report(program);
    let temporal = temporal_report(program);
    let eligible: Option<BTreeSet<&str>> = temporal
        .as_ref()
        .map(|t| t.eligible_fact_ids.iter().map(String::as_str).collect());

    let mut facts: Vec<&Fact> = program.facts.iter().collect();
    facts.sort_by(|a, b| a.id.cmp(&b.id));
    let mut known = BTreeMap::<String, Known>::new();
    for fact in &facts {
        let out_of_time = eligible
            .as_ref()
            .is_some_and(|e| !e.contains(fact.id.as_str()));
        if !admits(&program.authority, fact) || out_of_time {
            continue;
        }
        known.entry(fact.key()).or_insert_with(|| Known {
            atom: fact.atom(),
            source: Source::Fact {
                id: fact.id.clone(),
                authority: fact.authority.clone(),
                temporal: fact_temporal(program, fact),
            },
        });
    }

    let initial = known.len();
    let mut rules: Vec<&Rule> = program.rules.iter().collect();
    rules.sort_by(|a, b| a.id.cmp(&b.id));
    let mut evaluations = 0;
    let mut rounds = 0;
    let mut budget = MAX_MATCHES;
    loop {
        if rounds == MAX_ROUNDS {
            return Err(Refused::NoFixpoint);
        }
        rounds += 1;
        let mut additions = BTreeMap::<String, Known>::new();
        {
            let snapshot: Vec<(&String, &Atom)> = known.iter().map(|(k, v)| (k, &v.atom)).collect();
            for rule in &rules {
                evaluations += 1;
                for (bindings, premises) in satisfy(&rule.when, &snapshot, &mut budget)? {
                    let atom = instantiate(&rule.then, &bindings);
                    let key = atom.key();
                    if known.contains_key(&key) || additions.contains_key(&key) {
                        continue;
                    }
                    additions.insert(
                        key,
                        Known {
                            atom,
                            source: Source::Rule {
                                id: rule.id.clone(),
                                premises: premises
                                    .iter()
                                    .map(|&i| snapshot[i as usize].0.clone())
                                    .collect(),
                            },
                        },
                    );
                }
            }
        }
        if additions.is_empty() {
            break;
        }
        known.extend(additions);
    }

    let query = &program.query;
    let complement = query.complement();
    let proof = known
        .get(&query.key())
        .map(|_| proof_of(&query.key(), &known));
    let disproof = known
        .get(&complement.key())
        .map(|_| proof_of(&complement.key(), &known));
    let status = match (&proof, &disproof) {
        (Some(_), None) => ProofStatus::Proved,
        (None, Some(_)) => ProofStatus::Disproved,
        (Some(_), Some(_)) => ProofStatus::Inconsistent,
        (None, None) => ProofStatus::Unknown,
    };
    let conflict = match (&proof, &disproof) {
        (Some(p), Some(d)) => Some(conflict_of(query, &complement, p, d)),
        _ => None,
    };
    let missing = if proof.is_none() {
        missing(query, &rules, &known)
    } else {
        Vec::new()
    };
    Ok(Reasoning {
        schema: if is_v2(program) { RESULT_V2 } else { RESULT_V1 }.into(),
        status,
        query: query.clone(),
        program_digest: digest(program),
        ontology: OntologyRef {
            id: program.ontology.id.clone(),
            version: program.ontology.version.clone(),
            digest: digest(&program.ontology),
        },
        authority,
        temporal,
        proof,
        disproof,
        conflict,
        missing,
        assumptions: ASSUMPTIONS.iter().map(|s| s.to_string()).collect(),
        metrics: Metrics {
            facts_supplied: facts.len(),
            facts_admitted: initial,
            facts_withheld: facts.len() - initial,
            facts_derived: known.len() - initial,
            rules_evaluated: evaluations,
            rounds,
        },
    })
}

/// The premises the query still lacks: for each rule whose head the query
/// instantiates, its body atoms made ground that are not known, in key
/// order.
fn missing(query: &Atom, rules: &[&Rule], known: &BTreeMap<String, Known>) -> Vec<Atom> {
    let mut out = BTreeMap::<String, Atom>::new();
    for rule in rules {
        let Some(bindings) = unify(&rule.then, query, &Bindings::new()) else {
            continue;
        };
        for premise in &rule.when {
            let ground = instantiate(premise, &bindings);
            if ground.arguments.iter().any(|v| variable(v).is_some()) {
                continue;
            }
            let key = ground.key();
            if !known.contains_key(&key) {
                out.insert(key, ground);
            }
        }
    }
    out.into_values().collect()
}

/// The conflict witness: the facts under both proofs, and their digests.
pub fn conflict_of(query: &Atom, complement: &Atom, proof: &Proof, disproof: &Proof) -> Conflict {
    let fact_ids: BTreeSet<String> = proof
        .nodes
        .iter()
        .chain(&disproof.nodes)
        .filter(|n| n.kind == NodeKind::Fact)
        .filter_map(|n| n.source_id.clone())
        .collect();
    Conflict {
        query: query.clone(),
        complement: complement.clone(),
        fact_ids: fact_ids.into_iter().collect(),
        proof_digests: vec![proof.digest.clone(), disproof.digest.clone()],
    }
}

fn proof_of(root: &str, known: &BTreeMap<String, Known>) -> Proof {
    let mut nodes = BTreeMap::<String, ProofNode>::new();
    let root = collect(root, known, &mut nodes);
    let nodes: Vec<ProofNode> = nodes.into_values().collect();
    let digest = Proof::recompute_digest(&root, &nodes);
    Proof {
        root,
        nodes,
        digest,
    }
}

/// The node for the atom known under `key`, after its premises' nodes.
/// Depth is bounded by the rounds (a premise is always known a round
/// earlier), so at most [`MAX_ROUNDS`].
fn collect(
    key: &str,
    known: &BTreeMap<String, Known>,
    nodes: &mut BTreeMap<String, ProofNode>,
) -> String {
    let Some(k) = known.get(key) else {
        return String::new();
    };
    let id = k.atom.node_id();
    if nodes.contains_key(&id) {
        return id;
    }
    let node = match &k.source {
        Source::Fact {
            id: fact,
            authority,
            temporal,
        } => ProofNode {
            id: id.clone(),
            kind: NodeKind::Fact,
            atom: k.atom.clone(),
            source_id: Some(fact.clone()),
            authority: Some(authority.clone()),
            temporal: temporal.clone(),
            premises: Vec::new(),
        },
        Source::Rule { id: rule, premises } => ProofNode {
            id: id.clone(),
            kind: NodeKind::Derivation,
            atom: k.atom.clone(),
            source_id: Some(rule.clone()),
            authority: None,
            temporal: None,
            premises: premises.iter().map(|p| collect(p, known, nodes)).collect(),
        },
    };
    nodes.insert(id.clone(), node);
    id
}

#[cfg(test)]
mod tests {
    use super::canonical_timestamp;

    /// As Reason's date library (chrono) reads and writes them back.
    #[test]
    fn timestamps_as_reason_accepts_them() {
        for ok in [
            "2026-08-14T12:00:00Z",
            "2026-11-30T23:59:60Z",
            "2026-11-30T12:00:60Z",
            "0000-01-01T00:00:00Z",
            "2024-02-29T00:00:00Z",
            "9999-12-31T23:59:59Z",
        ] {
            assert!(canonical_timestamp(ok), "{ok}");
        }
        for bad in [
            "2026-02-29T00:00:00Z",
            "2026-11-30t12:00:00z",
            "2026-11-30T12:00:00.0Z",
            "2026-11-30 12:00:00Z",
            "2026-11-30T12:00:00+00:00",
            "2026-11-30T24:00:00Z",
            "2026-11-30T12:00:61Z",
            "2026-11-30T12:00:0é",
        ] {
            assert!(!canonical_timestamp(bad), "{bad}");
        }
    }
}
