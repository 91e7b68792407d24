//! A9: a proof (or disproof) replayed against the program, as Reason's
//! verifier replays it: its digest, its nodes sorted and unique, each node
//! id the digest of its atom, each fact node one of the program's facts
//! with its authority admitted and its time window open, each derivation an
//! instance of its rule under one substitution, no cycle, and every node
//! reachable from the root.
//!
//! The walk keeps its own stack, so a hostile chain of a million premises
//! costs memory in proportion, never the thread's stack.

use std::collections::{BTreeMap, BTreeSet};

use super::engine::{self, Bindings};
use super::model::{Atom, Fact, NodeKind, Program, Proof, ProofNode, Rule, TemporalReport};
use super::rule;

/// A finding: its rule, where (a JSON Pointer under the certificate) and
/// what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleFailure {
    pub rule: &'static str,
    pub path: String,
    pub message: String,
}

fn fail<T>(rule: &'static str, path: String, message: String) -> Result<T, RuleFailure> {
    Err(RuleFailure {
        rule,
        path,
        message,
    })
}

/// What a replay may consult.
pub struct Replay<'p> {
    pub program: &'p Program,
    pub facts: BTreeMap<&'p str, &'p Fact>,
    pub rules: BTreeMap<&'p str, &'p Rule>,
    /// The facts inside the time window (program.v2), or `None` (v1).
    pub eligible: Option<BTreeSet<String>>,
}

impl<'p> Replay<'p> {
    pub fn new(program: &'p Program) -> Self {
        let eligible = engine::temporal_report(program);
        Self::with_window(program, eligible.as_ref())
    }

    /// The same, with the program's time window already worked out.
    pub fn with_window(program: &'p Program, window: Option<&TemporalReport>) -> Self {
        Replay {
            program,
            facts: program.facts.iter().map(|f| (f.id.as_str(), f)).collect(),
            rules: program.rules.iter().map(|r| (r.id.as_str(), r)).collect(),
            eligible: window.map(|t| t.eligible_fact_ids.iter().cloned().collect()),
        }
    }
}

/// Replays `proof` (at `at`, `/reasoning/proof` or `/reasoning/disproof`),
/// which must conclude `expected`. Returns how many nodes it checked.
///
/// `derived` is the proof the re-run derived, if any: where the proof is
/// exactly it, its digest and node ids are the ones the re-run computed
/// (with the same functions), and are not computed again; every other step
/// runs.
pub fn replay(
    proof: &Proof,
    expected: &Atom,
    at: &str,
    p: &Replay,
    derived: Option<&Proof>,
) -> Result<usize, RuleFailure> {
    let known = derived.is_some_and(|d| d.root == proof.root && d.nodes == proof.nodes);
    let want = match derived {
        Some(d) if known => d.digest.clone(),
        _ => Proof::recompute_digest(&proof.root, &proof.nodes),
    };
    if proof.digest != want {
        return fail(
            rule::A7,
            format!("{at}/digest"),
            format!(
                "the proof digest is {}, but its root and nodes digest to {want}",
                proof.digest
            ),
        );
    }
    for (i, pair) in proof.nodes.windows(2).enumerate() {
        if pair[0].id >= pair[1].id {
            let what = if pair[0].id == pair[1].id {
                "a duplicate node id"
            } else {
                "out of order"
            };
            return fail(
                rule::A9,
                format!("{at}/nodes/{}", i + 1),
                format!(
                    "proof nodes must be sorted by id, each once: {} is {what}",
                    pair[1].id
                ),
            );
        }
    }
    let index: BTreeMap<&str, usize> = proof
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i))
        .collect();
    let Some(&root) = index.get(proof.root.as_str()) else {
        return fail(
            rule::A9,
            format!("{at}/root"),
            format!("the root {} is not one of the proof's nodes", proof.root),
        );
    };
    if &proof.nodes[root].atom != expected {
        return fail(
            rule::A9,
            format!("{at}/root"),
            format!(
                "the proof concludes {}, not {}",
                proof.nodes[root].atom.key(),
                expected.key()
            ),
        );
    }
    let verified = walk(root, proof, &index, at, p, known)?;
    if verified.len() != proof.nodes.len() {
        let stray = (0..proof.nodes.len())
            .find(|i| !verified.contains(i))
            .unwrap_or(0);
        return fail(
            rule::A9,
            format!("{at}/nodes/{stray}"),
            format!(
                "node {} is not reachable from the proof's root",
                proof.nodes[stray].id
            ),
        );
    }
    Ok(verified.len())
}

