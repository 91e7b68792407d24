//! The one entry point: what an input is, and every check that applies to
//! it. The command line, the log and the server all call [`check`] and only
//! read, render and store around it, so they give the same verdicts.
//!
//! The steps, in order:
//!
//! 1. `lattice`: a Lattice executor packet (its `schema` names the kind, or
//!    `--kind` says so) is checked on its own bytes, under Lattice's
//!    canonical profile, which keeps lone surrogates the strict reader
//!    refuses ([`crate::kinds::executor_packet`]);
//! 2. `read`: anything else goes through the strict reader ([`crate::json`]);
//! 3. `envelope`: a DSSE envelope is checked as a signed Treeship statement
//!    ([`crate::statement`]), its payload under step 4;
//! 4. `kind`: a document (or a statement's payload) is checked under its
//!    kind's schema and rules, with everything the [`Context`] adds: the
//!    trust file for a lineage receipt's key, its transcript (L13-L15), a
//!    Reason request and call (A5, A6) and `require_authorized`.
//!
//! Checks across inputs (streams, recompute results, rebinds) need every
//! input: each [`Checked`] carries its [`Facts`] for an
//! [`crate::across::Across`].

use crate::across::{Facts, Origin};
use crate::doc::{Doc, Val};
use crate::json::{self, Limits, ReadError};
use crate::keys::PublicKey;
use crate::kinds::{self, executor_packet, numeric_lineage, reason, Kind};
use crate::lattice;
use crate::report::{Report, Status};
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
    pub transcript: Option<&'a numeric_lineage::transcript::Transcript>,
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
    /// across inputs, whose members must pass ([`Status::passes`]).
    pub allow_unchecked: bool,
    /// The keys a log bundle is proven with (`--log-key`, `--witness`): a
    /// bundle is proven logged, then its entry checked
    /// ([`kinds::log_bundle`]). Without them a bundle cannot be proven.
    pub log: Option<&'a kinds::log_bundle::LogKeys>,
    /// Every input must be a log bundle (`chit verify --log-key`).
    pub bundles_only: bool,
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
        }
    }
}

/// What checking one readable input found.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The verdict: its kind, errors and warnings.
    pub report: Report,
    /// A signed input's art id.
    pub artifact_id: Option<String>,
    /// The kind a signed statement names, as written.
    pub statement_kind: Option<String>,
    /// What the checks across inputs need of it.
    pub facts: Option<Facts>,
    /// A signed artifact's art id, parent and claims, for the checks across
    /// inputs (parent chains, a store's index, a session package).
    pub artifact: Option<crate::treeship::ArtifactFacts>,
}

impl Checked {
    /// Its status: its report's.
    pub fn status(&self) -> Status {
        self.report.status()
    }

    /// A verdict with nothing more to tell.
    pub fn of(report: Report) -> Checked {
        Checked {
            report,
            artifact_id: None,
            statement_kind: None,
            facts: None,
            artifact: None,
        }
    }
}

/// Why an input could not be read (chit's exit status 2): not a verdict on
/// a receipt, but no verdict at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unreadable {
    /// The strict reader refused it.
    #[error("{0}")]
    Json(ReadError),
    /// Lattice's reader refused a Lattice packet.
    #[error("{0}")]
    Lattice(lattice::Error),
}

impl Unreadable {
    /// The reader's limit this input passed, if that is why it could not
    /// be read (a front end then says how its limits are raised).
    pub fn limit(&self) -> Option<crate::json::Limit> {
        match self {
            Unreadable::Json(e) => e.kind.limit(),
            Unreadable::Lattice(lattice::Error::Read {
                past_limit: true, ..
            }) => Some(crate::json::Limit::Values),
            Unreadable::Lattice(_) => None,
        }
    }

    /// The same error, with lines counted from `first` (JSON Lines).
    pub fn starting_at_line(self, first: usize) -> Unreadable {
        match self {
            Unreadable::Json(e) => Unreadable::Json(e.starting_at_line(first)),
            Unreadable::Lattice(e) => Unreadable::Lattice(e.starting_at_line(first)),
        }
    }
}

/// Checks one input's bytes: every check that applies to it alone.
///
/// ```
/// use chit_core::check::{check, Context};
///
/// let receipt = include_bytes!("../../../examples/run-receipts/agreed-verified.json");
/// let checked = check(receipt, &Context::default()).expect("readable");
/// assert!(checked.report.valid(), "{:?}", checked.report.errors);
/// ```
pub fn check(input: &[u8], ctx: &Context) -> Result<Checked, Unreadable> {
    if ctx.bundles_only {
        return Ok(bundles(input, ctx));
    }
    let checked = check_once(input, ctx)?;
    if ctx.accept_unsigned && ctx.trust.is_some() && signed_by_none(&checked) {
        // Signed by no key at all: held to its own rules alone.
        let own = Context {
            trust: None,
            accept_unsigned: false,
            ..*ctx
        };
        return check_once(input, &own);
    }
    Ok(checked)
}

