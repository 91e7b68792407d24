//! Checks across inputs. Checking one input ([`crate::check()`]) leaves what
//! the others need of it ([`Facts`]); the caller feeds those to one
//! [`Across`] as inputs come, in any order, and finishes it once all are in:
//! packet streams (P1-P8), recompute results against their packets (R1, R2),
//! Lattice epoch rebinds (X6), and what Treeship writes: chains of artifacts
//! by their parents, a store's index against its records, and a session
//! package against its signed record and artifacts (each signed input's
//! [`crate::check::Checked::artifact`], given to [`Across::add_artifact`]).
//!
//! ```
//! use chit_core::across::{Across, Origin};
//! use chit_core::check::{check, Context};
//!
//! let mut across = Across::new(None);
//! for (name, bytes) in [("a.json", b"{}".as_slice())] {
//!     let checked = check(bytes, &Context::default()).expect("readable");
//!     across.add_checked(Origin::new(name, None), checked);
//! }
//! assert!(across.finish().is_empty());
//! ```

use crate::doc::Val;
pub use crate::facts::{Facts, Origin};
use crate::kind::Kind;
use crate::kinds::executor_packet::{self, RebindFacts};
use crate::kinds::packet::stream::{self, PacketFacts};
use crate::kinds::recompute::{recompute_against_packet, RecomputeFacts};
use crate::report::{Finding, Report, Status};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

impl Facts {
    /// The facts of `v`, checked as `kind` and found `report`: only for a
    /// packet or recompute result that passed its schema.
    pub(crate) fn of(
        kind: Kind,
        v: Val,
        report: &Report,
        signer: Option<Arc<str>>,
        art_id: Option<Box<str>>,
    ) -> Option<Facts> {
        if report.breaks(crate::rule::SCHEMA) {
            return None;
        }
        let source = Origin::unknown();
        match kind {
            Kind::Packet => PacketFacts::read(v, source, signer, art_id).map(Facts::Packet),
            Kind::Recompute => RecomputeFacts::read(v, source).map(Facts::Recompute),
            Kind::RunReceipt
            | Kind::Lineage
            | Kind::LineageBound
            | Kind::LatticePacket
            | Kind::ReasonAuthorization => None,
        }
    }

    /// A Lattice packet's facts, if these are.
    pub fn into_rebind(self) -> Option<RebindFacts> {
        match self {
            Facts::Rebind(f) => Some(f),
            _ => None,
        }
    }

    fn set_source(&mut self, source: Origin) {
        match self {
            Facts::Packet(p) => p.source = source,
            Facts::Recompute(r) => r.source = source,
            Facts::Rebind(f) => f.source = source,
            Facts::Index(f) => f.source = source,
            Facts::Session(f) => f.source = source,
            Facts::Bundle(_) => {}
            Facts::Intent(f) => f.source = source,
        }
    }
}

/// What a check across inputs is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject {
    /// A packet stream: P1-P8 and one signer.
    Stream,
    /// A Lattice todo given several packets: X6.
    Rebind,
    /// A recompute result against its packet: R1, R2.
    Recompute,
    /// Artifacts linked by their parents (Treeship's chains).
    Chain,
    /// A Treeship store's index against its records.
    Index,
    /// A Treeship session package against its signed record and artifacts.
    Session,
    /// A numeric lineage receipt's log bundle against its bound's, given
    /// in another file (`chit verify --log-key`): the bound logged first.
    Lineage,
    /// A Verifiable Intent credential against the layer above it.
    Intent,
}

impl Subject {
    /// The word chit reports (`--json` uses it as the member's name).
    pub fn name(self) -> &'static str {
        match self {
            Subject::Stream => "stream",
            Subject::Rebind => "rebind",
            Subject::Recompute => "recompute",
            Subject::Chain => "chain",
            Subject::Index => "index",
            Subject::Session => "session",
            Subject::Lineage => "lineage",
            Subject::Intent => "intent",
        }
    }
}

/// The findings of one check across inputs.
#[derive(Clone, Debug)]
pub struct CrossReport {
    pub subject: Subject,
    /// The stream id, the todo id, or the recompute result's origin.
    pub name: String,
    /// A few words on what was checked ("5 packets", "against art_…").
    pub detail: String,
    pub report: Report,
    /// Its verdict: its report's where every member passed on its own,
    /// else `unchecked` (a [`crate::rule::MEMBERS`] warning names the
    /// members that did not), whatever its own findings: a check across
    /// inputs is never valid over inputs that failed.
    pub status: Status,
}

