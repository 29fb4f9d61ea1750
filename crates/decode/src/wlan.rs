//! 802.11 data frames: where the frame body starts, and A-MSDU aggregates.
//!
//! A QoS data frame whose QoS control field has the A-MSDU-present bit (bit 7) carries
//! subframes instead of one LLC/SNAP payload (IEEE 802.11-2020 §9.3.2.2): each is a
//! destination, a source, a big-endian length, then that many bytes of MSDU (an LLC/SNAP
//! header and the packet), padded to a multiple of 4 bytes except the last. The decoder
//! reads the first subframe as the frame's network layer; [`AmsduSubframes`] walks them
//! all. Mesh A-MSDUs (a mesh control field in each subframe) are not told apart.

use tracekit_core::LinkType;

use crate::Decoded;
use crate::anomaly::Anomaly;
use crate::bytes::{be16, field_be16, u8_at};

/// The 802.11 MAC header of data frames.
pub(crate) mod field {
    pub const FC0: usize = 0;
    pub const FC1: usize = 1;
    /// Frame control, duration and three addresses, sequence control.
    pub const BASE_LEN: usize = 24;
    /// The fourth address, when both to-DS and from-DS are set.
    pub const ADDR4_LEN: usize = 6;
    pub const QOS_LEN: usize = 2;
    pub const HT_CONTROL_LEN: usize = 4;
    pub const TYPE_DATA: u8 = 2;
    /// Subtype bit: no data (null function frames).
    pub const SUBTYPE_NO_DATA: u8 = 0x4;
    /// Subtype bit: QoS data.
    pub const SUBTYPE_QOS: u8 = 0x8;
    pub const FC1_DS_BITS: u8 = 0x03;
    pub const FC1_PROTECTED: u8 = 0x40;
    pub const FC1_ORDER: u8 = 0x80;
    /// In the QoS control field's first byte: the body is an A-MSDU.
    pub const QOS_AMSDU_PRESENT: u8 = 0x80;
}

/// An A-MSDU subframe header: destination, source, MSDU length.
mod subframe {
    use core::ops::Range;
    pub const DA: Range<usize> = 0..6;
    pub const SA: Range<usize> = 6..12;
    pub const LENGTH: Range<usize> = 12..14;
    pub const HEADER_LEN: usize = 14;
    /// Every subframe but the last is padded to this multiple.
    pub const ALIGN: usize = 4;
}

/// What the body of an 802.11 frame holds, for the link walk.
pub(crate) enum Body {
    /// No network layer to read: management, control, null data or protected frames.
    None,
    /// An LLC header at this offset.
    Llc(usize),
    /// A-MSDU subframes from this offset.
    Amsdu(usize),
}

/// The body of the 802.11 frame at `off` in `b` (whose useful bytes end at `end`), its
/// frame-control bytes swapped when `swapped_fc`. [`Anomaly::LinkTruncated`] when the
/// frame control or the data header was cut.
pub(crate) fn body(b: &[u8], off: usize, end: usize, swapped_fc: bool) -> Result<Body, Anomaly> {
    let (Some(mut fc0), Some(mut fc1)) = (u8_at(b, off + field::FC0), u8_at(b, off + field::FC1))
    else {
        return Err(Anomaly::LinkTruncated);
    };
    if swapped_fc {
        std::mem::swap(&mut fc0, &mut fc1);
    }
    let ftype = (fc0 >> 2) & 3;
    let subtype = fc0 >> 4;
    if ftype != field::TYPE_DATA
        || subtype & field::SUBTYPE_NO_DATA != 0
        || fc1 & field::FC1_PROTECTED != 0
    {
        return Ok(Body::None);
    }
    let mut hlen = field::BASE_LEN;
    if fc1 & field::FC1_DS_BITS == field::FC1_DS_BITS {
        hlen += field::ADDR4_LEN;
    }
    let mut amsdu = false;
    if subtype & field::SUBTYPE_QOS != 0 {
        // The QoS control field's first byte (it is little-endian) holds the bit.
        amsdu = u8_at(b, off + hlen).is_some_and(|q| q & field::QOS_AMSDU_PRESENT != 0);
        hlen += field::QOS_LEN;
        if fc1 & field::FC1_ORDER != 0 {
            hlen += field::HT_CONTROL_LEN;
        }
    }
    let body = off + hlen;
    if b.len().min(end) < body {
        return Err(Anomaly::LinkTruncated);
    }
    Ok(if amsdu {
        Body::Amsdu(body)
    } else {
        Body::Llc(body)
    })
}

