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
    let secs = i64::from(whole);
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

#[cfg(test)]
mod tests {
    use super::*;

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
