//! A gateway's transcript (JSON Lines), read, and the rules that need it:
//! L13 (the commitments open), L14 (the recorded figures recompute) and L15
//! (the divergence recomputes).

use super::arithmetic::{self as math, Class, Runs};
use super::fields::{int, text};
use super::rule;
use crate::canon::{self, Profile};
use crate::digest::sha256_hex;
use crate::doc::Val;
use crate::json::{Limits, ReadError};
use crate::report::Report;
use std::collections::BTreeMap;

/// Why a transcript could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TranscriptError {
    /// A line that is not strict JSON; the error's line is the
    /// transcript's.
    #[error("line {line}: {source}")]
    Json { line: usize, source: ReadError },
    /// A line of the wrong shape.
    #[error("line {line}: {problem}")]
    Line { line: usize, problem: LineProblem },
    #[error("the transcript has no header and request set")]
    NoHeader,
}

/// What is wrong with one line of a transcript.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LineProblem {
    #[error("a line after the end line")]
    AfterEnd,
    #[error("the header has no salt")]
    NoSalt,
    #[error("the header has no endpoint")]
    NoEndpoint,
    #[error("the header has no gateway")]
    NoGateway,
    #[error("the second line must be {{\"requests\": [...]}}")]
    NotRequestSet,
    #[error("the request set is empty")]
    EmptyRequestSet,
    #[error("no level")]
    NoLevel,
    #[error("no repetition")]
    NoRepetition,
    #[error("no request")]
    NoRequest,
    #[error("no token_ids")]
    NoTokenIds,
    #[error("token ids must be non-negative integers")]
    BadTokenIds,
    #[error("a server_occupancy line needs its level, max and source")]
    BadServerOccupancy,
    #[error(
        "a rendered_prompts line needs its source and one prompt (text or token ids) for each request, once"
    )]
    BadRenderedPrompts,
    #[error("level {level} repetition {repetition} request {request} recorded twice")]
    RecordedTwice {
        level: u64,
        repetition: u64,
        request: u64,
    },
}

/// Samples a level needs before its server-reported occupancy is judged
/// (L16, and the gateway's warning): a level shorter than that was not
/// watched long enough to say the server never ran it at its concurrency.
pub const MIN_OCCUPANCY_SAMPLES: usize = 8;

/// What the server said of its own load while one level ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerOccupancy {
    /// The most requests it reported running.
    pub max: u64,
    /// Where it reported them.
    pub source: String,
    /// How many times it was asked.
    pub samples: usize,
}

impl ServerOccupancy {
    /// Why a level of induced concurrency `c` is in doubt, where the server
    /// was watched long enough ([`MIN_OCCUPANCY_SAMPLES`]) and never ran
    /// `c` at once: L16's warning, and the gateway's, as it measures.
    pub fn short_of(&self, c: u64, level: u64) -> Option<String> {
        (self.max < c && self.samples >= MIN_OCCUPANCY_SAMPLES).then(|| {
            format!(
                "the server reported at most {} {} running at level {level} ({}), never its induced concurrency {c}",
                self.max,
                if self.max == 1 { "request" } else { "requests" },
                self.source
            )
        })
    }
}

