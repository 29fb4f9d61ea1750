//! `packet.decoded`: the Rust decoder's accessors, as Python properties.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tracekit::decode::fields::{Field, write_field};
use tracekit::decode::{Decoded as RustDecoded, Framing, Layer3, Transport, Tunnel};

use crate::reader::Slot;

/// A packet's lazy decoder, with the accessors of the Rust `tracekit::decode::Decoded`.
///
/// Each property decodes only as far as it needs (from the packet's bytes, which the
/// decoder borrows: nothing is copied but `payload`). Absent layers give `None`.
/// Truncated or malformed headers never raise: they are listed in `anomalies`.
#[pyclass(module = "tracekit", frozen)]
pub struct Decoded {
    slot: Slot,
    /// Where this level starts in the packet's bytes, and how it is framed (a tunnel's
    /// payload is a later level).
    start: usize,
    framing: Framing,
    wire_len: u32,
    depth: u8,
}

impl Decoded {
    pub(crate) fn new(slot: Slot) -> Decoded {
        let meta = *slot.meta();
        Decoded {
            slot,
            start: 0,
            framing: Framing::Link(meta.link),
            wire_len: meta.wire_len,
            depth: 0,
        }
    }

    /// Runs `f` on the Rust decoder of this level.
    fn with<T>(&self, f: impl FnOnce(&RustDecoded<'_>) -> T) -> T {
        let data = self.slot.data().get(self.start..).unwrap_or_default();
        let d = RustDecoded::with_framing(data, self.framing, self.wire_len);
        f(&d)
    }
}

fn proto_name(t: &Transport<'_>) -> &'static str {
    match t {
        Transport::Tcp(_) => "tcp",
        Transport::Udp(_) => "udp",
        Transport::Icmp(_) => "icmp",
        Transport::Icmpv6(_) => "icmpv6",
        Transport::Sctp(_) => "sctp",
        Transport::Gre(_) => "gre",
        Transport::Truncated { .. } => "truncated",
        Transport::Other { .. } => "other",
    }
}

fn mac(m: [u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

#[pymethods]
impl Decoded {
    /// Ethernet source address (`"aa:bb:cc:dd:ee:ff"`), if the link is Ethernet.
    #[getter]
    fn eth_src(&self) -> Option<String> {
        self.with(|d| d.ethernet().map(|e| mac(e.src())))
    }

    /// Ethernet destination address, if the link is Ethernet.
    #[getter]
    fn eth_dst(&self) -> Option<String> {
        self.with(|d| d.ethernet().map(|e| mac(e.dst())))
    }

    /// The EtherType of the network layer, after VLAN tags and MPLS labels.
    #[getter]
    fn ethertype(&self) -> u16 {
        self.with(|d| d.ethertype())
    }

    /// VLAN ids of this level's tags, outermost first.
    #[getter]
    fn vlans(&self) -> Vec<u16> {
        self.with(|d| d.vlans().map(|v| v.id).collect())
    }

    /// MPLS labels, top of the stack first.
    #[getter]
    fn mpls_labels(&self) -> Vec<u32> {
        self.with(|d| d.mpls_labels().map(|l| l.label).collect())
    }

    /// `"ipv4"`, `"ipv6"`, `"arp"`, `"other"`, or `None` without a network layer.
    #[getter]
    fn layer3(&self) -> Option<&'static str> {
        self.with(|d| {
            d.layer3().map(|l| match l {
                Layer3::Ipv4(_) => "ipv4",
                Layer3::Ipv6(_) => "ipv6",
                Layer3::Arp(_) => "arp",
                _ => "other",
            })
        })
    }

    /// IP version (4 or 6) of this level's IP header.
    #[getter]
    fn ip_version(&self) -> Option<u8> {
        self.with(|d| d.ip_version())
    }

    /// IP source address as a string (`"10.0.0.1"`, `"2001:db8::1"`).
    #[getter]
    fn src_addr(&self) -> Option<String> {
        self.with(|d| d.src_addr().map(|a| a.to_string()))
    }

    /// IP destination address as a string.
    #[getter]
    fn dst_addr(&self) -> Option<String> {
        self.with(|d| d.dst_addr().map(|a| a.to_string()))
    }

    /// Transport protocol number (after IPv6 extension headers).
    #[getter]
    fn protocol(&self) -> Option<u8> {
        self.with(|d| d.ip_protocol())
    }

    /// IPv4 TTL or IPv6 hop limit.
    #[getter]
    fn ttl(&self) -> Option<u8> {
        self.with(|d| {
            d.ipv4()
                .map(|h| h.ttl())
                .or_else(|| d.ipv6().map(|h| h.hop_limit()))
        })
    }

    /// `(id, offset_in_bytes, more_fragments)` of an IPv4 or IPv6 fragment, else `None`.
    #[getter]
    fn fragment(&self) -> Option<(u32, u16, bool)> {
        self.with(|d| d.fragment().map(|f| (f.id, f.offset, f.more)))
    }

    /// `"tcp"`, `"udp"`, `"icmp"`, `"icmpv6"`, `"sctp"`, `"gre"`, `"truncated"` (the
    /// header was cut), `"other"`, or `None` (no IP, or a non-first fragment).
    #[getter]
    fn transport(&self) -> Option<&'static str> {
        self.with(|d| d.transport().map(|t| proto_name(&t)))
    }

    /// Source port (TCP, UDP, SCTP).
    #[getter]
    fn src_port(&self) -> Option<u16> {
        self.with(|d| d.src_port())
    }

    /// Destination port (TCP, UDP, SCTP).
    #[getter]
    fn dst_port(&self) -> Option<u16> {
        self.with(|d| d.dst_port())
    }

    /// TCP flags (FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10, URG 0x20, ECE 0x40,
    /// CWR 0x80, AE 0x100).
    #[getter]
    fn tcp_flags(&self) -> Option<u16> {
        self.with(|d| d.tcp().map(|t| t.flags()))
    }

    /// TCP sequence number (absolute).
    #[getter]
    fn tcp_seq(&self) -> Option<u32> {
        self.with(|d| d.tcp().map(|t| t.seq_number()))
    }

    /// TCP acknowledgement number (absolute).
    #[getter]
    fn tcp_ack(&self) -> Option<u32> {
        self.with(|d| d.tcp().map(|t| t.ack_number()))
    }

    /// TCP window field (unscaled).
    #[getter]
    fn tcp_window(&self) -> Option<u16> {
        self.with(|d| d.tcp().map(|t| t.window()))
    }

    /// ICMP or ICMPv6 `(type, code)`.
    #[getter]
    fn icmp(&self) -> Option<(u8, u8)> {
        self.with(|d| {
            d.icmp()
                .map(|h| (h.icmp_type(), h.code()))
                .or_else(|| d.icmpv6().map(|h| (h.icmp_type(), h.code())))
        })
    }

    /// The application bytes after the transport header (a copy: `bytes`). For no copy,
    /// slice `packet.data[payload_offset:]`.
    #[getter]
    fn payload<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.with(|d| d.payload().map(|p| PyBytes::new(py, p)))
    }

    /// Where the payload starts in `packet.data`.
    #[getter]
    fn payload_offset(&self) -> Option<usize> {
        let base = self.slot.data().as_ptr() as usize;
        self.with(|d| d.payload().map(|p| p.as_ptr() as usize - base))
    }

    /// The payload's length on the wire (from the IP length; more than the captured
    /// payload when the capture was cut).
    #[getter]
    fn payload_wire_len(&self) -> Option<u32> {
        self.with(|d| d.payload_wire_len())
    }

    /// A hash of the 5-tuple equal for both directions (IP packets only).
    #[getter]
    fn flow_hash(&self) -> Option<u64> {
        self.with(|d| d.symmetric_flow_hash())
    }

    /// DNS question names of this level's DNS message (UDP or TCP port 53, 5353, 5355).
    #[getter]
    fn dns_names(&self) -> Option<Vec<String>> {
        self.with(|d| {
            d.dns()
                .map(|m| m.questions().map(|q| q.name.to_string()).collect())
        })
    }

    /// DNS `(id, is_response, rcode)`.
    #[getter]
    fn dns(&self) -> Option<(u16, bool, u8)> {
        self.with(|d| d.dns().map(|m| (m.id(), m.is_response(), m.rcode())))
    }

    /// Names of the decoder anomalies (truncated or malformed headers) met so far in this
    /// packet, after decoding every layer.
    #[getter]
    fn anomalies(&self) -> Vec<&'static str> {
        self.with(|d| {
            // Decode every layer so that the list is complete.
            let _ = (d.transport(), d.payload(), d.tunnel(), d.dns());
            d.anomalies().iter().map(|a| a.name()).collect()
        })
    }

