//! Reason's documents as types: the request (`zerker.reason.action.v1`),
//! its policy (a `zerker.reason.program.v2`), the certificate and its
//! reasoning result.
//!
//! Reason's digests are `serde_json` output over its Rust types: compact
//! JSON, members in field-declaration order, optional members left out
//! when empty, maps and sets in key order, sets without duplicates. The
//! types here declare the same members in the same order with the same
//! omissions, so [`digest`] over them gives Reason's digests byte for byte
//! (pinned by the conformance figures in `tests/reason_conformance.rs`).
//! Reading is as strict as Reason's own: every member must be one the type
//! declares (`deny_unknown_fields`, as Reason's CLI rejects any member its
//! types ignore).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// `"sha256:"` and the lowercase hex SHA-256 of `value`'s compact JSON.
pub fn digest<T: Serialize + ?Sized>(value: &T) -> String {
    // Serializing these types cannot fail: every map key is a string.
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    format!("sha256:{}", hex_sha256(&bytes))
}

/// `value` as Reason writes its files: pretty JSON (two-space indentation)
/// and a final newline.
pub fn pretty<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

pub fn hex_sha256(bytes: &[u8]) -> String {
    crate::digest::hex(&Sha256::digest(bytes))
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    pub schema: String,
    pub mission: Mission,
    pub action: Action,
    pub policy: Program,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Mission {
    pub id: String,
    pub principal: String,
    pub instruction_digest: String,
    pub issued_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
    #[serde(default)]
    pub constraints: BTreeMap<String, Value>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Action {
    pub id: String,
    pub tool: String,
    pub proposed_at: String,
    #[serde(default)]
    pub arguments: BTreeMap<String, Value>,
    #[serde(default)]
    pub effects: Vec<Effect>,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Effect {
    pub kind: String,
    pub resource: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Certificate {
    pub schema: String,
    pub status: AuthorizationStatus,
    pub request_digest: String,
    pub mission: BoundMission,
    pub action: BoundAction,
    pub reasoning: Reasoning,
    pub issues: Vec<Issue>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BoundMission {
    pub id: String,
    pub digest: String,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BoundAction {
    pub id: String,
    pub digest: String,
    pub tool: String,
    pub arguments: BTreeMap<String, Value>,
    pub effects: Vec<Effect>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorizationStatus {
    Authorized,
    Denied,
    Conflicted,
    InsufficientEvidence,
}

impl AuthorizationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthorizationStatus::Authorized => "authorized",
            AuthorizationStatus::Denied => "denied",
            AuthorizationStatus::Conflicted => "conflicted",
            AuthorizationStatus::InsufficientEvidence => "insufficient_evidence",
        }
    }

    /// The status a reasoning status maps to (A2).
    pub fn of(status: ProofStatus) -> AuthorizationStatus {
        match status {
            ProofStatus::Proved => AuthorizationStatus::Authorized,
            ProofStatus::Disproved => AuthorizationStatus::Denied,
            ProofStatus::Inconsistent => AuthorizationStatus::Conflicted,
            ProofStatus::Unknown => AuthorizationStatus::InsufficientEvidence,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Issue {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atom: Option<Atom>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fact_ids: Vec<String>,
}

/// `zerker.reason.authorization-bundle.v1`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CertificateBundle {
    pub schema: String,
    pub request: Request,
    pub certificate: Certificate,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Program {
    pub schema: String,
    pub ontology: Ontology,
    pub authority: AuthorityPolicy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation_time: Option<String>,
    #[serde(default)]
    pub facts: Vec<Fact>,
    #[serde(default)]
    pub rules: Vec<Rule>,
    pub query: Atom,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Ontology {
    pub id: String,
    pub version: String,
    pub predicates: BTreeMap<String, Predicate>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Predicate {
    pub arguments: Vec<ScalarType>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScalarType {
    String,
    Integer,
    Boolean,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AuthorityPolicy {
    pub classes: BTreeSet<String>,
    pub default_admit: BTreeSet<String>,
    #[serde(default)]
    pub predicate_admit: BTreeMap<String, BTreeSet<String>>,
}

/// A fact: its atom's members sit beside its own (`predicate`,
/// `arguments`, `negated` between `id` and `authority`), as Reason writes
/// them.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Fact {
    pub id: String,
    pub predicate: String,
    #[serde(default)]
    pub arguments: Vec<Value>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub negated: bool,
    pub authority: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<String>,
}

impl Fact {
    pub fn atom(&self) -> Atom {
        Atom {
            predicate: self.predicate.clone(),
            arguments: self.arguments.clone(),
            negated: self.negated,
        }
    }

    /// The compact JSON of the fact's atom ([`Atom::key`]), without
    /// copying it.
    pub fn key(&self) -> String {
        #[derive(Serialize)]
        struct AtomRef<'a> {
            predicate: &'a str,
            arguments: &'a [Value],
            #[serde(skip_serializing_if = "is_false")]
            negated: bool,
        }
        serde_json::to_string(&AtomRef {
            predicate: &self.predicate,
            arguments: &self.arguments,
            negated: self.negated,
        })
        .unwrap_or_default()
    }

    /// Whether the fact states exactly `atom`.
    pub fn states(&self, atom: &Atom) -> bool {
        self.predicate == atom.predicate
            && self.arguments == atom.arguments
            && self.negated == atom.negated
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub id: String,
    pub when: Vec<Atom>,
    pub then: Atom,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Atom {
    pub predicate: String,
    #[serde(default)]
    pub arguments: Vec<Value>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub negated: bool,
}

impl Atom {
    /// The atom with its negation flipped.
    pub fn complement(&self) -> Atom {
        Atom {
            negated: !self.negated,
            ..self.clone()
        }
    }

    /// The atom's compact JSON: the key Reason orders known atoms by.
    pub fn key(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A proof node's id: `node_` and the hex SHA-256 of [`Atom::key`].
    pub fn node_id(&self) -> String {
        format!("node_{}", hex_sha256(self.key().as_bytes()))
    }
}

/// The reasoning result (`zerker.reason.result.v2` under a program.v2).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Reasoning {
    pub schema: String,
    pub status: ProofStatus,
    pub query: Atom,
    pub program_digest: String,
    pub ontology: OntologyRef,
    pub authority: AuthorityReport,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temporal: Option<TemporalReport>,
    pub proof: Option<Proof>,
    pub disproof: Option<Proof>,
    pub conflict: Option<Conflict>,
    pub missing: Vec<Atom>,
    pub assumptions: Vec<String>,
    pub metrics: Metrics,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProofStatus {
    Proved,
    Disproved,
    Inconsistent,
    Unknown,
}

impl ProofStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ProofStatus::Proved => "proved",
            ProofStatus::Disproved => "disproved",
            ProofStatus::Inconsistent => "inconsistent",
            ProofStatus::Unknown => "unknown",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OntologyRef {
    pub id: String,
    pub version: String,
    pub digest: String,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Proof {
    pub root: String,
    pub nodes: Vec<ProofNode>,
    pub digest: String,
}

impl Proof {
    /// The digest a proof's root and nodes commit to: the compact JSON of
    /// `{"nodes": …, "root": …}` with every object's members in key order
    /// (Reason builds it as an untyped JSON value, whose members sort). The
    /// mirror types below declare their members in that order, so no
    /// untyped value need be built.
    pub fn recompute_digest(root: &str, nodes: &[ProofNode]) -> String {
        digest(&SortedProof {
            nodes: nodes.iter().map(SortedNode::of).collect(),
            root,
        })
    }
}

#[derive(Serialize)]
struct SortedProof<'a> {
    nodes: Vec<SortedNode<'a>>,
    root: &'a str,
}

#[derive(Serialize)]
struct SortedNode<'a> {
    atom: SortedAtom<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    authority: Option<&'a str>,
    id: &'a str,
    kind: NodeKind,
    premises: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    source_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temporal: Option<SortedTemporal<'a>>,
}

#[derive(Serialize)]
struct SortedAtom<'a> {
    arguments: &'a [Value],
    #[serde(skip_serializing_if = "is_false")]
    negated: bool,
    predicate: &'a str,
}

#[derive(Serialize)]
struct SortedTemporal<'a> {
    observed_at: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    supersedes: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    valid_from: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    valid_until: Option<&'a str>,
}

impl<'a> SortedNode<'a> {
    fn of(n: &'a ProofNode) -> Self {
        SortedNode {
            atom: SortedAtom {
                arguments: &n.atom.arguments,
                negated: n.atom.negated,
                predicate: &n.atom.predicate,
            },
            authority: n.authority.as_deref(),
            id: &n.id,
            kind: n.kind,
            premises: &n.premises,
            source_id: n.source_id.as_deref(),
            temporal: n.temporal.as_ref().map(|t| SortedTemporal {
                observed_at: &t.observed_at,
                supersedes: &t.supersedes,
                valid_from: t.valid_from.as_deref(),
                valid_until: t.valid_until.as_deref(),
            }),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Conflict {
    pub query: Atom,
    pub complement: Atom,
    pub fact_ids: Vec<String>,
    pub proof_digests: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProofNode {
    pub id: String,
    pub kind: NodeKind,
    pub atom: Atom,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authority: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temporal: Option<FactTemporal>,
    pub premises: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    Fact,
    Derivation,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AuthorityReport {
    pub policy_digest: String,
    pub admitted_fact_ids: Vec<String>,
    pub withheld: Vec<WithheldFact>,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WithheldFact {
    pub fact_id: String,
    pub atom: Atom,
    pub authority: String,
    pub admitted_authorities: Vec<String>,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TemporalReport {
    pub evaluation_time: String,
    pub eligible_fact_ids: Vec<String>,
    pub withheld: Vec<TemporallyWithheld>,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TemporallyWithheld {
    pub fact_id: String,
    pub atom: Atom,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub superseded_by: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FactTemporal {
    pub observed_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    pub facts_supplied: usize,
    pub facts_admitted: usize,
    pub facts_withheld: usize,
    pub facts_derived: usize,
    pub rules_evaluated: usize,
    pub rounds: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sorted mirror gives the bytes of the untyped value Reason
    /// builds, for every optional member present or absent.
    #[test]
    fn proof_digest_is_the_untyped_values() {
        let atom = |negated| Atom {
            predicate: "p".into(),
            arguments: vec![
                Value::from("a"),
                Value::from(9007199254740993u64),
                serde_json::json!({"z": 1, "a": [true]}),
            ],
            negated,
        };
        let mut nodes = Vec::new();
        for (i, negated) in [false, true].into_iter().enumerate() {
            for temporal in [
                None,
                Some(FactTemporal {
                    observed_at: "2026-01-01T00:00:00Z".into(),
                    valid_from: None,
                    valid_until: Some("2026-02-01T00:00:00Z".into()),
                    supersedes: vec!["f0".into()],
                }),
                Some(FactTemporal {
                    observed_at: "t".into(),
                    valid_from: Some("u".into()),
                    valid_until: None,
                    supersedes: vec![],
                }),
            ] {
                nodes.push(ProofNode {
                    id: format!("node_{i}"),
                    kind: if negated {
                        NodeKind::Derivation
                    } else {
                        NodeKind::Fact
                    },
                    atom: atom(negated),
                    source_id: negated.then(|| "r".to_string()),
                    authority: (!negated).then(|| "ci".to_string()),
                    temporal,
                    premises: vec!["node_x".into()],
                });
            }
        }
        let untyped = digest(
            &serde_json::json!({ "root": "node_0", "nodes": serde_json::to_value(&nodes).unwrap() }),
        );
        assert_eq!(Proof::recompute_digest("node_0", &nodes), untyped);
    }
}