/// A gateway's transcript, read: the openings of the commitments, the
/// request set and every measured sequence.
///
/// JSON Lines: a header object (`salt`, `endpoint`, `gateway`, optional
/// `reroute`, and whatever else the gateway records), `{"requests": [...]}`,
/// one `{"level", "repetition", "request", "token_ids"}` object per
/// measured request (with `in_flight_at_accept` and `in_flight_at_complete`
/// where the gateway counted them), informational `{"server_occupancy":
/// {"level", "source", "max", "samples"}}` lines where the server reports
/// its own load, an informational `{"rendered_prompts": {"source",
/// "prompts" | "token_ids"}}` line where chat requests were rendered by the
/// server's template before they were sent (the text, or the token ids,
/// of each request's rendered prompt, in set order), and last `{"end":
/// "complete"}` or `{"end": "incomplete", "reason": ...}`.
#[derive(Clone, Debug, Default)]
pub struct Transcript {
    pub salt: String,
    pub endpoint: String,
    pub gateway: String,
    pub reroute: Option<String>,
    /// `set_digest_sha256` of the request set as recorded.
    pub set_digest: String,
    pub request_count: u64,
    pub max_tokens: u64,
    /// Each request's `max_tokens`, in the set's order (`None` where a
    /// request does not say).
    pub request_max_tokens: Vec<Option<u64>>,
    /// (level, repetition, request) → token ids.
    pub sequences: BTreeMap<(u64, u64, u64), Vec<u64>>,
    /// (level, repetition, request) → in flight at accept and at complete.
    pub in_flight: BTreeMap<(u64, u64, u64), (u64, u64)>,
    /// `Some(None)` complete, `Some(Some(why))` incomplete, `None` no end line.
    pub end: Option<Option<String>>,
    /// The receipt the end line names (`receipt_id`), if it names one.
    pub receipt_id: Option<String>,
    /// Level → the most requests the server itself reported running while
    /// the level was measured, and where it reported them (informational
    /// `{"server_occupancy": {...}}` lines; only the L16 warning reads
    /// them).
    pub server_occupancy: BTreeMap<u64, ServerOccupancy>,
    /// Where chat requests were rendered into prompts before they were sent
    /// (an informational `{"rendered_prompts": {...}}` line; no rule reads
    /// it).
    pub rendered_by: Option<String>,
}

/// Reads a transcript one line at a time, so a caller can stream it from
/// wherever it lies and bound each line (the core does no I/O): feed every
/// line with [`TranscriptReader::line`], then [`TranscriptReader::finish`].
#[derive(Debug)]
pub struct TranscriptReader {
    t: Transcript,
    header: bool,
    requests: bool,
    limits: Limits,
}

impl TranscriptReader {
    pub fn new(limits: &Limits) -> TranscriptReader {
        TranscriptReader {
            t: Transcript::default(),
            header: false,
            requests: false,
            limits: *limits,
        }
    }

