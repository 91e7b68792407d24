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
//!    ([`crate::kinds::treeship::statement`]), its payload under step 4;
//! 4. `kind`: a document (or a statement's payload) is checked under its
//!    kind's schema and rules, with everything the [`Context`] adds: the
//!    trust file for a lineage receipt's key, its transcript (L13-L15), a
//!    Reason request and call (A5, A6) and `require_authorized`.
//!
//! Checks across inputs (streams, recompute results, rebinds) need every
//! input: each [`Checked`] carries its [`Facts`] for an
//! [`crate::across::Across`].

pub use crate::checked::{Checked, Unreadable};
pub use crate::context::Context;
use crate::doc::Doc;
use crate::facts::{Facts, Origin};
use crate::json::{self};
use crate::kinds::{self, executor_packet, reason, Kind};
use crate::lattice;
use crate::report::Report;

/// What [`check`] takes: one input's bytes, a Treeship session package (a
/// `*.treeship` folder's files) or an approval use journal (a journal
/// folder's files), read by the caller.
#[derive(Clone, Copy)]
pub enum Input<'a> {
    Bytes(&'a [u8]),
    Package(&'a kinds::treeship::session::Package<'a>),
    Journal(&'a kinds::treeship::journal::Journal<'a>),
}

impl<'a> From<&'a [u8]> for Input<'a> {
    fn from(b: &'a [u8]) -> Input<'a> {
        Input::Bytes(b)
    }
}

impl<'a> From<&'a Vec<u8>> for Input<'a> {
    fn from(b: &'a Vec<u8>) -> Input<'a> {
        Input::Bytes(b)
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for Input<'a> {
    fn from(b: &'a [u8; N]) -> Input<'a> {
        Input::Bytes(b)
    }
}

impl<'a> From<&'a kinds::treeship::session::Package<'a>> for Input<'a> {
    fn from(p: &'a kinds::treeship::session::Package<'a>) -> Input<'a> {
        Input::Package(p)
    }
}

impl<'a> From<&'a kinds::treeship::journal::Journal<'a>> for Input<'a> {
    fn from(j: &'a kinds::treeship::journal::Journal<'a>) -> Input<'a> {
        Input::Journal(j)
    }
}

/// Checks one input (its bytes, a session package or a journal): every
/// check that applies to it alone. The one way to a verdict.
///
/// ```
/// use chit_core::check::{check, Context};
///
/// let receipt = include_bytes!("../../../examples/run-receipts/agreed-verified.json");
/// let checked = check(receipt, &Context::default()).expect("readable");
/// assert!(checked.report.valid(), "{:?}", checked.report.errors);
/// ```
pub fn check<'i>(input: impl Into<Input<'i>>, ctx: &Context) -> Result<Checked, Unreadable> {
    let input = input.into();
    let Some(proof) = ctx.proof else {
        return check_alone(input, ctx);
    };
    // Whatever the input, a proof given is held to it: never skipped.
    let bytes = match &input {
        Input::Bytes(b) => Some(*b),
        _ => None,
    };
    let mut checked = check_alone(input, ctx)?;
    match bytes {
        Some(b) => kinds::log_bundle::prove(&mut checked, b, proof, ctx.log, &ctx.limits),
        None => checked.report.error(
            kinds::log_bundle::rule::LOG_INCLUSION,
            "",
            "a tlog-proof proves an input's exact bytes; a session package or a journal \
             cannot be proven by one",
        ),
    }
    Ok(checked)
}

