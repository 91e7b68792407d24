//! `GET /healthz`: what the server can do now. Reads work when the log's
//! head can be read; writes when the server takes them (`--tokens`), its
//! sequencer runs, its store shows nothing that would stop a write (a
//! read-only file, a disk nearly full, a database that takes no writes)
//! and the last batch it tried was written. A failed batch keeps writes
//! down until a later one is written: nothing short of a write shows that
//! the next one would be.

use super::api::{error, AppState};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// How the last batch written went: why it failed, if it did (and
/// whether it did, read without the lock by every write).
#[derive(Default)]
pub struct Writes {
    failing: AtomicBool,
    why: Mutex<Option<String>>,
}

impl Writes {
    pub fn wrote(&self) {
        if self.failing.load(Ordering::Acquire) {
            *self.why.lock().unwrap_or_else(|p| p.into_inner()) = None;
            self.failing.store(false, Ordering::Release);
        }
    }

    pub fn failed(&self, why: &str) {
        *self.why.lock().unwrap_or_else(|p| p.into_inner()) = Some(why.to_string());
        self.failing.store(true, Ordering::Release);
    }

    fn last_failure(&self) -> Option<String> {
        self.why.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// `GET /healthz`: `{"status": "ok" | "degraded", "writes": bool,
/// "reason": why writes or reads are down (null when nothing is),
/// "size": the log's size}`; 503 when the server was started to take
/// writes and cannot, or cannot read its log.
pub async fn healthz(State(state): State<Arc<AppState>>) -> Response {
    let takes_writes = !state.tokens.is_empty();
    let probe = state.clone();
    let r = tokio::task::spawn_blocking(move || {
        let mut log = probe.reader.lock().unwrap_or_else(|p| p.into_inner());
        let head = log.head().map(|(s, _)| s);
        let blocked = if takes_writes && head.is_ok() {
            log.store().write_blocked()
        } else {
            None
        };
        (head, blocked)
    })
    .await;
    let (head, blocked) = match r {
        Ok(r) => r,
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let size = match head {
        Ok(size) => size,
        Err(e) => {
            return answer(
                StatusCode::SERVICE_UNAVAILABLE,
                false,
                Some(format!("the log cannot be read: {e}")),
                None,
            )
        }
    };
    if !takes_writes {
        return answer(
            StatusCode::OK,
            false,
            Some("this server takes no writes (it was started without --tokens)".into()),
            Some(size),
        );
    }
    let down = if state.jobs.is_closed() {
        Some("the sequencer has stopped".to_string())
    } else {
        blocked.or_else(|| {
            state
                .health
                .last_failure()
                .map(|why| format!("the last batch was not written: {why}"))
        })
    };
    match down {
        None => answer(StatusCode::OK, true, None, Some(size)),
        Some(why) => answer(
            StatusCode::SERVICE_UNAVAILABLE,
            false,
            Some(why),
            Some(size),
        ),
    }
}

fn answer(code: StatusCode, writes: bool, reason: Option<String>, size: Option<u64>) -> Response {
    // A server that takes no writes by design is ok; one that should and
    // cannot, or cannot read, is degraded.
    let status = if code == StatusCode::OK {
        "ok"
    } else {
        "degraded"
    };
    (
        code,
        axum::Json(json!({
            "status": status,
            "writes": writes,
            "reason": reason,
            "size": size,
        })),
    )
        .into_response()
}
