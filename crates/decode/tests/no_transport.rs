//! `Decoded::no_transport` names why a packet has no transport header, and `flow_key`
//! is `None` exactly when the ports are unknown. Each packet is built byte by byte so
//! that the expected reason is the one constructed.

use tracekit_core::{LinkType, Meta, Packet, Timestamp};
use tracekit_decode::{Decoded, NoTransport, Transport};

fn decode<T>(bytes: &[u8], link: LinkType, f: impl FnOnce(&Decoded<'_>) -> T) -> T {
    let packet = Packet::new(bytes, Meta::new(Timestamp::ZERO, bytes.len() as u32, link));
    f(&Decoded::new(&packet))
}

/// An IPv4 header with the given protocol, total length and flags/fragment field.
fn ipv4(proto: u8, total: u16, frag: u16) -> Vec<u8> {
    let t = total.to_be_bytes();
    let f = frag.to_be_bytes();
    vec![
        0x45, 0, t[0], t[1], 0, 7, f[0], f[1], 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]
}

#[test]
fn reasons() {
    // A whole UDP datagram: a transport layer, a key with its ports.
    let mut p = ipv4(17, 28, 0);
    p.extend([0x04, 0xd2, 0x00, 0x35, 0, 8, 0, 0]);
    decode(&p, LinkType::RAW, |d| {
        assert_eq!(d.no_transport(), None);
        assert!(matches!(d.transport(), Some(Transport::Udp(_))));
        let k = d.flow_key().unwrap();
        assert_eq!((k.src_port, k.dst_port, k.protocol), (1234, 53, 17));
        assert_eq!(d.fragment_payload_len(), None);
    });

    // ARP over Ethernet: not IP.
    let mut arp = vec![0xff; 6];
    arp.extend([2, 0, 0, 0, 0, 1, 0x08, 0x06]);
    arp.extend([0u8; 28]);
    decode(&arp, LinkType::ETHERNET, |d| {
        assert_eq!(d.no_transport(), Some(NoTransport::NotIp));
        assert_eq!(d.flow_key(), None);
    });

    // An IPv4 header cut after 12 bytes.
    decode(&ipv4(6, 40, 0)[..12], LinkType::RAW, |d| {
        assert_eq!(d.no_transport(), Some(NoTransport::IpHeaderCut));
    });

    // A non-first fragment (offset 1,480 bytes) of 100 data bytes, MF set.
    let mut frag = ipv4(6, 120, 0x2000 | 185);
    frag.extend([0u8; 100]);
    decode(&frag, LinkType::RAW, |d| {
        assert!(d.transport().is_none());
        assert_eq!(d.no_transport(), Some(NoTransport::NonFirstFragment));
        assert_eq!(d.fragment_payload_len(), Some(100));
        assert_eq!(d.flow_key(), None);
    });
    // The first fragment: a transport header, its share includes it.
    let mut first = ipv4(17, 120, 0x2000);
    first.extend([0x04, 0xd2, 0x00, 0x35, 0x01, 0x00, 0, 0]);
    first.extend([0u8; 92]);
    decode(&first, LinkType::RAW, |d| {
        assert_eq!(d.no_transport(), None);
        assert_eq!(d.fragment_payload_len(), Some(100));
        assert!(d.flow_key().is_some());
    });

    // IPv4 options cut: header length 60, 24 bytes captured.
    let mut opts = ipv4(6, 60, 0);
    opts[0] = 0x4f;
    opts.extend([1, 1, 1, 1]);
    decode(&opts, LinkType::RAW, |d| {
        assert_eq!(d.no_transport(), Some(NoTransport::ExtensionHeadersCut));
    });

    // IPv6 with "no next header".
    let mut v6 = vec![0x60, 0, 0, 0, 0, 0, 59, 64];
    v6.extend([0u8; 32]);
    decode(&v6, LinkType::RAW, |d| {
        assert_eq!(d.no_transport(), Some(NoTransport::NoNextHeader));
    });

    // TCP whose header the capture cut after 4 bytes: a transport layer (Truncated), but
    // no key (the ports of a cut header are not trusted as a flow).
    let mut cut = ipv4(6, 40, 0);
    cut.extend([0x04, 0xd2]);
    decode(&cut, LinkType::RAW, |d| {
        assert_eq!(d.no_transport(), None);
        assert!(matches!(
            d.transport(),
            Some(Transport::Truncated { protocol: 6, .. })
        ));
        assert_eq!(d.flow_key(), None);
    });

    // ICMP: no ports by design, a key with ports 0.
    let mut icmp = ipv4(1, 28, 0);
    icmp.extend([8, 0, 0, 0, 0, 1, 0, 1]);
    decode(&icmp, LinkType::RAW, |d| {
        let k = d.flow_key().unwrap();
        assert_eq!((k.src_port, k.dst_port, k.protocol), (0, 0, 1));
    });
}
