//! Signed packet streams: one-line DSSE envelopes for the envelope
//! benchmark.

use serde_json::{json, Value};

/// Packet `seq` of a stream, signed with `key` into a one-line DSSE envelope
/// carrying a Treeship receipt statement.
pub fn signed_packet(key: &chit_core::keys::SecretKey, stream: &str, seq: u64) -> String {
    let digest = |tag: u64| format!("sha256:{:064x}", tag);
    let prev = if seq == 0 {
        Value::Null
    } else {
        format!("pkt-{}", seq - 1).into()
    };
    let statement = json!({
        "type": "treeship/receipt/v1",
        "timestamp": "2026-11-30T09:00:00Z",
        "system": "system://bench",
        "kind": "verification.packet.v1",
        "payload": {
            "schema": "verification.packet.v1",
            "packet_id": format!("pkt-{seq}"),
            "stream_id": stream,
            "sequence": seq,
            "prev_packet_id": prev,
            "model_digest": digest(0xa1),
            "input_digest": digest(seq * 2),
            "output_digest": digest(seq * 2 + 1),
            "reproducibility": "bit_exact",
            "produced_at": chit_core::time::format_unix_utc(1_796_025_600 + seq),
            "token_count": 17
        }
    });
    let env = chit_core::envelope::Envelope::sign(
        chit_core::envelope::TREESHIP_RECEIPT,
        serde_json::to_vec(&statement).expect("a Value serialises"),
        key,
    );
    let compact: Value = serde_json::from_str(&env.to_json()).expect("an envelope reads back");
    compact.to_string()
}
