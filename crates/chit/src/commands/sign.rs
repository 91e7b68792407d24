//! `chit sign`: check a payload as its kind, then sign a Treeship receipt
//! statement around it into a DSSE envelope.

use super::{read_input, source_of};
use crate::cli::SignArgs;
use crate::exit::{CmdResult, Failure};
use crate::files::{self, Replace};
use crate::output::Output;
use chit_core::kinds::treeship::statement::{self, Claim, SignError};

pub fn run(a: &SignArgs, out: &mut Output) -> CmdResult {
    let limits = a.limits.limits();
    if let Some(path) = &a.out {
        files::check(path, Replace::IfForced(a.force))?;
    }
    let key = crate::shared::keys::read_key(&a.key)?;
    let label = source_of(&a.payload).label();
    let bytes = read_input(&a.payload, limits.max_size)?;
    let doc = chit_core::json::parse(&bytes, &limits)
        .map_err(|e| Failure::error(format!("cannot read {label}: {e}")))?;
    let claim = Claim {
        kind: &a.kind,
        system: &a.system,
        subject: a.subject.as_deref(),
        at_unix_secs: crate::shared::envelopes::now_secs(),
    };
    let env = statement::sign_checked(&key, claim, doc.root()).map_err(|e| match e {
        SignError::NotAnObject => Failure::invalid(format!("{label}: {e}")),
        SignError::Breaks { kind, .. } => Failure::invalid(format!(
            "refusing to sign {label}: {e} (run 'chit verify --kind {kind} {label}' for the details)"
        )),
        SignError::KindDiffers { .. } => Failure::error(format!("refusing to sign {label}: {e}")),
        SignError::Inexact { .. } => Failure::invalid(format!("refusing to sign {label}: {e}")),
        e => Failure::error(e.to_string()),
    })?;
    if chit_core::Kind::from_name(&a.kind).is_none() {
        eprintln!(
            "chit: warning: chit does not know the kind '{}'; the payload is signed as given, unchecked",
            a.kind
        );
    }
    crate::shared::envelopes::write_envelope(&env, a.out.as_deref(), a.force, out, |path, art| {
        format!("signed {} {art} ({})", path.display(), a.kind)
    })
}
