//! Bidirectional flow keys: a fixed-size value (no allocation, cheap to hash) that is the
//! same for both directions of a conversation.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use tracekit_decode::{Decoded, IpView, ipv6_ext};

/// Which fields beyond the 5-tuple tell flows apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyOptions {
    /// Flows on different VLANs (the outermost 802.1Q/802.1ad id) are different flows.
    pub vlan: bool,
    /// Flows at different tunnel depths (outer packet 0, first inner packet 1, ...) are
    /// different flows. Without it an inner flow and an outer flow with the same
    /// 5-tuple are counted together.
    pub tunnel_level: bool,
}

/// One end of a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint {
    /// IP address.
    pub addr: IpAddr,
    /// Port (0 for protocols without ports and for non-first fragments).
    pub port: u16,
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.addr {
            IpAddr::V4(a) => write!(f, "{a}:{}", self.port),
            IpAddr::V6(a) => write!(f, "[{a}]:{}", self.port),
        }
    }
}

/// The name flow records give IP protocol `p` (`tcp`, `udp`, `icmp`, `icmpv6`, `sctp`),
/// or `None` for a protocol they show by number.
pub fn protocol_name(p: u8) -> Option<&'static str> {
    Some(match p {
        6 => "tcp",
        17 => "udp",
        1 => "icmp",
        58 => "icmpv6",
        132 => "sctp",
        _ => return None,
    })
}

/// The direction-independent key of a flow. The two endpoints are stored in a fixed
/// order (the smaller address and port first), so both directions of a conversation
/// give the same key; [`Side`] says which endpoint sent a given packet. Addresses are
/// numbers (IPv4 in the low 32 bits), so the key hashes in a few words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowKey {
    addr: [u128; 2],
    port: [u16; 2],
    protocol: u8,
    version: u8,
    level: u8,
    vlan: u16,
}

impl std::hash::Hash for FlowKey {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write_u128(self.addr[0]);
        h.write_u128(self.addr[1]);
        h.write_u64(
            u64::from(self.port[0]) << 48
                | u64::from(self.port[1]) << 32
                | u64::from(self.vlan) << 16
                | u64::from(self.protocol) << 8
                | u64::from(self.level),
        );
    }
}

/// Which endpoint of a [`FlowKey`] a packet came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The first endpoint of the key ([`FlowKey::endpoint`]`(0)`).
    A,
    /// The second endpoint.
    B,
}

impl Side {
    /// 0 for [`Side::A`], 1 for [`Side::B`].
    pub fn index(self) -> usize {
        match self {
            Side::A => 0,
            Side::B => 1,
        }
    }

    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }
}

/// No VLAN in the key.
const NO_VLAN: u16 = u16::MAX;

impl FlowKey {
    /// The key of a decoded IP packet at tunnel `level`, and which side sent it; `None`
    /// when the packet is not IP (or its IP header was not captured).
    #[inline]
    pub fn of(d: &Decoded<'_>, options: KeyOptions, level: u8) -> Option<(FlowKey, Side)> {
        FlowKey::of_view(&d.ip_view()?, d, options, level)
    }

    /// As [`of`](Self::of), from the packet's [`IpView`] (one look-up of the walk for
    /// the table's further questions too).
    ///
    /// Always inlined: called, it returned the key through memory written in pieces,
    /// which the caller's first whole load of it then waited for.
    #[inline(always)]
    pub fn of_view(
        v: &IpView<'_, '_>,
        d: &Decoded<'_>,
        options: KeyOptions,
        level: u8,
    ) -> Option<(FlowKey, Side)> {
        let version = v.version();
        let (src, mut dst) = v.addr_bits()?;
        if version == 6
            && let Some(last) = final_destination(d)
        {
            dst = u128::from_be_bytes(last);
        }
        let (sp, dp) = v.ports().unwrap_or((0, 0));
        let vlan = if options.vlan {
            d.vlans().next().map_or(NO_VLAN, |v| v.id)
        } else {
            NO_VLAN
        };
        let level = if options.tunnel_level { level } else { 0 };
        Some(FlowKey::from_parts(
            (src, sp),
            (dst, dp),
            v.protocol(),
            version,
            level,
            vlan,
        ))
    }

