//! Packet time stamps: whole seconds since the Unix epoch and a binary fraction of 2^-32 s.
//!
//! The seconds are 64 bits wide, so every time stamp a format can store is represented:
//! pcapng's 64-bit unit counts and pcap's carried sub-second fields go past 2106 (where
//! 32-bit seconds end) without wrapping. The fraction counts 2^-32 s (about 0.23 ns).
//! Within 32-bit seconds that is the ERF 32.32 representation, and it is strictly finer than a nanosecond, so a time
//! stamp that came from a microsecond or nanosecond source converts back to exactly the
//! same microseconds or nanoseconds, and an ERF time stamp is kept bit for bit.
//!
//! The rule that makes decimal sources exact: a decimal fraction is converted to binary
//! by rounding *up* (`ceil(units * 2^32 / 10^n)`), and back by rounding *down*. One
//! decimal unit (at most 10^-6 s for microseconds, 10^-9 s for nanoseconds) spans more
//! than one binary unit, so the round-up error (< 1 binary unit) never reaches the next
//! decimal unit. This is also what libtrace and Endace's tools do when they write ERF.

use std::cmp::Ordering;
use std::fmt;
use std::ops::{Add, Sub};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The resolution a time stamp was recorded with, remembered so that a writer can pick an
/// output resolution that keeps every time stamp exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TsResolution {
    /// 10^-n seconds; `n` is at most 9 (pcap µs is `Decimal(6)`, pcap ns is `Decimal(9)`).
    Decimal(u8),
    /// 2^-n seconds; `n` is at most 32 (ERF is `Binary(32)`).
    Binary(u8),
}

impl TsResolution {
    /// Microseconds (classic pcap).
    pub const MICRO: TsResolution = TsResolution::Decimal(6);
    /// Nanoseconds (pcap with the nanosecond magic, pcapng `if_tsresol = 9`).
    pub const NANO: TsResolution = TsResolution::Decimal(9);
    /// 2^-32 seconds (ERF).
    pub const ERF: TsResolution = TsResolution::Binary(32);

    /// Whether `n` is in the supported range for this kind of resolution.
    pub fn is_supported(self) -> bool {
        match self {
            TsResolution::Decimal(n) => n <= 9,
            TsResolution::Binary(n) => n <= 32,
        }
    }

    /// Number of units per second (10^n or 2^n).
    #[inline]
    pub fn units_per_second(self) -> u64 {
        const POW10: [u64; 10] = [
            1,
            10,
            100,
            1_000,
            10_000,
            100_000,
            1_000_000,
            10_000_000,
            100_000_000,
            1_000_000_000,
        ];
        match self {
            TsResolution::Decimal(n) => POW10[usize::from(n.min(9))],
            TsResolution::Binary(n) => 1u64 << n.min(32),
        }
    }

    /// Whether every time stamp of resolution `self` can be written exactly in `other`.
    ///
    /// Decimal 10^-a fits 10^-b when a <= b; binary 2^-a fits 2^-b when a <= b; 2^-a
    /// fits 10^-b when a <= b (10^b is a multiple of 2^b); a decimal resolution fits only
    /// the full 2^-32 binary resolution (by the round-up rule of this module).
    pub fn fits_in(self, other: TsResolution) -> bool {
        match (self, other) {
            (TsResolution::Decimal(a), TsResolution::Decimal(b)) => a <= b,
            (TsResolution::Binary(a), TsResolution::Binary(b)) => a <= b,
            (TsResolution::Decimal(_), TsResolution::Binary(32)) => true,
            // 2^-a divides 10^-b exactly when a <= b (10^b = 2^b * 5^b).
            (TsResolution::Binary(a), TsResolution::Decimal(b)) => a <= b,
            (TsResolution::Decimal(_), TsResolution::Binary(_)) => false,
        }
    }
}

impl fmt::Display for TsResolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TsResolution::Decimal(0) => f.write_str("s"),
            TsResolution::Decimal(3) => f.write_str("ms"),
            TsResolution::Decimal(6) => f.write_str("µs"),
            TsResolution::Decimal(9) => f.write_str("ns"),
            TsResolution::Decimal(n) => write!(f, "10^-{n} s"),
            TsResolution::Binary(n) => write!(f, "2^-{n} s"),
        }
    }
}

