//! `verification.packet.v1`: one packet of a prover's stream. The rules a
//! packet meets alone are here (schema, P5, P6's time check); the rules of
//! a stream (P1-P4, P6's order, P7, P8) are in [`stream`].

use crate::doc::Val;
use crate::report::Report;
use crate::schema;
use crate::time::is_rfc3339;

pub mod stream;

pub const KIND: &str = crate::kind::Kind::Packet.name();

/// The rule ids of `verification.packet.v1`, a packet's and a stream's
/// ([`stream`] checks P1-P4, P6's order, P7 and P8), and the
/// schema's.
pub mod rule {
    pub use crate::rule::SCHEMA;

    /// No two packets of a stream share a `packet_id`.
    pub const P1: &str = "P1";
    /// No two packets of a stream share a `sequence`.
    pub const P2: &str = "P2";
    /// Sequences run from 0 with none missing (and each is within 0 to
    /// 2^53, where doubles still tell them apart).
    pub const P3: &str = "P3";
    /// Each `prev_packet_id` names the packet before it: the chain is whole.
    pub const P4: &str = "P4";
    /// Each digest is `<alg>:<hex>` with as many lower-case hex digits as
    /// the algorithm gives (an unknown algorithm is a warning).
    pub const P5: &str = "P5";
    /// (Warning) `produced_at` is an RFC 3339 time, and never goes back
    /// within a stream.
    pub const P6: &str = "P6";
    /// (Warning) `model_digest` and `runtime_digest` stay the same within a
    /// stream.
    pub const P7: &str = "P7";
    /// With `--expect-count`, a stream holds exactly that many packets.
    pub const P8: &str = "P8";
}

/// The digest fields a packet may carry.
pub const DIGESTS: [&str; 5] = [
    "model_digest",
    "input_digest",
    "output_digest",
    "sampler_digest",
    "runtime_digest",
];

pub fn check(v: Val) -> Report {
    let mut r = Report::new(KIND);
    if !schema::PACKET.check(v, &mut r) {
        return r;
    }
    for field in DIGESTS {
        if let Some(d) = v.get(field).and_then(|d| d.as_str()) {
            p5_digest_form(field, d, &mut r);
        }
    }
    if let Some(seq) = v.get("sequence").and_then(|s| s.as_f64()) {
        // Beyond 2^53 two sequence numbers can be the same double.
        if !(0.0..=9_007_199_254_740_992.0).contains(&seq) {
            r.error(
                rule::P3,
                "/sequence",
                format!("sequence {seq} is outside 0 to 2^53"),
            );
        }
    }
    if let Some(t) = v.get("produced_at").and_then(|t| t.as_str()) {
        if !is_rfc3339(t) {
            r.warning(
                rule::P6,
                "/produced_at",
                format!("produced_at is not an RFC 3339 time: {t}"),
            );
        }
    }
    r
}

/// P5: `<alg>:<hex>` with as many lower-case hex digits as the algorithm
/// gives; an algorithm chit does not know is a warning.
fn p5_digest_form(field: &str, d: &str, r: &mut Report) {
    let path = format!("/{field}");
    let Some((alg, hex)) = d.split_once(':') else {
        r.error(
            rule::P5,
            path,
            format!("{field} is not of the form <alg>:<hex>"),
        );
        return;
    };
    let want = match alg {
        "sha256" | "blake3" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => {
            r.warning(
                rule::P5,
                path,
                format!("{field} uses the algorithm {alg}, which chit does not know"),
            );
            return;
        }
    };
    if hex.len() != want
        || !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        r.error(
            rule::P5,
            path,
            format!("{field} must be {alg}: and {want} lower-case hex digits"),
        );
    }
}