    /// One line, without its line end; `n` is its number, from 1. A blank
    /// line is passed over. An unreadable line, or a line of the wrong
    /// shape, is an error naming `n`.
    pub fn line(&mut self, n: usize, line: &[u8]) -> Result<(), TranscriptError> {
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            return Ok(());
        }
        let t = &mut self.t;
        let doc = crate::json::parse(line, &self.limits).map_err(|e| TranscriptError::Json {
            line: n,
            source: e.starting_at_line(n),
        })?;
        let v = doc.root();
        let bad = |problem: LineProblem| TranscriptError::Line { line: n, problem };
        if t.end.is_some() {
            return Err(bad(LineProblem::AfterEnd));
        }
        if !self.header {
            let s = |k: &str| text(v, k).map(str::to_owned);
            t.salt = s("salt").ok_or_else(|| bad(LineProblem::NoSalt))?;
            t.endpoint = s("endpoint").ok_or_else(|| bad(LineProblem::NoEndpoint))?;
            t.gateway = s("gateway").ok_or_else(|| bad(LineProblem::NoGateway))?;
            t.reroute = s("reroute");
            self.header = true;
        } else if !self.requests {
            let set = v
                .get("requests")
                .filter(|x| x.as_array().is_some())
                .ok_or_else(|| bad(LineProblem::NotRequestSet))?;
            t.set_digest = sha256_hex(&canon::to_vec(set, Profile::Jcs));
            t.request_count = set.len() as u64;
            if t.request_count == 0 {
                return Err(bad(LineProblem::EmptyRequestSet));
            }
            t.request_max_tokens = set.items().map(|q| int(q, "max_tokens")).collect();
            t.max_tokens = t
                .request_max_tokens
                .iter()
                .flatten()
                .copied()
                .max()
                .unwrap_or(0);
            self.requests = true;
        } else if let Some(o) = v.get("server_occupancy") {
            let level = int(o, "level").ok_or_else(|| bad(LineProblem::BadServerOccupancy))?;
            let max = int(o, "max").ok_or_else(|| bad(LineProblem::BadServerOccupancy))?;
            let source = text(o, "source").ok_or_else(|| bad(LineProblem::BadServerOccupancy))?;
            let samples = o
                .get("samples")
                .and_then(|a| a.as_array())
                .map_or(0, |a| a.len());
            t.server_occupancy.insert(
                level,
                ServerOccupancy {
                    max,
                    source: source.to_owned(),
                    samples,
                },
            );
        } else if let Some(r) = v.get("rendered_prompts") {
            let source = text(r, "source").ok_or_else(|| bad(LineProblem::BadRenderedPrompts))?;
            let each = r
                .get("prompts")
                .or_else(|| r.get("token_ids"))
                .and_then(|a| a.as_array())
                .ok_or_else(|| bad(LineProblem::BadRenderedPrompts))?;
            // Text under "prompts", token ids under "token_ids": one a
            // request, and the line once.
            let text_list = r.get("prompts").is_some();
            let whole = |x: &Val| {
                if text_list {
                    x.as_str().is_some()
                } else {
                    x.as_array().is_some_and(|ids| {
                        ids.map(|i| i.as_i64()).all(|i| i.is_some_and(|i| i >= 0))
                    })
                }
            };
            if each.len() as u64 != t.request_count
                || !each.clone().all(|x| whole(&x))
                || t.rendered_by.is_some()
            {
                return Err(bad(LineProblem::BadRenderedPrompts));
            }
            t.rendered_by = Some(source.to_owned());
        } else if let Some(end) = v.get("end") {
            t.receipt_id = text(v, "receipt_id").map(str::to_owned);
            t.end = Some(match end.as_str() {
                Some("complete") => None,
                _ => Some(text(v, "reason").unwrap_or("no reason given").to_owned()),
            });
        } else {
            let at = (
                int(v, "level").ok_or_else(|| bad(LineProblem::NoLevel))?,
                int(v, "repetition").ok_or_else(|| bad(LineProblem::NoRepetition))?,
                int(v, "request").ok_or_else(|| bad(LineProblem::NoRequest))?,
            );
            let tokens = v
                .get("token_ids")
                .and_then(|a| a.as_array())
                .ok_or_else(|| bad(LineProblem::NoTokenIds))?
                .map(|x| x.as_i64().and_then(|x| u64::try_from(x).ok()))
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(|| bad(LineProblem::BadTokenIds))?;
            if t.sequences.insert(at, tokens).is_some() {
                return Err(bad(LineProblem::RecordedTwice {
                    level: at.0,
                    repetition: at.1,
                    request: at.2,
                }));
            }
            if let (Some(a), Some(c)) = (
                int(v, "in_flight_at_accept"),
                int(v, "in_flight_at_complete"),
            ) {
                t.in_flight.insert(at, (a, c));
            }
        }
        Ok(())
    }

    /// The transcript read, once every line is fed.
    pub fn finish(self) -> Result<Transcript, TranscriptError> {
        if !self.requests {
            return Err(TranscriptError::NoHeader);
        }
        Ok(self.t)
    }
}

