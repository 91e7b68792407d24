//! A packet stream (`verification.packet.v1`), checked across its packets:
//! P1-P4, P6's order, P7, P8 and one signer per stream. P1, P2 and P4 are
//! [`admit`], which a log holds each packet to against what it logged.
//!
//! A stream's bookkeeping is a few fields per packet ([`PacketFacts`]), so
//! a million packets are checked in one pass after sorting by sequence.

use crate::doc::Val;
use crate::facts::Origin;
pub use crate::facts::{Fingerprint, PacketFacts};
use crate::report::{Finding, Report};
use crate::time::rfc3339_nanos;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

impl PacketFacts {
    /// Reads the facts of a packet that passed its schema.
    pub fn read(
        v: Val,
        source: Origin,
        signer: Option<Arc<str>>,
        art_id: Option<Box<str>>,
    ) -> Option<PacketFacts> {
        let s = |k: &str| v.get(k).and_then(|x| x.as_str());
        Some(PacketFacts {
            source,
            stream_id: s("stream_id")?.into(),
            packet_id: s("packet_id")?.into(),
            // Saturating: a sequence beyond i64 stays in the stream (its
            // packet reports P3) instead of silently leaving it.
            sequence: v.get("sequence")?.as_f64()? as i64,
            prev_packet_id: s("prev_packet_id").map(Into::into),
            produced_at: s("produced_at").and_then(rfc3339_nanos),
            model_digest: Fingerprint::of(s("model_digest")?),
            runtime_digest: s("runtime_digest").map(Fingerprint::of),
            output_digest: Fingerprint::of(s("output_digest")?),
            bit_exact: s("reproducibility") == Some("bit_exact"),
            signer,
            art_id,
        })
    }
}

/// One stream's findings.
pub struct StreamReport {
    pub stream: String,
    pub packets: usize,
    pub report: Report,
}

/// Groups packets by stream and checks each stream. With `expect_count`,
/// every stream must hold exactly that many packets (P8).
pub fn check_streams(packets: Vec<PacketFacts>, expect_count: Option<usize>) -> Vec<StreamReport> {
    let mut streams: BTreeMap<Arc<str>, Vec<PacketFacts>> = BTreeMap::new();
    for p in packets {
        streams.entry(p.stream_id.clone()).or_default().push(p);
    }
    streams
        .into_iter()
        .map(|(stream, ps)| check_stream(&stream, ps, expect_count))
        .collect()
}

pub(crate) fn check_stream(
    stream: &str,
    mut ps: Vec<PacketFacts>,
    expect_count: Option<usize>,
) -> StreamReport {
    ps.sort_by(|a, b| {
        a.sequence
            .cmp(&b.sequence)
            .then_with(|| a.source.cmp(&b.source))
    });
    let mut r = Report::new(crate::kinds::packet::KIND);
    admitted_in_order(&ps, &mut r);
    p3_sequences(&ps, &mut r);
    p6_time_order(&ps, &mut r);
    p7_same_model_and_runtime(&ps, &mut r);
    p8_expected_count(&ps, expect_count, &mut r);
    one_signer(&ps, &mut r);
    StreamReport {
        stream: stream.to_owned(),
        packets: ps.len(),
        report: r,
    }
}

/// Names a few items, and how many more there are.
fn some<T: std::fmt::Display>(items: &[T]) -> String {
    const SHOWN: usize = 5;
    let mut s: Vec<String> = items.iter().take(SHOWN).map(|x| x.to_string()).collect();
    if items.len() > SHOWN {
        s.push(format!("and {} more", items.len() - SHOWN));
    }
    s.join(", ")
}

/// A packet already in a stream, as P1, P2 and P4 need it.
#[derive(Clone, Copy, Debug)]
pub struct Neighbour<'a> {
    pub packet_id: &'a str,
    pub prev_packet_id: Option<&'a str>,
    pub sequence: i64,
    pub place: Place<'a>,
}

/// Where a packet already in a stream is: an input given beside it, or an
/// entry of a log.
#[derive(Clone, Copy, Debug)]
pub enum Place<'a> {
    Given(&'a Origin),
    Logged(u64),
}

