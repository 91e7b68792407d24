//! `check`, `check_all` and `verify_proof`: Python's arguments read into a
//! `chit_core::Context`, then `chit_core::check` (and the checks across
//! inputs it reaches) with the GIL released.

use crate::errors;
use crate::keys::TrustFile;
use crate::report::{CrossVerdict, Verdict};
use chit_core::across::{Across, CrossReport, Origin};
use chit_core::check::{Checked, Unreadable};
use chit_core::kinds::log_bundle::LogKeys;
use chit_core::kinds::numeric_lineage::transcript::Transcript;
use chit_core::{Context, Doc, Kind, Limits};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use rayon::prelude::*;

/// The keyword arguments every check takes, as Python gave them.
pub struct Options<'a> {
    kind: Option<&'a str>,
    trust: Option<&'a TrustFile>,
    threshold: usize,
    allow_unchecked: bool,
    accept_unsigned: bool,
    require_authorized: bool,
    request: Option<&'a [u8]>,
    call: Option<&'a [u8]>,
    transcript: Option<&'a [u8]>,
}

/// What the options say, read: the documents they name parsed, owned
/// here so that a [`Context`] can borrow them.
struct Read<'a> {
    kind: Option<Kind>,
    request: Option<Doc<'a>>,
    call: Option<Doc<'a>>,
    transcript: Option<Transcript>,
}

impl<'a> Options<'a> {
    fn read(&self, limits: &Limits) -> PyResult<Read<'a>> {
        if self.threshold < 1 {
            return Err(errors::error(format!(
                "threshold {}: at least one key must sign (give 1 or more)",
                self.threshold
            )));
        }
        let kind = self
            .kind
            .map(Kind::parse)
            .transpose()
            .map_err(errors::error)?;
        let doc = |bytes: Option<&'a [u8]>, what: &str| -> PyResult<Option<Doc<'a>>> {
            bytes
                .map(|b| {
                    chit_core::json::parse(b, limits)
                        .map_err(|e| errors::unreadable(format!("cannot read the {what}: {e}")))
                })
                .transpose()
        };
        Ok(Read {
            kind,
            request: doc(self.request, "request")?,
            call: doc(self.call, "call")?,
            transcript: self
                .transcript
                .map(|t| {
                    Transcript::read(t, limits)
                        .map_err(|e| errors::unreadable(format!("cannot read the transcript: {e}")))
                })
                .transpose()?,
        })
    }

    fn context<'c>(&self, read: &'c Read<'a>, limits: Limits) -> Context<'c>
    where
        'a: 'c,
    {
        Context {
            kind: read.kind,
            limits,
            trust: self.trust.map(TrustFile::trust),
            threshold: self.threshold,
            transcript: read.transcript.as_ref(),
            request: read.request.as_ref().map(Doc::root),
            call: read.call.as_ref().map(Doc::root),
            require_authorized: self.require_authorized,
            accept_unsigned: self.accept_unsigned,
            allow_unchecked: self.allow_unchecked,
            ..Context::default()
        }
    }
}

/// The art id an input named `name` was filed under, as `chit verify`
/// takes it from a file's name (Treeship files an envelope under its art
/// id), unless the caller says which.
fn expected<'n>(name: Option<&'n str>, given: Option<&'n str>) -> Option<&'n str> {
    given.or_else(|| name.and_then(chit_core::envelope::art_id_in_file_name))
}

