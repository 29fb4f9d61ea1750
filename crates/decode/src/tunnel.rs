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
}

impl Default for TunnelPorts {
    fn default() -> TunnelPorts {
        TunnelPorts {
            vxlan: 4789,
            geneve: 6081,
            gtpu: 2152,
        }
    }
}

/// An encapsulation found in the packet; [`crate::Decoded::inner`] decodes its payload.
#[derive(Clone, Copy, Debug)]
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
            let framing = Framing::Ethertype(h.protocol());
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
