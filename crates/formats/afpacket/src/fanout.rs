//! Packet fan-out: how the kernel spreads one interface's packets over the members of a
//! `PACKET_FANOUT` group, written as the fan-out paper's mode strings (`hash|defrag`).

use std::fmt;
use std::str::FromStr;

use tracekit_core::Error;

/// How the kernel picks the member for a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FanoutMode {
    /// Symmetric flow hash: both directions of a flow go to the same member.
    Hash,
    /// Round robin.
    LoadBalance,
    /// The CPU that received the packet.
    Cpu,
    /// The first member with room.
    Rollover,
    /// Random.
    Random,
    /// The receive queue the NIC recorded.
    QueueMap,
    /// A classic BPF program returns the member (set with
    /// [`crate::FanoutGroup::program`]).
    Cbpf,
    /// An eBPF socket-filter program returns the member (its fd set with
    /// [`crate::FanoutGroup::ebpf_fd`]).
    Ebpf,
}

impl FanoutMode {
    /// The kernel's `PACKET_FANOUT_*` value.
    pub fn kernel_value(self) -> u16 {
        match self {
            FanoutMode::Hash => 0,
            FanoutMode::LoadBalance => 1,
            FanoutMode::Cpu => 2,
            FanoutMode::Rollover => 3,
            FanoutMode::Random => 4,
            FanoutMode::QueueMap => 5,
            FanoutMode::Cbpf => 6,
            FanoutMode::Ebpf => 7,
        }
    }

    /// The name in mode strings.
    pub fn name(self) -> &'static str {
        match self {
            FanoutMode::Hash => "hash",
            FanoutMode::LoadBalance => "lb",
            FanoutMode::Cpu => "cpu",
            FanoutMode::Rollover => "rollover",
            FanoutMode::Random => "rnd",
            FanoutMode::QueueMap => "qm",
            FanoutMode::Cbpf => "cbpf",
            FanoutMode::Ebpf => "ebpf",
        }
    }

    const ALL: [FanoutMode; 8] = [
        FanoutMode::Hash,
        FanoutMode::LoadBalance,
        FanoutMode::Cpu,
        FanoutMode::Rollover,
        FanoutMode::Random,
        FanoutMode::QueueMap,
        FanoutMode::Cbpf,
        FanoutMode::Ebpf,
    ];
}

/// Fan-out flags (a set).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FanoutFlags(u16);

impl FanoutFlags {
    /// Move a packet to another member when the chosen one is short of room (breaks
    /// flow affinity under load).
    pub const ROLLOVER: FanoutFlags = FanoutFlags(0x1000);
    /// Let the kernel pick a free group id (read back with [`crate::AfPacket::fanout_group`]).
    pub const UNIQUE_ID: FanoutFlags = FanoutFlags(0x2000);
    /// Do not deliver outgoing packets (the group's own hook; kernel 6.2 and later).
    pub const IGNORE_OUTGOING: FanoutFlags = FanoutFlags(0x4000);
    /// Reassemble IPv4 fragments before choosing the member (what is captured is then
    /// the reassembled datagram, not the wire's fragments).
    pub const DEFRAG: FanoutFlags = FanoutFlags(0x8000);