/// A packet time stamp: seconds since the Unix epoch and a 2^-32 s fraction, plus the
/// resolution it was recorded with. A packet whose format records no time stamp (a pcapng
/// Simple Packet Block) has [`Timestamp::NONE`]: the epoch, marked as not known.
///
/// Equality and ordering compare the instant only, not the resolution.
///
/// ```
/// use tracekit_core::{Timestamp, TsResolution};
/// let t = Timestamp::from_nanos(1_700_000_000, 123_456_789);
/// assert_eq!(t.secs(), 1_700_000_000);
/// assert_eq!(t.subsec_nanos(), 123_456_789);
/// assert_eq!(t.resolution(), TsResolution::NANO);
/// assert_eq!(Timestamp::from_erf(t.to_erf()), t);
/// ```
#[derive(Clone, Copy)]
pub struct Timestamp {
    secs: u64,
    /// The fraction of the second (2^-32 s) in the low half; the resolution and whether
    /// the time stamp is known ([`Label`]) in the high half. Two `u64` fields make the
    /// struct a scalar pair, which the compiler keeps in two registers: built from
    /// three fields it was stored in pieces and reloaded with one 16-byte load, a load
    /// that cannot be forwarded from those stores and waits for them (a pcapng read
    /// loop did this three times per packet).
    low: u64,
}

/// A [`TsResolution`] and the known flag in one `u32`: bits 0-7 the exponent, bit 8 set
/// for a binary resolution, bit 16 set when the time stamp is known.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Label(u32);

impl Label {
    const BINARY: u32 = 1 << 8;
    const KNOWN: u32 = 1 << 16;

    #[inline(always)]
    const fn new(res: TsResolution, known: bool) -> Label {
        let code = match res {
            TsResolution::Decimal(n) => n as u32,
            TsResolution::Binary(n) => Label::BINARY | n as u32,
        };
        Label(code | if known { Label::KNOWN } else { 0 })
    }

    #[inline(always)]
    const fn res(self) -> TsResolution {
        let n = self.0 as u8;
        if self.0 & Label::BINARY != 0 {
            TsResolution::Binary(n)
        } else {
            TsResolution::Decimal(n)
        }
    }

    #[inline(always)]
    const fn known(self) -> bool {
        self.0 & Label::KNOWN != 0
    }
}

impl Timestamp {
    /// The epoch itself, with nanosecond resolution.
    pub const ZERO: Timestamp = Timestamp::pack(0, 0, Label::new(TsResolution::NANO, true));

    /// No time stamp: the format recorded none for this packet (pcapng Simple Packet
    /// Blocks). Writers write it as the epoch; summaries leave it out of first and last.
    pub const NONE: Timestamp = Timestamp::pack(0, 0, Label::new(TsResolution::NANO, false));

    #[inline(always)]
    const fn pack(secs: u64, frac: u32, label: Label) -> Timestamp {
        Timestamp {
            secs,
            low: frac as u64 | (label.0 as u64) << 32,
        }
    }

    #[inline(always)]
    const fn label(self) -> Label {
        Label((self.low >> 32) as u32)
    }

    /// Whether the packet has a time stamp (see [`Timestamp::NONE`]).
    #[inline]
    pub const fn is_known(self) -> bool {
        self.label().known()
    }

    /// From an ERF 32.32 value (seconds in the upper half, 2^-32 s in the lower half).
    #[inline]
    pub const fn from_erf(raw: u64) -> Timestamp {
        Timestamp::pack(raw >> 32, raw as u32, Label::new(TsResolution::ERF, true))
    }

    /// From whole seconds and microseconds. Microseconds of a second or more carry into
    /// the seconds (some writers emit them).
    #[inline]
    pub fn from_micros(secs: u32, micros: u32) -> Timestamp {
        Timestamp::from_units(u64::from(secs), u64::from(micros), TsResolution::MICRO)
    }

    /// From whole seconds and nanoseconds. Nanoseconds of a second or more carry into the
    /// seconds.
    #[inline]
    pub fn from_nanos(secs: u32, nanos: u32) -> Timestamp {
        Timestamp::from_units(u64::from(secs), u64::from(nanos), TsResolution::NANO)
    }