impl std::fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Given(o) => write!(f, "{o}"),
            Place::Logged(i) => write!(f, "log index {i}"),
        }
    }
}

/// What is known of the streams so far: the packets given before this
/// one (a stream checked across inputs), or logged before it (a log).
pub trait Known {
    /// The packet of `stream` with this id.
    fn named(&self, stream: &str, packet_id: &str) -> Option<Neighbour<'_>>;
    /// The packet of `stream` at this sequence.
    fn at(&self, stream: &str, sequence: i64) -> Option<Neighbour<'_>>;
}

/// P1, P2 and P4 for one packet against its stream as known so far: the
/// one place these rules are written, for a stream checked across inputs
/// and for a log, which admits a packet only where they hold (a gap, P3,
/// is a log's to allow: packets arrive out of order). Each finding names
/// the packet it conflicts with.
pub fn admit(p: &PacketFacts, known: &impl Known) -> Vec<Finding> {
    let mut out = Vec::new();
    p1_id_new(p, known, &mut out);
    p2_sequence_new(p, known, &mut out);
    p4_chain(p, known, &mut out);
    out
}

/// P1: no other packet of the stream has its id.
fn p1_id_new(p: &PacketFacts, known: &impl Known, out: &mut Vec<Finding>) {
    let s = &*p.stream_id;
    if let Some(other) = known.named(s, &p.packet_id) {
        out.push(Finding::new(
            crate::kinds::packet::rule::P1,
            "/packet_id",
            format!(
                "packet id {} is already in stream {s} ({}, sequence {})",
                p.packet_id, other.place, other.sequence
            ),
        ));
    }
}

/// P2: no other packet of the stream has its sequence.
fn p2_sequence_new(p: &PacketFacts, known: &impl Known, out: &mut Vec<Finding>) {
    let s = &*p.stream_id;
    if let Some(other) = known.at(s, p.sequence) {
        out.push(Finding::new(
            crate::kinds::packet::rule::P2,
            "/sequence",
            format!(
                "sequence {} of stream {s} is already taken ({}, packet {})",
                p.sequence, other.place, other.packet_id
            ),
        ));
    }
}

/// P4: its `prev_packet_id` is null exactly at sequence 0 and otherwise
/// names the packet at sequence - 1 (where that is known), and the packet
/// at sequence + 1 (where known) names it.
fn p4_chain(p: &PacketFacts, known: &impl Known, out: &mut Vec<Finding>) {
    let s = &*p.stream_id;
    let broken = |path: &str, why: String| {
        Finding::new(
            crate::kinds::packet::rule::P4,
            path,
            format!(
                "the chain is broken at {} (sequence {}): {why}",
                p.packet_id, p.sequence
            ),
        )
    };
    match (p.sequence, p.prev_packet_id.as_deref()) {
        (0, Some(prev)) => out.push(broken(
            "/prev_packet_id",
            format!("sequence 0 names a previous packet {prev}"),
        )),
        (0, None) => {}
        (_, None) => out.push(broken(
            "/prev_packet_id",
            "it names no previous packet".into(),
        )),
        (n, Some(prev)) => {
            if let Some(before) = known.at(s, n - 1).filter(|b| b.packet_id != prev) {
                out.push(broken(
                    "/prev_packet_id",
                    format!(
                        "it names {prev} before it, but sequence {} is {} ({})",
                        n - 1,
                        before.packet_id,
                        before.place
                    ),
                ));
            }
        }
    }
    if let Some(after) = known.at(s, p.sequence.saturating_add(1)) {
        if after.prev_packet_id != Some(&*p.packet_id) {
            out.push(broken(
                "/packet_id",
                format!(
                    "sequence {} ({}) names {} before it",
                    after.sequence,
                    after.place,
                    after.prev_packet_id.unwrap_or("none")
                ),
            ));
        }
    }
}