/// Whether a check under a trust file found an input signed by no key at
/// all: no envelope, the threshold unmet, and no signature that was there
/// but failed or was not trusted.
fn signed_by_none(checked: &Checked) -> bool {
    let r = &checked.report;
    checked.artifact_id.is_none()
        && r.breaks(crate::rule::THRESHOLD)
        && !r.breaks(crate::rule::TRUST)
        && !r.breaks(crate::rule::SIGNATURE)
}

fn check_once(input: &[u8], ctx: &Context) -> Result<Checked, Unreadable> {
    if let Some(checked) = lattice_packet(input, ctx)? {
        return Ok(gates(checked, Some(0), ctx));
    }
    let doc = json::parse(input, &ctx.limits).map_err(Unreadable::Json)?;
    if ctx.kind.is_none() && kinds::log_bundle::looks_like_bundle(doc.root()) {
        return Ok(bundles(input, ctx));
    }
    if ctx.kind.is_none() && kinds::session::looks_like_session_receipt(&doc) {
        // With its bytes: a signed session record binds their digest.
        let checked = kinds::session::check_receipt(&doc, Some(input), ctx);
        return Ok(gates(checked, None, ctx));
    }
    Ok(check_doc(&doc, ctx))
}

/// A file of log bundles, proven with the context's keys; without them
/// it cannot be.
fn bundles(input: &[u8], ctx: &Context) -> Checked {
    match ctx.log {
        Some(keys) => kinds::log_bundle::check(input, keys, ctx),
        None => {
            let mut r = Report::new(kinds::log_bundle::KIND);
            r.error(
                kinds::log_bundle::rule::LOG_CHECKPOINT,
                "",
                "a log bundle: give the log's verifier key to prove it was logged (chit verify \
                 --log-key KEY)",
            );
            Checked::of(r)
        }
    }
}

/// Checks a Treeship session package (a `*.treeship` folder's files, read
/// by the caller). Unsigned itself, it passes no threshold here: under
/// `--trust` the checks across inputs require its signed session record.
pub fn check_package(
    package: &kinds::session::Package,
    ctx: &Context,
) -> Result<Checked, Unreadable> {
    let checked = kinds::session::check_package(package, ctx)?;
    Ok(gates(checked, None, ctx))
}

/// The gates every input passes, bare or in an envelope, whatever its kind:
///
/// - under `--require-authorized`, `--request` or `--call`, only a Reason
///   certificate (or bundle, or an envelope carrying one) may pass;
/// - under `--trust`, an input is signed by `signers` distinct trusted keys
///   allowed its kind (an envelope's, and a numeric lineage receipt's own),
///   at least `threshold` of them; one that is not, or whose signature or
///   trust failed, counts toward nothing across inputs (an unsigned or
///   forged packet fills no gap in a stream).
///
/// `signers` is `None` for an envelope that could not be read at all: no
/// signature could be counted, and its `envelope` errors already fail it.
fn gates(mut checked: Checked, signers: Option<usize>, ctx: &Context) -> Checked {
    reason_gate(&mut checked.report, ctx);
    if ctx.trust.is_none() {
        return checked;
    }
    if let Some(signers) = signers.filter(|&n| n < ctx.threshold) {
        let message = if checked.artifact_id.is_some() {
            format!(
                "{signers} distinct trusted key(s) signed; {} required",
                ctx.threshold
            )
        } else {
            format!(
                "not signed by enough trusted keys: {signers} of {} required. With --trust every input must be signed \
                 by keys the trust file lists: give its signed envelope (chit sign), or check it without --trust",
                ctx.threshold
            )
        };
        let path = if checked.artifact_id.is_some() {
            "/signatures"
        } else {
            ""
        };
        checked.report.error(crate::rule::THRESHOLD, path, message);
    }
    let r = &checked.report;
    if [
        crate::rule::SIGNATURE,
        crate::rule::TRUST,
        crate::rule::THRESHOLD,
    ]
    .iter()
    .any(|rule| r.breaks(rule))
    {
        checked.facts = None;
        checked.artifact = None;
    }
    checked
}

/// Under `--require-authorized`, `--request` or `--call`, an input that is
/// not a Reason certificate fails: a gate never opens on the wrong file.
pub(crate) fn reason_gate(report: &mut Report, ctx: &Context) {
    let flag = if ctx.require_authorized {
        "--require-authorized"
    } else if ctx.request.is_some() {
        "--request"
    } else if ctx.call.is_some() {
        "--call"
    } else {
        return;
    };
    if report.kind != reason::KIND {
        let what = match report.kind {
            "" => "a document of no kind chit knows".to_owned(),
            crate::kinds::ENVELOPE => "an envelope carrying no certificate".to_owned(),
            kind => format!("{} {kind}", crate::report::a_or_an(kind)),
        };
        report.error(
            crate::rule::AUTHORIZED,
            "",
            format!(
                "{flag} accepts only a Zerker Reason certificate ({}, a bundle of them, or an envelope carrying one); \
                 this is {what}: give the certificate for the call",
                reason::KIND
            ),
        );
    }
}

