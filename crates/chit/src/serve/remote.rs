//! A log served over HTTP (by `chit serve`, or any C2SP tlog-tiles server),
//! as a source for `chit log audit URL`: its checkpoint, its hash tiles and
//! its entry bundles, fetched and held to the checkpoint like any other
//! source's.

use chit_log::tiles::{Tile, TileKind, TILE_WIDTH};
use chit_logstore::audit::{EachEntry, Source};
use chit_logstore::store::PacketRow;

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

impl Source for Remote {
    fn describe(&self) -> String {
        self.base.clone()
    }
    fn head(&mut self) -> Result<Vec<u8>, String> {
        self.get("checkpoint")?
            .ok_or_else(|| format!("{}/checkpoint: not found", self.base))
    }
    fn history(&mut self) -> Result<Vec<(u64, Vec<u8>)>, String> {
        Ok(Vec::new())
    }
    fn scan(&mut self, size: u64, each: &mut EachEntry) -> Result<(), String> {
        let w = u64::from(TILE_WIDTH);
        let mut index = 0u64;
        for n in 0..size.div_ceil(w) {
            let width = (size - n * w).min(w) as u16;
            let tile = Tile {
                kind: TileKind::Entries,
                index: n,
                width,
            };
            let Some(data) = self.get(&tile.path())? else {
                return Ok(()); // the rest is reported missing
            };
            for e in chit_log::tiles::parse_entry_bundle(&data, width)
                .map_err(|e| format!("{}: {e}", tile.path()))?
            {
                each(index, e, None)?;
                index += 1;
            }
        }
        Ok(())
    }
    fn tile(&mut self, level: u8, index: u64, width: u16) -> Result<Option<Vec<u8>>, String> {
        self.get(
            &Tile {
                kind: TileKind::Hashes(level),
                index,
                width,
            }
            .path(),
        )
    }
    fn packets(&mut self, _each: &mut dyn FnMut(&PacketRow)) -> Result<bool, String> {
        Ok(false)
    }
    fn size_now(&mut self) -> Result<u64, String> {
        let note = self.head()?;
        let text = String::from_utf8_lossy(&note);
        let body = text.split("\n\n").next().unwrap_or("");
        chit_log::Checkpoint::parse(&format!("{body}\n"))
            .map(|c| c.size)
            .map_err(|e| e.to_string())
    }
}

/// Whether an audit source is a URL.
pub fn is_url(s: &str) -> bool {
    s.starts_with("http://") || s.starts_with("https://")
}