/// The packets of one stream (sorted by sequence), each admitted against
/// those before it ([`admit`]); each rule's findings as one, naming the
/// first and how many more.
fn admitted_in_order(ps: &[PacketFacts], r: &mut Report) {
    struct Before<'a> {
        ps: &'a [PacketFacts],
        ids: HashMap<&'a str, usize>,
        upto: usize,
    }
    impl Before<'_> {
        fn neighbour(&self, i: usize) -> Neighbour<'_> {
            let p = &self.ps[i];
            Neighbour {
                packet_id: &p.packet_id,
                prev_packet_id: p.prev_packet_id.as_deref(),
                sequence: p.sequence,
                place: Place::Given(&p.source),
            }
        }
    }
    impl Known for Before<'_> {
        fn named(&self, _: &str, id: &str) -> Option<Neighbour<'_>> {
            self.ids.get(id).map(|&i| self.neighbour(i))
        }
        fn at(&self, _: &str, sequence: i64) -> Option<Neighbour<'_>> {
            // In sequence order: found by binary search.
            let before = &self.ps[..self.upto];
            let i = before.partition_point(|q| q.sequence < sequence);
            (i < before.len() && before[i].sequence == sequence).then(|| self.neighbour(i))
        }
    }
    let mut known = Before {
        ps,
        ids: HashMap::with_capacity(ps.len()),
        upto: 0,
    };
    let mut by_rule: Vec<(&'static str, Finding, usize)> = Vec::new();
    for (i, p) in ps.iter().enumerate() {
        known.upto = i;
        for f in admit(p, &known) {
            match by_rule.iter_mut().find(|(rule, _, _)| *rule == f.rule) {
                Some((_, _, more)) => *more += 1,
                None => by_rule.push((f.rule, f, 0)),
            }
        }
        known.ids.entry(&p.packet_id).or_insert(i);
    }
    for (_, mut f, more) in by_rule {
        if more > 0 {
            f.message = format!("{}; and {more} more like it", f.message);
        }
        r.errors.push(f);
    }
}

/// P3: the sequences run from 0 with none missing.
fn p3_sequences(ps: &[PacketFacts], r: &mut Report) {
    let Some(first) = ps.first() else { return };
    if first.sequence != 0 {
        if first.sequence < 0 {
            r.error(
                crate::kinds::packet::rule::P3,
                "/sequence",
                format!(
                    "a negative sequence number: {} ({})",
                    first.sequence, first.source
                ),
            );
        } else {
            r.error(
                crate::kinds::packet::rule::P3,
                "/sequence",
                format!(
                    "the stream starts at sequence {}, not 0: {} packet(s) missing before it",
                    first.sequence, first.sequence
                ),
            );
        }
    }
    let mut missing: Vec<String> = Vec::new();
    let mut count: i64 = 0;
    for w in ps.windows(2) {
        let (a, b) = (w[0].sequence, w[1].sequence);
        if b > a + 1 {
            count += b - a - 1;
            missing.push(if b == a + 2 {
                (a + 1).to_string()
            } else {
                format!("{}-{}", a + 1, b - 1)
            });
        }
    }
    if count > 0 {
        r.error(
            crate::kinds::packet::rule::P3,
            "/sequence",
            format!(
                "{count} packet(s) dropped: sequence {} missing",
                some(&missing)
            ),
        );
    }
}

fn p6_time_order(ps: &[PacketFacts], r: &mut Report) {
    let mut last: Option<(i128, &PacketFacts)> = None;
    let mut back = Vec::new();
    for p in ps {
        if let Some(t) = p.produced_at {
            if let Some((lt, lp)) = last {
                if t < lt {
                    back.push(format!(
                        "sequence {} ({}) before sequence {}",
                        p.sequence, p.packet_id, lp.sequence
                    ));
                }
            }
            last = Some((t, p));
        }
    }
    if !back.is_empty() {
        r.warning(
            crate::kinds::packet::rule::P6,
            "/produced_at",
            format!("produced_at goes back in time: {}", some(&back)),
        );
    }
}

fn p7_same_model_and_runtime(ps: &[PacketFacts], r: &mut Report) {
    for (field, get) in [
        (
            "model_digest",
            (|p: &PacketFacts| Some(p.model_digest)) as fn(&PacketFacts) -> Option<Fingerprint>,
        ),
        ("runtime_digest", |p: &PacketFacts| p.runtime_digest),
    ] {
        let changes: Vec<String> = ps
            .windows(2)
            .filter(|w| get(&w[0]).is_some() && get(&w[1]).is_some() && get(&w[0]) != get(&w[1]))
            .map(|w| format!("at sequence {}", w[1].sequence))
            .collect();
        if !changes.is_empty() {
            r.warning(
                crate::kinds::packet::rule::P7,
                format!("/{field}"),
                format!("{field} changes within the stream {}", some(&changes)),
            );
        }
    }
}