    const NAMED: [(FanoutFlags, &'static str); 4] = [
        (FanoutFlags::DEFRAG, "defrag"),
        (FanoutFlags::ROLLOVER, "rollover"),
        (FanoutFlags::IGNORE_OUTGOING, "ignore_outgoing"),
        (FanoutFlags::UNIQUE_ID, "uniqueid"),
    ];

    /// No flags.
    pub const NONE: FanoutFlags = FanoutFlags(0);

    /// The kernel's bits.
    pub fn bits(self) -> u16 {
        self.0
    }

    /// Whether every flag of `other` is set.
    pub fn contains(self, other: FanoutFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// `self` without `other`.
    pub fn without(self, other: FanoutFlags) -> FanoutFlags {
        FanoutFlags(self.0 & !other.0)
    }
}

impl std::ops::BitOr for FanoutFlags {
    type Output = FanoutFlags;
    fn bitor(self, rhs: FanoutFlags) -> FanoutFlags {
        FanoutFlags(self.0 | rhs.0)
    }
}

/// A mode and its flags, as in the fan-out paper's strings: `hash`, `hash|defrag`,
/// `lb|rollover|ignore_outgoing`.
///
/// ```
/// use tracekit_afpacket::{FanoutFlags, FanoutMode, FanoutSpec};
/// let spec: FanoutSpec = "hash|defrag|ignore_outgoing".parse()?;
/// assert_eq!(spec.mode, FanoutMode::Hash);
/// assert!(spec.flags.contains(FanoutFlags::DEFRAG | FanoutFlags::IGNORE_OUTGOING));
/// assert_eq!(spec.to_string(), "hash|defrag|ignore_outgoing");
/// assert!("rollover|rollover".parse::<FanoutSpec>().is_err());
/// # Ok::<(), tracekit_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FanoutSpec {
    /// How members are chosen.
    pub mode: FanoutMode,
    /// Flags.
    pub flags: FanoutFlags,
}

impl Default for FanoutSpec {
    fn default() -> FanoutSpec {
        FanoutSpec {
            mode: FanoutMode::Hash,
            flags: FanoutFlags::NONE,
        }
    }
}

impl FanoutSpec {
    /// Refuses combinations the kernel would refuse or silently mishandle.
    pub fn check(&self) -> Result<(), Error> {
        if self.mode == FanoutMode::Rollover && self.flags.contains(FanoutFlags::ROLLOVER) {
            return Err(Error::invalid_argument(
                "fan-out mode rollover cannot take the rollover flag (the kernel refuses it)",
            ));
        }
        Ok(())
    }
}

impl FromStr for FanoutSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<FanoutSpec, Error> {
        let mut parts = s.split('|').map(str::trim);
        let first = parts.next().unwrap_or("");
        let mode = FanoutMode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(first))
            .ok_or_else(|| {
                Error::invalid_argument(format!(
                    "unknown fan-out mode '{first}' in '{s}' (modes: hash, lb, cpu, rollover, rnd, qm, cbpf, ebpf)"
                ))
            })?;
        let mut flags = FanoutFlags::NONE;
        for part in parts {
            let (flag, _) = FanoutFlags::NAMED
                .into_iter()
                .find(|(_, n)| n.eq_ignore_ascii_case(part))
                .ok_or_else(|| {
                    Error::invalid_argument(format!(
                        "unknown fan-out flag '{part}' in '{s}' (flags: defrag, rollover, ignore_outgoing, uniqueid)"
                    ))
                })?;
            if flags.contains(flag) {
                return Err(Error::invalid_argument(format!(
                    "fan-out flag '{part}' given twice in '{s}'"
                )));
            }
            flags = flags | flag;
        }
        let spec = FanoutSpec { mode, flags };
        spec.check()?;
        Ok(spec)
    }
}

impl fmt::Display for FanoutSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mode.name())?;
        for (flag, name) in FanoutFlags::NAMED {
            if self.flags.contains(flag) {
                write!(f, "|{name}")?;
            }
        }
        Ok(())
    }
}

/// Which fan-out group to join.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupId {
    /// This id (global per network namespace: every socket on the same device with the
    /// same id and mode joins the same group).
    Fixed(u16),
    /// A free id the kernel picks for the first member (`PACKET_FANOUT_FLAG_UNIQUEID`);
    /// the other members join it.
    Unique,
}

/// The `PACKET_FANOUT` option value: `id | (mode | flags) << 16`.
pub(crate) fn option_value(id: u16, spec: FanoutSpec, extra: FanoutFlags) -> u32 {
    u32::from(id) | (u32::from(spec.mode.kernel_value() | spec.flags.bits() | extra.bits()) << 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print() {
        for (s, mode, flags) in [
            ("hash", FanoutMode::Hash, FanoutFlags::NONE),
            (
                "LB|rollover",
                FanoutMode::LoadBalance,
                FanoutFlags::ROLLOVER,
            ),
            (
                "rnd | defrag | uniqueid",
                FanoutMode::Random,
                FanoutFlags::DEFRAG | FanoutFlags::UNIQUE_ID,
            ),
            ("qm", FanoutMode::QueueMap, FanoutFlags::NONE),
            ("cbpf", FanoutMode::Cbpf, FanoutFlags::NONE),
        ] {
            let spec: FanoutSpec = s.parse().unwrap();
            assert_eq!((spec.mode, spec.flags), (mode, flags), "{s}");
            assert_eq!(spec.to_string().parse::<FanoutSpec>().unwrap(), spec);
        }
        for bad in [
            "",
            "hsh",
            "hash|",
            "hash|defrag|defrag",
            "rollover|rollover",
            "hash|x",
        ] {
            assert!(bad.parse::<FanoutSpec>().is_err(), "{bad}");
        }
        let e = "hash|frag".parse::<FanoutSpec>().unwrap_err().to_string();
        assert!(e.contains("unknown fan-out flag 'frag'"), "{e}");
    }

    #[test]
    fn kernel_encoding() {
        let spec: FanoutSpec = "hash|defrag".parse().unwrap();
        assert_eq!(option_value(7, spec, FanoutFlags::NONE), 0x8000_0007);
        let lb: FanoutSpec = "lb".parse().unwrap();
        assert_eq!(option_value(0, lb, FanoutFlags::UNIQUE_ID), 0x2001_0000);
    }
}
