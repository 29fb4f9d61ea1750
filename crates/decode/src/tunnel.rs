//! Tunnels: which encapsulation a packet's transport layer carries (IP-in-IP, GRE, and
//! VXLAN, Geneve and GTP-U over UDP) and where the encapsulated packet starts.

use tracekit_core::LinkType;

use crate::anomaly::{Anomalies, Anomaly};
use crate::bytes::{be16, be32, u8_at};
use crate::ethernet::ethertype;
use crate::gre::{self, GreHeader};
use crate::ip_proto;
use crate::link::Framing;
use crate::net::NetInfo;
use crate::udp::UdpHeader;

/// The well-known UDP ports the decoder looks for tunnels on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TunnelPorts {
    /// VXLAN (IANA 4789).
    pub vxlan: u16,
    /// Geneve (IANA 6081).
    pub geneve: u16,
    /// GTP-U (IANA 2152).
    pub gtpu: u16,
    /// CAPWAP data channel (IANA 5247).
    pub capwap_data: u16,
}

impl Default for TunnelPorts {
    fn default() -> TunnelPorts {
        TunnelPorts {
            vxlan: 4789,
            geneve: 6081,
            gtpu: 2152,
            capwap_data: 5247,
        }
    }
}

/// An encapsulation found in the packet; [`crate::Decoded::inner`] decodes its payload.
/// New kinds are added as the decoder learns them: match with a wildcard arm.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Tunnel<'a> {
    /// IPv4 or IPv6 directly inside IP (protocol 4 or 41).
    IpInIp {
        /// The outer protocol number (4 or 41).
        protocol: u8,
    },
    /// GRE.
    Gre(GreHeader<'a>),
    /// VXLAN.
    Vxlan {
        /// Network identifier.
        vni: u32,
    },
    /// Geneve.
    Geneve {
        /// Network identifier.
        vni: u32,
        /// Payload EtherType.
        protocol: u16,
    },
    /// GTP-U (G-PDU messages).
    GtpU {
        /// Tunnel endpoint identifier.
        teid: u32,
    },
    /// A CAPWAP data channel (RFC 5415 §4.3) carrying a wireless frame (802.11 for
    /// binding 1, with the T bit) or an 802.3 frame.
    Capwap {
        /// Wireless binding identifier (1: IEEE 802.11).
        wbid: u8,
        /// The T bit: the payload is in the binding's native format (802.11), not 802.3.
        native: bool,
    },
}

/// A tunnel, the offset of the encapsulated packet in the captured bytes, and how that
/// packet is framed.
pub(crate) type Found<'a> = (Tunnel<'a>, usize, Framing);

/// The tunnel that the transport bytes `b` (at `n.l4_off`) carry, if any; damage to a
/// tunnel header is noted in `an`.
pub(crate) fn find<'a>(
    n: &NetInfo,
    b: &'a [u8],
    ports: TunnelPorts,
    an: &mut Anomalies,
) -> Option<Found<'a>> {
    let l4 = n.l4_off as usize;
    match n.proto {
        ip_proto::IPIP | ip_proto::IPV6 => Some((
            Tunnel::IpInIp { protocol: n.proto },
            l4,
            Framing::Link(LinkType::RAW),
        )),
        ip_proto::GRE => {
            let h = an.noted(gre::in_packet(n, b))?;
            // Aruba's GRE protocol types 0x8200..=0x8370 (steps of 0x10) carry 802.11
            // frames between access points and controllers, as Wireshark reads them.
            let framing = match h.protocol() {
                p @ aruba::FIRST..=aruba::LAST if p % aruba::STEP == 0 => {
                    Framing::Link(LinkType::IEEE802_11)
                }
                p => Framing::Ethertype(p),
            };
            Some((Tunnel::Gre(h), l4 + h.header_len(), framing))
        }
        ip_proto::UDP => {
            let h = UdpHeader::new_checked(b).ok()?;
            let (sp, dp) = (h.src_port(), h.dst_port());
            let on = |p: u16| p != 0 && (sp == p || dp == p);
            let body = b.get(UdpHeader::LEN..)?;
            let found = if on(ports.vxlan) {
                vxlan(body)
            } else if on(ports.geneve) {
                geneve(body)
            } else if on(ports.gtpu) {
                gtpu(body)
            } else if on(ports.capwap_data) {
                capwap(body)
            } else {
                return None;
            };
            let (t, len, framing) = an.noted(found)??;
            Some((t, l4 + UdpHeader::LEN + len, framing))
        }
        _ => None,
    }
}

