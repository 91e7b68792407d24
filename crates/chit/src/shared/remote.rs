//! A log served over HTTP (by `chit serve`, or any C2SP tlog-tiles server),
//! as a source for `chit log audit URL`: its checkpoint, its hash tiles and
//! its entry bundles, fetched and held to the checkpoint like any other
//! source's.

use chit_logstore::audit::{SourceError, TileFiles};
use std::collections::HashMap;

/// Most bytes one fetched file may be: a full hash tile is 8 KiB, a full
/// entry bundle at most 256 × (2 + 65,535) bytes.
const MAX_FETCH: usize = 256 * (2 + 65_535) + 1024;

/// Why a served log cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error("cannot make an HTTP client: {0}")]
    Client(reqwest::Error),
}

pub struct Remote {
    base: String,
    client: reqwest::Client,
    runtime: tokio::runtime::Runtime,
    /// Files asked for ahead ([`TileFiles::prefetch`]), fetched by the
    /// runtime's thread while the reader works.
    ahead: HashMap<String, tokio::task::JoinHandle<Fetched>>,
}

type Fetched = Result<Option<Vec<u8>>, SourceError>;

impl Remote {
    pub fn new(url: &str) -> Result<Remote, RemoteError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(RemoteError::Runtime)?;
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .map_err(RemoteError::Client)?;
        Ok(Remote {
            base: url.trim_end_matches('/').to_string(),
            client,
            runtime,
            ahead: HashMap::new(),
        })
    }

    /// GET `path`; None for 404.
    pub fn get(&self, path: &str) -> Fetched {
        self.runtime
            .block_on(fetch(self.client.clone(), format!("{}/{path}", self.base)))
    }
}

/// GET `url`, at most [`MAX_FETCH`] bytes; None for 404.
async fn fetch(client: reqwest::Client, url: String) -> Fetched {
    let failed = |why: String| SourceError::Fetch {
        url: url.clone(),
        why,
    };
    let r = client
        .get(&url)
        .send()
        .await
        .map_err(|e| failed(e.to_string()))?;
    if r.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !r.status().is_success() {
        return Err(failed(format!("HTTP {}", r.status())));
    }
    let out = crate::shared::net::read_body(r, MAX_FETCH)
        .await
        .map_err(failed)?;
    Ok(Some(out))
}

impl TileFiles for Remote {
    fn describe(&self) -> String {
        self.base.clone()
    }
    fn read(&mut self, path: &str) -> Result<Option<Vec<u8>>, SourceError> {
        match self.ahead.remove(path) {
            Some(task) => self.runtime.block_on(task).unwrap_or_else(|e| {
                Err(SourceError::Fetch {
                    url: format!("{}/{path}", self.base),
                    why: e.to_string(),
                })
            }),
            None => self.get(path),
        }
    }
    fn prefetch(&mut self, paths: &[String]) {
        for p in paths {
            if !self.ahead.contains_key(p) {
                let url = format!("{}/{p}", self.base);
                let task = self.runtime.spawn(fetch(self.client.clone(), url));
                self.ahead.insert(p.clone(), task);
            }
        }
    }
}

/// Whether an audit source is a URL.
pub fn is_url(s: &str) -> bool {
    s.starts_with("http://") || s.starts_with("https://")
}
