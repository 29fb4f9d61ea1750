//! RadioTap and Prism capture headers in front of 802.11 frames.

use crate::bytes::{le16, le32, le64, u8_at};

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
        if u8_at(b, 0)? != 0 {
            return None;
        }
        let len = le16(b, 2)?;
        let hlen = usize::from(len);
        if hlen < 8 || hlen > b.len() {
            return None;
        }
        let b = &b[..hlen];
        let present = le32(b, 4)?;
        // Extended presence words follow while bit 31 is set.
        let mut off = 8;
        let mut word = present;
        while word & 0x8000_0000 != 0 {
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
    let raw = le32(b, 4)?;
    let n = if (8..=b.len()).contains(&(raw as usize)) {
        raw
    } else {
        raw.swap_bytes()
    } as usize;
    (8..=b.len()).contains(&n).then_some(n)
}