/// One node on the walk's stack: the premises checked so far and the
/// bindings they made.
struct Frame {
    node: usize,
    next: usize,
    bindings: Bindings,
}

/// A walk from the root: what it consults, and where it stands.
struct Walk<'w> {
    proof: &'w Proof,
    at: &'w str,
    p: &'w Replay<'w>,
    /// The node ids are the re-run's own (see [`replay`]).
    ids_known: bool,
    visiting: BTreeSet<usize>,
    verified: BTreeSet<usize>,
    stack: Vec<Frame>,
}

fn walk(
    root: usize,
    proof: &Proof,
    index: &BTreeMap<&str, usize>,
    at: &str,
    p: &Replay,
    ids_known: bool,
) -> Result<BTreeSet<usize>, RuleFailure> {
    let mut w = Walk {
        proof,
        at,
        p,
        ids_known,
        visiting: BTreeSet::new(),
        verified: BTreeSet::new(),
        stack: Vec::new(),
    };
    w.enter(root)?;
    while let Some(frame) = w.stack.last() {
        let (i, next) = (frame.node, frame.next);
        let node = &proof.nodes[i];
        let here = || format!("{at}/nodes/{i}");
        // `enter` pushes only derivations whose rule exists.
        let Some(rule) = node.source_id.as_deref().and_then(|r| p.rules.get(r)) else {
            return fail(
                rule::A9,
                here(),
                "internal: a derivation lost its rule".into(),
            );
        };
        if next < node.premises.len() {
            let premise = &node.premises[next];
            let at_premise = || format!("{}/premises/{next}", here());
            let Some(&child) = index.get(premise.as_str()) else {
                return fail(
                    rule::A9,
                    at_premise(),
                    format!("premise {premise} of node {} is not in the proof", node.id),
                );
            };
            if !w.verified.contains(&child) {
                if w.visiting.contains(&child) {
                    return fail(
                        rule::A9,
                        at_premise(),
                        format!(
                            "node {} is its own premise through {premise}: a derivation cycle",
                            node.id
                        ),
                    );
                }
                w.enter(child)?;
                continue;
            }
            let pattern = &rule.when[next];
            let frame = w.stack.last_mut().expect("the frame just read");
            let Some(b) = engine::unify(pattern, &proof.nodes[child].atom, &frame.bindings) else {
                return fail(
                    rule::A9,
                    at_premise(),
                    format!(
                        "premise {next} of node {} does not satisfy rule {}'s condition {}",
                        node.id,
                        rule.id,
                        pattern.key()
                    ),
                );
            };
            frame.bindings = b;
            frame.next += 1;
            continue;
        }
        let concluded = engine::instantiate(&rule.then, &frame.bindings);
        if concluded != node.atom {
            return fail(
                rule::A9,
                format!("{}/atom", here()),
                format!(
                    "node {} does not follow from rule {}: its premises give {}",
                    node.id,
                    rule.id,
                    concluded.key()
                ),
            );
        }
        w.visiting.remove(&i);
        w.verified.insert(i);
        w.stack.pop();
    }
    Ok(w.verified)
}

