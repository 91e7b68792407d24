//! Run receipts, version 0.1: the schema, then rules S1-S5, V1-V5, T1-T5,
//! G1, C1-C5, M1-M3 and D1-D2 of the format's SPEC.md, in that order.
//!
//! As in the reference verifier, the consistency rules run only on a receipt
//! that passed the schema; a receipt that did not gets schema findings alone.
//! Where the reference contradicts SPEC.md or JSON Schema, these rules follow
//! the spec (see docs/compatibility.md).

use crate::canon::{self, Profile};
use crate::digest::sha256_tagged;
use crate::doc::Val;
use crate::report::Report;
use crate::schema;
use crate::time::is_real_utc_timestamp;

pub const KIND: &str = crate::kind::Kind::RunReceipt.name();

/// The rule ids a run receipt is checked against: SPEC.md's, and the
/// schema's.
pub mod rule {
    pub use crate::rule::SCHEMA;

    /// No two seats share a name.
    pub const S1: &str = "S1";
    /// One seat is the lead.
    pub const S2: &str = "S2";
    /// A seat has no more timeouts than errors.
    pub const S3: &str = "S3";
    /// Every reviewer has a stance; the lead has none.
    pub const S4: &str = "S4";
    /// A seat whose cost basis is not `metered` costs nothing.
    pub const S5: &str = "S5";
    /// A verdict exactly when reviewers took part.
    pub const V1: &str = "V1";
    /// The verdict's `agreed` counts the reviewers that agreed.
    pub const V2: &str = "V2";
    /// The holdouts are exactly the reviewers that did not agree, with
    /// their stances.
    pub const V3: &str = "V3";
    /// The outcome is the one the stances give (agreed, majority, none).
    pub const V4: &str = "V4";
    /// The verdict's `reviewers` counts the reviewers its outcome is over.
    pub const V5: &str = "V5";
    /// The totals count the reviewers that answered.
    pub const T1: &str = "T1";
    /// Verifiers, not-visible and contradicted seats are within the
    /// reviewers (and not-visible within those marked so).
    pub const T2: &str = "T2";
    /// Passed, failed and expected add up to at most ran.
    pub const T3: &str = "T3";
    /// No more failing now than ever failed; no more resolved than stopped
    /// failing.
    pub const T4: &str = "T4";
    /// Commands were run exactly when a reviewer is counted as running them.
    pub const T5: &str = "T5";
    /// The grade is the one the totals earn.
    pub const G1: &str = "G1";
    /// A check's runners (`by`, `alsoBy`) are seats of the run.
    pub const C1: &str = "C1";
    /// A check that exited 0 is `checked`.
    pub const C2: &str = "C2";
    /// A check is `blocked` exactly when it names missing setup.
    pub const C3: &str = "C3";
    /// An `unknown` or `untested` check has no exit code.
    pub const C4: &str = "C4";
    /// (Warning) No more checks listed as run than the totals count.
    pub const C5: &str = "C5";
    /// (Warning) The seats' costs add up to the run's, within a cent.
    pub const M1: &str = "M1";
    /// The first reply came within the run.
    pub const M2: &str = "M2";
    /// `endedAt` is a real UTC date and time.
    pub const M3: &str = "M3";
    /// The digest matches the receipt's contents.
    pub const D1: &str = "D1";
    /// (Warning) The receipt carries a digest.
    pub const D2: &str = "D2";
}

/// The digest a run receipt should carry: SHA-256 over its canonical form
/// without the top-level `digest`. `None` when `doc` is not an object.
pub fn digest(root: Val) -> Option<String> {
    if !root.is_object() {
        return None;
    }
    let mut bytes = Vec::with_capacity(2048);
    canon::write_without(root, "digest", Profile::Jcs, &mut bytes);
    Some(sha256_tagged(&bytes))
}