impl CrossReport {
    /// A check's findings, its status theirs (until held to its members).
    pub fn new(subject: Subject, name: String, detail: String, report: Report) -> CrossReport {
        let status = report.status();
        CrossReport {
            subject,
            name,
            detail,
            report,
            status,
        }
    }

    /// Holds the check to its members: those that did not pass on their
    /// own (each with its status) make it `unchecked`.
    fn over(mut self, failed: Vec<(Origin, Status)>) -> CrossReport {
        if failed.is_empty() {
            return self;
        }
        const SHOWN: usize = 5;
        let mut names: Vec<String> = failed
            .iter()
            .take(SHOWN)
            .map(|(o, s)| format!("{o} ({})", s.name()))
            .collect();
        if failed.len() > SHOWN {
            names.push(format!("{} more", failed.len() - SHOWN));
        }
        self.report.warning(
            crate::rule::MEMBERS,
            "",
            format!(
                "its members did not verify: {}; a check across inputs holds only over inputs that \
                 verify on their own",
                names.join(", ")
            ),
        );
        self.status = Status::Unchecked;
        self
    }
}

/// The members that did not pass on their own, by where they came from
/// and by art id: only those are kept (a stream of 100,000 valid packets
/// adds nothing here).
#[derive(Default)]
struct Failed {
    by_origin: HashMap<Origin, Status>,
    by_art: HashMap<u128, (Origin, Status)>,
}

impl Failed {
    /// Those of `origins` and `arts` that failed, each once, in order.
    fn among<'a>(
        &self,
        origins: impl IntoIterator<Item = &'a Origin>,
        arts: impl IntoIterator<Item = &'a str>,
    ) -> Vec<(Origin, Status)> {
        if self.by_origin.is_empty() {
            return Vec::new();
        }
        let mut out: Vec<(Origin, Status)> = Vec::new();
        let mut push = |o: &Origin, s: Status| {
            if !out.iter().any(|(seen, _)| seen == o) {
                out.push((o.clone(), s));
            }
        };
        for o in origins {
            if let Some(&s) = self.by_origin.get(o) {
                push(o, s);
            }
        }
        for a in arts {
            if let Some((o, s)) =
                crate::kinds::treeship::records::art_key(a).and_then(|k| self.by_art.get(&k))
            {
                push(o, *s);
            }
        }
        out
    }
}

/// The facts of every input seen, gathered as they come: packets by stream
/// (each stream's id kept once), results and Lattice packets in order.
pub struct Across {
    expect_count: Option<usize>,
    streams: BTreeMap<Arc<str>, Vec<PacketFacts>>,
    results: Vec<RecomputeFacts>,
    rebinds: Vec<RebindFacts>,
    artifacts: Vec<crate::facts::ArtifactFacts>,
    indexes: Vec<crate::kinds::treeship::records::IndexFacts>,
    sessions: Vec<crate::kinds::treeship::session::SessionFacts>,
    intents: Vec<crate::kinds::intent::IntentFacts>,
    /// Bounds logged (their digest, log index, where) and receipts whose
    /// bound was not in their own file (their bound's digest, log index,
    /// where), from files of log bundles.
    bounds: Vec<(String, u64, Origin)>,
    waiting: Vec<(String, u64, Origin)>,
    packet_arts: std::collections::HashSet<u128>,
    payload_types: std::collections::HashSet<Arc<str>>,
    /// Every signed artifact given, by [`crate::kinds::treeship::records::art_key`].
    seen: std::collections::HashSet<u128>,
    trusted: bool,
    allow_unchecked: bool,
    failed: Failed,
}

