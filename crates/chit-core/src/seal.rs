//! The digests a receipt should carry ([`digests`]), and writing them in
//! ([`seal`]). Sealing mends only a stale digest: a run receipt's `D1`, a
//! Lattice packet's X2-X4 (its bytes and both digests); a receipt that
//! breaks any other rule is refused, naming the rules.

use crate::canon;
use crate::checked::Unreadable;
use crate::json::{self, Limits};
use crate::kinds::{executor_packet as xp, run_receipt, Kind};
use crate::lattice;
use crate::report::Report;

/// The rules sealing mends, for each kind that carries its own digest.
pub fn mended_by_seal(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::RunReceipt => &[run_receipt::rule::D1],
        Kind::LatticePacket => &[xp::rule::X2, xp::rule::X3, xp::rule::X4],
        Kind::Packet
        | Kind::Recompute
        | Kind::Lineage
        | Kind::LineageBound
        | Kind::ReasonAuthorization => &[],
    }
}

/// Why a receipt's digests cannot be given or written in.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// The input could not be read (exit 2).
    #[error("{0}")]
    Unreadable(Unreadable),
    /// The input declares no kind chit knows (exit 2).
    #[error("not a receipt chit recognises")]
    UnknownKind,
    /// A run receipt's top level is not an object (exit 2).
    #[error("not a JSON object")]
    NotAnObject,
    /// This kind carries no digest of its own (exit 2).
    #[error("a {} carries no digest of its own (its envelope's art id names it)", .0.name())]
    NoDigest(Kind),
    /// It breaks rules sealing does not mend (exit 1).
    #[error("it breaks {}", .0.join(", "))]
    Breaks(Vec<&'static str>),
    /// Lattice's profile refuses the packet (exit 1).
    #[error("{0}")]
    Refused(lattice::Error),
    /// The sealed bytes did not verify: a fault in chit, nothing is written (exit 2).
    #[error("sealing did not give a valid receipt; nothing was written")]
    NotValidAfterSealing,
}

impl SealError {
    /// Whether the input breaks a rule (exit 1) rather than being unreadable
    /// or not sealable at all (exit 2).
    pub fn is_invalid(&self) -> bool {
        matches!(self, SealError::Breaks(_) | SealError::Refused(_))
    }
}

/// Digests by the name of the member that carries each.
pub type Digests = Vec<(&'static str, String)>;

/// The digests `input` should carry, by name: a run receipt's `digest`, a
/// Lattice packet's `context_content_digest` and `packet_digest`.
pub fn digests(
    input: &[u8],
    kind: Option<Kind>,
    limits: &Limits,
) -> Result<(Kind, Digests), SealError> {
    if let Some(v) = lattice_packet(input, kind)? {
        let (context, packet) = xp::sealed_digests(&v).map_err(SealError::Refused)?;
        return Ok((
            Kind::LatticePacket,
            vec![
                ("context_content_digest", context),
                ("packet_digest", packet),
            ],
        ));
    }
    let doc = json::parse(input, limits).map_err(|e| SealError::Unreadable(Unreadable::Json(e)))?;
    let kind = kind
        .or_else(|| Kind::detect(&doc))
        .ok_or(SealError::UnknownKind)?;
    match kind {
        Kind::RunReceipt => run_receipt::digest(doc.root())
            .map(|d| (kind, vec![("digest", d)]))
            .ok_or(SealError::NotAnObject),
        k => Err(SealError::NoDigest(k)),
    }
}

/// A sealed receipt: the bytes to write, its kind, and the digest to report
/// (`sha256:…`, or `packet_digest sha256:…` for a Lattice packet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sealed {
    pub bytes: Vec<u8>,
    pub kind: Kind,
    pub digest: String,
}

/// Checks `input`, then writes its digests in. A run receipt keeps every
/// byte but its digest's (formatting, key order and number spellings stay
/// as written); a Lattice packet is rewritten as its canonical bytes and one
/// LF. The sealed bytes are checked again, and never returned unless valid.
pub fn seal(input: &[u8], kind: Option<Kind>, limits: &Limits) -> Result<Sealed, SealError> {
    if let Some(v) = lattice_packet(input, kind)? {
        return seal_lattice(&v);
    }
    let doc = json::parse(input, limits).map_err(|e| SealError::Unreadable(Unreadable::Json(e)))?;
    let kind = kind
        .or_else(|| Kind::detect(&doc))
        .ok_or(SealError::UnknownKind)?;
    refuse_broken(&kind.check(&doc), kind)?;
    let d = kind.digest(&doc).ok_or(SealError::NoDigest(kind))?;
    let mut value = Vec::new();
    canon::write_string(&d, &mut value);
    let sealed = std::str::from_utf8(&value)
        .ok()
        .and_then(|v| crate::edit::set_top_level_member(input, "digest", v))
        .ok_or(SealError::NotAnObject)?;
    let valid = json::parse(&sealed, limits).is_ok_and(|d| kind.check(&d).valid());
    if !valid {
        return Err(SealError::NotValidAfterSealing);
    }
    Ok(Sealed {
        bytes: sealed,
        kind,
        digest: d,
    })
}

/// A Lattice packet: both digests set, written as its canonical bytes.
fn seal_lattice(v: &lattice::Value) -> Result<Sealed, SealError> {
    let before = xp::check_value(v, None, crate::facts::Origin::unknown()).report;
    refuse_broken(&before, Kind::LatticePacket)?;
    let sealed = xp::seal(v).map_err(SealError::Refused)?;
    let again = xp::check_bytes(&sealed, crate::facts::Origin::unknown());
    if !again.as_ref().is_ok_and(|c| c.report.valid()) {
        return Err(SealError::NotValidAfterSealing);
    }
    let digest = lattice::parse(&sealed)
        .ok()
        .and_then(|s| s.get("packet_digest").and_then(|d| d.as_text()))
        .ok_or(SealError::NotValidAfterSealing)?;
    Ok(Sealed {
        bytes: sealed,
        kind: Kind::LatticePacket,
        digest: format!("packet_digest {digest}"),
    })
}

/// Refuses a receipt that breaks any rule but those sealing mends, naming
/// the rules.
fn refuse_broken(report: &Report, kind: Kind) -> Result<(), SealError> {
    let mended = mended_by_seal(kind);
    let mut broken: Vec<&'static str> = report
        .errors
        .iter()
        .map(|f| f.rule)
        .filter(|r| !mended.contains(r))
        .collect();
    broken.sort_unstable();
    broken.dedup();
    if broken.is_empty() {
        Ok(())
    } else {
        Err(SealError::Breaks(broken))
    }
}

/// The input as a Lattice executor packet, when it is one (or `kind` says
/// so): read under Lattice's profile, which keeps lone surrogates.
fn lattice_packet(input: &[u8], kind: Option<Kind>) -> Result<Option<lattice::Value>, SealError> {
    let forced = kind == Some(Kind::LatticePacket);
    if kind.is_some() && !forced {
        return Ok(None);
    }
    xp::recognise(input, forced, usize::MAX)
        .transpose()
        .map_err(|e| SealError::Unreadable(Unreadable::Lattice(e)))
}
