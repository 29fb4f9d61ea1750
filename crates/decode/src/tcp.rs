//! TCP headers and options.

use crate::anomaly::Anomaly;
use crate::ipv4::OptionIter;

mod field {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const SEQ: usize = 4;
    pub const ACK: usize = 8;
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: usize = 14;
    pub const CHECKSUM: usize = 16;
    pub const URGENT: usize = 18;
    pub const FIXED_LEN: usize = 20;
}

/// Option kinds with a decoded [`TcpOption`] (RFC 9293, 2018, 7323).
mod option_kind {
    pub const MSS: u8 = 2;
    pub const WINDOW_SCALE: u8 = 3;
    pub const SACK_PERMITTED: u8 = 4;
    pub const SACK: u8 = 5;
    pub const TIMESTAMPS: u8 = 8;
}

/// The bytes of one SACK block (left and right edge).
const SACK_BLOCK_LEN: usize = 8;

/// TCP flag bits as in [`TcpHeader::flags`].
pub mod flags {
    /// FIN.
    pub const FIN: u16 = 0x001;
    /// SYN.
    pub const SYN: u16 = 0x002;
    /// RST.
    pub const RST: u16 = 0x004;
    /// PSH.
    pub const PSH: u16 = 0x008;
    /// ACK.
    pub const ACK: u16 = 0x010;
    /// URG.
    pub const URG: u16 = 0x020;
    /// ECE.
    pub const ECE: u16 = 0x040;
    /// CWR.
    pub const CWR: u16 = 0x080;
    /// AE (formerly NS).
    pub const AE: u16 = 0x100;
}

/// A TCP header whose fixed 20 bytes were captured.
#[derive(Clone, Copy, Debug)]
pub struct TcpHeader<'a> {
    bytes: &'a [u8],
}

impl<'a> TcpHeader<'a> {
    /// Length of the fixed header.
    pub const FIXED_LEN: usize = field::FIXED_LEN;

    /// A view of `bytes` if the fixed header is there ([`Anomaly::TcpTruncated`] if not).
    #[inline]
    pub fn new_checked(bytes: &'a [u8]) -> Result<TcpHeader<'a>, Anomaly> {
        if bytes.len() < field::FIXED_LEN {
            return Err(Anomaly::TcpTruncated);
        }
        Ok(TcpHeader { bytes })
    }

    /// What is wrong with the data offset, if anything, for a segment of `segment` bytes
    /// (by the IP header) of which `captured` were captured.
    #[inline]
    pub(crate) fn offset_anomaly(&self, segment: usize, captured: usize) -> Option<Anomaly> {
        let hlen = self.header_len();
        if hlen < field::FIXED_LEN {
            Some(Anomaly::TcpDataOffsetTooSmall)
        } else if hlen > segment {
            Some(Anomaly::TcpDataOffsetBeyondSegment)
        } else if hlen > captured {
            Some(Anomaly::TcpOptionsTruncated)
        } else {
            None
        }
    }

    /// [`Anomaly::TcpOptionOverrun`] when an option that was captured whole is malformed
    /// (options cut by the capture are a truncation, noted by [`Self::offset_anomaly`]).
    pub(crate) fn options_anomaly(&self) -> Option<Anomaly> {
        if self.header_len() > self.bytes.len() {
            return None;
        }
        let mut opts = self.options();
        for _ in opts.by_ref() {}
        opts.overran().then_some(Anomaly::TcpOptionOverrun)
    }

    #[inline]
    fn u16_at(&self, i: usize) -> u16 {
        u16::from_be_bytes([self.bytes[i], self.bytes[i + 1]])
    }

    #[inline]
    fn u32_at(&self, i: usize) -> u32 {
        u32::from_be_bytes([
            self.bytes[i],
            self.bytes[i + 1],
            self.bytes[i + 2],
            self.bytes[i + 3],
        ])
    }

    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        self.u16_at(field::SRC_PORT)
    }

    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        self.u16_at(field::DST_PORT)
    }

    /// Sequence number. The numbers are `*_number()` and the flags are bare names
    /// (`ack()` is the ACK flag), so the two cannot be confused:
    ///
    /// ```
    /// use tracekit_decode::TcpHeader;
    /// // ports 80 -> 5000, seq 7, ack 9, data offset 5, flags SYN|ACK
    /// let bytes = [0, 80, 0x13, 0x88, 0, 0, 0, 7, 0, 0, 0, 9, 0x50, 0x12, 0xff, 0xff, 0, 0, 0, 0];
    /// let tcp = TcpHeader::new_checked(&bytes).unwrap();
    /// assert_eq!((tcp.seq_number(), tcp.ack_number()), (7, 9));
    /// assert!(tcp.syn() && tcp.ack() && !tcp.fin() && !tcp.rst() && !tcp.psh());
    /// ```
    #[inline]
    pub fn seq_number(&self) -> u32 {
        self.u32_at(field::SEQ)
    }

    /// Acknowledgement number (meaningful when [`ack`](Self::ack), the flag, is set).
    #[inline]
    pub fn ack_number(&self) -> u32 {
        self.u32_at(field::ACK)
    }

    /// Sequence number.
    #[deprecated(note = "use seq_number(), named like ack_number()")]
    pub fn seq(&self) -> u32 {
        self.seq_number()
    }

    /// Header length in bytes (data offset × 4), as the header says.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.bytes[field::DATA_OFF] >> 4) * 4
    }

    /// The nine flag bits (see [`flags`]).
    #[inline]
    pub fn flags(&self) -> u16 {
        self.u16_at(field::DATA_OFF) & 0x1ff
    }

    /// The flag byte (CWR..FIN).
    pub fn flag_byte(&self) -> u8 {
        self.bytes[field::FLAGS]
    }

    /// SYN flag set.
    #[inline]
    pub fn syn(&self) -> bool {
        self.flags() & flags::SYN != 0
    }

    /// ACK flag set (the number is [`ack_number`](Self::ack_number)).
    #[inline]
    pub fn ack(&self) -> bool {
        self.flags() & flags::ACK != 0
    }

    /// ACK flag set.
    #[deprecated(note = "use ack(), the flag (the number is ack_number())")]
    pub fn ack_flag(&self) -> bool {
        self.ack()
    }

    /// FIN flag set.
    #[inline]
    pub fn fin(&self) -> bool {
        self.flags() & flags::FIN != 0
    }

    /// RST flag set.
    #[inline]
    pub fn rst(&self) -> bool {
        self.flags() & flags::RST != 0
    }

    /// PSH flag set.
    pub fn psh(&self) -> bool {
        self.flags() & flags::PSH != 0
    }

    /// URG flag set (the pointer is [`urgent`](Self::urgent)).
    pub fn urg(&self) -> bool {
        self.flags() & flags::URG != 0
    }

    /// ECE flag set.
    pub fn ece(&self) -> bool {
        self.flags() & flags::ECE != 0
    }

    /// CWR flag set.
    pub fn cwr(&self) -> bool {
        self.flags() & flags::CWR != 0
    }

    /// Window field (unscaled).
    pub fn window(&self) -> u16 {
        self.u16_at(field::WINDOW)
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM)
    }

    /// Urgent pointer.
    pub fn urgent(&self) -> u16 {
        self.u16_at(field::URGENT)
    }

    /// The options that were captured; see [`TcpOptions::overran`] for malformation.
    pub fn options(&self) -> TcpOptions<'a> {
        let end = self.header_len().min(self.bytes.len());
        let bytes = self.bytes.get(field::FIXED_LEN..end).unwrap_or(&[]);
        TcpOptions {
            raw: OptionIter {
                bytes,
                overrun: false,
            },
            bad_len: false,
        }
    }
}