impl Walk<'_> {
    /// The checks on node `i` itself: a fact node is finished here; a
    /// derivation is pushed for its premises.
    fn enter(&mut self, i: usize) -> Result<(), RuleFailure> {
        let node: &ProofNode = &self.proof.nodes[i];
        let here = format!("{}/nodes/{i}", self.at);
        if !self.ids_known && node.id != node.atom.node_id() {
            let want = node.atom.node_id();
            return fail(
                rule::A9,
                format!("{here}/id"),
                format!(
                    "node {} is not the digest of its atom {}: that is {want}",
                    node.id,
                    node.atom.key()
                ),
            );
        }
        self.visiting.insert(i);
        match node.kind {
            NodeKind::Fact => {
                fact_node(node, &here, self.p)?;
                self.visiting.remove(&i);
                self.verified.insert(i);
            }
            NodeKind::Derivation => {
                derivation_node(node, &here, self.p)?;
                self.stack.push(Frame {
                    node: i,
                    next: 0,
                    bindings: Bindings::new(),
                });
            }
        }
        Ok(())
    }
}

/// A derivation node: no fact's authority or time evidence, a rule of the
/// program, one premise per condition of it.
fn derivation_node(node: &ProofNode, here: &str, p: &Replay) -> Result<(), RuleFailure> {
    let bad = |what: &str| {
        fail(
            rule::A9,
            format!("{here}/{what}"),
            format!("derived node {} declares a fact's {what}", node.id),
        )
    };
    if node.temporal.is_some() {
        return bad("temporal");
    }
    if node.authority.is_some() {
        return bad("authority");
    }
    let Some(source) = node.source_id.as_deref() else {
        return fail(
            rule::A9,
            format!("{here}/source_id"),
            format!("derived node {} names no rule", node.id),
        );
    };
    let Some(rule) = p.rules.get(source) else {
        return fail(
            rule::A9,
            format!("{here}/source_id"),
            format!(
                "derived node {} cites rule {source:?}, which the program does not have",
                node.id
            ),
        );
    };
    if node.premises.len() != rule.when.len() {
        return fail(
            rule::A9,
            format!("{here}/premises"),
            format!(
                "rule {source:?} has {} conditions, but node {} gives {} premises",
                rule.when.len(),
                node.id,
                node.premises.len()
            ),
        );
    }
    Ok(())
}

/// A fact node: no premises, one of the program's facts (same atom, same
/// authority, same time evidence), admitted and inside the time window.
fn fact_node(node: &ProofNode, here: &str, p: &Replay) -> Result<(), RuleFailure> {
    let err = |field: &str, message: String| fail(rule::A9, format!("{here}{field}"), message);
    if !node.premises.is_empty() {
        return err("/premises", format!("fact node {} has premises", node.id));
    }
    let Some(source) = node.source_id.as_deref() else {
        return err("/source_id", format!("fact node {} names no fact", node.id));
    };
    let Some(fact) = p.facts.get(source) else {
        return err(
            "/source_id",
            format!(
                "fact node {} cites fact {source:?}, which the program does not have: a forged fact",
                node.id
            ),
        );
    };
    if !fact.states(&node.atom) {
        return err(
            "/atom",
            format!(
                "fact node {} states {}, but fact {source:?} states {}",
                node.id,
                node.atom.key(),
                fact.atom().key()
            ),
        );
    }
    if node.authority.as_deref() != Some(fact.authority.as_str()) {
        return err(
            "/authority",
            format!(
                "fact node {} gives authority {:?}, but fact {source:?} has {:?}",
                node.id,
                node.authority.as_deref().unwrap_or("none"),
                fact.authority
            ),
        );
    }
    if !engine::admits(&p.program.authority, fact) {
        return err(
            "/authority",
            format!(
                "fact {source:?} comes from {:?}, which the policy does not admit for {:?}",
                fact.authority, fact.predicate
            ),
        );
    }
    if p.eligible.as_ref().is_some_and(|e| !e.contains(source)) {
        return err(
            "/source_id",
            format!(
                "fact {source:?} is outside its time window (or superseded) at the evaluation time"
            ),
        );
    }
    if node.temporal != engine::fact_temporal(p.program, fact) {
        return err(
            "/temporal",
            format!(
                "fact node {}'s time evidence is not fact {source:?}'s",
                node.id
            ),
        );
    }
    Ok(())
}
