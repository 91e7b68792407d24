//! Calendar checks for timestamps.
//!
//! The calendar (real dates, leap years, instants) is jiff's. jiff's parser
//! also reads forms that RFC 3339 does not allow and chit refuses (RFC 9557
//! and ISO 8601: a space for `T`, `+0530` or `+05` offsets, times without
//! seconds, `,5` fractions, `[UTC]` annotations) and reads a leap second
//! `:60` as `:59`; so [`shape`] checks the RFC 3339 grammar byte by byte
//! first, and jiff only sees the date and time of a text of that shape.

use jiff::civil::DateTime;
use jiff::fmt::temporal::DateTimeParser;
use jiff::SignedDuration;

static PARSER: DateTimeParser = DateTimeParser::new();
const UNIX_EPOCH: DateTime = DateTime::constant(1970, 1, 1, 0, 0, 0, 0);

/// A text of RFC 3339 shape, cut into its parts.
struct Shape<'a> {
    /// `YYYY-MM-DDTHH:MM:SS`.
    head: &'a [u8],
    /// The fraction's digits, without the dot; empty when there is none.
    fraction: &'a [u8],
    /// The offset from UTC in minutes: 0 for `Z`, negative west of it.
    offset_minutes: i32,
}

/// `s` cut into its parts if it has the RFC 3339 shape
/// `YYYY-MM-DDTHH:MM:SS[.f…]Z|±HH:MM` with ASCII digits, `T` or `t`, `Z`
/// or `z`, a fraction of at least one digit, offset hours 00-23 and
/// minutes 00-59, and seconds below 60 (chit refuses leap seconds, which
/// jiff would read as `:59`). The calendar is left to jiff.
fn shape(s: &str) -> Option<Shape<'_>> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let head = &b[..19];
    let digits_at = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18];
    if !digits_at.iter().all(|&i| head[i].is_ascii_digit())
        || head[4] != b'-'
        || head[7] != b'-'
        || !matches!(head[10], b'T' | b't')
        || head[13] != b':'
        || head[16] != b':'
        || head[17] > b'5'
    {
        return None;
    }
    let mut end = 19;
    if b[19] == b'.' {
        end = 20;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        if end == 20 {
            return None;
        }
    }
    let fraction = b.get(20..end).unwrap_or_default();
    let two = |a: u8, b: u8| {
        (a.is_ascii_digit() && b.is_ascii_digit())
            .then(|| i32::from(a - b'0') * 10 + i32::from(b - b'0'))
    };
    let offset_minutes = match &b[end..] {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => match (two(*h1, *h2), two(*m1, *m2)) {
            (Some(h), Some(m)) if h < 24 && m < 60 => {
                let minutes = h * 60 + m;
                if *sign == b'-' {
                    -minutes
                } else {
                    minutes
                }
            }
            _ => return None,
        },
        _ => return None,
    };
    Some(Shape {
        head,
        fraction,
        offset_minutes,
    })
}

/// The civil date and time of a text of RFC 3339 shape, if the calendar
/// has it. The fraction is cut to nine digits (jiff's nanoseconds, and
/// all that [`rfc3339_nanos`] counts).
fn civil(shape: &Shape) -> Option<DateTime> {
    let mut buf = [0u8; 29];
    buf[..19].copy_from_slice(shape.head);
    let mut len = 19;
    if !shape.fraction.is_empty() {
        let digits = &shape.fraction[..shape.fraction.len().min(9)];
        buf[19] = b'.';
        buf[20..20 + digits.len()].copy_from_slice(digits);
        len = 20 + digits.len();
    }
    PARSER.parse_datetime(&buf[..len]).ok()
}