    /// From a count of nanoseconds since the epoch.
    pub fn from_unix_nanos(nanos: u64) -> Timestamp {
        let secs = nanos / 1_000_000_000;
        let frac = nanos % 1_000_000_000;
        Timestamp::from_units(secs, frac, TsResolution::NANO)
    }

    /// From whole seconds and a count of `res` units, with carry of whole seconds from
    /// `units` (no wrap: a carry past 32-bit seconds gives a time stamp after 2106).
    #[inline(always)]
    pub fn from_units(secs: u64, units: u64, res: TsResolution) -> Timestamp {
        let per_sec = res.units_per_second();
        let (carry, units) = if units >= per_sec {
            (units / per_sec, units % per_sec)
        } else {
            (0, units)
        };
        let secs = secs.saturating_add(carry);
        // ceil(units * 2^32 / per_sec); units < per_sec <= 10^9 so no overflow. The two
        // common resolutions get constant divisors, which compile to multiplications.
        let frac = match res {
            TsResolution::Binary(n) => units << (32 - u32::from(n.min(32))),
            TsResolution::Decimal(6) => (units << 32).div_ceil(1_000_000),
            TsResolution::Decimal(9) => (units << 32).div_ceil(1_000_000_000),
            TsResolution::Decimal(_) => (units << 32).div_ceil(per_sec),
        };
        Timestamp::pack(secs, frac as u32, Label::new(res, true))
    }

    /// The 32.32 value (the ERF representation). Seconds past 32 bits (after 2106) do
    /// not fit: see [`Timestamp::try_to_erf`].
    #[inline]
    pub const fn to_erf(self) -> u64 {
        (self.secs << 32) | self.fraction() as u64
    }

    /// The 32.32 value, or `None` when the seconds do not fit 32 bits.
    #[inline]
    pub const fn try_to_erf(self) -> Option<u64> {
        if self.secs > u32::MAX as u64 {
            None
        } else {
            Some(self.to_erf())
        }
    }

    /// Whole seconds since the epoch.
    #[inline]
    pub const fn secs(self) -> u64 {
        self.secs
    }

    /// The fraction of the second, in 2^-32 s.
    #[inline]
    pub const fn fraction(self) -> u32 {
        self.low as u32
    }

    /// Resolution of the source this time stamp came from.
    #[inline]
    pub const fn resolution(self) -> TsResolution {
        self.label().res()
    }

    /// The same instant, labelled with another resolution (no conversion is done).
    #[inline]
    pub const fn with_resolution(self, res: TsResolution) -> Timestamp {
        Timestamp::pack(
            self.secs,
            self.fraction(),
            Label::new(res, self.label().known()),
        )
    }

    /// Whole seconds and units of `res`: the conversion every writer uses. From a binary
    /// source (ERF, pcapng 2^-n) to a decimal resolution the fraction is rounded to the
    /// nearest unit, as Wireshark does (a carry moves into the seconds); from a decimal
    /// source it is rounded down, as editcap does when it turns ns into µs. Either way a
    /// time stamp that came from `res` converts back to exactly its units.
    #[inline]
    pub fn split(self, res: TsResolution) -> (u64, u64) {
        let secs = self.secs();
        match (res, self.resolution()) {
            (TsResolution::Decimal(_), TsResolution::Binary(_)) => {
                let per = res.units_per_second();
                let frac = u64::from(self.fraction());
                let units = (frac * per + (1 << 31)) >> 32;
                if units >= per {
                    (secs.saturating_add(1), units - per)
                } else {
                    (secs, units)
                }
            }
            _ => (secs, self.subsec_units(res)),
        }
    }

    /// The fraction of the second in `res` units, rounded down (see [`Timestamp::split`]
    /// for the conversion writers use).
    #[inline]
    pub fn subsec_units(self, res: TsResolution) -> u64 {
        let frac = u64::from(self.fraction());
        match res {
            TsResolution::Binary(n) => frac >> (32 - u32::from(n.min(32))),
            TsResolution::Decimal(_) => (frac * res.units_per_second()) >> 32,
        }
    }