/// A UDP tunnel header's findings: `None` when the header is fine but carries no
/// packet; the anomaly when it is cut or malformed.
type UdpTunnel = Result<Option<Found<'static>>, Anomaly>;

mod vxlan {
    pub const FLAGS: usize = 0;
    /// The VNI is the top 24 bits of this word.
    pub const VNI_WORD: usize = 4;
    pub const LEN: usize = 8;
    /// The I flag: the VNI is valid.
    pub const FLAG_VNI: u8 = 0x08;
}

fn vxlan(b: &[u8]) -> UdpTunnel {
    let flags = u8_at(b, vxlan::FLAGS).ok_or(Anomaly::TunnelTruncated)?;
    let word = be32(b, vxlan::VNI_WORD).ok_or(Anomaly::TunnelTruncated)?;
    if flags & vxlan::FLAG_VNI == 0 {
        return Err(Anomaly::TunnelMalformed);
    }
    let t = Tunnel::Vxlan { vni: word >> 8 };
    Ok(Some((t, vxlan::LEN, Framing::Ethertype(ethertype::TEB))))
}

mod geneve {
    /// Version (2 bits, 0) and options length (6 bits, in 4-byte words).
    pub const VER_OPT_LEN: usize = 0;
    pub const PROTOCOL: usize = 2;
    /// The VNI is the top 24 bits of this word.
    pub const VNI_WORD: usize = 4;
    pub const FIXED_LEN: usize = 8;
}

fn geneve(b: &[u8]) -> UdpTunnel {
    let b0 = u8_at(b, geneve::VER_OPT_LEN).ok_or(Anomaly::TunnelTruncated)?;
    let protocol = be16(b, geneve::PROTOCOL).ok_or(Anomaly::TunnelTruncated)?;
    let word = be32(b, geneve::VNI_WORD).ok_or(Anomaly::TunnelTruncated)?;
    if b0 >> 6 != 0 {
        return Err(Anomaly::TunnelMalformed);
    }
    let len = geneve::FIXED_LEN + usize::from(b0 & 0x3f) * 4;
    if b.len() < len {
        return Err(Anomaly::TunnelTruncated);
    }
    let t = Tunnel::Geneve {
        vni: word >> 8,
        protocol,
    };
    Ok(Some((t, len, Framing::Ethertype(protocol))))
}

/// Aruba's 802.11-in-GRE protocol types.
mod aruba {
    pub const FIRST: u16 = 0x8200;
    pub const LAST: u16 = 0x8370;
    pub const STEP: u16 = 0x10;
}

/// The CAPWAP header (RFC 5415 §4.3).
mod capwap {
    /// Preamble: version (4 bits, 0) and type (4 bits, 0: a CAPWAP header follows).
    pub const PREAMBLE: usize = 0;
    /// HLEN (5 bits), RID (5), WBID (5), T, F, L, W, M, K, flags (3).
    pub const BITS: usize = 0;
    pub const FIXED_LEN: usize = 8;
    pub const HLEN_SHIFT: u32 = 19;
    pub const WBID_SHIFT: u32 = 9;
    pub const T: u32 = 1 << 8;
    pub const F: u32 = 1 << 7;
    /// Wireless binding 1: IEEE 802.11.
    pub const WBID_IEEE80211: u8 = 1;
}

