//! Property: cutting a valid packet at any length never panics, and the anomalies say
//! exactly which layer the cut fell in.

use proptest::prelude::*;
use tracekit_core::LinkType;
use tracekit_decode::{Anomaly, Decoded};
use tracekit_testdata::builder::tcp_flags::{ACK, PSH};
use tracekit_testdata::builder::{
    Ethernet, Icmp, Icmpv6, Ipv4, Ipv6, PacketBuilder, Tcp, Udp, Vlan,
};

#[derive(Debug, Clone)]
struct Shape {
    vlans: usize,
    v6: bool,
    /// 0 TCP, 1 UDP, 2 ICMP(v6)
    l4: u8,
    tcp_opt_words: usize,
    payload: usize,
}

fn shape() -> impl Strategy<Value = Shape> {
    (0..3usize, any::<bool>(), 0..3u8, 0..11usize, 0..64usize).prop_map(
        |(vlans, v6, l4, tcp_opt_words, payload)| Shape {
            vlans,
            v6,
            l4,
            tcp_opt_words,
            payload,
        },
    )
}

/// The packet and its layer boundaries: (link end, IP fixed end, L4 fixed end, L4 full end).
fn build(s: &Shape) -> (Vec<u8>, [usize; 4]) {
    let mut b = PacketBuilder::new();
    b.ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]));
    for _ in 0..s.vlans {
        b.vlan(Vlan::new(7));
    }
    let link_end = 14 + 4 * s.vlans;
    let ip_end = if s.v6 {
        let (mut src, mut dst) = ([0u8; 16], [0u8; 16]);
        src[..2].copy_from_slice(&[0x20, 0x01]);
        dst[..2].copy_from_slice(&[0x20, 0x01]);
        (src[15], dst[15]) = (1, 2);
        b.ipv6(Ipv6::new(src, dst));
        link_end + 40
    } else {
        b.ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]));
        link_end + 20
    };
    // Real options (MSS, window scale, SACK-permitted + timestamps, SACK), whole groups
    // while they fit, then NOP padding.
    let groups: [&[u8]; 4] = [
        &[2, 4, 5, 180],
        &[1, 3, 3, 7],
        &[4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2],
        &[1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2],
    ];
    let want = s.tcp_opt_words * 4;
    let mut opts = Vec::new();
    for g in groups.iter().cycle().take(16) {
        if opts.len() + g.len() <= want {
            opts.extend_from_slice(g);
        }
    }
    opts.resize(want, 1);
    let (fixed, full) = match s.l4 {
        0 => {
            b.tcp(Tcp::new(40000, 80).flags(PSH | ACK).option_bytes(&opts));
            (20, 20 + want)
        }
        1 => {
            b.udp(Udp::new(5000, 5001));
            (8, 8)
        }
        _ if s.v6 => {
            b.icmpv6(Icmpv6::echo_request(1, 1));
            (4, 8)
        }
        _ => {
            b.icmp(Icmp::echo_request(1, 1));
            (8, 8)
        }
    };
    let payload = vec![0xAB; s.payload];
    let p = b.payload(&payload).build();
    (p, [link_end, ip_end, ip_end + fixed, ip_end + full])
}

fn exercise(d: &Decoded<'_>) {
    let _ = (
        d.link(),
        d.layer3(),
        d.ipv4(),
        d.ipv6(),
        d.transport(),
        d.tcp(),
        d.udp(),
        d.icmp(),
    );
    let _ = (
        d.icmpv6(),
        d.sctp(),
        d.gre(),
        d.payload(),
        d.payload_wire_len(),
        d.src_addr(),
        d.dst_addr(),
    );
    let _ = (
        d.src_port(),
        d.dst_port(),
        d.flow_key(),
        d.symmetric_flow_hash(),
        d.fragment(),
        d.dns(),
    );
    let _ = (
        d.vlans().count(),
        d.mpls_labels().count(),
        d.tunnel(),
        d.inner().map(|i| i.anomalies()),
    );
    if let Some(t) = d.tcp() {
        let _ = t.options().count();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn cuts_are_reported_at_the_layer_they_fall_in(s in shape(), cut_frac in 0.0f64..=1.0) {
        let (p, [link_end, ip_end, l4_fixed, l4_full]) = build(&s);
        let cut = ((p.len() as f64) * cut_frac) as usize;
        let data = &p[..cut];
        let d = Decoded::from_bytes(data, LinkType::ETHERNET, p.len() as u32);
        exercise(&d);
        let an = d.anomalies();
        prop_assert!(!an.any_malformed(), "a cut is never a malformation: {an:?}");
        let got: Vec<Anomaly> = an.iter().collect();
        let want: Vec<Anomaly> = if cut < link_end {
            // the Ethernet header, or one of the tags after it, was cut
            vec![if cut < 14 { Anomaly::LinkTruncated } else { Anomaly::VlanTruncated }]
        } else if cut < ip_end {
            vec![if s.v6 { Anomaly::Ipv6Truncated } else { Anomaly::Ipv4Truncated }]
        } else if cut < l4_fixed {
            vec![match (s.l4, s.v6) {
                (0, _) => Anomaly::TcpTruncated,
                (1, _) => Anomaly::UdpTruncated,
                (_, true) => Anomaly::Icmpv6Truncated,
                _ => Anomaly::IcmpTruncated,
            }]
        } else if cut < l4_full && s.l4 == 0 {
            vec![Anomaly::TcpOptionsTruncated]
        } else {
            vec![]
        };
        prop_assert_eq!(got, want, "cut at {} of {} ({:?})", cut, p.len(), s);
        prop_assert_eq!(d.ipv4().is_some() || d.ipv6().is_some(), cut >= ip_end);
        // Ports exist exactly when the fixed transport header was captured.
        prop_assert_eq!(d.src_port().is_some(), s.l4 < 2 && cut >= l4_fixed);
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200), link in prop::sample::select(vec![0u32, 1, 9, 12, 101, 105, 108, 113, 117, 119, 127, 197, 228, 229, 239, 276])) {
        let d = Decoded::from_bytes(&data, LinkType(link), data.len() as u32);
        exercise(&d);
        let _ = d.anomalies();
    }
}