    /// The fraction of the second in nanoseconds, rounded down.
    #[inline]
    pub fn subsec_nanos(self) -> u32 {
        self.subsec_units(TsResolution::NANO) as u32
    }

    /// The fraction of the second in microseconds, rounded down.
    #[inline]
    pub fn subsec_micros(self) -> u32 {
        self.subsec_units(TsResolution::MICRO) as u32
    }

    /// Nanoseconds since the epoch (converted as by [`Timestamp::split`]); saturates at
    /// `u64::MAX` (the year 2554), beyond what any nanosecond format stores.
    #[inline]
    pub fn as_unix_nanos(self) -> u64 {
        let (secs, nanos) = self.split(TsResolution::NANO);
        secs.saturating_mul(1_000_000_000).saturating_add(nanos)
    }

    /// Nanoseconds since the epoch, exactly, for any time stamp.
    #[inline]
    pub fn as_unix_nanos_wide(self) -> u128 {
        let (secs, nanos) = self.split(TsResolution::NANO);
        u128::from(secs) * 1_000_000_000 + u128::from(nanos)
    }

    /// Whether this time stamp can be written in `res` without losing anything.
    #[inline]
    pub fn is_exact_in(self, res: TsResolution) -> bool {
        if self.resolution().fits_in(res) {
            return true;
        }
        let (secs, units) = self.split(res);
        Timestamp::from_units(secs, units, res) == self
    }

    /// The difference `self - earlier` in nanoseconds (rounded down), negative when
    /// `earlier` is later.
    pub fn nanos_since(self, earlier: Timestamp) -> i128 {
        self.as_unix_nanos_wide() as i128 - earlier.as_unix_nanos_wide() as i128
    }
}

/// Conversions with `std::time`: a [`Timestamp`] is an instant since the Unix epoch, so it
/// converts to and from [`SystemTime`] and a [`Duration`] since the epoch, and the
/// difference of two time stamps is a [`Duration`].
///
/// ```
/// use std::time::{Duration, SystemTime, UNIX_EPOCH};
/// use tracekit_core::Timestamp;
///
/// let first = Timestamp::from_micros(1_700_000_000, 250_000);
/// let last = Timestamp::from_nanos(1_700_000_003, 500_000_000);
/// assert_eq!(last - first, Duration::from_millis(3_250));
/// assert_eq!(first.duration_since(last), Duration::ZERO); // saturates, as Instant does
/// assert_eq!(first.checked_duration_since(last), None);
/// assert_eq!(first + Duration::from_millis(3_250), last);
///
/// let when = SystemTime::try_from(last).unwrap();
/// assert_eq!(when, UNIX_EPOCH + Duration::new(1_700_000_003, 500_000_000));
/// assert_eq!(Timestamp::try_from(when).unwrap(), last);
/// assert_eq!(Timestamp::from(Duration::from_secs(7)).since_epoch(), Duration::from_secs(7));
/// ```
impl Timestamp {
    /// The time since the epoch, to the nanosecond (a binary fraction rounds to the nearest
    /// nanosecond, as [`Timestamp::split`] does).
    pub fn since_epoch(self) -> Duration {
        let (secs, nanos) = self.split(TsResolution::NANO);
        Duration::new(secs, nanos as u32)
    }

    /// `self - earlier`, or `None` when `earlier` is later.
    pub fn checked_duration_since(self, earlier: Timestamp) -> Option<Duration> {
        let d = self
            .as_unix_nanos_wide()
            .checked_sub(earlier.as_unix_nanos_wide())?;
        Some(Duration::new(
            (d / 1_000_000_000) as u64,
            (d % 1_000_000_000) as u32,
        ))
    }

    /// `self - earlier`, zero when `earlier` is later (as [`std::time::Instant`] does).
    /// [`Timestamp::nanos_since`] gives a signed difference.
    pub fn duration_since(self, earlier: Timestamp) -> Duration {
        self.checked_duration_since(earlier)
            .unwrap_or(Duration::ZERO)
    }