    /// A key from raw parts (addresses as 16 bytes; IPv4 in the first four with
    /// `version` 4).
    #[inline(always)]
    fn from_parts(
        src: (u128, u16),
        dst: (u128, u16),
        protocol: u8,
        version: u8,
        level: u8,
        vlan: u16,
    ) -> (FlowKey, Side) {
        let (a, b, side) = if src <= dst {
            (src, dst, Side::A)
        } else {
            (dst, src, Side::B)
        };
        (
            FlowKey {
                addr: [a.0, b.0],
                port: [a.1, b.1],
                protocol,
                version,
                level,
                vlan,
            },
            side,
        )
    }

    /// The key of the flow from `src` to `dst` (both IPv4 or both IPv6; `None` when the
    /// families differ), without VLAN or tunnel level.
    pub fn new(src: Endpoint, dst: Endpoint, protocol: u8) -> Option<(FlowKey, Side)> {
        let (s, d, version) = match (src.addr, dst.addr) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                (u128::from(u32::from(s)), u128::from(u32::from(d)), 4)
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => (u128::from(s), u128::from(d), 6),
            _ => return None,
        };
        Some(FlowKey::from_parts(
            (s, src.port),
            (d, dst.port),
            protocol,
            version,
            0,
            NO_VLAN,
        ))
    }

    /// Endpoint 0 ([`Side::A`]) or 1 ([`Side::B`]).
    pub fn endpoint(&self, side: Side) -> Endpoint {
        let i = side.index();
        let addr = if self.version == 4 {
            IpAddr::V4(Ipv4Addr::from(self.addr[i] as u32))
        } else {
            IpAddr::V6(Ipv6Addr::from(self.addr[i]))
        };
        Endpoint {
            addr,
            port: self.port[i],
        }
    }

    /// The IP protocol number.
    pub fn protocol(&self) -> u8 {
        self.protocol
    }

    /// The IP version (4 or 6).
    pub fn ip_version(&self) -> u8 {
        self.version
    }

    /// The tunnel level, when the key includes it (0 otherwise).
    pub fn tunnel_level(&self) -> u8 {
        self.level
    }

    /// The outermost VLAN id, when the key includes VLANs and the packet had one.
    pub fn vlan(&self) -> Option<u16> {
        (self.vlan != NO_VLAN).then_some(self.vlan)
    }
}

/// The final destination of an IPv6 packet with a type 0 routing header that has
/// segments left (its last address), as the transport checksum's pseudo-header (RFC
/// 8200, 8.1) and tshark's conversations use it.
fn final_destination(d: &Decoded<'_>) -> Option<[u8; 16]> {
    let ip = d.ipv6()?;
    if !matches!(ip.next_header(), 0 | 43 | 60) {
        return None;
    }
    let routing = ip.extensions().find(|e| e.kind == ipv6_ext::ROUTING)?;
    // Routing type, segments left, 4 reserved bytes, then the addresses.
    let (kind, left) = (*routing.bytes.get(2)?, *routing.bytes.get(3)?);
    let addresses = routing.bytes.get(8..)?;
    if kind != 0 || left == 0 || addresses.len() < 16 {
        return None;
    }
    addresses
        .get(addresses.len() / 16 * 16 - 16..)?
        .get(..16)?
        .try_into()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_directions_give_one_key() {
        let a = Endpoint {
            addr: "10.0.0.2".parse().unwrap(),
            port: 80,
        };
        let b = Endpoint {
            addr: "10.0.0.1".parse().unwrap(),
            port: 40000,
        };
        let (k1, s1) = FlowKey::new(a, b, 6).unwrap();
        let (k2, s2) = FlowKey::new(b, a, 6).unwrap();
        assert_eq!(k1, k2);
        assert_eq!(s1, s2.other());
        assert_eq!(k1.endpoint(s2), b);
        assert_eq!(k1.endpoint(s1), a);
        assert!(
            FlowKey::new(
                a,
                Endpoint {
                    addr: "::1".parse().unwrap(),
                    port: 1
                },
                6
            )
            .is_none()
        );
    }
}
