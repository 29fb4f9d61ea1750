//! Ethernet II / 802.3 frames, 802.1Q/802.1ad tags, MPLS label stack entries, PPPoE.

use crate::anomaly::Anomaly;
use crate::bytes::{be16, be32, field_be16};

pub(crate) mod field {
    use core::ops::Range;
    pub const DST: Range<usize> = 0..6;
    pub const SRC: Range<usize> = 6..12;
    /// Where the type field starts (it is [`TYPE_FIELD`] long).
    pub const TYPE: usize = 12;
    pub const TYPE_FIELD: Range<usize> = TYPE..TYPE + 2;
    pub const LEN: usize = 14;
}

/// The largest value of the type field that is an 802.3 length rather than an EtherType.
pub(crate) const MAX_LENGTH: u16 = 1500;

/// EtherType values the decoder dispatches on.
pub mod ethertype {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// ARP.
    pub const ARP: u16 = 0x0806;
    /// IPv6.
    pub const IPV6: u16 = 0x86DD;
    /// 802.1Q customer VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// 802.1ad service VLAN tag (QinQ outer tag).
    pub const QINQ: u16 = 0x88A8;
    /// Pre-standard QinQ outer tag.
    pub const QINQ_OLD: u16 = 0x9100;
    /// MPLS unicast.
    pub const MPLS: u16 = 0x8847;
    /// MPLS multicast.
    pub const MPLS_MULTICAST: u16 = 0x8848;
    /// PPPoE discovery.
    pub const PPPOE_DISCOVERY: u16 = 0x8863;
    /// PPPoE session.
    pub const PPPOE_SESSION: u16 = 0x8864;
    /// Transparent Ethernet bridging (Ethernet over GRE, Geneve).
    pub const TEB: u16 = 0x6558;
    /// PPP (as carried by PPTP's enhanced GRE).
    pub const PPP: u16 = 0x880B;
    /// 802.1ah provider backbone bridging I-tag (a customer Ethernet header follows).
    pub const PBB: u16 = 0x88E7;
    /// Cisco FabricPath (DCE): a 2-byte FTag/TTL, then the original Ethernet frame.
    pub const FABRICPATH: u16 = 0x8903;
    /// Cisco VN-Tag: a 4-byte tag, then the next EtherType.
    pub const VNTAG: u16 = 0x8926;
    /// IEEE 802.1BR E-Tag: a 6-byte tag, then the next EtherType.
    pub const ETAG: u16 = 0x893F;
}

/// An Ethernet header whose 14 bytes were captured.
#[derive(Clone, Copy, Debug)]
pub struct EthernetHeader<'a> {
    bytes: &'a [u8],
}

impl<'a> EthernetHeader<'a> {
    /// Header length.
    pub const LEN: usize = field::LEN;

    /// A view of `bytes` if the fixed header is there ([`Anomaly::LinkTruncated`] if not).
    pub fn new_checked(bytes: &'a [u8]) -> Result<EthernetHeader<'a>, Anomaly> {
        if bytes.len() < field::LEN {
            return Err(Anomaly::LinkTruncated);
        }
        Ok(EthernetHeader { bytes })
    }

    /// Destination MAC address.
    pub fn dst(&self) -> [u8; 6] {
        let mut a = [0; 6];
        a.copy_from_slice(&self.bytes[field::DST]);
        a
    }

    /// Source MAC address.
    pub fn src(&self) -> [u8; 6] {
        let mut a = [0; 6];
        a.copy_from_slice(&self.bytes[field::SRC]);
        a
    }

    /// The EtherType, or the 802.3 length when 1500 or below.
    pub fn ethertype(&self) -> u16 {
        field_be16(self.bytes, field::TYPE_FIELD)
    }
}

/// One 802.1Q / 802.1ad tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vlan {
    /// The tag protocol identifier that introduced it (0x8100, 0x88a8 or 0x9100).
    pub tpid: u16,
    /// Priority code point.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier.
    pub id: u16,
}

impl Vlan {
    pub(crate) fn parse(tpid: u16, tag: &[u8], at: usize) -> Option<Vlan> {
        let tci = be16(tag, at)?;
        Some(Vlan {
            tpid,
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            id: tci & 0x0fff,
        })
    }
}

/// One MPLS label stack entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MplsLabel {
    /// The 20-bit label.
    pub label: u32,
    /// Traffic class.
    pub tc: u8,
    /// Bottom of stack.
    pub bottom: bool,
    /// Time to live.
    pub ttl: u8,
    /// Whether the stack came with the multicast EtherType.
    pub multicast: bool,
}

impl MplsLabel {
    pub(crate) fn parse(b: &[u8], at: usize, multicast: bool) -> Option<MplsLabel> {
        let v = be32(b, at)?;
        Some(MplsLabel {
            label: v >> 12,
            tc: ((v >> 9) & 7) as u8,
            bottom: v & 0x100 != 0,
            ttl: v as u8,
            multicast,
        })
    }
}

/// Maps a PPP protocol number to the EtherType the decoder continues with.
pub(crate) fn ppp_to_ethertype(proto: u16) -> Option<u16> {
    match proto {
        0x0021 => Some(ethertype::IPV4),
        0x0057 => Some(ethertype::IPV6),
        0x0281 => Some(ethertype::MPLS),
        0x0283 => Some(ethertype::MPLS_MULTICAST),
        _ => None,
    }
}
