//! Packet streams across the log: a packet is refused when, with every
//! packet already logged (and those before it in its batch), its stream
//! would break P1 (a packet id twice), P2 (a sequence twice) or P4 (the
//! chain: `prev_packet_id` null exactly at sequence 0, and otherwise the
//! id of the packet at sequence − 1, where that packet is logged). A gap
//! (P3) is allowed: packets arrive out of order, and `chit log audit`
//! reports the gaps that remain.

use crate::store::PacketRow;
#[cfg(doc)]
use crate::store::Store;
use chit_core::kinds::packet::rule;
use chit_core::kinds::packet::stream::PacketFacts;
use chit_core::Report;
use std::collections::HashMap;

/// Where a batch's logged neighbours are: `(stream, sequence)` places and
/// `(stream, packet id)` names ([`StreamCheck::keys`]).
pub struct PacketKeys {
    pub at: Vec<(String, i64)>,
    pub named: Vec<(String, String)>,
}

/// The packets of one batch, checked in order against the log and each
/// other. Rows are kept by stream, then by sequence and by packet id, so a
/// packet's neighbours are looked up without building a key.
pub struct StreamCheck {
    by_seq: HashMap<String, HashMap<i64, PacketRow>>,
    by_id: HashMap<String, HashMap<String, PacketRow>>,
}

impl StreamCheck {
    /// The places of every logged packet the batch's rules may need: at
    /// each packet's sequence and its neighbours (`(stream, sequence)`),
    /// and by its id (`(stream, packet id)`), each once. Read them with
    /// [`Store::lookup`] and give the rows to [`StreamCheck::from_rows`].
    pub fn keys(packets: &[&PacketFacts]) -> PacketKeys {
        let mut at = Vec::with_capacity(packets.len() * 3);
        let mut named = Vec::with_capacity(packets.len());
        for p in packets {
            for d in [-1i64, 0, 1] {
                at.push((p.stream_id.to_string(), p.sequence.saturating_add(d)));
            }
            named.push((p.stream_id.to_string(), p.packet_id.to_string()));
        }
        // A stream's packets usually arrive in order, so the neighbours of
        // one are the places of the next: each place is read once.
        at.sort_unstable();
        at.dedup();
        named.sort_unstable();
        named.dedup();
        PacketKeys { at, named }
    }

    /// The check over the logged packets read at [`StreamCheck::keys`].
    pub fn from_rows(rows: Vec<PacketRow>) -> Self {
        let mut check = StreamCheck {
            by_seq: HashMap::new(),
            by_id: HashMap::new(),
        };
        for row in rows {
            check.remember(row);
        }
        check
    }

    fn remember(&mut self, row: PacketRow) {
        let ids = match self.by_id.get_mut(&row.stream_id) {
            Some(m) => m,
            None => self.by_id.entry(row.stream_id.clone()).or_default(),
        };
        ids.insert(row.packet_id.clone(), row.clone());
        let seqs = match self.by_seq.get_mut(&row.stream_id) {
            Some(m) => m,
            None => self.by_seq.entry(row.stream_id.clone()).or_default(),
        };
        seqs.insert(row.sequence, row);
    }

    /// The row at `(stream, sequence)`, if logged or admitted.
    fn at(&self, stream: &str, sequence: i64) -> Option<&PacketRow> {
        self.by_seq.get(stream)?.get(&sequence)
    }

    /// The row of `(stream, packet id)`, if logged or admitted.
    fn named(&self, stream: &str, id: &str) -> Option<&PacketRow> {
        self.by_id.get(stream)?.get(id)
    }

    /// Checks one packet at log index `index`; when it passes, it counts for
    /// the packets after it. The findings name the logged packet it
    /// conflicts with.
    pub fn admit(&mut self, p: &PacketFacts, index: u64) -> Result<PacketRow, Report> {
        let mut r = Report::new(chit_core::kinds::packet::KIND);
        let s = &*p.stream_id;
        if let Some(other) = self.named(s, &p.packet_id) {
            r.error(
                rule::P1,
                "/packet_id",
                format!(
                    "packet id {} is already logged in stream {s} (log index {}, sequence {})",
                    p.packet_id, other.index, other.sequence
                ),
            );
        }
        if let Some(other) = self.at(s, p.sequence) {
            r.error(
                rule::P2,
                "/sequence",
                format!(
                    "sequence {} of stream {s} is already logged (log index {}, packet {})",
                    p.sequence, other.index, other.packet_id
                ),
            );
        }
        match (p.sequence, p.prev_packet_id.as_deref()) {
            (0, Some(prev)) => r.error(
                rule::P4,
                "/prev_packet_id",
                format!("sequence 0 names a previous packet {prev}"),
            ),
            (0, None) => {}
            (n, None) => r.error(
                rule::P4,
                "/prev_packet_id",
                format!("sequence {n} names no previous packet"),
            ),
            (n, Some(prev)) => {
                if let Some(before) = self.at(s, n - 1) {
                    if before.packet_id != prev {
                        r.error(
                            rule::P4,
                            "/prev_packet_id",
                            format!(
                                "names {prev} before it, but sequence {} of stream {s} is {} (log index {})",
                                n - 1,
                                before.packet_id,
                                before.index
                            ),
                        );
                    }
                }
            }
        }
        if let Some(after) = self.at(s, p.sequence.saturating_add(1)) {
            if after.prev_packet_id.as_deref() != Some(&*p.packet_id) {
                r.error(
                    rule::P4,
                    "/packet_id",
                    format!(
                        "sequence {} of stream {s} (log index {}) names {} before it, not {}",
                        after.sequence,
                        after.index,
                        after.prev_packet_id.as_deref().unwrap_or("none"),
                        p.packet_id
                    ),
                );
            }
        }
        if !r.errors.is_empty() {
            return Err(r);
        }
        let row = PacketRow {
            stream_id: s.to_string(),
            sequence: p.sequence,
            packet_id: p.packet_id.to_string(),
            prev_packet_id: p.prev_packet_id.as_deref().map(str::to_string),
            index,
        };
        self.remember(row.clone());
        Ok(row)
    }
}
