//! What a checked input leaves for the checks across inputs, and where
//! it came from: plain data, imported by every kind that makes it and by
//! [`crate::across`], which reads it. It imports no kind.

use crate::report::Status;
use sha2::{Digest, Sha256};
use std::fmt;
use std::sync::Arc;

/// Where a document came from: a file, and its line in JSON Lines. The file
/// name is shared by every line of the file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin {
    pub file: Arc<str>,
    pub line: Option<usize>,
}

impl Origin {
    pub fn new(file: impl Into<Arc<str>>, line: Option<usize>) -> Origin {
        Origin {
            file: file.into(),
            line,
        }
    }

    /// The origin of facts not yet fed to an [`Across`], which names it.
    pub(crate) fn unknown() -> Origin {
        Origin::new("", None)
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(n) => write!(f, "{}:{n}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// What the checks across inputs need of one input: a packet, a recompute
/// result or a Lattice executor packet.
#[derive(Clone, Debug)]
pub enum Facts {
    Packet(PacketFacts),
    Recompute(RecomputeFacts),
    /// A Lattice executor packet, for epoch rebinds (X6).
    Rebind(RebindFacts),
    /// A Treeship store's `index.json`, against the records beside it.
    Index(IndexFacts),
    /// A Treeship session package, against its signed session record and
    /// artifacts.
    Session(Box<SessionFacts>),
    /// A file of log bundles: its entries' own, and the lineage order
    /// still to prove across files.
    Bundle(Box<BundleFacts>),
    /// A Verifiable Intent credential, against the layer above it.
    Intent(Box<crate::kinds::intent::IntentFacts>),
}

/// A value the stream rules compare but never show (a digest): the first
/// 16 bytes of its SHA-256. Two different values share a fingerprint only
/// after about 2^64 work, and a fingerprint is 16 bytes where the digest
/// string it stands for takes about a hundred.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 16]);

impl Fingerprint {
    pub fn of(s: &str) -> Fingerprint {
        let sum = Sha256::digest(s.as_bytes());
        let mut out = [0u8; 16];
        out.copy_from_slice(&sum[..16]);
        Fingerprint(out)
    }
}

/// What the stream rules need of one (schema-valid) packet: kept for every
/// packet until its stream is checked, so kept small (about 300 bytes).
#[derive(Clone, Debug)]
pub struct PacketFacts {
    pub source: Origin,
    pub stream_id: Arc<str>,
    pub packet_id: Box<str>,
    pub sequence: i64,
    pub prev_packet_id: Option<Box<str>>,
    pub produced_at: Option<i128>,
    pub model_digest: Fingerprint,
    pub runtime_digest: Option<Fingerprint>,
    pub output_digest: Fingerprint,
    /// Whether it claims `reproducibility: bit_exact`.
    pub bit_exact: bool,
    /// The name of the trusted key that signed its envelope, if any.
    pub signer: Option<Arc<str>>,
    /// The art id of its envelope, if it came in one.
    pub art_id: Option<Box<str>>,
}

/// What the cross-checks need of one (schema-valid) recompute result.
#[derive(Clone, Debug)]
pub struct RecomputeFacts {
    pub source: Origin,
    /// The art id of the packet receipt it checks (`packet`).
    pub packet: String,
    pub packet_id: String,
    pub verdict: String,
    pub output_digest_recomputed: Option<Fingerprint>,
    /// Whether its `method` is `bit_exact`: its digest is then compared
    /// with the packet's, whatever the packet claims.
    pub bit_exact: bool,
}

/// What X6 needs of one packet.
#[derive(Clone, Debug)]
pub struct RebindFacts {
    pub source: Origin,
    pub todo_id: String,
    pub packet_id: String,
    pub plan_ref: String,
    pub plan_epoch: Option<u64>,
    pub context_content_digest: Option<String>,
    /// Whether the packet is valid on its own (X1-X4).
    pub valid: bool,
}

/// What the checks across inputs need of one signed artifact (an envelope,
/// a store record, an export).
#[derive(Clone, Debug)]
pub struct ArtifactFacts {
    pub art_id: Box<str>,
    /// SHA-256 of its PAE (the art id is its first 16 bytes, in hex).
    pub sha256: [u8; 32],
    /// Its payload type, shared by all artifacts of the type once an
    /// [`crate::across::Across`] holds it.
    pub payload_type: Arc<str>,
    /// The parent its signed statement names explicitly (`parentId`, or
    /// `parent_id`): the chain's edge for a bare envelope.
    pub parent: Option<Box<str>>,
    /// Where it came from as a store record: the record's own `parent_id`
    /// (the edge `treeship verify` walks; checked against the signed one)
    /// and `signed_at`.
    pub record: Option<Box<RecordFacts>>,
    /// What a `session.v1` statement (a closed session's signed record)
    /// says of its session package.
    pub session: Option<Box<SessionClaim>>,
    /// It travels alone (a `treeship receipt export`, a member of an export
    /// bundle: not the chain above it), so a parent it names outside the
    /// inputs is said, not an error.
    pub alone: bool,
    /// A session participant's or an invitation's part in a join.
    pub role: Option<Box<Role>>,
    pub source: Origin,
}

/// What a join is checked by across inputs: a participant's countersign is
/// by its invitation's issuer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// A session participant: the trusted key that countersigned it, the
    /// invitation it redeems and the session it joins.
    Participant {
        host: [u8; 32],
        invitation: Box<str>,
        session: Box<str>,
    },
    /// An invitation, signed by the issuer it names, to a session.
    Invitation { issuer: [u8; 32], session: Box<str> },
}

#[derive(Clone, Debug)]
pub struct RecordFacts {
    pub parent_id: Option<String>,
    pub signed_at: Option<String>,
}

/// A `session.v1` statement's claims about its package.
#[derive(Clone, Debug)]
pub struct SessionClaim {
    pub session_id: String,
    /// `sha256:` of the package's `receipt.json` bytes.
    pub receipt_digest: Option<String>,
    /// The package's Merkle root (`mroot_<hex>`).
    pub merkle_root: Option<String>,
}

impl ArtifactFacts {
    /// Its digest, `sha256:` and 64 hex digits.
    pub fn digest(&self) -> String {
        format!("sha256:{}", crate::digest::hex(&self.sha256))
    }

    /// The parent the chain follows: a record's `parent_id`, else the
    /// statement's explicit one (a participant's: its invitation).
    pub fn edge(&self) -> Option<&str> {
        match (&self.record, self.role.as_deref()) {
            (Some(r), _) => r.parent_id.as_deref(),
            (None, Some(Role::Participant { invitation, .. })) => Some(invitation),
            (None, _) => self.parent.as_deref(),
        }
    }
}

/// A store's `index.json`: each entry as Treeship writes it.
#[derive(Clone, Debug)]
pub struct IndexFacts {
    pub entries: Vec<IndexEntry>,
    pub source: Origin,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    pub id: String,
    pub payload_type: String,
    pub signed_at: String,
    pub parent_id: Option<String>,
}

/// What the checks across inputs need of a package.
#[derive(Clone, Debug)]
pub struct SessionFacts {
    pub session_id: String,
    /// `sha256:` of `receipt.json`'s bytes (none when checked without them).
    pub receipt_digest: Option<String>,
    pub merkle_root: Option<String>,
    pub artifacts: Vec<Listed>,
    /// The envelopes the package seals beside its receipt (its close
    /// record, its artifacts' copies), checked: they stand among the inputs
    /// as a bundle's entries do (`PKG/artifacts/…`).
    pub carried: Vec<Entry>,
    /// Under a redaction the producer signed for this package: the
    /// artifacts it withholds, and the receipt digest it was redacted
    /// from (what the close record signs).
    pub withheld: Vec<String>,
    pub redacted_from: Option<String>,
    pub source: Origin,
}

/// One artifact a session receipt lists.
#[derive(Clone, Debug)]
pub struct Listed {
    pub artifact_id: String,
    pub payload_type: String,
    pub digest: Option<String>,
    pub signed_at: Option<String>,
    /// Sealed outside the chain (`unchained`): no parent link to check.
    pub unchained: bool,
}

/// What a file of bundles leaves for the checks across inputs: each
/// entry's, and the lineage order still to prove.
#[derive(Clone, Debug, Default)]
pub struct BundleFacts {
    pub entries: Vec<Entry>,
    pub lineage: LineageFacts,
}

/// One entry of a file of bundles, checked: where it is in the file
/// (`/N` where the file holds several, else empty), its status and what
/// it leaves for the checks across inputs.
#[derive(Clone, Debug)]
pub struct Entry {
    pub at: String,
    pub status: Status,
    pub facts: Option<Facts>,
    pub artifact: Option<ArtifactFacts>,
}

/// The lineage order across files: the bounds a file's bundles log (their
/// digest and log index), and its receipts whose bound was not in the
/// same file (their bound's digest and their own log index).
#[derive(Clone, Debug, Default)]
pub struct LineageFacts {
    pub bounds: Vec<(String, u64)>,
    pub waiting: Vec<(String, u64)>,
}