/// Checks one input: its verdict as a `Report`, exactly the one `chit
/// verify --json` gives for it (with `name` as the file's name).
///
/// Input that cannot be read (not JSON, mis-encoded, past a limit) gives a
/// Report of status `unreadable`; an exception means a bad argument.
#[pyfunction]
#[pyo3(signature = (
    data, *, name=None, kind=None, trust=None, threshold=1, allow_unchecked=false,
    request=None, call=None, transcript=None, expected_art=None, accept_unsigned=false,
    require_authorized=false
))]
#[allow(clippy::too_many_arguments)]
pub fn check(
    py: Python<'_>,
    data: &[u8],
    name: Option<String>,
    kind: Option<&str>,
    trust: Option<Bound<'_, TrustFile>>,
    threshold: usize,
    allow_unchecked: bool,
    request: Option<&[u8]>,
    call: Option<&[u8]>,
    transcript: Option<&[u8]>,
    expected_art: Option<&str>,
    accept_unsigned: bool,
    require_authorized: bool,
) -> PyResult<Verdict> {
    let options = Options {
        kind,
        trust: trust.as_ref().map(Bound::get),
        threshold,
        allow_unchecked,
        accept_unsigned,
        require_authorized,
        request,
        call,
        transcript,
    };
    let limits = Limits::default();
    let read = options.read(&limits)?;
    let ctx = Context {
        expected_art: expected(name.as_deref(), expected_art),
        ..options.context(&read, limits)
    };
    let result = py.detach(|| chit_core::check(data, &ctx));
    Ok(Verdict::new(name, result))
}

/// Checks many inputs on all cores, the GIL released: one Report per
/// input, in order, and the checks across them. Each input is bytes, or a
/// `(name, bytes)` pair. The package's `chit.check_all` wraps this.
#[pyfunction]
#[pyo3(signature = (
    inputs, *, kind=None, trust=None, threshold=1, allow_unchecked=false, request=None,
    call=None, transcript=None, accept_unsigned=false, require_authorized=false,
    expect_count=None
))]
#[allow(clippy::too_many_arguments)]
pub fn check_all(
    py: Python<'_>,
    inputs: &Bound<'_, PyAny>,
    kind: Option<&str>,
    trust: Option<Bound<'_, TrustFile>>,
    threshold: usize,
    allow_unchecked: bool,
    request: Option<&[u8]>,
    call: Option<&[u8]>,
    transcript: Option<&[u8]>,
    accept_unsigned: bool,
    require_authorized: bool,
    expect_count: Option<usize>,
) -> PyResult<(Vec<Verdict>, Vec<CrossVerdict>)> {
    let items = named_inputs(inputs)?;
    let slices: Vec<(Option<&str>, &[u8])> = items
        .iter()
        .map(|(n, b)| (n.as_deref(), b.as_bytes()))
        .collect();
    let options = Options {
        kind,
        trust: trust.as_ref().map(Bound::get),
        threshold,
        allow_unchecked,
        accept_unsigned,
        require_authorized,
        request,
        call,
        transcript,
    };
    let limits = Limits::default();
    let read = options.read(&limits)?;
    let ctx = options.context(&read, limits);
    let (verdicts, across) = py.detach(|| {
        let results: Vec<Result<Checked, Unreadable>> = slices
            .par_iter()
            .map(|&(name, bytes)| {
                let ctx = Context {
                    expected_art: expected(name, None),
                    ..ctx
                };
                chit_core::check(bytes, &ctx)
            })
            .collect();
        across_inputs(&slices, results, &ctx, expect_count)
    });
    Ok((verdicts, across.into_iter().map(CrossVerdict).collect()))
}

/// Feeds each input's facts to the checks across inputs, in order, as
/// `chit verify` does: an input without a name is `inputs[i]` there.
fn across_inputs(
    slices: &[(Option<&str>, &[u8])],
    results: Vec<Result<Checked, Unreadable>>,
    ctx: &Context,
    expect_count: Option<usize>,
) -> (Vec<Verdict>, Vec<CrossReport>) {
    let mut across = Across::new(expect_count)
        .trusted(ctx.trust.is_some())
        .allow_unchecked(ctx.allow_unchecked);
    let mut verdicts = Vec::with_capacity(results.len());
    for (i, ((name, _), result)) in slices.iter().zip(results).enumerate() {
        let result = result.map(|mut checked| {
            let origin = Origin::new(
                name.map_or_else(|| format!("inputs[{i}]"), str::to_owned),
                None,
            );
            let status = checked.status();
            if let Some(a) = checked.artifact.take() {
                across.add_artifact(origin.clone(), status, a);
            }
            if let Some(f) = checked.facts.take() {
                across.add(origin, status, f);
            }
            checked
        });
        verdicts.push(Verdict::new(name.map(str::to_owned), result));
    }
    (verdicts, across.finish())
}

