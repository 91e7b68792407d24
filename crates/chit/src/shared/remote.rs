//! A log served over HTTP (by `chit serve`, or any C2SP tlog-tiles server),
//! as a source for `chit log audit URL`: its checkpoint, its hash tiles and
//! its entry bundles, fetched and held to the checkpoint like any other
//! source's.

use chit_logstore::audit::TileFiles;

/// Most bytes one fetched file may be: a full hash tile is 8 KiB, a full
/// entry bundle at most 256 × (2 + 65,535) bytes.
const MAX_FETCH: usize = 256 * (2 + 65_535) + 1024;

pub struct Remote {
    base: String,
    client: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

impl Remote {
    pub fn new(url: &str) -> Result<Remote, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Remote {
            base: url.trim_end_matches('/').to_string(),
            client,
            runtime,
        })
    }

    /// GET `path`; None for 404.
    fn get(&self, path: &str) -> Result<Option<Vec<u8>>, String> {
        let url = format!("{}/{path}", self.base);
        self.runtime.block_on(async {
            let mut r = self
                .client
                .get(&url)
                .send()
                .await
                .map_err(|e| format!("{url}: {e}"))?;
            if r.status() == reqwest::StatusCode::NOT_FOUND {
                return Ok(None);
            }
            if !r.status().is_success() {
                return Err(format!("{url}: HTTP {}", r.status()));
            }
            let mut out = Vec::new();
            while let Some(chunk) = r.chunk().await.map_err(|e| format!("{url}: {e}"))? {
                if out.len() + chunk.len() > MAX_FETCH {
                    return Err(format!("{url}: larger than any tile"));
                }
                out.extend_from_slice(&chunk);
            }
            Ok(Some(out))
        })
    }
}

impl TileFiles for Remote {
    fn describe(&self) -> String {
        self.base.clone()
    }
    fn read(&mut self, path: &str) -> Result<Option<Vec<u8>>, String> {
        self.get(path)
    }
}

/// Whether an audit source is a URL.
pub fn is_url(s: &str) -> bool {
    s.starts_with("http://") || s.starts_with("https://")
}
