//! `chit reason`: Zerker Reason's verifier and authorizer as a drop-in for
//! Reason's CLI: its output objects and its exit statuses. Every verdict is
//! `chit_core::kinds::reason`'s.

use super::read_input;
use crate::cli::{ReasonArgs, ReasonCommand, ReasonFormat};
use crate::exit::{CmdResult, Exit, Failure};
use crate::files::{self, Replace};
use crate::output::Output;
use chit_core::kinds::reason::model::{pretty, AuthorizationStatus};
use chit_core::kinds::reason::{self, authorize::Verification};
use chit_core::{json, Limits};
use std::io::Write;
use std::path::Path;

const ERROR_SCHEMA: &str = "zerker.reason.error.v1";

pub fn run(a: &ReasonArgs, out: &mut Output) -> CmdResult {
    let format = a.format;
    let outcome = match &a.command {
        ReasonCommand::VerifyAuthorizationBundle {
            input,
            require_authorized,
        } => with_doc(input, |v| reason::verify_bundle(v).map_err(Why::Reason)).and_then(|v| {
            verified(&v, format, out)?;
            Ok(if *require_authorized {
                status_exit(v.authorization_status)
            } else {
                Exit::Reason(0)
            })
        }),
        ReasonCommand::VerifyAuthorization {
            request,
            certificate,
        } => both(request, certificate).and_then(|v| {
            verified(&v, format, out)?;
            Ok(Exit::Reason(0))
        }),
        ReasonCommand::Authorize {
            input,
            certificate_out,
            bundle_out,
            force,
        } => authorize(
            input,
            certificate_out.as_deref(),
            bundle_out.as_deref(),
            *force,
            format,
            out,
        ),
    };
    match outcome {
        Ok(exit) => Ok(exit),
        Err(Why::Reason(message)) => match format {
            ReasonFormat::Json => {
                let object = serde_json::json!({
                    "schema": ERROR_SCHEMA,
                    "status": "error",
                    "error": message,
                });
                writeln!(out, "{object}").map_err(Failure::write)?;
                Ok(Exit::Reason(1))
            }
            ReasonFormat::Text => Err(Failure {
                exit: Exit::Reason(1),
                message,
            }),
        },
        Err(Why::Chit(failure)) => Err(failure),
    }
}

/// Why a command did not verify: Reason's error (exit 1, its error object
/// under --format json), or chit's own failure to write its output.
enum Why {
    Reason(String),
    Chit(Failure),
}

impl From<Failure> for Why {
    fn from(f: Failure) -> Why {
        Why::Chit(f)
    }
}

/// Reads `path` (or standard input) strictly and hands its document to `f`;
/// anything unreadable is Reason's error, as Reason reports it.
fn with_doc<T>(
    path: &Path,
    f: impl FnOnce(chit_core::doc::Val) -> Result<T, Why>,
) -> Result<T, Why> {
    let limits = Limits::default();
    let bytes = read_input(path, limits.max_size).map_err(|e| Why::Reason(e.message))?;
    let doc = json::parse(&bytes, &limits)
        .map_err(|e| Why::Reason(format!("cannot read {}: {e}", path.display())))?;
    f(doc.root())
}

/// Reads a request and a certificate, then verifies the one against the
/// other.
fn both(request: &Path, certificate: &Path) -> Result<Verification, Why> {
    with_doc(request, |req| {
        with_doc(certificate, |cert| {
            reason::verify_pair(req, cert).map_err(Why::Reason)
        })
    })
}

/// Reason's exit status for a verified status under --require-authorized.
fn status_exit(status: AuthorizationStatus) -> Exit {
    Exit::Reason(match status {
        AuthorizationStatus::Authorized => 0,
        AuthorizationStatus::InsufficientEvidence => 2,
        AuthorizationStatus::Denied => 3,
        AuthorizationStatus::Conflicted => 4,
    })
}

fn verified(v: &Verification, format: ReasonFormat, out: &mut Output) -> Result<(), Why> {
    let text = match format {
        ReasonFormat::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(v).map_err(|e| Why::Reason(e.to_string()))?
        ),
        ReasonFormat::Text => {
            let p = out.palette;
            let style = if v.authorization_status == AuthorizationStatus::Authorized {
                p.good
            } else {
                p.warn
            };
            format!(
                "{}VERIFIED{} {style}{}{style:#}\n  request   {}\n  reasoning {}\n",
                p.good,
                p.good.render_reset(),
                v.authorization_status.as_str(),
                v.request_digest,
                v.reasoning_result_digest
            )
        }
    };
    out.write_all(text.as_bytes())
        .map_err(|e| Why::Chit(Failure::write(e)))
}

fn authorize(
    input: &Path,
    certificate_out: Option<&Path>,
    bundle_out: Option<&Path>,
    force: bool,
    format: ReasonFormat,
    out: &mut Output,
) -> Result<Exit, Why> {
    let replace = Replace::IfForced(force);
    for path in [certificate_out, bundle_out].into_iter().flatten() {
        files::check(path, replace)?;
    }
    let (request, certificate) =
        with_doc(input, |v| reason::authorize_request(v).map_err(Why::Reason))?;
    let cert_bytes = pretty(&certificate);
    let status = certificate.status;
    if let Some(path) = bundle_out {
        let bundle = reason::bundle(request, certificate.clone());
        files::write(path, &pretty(&bundle), replace)?;
    }
    if let Some(path) = certificate_out {
        files::write(path, &cert_bytes, replace)?;
    }
    match format {
        ReasonFormat::Json => out.write_all(&cert_bytes),
        ReasonFormat::Text => {
            let p = out.palette;
            let style = if status == AuthorizationStatus::Authorized {
                p.good
            } else {
                p.bad
            };
            let mut text = format!(
                "{style}{}{style:#}  {}\n  request {}\n",
                status.as_str().to_uppercase(),
                certificate.action.tool,
                certificate.request_digest
            );
            for issue in &certificate.issues {
                text.push_str(&format!("  {}: {}\n", issue.code, issue.message));
            }
            if let Some(path) = certificate_out {
                text.push_str(&format!(
                    "\nCertificate written to {}\nNext: chit verify --request {} {}\n",
                    path.display(),
                    input.display(),
                    path.display()
                ));
            }
            out.write_all(text.as_bytes())
        }
    }
    .map_err(|e| Why::Chit(Failure::write(e)))?;
    Ok(status_exit(status))
}