fn p8_expected_count(ps: &[PacketFacts], expect: Option<usize>, r: &mut Report) {
    let Some(n) = expect else { return };
    if ps.len() < n {
        r.error(
            crate::kinds::packet::rule::P8,
            "/sequence",
            format!(
                "{} of {n} expected packets: {}",
                ps.len(),
                missing_of_expected(ps, n)
            ),
        );
    } else if ps.len() > n {
        r.error(
            crate::kinds::packet::rule::P8,
            "/sequence",
            format!("{} packets, more than the {n} expected", ps.len()),
        );
    }
}

/// Where the sequence numbers 0 to `n - 1` missing from `ps` (sorted by
/// sequence) lie: at the head, in the middle, at the tail. Fewer than `n`
/// packets always leave at least one missing.
fn missing_of_expected(ps: &[PacketFacts], n: usize) -> String {
    let n = n as i128;
    let range = |a: i128, b: i128| {
        if a == b {
            format!("sequence {a}")
        } else {
            format!("sequence {a}-{b}")
        }
    };
    let present: Vec<i128> = ps
        .iter()
        .map(|p| i128::from(p.sequence))
        .filter(|&q| (0..n).contains(&q))
        .collect();
    let Some((&first, &last)) = present.first().zip(present.last()) else {
        return format!("{} missing", range(0, n - 1));
    };
    let mut parts = Vec::new();
    if first > 0 {
        parts.push(format!("{} missing at the head", range(0, first - 1)));
    }
    let gaps: Vec<String> = present
        .windows(2)
        .filter(|w| w[1] > w[0] + 1)
        .map(|w| range(w[0] + 1, w[1] - 1))
        .collect();
    if !gaps.is_empty() {
        parts.push(format!("{} missing in the middle", some(&gaps)));
    }
    if last < n - 1 {
        parts.push(format!(
            "{} missing at the tail (cut off after sequence {last})",
            range(last + 1, n - 1)
        ));
    }
    parts.join("; ")
}

