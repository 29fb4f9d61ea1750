//! RadioTap and Prism capture headers in front of 802.11 frames.

use crate::bytes::{le16, le32, le64, u8_at};

/// The RadioTap fixed header (little-endian).
pub(crate) mod field {
    pub const VERSION: usize = 0;
    pub const LEN: usize = 2;
    pub const PRESENT: usize = 4;
    pub const FIXED_LEN: usize = 8;
}

/// The Prism (wlan-ng) monitor header.
pub(crate) mod prism {
    pub const MSGLEN: usize = 4;
    /// Message code and length: the least a header can be.
    pub const MIN_LEN: usize = 8;
    pub const LEN: usize = 144;
}

/// Presence-word bit: another presence word follows.
const PRESENT_EXT: u32 = 0x8000_0000;

/// The RadioTap fields libtrace exposes, where present in the first presence word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RadioTap {
    /// Header length (the 802.11 frame starts there).
    pub len: u16,
    /// TSF timer in microseconds.
    pub tsft: Option<u64>,
    /// Flags (0x10: the frame ends with an FCS).
    pub flags: Option<u8>,
    /// Data rate in 500 kbit/s units.
    pub rate: Option<u8>,
    /// Channel frequency in MHz.
    pub channel_freq: Option<u16>,
    /// Channel flags.
    pub channel_flags: Option<u16>,
    /// Antenna signal in dBm.
    pub signal_dbm: Option<i8>,
    /// Antenna noise in dBm.
    pub noise_dbm: Option<i8>,
    /// Antenna index.
    pub antenna: Option<u8>,
}

/// (size, alignment) of presence bits 0..=13.
const FIELDS: [(usize, usize); 14] = [
    (8, 8), // TSFT
    (1, 1), // flags
    (1, 1), // rate
    (4, 2), // channel
    (2, 1), // FHSS
    (1, 1), // dBm antenna signal
    (1, 1), // dBm antenna noise
    (2, 2), // lock quality
    (2, 2), // TX attenuation
    (2, 2), // dB TX attenuation
    (1, 1), // dBm TX power
    (1, 1), // antenna
    (1, 1), // dB antenna signal
    (1, 1), // dB antenna noise
];

/// Flag bit: the 802.11 frame carries a 4-byte FCS at its end.
pub const FLAG_FCS: u8 = 0x10;

impl RadioTap {
    /// Parses the RadioTap header at the start of `b`; `None` when the 8-byte fixed part
    /// is missing, the version is not 0 or the length does not fit.
    pub fn parse(b: &[u8]) -> Option<RadioTap> {
        if u8_at(b, field::VERSION)? != 0 {
            return None;
        }
        let len = le16(b, field::LEN)?;
        let hlen = usize::from(len);
        if hlen < field::FIXED_LEN || hlen > b.len() {
            return None;
        }
        let b = &b[..hlen];
        let present = le32(b, field::PRESENT)?;
        // Extended presence words follow while bit 31 is set.
        let mut off = field::FIXED_LEN;
        let mut word = present;
        while word & PRESENT_EXT != 0 {
            word = le32(b, off)?;
            off += 4;
        }
        let mut rt = RadioTap {
            len,
            ..RadioTap::default()
        };
        for (bit, &(size, align)) in FIELDS.iter().enumerate() {
            if present & (1 << bit) == 0 {
                continue;
            }
            off = (off + align - 1) & !(align - 1);
            match bit {
                0 => rt.tsft = le64(b, off),
                1 => rt.flags = u8_at(b, off),
                2 => rt.rate = u8_at(b, off),
                3 => {
                    rt.channel_freq = le16(b, off);
                    rt.channel_flags = le16(b, off + 2);
                }
                5 => rt.signal_dbm = u8_at(b, off).map(|v| v as i8),
                6 => rt.noise_dbm = u8_at(b, off).map(|v| v as i8),
                11 => rt.antenna = u8_at(b, off),
                _ => {}
            }
            off += size;
            if off > b.len() {
                break;
            }
        }
        Some(rt)
    }
}

/// The length of a Prism (wlan-ng) monitor header at the start of `b`: its `msglen`
/// field, read in either byte order, or `None` when implausible.
pub(crate) fn prism_len(b: &[u8]) -> Option<usize> {
    let raw = le32(b, prism::MSGLEN)?;
    let plausible = prism::MIN_LEN..=b.len();
    let n = if plausible.contains(&(raw as usize)) {
        raw
    } else {
        raw.swap_bytes()
    } as usize;
    plausible.contains(&n).then_some(n)
}
