//! Interfaces and sections as the reader learns them.

use tracekit_core::{ByteOrder, InterfaceInfo, LinkType, Timestamp, TsResolution};

/// Counters from an Interface Statistics Block (the latest one for the interface).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InterfaceStats {
    /// When the statistics were taken.
    pub ts: Option<Timestamp>,
    /// `isb_starttime`.
    pub start: Option<Timestamp>,
    /// `isb_endtime`.
    pub end: Option<Timestamp>,
    /// `isb_ifrecv`: packets received by the interface.
    pub received: Option<u64>,
    /// `isb_ifdrop`: packets the interface dropped.
    pub if_dropped: Option<u64>,
    /// `isb_filteraccept`: packets accepted by the capture filter.
    pub filter_accepted: Option<u64>,
    /// `isb_osdrop`: packets the operating system dropped.
    pub os_dropped: Option<u64>,
    /// `isb_usrdeliv`: packets delivered to the capturing program.
    pub delivered: Option<u64>,
}

/// A capture interface (Interface Description Block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Index of its section (0-based, in file order).
    pub section: usize,
    /// Its id inside its section (what packet blocks refer to).
    pub local_id: u32,
    /// Link-layer type.
    pub link_type: LinkType,
    /// Snap length (0: none).
    pub snaplen: u32,
    /// The raw `if_tsresol` byte (6 when absent).
    pub tsresol: u8,
    /// Time stamp resolution that `tsresol` means.
    pub ts_resolution: TsResolution,
    /// `if_tsoffset`: seconds added to every time stamp.
    pub ts_offset: i64,
    /// `if_name`.
    pub name: Option<String>,
    /// `if_description`.
    pub description: Option<String>,
    /// `if_fcslen`.
    pub fcs_len: Option<u8>,
    /// Latest statistics, if an ISB was read.
    pub stats: Option<InterfaceStats>,
    clock: Clock,
}

/// How raw 64-bit time stamp units become a [`Timestamp`], with integer arithmetic only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clock {
    Micro,
    Nano,
    /// 10^-n, n <= 9.
    Decimal(u8),
    /// 10^-n, 9 < n <= 19: kept to the nanosecond.
    FineDecimal(u8),
    /// 2^-n, n <= 32.
    Binary(u8),
    /// 2^-n, 32 < n <= 63: kept to 2^-32.
    FineBinary(u8),
}

impl Interface {
    /// An interface from its IDB fields. Resolutions beyond 10^-19 or 2^-63 cannot be
    /// held in 64 bits and fall back to the default (µs); the caller reports that.
    pub(crate) fn new(
        section: usize,
        local_id: u32,
        link_type: LinkType,
        snaplen: u32,
    ) -> Interface {
        let mut i = Interface {
            section,
            local_id,
            link_type,
            snaplen,
            tsresol: 6,
            ts_resolution: TsResolution::MICRO,
            ts_offset: 0,
            name: None,
            description: None,
            fcs_len: None,
            stats: None,
            clock: Clock::Micro,
        };
        i.set_tsresol(6);
        i
    }

    /// Applies an `if_tsresol` byte; false when it is out of range (then µs is kept).
    pub(crate) fn set_tsresol(&mut self, raw: u8) -> bool {
        let n = raw & 0x7f;
        let (clock, res) = if raw & 0x80 == 0 {
            match n {
                6 => (Clock::Micro, TsResolution::MICRO),
                9 => (Clock::Nano, TsResolution::NANO),
                0..=9 => (Clock::Decimal(n), TsResolution::Decimal(n)),
                10..=19 => (Clock::FineDecimal(n), TsResolution::NANO),
                _ => return false,
            }
        } else {
            match n {
                0..=32 => (Clock::Binary(n), TsResolution::Binary(n)),
                33..=63 => (Clock::FineBinary(n), TsResolution::ERF),
                _ => return false,
            }
        };
        self.tsresol = raw;
        self.clock = clock;
        self.ts_resolution = res;
        true
    }

    /// The time stamp of raw units, with `if_tsoffset` applied (seconds wrap modulo 2^32,
    /// the range of every 32-bit-seconds format).
    #[inline(always)]
    pub fn timestamp(&self, units: u64) -> Timestamp {
        self.clocked().timestamp(units)
    }

    /// The small, copyable part the packet path needs.
    #[inline(always)]
    pub(crate) fn clocked(&self) -> Clocked {
        Clocked {
            clock: self.clock,
            ts_offset: self.ts_offset,
            link_type: self.link_type,
        }
    }

    /// What tracekit's other formats know of an interface.
    pub fn info(&self) -> InterfaceInfo {
        InterfaceInfo {
            name: self.name.clone(),
            description: self.description.clone(),
            link_type: self.link_type,
            snaplen: self.snaplen,
            ts_resolution: self.ts_resolution,
            fcs_len: self.fcs_len,
        }
    }
}

