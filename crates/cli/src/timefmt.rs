//! UTC date formatting for time stamps, without a calendar dependency.

use tracekit::{Timestamp, TsResolution};

/// (year, month, day) of a count of days since 1970-01-01, proleptic Gregorian calendar.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // Shift the epoch to 0000-03-01 so that leap days fall at the end of each 400-year
    // era's years; then split into era, year of era, day of year, month.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // March = 0
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `YYYY-MM-DD HH:MM:SS.fraction UTC`, with the fraction digits of the source resolution.
pub fn utc(ts: Timestamp) -> String {
    let digits_res = match ts.resolution() {
        TsResolution::Decimal(n) => TsResolution::Decimal(n.min(9)),
        TsResolution::Binary(_) => TsResolution::NANO,
    };
    let (whole, units) = ts.split(digits_res);
    let secs = i64::try_from(whole).unwrap_or(i64::MAX);
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    let digits = match ts.resolution() {
        TsResolution::Decimal(n) => n.min(9),
        TsResolution::Binary(_) => 9,
    };
    let frac = if digits == 0 {
        String::new()
    } else {
        format!(".{units:0width$}", width = usize::from(digits))
    };
    format!(
        "{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02}{frac} UTC",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// A duration in nanoseconds as seconds with nine decimals.
pub fn seconds(ns: u64) -> String {
    format!("{}.{:09} s", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// Nanoseconds since the epoch as decimal seconds with nine decimals.
pub fn decimal_seconds(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of
/// `civil_from_days`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = year - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400); // [0, 399]
    let mp = i64::from((month + 9) % 12); // March = 0
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

/// Parses a point in time as nanoseconds since the epoch: decimal seconds since the
/// epoch (`1700000000.25`), or a UTC date and time `YYYY-MM-DD[T| ]HH:MM[:SS[.frac]][Z]`
/// (or a bare date, meaning midnight).
pub fn parse_time(s: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "bad time '{s}': give seconds since the epoch (1700000000.5) or a UTC date and time (2024-04-10T15:39:01.5Z)"
        )
    };
    let s = s.trim();
    let frac_ns = |frac: &str| -> Result<u64, String> {
        if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        Ok(frac.parse::<u64>().map_err(|_| bad())? * 10u64.pow(9 - frac.len() as u32))
    };
    if s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
        let secs: u64 = whole.parse().map_err(|_| bad())?;
        let ns = if frac.is_empty() { 0 } else { frac_ns(frac)? };
        return secs
            .checked_mul(1_000_000_000)
            .and_then(|n| n.checked_add(ns))
            .ok_or_else(bad);
    }
    let s = s.strip_suffix('Z').unwrap_or(s);
    let (date, time) = match s.split_once(['T', ' ']) {
        Some((d, t)) => (d, t),
        None => (s, "00:00"),
    };
    let num = |t: &str, lo: u32, hi: u32| -> Result<u32, String> {
        let n: u32 = t.parse().map_err(|_| bad())?;
        if (lo..=hi).contains(&n) && !t.is_empty() && t.len() <= 4 {
            Ok(n)
        } else {
            Err(bad())
        }
    };
    let mut d = date.split('-');
    let (Some(y), Some(mo), Some(day), None) = (d.next(), d.next(), d.next(), d.next()) else {
        return Err(bad());
    };
    let (year, month, day) = (num(y, 1970, 9999)?, num(mo, 1, 12)?, num(day, 1, 31)?);
    let (time, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = time.split(':');
    let (Some(h), Some(mi)) = (t.next(), t.next()) else {
        return Err(bad());
    };
    let sec = t.next().map_or(Ok(0), |x| num(x, 0, 60))?;
    if t.next().is_some() {
        return Err(bad());
    }
    let ns = if frac.is_empty() { 0 } else { frac_ns(frac)? };
    let days = days_from_civil(i64::from(year), month, day);
    let secs = days * 86_400
        + i64::from(num(h, 0, 23)?) * 3600
        + i64::from(num(mi, 0, 59)?) * 60
        + i64::from(sec);
    Ok(secs as u64 * 1_000_000_000 + ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsed_times() {
        assert_eq!(parse_time("0"), Ok(0));
        assert_eq!(parse_time("1700000000.25"), Ok(1_700_000_000_250_000_000));
        assert_eq!(parse_time("1970-01-01"), Ok(0));
        assert_eq!(
            parse_time("2024-04-10T15:39:01.734807Z"),
            Ok(1_712_763_541_734_807_000)
        );
        assert_eq!(
            parse_time("2000-02-29 12:34:56.000000005"),
            Ok(951_827_696_000_000_005)
        );
        assert_eq!(parse_time("2000-03-01 00:00"), Ok(951_868_800_000_000_000));
        for bad in [
            "",
            "x",
            "1.2.3",
            "2024-13-01",
            "2024-04-10T25:00",
            "1.1234567890",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
        for days in [-1000, 0, 59, 60, 11_016, 19_823, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn known_dates() {
        assert_eq!(
            utc(Timestamp::from_micros(0, 0)),
            "1970-01-01 00:00:00.000000 UTC"
        );
        // 2000-02-29 (leap day) 12:34:56
        assert_eq!(
            utc(Timestamp::from_nanos(951_827_696, 5)),
            "2000-02-29 12:34:56.000000005 UTC"
        );
        // 2024-04-10 15:39:01.734807 (the Kuznetzov corpus file)
        assert_eq!(
            utc(Timestamp::from_micros(1_712_763_541, 734_807)),
            "2024-04-10 15:39:01.734807 UTC"
        );
        assert_eq!(seconds(1_500_000_000), "1.500000000 s");
    }
}
