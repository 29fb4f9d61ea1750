//! Tunnels: which encapsulation a packet's transport layer carries (IP-in-IP, GRE, and
//! VXLAN, Geneve, GTP-U, CAPWAP and LWAPP over UDP) and where the encapsulated packet
//! starts. Some (CAPWAP and LWAPP control messages, DTLS-protected CAPWAP, non-first
//! CAPWAP fragments) are recognised but carry no packet to decode.

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
    /// CAPWAP control channel (IANA 5246).
    pub capwap_control: u16,
    /// LWAPP (Cisco's pre-CAPWAP tunnel; 12222 and 12223, as Wireshark registers them).
    pub lwapp: [u16; 2],
}

impl TunnelPorts {
    /// Whether the decoder looks for a tunnel in a UDP datagram between these ports.
    #[inline]
    pub fn carries(&self, src: u16, dst: u16) -> bool {
        let [a, b] = self.lwapp;
        [
            self.vxlan,
            self.geneve,
            self.gtpu,
            self.capwap_data,
            self.capwap_control,
            a,
            b,
        ]
        .into_iter()
        .any(|p| p != 0 && (src == p || dst == p))
    }
}

impl Default for TunnelPorts {
    fn default() -> TunnelPorts {
        TunnelPorts {
            vxlan: 4789,
            geneve: 6081,
            gtpu: 2152,
            capwap_data: 5247,
            capwap_control: 5246,
            lwapp: [12222, 12223],
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
        /// Set when the packet carries one fragment of the frame (the F bit). The
        /// decoder does not reassemble: the first fragment's frame is decoded as far as
        /// its bytes go (with [`crate::Anomaly::TunnelFragment`]), later fragments not
        /// at all.
        fragment: Option<TunnelFragment>,
    },
    /// A CAPWAP control channel message (UDP 5246): no packet inside.
    CapwapControl {
        /// The message type: the IANA enterprise number in the top 24 bits (0 for
        /// RFC 5415's own), the enterprise's type in the low 8, as tshark's
        /// `capwap.control.header.message_type` shows it.
        message_type: u32,
        /// The sequence number.
        sequence: u8,
    },
    /// A DTLS-protected CAPWAP channel (preamble type 1): nothing readable inside.
    CapwapDtls {
        /// Whether it is the control channel (UDP 5246) rather than the data channel.
        control: bool,
    },
    /// LWAPP, Cisco's pre-CAPWAP tunnel (UDP 12222 and 12223): 802.11 frames, or a
    /// control message (no packet inside).
    Lwapp {
        /// The control message type, for control messages (the C bit).
        control_type: Option<u8>,
    },
}

/// Where a tunnel fragment sits in the frame it is part of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TunnelFragment {
    /// The fragment id, common to the fragments of one frame.
    pub id: u16,
    /// The offset of this fragment's bytes in the frame, in bytes.
    pub offset: u32,
    /// Whether this is the last fragment (the L bit).
    pub last: bool,
}

/// A tunnel found in a packet.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found<'a> {
    pub tunnel: Tunnel<'a>,
    /// The offset of the encapsulated packet in the captured bytes and how it is
    /// framed; `None` when the tunnel carries none (control messages, DTLS, non-first
    /// fragments).
    pub inner: Option<(usize, Framing)>,
    /// The encapsulated packet is the first fragment of a frame (its length on the wire
    /// is unknown).
    pub first_fragment: bool,
}

