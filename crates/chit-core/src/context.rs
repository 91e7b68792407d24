//! What the caller knows beyond the input: a leaf every kind reads and
//! none writes back into.

use crate::doc::Val;
use crate::json::Limits;
use crate::kind::Kind;
use crate::kinds::numeric_lineage::transcript::Transcript;
use crate::trust::Trust;

/// What the caller knows beyond the input. `Context::default()` checks an
/// input alone, as its kind declares it, under the default limits.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    /// The kind to check the input as (`--kind`), instead of the one it declares.
    pub kind: Option<Kind>,
    pub limits: Limits,
    /// The keys trusted to sign (`--trust`).
    pub trust: Option<&'a Trust>,
    /// How many distinct trusted keys must sign an envelope (at least 1).
    pub threshold: usize,
    /// The art id an envelope was filed under (its file name's), if any.
    pub expected_art: Option<&'a str>,
    /// A numeric lineage receipt's transcript (`--transcript`): L13-L15.
    pub transcript: Option<&'a Transcript>,
    /// A Reason request, `zerker.reason.action.v1` (`--request`): A5.
    pub request: Option<Val<'a>>,
    /// The concrete call `{tool, arguments}` about to run (`--call`): A6.
    pub call: Option<Val<'a>>,
    /// A Reason certificate is valid only when its status is `authorized`.
    pub require_authorized: bool,
    /// Under a trust file, a document that no key signed at all (no
    /// envelope, no signature of its own) is held to its own rules
    /// instead of failing the threshold (`--accept-unsigned`). A document
    /// that carries a signature is held to the trust file whatever this
    /// says.
    pub accept_unsigned: bool,
    /// Inputs chit could check only in part (signed with a payload not
    /// checked, or unchecked) pass (`--allow-unchecked`): for the checks
    /// across inputs, whose members must pass ([`crate::report::Status::passes`]).
    pub allow_unchecked: bool,
    /// The keys a log bundle is proven with (`--log-key`, `--witness`): a
    /// bundle is proven logged, then its entry checked
    /// ([`crate::kinds::log_bundle`]). Without them a bundle cannot be proven.
    pub log: Option<&'a LogKeys>,
    /// Every input must be a log bundle (`chit verify --log-key`).
    pub bundles_only: bool,
    /// A C2SP tlog-proof that the input was logged (`chit verify --proof`):
    /// proven under [`Context::log`]'s policy, its leaf the input's exact
    /// bytes ([`crate::kinds::log_bundle::prove`]).
    pub proof: Option<&'a chit_log::proof::TlogProof>,
}

impl Default for Context<'_> {
    fn default() -> Self {
        Context {
            kind: None,
            limits: Limits::default(),
            trust: None,
            threshold: 1,
            expected_art: None,
            transcript: None,
            request: None,
            call: None,
            require_authorized: false,
            accept_unsigned: false,
            allow_unchecked: false,
            log: None,
            bundles_only: false,
            proof: None,
        }
    }
}

/// What bundles and proofs are proven with: a C2SP tlog-policy (the logs'
/// keys, the witnesses and the quorum), read from `--policy` or stated by
/// the shorthands `--log-key`, `--witness` and `--min-witnesses`.
pub struct LogKeys {
    pub policy: chit_log::policy::Policy,
}