/// Where the first subframe's MSDU (its LLC header) starts and where it ends (at most
/// `end`), for the subframes at `at`; [`Anomaly::LinkTruncated`] when its header was cut.
pub(crate) fn first_msdu(b: &[u8], at: usize, end: usize) -> Result<(usize, usize), Anomaly> {
    let len = be16(b, at + subframe::LENGTH.start)
        .filter(|_| at + subframe::HEADER_LEN <= end)
        .ok_or(Anomaly::LinkTruncated)?;
    let msdu = at + subframe::HEADER_LEN;
    Ok((msdu, (msdu + usize::from(len)).min(end)))
}

/// One A-MSDU subframe whose 14-byte header was captured.
#[derive(Clone, Copy, Debug)]
pub struct AmsduSubframe<'a> {
    /// The header and the captured part of the MSDU.
    bytes: &'a [u8],
}

impl<'a> AmsduSubframe<'a> {
    /// Destination address.
    pub fn da(&self) -> [u8; 6] {
        let mut a = [0; 6];
        a.copy_from_slice(&self.bytes[subframe::DA]);
        a
    }

    /// Source address.
    pub fn sa(&self) -> [u8; 6] {
        let mut a = [0; 6];
        a.copy_from_slice(&self.bytes[subframe::SA]);
        a
    }

    /// The MSDU length the header declares.
    pub fn length(&self) -> u16 {
        field_be16(self.bytes, subframe::LENGTH)
    }

    /// The captured bytes of the MSDU (an LLC/SNAP header, then the packet).
    pub fn msdu(&self) -> &'a [u8] {
        &self.bytes[subframe::HEADER_LEN..]
    }

    /// Whether the capture (or the frame) ended before the MSDU's declared length.
    pub fn is_cut(&self) -> bool {
        self.msdu().len() < usize::from(self.length())
    }

    /// A decode of this subframe (its header reads as an 802.3 header: destination,
    /// source, length, then LLC), for the layers of the second and later subframes.
    pub fn decode(&self) -> Decoded<'a> {
        let wire = subframe::HEADER_LEN as u32 + u32::from(self.length());
        Decoded::from_bytes(self.bytes, LinkType::ETHERNET, wire)
    }
}

/// The subframes of an A-MSDU, in order (see [`Decoded::amsdu`]). Stops after a subframe
/// the capture cut and when fewer than a header's bytes are left; allocates nothing.
#[derive(Clone, Debug)]
pub struct AmsduSubframes<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> AmsduSubframes<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> AmsduSubframes<'a> {
        AmsduSubframes { bytes, at: 0 }
    }
}

impl<'a> Iterator for AmsduSubframes<'a> {
    type Item = AmsduSubframe<'a>;

    fn next(&mut self) -> Option<AmsduSubframe<'a>> {
        let rest = self.bytes.get(self.at..)?;
        let len = usize::from(be16(rest, subframe::LENGTH.start)?);
        let whole = subframe::HEADER_LEN + len;
        let bytes = rest.get(..whole).unwrap_or(rest);
        // Each step moves on by at least a header, so the walk ends with the bytes.
        self.at = if bytes.len() < whole {
            self.bytes.len()
        } else {
            self.at + whole.next_multiple_of(subframe::ALIGN)
        };
        Some(AmsduSubframe { bytes })
    }
}