impl<'a> Found<'a> {
    fn new(tunnel: Tunnel<'a>, at: usize, framing: Framing) -> Found<'a> {
        Found {
            tunnel,
            inner: Some((at, framing)),
            first_fragment: false,
        }
    }

    fn empty(tunnel: Tunnel<'a>) -> Found<'a> {
        Found {
            tunnel,
            inner: None,
            first_fragment: false,
        }
    }

    /// The same, `len` bytes further into the packet.
    fn after(mut self, len: usize) -> Found<'a> {
        if let Some((at, _)) = &mut self.inner {
            *at += len;
        }
        self
    }
}

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
        ip_proto::IPIP | ip_proto::IPV6 => Some(Found::new(
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
            Some(Found::new(Tunnel::Gre(h), l4 + h.header_len(), framing))
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
                capwap(body, false)
            } else if on(ports.capwap_control) {
                capwap(body, true)
            } else if on(ports.lwapp[0]) || on(ports.lwapp[1]) {
                // Wireshark reads an AP identity first in datagrams to the second port.
                lwapp(body, dp == ports.lwapp[1])
            } else {
                return None;
            };
            let found = an.noted(found)??;
            if found.first_fragment {
                an.insert(Anomaly::TunnelFragment);
            }
            Some(found.after(l4 + UdpHeader::LEN))
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
    Ok(Some(Found::new(
        t,
        vxlan::LEN,
        Framing::Ethertype(ethertype::TEB),
    )))
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
    Ok(Some(Found::new(t, len, Framing::Ethertype(protocol))))
}

/// Aruba's 802.11-in-GRE protocol types.
mod aruba {
    pub const FIRST: u16 = 0x8200;
    pub const LAST: u16 = 0x8370;
    pub const STEP: u16 = 0x10;
}

/// The CAPWAP header (RFC 5415 §4.3).
mod capwap {
    /// Preamble: version (4 bits, 0) and type (4 bits, 0: a CAPWAP header follows; 1: a
    /// DTLS record follows).
    pub const PREAMBLE: usize = 0;
    pub const PREAMBLE_DTLS: u8 = 1;
    /// HLEN (5 bits), RID (5), WBID (5), T, F, L, W, M, K, flags (3).
    pub const BITS: usize = 0;
    /// Fragment id (16 bits), fragment offset (13 bits, in 8-byte units), reserved (3).
    pub const FRAGMENT: usize = 4;
    pub const FIXED_LEN: usize = 8;
    pub const HLEN_SHIFT: u32 = 19;
    pub const WBID_SHIFT: u32 = 9;
    pub const T: u32 = 1 << 8;
    pub const F: u32 = 1 << 7;
    pub const L: u32 = 1 << 6;
    pub const FRAGMENT_OFFSET_SHIFT: u32 = 3;
    pub const FRAGMENT_UNIT: u32 = 8;
    /// Wireless binding 1: IEEE 802.11.
    pub const WBID_IEEE80211: u8 = 1;
    /// The control header after the CAPWAP header: message type (4 bytes), sequence
    /// number, message element length (2), flags.
    pub const CONTROL_MESSAGE_TYPE: usize = 0;
    pub const CONTROL_SEQUENCE: usize = 4;
    pub const CONTROL_LEN: usize = 8;
}

fn capwap(b: &[u8], control: bool) -> UdpTunnel {
    let preamble = u8_at(b, capwap::PREAMBLE).ok_or(Anomaly::TunnelTruncated)?;
    if preamble == capwap::PREAMBLE_DTLS {
        return Ok(Some(Found::empty(Tunnel::CapwapDtls { control })));
    }
    if preamble != 0 {
        // Another version or type: nothing to read.
        return Ok(None);
    }
    let bits = be32(b, capwap::BITS).ok_or(Anomaly::TunnelTruncated)?;
    let frag = be32(b, capwap::FRAGMENT).ok_or(Anomaly::TunnelTruncated)?;
    let len = ((bits >> capwap::HLEN_SHIFT) & 0x1f) as usize * 4;
    let wbid = ((bits >> capwap::WBID_SHIFT) & 0x1f) as u8;
    let native = bits & capwap::T != 0;
    if len < capwap::FIXED_LEN {
        return Err(Anomaly::TunnelMalformed);
    }
    if b.len() < len {
        return Err(Anomaly::TunnelTruncated);
    }
    if control {
        let (Some(message_type), Some(sequence)) = (
            be32(b, len + capwap::CONTROL_MESSAGE_TYPE),
            u8_at(b, len + capwap::CONTROL_SEQUENCE),
        ) else {
            return Err(Anomaly::TunnelTruncated);
        };
        if b.len() < len + capwap::CONTROL_LEN {
            return Err(Anomaly::TunnelTruncated);
        }
        return Ok(Some(Found::empty(Tunnel::CapwapControl {
            message_type,
            sequence,
        })));
    }
    let fragment = (bits & capwap::F != 0).then_some(TunnelFragment {
        id: (frag >> 16) as u16,
        offset: ((frag & 0xffff) >> capwap::FRAGMENT_OFFSET_SHIFT) * capwap::FRAGMENT_UNIT,
        last: bits & capwap::L != 0,
    });
    let t = Tunnel::Capwap {
        wbid,
        native,
        fragment,
    };
    if fragment.is_some_and(|f| f.offset != 0) {
        // A later fragment: its bytes continue a frame that starts in another packet.
        return Ok(Some(Found::empty(t)));
    }
    let framing = match (native, wbid) {
        (false, _) => Framing::Ethertype(ethertype::TEB),
        (true, capwap::WBID_IEEE80211) => Framing::Ieee80211SwappedFc,
        (true, _) => return Ok(None),
    };
    let mut found = Found::new(t, len, framing);
    found.first_fragment = fragment.is_some();
    Ok(Some(found))
}

/// The LWAPP header (draft-ohara-capwap-lwapp): flags, fragment id, length, RSSI, SNR;
/// in datagrams to the control port, the access point's MAC address first.
mod lwapp {
    pub const AP_IDENTITY_LEN: usize = 6;
    /// Version (2 bits), radio slot (3), C (control message), F (fragment), FT.
    pub const FLAGS: usize = 0;
    pub const FLAG_C: u8 = 0x04;
    pub const LEN: usize = 6;
    /// The control header: message type, sequence number, length (2), session id (4).
    pub const CONTROL_TYPE: usize = 0;
}

fn lwapp(b: &[u8], ap_identity: bool) -> UdpTunnel {
    let at = if ap_identity {
        lwapp::AP_IDENTITY_LEN
    } else {
        0
    };
    let flags = u8_at(b, at + lwapp::FLAGS).ok_or(Anomaly::TunnelTruncated)?;
    let body = at + lwapp::LEN;
    if b.len() < body {
        return Err(Anomaly::TunnelTruncated);
    }
    if flags & lwapp::FLAG_C != 0 {
        let control_type = u8_at(b, body + lwapp::CONTROL_TYPE).ok_or(Anomaly::TunnelTruncated)?;
        return Ok(Some(Found::empty(Tunnel::Lwapp {
            control_type: Some(control_type),
        })));
    }
    // 802.11 with its frame control in the usual order: Wireshark's `lwapp.swap_fc`
    // is off by default (unlike CAPWAP's).
    let t = Tunnel::Lwapp { control_type: None };
    Ok(Some(Found::new(
        t,
        body,
        Framing::Link(LinkType::IEEE802_11),
    )))
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
    Ok(Some(Found::new(
        Tunnel::GtpU { teid },
        len,
        Framing::Link(LinkType::RAW),
    )))
}
