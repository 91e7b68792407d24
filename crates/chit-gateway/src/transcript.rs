//! The transcript: one JSON Lines file the gateway writes beside the
//! receipt, read back by `chit verify --transcript` (see
//! `chit_core::kinds::numeric_lineage::transcript::Transcript` for its lines). Each line is
//! written and flushed as soon as it is known, so a run that stops keeps
//! everything it measured.

use crate::{Input, Request};
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

pub struct TranscriptWriter {
    file: File,
    salt: String,
    ended: bool,
    api: Option<&'static str>,
}

impl TranscriptWriter {
    /// Creates the transcript (never over an existing file) and writes its
    /// header and the request set.
    pub fn create(
        path: &Path,
        salt: String,
        header: serde_json::Value,
        requests: &[serde_json::Value],
    ) -> io::Result<TranscriptWriter> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)?;
        let mut t = TranscriptWriter {
            file,
            salt,
            ended: false,
            api: None,
        };
        let mut head = header;
        if let Some(obj) = head.as_object_mut() {
            obj.insert("salt".into(), t.salt.clone().into());
        }
        t.line(&head)?;
        t.line(&serde_json::json!({ "requests": requests }))?;
        Ok(t)
    }

    /// The API the endpoint was found to speak (written in the end line).
    pub fn set_api(&mut self, api: &'static str) {
        self.api = Some(api);
    }

    pub fn salt(&self) -> &str {
        &self.salt
    }

    fn line(&mut self, v: &serde_json::Value) -> io::Result<()> {
        let mut s = v.to_string();
        s.push('\n');
        self.file.write_all(s.as_bytes())?;
        self.file.flush()
    }

    /// The server's own count of running requests while level `level` ran
    /// (informational): where it was read, the most, and each sample as
    /// `[ms since the level started, running]`. Returns the most.
    pub fn server_occupancy(
        &mut self,
        level: usize,
        source: &str,
        samples: &[(u64, u64)],
    ) -> io::Result<u64> {
        let max = samples.iter().map(|s| s.1).max().unwrap_or(0);
        self.line(&serde_json::json!({"server_occupancy": {
            "level": level,
            "source": source,
            "max": max,
            "samples": samples.iter().map(|(ms, n)| [*ms, *n]).collect::<Vec<_>>(),
        }}))?;
        Ok(max)
    }

    /// What the server's template rendered each chat request into, in set
    /// order (informational): text under `prompts`, token ids under
    /// `token_ids`.
    pub fn rendered_prompts(&mut self, source: &str, sent: &[Request]) -> io::Result<()> {
        let ids = sent.iter().any(|r| matches!(r.input, Input::TokenIds(_)));
        let each: Vec<serde_json::Value> = sent
            .iter()
            .map(|r| match &r.input {
                Input::Prompt(p) => p.as_str().into(),
                Input::TokenIds(t) => t.clone().into(),
                Input::Chat(_) => serde_json::Value::Null,
            })
            .collect();
        let key = if ids { "token_ids" } else { "prompts" };
        self.line(&serde_json::json!({"rendered_prompts": {"source": source, key: each}}))
    }

    /// One measured sequence.
    #[allow(clippy::too_many_arguments)]
    pub fn sequence(
        &mut self,
        level: u64,
        repetition: u64,
        request: u64,
        tokens: &[u64],
        at_accept: u64,
        at_complete: u64,
        id: Option<&str>,
        elapsed_us: u64,
    ) -> io::Result<()> {
        self.line(&serde_json::json!({
            "level": level,
            "repetition": repetition,
            "request": request,
            "token_ids": tokens,
            "in_flight_at_accept": at_accept,
            "in_flight_at_complete": at_complete,
            "response_id": id,
            "elapsed_us": elapsed_us,
        }))
    }

    /// The end line: complete (with the receipt's id) or incomplete (why).
    pub fn end(&mut self, incomplete: Option<&str>, receipt_id: Option<&str>) -> io::Result<()> {
        if self.ended {
            return Ok(());
        }
        self.ended = true;
        let v = match incomplete {
            None => {
                serde_json::json!({"end": "complete", "receipt_id": receipt_id, "api": self.api})
            }
            Some(why) => serde_json::json!({"end": "incomplete", "reason": why, "api": self.api}),
        };
        self.line(&v)?;
        self.file.sync_all()
    }
}
