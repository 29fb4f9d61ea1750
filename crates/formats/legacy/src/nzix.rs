//! NZIX time stamps: a free-running 30-bit microsecond counter that starts with the
//! trace, and a start time that only the file name carries.

use tracekit_core::{Error, Timestamp, TsResolution};

/// The counter's range: 30 bits of microseconds, about 1073.7 seconds.
const COUNTER_SPAN: u64 = 1 << 30;

/// Turns each record's 30-bit counter into microseconds since the trace began.
///
/// The counter only moves forward, so a value below the previous one means that it
/// wrapped: each record is placed at the first moment at or after the previous record
/// whose low 30 bits are its counter. A gap of a whole counter span or more between two
/// records cannot be seen in the file and is not guessed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NzixClock {
    /// Microseconds since the start of the trace of the latest record; `None` before the
    /// first.
    last: Option<u64>,
}

impl NzixClock {
    /// The record's time in microseconds since the start of the trace, from the record's
    /// 32-bit time stamp field (whose two low bits are not part of the counter).
    pub(crate) fn advance(&mut self, field: u32) -> u64 {
        let counter = u64::from(field >> 2);
        let now = match self.last {
            None => counter,
            Some(last) => {
                let step = counter.wrapping_sub(last) & (COUNTER_SPAN - 1);
                last + step
            }
        };
        self.last = Some(now);
        now
    }
}

/// The NZIX trace's start: Unix seconds, from the file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NzixStart {
    /// Named in the file name (`YYYYMMDD-HHMMSS`, New Zealand local time).
    Named(i64),
    /// The file name carries no start time: time stamps count from the Unix epoch.
    Unknown,
}

impl NzixStart {
    /// The start time a file name gives: its first `YYYYMMDD-HHMMSS` (eight digits, a
    /// dash, six digits), read as local time in Auckland, where the NZIX traces were
    /// taken (as libtrace reads it). No such pattern: [`NzixStart::Unknown`].
    pub(crate) fn from_file_name(name: &str) -> Result<NzixStart, Error> {
        let Some(stamp) = find_stamp(name.as_bytes()) else {
            return Ok(NzixStart::Unknown);
        };
        let num = |range: std::ops::Range<usize>| -> i64 {
            stamp[range]
                .iter()
                .fold(0, |n, d| n * 10 + i64::from(d - b'0'))
        };
        let bad = |e: jiff::Error| {
            Error::invalid_argument(format!(
                "NZIX start time '{}' in the file name is not a date and time: {e}",
                String::from_utf8_lossy(stamp)
            ))
        };
        let civil = jiff::civil::DateTime::new(
            num(0..4) as i16,
            num(4..6) as i8,
            num(6..8) as i8,
            num(9..11) as i8,
            num(11..13) as i8,
            num(13..15) as i8,
            0,
        )
        .map_err(bad)?;
        let zone = jiff::tz::TimeZone::get("Pacific/Auckland").map_err(|e| {
            Error::unsupported(format!(
                "NZIX start times are New Zealand local time, and the time zone \
                 Pacific/Auckland is not available here: {e}"
            ))
        })?;
        let zoned = civil.to_zoned(zone).map_err(bad)?;
        Ok(NzixStart::Named(zoned.timestamp().as_second()))
    }

    /// The time stamp `micros` after the start (before the epoch: the epoch).
    pub(crate) fn timestamp(self, micros: u64) -> Timestamp {
        let start = match self {
            NzixStart::Named(s) => u64::try_from(s).unwrap_or(0),
            NzixStart::Unknown => 0,
        };
        Timestamp::from_units(
            start + micros / 1_000_000,
            micros % 1_000_000,
            TsResolution::MICRO,
        )
    }
}

/// The first `DDDDDDDD-DDDDDD` in `name`.
fn find_stamp(name: &[u8]) -> Option<&[u8]> {
    name.windows(15).find(|w| {
        w[..8].iter().all(u8::is_ascii_digit)
            && w[8] == b'-'
            && w[9..].iter().all(u8::is_ascii_digit)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_wraps_forward_only() {
        let mut c = NzixClock::default();
        // The two low bits are not counter bits.
        assert_eq!(c.advance((100 << 2) | 3), 100);
        assert_eq!(c.advance(2_000_000 << 2), 2_000_000);
        // Across the top of the counter: one wrap.
        let top = ((1u32 << 30) - 1) << 2;
        assert_eq!(c.advance(top), (1 << 30) - 1);
        assert_eq!(c.advance(5 << 2), (1 << 30) + 5);
        // A smaller value is always a wrap, never a step back.
        assert_eq!(c.advance(4 << 2), (2 << 30) + 4);
        // The first record's counter is its time, however large.
        let mut c = NzixClock::default();
        assert_eq!(c.advance(top), (1 << 30) - 1);
    }

    #[test]
    fn start_from_name() {
        // Summer (NZDT, UTC+13) and winter (NZST, UTC+12); the dates as `date -u` gives
        // them: 1999-12-31 23:00:00 and 2000-07-01 00:00:00 UTC.
        assert_eq!(
            NzixStart::from_file_name("20000101-120000.gz").unwrap(),
            NzixStart::Named(946_681_200)
        );
        assert_eq!(
            NzixStart::from_file_name("nzix-20000701-120000-a").unwrap(),
            NzixStart::Named(962_409_600)
        );
        assert_eq!(
            NzixStart::from_file_name("trace.nzix").unwrap(),
            NzixStart::Unknown
        );
        assert_eq!(
            NzixStart::from_file_name("2000010-120000").unwrap(),
            NzixStart::Unknown
        );
        let e = NzixStart::from_file_name("20001301-120000").unwrap_err();
        assert!(e.to_string().contains("20001301-120000"), "{e}");
        assert_eq!(
            NzixStart::Named(946_681_200)
                .timestamp(2_000_100)
                .as_unix_nanos(),
            946_681_202_000_100_000
        );
    }
}
