//! The receipt kinds chit knows, by name: a leaf every kind's module
//! takes its own name from ([`crate::kinds`] holds what each kind checks).

/// A receipt kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Run receipts, version 0.1 (`receiptVersion: "0.1"`).
    RunReceipt,
    /// Treeship's `verification.packet.v1` (`schema` names it).
    Packet,
    /// Treeship's `verification.recompute.v1` (`schema` names it).
    Recompute,
    /// `numeric.lineage` (`signed_body.receipt_type` names it).
    Lineage,
    /// A committed divergence bound, `numeric.lineage.bound.v1` (`schema`
    /// names it): what a receipt log holds to prove it came first.
    LineageBound,
    /// Lattice's `lattice.executor_packet.v1` (`schema` names it).
    LatticePacket,
    /// Zerker Reason's `zerker.reason.authorization.v1` certificates, alone
    /// or in a `zerker.reason.authorization-bundle.v1` (`schema` names it).
    ReasonAuthorization,
}

impl Kind {
    pub const ALL: &'static [Kind] = &[
        Kind::RunReceipt,
        Kind::Packet,
        Kind::Recompute,
        Kind::Lineage,
        Kind::LineageBound,
        Kind::LatticePacket,
        Kind::ReasonAuthorization,
    ];

    /// The name chit reports and `--kind` takes.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::RunReceipt => "run-receipt",
            Kind::Packet => "verification.packet.v1",
            Kind::Recompute => "verification.recompute.v1",
            Kind::Lineage => "numeric.lineage",
            Kind::LineageBound => "numeric.lineage.bound.v1",
            Kind::LatticePacket => "lattice.executor_packet.v1",
            Kind::ReasonAuthorization => "zerker.reason.authorization.v1",
        }
    }
}

impl Kind {
    /// The name Treeship's predicate registry gives this kind as a receipt
    /// statement's `kind`, where it differs from chit's: Treeship 0.32
    /// registers a Zerker Reason certificate as `reason.authorization.v1`.
    pub const fn treeship_name(self) -> Option<&'static str> {
        match self {
            Kind::ReasonAuthorization => Some("reason.authorization.v1"),
            _ => None,
        }
    }

    /// Whether `name` is this kind's name, chit's or Treeship's.
    pub fn is_named(self, name: &str) -> bool {
        self.name() == name || self.treeship_name() == Some(name)
    }
}

/// The kind a report gives a signed envelope whose payload is of no kind
/// chit knows (its signatures checked, its payload not).
pub const ENVELOPE: &str = "envelope";
