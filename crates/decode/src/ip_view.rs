//! [`IpView`]: an IP packet's layers located once, for code that asks several
//! questions of every packet.
//!
//! Each [`Decoded`] accessor looks up the memoized network walk again (a copy out of its
//! cell and a few checks). A flow table asks for the addresses, the protocol, the ports,
//! the TCP header, the fragment and the payload length of every packet: through
//! [`Decoded::ip_view`] it pays for the look-up once. The answers are the same as the
//! `Decoded` accessors of the same names give, and anomalies found on the way are kept
//! in the `Decoded` as they are there.

use crate::Decoded;
use crate::bytes::be16;
use crate::net::{Fragment, L4State, NetInfo};
use crate::tcp::TcpHeader;
use crate::transport;

/// The IP layer of a [`Decoded`] packet and what follows it, looked up once
/// ([`Decoded::ip_view`]): for code that asks several questions of every packet, such as
/// a flow table. Its answers are those of the `Decoded` accessors of the same names, and
/// anomalies found on the way are kept in the `Decoded` as they are there.
///
/// ```
/// use tracekit_core::LinkType;
/// use tracekit_decode::Decoded;
///
/// // IPv4 + UDP 10.0.0.1:53 -> 10.0.0.2:4000 with 4 data bytes.
/// let ip = [
///     0x45, 0, 0, 32, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
///     0, 53, 0x0f, 0xa0, 0, 12, 0, 0, 1, 2, 3, 4,
/// ];
/// let d = Decoded::from_bytes(&ip, LinkType::RAW, 32);
/// let v = d.ip_view().unwrap();
/// assert_eq!(v.version(), 4);
/// assert_eq!(v.addr_bits(), Some((0x0a00_0001, 0x0a00_0002)));
/// assert_eq!((v.protocol(), v.ports()), (17, Some((53, 4000))));
/// assert_eq!(v.payload_wire_len(), Some(4));
/// assert_eq!(v.payload(), Some(&[1u8, 2, 3, 4][..]));
/// assert!(v.tcp().is_none() && v.fragment().is_none());
/// assert_eq!(v.payload_with_wire_len(), (Some(4), Some(&[1u8, 2, 3, 4][..])));
/// ```
#[derive(Clone, Copy)]
pub struct IpView<'d, 'a> {
    d: &'d Decoded<'a>,
    n: NetInfo,
}

impl std::fmt::Debug for IpView<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpView")
            .field("version", &self.n.version)
            .field("protocol", &self.n.proto)
            .field("ports", &self.ports())
            .finish()
    }
}

impl<'a> Decoded<'a> {
    /// The IP layer, walked (once, as every accessor does) and held for the questions
    /// that follow; `None` when the packet is not IP or its IP header was not captured.
    #[inline]
    pub fn ip_view(&self) -> Option<IpView<'_, 'a>> {
        let n = self.net();
        (n.version != 0).then_some(IpView { d: self, n })
    }
}

impl<'a> IpView<'_, 'a> {
    /// 4 or 6.
    #[inline]
    pub fn version(&self) -> u8 {
        self.n.version
    }

    /// Source and destination address as numbers (IPv4 in the low 32 bits), as
    /// [`Decoded::src_addr`] and [`Decoded::dst_addr`] give them.
    #[inline]
    pub fn addr_bits(&self) -> Option<(u128, u128)> {
        let ip = self.d.data.get(self.n.ip_off as usize..)?;
        if self.n.version == 4 {
            let a: [u8; 8] = ip.get(12..20)?.try_into().ok()?;
            let v = u64::from_be_bytes(a);
            Some((u128::from((v >> 32) as u32), u128::from(v as u32)))
        } else {
            let a: [u8; 32] = ip.get(8..40)?.try_into().ok()?;
            let (s, d) = a.split_at(16);
            Some((
                u128::from_be_bytes(s.try_into().ok()?),
                u128::from_be_bytes(d.try_into().ok()?),
            ))
        }
    }

    /// The transport protocol number (after IPv6 extension headers), as
    /// [`Decoded::ip_protocol`] gives it.
    #[inline]
    pub fn protocol(&self) -> u8 {
        self.n.proto
    }

    /// As [`Decoded::fragment`].
    #[inline]
    pub fn fragment(&self) -> Option<Fragment> {
        self.n.frag
    }

    #[inline]
    fn l4(&self) -> Option<&'a [u8]> {
        if self.n.l4 != L4State::Present {
            return None;
        }
        self.d
            .data
            .get(self.n.l4_off as usize..self.n.avail_end as usize)
    }

    /// Source and destination port of TCP, UDP and SCTP when their header was captured,
    /// as [`Decoded::src_port`] and [`Decoded::dst_port`] give them.
    #[inline]
    pub fn ports(&self) -> Option<(u16, u16)> {
        let b = self.l4()?;
        transport::port(&self.n, b, transport::SRC_PORT)?;
        Some((be16(b, transport::SRC_PORT)?, be16(b, transport::DST_PORT)?))
    }

    /// As [`Decoded::tcp`].
    #[inline]
    pub fn tcp(&self) -> Option<TcpHeader<'a>> {
        if self.n.proto != transport::ip_proto::TCP {
            return None;
        }
        let b = self.l4()?;
        self.d.noting(|an| transport::tcp(&self.n, b, an))
    }

    fn payload_range(&self) -> Option<(usize, usize)> {
        let b = self.l4()?;
        self.d.noting(|an| transport::payload_range(&self.n, b, an))
    }

    /// As [`Decoded::payload`].
    #[inline]
    pub fn payload(&self) -> Option<&'a [u8]> {
        let (s, e) = self.payload_range()?;
        self.d.data.get(s..e)
    }

    /// As [`Decoded::payload_wire_len`].
    #[inline]
    pub fn payload_wire_len(&self) -> Option<u32> {
        let b = self.l4()?;
        transport::payload_wire_len(&self.n, b, || self.payload_range())
    }

    /// [`payload_wire_len`](Self::payload_wire_len) and [`payload`](Self::payload)
    /// together, the transport header read once for both.
    #[inline]
    pub fn payload_with_wire_len(&self) -> (Option<u32>, Option<&'a [u8]>) {
        let Some(b) = self.l4() else {
            return (None, None);
        };
        let range = self.payload_range();
        let wire = transport::payload_wire_len(&self.n, b, || range);
        (wire, range.and_then(|(s, e)| self.d.data.get(s..e)))
    }
}