impl Across {
    /// With `expect_count` (`--expect-count`), every stream must hold
    /// exactly that many packets, and some packet must be given (P8).
    pub fn new(expect_count: Option<usize>) -> Across {
        Across {
            expect_count,
            streams: BTreeMap::new(),
            results: Vec::new(),
            rebinds: Vec::new(),
            artifacts: Vec::new(),
            indexes: Vec::new(),
            sessions: Vec::new(),
            intents: Vec::new(),
            bounds: Vec::new(),
            waiting: Vec::new(),
            packet_arts: std::collections::HashSet::new(),
            payload_types: std::collections::HashSet::new(),
            seen: std::collections::HashSet::new(),
            trusted: false,
            allow_unchecked: false,
            failed: Failed::default(),
        }
    }

    /// Whether members that are signed or unchecked pass
    /// (`--allow-unchecked`, [`Status::passes`]).
    pub fn allow_unchecked(mut self, allow: bool) -> Across {
        self.allow_unchecked = allow;
        self
    }

    /// Notes a member's own status: one that does not pass makes every
    /// check across inputs it is part of `unchecked`.
    fn note(&mut self, source: &Origin, status: Status, art: Option<&str>) {
        if status.passes(self.allow_unchecked) {
            return;
        }
        self.failed.by_origin.insert(source.clone(), status);
        if let Some(k) = art.and_then(crate::kinds::treeship::records::art_key) {
            self.failed.by_art.insert(k, (source.clone(), status));
        }
    }

    /// Whether `--trust` was given: a session package then needs its signed
    /// session record and every artifact it lists among the inputs.
    pub fn trusted(mut self, trusted: bool) -> Across {
        self.trusted = trusted;
        self
    }

    /// Takes in one signed artifact's facts (an envelope, a store record,
    /// an export that passed its signature), for parent chains, indexes
    /// and session packages, with the status of the input it is.
    pub fn add_artifact(
        &mut self,
        source: Origin,
        status: Status,
        mut facts: crate::facts::ArtifactFacts,
    ) {
        self.note(&source, status, Some(&facts.art_id));
        facts.source = source;
        if let Some(key) = crate::kinds::treeship::records::art_key(&facts.art_id) {
            self.seen.insert(key);
        }
        // Kept whole only where a chain, an index or a session package may
        // need more than that it was given: a bare envelope that names no
        // parent is a key in `seen` (a stream of 100,000 packets keeps
        // 100,000 keys, not 100,000 records).
        if facts.record.is_none() && facts.edge().is_none() && facts.session.is_none() {
            return;
        }
        // One allocation per payload type, however many artifacts share it.
        match self.payload_types.get(&facts.payload_type) {
            Some(shared) => facts.payload_type = shared.clone(),
            None => {
                self.payload_types.insert(facts.payload_type.clone());
            }
        }
        self.artifacts.push(facts);
    }

    /// Takes in what one checked input leaves for the checks across
    /// inputs (its facts, its artifact), with its status.
    pub fn add_checked(&mut self, source: Origin, checked: crate::checked::Checked) {
        let status = checked.status();
        if let Some(a) = checked.artifact {
            self.add_artifact(source.clone(), status, a);
        }
        if let Some(f) = checked.facts {
            self.add(source, status, f);
        }
    }

    /// Takes in one input's facts and its status; `source` names the
    /// input in findings.
    pub fn add(&mut self, source: Origin, status: Status, mut facts: Facts) {
        if let Facts::Bundle(b) = facts {
            self.note(&source, status, None);
            self.add_bundles(source, *b);
            return;
        }
        let art = match &facts {
            Facts::Packet(p) => p.art_id.as_deref(),
            _ => None,
        };
        self.note(&source, status, art);
        facts.set_source(source);
        match facts {
            Facts::Packet(mut p) => {
                // One signed packet given twice (its store record and its
                // export, say) is one packet.
                let key = p
                    .art_id
                    .as_deref()
                    .and_then(|a| a.strip_prefix("art_"))
                    .and_then(|h| u128::from_str_radix(h, 16).ok());
                if let Some(key) = key {
                    if !self.packet_arts.insert(key) {
                        return;
                    }
                }
                if let Some((id, _)) = self.streams.get_key_value(&p.stream_id) {
                    p.stream_id = id.clone();
                }
                self.streams.entry(p.stream_id.clone()).or_default().push(p);
            }
            Facts::Recompute(r) => self.results.push(r),
            Facts::Rebind(f) => self.rebinds.push(f),
            Facts::Index(f) => self.indexes.push(f),
            Facts::Session(mut f) => {
                let carried = std::mem::take(&mut f.carried);
                self.add_entries(&f.source, carried);
                self.sessions.push(*f);
            }
            Facts::Intent(f) => self.intents.push(*f),
            // Taken apart above.
            Facts::Bundle(_) => {}
        }
    }