/// Whether `s`, of the form `YYYY-MM-DDTHH:MM:SS[.fff]Z` (ASCII digits, as
/// the schemas' patterns already ensure), names a real instant: a month of
/// 1-12, a day that month has (leap years by the Gregorian rule), hours
/// 00-23, minutes and seconds 00-59. Anything else is not a real date.
pub fn is_real_utc_timestamp(s: &str) -> bool {
    // The stricter form: upper-case `T` and `Z` (a text of RFC 3339 shape
    // that ends in `Z` has no offset) and a fraction of one to three digits.
    shape(s).is_some_and(|sh| {
        sh.head[10] == b'T' && s.ends_with('Z') && sh.fraction.len() <= 3 && civil(&sh).is_some()
    })
}

/// Whether `s` is an RFC 3339 date-time naming a real instant:
/// `YYYY-MM-DDTHH:MM:SS`, an optional fraction of any length, then `Z` or an
/// offset `±HH:MM` (hours 00-23, minutes 00-59). `t` and `z` are accepted in
/// lower case, as RFC 3339 allows.
pub fn is_rfc3339(s: &str) -> bool {
    shape(s).is_some_and(|sh| civil(&sh).is_some())
}

/// The instant an RFC 3339 time names, in nanoseconds since 1970-01-01
/// UTC; `None` if [`is_rfc3339`] refuses it. For ordering times. Digits of
/// the fraction past the ninth are not counted.
pub fn rfc3339_nanos(s: &str) -> Option<i128> {
    // Called once a packet in a stream: it allocates nothing.
    let sh = shape(s)?;
    let local = civil(&sh)?.duration_since(UNIX_EPOCH).as_nanos();
    Some(local - i128::from(sh.offset_minutes) * 60 * 1_000_000_000)
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a count of seconds since 1970-01-01 UTC.
/// Times past the end of year 9999 (RFC 3339 has four-digit years) give
/// `9999-12-31T23:59:59Z`.
pub fn format_unix_utc(secs: u64) -> String {
    let at = i64::try_from(secs)
        .ok()
        .and_then(|secs| UNIX_EPOCH.checked_add(SignedDuration::from_secs(secs)).ok())
        .unwrap_or(DateTime::MAX);
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::is_real_utc_timestamp as ok;

    #[test]
    fn instants_order() {
        use super::rfc3339_nanos as n;
        assert_eq!(n("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            n("2026-11-30T07:59:59Z"),
            Some(1_796_025_599 * 1_000_000_000)
        );
        assert_eq!(n("2026-11-30T09:59:59+02:00"), n("2026-11-30T07:59:59Z"));
        assert!(n("2026-11-30T07:59:59.5Z") > n("2026-11-30T07:59:59.499999Z"));
        assert_eq!(n("2026-02-30T00:00:00Z"), None);
    }

    #[test]
    fn unix_times() {
        use super::format_unix_utc as f;
        assert_eq!(f(0), "1970-01-01T00:00:00Z");
        assert_eq!(f(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(f(1_796_025_599), "2026-11-30T07:59:59Z");
        assert_eq!(f(4_102_444_800), "2100-01-01T00:00:00Z");
    }

    #[test]
    fn rfc3339_forms() {
        use super::is_rfc3339;
        for good in [
            "2026-11-30T08:58:34Z",
            "2026-11-30t08:58:34z",
            "2026-11-30T08:58:34.123456789+05:30",
            "2026-11-30T08:58:34-00:00",
        ] {
            assert!(is_rfc3339(good), "{good}");
        }
        for bad in [
            "2026-11-30T08:58:34",
            "2026-11-30T08:58:34.Z",
            "2026-11-30T08:58:34+5:30",
            "2026-11-30T08:58:34+24:00",
            "2026-02-30T08:58:34Z",
            "2026-11-30 08:58:34Z",
        ] {
            assert!(!is_rfc3339(bad), "{bad}");
        }
    }

    #[test]
    fn real_and_unreal_dates() {
        for good in [
            "2026-11-10T16:42:07Z",
            "2024-02-29T00:00:00Z",
            "2000-02-29T23:59:59.999Z",
            "0000-01-01T00:00:00Z",
            "2026-01-31T00:00:00.5Z",
        ] {
            assert!(ok(good), "{good}");
        }
        for bad in [
            "2026-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-00-10T00:00:00Z",
            "2026-01-00T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T23:60:00Z",
            "2026-01-01T23:59:60Z",
            "2026-01-01T00:00:00.Z",
            "2026-01-01T00:00:00.1234Z",
            "2026-01-01T00:00:00",
            "2026-01-01 00:00:00Z",
            "",
        ] {
            assert!(!ok(bad), "{bad}");
        }
    }

    /// The hand-written functions these replaced, kept to compare verdicts.
    mod old {
        /// Whether `s`, of the form `YYYY-MM-DDTHH:MM:SS[.fff]Z` (ASCII digits, as
        /// the schemas' patterns already ensure), names a real instant: a month of
        /// 1-12, a day that month has (leap years by the Gregorian rule), hours
        /// 00-23, minutes and seconds 00-59. Anything else is not a real date.
        pub fn is_real_utc_timestamp(s: &str) -> bool {
            let b = s.as_bytes();
            if b.len() < 20
                || b[4] != b'-'
                || b[7] != b'-'
                || b[10] != b'T'
                || b[13] != b':'
                || b[16] != b':'
            {
                return false;
            }
            let num = |r: std::ops::Range<usize>| -> Option<u32> {
                let part = b.get(r)?;
                part.iter().try_fold(0u32, |n, &d| {
                    d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
                })
            };
            let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) = (
                num(0..4),
                num(5..7),
                num(8..10),
                num(11..13),
                num(14..16),
                num(17..19),
            ) else {
                return false;
            };
            let rest = &b[19..];
            let tail_ok = match rest {
                [b'Z'] => true,
                [b'.', digits @ .., b'Z'] => {
                    (1..=3).contains(&digits.len()) && digits.iter().all(u8::is_ascii_digit)
                }
                _ => false,
            };
            tail_ok
                && (1..=12).contains(&month)
                && day >= 1
                && day <= days_in_month(year, month)
                && hour < 24
                && minute < 60
                && second < 60
        }

        /// Whether `s` is an RFC 3339 date-time naming a real instant:
        /// `YYYY-MM-DDTHH:MM:SS`, an optional fraction of any length, then `Z` or an
        /// offset `±HH:MM` (hours 00-23, minutes 00-59). `t` and `z` are accepted in
        /// lower case, as RFC 3339 allows.
        pub fn is_rfc3339(s: &str) -> bool {
            let b = s.as_bytes();
            if b.len() < 20 || !matches!(b[10], b'T' | b't') {
                return false;
            }
            let mut end = 19;
            if b.get(19) == Some(&b'.') {
                end = 20;
                while b.get(end).is_some_and(u8::is_ascii_digit) {
                    end += 1;
                }
                if end == 20 {
                    return false;
                }
            }
            let zone = &b[end..];
            let zone_ok = match zone {
                [b'Z' | b'z'] => true,
                [b'+' | b'-', h1, h2, b':', m1, m2] => {
                    let two = |a: u8, b: u8| {
                        (a.is_ascii_digit() && b.is_ascii_digit())
                            .then(|| (a - b'0') * 10 + (b - b'0'))
                    };
                    matches!((two(*h1, *h2), two(*m1, *m2)), (Some(h), Some(m)) if h < 24 && m < 60)
                }
                _ => false,
            };
            let mut head = s[..19].to_string();
            head.push('Z');
            zone_ok && is_real_utc_timestamp(&head.replacen('t', "T", 1))
        }

        /// The instant an RFC 3339 time names, in nanoseconds since 1970-01-01
        /// UTC; `None` if [`is_rfc3339`] refuses it. For ordering times.
        pub fn rfc3339_nanos(s: &str) -> Option<i128> {
            if !is_rfc3339(s) {
                return None;
            }
            let b = s.as_bytes();
            let n = |r: std::ops::Range<usize>| -> i64 { s[r].parse().unwrap_or(0) };
            let (y, mo, d) = (n(0..4), n(5..7), n(8..10));
            let secs_of_day = n(11..13) * 3600 + n(14..16) * 60 + n(17..19);
            // Days from civil (Howard Hinnant).
            let y2 = if mo <= 2 { y - 1 } else { y };
            let era = y2.div_euclid(400);
            let yoe = y2.rem_euclid(400);
            let mp = (mo + 9) % 12;
            let doy = (153 * mp + 2) / 5 + d - 1;
            let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
            let days = era * 146_097 + doe - 719_468;
            let mut nanos = i128::from(days * 86_400 + secs_of_day) * 1_000_000_000;
            let mut i = 19;
            if b[19] == b'.' {
                let mut scale = 100_000_000i128;
                i = 20;
                while i < b.len() && b[i].is_ascii_digit() {
                    nanos += i128::from(b[i] - b'0') * scale;
                    scale /= 10;
                    i += 1;
                }
            }
            if matches!(b[i], b'+' | b'-') {
                let offset =
                    i128::from((n(i + 1..i + 3) * 60 + n(i + 4..i + 6)) * 60) * 1_000_000_000;
                nanos += if b[i] == b'+' { -offset } else { offset };
            }
            Some(nanos)
        }

        /// `YYYY-MM-DDTHH:MM:SSZ` for a count of seconds since 1970-01-01 UTC.
        pub fn format_unix_utc(secs: u64) -> String {
            let days = (secs / 86_400) as i64;
            let rem = secs % 86_400;
            // Howard Hinnant's days-to-civil algorithm.
            let z = days + 719_468;
            let era = z.div_euclid(146_097);
            let doe = z.rem_euclid(146_097);
            let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
            let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
            let mp = (5 * doy + 2) / 153;
            let day = doy - (153 * mp + 2) / 5 + 1;
            let month = if mp < 10 { mp + 3 } else { mp - 9 };
            let year = yoe + era * 400 + i64::from(month <= 2);
            format!(
                "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
                rem / 3600,
                rem % 3600 / 60,
                rem % 60
            )
        }

        fn days_in_month(year: u32, month: u32) -> u32 {
            match month {
                4 | 6 | 9 | 11 => 30,
                2 if year.is_multiple_of(4)
                    && (!year.is_multiple_of(100) || year.is_multiple_of(400)) =>
                {
                    29
                }
                2 => 28,
                _ => 31,
            }
        }
    }

    /// Tricky inputs: leap days, leap seconds, hour 24, offsets (`-00:00`,
    /// out of range, compact), long fractions, lower case, forms jiff reads
    /// but RFC 3339 does not allow.
    const TRICKY: &[&str] = &[
        "2024-02-29T12:00:00Z",
        "2023-02-29T12:00:00Z",
        "2000-02-29T00:00:00Z",
        "2100-02-29T00:00:00Z",
        "1900-02-28T23:59:59Z",
        "0000-02-29T00:00:00Z",
        "9999-12-31T23:59:59Z",
        "9999-12-31T23:59:59.999999999-23:59",
        "0000-01-01T00:00:00+23:59",
        "2026-06-30T23:59:60Z",
        "2016-12-31T23:59:60Z",
        "2026-01-01T23:59:61Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T23:60:00Z",
        "2026-11-30T08:58:34-00:00",
        "2026-11-30T08:58:34+00:00",
        "2026-11-30T08:58:34+23:59",
        "2026-11-30T08:58:34-24:00",
        "2026-11-30T08:58:34+05:60",
        "2026-11-30T08:58:34+0530",
        "2026-11-30T08:58:34+05",
        "2026-11-30T08:58:34+05:30:00",
        "2026-11-30T08:58:34.1Z",
        "2026-11-30T08:58:34.123Z",
        "2026-11-30T08:58:34.1234Z",
        "2026-11-30T08:58:34.123456789Z",
        "2026-11-30T08:58:34.1234567891Z",
        "2026-11-30T08:58:34.99999999999999999999999+01:00",
        "2026-11-30T08:58:34,5Z",
        "2026-11-30T08:58:34.Z",
        "2026-11-30t08:58:34z",
        "2026-11-30t08:58:34Z",
        "2026-11-30T08:58:34z",
        "2026-11-30t08:58:34.5+01:00",
        "2026-11-30 08:58:34Z",
        "2026-11-30T08:58Z",
        "2026-11-30T08:58:34Z[UTC]",
        "2026-11-30T08:58:34",
        "+002026-11-30T08:58:34Z",
        "2026-11-30T08:58:34ZZ",
        "2026-11-30T08:58:34+01:00Z",
        "2026-1-30T08:58:34Z",
        "２０２６-01-01T00:00:00Z",
        "2026-11-30T08:58:34.\u{0663}Z",
        "",
    ];

    #[test]
    fn verdicts_match_the_hand_written_functions() {
        for &s in TRICKY {
            assert_eq!(super::is_rfc3339(s), old::is_rfc3339(s), "is_rfc3339 {s}");
            assert_eq!(
                super::is_real_utc_timestamp(s),
                old::is_real_utc_timestamp(s),
                "is_real_utc_timestamp {s}"
            );
            assert_eq!(super::rfc3339_nanos(s), old::rfc3339_nanos(s), "nanos {s}");
        }
        // Random edits of valid times: digits, separators, zones, days and
        // seconds at the ends of their ranges.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let alphabet = b"0123456789:-+.TtZz 9";
        let tails: [&[u8]; 6] = [
            b".5Z",
            b"+14:45",
            b"-00:00",
            b".0000000000001z",
            b"+24:00",
            b"-23:59",
        ];
        for i in 0..200_000u64 {
            let secs = next() % 253_402_300_800;
            let mut s = old::format_unix_utc(secs).into_bytes();
            match i % 4 {
                0 => {}
                1 => {
                    let at = (next() % s.len() as u64) as usize;
                    s[at] = alphabet[(next() % alphabet.len() as u64) as usize];
                }
                2 => {
                    s.pop();
                    s.extend_from_slice(tails[(next() % 6) as usize]);
                }
                _ => {
                    s[5..7].copy_from_slice(format!("{:02}", next() % 14).as_bytes());
                    s[8..10].copy_from_slice(format!("{:02}", 28 + next() % 4).as_bytes());
                    s[17..19].copy_from_slice(format!("{:02}", 58 + next() % 4).as_bytes());
                }
            }
            let s = String::from_utf8(s).unwrap();
            assert_eq!(super::is_rfc3339(&s), old::is_rfc3339(&s), "{s}");
            assert_eq!(
                super::is_real_utc_timestamp(&s),
                old::is_real_utc_timestamp(&s),
                "{s}"
            );
            assert_eq!(super::rfc3339_nanos(&s), old::rfc3339_nanos(&s), "{s}");
        }
    }

    #[test]
    fn unix_times_match_the_hand_written_function() {
        let mut secs = 0u64;
        while secs < 253_402_300_800 {
            assert_eq!(super::format_unix_utc(secs), old::format_unix_utc(secs));
            secs += 86_399 * 13 + 7;
        }
        assert_eq!(
            super::format_unix_utc(253_402_300_799),
            "9999-12-31T23:59:59Z"
        );
        assert_eq!(super::format_unix_utc(u64::MAX), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn a_multi_byte_character_is_refused_not_a_panic() {
        // The hand-written is_rfc3339 sliced the text at byte 19 and
        // panicked when a character straddled it.
        assert!(!super::is_rfc3339("2026-11-30T08:58:3\u{e9}Z"));
        assert_eq!(super::rfc3339_nanos("2026-11-30T08:58:3\u{e9}Z"), None);
    }
}
