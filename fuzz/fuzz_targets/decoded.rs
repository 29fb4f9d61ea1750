//! Any bytes under any link type given to the decoder: every accessor, every tunnel
//! level (CAPWAP and LWAPP among them), every A-MSDU subframe, no panic, and every slice
//! it hands out lies inside the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_core::LinkType;
use tracekit_decode::{Decoded, Transport, fields};

fn inside(outer: &[u8], inner: &[u8]) -> bool {
    let o = outer.as_ptr() as usize;
    let i = inner.as_ptr() as usize;
    inner.is_empty() || (i >= o && i + inner.len() <= o + outer.len())
}

fn walk(d: &Decoded<'_>, input: &[u8]) {
    let _ = (
        d.link(),
        d.layer3(),
        d.ipv4(),
        d.ipv6(),
        d.udp(),
        d.icmp(),
        d.icmpv6(),
    );
    let _ = (
        d.sctp(),
        d.gre(),
        d.src_addr(),
        d.dst_addr(),
        d.src_port(),
        d.dst_port(),
    );
    let _ = (
        d.flow_key(),
        d.symmetric_flow_hash(),
        d.fragment(),
        d.radiotap(),
        d.ethernet(),
    );
    let _ = (
        d.vlans().count(),
        d.mpls_labels().count(),
        d.payload_wire_len(),
        d.tunnel(),
    );
    assert!(inside(input, d.link().bytes));
    if let Some(p) = d.payload() {
        assert!(inside(input, p));
    }
    if let Some(t) = d.tcp() {
        for o in t.options() {
            std::hint::black_box(o);
        }
    }
    if let Some(Transport::Other { bytes, .. } | Transport::Truncated { bytes, .. }) = d.transport()
    {
        assert!(inside(input, bytes));
    }
    if let Some(ip6) = d.ipv6() {
        assert!(ip6.extensions().count() <= 16);
    }
    if let Some(m) = d.dns() {
        assert!(inside(input, m.bytes()));
        for q in m.questions() {
            std::hint::black_box(q.name.to_string());
        }
        for r in m.answers().chain(m.authority()).chain(m.additional()) {
            std::hint::black_box(r.data());
        }
    }
    if let Some(h) = d.isl() {
        std::hint::black_box((h.vlan_id(), h.frame_type(), h.length()));
    }
    // A-MSDU subframes: each inside the input, each decodable on its own.
    if let Some(subframes) = d.amsdu() {
        for s in subframes {
            assert!(inside(input, s.msdu()));
            let sd = s.decode();
            assert!(inside(input, sd.data()));
            let _ = (sd.layer3(), sd.transport(), sd.payload(), sd.anomalies());
        }
    }
    let _ = d.anomalies();
    if let Some(inner) = d.inner() {
        assert!(inside(input, inner.data()));
        walk(&inner, input);
    }
}

const LINKS: [u32; 18] = [
    0, 1, 9, 12, 50, 51, 101, 104, 105, 108, 113, 117, 119, 127, 197, 228, 239, 276,
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let link = LinkType(LINKS[usize::from(pick) % LINKS.len()]);
    let d = Decoded::from_bytes(rest, link, rest.len() as u32);
    walk(&d, rest);
    // the tshark-style field printer over the same packet
    let packet = tracekit_core::Packet::new(
        rest,
        tracekit_core::Meta::new(tracekit_core::Timestamp::ZERO, rest.len() as u32, link),
    );
    let d = Decoded::new(&packet);
    let mut line = String::new();
    for f in fields::Field::ALL {
        fields::write_field(&mut line, *f, 1, &packet, &d);
    }
});