    /// The inputs one input carries (a file of bundles' entries, a
    /// package's sealed envelopes): each one's facts and artifact, with its
    /// own status, under `FILE` and its place in it.
    fn add_entries(&mut self, source: &Origin, entries: Vec<crate::facts::Entry>) {
        for e in entries {
            let origin = if e.at.is_empty() {
                source.clone()
            } else {
                Origin::new(format!("{}{}", source.file, e.at), source.line)
            };
            if let Some(a) = e.artifact {
                self.add_artifact(origin.clone(), e.status, a);
            }
            if let Some(f) = e.facts {
                self.add(origin, e.status, f);
            }
        }
    }

    /// A file of log bundles: each entry's facts and artifact, with its own
    /// status, under `FILE/N` where the file holds several; and the
    /// lineage order to prove.
    fn add_bundles(&mut self, source: Origin, b: crate::kinds::log_bundle::BundleFacts) {
        self.add_entries(&source, b.entries);
        self.bounds.extend(
            b.lineage
                .bounds
                .into_iter()
                .map(|(d, i)| (d, i, source.clone())),
        );
        self.waiting.extend(
            b.lineage
                .waiting
                .into_iter()
                .map(|(d, i)| (d, i, source.clone())),
        );
    }

    /// How many packets have been taken in.
    pub fn packets(&self) -> usize {
        self.streams.values().map(Vec::len).sum()
    }