    /// The tunnel this level carries: `"ip-in-ip"`, `"gre"`, `"vxlan"`, `"geneve"`,
    /// `"gtp-u"`, `"capwap"`, `"capwap-control"`, `"capwap-dtls"`, `"lwapp"` (`"other"`
    /// for kinds newer than this module), or `None`.
    #[getter]
    fn tunnel(&self) -> Option<&'static str> {
        self.with(|d| {
            d.tunnel().map(|t| match t {
                Tunnel::IpInIp { .. } => "ip-in-ip",
                Tunnel::Gre(_) => "gre",
                Tunnel::Vxlan { .. } => "vxlan",
                Tunnel::Geneve { .. } => "geneve",
                Tunnel::GtpU { .. } => "gtp-u",
                Tunnel::Capwap { .. } => "capwap",
                Tunnel::CapwapControl { .. } => "capwap-control",
                Tunnel::CapwapDtls { .. } => "capwap-dtls",
                Tunnel::Lwapp { .. } => "lwapp",
                _ => "other",
            })
        })
    }

    /// The decoder of the tunnelled packet, if this level carries a tunnel.
    #[getter]
    fn inner(&self) -> Option<Decoded> {
        if self.depth >= tracekit::decode::DEFAULT_MAX_DEPTH {
            return None;
        }
        let base = self.slot.data().as_ptr() as usize;
        self.with(|d| {
            d.inner().map(|i| Decoded {
                slot: self.slot.clone(),
                start: i.data().as_ptr() as usize - base,
                framing: i.framing(),
                wire_len: self.wire_len,
                depth: self.depth + 1,
            })
        })
    }

    /// A field by its `tracekit fields` name (`"ip.src"`, `"dns.qry.name"`, ...), as that
    /// command prints it (tshark's format; first occurrence across tunnels), or `None`
    /// when the packet has no such field. Raises `ValueError` for an unknown name.
    fn field(&self, name: &str) -> PyResult<Option<String>> {
        let field: Field = name
            .parse()
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("{e}")))?;
        let meta = *self.slot.meta();
        let data = self.slot.data().get(self.start..).unwrap_or_default();
        let packet = tracekit::Packet::new(data, meta);
        let number = self.slot.number();
        let mut out = String::new();
        self.with(|d| write_field(&mut out, field, number, &packet, d));
        Ok((!out.is_empty()).then_some(out))
    }

    fn __repr__(&self) -> String {
        self.with(|d| {
            format!(
                "<tracekit.Decoded {} {:?} -> {:?} proto {:?}>",
                d.layer3().map_or("-", |l| match l {
                    Layer3::Ipv4(_) => "ipv4",
                    Layer3::Ipv6(_) => "ipv6",
                    Layer3::Arp(_) => "arp",
                    _ => "other",
                }),
                d.src_addr(),
                d.dst_addr(),
                d.ip_protocol()
            )
        })
    }
}
