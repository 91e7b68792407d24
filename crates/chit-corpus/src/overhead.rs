//! Gateway overhead: a measured transcript joined to the fixture's timings.

use serde_json::Value;

/// Overhead figures for one level of a measured transcript, microseconds.
pub struct Overhead {
    pub level: u64,
    /// The smallest in-flight count at accept among the level's requests.
    pub in_flight: u64,
    /// gateway `elapsed_us` − (fixture `end_us` − `received_us`), sorted.
    pub overhead_us: Vec<i64>,
    /// fixture `end_us` − `received_us`, sorted.
    pub server_us: Vec<i64>,
}

/// The value at quantile `q` of sorted `xs` (nearest rank).
pub fn quantile(xs: &[i64], q: f64) -> i64 {
    if xs.is_empty() {
        return 0;
    }
    let rank = (q * xs.len() as f64).ceil() as usize;
    xs[rank.clamp(1, xs.len()) - 1]
}

/// Joins a gateway transcript's measured requests to the fixture's
/// `/fixture/timings` by response id, per level.
pub fn overhead(transcript: &str, timings: &str) -> Result<Vec<Overhead>, String> {
    let timings: Value = serde_json::from_str(timings).map_err(|e| format!("the timings: {e}"))?;
    let mut server = std::collections::HashMap::new();
    for t in timings.as_array().ok_or("the timings are not an array")? {
        // The end of the response (what the gateway waits for), or, from
        // an older fixture, its last token.
        let end = t["end_us"].as_i64().or_else(|| t["last_token_us"].as_i64());
        if let (Some(id), Some(rec), Some(last)) =
            (t["id"].as_str(), t["received_us"].as_i64(), end)
        {
            server.insert(id.to_owned(), (rec, last));
        }
    }
    let mut levels: Vec<Overhead> = Vec::new();
    for (n, line) in transcript.lines().enumerate() {
        let v: Value =
            serde_json::from_str(line).map_err(|e| format!("transcript line {}: {e}", n + 1))?;
        let (Some(level), Some(id), Some(elapsed)) = (
            v["level"].as_u64(),
            v["response_id"].as_str(),
            v["elapsed_us"].as_i64(),
        ) else {
            continue;
        };
        let &(rec, last) = server
            .get(id)
            .ok_or_else(|| format!("the fixture has no finished request {id}"))?;
        let at = match levels.iter().position(|o| o.level == level) {
            Some(at) => at,
            None => {
                levels.push(Overhead {
                    level,
                    in_flight: u64::MAX,
                    overhead_us: Vec::new(),
                    server_us: Vec::new(),
                });
                levels.len() - 1
            }
        };
        let o = &mut levels[at];
        o.in_flight = o
            .in_flight
            .min(v["in_flight_at_accept"].as_u64().unwrap_or(0));
        o.overhead_us.push(elapsed - (last - rec));
        o.server_us.push(last - rec);
    }
    for o in &mut levels {
        o.overhead_us.sort_unstable();
        o.server_us.sort_unstable();
    }
    Ok(levels)
}