fn capwap(b: &[u8]) -> UdpTunnel {
    let preamble = u8_at(b, capwap::PREAMBLE).ok_or(Anomaly::TunnelTruncated)?;
    let bits = be32(b, capwap::BITS).ok_or(Anomaly::TunnelTruncated)?;
    if preamble != 0 {
        // A DTLS-protected data channel (type 1) or another version: nothing to read.
        return Ok(None);
    }
    let len = ((bits >> capwap::HLEN_SHIFT) & 0x1f) as usize * 4;
    let wbid = ((bits >> capwap::WBID_SHIFT) & 0x1f) as u8;
    let native = bits & capwap::T != 0;
    if len < capwap::FIXED_LEN {
        return Err(Anomaly::TunnelMalformed);
    }
    if b.len() < len {
        return Err(Anomaly::TunnelTruncated);
    }
    if bits & capwap::F != 0 {
        // A fragment: the frame is whole only once reassembled.
        return Ok(None);
    }
    let framing = match (native, wbid) {
        (false, _) => Framing::Ethertype(ethertype::TEB),
        (true, capwap::WBID_IEEE80211) => Framing::Ieee80211SwappedFc,
        (true, _) => return Ok(None),
    };
    Ok(Some((Tunnel::Capwap { wbid, native }, len, framing)))
}

mod gtpu {
    pub const FLAGS: usize = 0;
    pub const MSG_TYPE: usize = 1;
    pub const TEID: usize = 4;
    pub const FIXED_LEN: usize = 8;
    /// With any of the E, S, PN flags: sequence number, N-PDU number, next extension
    /// header type (its last byte).
    pub const NEXT_EXT: usize = 11;
    pub const OPTIONAL_LEN: usize = 12;
    /// Version 1 in the top 3 bits, and the protocol type bit (GTP rather than GTP').
    pub const VERSION: u8 = 1;
    pub const FLAG_PT: u8 = 0x10;
    pub const FLAGS_E_S_PN: u8 = 0x07;
    /// A G-PDU: a user packet follows.
    pub const G_PDU: u8 = 0xFF;
    /// How many extension headers are followed.
    pub const MAX_EXT: usize = 16;
}

fn gtpu(b: &[u8]) -> UdpTunnel {
    let flags = u8_at(b, gtpu::FLAGS).ok_or(Anomaly::TunnelTruncated)?;
    let msg_type = u8_at(b, gtpu::MSG_TYPE).ok_or(Anomaly::TunnelTruncated)?;
    let teid = be32(b, gtpu::TEID).ok_or(Anomaly::TunnelTruncated)?;
    if flags >> 5 != gtpu::VERSION || flags & gtpu::FLAG_PT == 0 {
        return Err(Anomaly::TunnelMalformed);
    }
    if msg_type != gtpu::G_PDU {
        // Signalling (echo, error indication, ...): not a tunnelled packet.
        return Ok(None);
    }
    let mut len = gtpu::FIXED_LEN;
    if flags & gtpu::FLAGS_E_S_PN != 0 {
        let mut next = u8_at(b, gtpu::NEXT_EXT).ok_or(Anomaly::TunnelTruncated)?;
        len = gtpu::OPTIONAL_LEN;
        let mut count = 0;
        // Each extension header: a length in 4-byte words, ..., the next type last.
        while next != 0 {
            let words = usize::from(u8_at(b, len).ok_or(Anomaly::TunnelTruncated)?);
            if words == 0 || count == gtpu::MAX_EXT {
                return Err(Anomaly::TunnelMalformed);
            }
            len += words * 4;
            next = u8_at(b, len - 1).ok_or(Anomaly::TunnelTruncated)?;
            count += 1;
        }
    }
    if b.len() < len {
        return Err(Anomaly::TunnelTruncated);
    }
    Ok(Some((
        Tunnel::GtpU { teid },
        len,
        Framing::Link(LinkType::RAW),
    )))
}