/// [`check`] without the tlog-proof step.
fn check_alone(input: Input, ctx: &Context) -> Result<Checked, Unreadable> {
    let input = match input {
        Input::Bytes(b) => b,
        Input::Package(p) => {
            // Unsigned itself, it passes no threshold here: under `--trust`
            // the checks across inputs require its signed session record.
            let checked = kinds::treeship::session::check_package(p, ctx)?;
            return Ok(gates(checked, None, ctx));
        }
        Input::Journal(j) => {
            // A local hash chain that no key signed: under a trust file it
            // passes the threshold only as any unsigned document does,
            // with --accept-unsigned (its hub checkpoints are held to the
            // trust file either way).
            let checked = kinds::treeship::journal::check_journal(j, ctx);
            let signers = (!ctx.accept_unsigned).then_some(0);
            return Ok(gates(checked, signers, ctx));
        }
    };
    if ctx.bundles_only {
        return Ok(bundles(input, ctx));
    }
    let mut checked = check_once(input, ctx)?;
    if ctx.accept_unsigned && ctx.trust.is_some() && signed_by_none(&checked) {
        // Signed by no key at all: held to its own rules alone.
        let own = Context {
            trust: None,
            accept_unsigned: false,
            ..*ctx
        };
        checked = check_once(input, &own)?;
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
    if ctx.kind.is_none() && input.len() <= ctx.limits.max_size && kinds::intent::recognise(input) {
        // Signed by keys a trust file does not name (P-256, the layer
        // above's): under one it passes, as an unsigned document does,
        // with --accept-unsigned.
        let signers = (!ctx.accept_unsigned).then_some(0);
        return Ok(gates(
            kinds::intent::check(input, &ctx.limits),
            signers,
            ctx,
        ));
    }
    let doc = json::parse(input, &ctx.limits).map_err(Unreadable::Json)?;
    if ctx.kind.is_none() && kinds::log_bundle::looks_like_bundle(doc.root()) {
        return Ok(bundles(input, ctx));
    }
    if ctx.kind.is_none() && kinds::treeship::session::looks_like_session_receipt(&doc) {
        // With its bytes: a signed session record binds their digest.
        let checked = kinds::treeship::session::check_receipt(&doc, Some(input), ctx);
        return Ok(gates(checked, None, ctx));
    }
    Ok(check_doc(&doc, ctx))
}

/// A file of log bundles, proven with the context's keys; without them
/// it cannot be.
fn bundles(input: &[u8], ctx: &Context) -> Checked {
    match ctx.log {
        Some(keys) => kinds::log_bundle::check(input, keys, ctx, |entry, ctx| check(entry, ctx)),
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
    checked.held_to_signers(signers, ctx.trust.is_some(), ctx.threshold)
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
            crate::kind::ENVELOPE => "an envelope carrying no certificate".to_owned(),
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
fn check_doc(doc: &Doc, ctx: &Context) -> Checked {
    if crate::envelope::looks_like_envelope(doc) {
        let (checked, signers) = crate::kinds::treeship::statement::check(doc, ctx);
        return gates(checked, signers, ctx);
    }
    // A store record or an export is its envelope: --kind then names the
    // statement's kind, as for a bare envelope.
    if crate::kinds::treeship::records::looks_like_record(doc) {
        let (checked, signers) = crate::kinds::treeship::records::check_record(doc, ctx);
        return gates(checked, signers, ctx);
    }
    if crate::kinds::treeship::records::looks_like_export(doc) {
        let (checked, signers) = crate::kinds::treeship::records::check_export(doc, ctx);
        return gates(checked, signers, ctx);
    }
    if ctx.kind.is_none() {
        if crate::kinds::treeship::export_bundle::looks_like_export_bundle(doc) {
            // Its envelopes are each held to the trust file and threshold.
            let mut checked = crate::kinds::treeship::export_bundle::check(doc, ctx);
            reason_gate(&mut checked.report, ctx);
            return checked;
        }
        if crate::kinds::treeship::records::looks_like_index(doc) {
            // A listing of the records beside it, signed by none: what it
            // says is held against those records across inputs (a signed
            // record it names wrongly fails it), so no threshold applies.
            let (report, facts) = crate::kinds::treeship::records::check_index(doc);
            let checked = Checked {
                facts: facts.map(Facts::Index),
                ..Checked::of(report)
            };
            return gates(checked, None, ctx);
        }
        if crate::kinds::treeship::session::looks_like_session_receipt(doc) {
            let checked = crate::kinds::treeship::session::check_receipt(doc, None, ctx);
            return gates(checked, None, ctx);
        }
    }
    let Some(kind) = ctx.kind.or_else(|| Kind::detect(doc)) else {
        return Checked::of(kinds::unknown_kind(doc.root()));
    };
    // A bare document's only possible signer is a lineage receipt's own.
    let (report, own_signer) = kind.check_in(doc.root(), ctx);
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