/// The part of an interface the packet path needs: link type and time conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Clocked {
    clock: Clock,
    ts_offset: i64,
    pub(crate) link_type: LinkType,
}

impl Clocked {
    /// See [`Interface::timestamp`].
    #[inline(always)]
    pub(crate) fn timestamp(&self, units: u64) -> Timestamp {
        // The two common resolutions inline, with constant divisors; the rest out of line.
        match self.clock {
            Clock::Nano => self.offset(
                units / 1_000_000_000,
                units % 1_000_000_000,
                TsResolution::NANO,
            ),
            Clock::Micro => self.offset(units / 1_000_000, units % 1_000_000, TsResolution::MICRO),
            _ => self.timestamp_other(units),
        }
    }

    #[inline(always)]
    fn offset(&self, secs: u64, frac: u64, res: TsResolution) -> Timestamp {
        // if_tsoffset moves the seconds; a negative result is clamped at the epoch.
        Timestamp::from_units(secs.saturating_add_signed(self.ts_offset), frac, res)
    }

    #[cold]
    #[inline(never)]
    fn timestamp_other(&self, units: u64) -> Timestamp {
        let (secs, frac, res) = match self.clock {
            Clock::Micro => (units / 1_000_000, units % 1_000_000, TsResolution::MICRO),
            Clock::Nano => (
                units / 1_000_000_000,
                units % 1_000_000_000,
                TsResolution::NANO,
            ),
            Clock::Decimal(n) => {
                let per = TsResolution::Decimal(n).units_per_second();
                (units / per, units % per, TsResolution::Decimal(n))
            }
            Clock::FineDecimal(n) => {
                let per = 10u64.pow(u32::from(n));
                let to_ns = 10u64.pow(u32::from(n - 9));
                (units / per, (units % per) / to_ns, TsResolution::NANO)
            }
            Clock::Binary(n) => (
                units >> n,
                units & ((1u64 << n) - 1),
                TsResolution::Binary(n),
            ),
            Clock::FineBinary(n) => (
                units >> n,
                (units & ((1u64 << n) - 1)) >> (n - 32),
                TsResolution::ERF,
            ),
        };
        self.offset(secs, frac, res)
    }
}

/// A section (Section Header Block and what follows it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Byte order of the section.
    pub byte_order: ByteOrder,
    /// Format version (1.0).
    pub version: (u16, u16),
    /// Declared section length in bytes, if given (-1 in the file means unknown).
    pub length: Option<u64>,
    /// `shb_hardware`.
    pub hardware: Option<String>,
    /// `shb_os`.
    pub os: Option<String>,
    /// `shb_userappl`.
    pub application: Option<String>,
    /// Section comments.
    pub comments: Vec<String>,
    /// Global number of this section's first interface.
    pub first_interface: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iface(raw: u8) -> Interface {
        let mut i = Interface::new(0, 0, LinkType::ETHERNET, 0);
        assert!(i.set_tsresol(raw));
        i
    }

    #[test]
    fn resolutions() {
        let t = iface(6).timestamp(1_700_000_000_123_456);
        assert_eq!((t.secs(), t.subsec_micros()), (1_700_000_000, 123_456));
        let t = iface(9).timestamp(1_700_000_000_123_456_789);
        assert_eq!((t.secs(), t.subsec_nanos()), (1_700_000_000, 123_456_789));
        let t = iface(3).timestamp(1_700_000_000_123);
        assert_eq!((t.secs(), t.subsec_nanos()), (1_700_000_000, 123_000_000));
        // 2^-10: 512 units = 0.5 s
        let t = iface(0x80 | 10).timestamp((5 << 10) | 512);
        assert_eq!((t.secs(), t.subsec_nanos()), (5, 500_000_000));
        // 2^-32 is ERF
        let t = iface(0x80 | 32).timestamp((7 << 32) | 0x4000_0000);
        assert_eq!(t.to_erf(), (7 << 32) | 0x4000_0000);
        // 10^-12 kept to the ns
        let t = iface(12).timestamp(3_000_000_000_000 + 1_234_567_891);
        assert_eq!((t.secs(), t.subsec_nanos()), (3, 1_234_567));
        assert!(!Interface::new(0, 0, LinkType::ETHERNET, 0).set_tsresol(20));
    }

    #[test]
    fn offset_applies() {
        let mut i = iface(6);
        i.ts_offset = 100;
        assert_eq!(i.timestamp(5_000_000).secs(), 105);
        i.ts_offset = -3;
        assert_eq!(i.timestamp(5_000_000).secs(), 2);
    }
}