/// One signer per stream, and no unsigned packet among signed ones (where
/// the stream's packets came in envelopes). Warnings, naming the packets.
fn one_signer(ps: &[PacketFacts], r: &mut Report) {
    let mut signers: Vec<&str> = ps.iter().filter_map(|p| p.signer.as_deref()).collect();
    signers.sort_unstable();
    signers.dedup();
    if signers.len() > 1 {
        let first = ps.iter().find_map(|p| p.signer.as_deref()).unwrap_or("");
        let others: Vec<String> = ps
            .iter()
            .filter(|p| p.signer.as_deref().is_some_and(|s| s != first))
            .map(|p| format!("{} by {}", p.packet_id, p.signer.as_deref().unwrap_or("")))
            .collect();
        r.warning(
            crate::rule::SIGNER,
            "",
            format!(
                "the stream is signed by {} keys ({}); first {first}, then {}",
                signers.len(),
                signers.join(", "),
                some(&others)
            ),
        );
    }
    if !signers.is_empty() {
        let unsigned: Vec<String> = ps
            .iter()
            .filter(|p| p.signer.is_none())
            .map(|p| format!("{} ({})", p.packet_id, p.source))
            .collect();
        if !unsigned.is_empty() {
            r.warning(
                crate::rule::SIGNER,
                "",
                format!("unsigned packets in a signed stream: {}", some(&unsigned)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::recompute::{recompute_against_packet, RecomputeFacts};

    fn packet(seq: i64, id: &str, prev: Option<&str>) -> PacketFacts {
        PacketFacts {
            source: Origin::new(format!("p{seq}.json"), None),
            stream_id: "s".into(),
            packet_id: id.into(),
            sequence: seq,
            prev_packet_id: prev.map(Into::into),
            produced_at: Some(i128::from(seq) * 1_000_000_000),
            model_digest: Fingerprint::of("sha256:aa"),
            runtime_digest: None,
            output_digest: Fingerprint::of(&format!("sha256:{seq}")),
            bit_exact: true,
            signer: None,
            art_id: None,
        }
    }

    fn chain(n: i64) -> Vec<PacketFacts> {
        (0..n)
            .map(|i| {
                let prev = (i > 0).then(|| format!("p{}", i - 1));
                packet(i, &format!("p{i}"), prev.as_deref())
            })
            .collect()
    }

    fn rules(
        ps: Vec<PacketFacts>,
        expect: Option<usize>,
    ) -> (Vec<&'static str>, Vec<&'static str>) {
        let mut out = check_streams(ps, expect);
        assert_eq!(out.len(), 1);
        let r = out.remove(0).report;
        (
            r.errors.iter().map(|f| f.rule).collect(),
            r.warnings.iter().map(|f| f.rule).collect(),
        )
    }

    #[test]
    fn a_whole_chain_is_valid() {
        assert_eq!(rules(chain(5), None), (vec![], vec![]));
        assert_eq!(rules(chain(5), Some(5)), (vec![], vec![]));
    }

    #[test]
    fn each_rule_fires() {
        let mut ps = chain(5);
        ps[3].packet_id = "p1".into();
        assert!(rules(ps, None).0.contains(&"P1"));

        let mut ps = chain(5);
        ps[3].sequence = 2;
        let (e, _) = rules(ps, None);
        assert!(e.contains(&"P2") && e.contains(&"P3"), "{e:?}");

        let mut ps = chain(6);
        ps.remove(2);
        assert_eq!(rules(ps, None).0, vec!["P3"]);

        let mut ps = chain(5);
        ps.remove(0);
        assert!(rules(ps, None).0.contains(&"P3"));

        let mut ps = chain(5);
        ps[3].prev_packet_id = Some("p0".into());
        assert_eq!(rules(ps, None).0, vec!["P4"]);

        let mut ps = chain(5);
        ps[0].prev_packet_id = Some("x".into());
        assert_eq!(rules(ps, None).0, vec!["P4"]);

        let mut ps = chain(5);
        ps[4].produced_at = Some(0);
        assert_eq!(rules(ps, None), (vec![], vec!["P6"]));

        let mut ps = chain(5);
        ps[3].model_digest = Fingerprint::of("sha256:bb");
        assert_eq!(rules(ps, None), (vec![], vec!["P7"]));

        assert_eq!(rules(chain(3), Some(5)).0, vec!["P8"]);

        let mut ps = chain(4);
        for p in &mut ps {
            p.signer = Some("a".into());
        }
        ps[1].signer = Some("b".into());
        assert_eq!(rules(ps, None).1, vec!["signer"]);

        let mut ps = chain(4);
        for p in &mut ps {
            p.signer = Some("a".into());
        }
        ps[2].signer = None;
        let mut out = check_streams(ps, None);
        let w = &out.remove(0).report.warnings;
        assert!(
            w[0].message
                .starts_with("unsigned packets in a signed stream: p2"),
            "{w:?}"
        );
    }

    /// A log's view: packets logged at indexes, looked up by id and
    /// sequence.
    struct Logged(Vec<(u64, PacketFacts)>);

    impl Known for Logged {
        fn named(&self, _: &str, id: &str) -> Option<Neighbour<'_>> {
            self.0.iter().find(|(_, p)| &*p.packet_id == id).map(view)
        }
        fn at(&self, _: &str, sequence: i64) -> Option<Neighbour<'_>> {
            self.0
                .iter()
                .find(|(_, p)| p.sequence == sequence)
                .map(view)
        }
    }

    fn view((i, p): &(u64, PacketFacts)) -> Neighbour<'_> {
        Neighbour {
            packet_id: &p.packet_id,
            prev_packet_id: p.prev_packet_id.as_deref(),
            sequence: p.sequence,
            place: Place::Logged(*i),
        }
    }

    /// P1, P2 and P4 against what a log holds: each names the logged
    /// packet it conflicts with; a gap is no finding of admit's.
    #[test]
    fn admit_holds_a_packet_to_the_packets_known() {
        let log = Logged(
            chain(3)
                .into_iter()
                .zip(10..)
                .map(|(p, i)| (i, p))
                .collect(),
        );
        let found = |p: PacketFacts| -> Vec<(&'static str, String)> {
            admit(&p, &log)
                .into_iter()
                .map(|f| (f.rule, f.message))
                .collect()
        };
        assert!(found(packet(3, "p3", Some("p2"))).is_empty());
        assert!(found(packet(7, "p7", Some("p6"))).is_empty(), "a gap");
        assert_eq!(
            found(packet(5, "p1", Some("p4"))),
            [(
                "P1",
                "packet id p1 is already in stream s (log index 11, sequence 1)".into()
            )]
        );
        assert_eq!(
            found(packet(2, "x", Some("p1"))),
            [(
                "P2",
                "sequence 2 of stream s is already taken (log index 12, packet p2)".into()
            )]
        );
        let f = found(packet(3, "p3", Some("p0")));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].0, "P4");
        assert!(f[0].1.contains("sequence 2 is p2 (log index 12)"), "{f:?}");
        // The packet after it, logged first, names another.
        let log = Logged(vec![(4, packet(5, "p5", Some("p4")))]);
        let f: Vec<_> = admit(&packet(4, "q4", Some("p3")), &log);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message
                .contains("sequence 5 (log index 4) names p4 before it"),
            "{f:?}"
        );
        assert!(admit(&packet(0, "p0", None), &Logged(Vec::new())).is_empty());
        assert_eq!(
            admit(&packet(0, "p0", Some("z")), &Logged(Vec::new()))[0].rule,
            "P4"
        );
        assert_eq!(
            admit(&packet(1, "p1", None), &Logged(Vec::new()))[0].rule,
            "P4"
        );
    }

    #[test]
    fn a_gappy_stream_is_checked_in_n_log_n() {
        // Every other sequence missing: each P4 lookup finds no predecessor.
        let ps: Vec<PacketFacts> = (0..200_000i64)
            .map(|i| {
                packet(
                    2 * i,
                    &format!("p{}", 2 * i),
                    (i > 0).then(|| format!("p{}", 2 * i - 1)).as_deref(),
                )
            })
            .collect();
        let start = std::time::Instant::now();
        let (e, _) = rules(ps, None);
        assert_eq!(e, vec!["P3"]);
        assert!(start.elapsed().as_secs() < 10, "took {:?}", start.elapsed());
    }

    #[test]
    fn a_million_packets_with_one_missing() {
        let mut ps = chain(1_000_000);
        ps.remove(500_000);
        let start = std::time::Instant::now();
        let mut out = check_streams(ps, Some(1_000_000));
        let r = out.remove(0).report;
        let msgs: Vec<&str> = r.errors.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(r.errors.len(), 2, "{msgs:?}");
        assert_eq!(msgs[0], "1 packet(s) dropped: sequence 500000 missing");
        assert!(
            msgs[1].starts_with("999999 of 1000000 expected packets"),
            "{msgs:?}"
        );
        assert!(start.elapsed().as_secs() < 20);
    }

    #[test]
    fn recompute_results_against_their_packet() {
        let p = packet(2, "p2", Some("p1"));
        let rec = |id: &str, verdict: &str, out: &str| RecomputeFacts {
            source: Origin::new("r.json", None),
            packet: "art_x".into(),
            packet_id: id.into(),
            verdict: verdict.into(),
            output_digest_recomputed: Some(Fingerprint::of(out)),
            bit_exact: true,
        };
        assert!(recompute_against_packet(&rec("p2", "match", "sha256:2"), &p).valid());
        assert!(recompute_against_packet(&rec("p2", "mismatch", "sha256:9"), &p).valid());
        assert!(
            recompute_against_packet(&rec("p3", "match", "sha256:2"), &p)
                .breaks(crate::kinds::recompute::rule::R1)
        );
        assert!(
            recompute_against_packet(&rec("p2", "match", "sha256:9"), &p)
                .breaks(crate::kinds::recompute::rule::R2)
        );
        assert!(
            recompute_against_packet(&rec("p2", "mismatch", "sha256:2"), &p)
                .breaks(crate::kinds::recompute::rule::R2)
        );
        assert!(recompute_against_packet(&rec("p2", "inconclusive", "sha256:9"), &p).valid());
    }
}