/// Step 1: a Lattice executor packet, checked on its own bytes; `None` when
/// the input is not one.
fn lattice_packet(input: &[u8], ctx: &Context) -> Result<Option<Checked>, Unreadable> {
    let forced = ctx.kind == Some(Kind::LatticePacket);
    if (ctx.kind.is_some() && !forced) || input.len() > ctx.limits.max_size {
        return Ok(None);
    }
    match executor_packet::recognise(input, forced, ctx.limits.max_values) {
        None => Ok(None),
        Some(Ok(v)) => Ok(Some(executor_packet::check_value(
            &v,
            Some(input),
            Origin::unknown(),
        ))),
        Some(Err(lattice::Error::Profile(why))) => Ok(Some(executor_packet::refused(&why))),
        Some(Err(e)) => Err(Unreadable::Lattice(e)),
    }
}

/// Steps 3 and 4 on a document already read.
pub fn check_doc(doc: &Doc, ctx: &Context) -> Checked {
    if crate::envelope::looks_like_envelope(doc) {
        let (checked, signers) = crate::statement::check(doc, ctx);
        return gates(checked, signers, ctx);
    }
    // A store record or an export is its envelope: --kind then names the
    // statement's kind, as for a bare envelope.
    if crate::treeship::looks_like_record(doc) {
        let (checked, signers) = crate::treeship::check_record(doc, ctx);
        return gates(checked, signers, ctx);
    }
    if crate::treeship::looks_like_export(doc) {
        let (checked, signers) = crate::treeship::check_export(doc, ctx);
        return gates(checked, signers, ctx);
    }
    if ctx.kind.is_none() {
        if crate::treeship::looks_like_index(doc) {
            // A listing of the records beside it, signed by none: what it
            // says is held against those records across inputs (a signed
            // record it names wrongly fails it), so no threshold applies.
            let (report, facts) = crate::treeship::check_index(doc);
            let checked = Checked {
                facts: facts.map(Facts::Index),
                ..Checked::of(report)
            };
            return gates(checked, None, ctx);
        }
        if crate::kinds::session::looks_like_session_receipt(doc) {
            let checked = crate::kinds::session::check_receipt(doc, None, ctx);
            return gates(checked, None, ctx);
        }
    }
    let Some(kind) = ctx.kind.or_else(|| Kind::detect(doc)) else {
        return Checked::of(kinds::unknown_kind());
    };
    // A bare document's only possible signer is a lineage receipt's own.
    let (report, own_signer) = check_as(kind, doc.root(), ctx);
    let facts = Facts::of(kind, doc.root(), &report, None, None);
    let signers = Some(usize::from(own_signer.is_some()));
    gates(
        Checked {
            facts,
            ..Checked::of(report)
        },
        signers,
        ctx,
    )
}

/// Step 4: a document, or a statement's payload, as `kind`, with everything
/// the context adds. A payload in an envelope gets exactly the checks the
/// same document gets bare.
/// Returns the findings, and the document's own trusted signer where its
/// kind carries a signature of its own (a numeric lineage receipt).
pub(crate) fn check_as(kind: Kind, v: Val, ctx: &Context) -> (Report, Option<PublicKey>) {
    match kind {
        // Its key may resolve through the trust file; its transcript adds L13-L15.
        Kind::Lineage => numeric_lineage::check_signed(v, *ctx),
        Kind::ReasonAuthorization => (reason_report(v, ctx), None),
        k => (k.check_val(v), None),
    }
}

/// A Reason certificate (or bundle) against the request and call given,
/// and under `require_authorized`, its status, which counts only once the
/// certificate was held to its request (A7-A9): a status alone proves
/// nothing. Without the request, the certificate's portable rules still
/// run, a warning says what could not be checked, and the report is
/// partial ([`crate::report::Status::Unchecked`]): not valid unless the
/// user lets unchecked inputs pass.
fn reason_report(v: Val, ctx: &Context) -> Report {
    let mut r = reason::check_with(v, *ctx);
    let recomputable = reason::recomputable(v, ctx);
    if ctx.require_authorized {
        if !recomputable {
            r.error(crate::rule::AUTHORIZED, "", reason::NEEDS_REQUEST);
        }
        match reason::status(v) {
            Some("authorized") => {}
            status => r.error(
                crate::rule::AUTHORIZED,
                "/status",
                format!(
                    "the certificate's status is {}; --require-authorized accepts only authorized",
                    status.unwrap_or("missing")
                ),
            ),
        }
    } else if !recomputable {
        r.partial = true;
        r.warning(
            reason::rule::A7,
            "",
            "not recomputed (A7-A9): the certificate's digests, reasoning and proofs were not checked; give the request (--request) or a bundle",
        );
    }
    r
}