    /// `self + d`, or `None` past the last representable second. The resolution stays
    /// that of `self`.
    pub fn checked_add(self, d: Duration) -> Option<Timestamp> {
        let frac =
            Timestamp::from_units(0, u64::from(d.subsec_nanos()), TsResolution::NANO).fraction();
        let (frac, carry) = self.fraction().overflowing_add(frac);
        let secs = self
            .secs
            .checked_add(d.as_secs())?
            .checked_add(u64::from(carry))?;
        Some(Timestamp::pack(secs, frac, self.label()))
    }

    /// `self - d`, or `None` before the epoch. The resolution stays that of `self`.
    pub fn checked_sub(self, d: Duration) -> Option<Timestamp> {
        let frac =
            Timestamp::from_units(0, u64::from(d.subsec_nanos()), TsResolution::NANO).fraction();
        let (frac, borrow) = self.fraction().overflowing_sub(frac);
        let secs = self
            .secs
            .checked_sub(d.as_secs())?
            .checked_sub(u64::from(borrow))?;
        Some(Timestamp::pack(secs, frac, self.label()))
    }
}

/// The difference as a [`Duration`], zero when the right side is later (see
/// [`Timestamp::checked_duration_since`]).
impl Sub for Timestamp {
    type Output = Duration;

    fn sub(self, earlier: Timestamp) -> Duration {
        self.duration_since(earlier)
    }
}

/// Later by `d`. Panics past the last representable second, as `SystemTime + Duration`
/// does; [`Timestamp::checked_add`] does not.
impl Add<Duration> for Timestamp {
    type Output = Timestamp;

    fn add(self, d: Duration) -> Timestamp {
        self.checked_add(d).expect("time stamp overflow")
    }
}

/// Earlier by `d`. Panics before the epoch; [`Timestamp::checked_sub`] does not.
impl Sub<Duration> for Timestamp {
    type Output = Timestamp;

    fn sub(self, d: Duration) -> Timestamp {
        self.checked_sub(d).expect("time stamp before the epoch")
    }
}

/// A [`Duration`] since the epoch, with nanosecond resolution.
impl From<Duration> for Timestamp {
    fn from(d: Duration) -> Timestamp {
        Timestamp::from_units(d.as_secs(), u64::from(d.subsec_nanos()), TsResolution::NANO)
    }
}

/// A time the other type cannot hold: a [`SystemTime`] before the Unix epoch, or a
/// [`Timestamp`] past the platform's last `SystemTime`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeOutOfRange;

impl fmt::Display for TimeOutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("time outside the range of the target type (before 1970 or too far ahead)")
    }
}

impl std::error::Error for TimeOutOfRange {}

/// With nanosecond resolution; an error before the epoch.
impl TryFrom<SystemTime> for Timestamp {
    type Error = TimeOutOfRange;

    fn try_from(t: SystemTime) -> Result<Timestamp, TimeOutOfRange> {
        t.duration_since(UNIX_EPOCH)
            .map(Timestamp::from)
            .map_err(|_| TimeOutOfRange)
    }
}

/// To the nanosecond (see [`Timestamp::since_epoch`]); an error past the platform's last
/// `SystemTime`.
impl TryFrom<Timestamp> for SystemTime {
    type Error = TimeOutOfRange;

    fn try_from(t: Timestamp) -> Result<SystemTime, TimeOutOfRange> {
        UNIX_EPOCH
            .checked_add(t.since_epoch())
            .ok_or(TimeOutOfRange)
    }
}

impl PartialEq for Timestamp {
    fn eq(&self, other: &Self) -> bool {
        (self.secs, self.fraction()) == (other.secs, other.fraction())
    }
}

impl Eq for Timestamp {}

impl PartialOrd for Timestamp {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Timestamp {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.secs, self.fraction()).cmp(&(other.secs, other.fraction()))
    }
}

impl std::hash::Hash for Timestamp {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.secs, self.fraction()).hash(state);
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({self} [{}])", self.resolution())
    }
}

