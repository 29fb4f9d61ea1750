//! Flow keys and a direction-independent flow hash.

use std::net::IpAddr;

use crate::Decoded;

/// The 5-tuple of a packet. Ports are 0 for protocols without them; packets whose ports
/// are unknown (non-first fragments, cut TCP/UDP/SCTP headers) have no key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Transport protocol number (after IPv6 extension headers).
    pub protocol: u8,
}

impl FlowKey {
    /// The key of a decoded packet, if it is IP (see [`Decoded::flow_key`]).
    pub(crate) fn of(d: &Decoded<'_>) -> Option<FlowKey> {
        let protocol = d.ip_protocol()?;
        let (src_port, dst_port) = match (d.src_port(), d.dst_port()) {
            (Some(s), Some(p)) => (s, p),
            _ if d.no_transport().is_some() => return None,
            _ if matches!(
                protocol,
                crate::ip_proto::TCP | crate::ip_proto::UDP | crate::ip_proto::SCTP
            ) =>
            {
                return None;
            }
            _ => (0, 0),
        };
        Some(FlowKey {
            src: d.src_addr()?,
            dst: d.dst_addr()?,
            src_port,
            dst_port,
            protocol,
        })
    }

    /// The key seen from the other direction.
    pub fn reversed(&self) -> FlowKey {
        FlowKey {
            src: self.dst,
            dst: self.src,
            src_port: self.dst_port,
            dst_port: self.src_port,
            protocol: self.protocol,
        }
    }

    /// A 64-bit hash equal for both directions of a flow (the endpoints are ordered
    /// before hashing). Stable across runs and platforms.
    pub fn symmetric_hash(&self) -> u64 {
        let a = (addr_bits(self.src), self.src_port);
        let b = (addr_bits(self.dst), self.dst_port);
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let mut h = u64::from(self.protocol) ^ 0x9E37_79B9_7F4A_7C15;
        for v in [
            lo.0 as u64,
            (lo.0 >> 64) as u64,
            hi.0 as u64,
            (hi.0 >> 64) as u64,
            (u64::from(lo.1) << 16) | u64::from(hi.1),
        ] {
            h = mix(h ^ v);
        }
        h
    }
}

/// A 64-bit hash of two addresses and a protocol, equal for both orders of the
/// addresses: every packet between two hosts on one protocol, each fragment of a
/// datagram included (ports or not), has the same one. Addresses as numbers, IPv4 in
/// the low 32 bits ([`u128::from`] of `Ipv4Addr`'s `u32`, of `Ipv6Addr`). Stable across
/// runs and platforms.
///
/// One mixing round: a parallel run's reader hashes every packet, so this is kept to
/// about 20 instructions. Each address is folded to 64 bits (an IPv4 address stays as
/// it is), the pair packed (two IPv4 addresses exactly), the protocol spread over it.
#[inline]
pub fn address_pair_hash(a: u128, b: u128, protocol: u8) -> u64 {
    let fold = |x: u128| (x as u64) ^ ((x >> 64) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let (lo, hi) = (a.min(b), a.max(b));
    mix(fold(lo)
        ^ fold(hi).rotate_left(32)
        ^ u64::from(protocol).wrapping_mul(0xD6E8_FEB8_6659_FD93))
}

fn addr_bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// splitmix64's finaliser.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