impl Transcript {
    /// Reads a transcript's bytes, all in memory (see [`TranscriptReader`]
    /// to read one a line at a time). Any unreadable line, or a line of the
    /// wrong shape, is an error naming its line.
    pub fn read(bytes: &[u8], limits: &Limits) -> Result<Transcript, TranscriptError> {
        let mut reader = TranscriptReader::new(limits);
        for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
            reader.line(n + 1, line)?;
        }
        reader.finish()
    }

    /// One level's sequences, `runs[r][i]`, for `reps` repetitions; the
    /// first missing (repetition, request) if any is missing.
    pub fn runs(&self, level: u64, reps: u64) -> Result<Runs, (u64, u64)> {
        (0..reps)
            .map(|r| {
                (0..self.request_count)
                    .map(|i| self.sequences.get(&(level, r, i)).cloned().ok_or((r, i)))
                    .collect()
            })
            .collect()
    }

    /// L13-L15 against a receipt (`v`, whose `signed_body` is `body`).
    pub(super) fn check(&self, v: Val, body: Val, r: &mut Report) {
        if let Some(id) = &self.receipt_id {
            if text(v, "receipt_id") != Some(id.as_str()) {
                r.error(
                    rule::L14,
                    "/receipt_id",
                    format!("the transcript's end line names another receipt, {id}"),
                );
            }
        }
        if let Some(Some(why)) = &self.end {
            r.error(
                rule::L14,
                "",
                format!("the transcript is marked incomplete: {why}"),
            );
        }
        self.l13_commitments(body, r);
        self.l14_lengths(r);
        let levels = self.l14_recorded(body, r);
        if let Some(levels) = levels {
            self.l15_divergence(body, &levels, r);
        }
        self.l16_server_occupancy(body, r);
    }

    /// L16 (a warning, chit's own): a level whose server-reported
    /// occupancy never reached its induced concurrency, over at least
    /// [`MIN_OCCUPANCY_SAMPLES`] samples. The gateway counted
    /// its own requests as decoding; the server's count says whether it
    /// really ran them together.
    fn l16_server_occupancy(&self, body: Val, r: &mut Report) {
        let Some(levels) = body.get("levels").and_then(|l| l.as_array()) else {
            return;
        };
        for (i, level) in levels.enumerate() {
            let (Some(index), Some(c)) =
                (int(level, "level_index"), int(level, "induced_concurrency"))
            else {
                continue;
            };
            let short = self
                .server_occupancy
                .get(&index)
                .and_then(|o| o.short_of(c, index));
            if let Some(why) = short {
                r.warning(rule::L16, format!("/signed_body/levels/{i}"), why);
            }
        }
    }

    /// L13: the salt and every identity commitment open.
    fn l13_commitments(&self, body: Val, r: &mut Report) {
        let salt = &self.salt;
        let get = |a: &str, b: &str| body.get(a).and_then(|x| text(x, b));
        let mut open = |path: &str, got: Option<&str>, want: String, what: &str| {
            if got != Some(want.as_str()) {
                r.error(
                    rule::L13,
                    path,
                    format!("{what} does not open with the transcript's salt"),
                );
            }
        };
        open(
            "/signed_body/salt/commitment_sha256",
            get("salt", "commitment_sha256"),
            math::salt_commitment(salt),
            "the salt commitment",
        );
        open(
            "/signed_body/gateway_ref/commitment",
            get("gateway_ref", "commitment"),
            math::identity_commitment(salt, &self.gateway),
            "the gateway commitment",
        );
        open(
            "/signed_body/endpoint_ref/commitment",
            get("endpoint_ref", "commitment"),
            math::identity_commitment(salt, &self.endpoint),
            "the endpoint commitment",
        );
        if let Some(c) = get("effect", "reroute_target_commitment") {
            match &self.reroute {
                Some(target) => open(
                    "/signed_body/effect/reroute_target_commitment",
                    Some(c),
                    math::identity_commitment(salt, target),
                    "the reroute target commitment",
                ),
                None => r.error(
                    rule::L13,
                    "/signed_body/effect/reroute_target_commitment",
                    "the receipt commits to a reroute target the transcript does not name",
                ),
            }
        } else if self.reroute.is_some()
            && get("divergence", "class") == Some(Class::Coupled.name())
        {
            r.error(
                rule::L13,
                "/signed_body/effect/reroute_target_commitment",
                "the transcript names a reroute target, declared batch invariant, but this coupled endpoint's receipt commits to none",
            );
        }
    }

    /// L14: no recorded sequence is longer than its request's `max_tokens`
    /// (an endpoint that streams more than it was asked for is not
    /// measured). The first such sequence is named, and how many more.
    fn l14_lengths(&self, r: &mut Report) {
        let mut over = self.sequences.iter().filter_map(|(&(l, rep, i), tokens)| {
            let max = usize::try_from(i)
                .ok()
                .and_then(|i| self.request_max_tokens.get(i).copied().flatten())?;
            (tokens.len() as u64 > max).then_some((l, rep, i, tokens.len(), max))
        });
        if let Some((l, rep, i, len, max)) = over.next() {
            let more = over.count();
            r.error(
                rule::L14,
                format!("/signed_body/levels/{l}"),
                format!(
                    "level {l}, repetition {rep}, request {i}: the transcript records {len} tokens, more than its request's max_tokens of {max}{}",
                    if more > 0 {
                        format!(" (and {more} more sequences over their max_tokens)")
                    } else {
                        String::new()
                    }
                ),
            );
        }
    }

    /// L14: the request set and each level's figures recompute from the
    /// recorded sequences (and the in-flight counts, where recorded).
    /// Returns the levels' sequences when all are there.
    fn l14_recorded(&self, body: Val, r: &mut Report) -> Option<Vec<Runs>> {
        let set = body.get("request_set");
        if set.and_then(|s| text(s, "set_digest_sha256")) != Some(self.set_digest.as_str()) {
            r.error(
                rule::L14,
                "/signed_body/request_set/set_digest_sha256",
                format!("the recorded request set's digest is {}", self.set_digest),
            );
        }
        if self.max_tokens > 0
            && set.and_then(|s| int(s, "max_output_tokens")) != Some(self.max_tokens)
        {
            r.error(
                rule::L14,
                "/signed_body/request_set/max_output_tokens",
                format!(
                    "the recorded request set's largest max_tokens is {}",
                    self.max_tokens
                ),
            );
        }
        if set.and_then(|s| int(s, "request_count")) != Some(self.request_count) {
            r.error(
                rule::L14,
                "/signed_body/request_set/request_count",
                format!("the transcript records {} requests", self.request_count),
            );
        }
        let mut all = Vec::new();
        let mut complete = true;
        let levels: Vec<Val> = body
            .get("levels")
            .map(|l| l.items().collect())
            .unwrap_or_default();
        let mut covered = 0usize;
        for (l, lv) in levels.iter().enumerate() {
            let at = format!("/signed_body/levels/{l}");
            let reps = int(*lv, "repetitions").unwrap_or(0);
            let runs = match self.runs(l as u64, reps) {
                Ok(runs) => runs,
                Err((rep, i)) => {
                    r.error(
                        rule::L14,
                        at,
                        format!("the transcript has no sequence for level {l}, repetition {rep}, request {i}"),
                    );
                    complete = false;
                    continue;
                }
            };
            // Every (repetition, request) was found, so this is at most the
            // number of recorded sequences; saturating all the same.
            covered = covered.saturating_add(
                usize::try_from(reps.saturating_mul(self.request_count)).unwrap_or(usize::MAX),
            );
            let checks: [(&str, Option<String>, String); 3] = [
                (
                    "sequence_digest_sha256",
                    text(*lv, "sequence_digest_sha256").map(str::to_owned),
                    math::sequence_digest(&runs),
                ),
                (
                    "emitted_token_count",
                    int(*lv, "emitted_token_count").map(|x| x.to_string()),
                    math::token_count(&runs).to_string(),
                ),
                (
                    "distinct_sequence_count",
                    int(*lv, "distinct_sequence_count").map(|x| x.to_string()),
                    math::distinct_count(&runs).to_string(),
                ),
            ];
            for (field, got, want) in checks {
                if got.as_deref() != Some(want.as_str()) {
                    r.error(
                        rule::L14,
                        format!("{at}/{field}"),
                        format!("{field} recomputes to {want} from the recorded sequences"),
                    );
                }
            }
            self.in_flight_figures(l as u64, reps, *lv, &at, r);
            all.push(runs);
        }
        if complete && covered != self.sequences.len() {
            r.error(
                rule::L14,
                "/signed_body/levels",
                format!(
                    "the transcript records {} measured sequences; the receipt's levels account for {covered}",
                    self.sequences.len()
                ),
            );
        }
        complete.then_some(all)
    }

    /// The observed in-flight figures, where the transcript recorded the
    /// count for every measured request of the level.
    fn in_flight_figures(&self, level: u64, reps: u64, lv: Val, at: &str, r: &mut Report) {
        let all: Vec<Option<(u64, u64)>> = (0..reps)
            .flat_map(|rep| (0..self.request_count).map(move |i| (level, rep, i)))
            .map(|k| self.in_flight.get(&k).copied())
            .collect();
        let counts: Vec<(u64, u64)> = all.iter().flatten().copied().collect();
        if counts.is_empty() {
            // A transcript that records no counts (the public vector's).
            return;
        }
        if counts.len() < all.len() {
            // Some recorded, some not: a count taken away would hide the
            // request that kept the level from its concurrency.
            r.error(
                rule::L14,
                at.to_owned(),
                format!(
                    "the transcript records in-flight counts for {} of this level's {} requests; a gateway records all or none",
                    counts.len(),
                    all.len()
                ),
            );
            return;
        }
        let accept = counts.iter().map(|c| c.0).min().unwrap_or(0);
        let complete = counts.iter().map(|c| c.1).min().unwrap_or(0);
        for (field, want) in [
            ("observed_in_flight_at_accept", accept),
            ("observed_in_flight_at_complete", complete),
        ] {
            if int(lv, field) != Some(want) {
                r.error(
                    rule::L14,
                    format!("{at}/{field}"),
                    format!("{field} is {want} in the transcript"),
                );
            }
        }
    }

    /// L15: the divergence block recomputes from the sequences.
    fn l15_divergence(&self, body: Val, levels: &[Runs], r: &mut Report) {
        let Some(d) = body.get("divergence") else {
            return;
        };
        let refs: Vec<&Runs> = levels.iter().collect();
        let Some(want) = math::divergence(&refs) else {
            return;
        };
        let c = want.comparison;
        let scale = int(d, "fraction_scale")
            .and_then(|s| u32::try_from(s).ok())
            .unwrap_or(math::DEFAULT_FRACTION_SCALE);
        let fields: [(&str, Option<u64>, Option<u64>); 5] = [
            (
                "pair_high_level_index",
                int(d, "pair_high_level_index"),
                Some(want.high as u64),
            ),
            (
                "first_divergent_index",
                int(d, "first_divergent_index"),
                c.first,
            ),
            (
                "differing_position_count",
                int(d, "differing_position_count"),
                Some(c.differing),
            ),
            (
                "compared_position_count",
                int(d, "compared_position_count"),
                Some(c.compared),
            ),
            (
                "fraction_numerator",
                int(d, "fraction_numerator"),
                math::fraction_numerator(c.differing, c.compared, scale),
            ),
        ];
        for (field, got, want) in fields {
            if got != want {
                r.error(
                    rule::L15,
                    format!("/signed_body/divergence/{field}"),
                    format!(
                        "{field} recomputes to {} from the recorded sequences",
                        want.map_or("null".to_owned(), |w| w.to_string())
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_line() {
        let read = |t: &str| {
            Transcript::read(t.as_bytes(), &Limits::default())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            read("{\"salt\": \"s\", \"endpoint\": \"e\"}"),
            "line 1: the header has no gateway"
        );
        assert_eq!(
            read("{\"salt\": \"s\", \"endpoint\": \"e\", \"gateway\": \"g\"}\n{}"),
            "line 2: the second line must be {\"requests\": [...]}"
        );
        assert!(read("{\n").starts_with("line 1: "));
        assert_eq!(read(""), "the transcript has no header and request set");
    }

    #[test]
    fn rendered_prompts_are_read_and_a_malformed_line_named() {
        let head = "{\"salt\": \"s\", \"endpoint\": \"e\", \"gateway\": \"g\"}\n{\"requests\": [{\"messages\": []}, {\"messages\": []}]}\n";
        let read =
            |line: &str| Transcript::read(format!("{head}{line}\n").as_bytes(), &Limits::default());
        let t = read(
            r#"{"rendered_prompts": {"source": "http://h/apply-template", "prompts": ["a", "b"]}}"#,
        )
        .unwrap();
        assert_eq!(t.rendered_by.as_deref(), Some("http://h/apply-template"));
        let t = read(r#"{"rendered_prompts": {"source": "http://h/v1/tokenize", "token_ids": [[1, 2], [3]]}}"#).unwrap();
        assert_eq!(t.rendered_by.as_deref(), Some("http://h/v1/tokenize"));
        let twice = r#"{"rendered_prompts": {"source": "s", "prompts": ["a", "b"]}}"#;
        assert_eq!(
            read(&format!("{twice}\n{twice}")).unwrap_err().to_string(),
            "line 4: a rendered_prompts line needs its source and one prompt (text or token ids) for each request, once"
        );
        for bad in [
            r#"{"rendered_prompts": {"prompts": ["a", "b"]}}"#,
            r#"{"rendered_prompts": {"source": "s", "prompts": ["a"]}}"#,
            r#"{"rendered_prompts": {"source": "s", "token_ids": [[1], [-2]]}}"#,
            r#"{"rendered_prompts": {"source": "s", "prompts": ["a", 2]}}"#,
            r#"{"rendered_prompts": "a"}"#,
            r#"{"rendered_prompts": {"source": "s", "prompts": ["a", [1]]}}"#,
            r#"{"rendered_prompts": {"source": "s", "token_ids": [[1], "b"]}}"#,
        ] {
            assert_eq!(
                read(bad).unwrap_err().to_string(),
                "line 3: a rendered_prompts line needs its source and one prompt (text or token ids) for each request, once",
                "{bad}"
            );
        }
    }

    #[test]
    fn a_line_at_a_time_reads_as_the_whole() {
        let text = "{\"salt\": \"s\", \"endpoint\": \"e\", \"gateway\": \"g\"}\n\n{\"requests\": [{\"max_tokens\": 2}, {}]}\n{\"level\": 0, \"repetition\": 0, \"request\": 0, \"token_ids\": [1, 2, 3]}\n";
        let whole = Transcript::read(text.as_bytes(), &Limits::default()).unwrap();
        let mut reader = TranscriptReader::new(&Limits::default());
        for (n, line) in text.lines().enumerate() {
            reader.line(n + 1, line.as_bytes()).unwrap();
        }
        let t = reader.finish().unwrap();
        assert_eq!(t.sequences, whole.sequences);
        assert_eq!(t.set_digest, whole.set_digest);
        assert_eq!(t.request_max_tokens, vec![Some(2), None]);
        assert_eq!(t.max_tokens, 2);
        let mut reader = TranscriptReader::new(&Limits::default());
        assert_eq!(
            reader
                .line(7, b"{")
                .unwrap_err()
                .to_string()
                .split(':')
                .next(),
            Some("line 7")
        );
        assert_eq!(
            TranscriptReader::new(&Limits::default())
                .finish()
                .unwrap_err(),
            TranscriptError::NoHeader
        );
    }
}