/// Checks a run receipt: schema first, then every rule.
pub fn check(root: Val) -> Report {
    let mut r = Report::new(KIND);
    if !schema::RUN_RECEIPT.check(root, &mut r) {
        return r;
    }
    let Some(rc) = Receipt::view(root) else {
        r.error(
            rule::SCHEMA,
            "",
            "the receipt does not have the shape the schema describes",
        );
        return r;
    };
    s1_seat_names_unique(&rc, &mut r);
    s2_a_lead(&rc, &mut r);
    for seat in &rc.seats {
        s3_timeouts_within_errors(seat, &mut r);
        s4_stances(seat, &mut r);
        s5_unmetered_costs_nothing(seat, &mut r);
    }
    verdict_rules(&rc, &mut r);
    t1_reviewers_counted(&rc, &mut r);
    t2_subcounts_bounded(&rc, &mut r);
    t3_outcomes_within_ran(&rc, &mut r);
    t4_failures_bounded(&rc, &mut r);
    t5_ran_iff_verifiers(&rc, &mut r);
    g1_grade_earned(&rc, &mut r);
    for check in &rc.checks {
        c1_runners_are_seats(&rc, check, &mut r);
        c2_exit_zero_is_checked(check, &mut r);
        c3_blocked_iff_missing_setup(check, &mut r);
        c4_unrun_has_no_exit_code(check, &mut r);
    }
    c5_listed_within_ran(&rc, &mut r);
    m1_costs_add_up(&rc, &mut r);
    m2_first_reply_in_run(&rc, &mut r);
    m3_real_date(&rc, &mut r);
    d1_digest_matches(&rc, root, &mut r);
    d2_digest_present(&rc, &mut r);
    r
}

/// The grade a receipt's totals earn (SPEC, "Grade"): the first rule that applies.
pub fn grade_of(t: &Totals) -> &'static str {
    if t.failing_now > 0 || t.contradicted > 0 {
        "failed"
    } else if t.ran > 0 {
        if t.verifiers >= t.reviewers {
            "verified"
        } else {
            "partial"
        }
    } else if t.files_changed == Some(0) {
        "reviewed"
    } else if t.reviewers > 0 && t.not_visible.unwrap_or(0) >= t.reviewers {
        "not-visible"
    } else {
        "unverified"
    }
}

// ── A typed view of a receipt that passed the schema ─────────────────────

pub struct Seat<'a> {
    pub index: usize,
    pub name: &'a str,
    pub role: &'a str,
    pub errors: i64,
    pub timeouts: i64,
    pub cost_usd: f64,
    pub cost_basis: Option<&'a str>,
    pub stance: Option<&'a str>,
    pub commands_visible: Option<bool>,
}

impl Seat<'_> {
    fn is_reviewer(&self) -> bool {
        self.role == "reviewer"
    }
    fn path(&self) -> String {
        format!("/seats/{}", self.index)
    }
}

pub struct Holdout<'a> {
    pub name: &'a str,
    pub stance: &'a str,
}

pub struct ReviewVerdict<'a> {
    pub outcome: &'a str,
    pub agreed: i64,
    pub reviewers: i64,
    pub holdouts: Vec<Holdout<'a>>,
}

pub struct Check<'a> {
    pub index: usize,
    pub by: Option<&'a str>,
    pub also_by: Vec<&'a str>,
    pub command: &'a str,
    /// `None` for a null exit code.
    pub exit_code: Option<f64>,
    pub missing_setup: Option<&'a str>,
    pub state: &'a str,
    pub where_: &'a str,
    pub deployed: bool,
}

impl Check<'_> {
    fn path(&self) -> String {
        format!("/checks/{}", self.index)
    }
    fn label(&self) -> String {
        format!("checks[{}]", self.index)
    }
}

pub struct Totals {
    pub reviewers: i64,
    pub verifiers: i64,
    pub not_visible: Option<i64>,
    pub contradicted: i64,
    pub ran: i64,
    pub passed: i64,
    pub failed: i64,
    pub failing_now: i64,
    pub expected: Option<i64>,
    pub resolved: Option<i64>,
    pub files_changed: Option<i64>,
}

pub struct Receipt<'a> {
    pub ended_at: &'a str,
    pub duration_ms: i64,
    pub first_reply_ms: Option<i64>,
    pub cost_usd: f64,
    pub seats: Vec<Seat<'a>>,
    pub verdict: Option<ReviewVerdict<'a>>,
    pub checks: Vec<Check<'a>>,
    pub totals: Totals,
    pub grade: &'a str,
    pub gaps: Vec<&'a str>,
    pub digest: Option<&'a str>,
}

