//! Calendar checks for timestamps.

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
                (a.is_ascii_digit() && b.is_ascii_digit()).then(|| (a - b'0') * 10 + (b - b'0'))
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
        let offset = i128::from((n(i + 1..i + 3) * 60 + n(i + 4..i + 6)) * 60) * 1_000_000_000;
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
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
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
}