    /// Every check across the inputs taken in, in the order chit reports
    /// them: P8 when no packet came at all, each stream, each rebind, each
    /// recompute result whose packet is among the inputs, each chain, each
    /// index and each session package. Each is held to its members
    /// ([`CrossReport::status`]).
    pub fn finish(self) -> Vec<CrossReport> {
        let mut out = Vec::new();
        if let Some(n) = self.expect_count.filter(|_| self.packets() == 0) {
            let report = Report {
                kind: crate::kinds::packet::KIND,
                errors: vec![Finding::new(
                    crate::kinds::packet::rule::P8,
                    "",
                    format!(
                        "--expect-count {n} was given, but none of the inputs is a packet: \
                         give the stream's packets, or leave out --expect-count"
                    ),
                )],
                ..Report::default()
            };
            // No stream to name; `detail` stays empty, and human text
            // shows neither.
            out.push(CrossReport::new(
                Subject::Stream,
                "(none)".into(),
                String::new(),
                report,
            ));
        }
        let recomputes = self.recompute_results();
        let Across {
            expect_count,
            streams,
            rebinds,
            artifacts,
            indexes,
            sessions,
            intents,
            seen,
            trusted,
            failed,
            bounds,
            waiting,
            ..
        } = self;
        // Each todo's packets, where some member failed (else none needed).
        let mut by_todo: HashMap<String, Vec<Origin>> = HashMap::new();
        if !failed.by_origin.is_empty() {
            for f in &rebinds {
                by_todo
                    .entry(f.todo_id.clone())
                    .or_default()
                    .push(f.source.clone());
            }
        }
        for (id, ps) in streams {
            let members = failed.among(
                ps.iter().map(|p| &p.source),
                ps.iter().filter_map(|p| p.art_id.as_deref()),
            );
            let s = stream::check_stream(&id, ps, expect_count);
            let detail = format!(
                "{} packet{}",
                s.packets,
                if s.packets == 1 { "" } else { "s" }
            );
            out.push(CrossReport::new(Subject::Stream, s.stream, detail, s.report).over(members));
        }
        for (todo, n, report) in executor_packet::rebinds(rebinds) {
            let members = failed.among(by_todo.get(&todo).into_iter().flatten(), []);
            out.push(
                CrossReport::new(Subject::Rebind, todo, format!("{n} packets"), report)
                    .over(members),
            );
        }
        out.extend(recomputes);
        for c in crate::kinds::treeship::records::chains(&artifacts, &seen) {
            let detail = format!(
                "{} artifact{}",
                c.artifacts,
                if c.artifacts == 1 { "" } else { "s" }
            );
            let members = failed.among([], c.members.iter().map(|m| &**m));
            out.push(CrossReport::new(Subject::Chain, c.root, detail, c.report).over(members));
        }
        for idx in &indexes {
            let detail = format!(
                "{} entr{}",
                idx.entries.len(),
                if idx.entries.len() == 1 { "y" } else { "ies" }
            );
            let report = crate::kinds::treeship::records::index_against_records(idx, &artifacts);
            let members = failed.among([&idx.source], idx.entries.iter().map(|e| e.id.as_str()));
            out.push(
                CrossReport::new(Subject::Index, idx.source.to_string(), detail, report)
                    .over(members),
            );
        }
        for pkg in &sessions {
            let detail = format!(
                "{} artifact{}",
                pkg.artifacts.len(),
                if pkg.artifacts.len() == 1 { "" } else { "s" }
            );
            let report = crate::kinds::treeship::session::package_against_inputs(
                pkg, &artifacts, &seen, trusted,
            );
            let records = artifacts
                .iter()
                .filter(|a| {
                    a.session
                        .as_ref()
                        .is_some_and(|s| s.session_id == pkg.session_id)
                })
                .map(|a| &*a.art_id);
            let members = failed.among(
                [&pkg.source],
                pkg.artifacts
                    .iter()
                    .map(|l| l.artifact_id.as_str())
                    .chain(records),
            );
            out.push(
                CrossReport::new(Subject::Session, pkg.session_id.clone(), detail, report)
                    .over(members),
            );
        }
        // Each Verifiable Intent credential against the layer above it,
        // when that is among the inputs. Its own signature is what this
        // checks, so it is held to itself only where it failed outright.
        let given = crate::kinds::intent::Above::of(&intents);
        for f in &intents {
            let Some((report, above)) = crate::kinds::intent::against_above(f, &given) else {
                continue;
            };
            let above = above.map(|a| &a.source);
            let members = failed
                .among([&f.source].into_iter().chain(above), [])
                .into_iter()
                .filter(|(o, s)| *o != f.source || *s == Status::Invalid)
                .collect();
            let detail = format!(
                "{} against {}",
                f.layer.name(),
                above.map_or("none given".to_owned(), |a| a.to_string())
            );
            out.push(
                CrossReport::new(Subject::Intent, f.source.to_string(), detail, report)
                    .over(members),
            );
        }
        // Each lineage receipt whose bound was in another file: its bound
        // must be among the inputs, logged first.
        let logged: Vec<(String, u64)> = bounds.iter().map(|(d, i, _)| (d.clone(), *i)).collect();
        for (digest, index, origin) in &waiting {
            let (report, detail) = crate::kinds::log_bundle::across_files(digest, *index, &logged);
            let bound = bounds
                .iter()
                .filter(|(d, _, _)| d == digest)
                .min_by_key(|(_, i, _)| *i)
                .map(|(_, _, o)| o);
            let members = failed.among([origin].into_iter().chain(bound), []);
            let name = format!("{origin} (log index {index})");
            out.push(CrossReport::new(Subject::Lineage, name, detail, report).over(members));
        }
        out
    }

    /// Each recompute result whose packet is among the packets, checked
    /// against it (R1, R2): found by its art id, or else by its
    /// `packet_id` (R1 then names both art ids).
    fn recompute_results(&self) -> Vec<CrossReport> {
        let by_art: HashMap<&str, &PacketFacts> = self
            .streams
            .values()
            .flatten()
            .filter_map(|p| p.art_id.as_deref().map(|a| (a, p)))
            .collect();
        let mut by_id: HashMap<&str, &PacketFacts> = HashMap::new();
        for p in self.streams.values().flatten() {
            by_id.entry(&p.packet_id).or_insert(p);
        }
        self.results
            .iter()
            .filter_map(|r| {
                let p = by_art
                    .get(r.packet.as_str())
                    .or_else(|| by_id.get(r.packet_id.as_str()))?;
                let members = self.failed.among([&r.source, &p.source], []);
                Some(
                    CrossReport::new(
                        Subject::Recompute,
                        r.source.to_string(),
                        format!("against {}", r.packet),
                        recompute_against_packet(r, p),
                    )
                    .over(members),
                )
            })
            .collect()
    }
}
