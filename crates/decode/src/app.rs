//! The application-layer accessors of [`Decoded`]: each hands out a view of the payload
//! when the transport layer leads to that protocol (by port, or by content where tshark
//! also guesses), from the module that names its byte ranges.

use crate::{Anomaly, Decoded, dhcp, dns, gtp, http, ip_proto, ntp, quic};

impl<'a> Decoded<'a> {
    /// What is wrong with the DNS message this packet carries, if it carries one.
    pub(crate) fn dns_damage(&self) -> Option<Anomaly> {
        let (proto, sp, dp) = self.proto_ports()?;
        dns::damage_in_transport(proto, sp, dp, || {
            let payload = self.payload()?;
            let cut = self
                .payload_wire_len()
                .is_some_and(|len| len as usize > payload.len());
            Some((payload, cut))
        })
    }

    /// The DNS message, for UDP port 53 (and mDNS 5353, LLMNR 5355) on either side and
    /// TCP port 53 segments that start a message.
    pub fn dns(&self) -> Option<dns::Message<'a>> {
        let (proto, sp, dp) = self.proto_ports()?;
        dns::in_transport(proto, sp, dp, || self.payload())
    }

    /// The HTTP/1.x head that starts a TCP payload (any port: recognised by its start
    /// line) or an SSDP datagram: see [`http`].
    pub fn http(&self) -> Option<http::Head<'a>> {
        let (proto, sp, dp) = self.proto_ports()?;
        http::in_transport(proto, sp, dp, self.payload()?)
    }

    /// The NTP header of a UDP datagram to or from port 123 (see [`ntp`]).
    pub fn ntp(&self) -> Option<ntp::NtpHeader<'a>> {
        let (proto, sp, dp) = self.proto_ports()?;
        ntp::in_transport(proto, sp, dp, || self.payload())
    }

    /// The DHCP/BOOTP message of a UDP datagram on ports 67, 68 or 4011 (see [`dhcp`]).
    pub fn dhcp(&self) -> Option<dhcp::DhcpMessage<'a>> {
        let (proto, sp, dp) = self.proto_ports()?;
        dhcp::in_transport(proto, sp, dp, || self.payload())
    }

    /// The QUIC long-header packets a UDP datagram starts with (any port: recognised by
    /// the header form and a known version, as tshark's QUIC heuristic does; see
    /// [`quic`]). `None` when the first is not one.
    pub fn quic(&self) -> Option<quic::LongHeaders<'a>> {
        if self.net().proto != ip_proto::UDP {
            return None;
        }
        self.udp()?;
        let headers = quic::long_headers(self.payload()?);
        headers.clone().next()?;
        Some(headers)
    }

    /// The GTPv1 header of a UDP datagram on ports 2123 or 2152 (see [`gtp`]).
    pub fn gtp(&self) -> Option<gtp::GtpHeader<'a>> {
        let (proto, sp, dp) = self.proto_ports()?;
        gtp::in_transport(proto, sp, dp, || self.payload())
    }
}
