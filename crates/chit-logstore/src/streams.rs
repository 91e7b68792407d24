//! Packet streams across the log: a packet is refused when, with every
//! packet already logged (and those before it in its batch), its stream
//! would break P1, P2 or P4, as the core's [`stream::admit`] says (the
//! rules a stream checked across inputs is held to, the same words). A
//! gap (P3) is allowed: packets arrive out of order, and `chit log audit`
//! reports the gaps that remain. This module only finds a packet's logged
//! neighbours.

#[cfg(doc)]
use crate::store::Index;
use crate::store::PacketRow;
use chit_core::kinds::packet::stream::{self, Known, Neighbour, PacketFacts, Place};
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
    /// [`Index::lookup`] and give the rows to [`StreamCheck::from_rows`].
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

    /// Checks one packet at log index `index` ([`stream::admit`], against
    /// the packets logged and admitted before it); when it passes, it
    /// counts for the packets after it.
    pub fn admit(&mut self, p: &PacketFacts, index: u64) -> Result<PacketRow, Report> {
        let findings = stream::admit(p, self);
        if !findings.is_empty() {
            return Err(Report {
                errors: findings,
                ..Report::new(chit_core::kinds::packet::KIND)
            });
        }
        let row = PacketRow {
            stream_id: p.stream_id.to_string(),
            sequence: p.sequence,
            packet_id: p.packet_id.to_string(),
            prev_packet_id: p.prev_packet_id.as_deref().map(str::to_string),
            index,
        };
        self.remember(row.clone());
        Ok(row)
    }
}

impl Known for StreamCheck {
    fn named(&self, stream: &str, packet_id: &str) -> Option<Neighbour<'_>> {
        self.by_id.get(stream)?.get(packet_id).map(neighbour)
    }

    fn at(&self, stream: &str, sequence: i64) -> Option<Neighbour<'_>> {
        self.by_seq.get(stream)?.get(&sequence).map(neighbour)
    }
}

/// A logged (or admitted) packet's row, as the stream rules read it.
fn neighbour(row: &PacketRow) -> Neighbour<'_> {
    Neighbour {
        packet_id: &row.packet_id,
        prev_packet_id: row.prev_packet_id.as_deref(),
        sequence: row.sequence,
        place: Place::Logged(row.index),
    }
}