/// One TCP option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpOption<'a> {
    /// Maximum segment size (kind 2).
    Mss(u16),
    /// Window scale shift (kind 3).
    WindowScale(u8),
    /// SACK permitted (kind 4).
    SackPermitted,
    /// SACK blocks (kind 5): `(left, right)` edges.
    Sack(SackBlocks<'a>),
    /// Timestamps (kind 8): value and echo reply.
    Timestamps {
        /// TSval.
        value: u32,
        /// TSecr.
        echo: u32,
    },
    /// Any other kind, or a known kind with the wrong length.
    Unknown {
        /// The option kind.
        kind: u8,
        /// The option data (after kind and length).
        data: &'a [u8],
    },
}

/// The edges of a SACK option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SackBlocks<'a> {
    data: &'a [u8],
}

impl SackBlocks<'_> {
    /// The blocks as `(left edge, right edge)`.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.data.chunks_exact(SACK_BLOCK_LEN).map(|c| {
            (
                u32::from_be_bytes([c[0], c[1], c[2], c[3]]),
                u32::from_be_bytes([c[4], c[5], c[6], c[7]]),
            )
        })
    }

    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.data.len() / SACK_BLOCK_LEN
    }

    /// Whether there are no blocks.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Iterator over TCP options.
#[derive(Clone, Debug)]
pub struct TcpOptions<'a> {
    raw: OptionIter<'a>,
    bad_len: bool,
}

impl TcpOptions<'_> {
    /// Whether an option's length was below 2, ran past the header, or was wrong for
    /// its kind (those are returned as [`TcpOption::Unknown`]).
    pub fn overran(&self) -> bool {
        self.raw.overran() || self.bad_len
    }
}

impl<'a> Iterator for TcpOptions<'a> {
    type Item = TcpOption<'a>;

    #[inline]
    fn next(&mut self) -> Option<TcpOption<'a>> {
        let (kind, data) = self.raw.next()?;
        // The lengths are those of the option data, after kind and length.
        let opt = match (kind, data.len()) {
            (option_kind::MSS, 2) => TcpOption::Mss(u16::from_be_bytes([data[0], data[1]])),
            (option_kind::WINDOW_SCALE, 1) => TcpOption::WindowScale(data[0]),
            (option_kind::SACK_PERMITTED, 0) => TcpOption::SackPermitted,
            (option_kind::SACK, n) if n % SACK_BLOCK_LEN == 0 && n > 0 => {
                TcpOption::Sack(SackBlocks { data })
            }
            (option_kind::TIMESTAMPS, 8) => TcpOption::Timestamps {
                value: u32::from_be_bytes([data[0], data[1], data[2], data[3]]),
                echo: u32::from_be_bytes([data[4], data[5], data[6], data[7]]),
            },
            (option_kind::MSS..=option_kind::SACK | option_kind::TIMESTAMPS, _) => {
                self.bad_len = true;
                TcpOption::Unknown { kind, data }
            }
            _ => TcpOption::Unknown { kind, data },
        };
        Some(opt)
    }
}