/// An integer field (the schema has bounded it, so it fits).
fn int(v: Option<Val>) -> Option<i64> {
    let x = v?.as_f64()?;
    Some(x as i64)
}

fn num(v: Option<Val>) -> Option<f64> {
    v?.as_f64()
}

fn text<'a>(o: Val<'a>, k: &str) -> Option<&'a str> {
    o.get(k)?.as_str()
}

impl<'a> Receipt<'a> {
    /// Reads the fields the rules use. `None` if the receipt lacks the
    /// schema's shape (which the schema check has already ruled out).
    /// The view of a document checked as a run receipt (`report` its
    /// check's) that passed its schema: what a front end may show of it.
    pub fn view_checked(report: &Report, o: Val<'a>) -> Option<Receipt<'a>> {
        if report.kind != KIND || report.breaks(crate::rule::SCHEMA) {
            return None;
        }
        Receipt::view(o)
    }

    pub fn view(o: Val<'a>) -> Option<Receipt<'a>> {
        if !o.is_object() {
            return None;
        }
        let seats = o
            .get("seats")?
            .as_array()?
            .enumerate()
            .map(|(index, s)| {
                Some(Seat {
                    index,
                    name: text(s, "name")?,
                    role: text(s, "role")?,
                    errors: int(s.get("errors"))?,
                    timeouts: int(s.get("timeouts"))?,
                    cost_usd: num(s.get("costUsd"))?,
                    cost_basis: text(s, "costBasis"),
                    stance: text(s, "stance"),
                    commands_visible: s.get("commandsVisible").and_then(|v| v.as_bool()),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let v = o.get("verdict")?;
        let verdict = if v.is_null() {
            None
        } else if v.is_object() {
            Some(ReviewVerdict {
                outcome: text(v, "outcome")?,
                agreed: int(v.get("agreed"))?,
                reviewers: int(v.get("reviewers"))?,
                holdouts: v
                    .get("holdouts")?
                    .as_array()?
                    .map(|h| {
                        Some(Holdout {
                            name: text(h, "name")?,
                            stance: text(h, "stance")?,
                        })
                    })
                    .collect::<Option<Vec<_>>>()?,
            })
        } else {
            return None;
        };
        let checks = o
            .get("checks")?
            .as_array()?
            .enumerate()
            .map(|(index, c)| {
                Some(Check {
                    index,
                    by: c.get("by")?.as_str(),
                    also_by: match c.get("alsoBy") {
                        None => Vec::new(),
                        Some(a) => a
                            .as_array()?
                            .map(|x| x.as_str())
                            .collect::<Option<Vec<_>>>()?,
                    },
                    command: text(c, "command")?,
                    exit_code: num(c.get("exitCode")),
                    missing_setup: c.get("missingSetup")?.as_str(),
                    state: text(c, "state")?,
                    where_: text(c, "where")?,
                    deployed: c.get("deployed")?.as_bool()?,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let t = o.get("totals")?;
        let totals = Totals {
            reviewers: int(t.get("reviewers"))?,
            verifiers: int(t.get("verifiers"))?,
            not_visible: int(t.get("notVisible")),
            contradicted: int(t.get("contradicted"))?,
            ran: int(t.get("ran"))?,
            passed: int(t.get("passed"))?,
            failed: int(t.get("failed"))?,
            failing_now: int(t.get("failingNow"))?,
            expected: int(t.get("expected")),
            resolved: int(t.get("resolved")),
            files_changed: int(t.get("filesChanged")),
        };
        Some(Receipt {
            ended_at: text(o, "endedAt")?,
            duration_ms: int(o.get("durationMs"))?,
            first_reply_ms: int(o.get("firstReplyMs")),
            cost_usd: num(o.get("costUsd"))?,
            seats,
            verdict,
            checks,
            totals,
            grade: text(o, "grade")?,
            gaps: o
                .get("gaps")?
                .as_array()?
                .map(|g| g.as_str())
                .collect::<Option<Vec<_>>>()?,
            digest: text(o, "digest"),
        })
    }

    fn reviewers(&self) -> impl Iterator<Item = &Seat<'a>> {
        self.seats.iter().filter(|s| s.is_reviewer())
    }

    /// Reviewers that answered: every reviewer whose stance is not
    /// `unavailable` (one with no stance, which S4 reports, counts as answering).
    fn answered(&self) -> impl Iterator<Item = &Seat<'a>> {
        self.reviewers().filter(|s| s.stance != Some("unavailable"))
    }

    fn agreed(&self) -> impl Iterator<Item = &Seat<'a>> {
        self.reviewers().filter(|s| s.stance == Some("agreed"))
    }

    fn is_seat(&self, name: &str) -> bool {
        self.seats.iter().any(|s| s.name == name)
    }
}

// ── Seats ────────────────────────────────────────────────────────────────

fn s1_seat_names_unique(rc: &Receipt, r: &mut Report) {
    let mut names: Vec<&str> = rc.seats.iter().map(|s| s.name).collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        r.error(rule::S1, "/seats", "two seats share a name");
    }
}

fn s2_a_lead(rc: &Receipt, r: &mut Report) {
    if !rc.seats.iter().any(|s| s.role == "lead") {
        r.error(rule::S2, "/seats", "no seat is the lead");
    }
}

fn s3_timeouts_within_errors(s: &Seat, r: &mut Report) {
    if s.timeouts > s.errors {
        r.error(
            rule::S3,
            s.path() + "/timeouts",
            format!("{}: more timeouts than errors", s.name),
        );
    }
}

fn s4_stances(s: &Seat, r: &mut Report) {
    if s.is_reviewer() && s.stance.is_none() {
        r.error(
            rule::S4,
            s.path(),
            format!("{}: a reviewer needs a stance", s.name),
        );
    }
    if s.role == "lead" && s.stance.is_some() {
        r.error(
            rule::S4,
            s.path() + "/stance",
            format!("{}: the lead has no stance", s.name),
        );
    }
}

fn s5_unmetered_costs_nothing(s: &Seat, r: &mut Report) {
    if let Some(basis) = s.cost_basis {
        if basis != "metered" && s.cost_usd > 0.0 {
            r.error(
                rule::S5,
                s.path() + "/costUsd",
                format!("{}: a {basis} seat cannot carry a metered cost", s.name),
            );
        }
    }
}

// ── Verdict ──────────────────────────────────────────────────────────────

fn verdict_rules(rc: &Receipt, r: &mut Report) {
    let reviewers = rc.reviewers().count();
    match (&rc.verdict, reviewers) {
        (Some(_), 0) => r.error(
            rule::V1,
            "/verdict",
            "nobody reviewed, so there can be no verdict",
        ),
        (None, 0) => {}
        (None, _) => r.error(
            rule::V1,
            "/verdict",
            "reviewers took part, so a verdict is required",
        ),
        (Some(v), _) => {
            v2_agreed_counted(rc, v, r);
            v3_holdouts_exact(rc, v, r);
            v4_v5_outcome(rc, v, r);
        }
    }
}

fn v2_agreed_counted(rc: &Receipt, v: &ReviewVerdict, r: &mut Report) {
    let agreed = rc.agreed().count() as i64;
    if v.agreed != agreed {
        r.error(
            rule::V2,
            "/verdict/agreed",
            format!(
                "verdict counts {} agreeing; the seats show {agreed}",
                v.agreed
            ),
        );
    }
}

fn v3_holdouts_exact(rc: &Receipt, v: &ReviewVerdict, r: &mut Report) {
    let mut want: Vec<(&str, &str)> = rc
        .reviewers()
        .filter_map(|s| s.stance.filter(|&st| st != "agreed").map(|st| (s.name, st)))
        .collect();
    let mut got: Vec<(&str, &str)> = v.holdouts.iter().map(|h| (h.name, h.stance)).collect();
    want.sort_unstable();
    got.sort_unstable();
    if want != got {
        r.error(
            rule::V3,
            "/verdict/holdouts",
            "holdouts are not exactly the reviewers that did not agree",
        );
    }
}

/// V4 and V5 share their case split: an `agreed` outcome is counted over the
/// reviewers that answered, any other over all reviewers.
fn v4_v5_outcome(rc: &Receipt, v: &ReviewVerdict, r: &mut Report) {
    let reviewers = rc.reviewers().count() as i64;
    let answered = rc.answered().count() as i64;
    let agreed = rc.agreed().count() as i64;
    if v.outcome == "agreed" {
        let all_who_answered_agreed =
            answered > 0 && rc.answered().all(|s| s.stance == Some("agreed"));
        if !all_who_answered_agreed {
            r.error(
                rule::V4,
                "/verdict/outcome",
                "outcome is agreed while a reviewer that answered did not agree",
            );
        } else if answered < reviewers && rc.totals.failing_now > 0 {
            r.error(
                rule::V4,
                "/verdict/outcome",
                "outcome is agreed without a reviewer while a check is still failing",
            );
        }
        if v.reviewers != answered {
            r.error(
                rule::V5,
                "/verdict/reviewers",
                format!(
                    "an agreed verdict counts the reviewers that answered ({answered}), not {}",
                    v.reviewers
                ),
            );
        }
    } else {
        let expected = if agreed * 2 > reviewers {
            "majority"
        } else {
            "none"
        };
        if v.outcome != expected {
            r.error(
                rule::V4,
                "/verdict/outcome",
                format!("outcome should be {expected}: {agreed} of {reviewers} agree"),
            );
        }
        if v.reviewers != reviewers {
            r.error(
                rule::V5,
                "/verdict/reviewers",
                format!(
                    "verdict counts {} reviewers; the seats show {reviewers}",
                    v.reviewers
                ),
            );
        }
    }
}

// ── Totals ───────────────────────────────────────────────────────────────

fn t1_reviewers_counted(rc: &Receipt, r: &mut Report) {
    let answered = rc.answered().count() as i64;
    if rc.totals.reviewers != answered {
        r.error(
            rule::T1,
            "/totals/reviewers",
            format!(
                "totals count {} reviewers; {answered} answered",
                rc.totals.reviewers
            ),
        );
    }
}

fn t2_subcounts_bounded(rc: &Receipt, r: &mut Report) {
    let t = &rc.totals;
    let not_visible = t.not_visible.unwrap_or(0);
    if t.verifiers > t.reviewers {
        r.error(
            rule::T2,
            "/totals/verifiers",
            "more verifiers than reviewers",
        );
    }
    if not_visible > t.reviewers {
        r.error(
            rule::T2,
            "/totals/notVisible",
            "more not-visible seats than reviewers",
        );
    }
    if t.contradicted > t.reviewers {
        r.error(
            rule::T2,
            "/totals/contradicted",
            "more contradicted seats than reviewers",
        );
    }
    let hidden = rc
        .reviewers()
        .filter(|s| s.commands_visible == Some(false))
        .count() as i64;
    if not_visible > hidden {
        r.error(
            rule::T2,
            "/totals/notVisible",
            format!(
                "totals count {not_visible} not-visible seats; {hidden} reviewer(s) are marked so"
            ),
        );
    }
}

fn t3_outcomes_within_ran(rc: &Receipt, r: &mut Report) {
    let t = &rc.totals;
    if t.passed + t.failed + t.expected.unwrap_or(0) > t.ran {
        r.error(
            rule::T3,
            "/totals",
            "passed, failed and expected add up to more than ran",
        );
    }
}

fn t4_failures_bounded(rc: &Receipt, r: &mut Report) {
    let t = &rc.totals;
    if t.failing_now > t.failed {
        r.error(
            rule::T4,
            "/totals/failingNow",
            "more checks failing now than ever failed",
        );
    }
    if t.resolved.unwrap_or(0) > t.failed - t.failing_now {
        r.error(
            rule::T4,
            "/totals/resolved",
            "more checks resolved than stopped failing",
        );
    }
}

fn t5_ran_iff_verifiers(rc: &Receipt, r: &mut Report) {
    let t = &rc.totals;
    if t.ran > 0 && t.verifiers == 0 {
        r.error(
            rule::T5,
            "/totals",
            "commands were run, but no reviewer is counted as running any",
        );
    }
    if t.ran == 0 && t.verifiers > 0 {
        r.error(
            rule::T5,
            "/totals",
            "a reviewer is counted as running commands, but none were run",
        );
    }
}

// ── Grade ────────────────────────────────────────────────────────────────

fn g1_grade_earned(rc: &Receipt, r: &mut Report) {
    let earned = grade_of(&rc.totals);
    if rc.grade != earned {
        r.error(
            rule::G1,
            "/grade",
            format!("grade is {}; the totals earn {earned}", rc.grade),
        );
    }
}

// ── Checks ───────────────────────────────────────────────────────────────

fn c1_runners_are_seats(rc: &Receipt, c: &Check, r: &mut Report) {
    let by = c.by.map(|b| (b, c.path() + "/by"));
    let also = c
        .also_by
        .iter()
        .enumerate()
        .map(|(i, &b)| (b, format!("{}/alsoBy/{i}", c.path())));
    for (who, path) in by.into_iter().chain(also) {
        if !rc.is_seat(who) {
            r.error(
                rule::C1,
                path,
                format!("{}: {who} is not a seat in this run", c.label()),
            );
        }
    }
}

fn c2_exit_zero_is_checked(c: &Check, r: &mut Report) {
    if c.exit_code == Some(0.0) && c.state != "checked" {
        r.error(
            rule::C2,
            c.path() + "/state",
            format!(
                "{}: exited 0, so its state is checked, not {}",
                c.label(),
                c.state
            ),
        );
    }
}

fn c3_blocked_iff_missing_setup(c: &Check, r: &mut Report) {
    if (c.state == "blocked") != c.missing_setup.is_some() {
        r.error(
            rule::C3,
            c.path() + "/missingSetup",
            format!("{}: blocked and missing setup go together", c.label()),
        );
    }
}

fn c4_unrun_has_no_exit_code(c: &Check, r: &mut Report) {
    if (c.state == "unknown" || c.state == "untested") && c.exit_code.is_some() {
        r.error(
            rule::C4,
            c.path() + "/exitCode",
            format!("{}: a state of {} has no exit code", c.label(), c.state),
        );
    }
}

fn c5_listed_within_ran(rc: &Receipt, r: &mut Report) {
    let listed = rc.checks.iter().filter(|c| c.state != "untested").count() as i64;
    if listed > rc.totals.ran {
        r.warning(
            rule::C5,
            "/checks",
            format!(
                "{listed} checks are listed as run, but the totals count {}",
                rc.totals.ran
            ),
        );
    }
}

// ── Money and time ───────────────────────────────────────────────────────

fn m1_costs_add_up(rc: &Receipt, r: &mut Report) {
    // Summed left to right from zero, as the reference does, so the same
    // doubles round the same way.
    let seats = rc.seats.iter().fold(0.0f64, |n, s| n + s.cost_usd);
    if (seats - rc.cost_usd).abs() > 0.01 {
        r.warning(
            rule::M1,
            "/costUsd",
            format!(
                "seats add up to ${seats:.4}; the run says ${:.4}",
                rc.cost_usd
            ),
        );
    }
}

fn m2_first_reply_in_run(rc: &Receipt, r: &mut Report) {
    if rc.first_reply_ms.is_some_and(|f| f > rc.duration_ms) {
        r.error(
            rule::M2,
            "/firstReplyMs",
            "the first reply came after the run ended",
        );
    }
}

fn m3_real_date(rc: &Receipt, r: &mut Report) {
    if !is_real_utc_timestamp(rc.ended_at) {
        r.error(
            rule::M3,
            "/endedAt",
            format!("endedAt is not a real date: {}", rc.ended_at),
        );
    }
}

// ── Digest ───────────────────────────────────────────────────────────────

fn d1_digest_matches(rc: &Receipt, root: Val, r: &mut Report) {
    if let Some(claimed) = rc.digest {
        if digest(root).as_deref() != Some(claimed) {
            r.error(
                rule::D1,
                "/digest",
                "digest does not match the receipt's contents",
            );
        }
    }
}

fn d2_digest_present(rc: &Receipt, r: &mut Report) {
    if rc.digest.is_none() {
        r.warning(
            rule::D2,
            "/digest",
            "no digest, so a copy cannot be told from an edited one",
        );
    }
}