/// The inputs `check_all` was given: each bytes, or a `(name, bytes)` pair.
fn named_inputs<'py>(
    inputs: &Bound<'py, PyAny>,
) -> PyResult<Vec<(Option<String>, Bound<'py, PyBytes>)>> {
    let mut items = Vec::new();
    for (i, item) in inputs.try_iter()?.enumerate() {
        let item = item?;
        if let Ok(bytes) = item.cast::<PyBytes>() {
            items.push((None, bytes.clone()));
            continue;
        }
        let pair = item
            .cast::<PyTuple>()
            .ok()
            .filter(|t| t.len() == 2)
            .and_then(|t| {
                let name: String = t.get_item(0).ok()?.extract().ok()?;
                let bytes = t.get_item(1).ok()?.cast_into::<PyBytes>().ok()?;
                Some((Some(name), bytes))
            });
        match pair {
            Some(p) => items.push(p),
            None => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "check_all takes bytes or (name, bytes) pairs; inputs[{i}] is a {}",
                    item.get_type().name()?
                )))
            }
        }
    }
    Ok(items)
}

/// Proves, offline, that `entry` was logged: `proof` is a C2SP tlog-proof
/// (as `Log.proof` and `chit log proof` write it) and `policy` a C2SP
/// tlog-policy (or a log's verifier key alone, as `chit verify --log-key`
/// takes it). The Report is `chit verify --policy P --proof F` on the
/// entry: its own verdict, with rule `log-inclusion` where the proof fails.
#[pyfunction]
#[pyo3(signature = (proof, entry, policy, *, name=None, trust=None, allow_unchecked=false))]
pub fn verify_proof(
    py: Python<'_>,
    proof: &Bound<'_, PyAny>,
    entry: &[u8],
    policy: &str,
    name: Option<String>,
    trust: Option<Bound<'_, TrustFile>>,
    allow_unchecked: bool,
) -> PyResult<Verdict> {
    let proof_bytes: Vec<u8> = match proof.extract::<String>() {
        Ok(text) => text.into_bytes(),
        Err(_) => proof.extract::<Vec<u8>>()?,
    };
    let proof = chit_log::proof::TlogProof::parse(&proof_bytes)
        .map_err(|e| errors::unreadable(format!("the proof: {e}")))?;
    let keys = LogKeys {
        policy: read_policy(policy)?,
    };
    let ctx = Context {
        expected_art: expected(name.as_deref(), None),
        trust: trust.as_ref().map(|t| t.get().trust()),
        allow_unchecked,
        log: Some(&keys),
        proof: Some(&proof),
        ..Context::default()
    };
    let result = py.detach(|| chit_core::check(entry, &ctx));
    Ok(Verdict::new(name, result))
}

/// A C2SP tlog-policy's text, or a log's verifier key alone (a policy of
/// that key, no witnesses): a verifier key has no space in it, and a
/// policy names its log on a line of words.
pub fn read_policy(text: &str) -> PyResult<chit_log::policy::Policy> {
    use chit_log::policy::{Policy, MAX_POLICY_BYTES};
    if text.len() > MAX_POLICY_BYTES {
        return Err(errors::error(format!(
            "the policy is {} bytes, over the limit of {MAX_POLICY_BYTES} for a tlog-policy",
            text.len()
        )));
    }
    let key = text.trim();
    if !key.is_empty() && !key.contains(char::is_whitespace) {
        return chit_log::note::NoteVerifier::from_verifier_key(key)
            .map(Policy::of_log)
            .map_err(|e| errors::error(format!("the log key {key}: {e}")));
    }
    Policy::parse(text.as_bytes()).map_err(|e| errors::error(format!("the policy: {e}")))
}