/// `seconds.fraction` with as many digits as the source resolution needs (9 at most).
impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.resolution() {
            TsResolution::Decimal(0) => write!(f, "{}", self.secs()),
            TsResolution::Decimal(n) if n <= 9 => {
                let res = TsResolution::Decimal(n);
                write!(
                    f,
                    "{}.{:0width$}",
                    self.secs(),
                    self.subsec_units(res),
                    width = usize::from(n)
                )
            }
            _ => {
                let (secs, nanos) = self.split(TsResolution::NANO);
                write!(f, "{secs}.{nanos:09}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn std_time_round_trips() {
        // Every resolution: through Duration and back is exact at ns and µs; an ERF
        // fraction comes back rounded to the nearest nanosecond.
        let t = Timestamp::from_nanos(1_600_000_000, 999_999_999);
        assert_eq!(Timestamp::from(t.since_epoch()), t);
        let t = Timestamp::from_micros(1_600_000_000, 1);
        assert_eq!(Timestamp::from(t.since_epoch()), t);
        let erf = Timestamp::from_erf((5 << 32) | 0xffff_ffff);
        assert_eq!(erf.since_epoch(), Duration::from_secs(6)); // 0.99999999977 s rounds up
        // Adding carries the fraction into the seconds and keeps the resolution.
        let t = Timestamp::from_micros(10, 999_999) + Duration::from_micros(2);
        assert_eq!((t.secs(), t.subsec_micros()), (11, 1));
        assert_eq!(t.resolution(), TsResolution::MICRO);
        assert_eq!(
            t - Duration::from_micros(2),
            Timestamp::from_micros(10, 999_999)
        );
        assert_eq!(
            Timestamp::from_micros(0, 5).checked_sub(Duration::from_micros(6)),
            None
        );
        assert_eq!(
            Timestamp::from_erf(u64::MAX).checked_add(Duration::from_secs(u64::MAX)),
            None
        );
        // Differences.
        let a = Timestamp::from_nanos(100, 5);
        let b = Timestamp::from_nanos(98, 10);
        assert_eq!(a - b, Duration::new(1, 999_999_995));
        assert_eq!(b - a, Duration::ZERO);
        assert_eq!(a.nanos_since(b), 1_999_999_995);
        // SystemTime both ways; before the epoch is an error.
        let st = SystemTime::try_from(a).unwrap();
        assert_eq!(
            st.duration_since(UNIX_EPOCH).unwrap(),
            Duration::new(100, 5)
        );
        assert_eq!(Timestamp::try_from(st), Ok(a));
        let before = UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(Timestamp::try_from(before), Err(TimeOutOfRange));
    }

    #[test]
    fn carries_whole_seconds() {
        let t = Timestamp::from_micros(10, 2_500_000);
        assert_eq!(t.secs(), 12);
        assert_eq!(t.subsec_micros(), 500_000);
    }

    #[test]
    fn erf_matches_libtrace_convention() {
        // 0.5 s is exactly 0x8000_0000 in 32.32.
        let t = Timestamp::from_micros(1, 500_000);
        assert_eq!(t.to_erf(), (1u64 << 32) | 0x8000_0000);
        // 1 µs rounds up to 4295 binary units (2^32 / 10^6 = 4294.967...).
        assert_eq!(Timestamp::from_micros(0, 1).fraction(), 4295);
    }

    #[test]
    fn display_uses_source_resolution() {
        assert_eq!(Timestamp::from_micros(5, 42).to_string(), "5.000042");
        assert_eq!(Timestamp::from_nanos(5, 42).to_string(), "5.000000042");
    }

    #[test]
    fn exactness_check() {
        assert!(Timestamp::from_nanos(1, 5_000).is_exact_in(TsResolution::MICRO));
        assert!(!Timestamp::from_nanos(1, 5_001).is_exact_in(TsResolution::MICRO));
        assert!(Timestamp::from_micros(1, 5).is_exact_in(TsResolution::NANO));
        assert!(!Timestamp::from_erf(1).is_exact_in(TsResolution::NANO));
    }

    #[test]
    fn past_2106_is_kept() {
        // pcap ns: the last 32-bit second plus a carried sub-second field.
        let t = Timestamp::from_nanos(u32::MAX, 2_500_000_000);
        assert_eq!(t.secs(), u64::from(u32::MAX) + 2);
        assert_eq!(t.subsec_nanos(), 500_000_000);
        assert_eq!(t.to_string(), "4294967297.500000000");
        assert_eq!(t.try_to_erf(), None);
        // pcapng: 64-bit nanosecond counts, 2107-01-01T00:00:00Z = 4_323_283_200 s.
        let t = Timestamp::from_unix_nanos(4_323_283_200_000_000_001);
        assert_eq!((t.secs(), t.subsec_nanos()), (4_323_283_200, 1));
        assert_eq!(t.as_unix_nanos(), 4_323_283_200_000_000_001);
        assert!(t > Timestamp::from_nanos(u32::MAX, 999_999_999));
        assert_eq!(t.split(TsResolution::NANO), (4_323_283_200, 1));
    }

    #[test]
    fn none_is_not_known() {
        assert!(!Timestamp::NONE.is_known());
        assert!(Timestamp::ZERO.is_known());
        assert!(Timestamp::from_micros(1, 0).is_known());
    }

    proptest! {
        #[test]
        fn micros_round_trip(secs: u32, micros in 0u32..1_000_000) {
            let t = Timestamp::from_micros(secs, micros);
            prop_assert_eq!(t.secs(), u64::from(secs));
            prop_assert_eq!(t.subsec_micros(), micros);
            // through ERF and back, and through nanoseconds and back
            let e = Timestamp::from_erf(t.to_erf());
            prop_assert_eq!(e.subsec_micros(), micros);
            let n = Timestamp::from_nanos(t.secs() as u32, t.subsec_nanos());
            prop_assert_eq!(n.subsec_micros(), micros);
            prop_assert!(t.is_exact_in(TsResolution::NANO));
        }

        #[test]
        fn nanos_round_trip(secs: u32, nanos in 0u32..1_000_000_000) {
            let t = Timestamp::from_nanos(secs, nanos);
            prop_assert_eq!(t.secs(), u64::from(secs));
            prop_assert_eq!(t.subsec_nanos(), nanos);
            let e = Timestamp::from_erf(t.to_erf());
            prop_assert_eq!(e.subsec_nanos(), nanos);
            prop_assert_eq!(Timestamp::from_unix_nanos(t.as_unix_nanos()), t);
        }

        #[test]
        fn erf_round_trip(raw: u64) {
            let t = Timestamp::from_erf(raw);
            prop_assert_eq!(t.to_erf(), raw);
            prop_assert_eq!(Timestamp::from_units(t.secs(), t.subsec_units(TsResolution::ERF), TsResolution::ERF).to_erf(), raw);
        }

        #[test]
        fn any_decimal_round_trip(secs: u32, n in 0u8..=9, units: u64) {
            let res = TsResolution::Decimal(n);
            let units = units % res.units_per_second();
            let t = Timestamp::from_units(u64::from(secs), units, res);
            prop_assert_eq!(t.subsec_units(res), units);
            prop_assert!(t.is_exact_in(TsResolution::NANO));
        }

        #[test]
        fn binary_rounds_to_nearest_and_decimal_round_trips(raw: u64) {
            let t = Timestamp::from_erf(raw);
            let (secs, nanos) = t.split(TsResolution::NANO);
            prop_assert!(nanos < 1_000_000_000);
            // nearest: within half a nanosecond of the exact value
            let exact = (u128::from(raw) * 1_000_000_000) >> 32;
            let got = u128::from(secs) * 1_000_000_000 + u128::from(nanos);
            prop_assert!(got.abs_diff(exact) <= 1);
            let secs_wrapped = exact / 1_000_000_000 >= 1 << 32;
            if !secs_wrapped {
                prop_assert!(got.abs_diff(exact) <= 1);
                // ns -> ERF -> ns is exact
                let n = Timestamp::from_nanos(secs as u32, nanos as u32);
                prop_assert_eq!(Timestamp::from_erf(n.to_erf()).split(TsResolution::NANO), (secs, nanos));
            }
        }

        #[test]
        fn order_follows_nanos(a: u64, b: u64) {
            let a = a % (u64::from(u32::MAX) * 1_000_000_000);
            let b = b % (u64::from(u32::MAX) * 1_000_000_000);
            let (ta, tb) = (Timestamp::from_unix_nanos(a), Timestamp::from_unix_nanos(b));
            prop_assert_eq!(ta.cmp(&tb), a.cmp(&b));
        }
    }
}
