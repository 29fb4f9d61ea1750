//! 802.1ad: service tags (TPID 0x88a8) are `ieee8021ad.id`, 802.1Q tags (0x8100, and the
//! old QinQ 0x9100) are `vlan.id`, as tshark splits them; checked against tshark on
//! crafted double- and triple-tagged frames (the corpus has no 0x88a8 tag).

use tracekit_core::{LinkType, Meta, Packet, Timestamp};
use tracekit_decode::Decoded;
use tracekit_decode::fields::{Field, write_field};
use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Udp, Vlan};
use tracekit_testdata::{have, tshark_fields, write_pcap};

fn frame(tags: &[Vlan]) -> Vec<u8> {
    let mut b = PacketBuilder::new();
    b.ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]));
    for t in tags {
        b.vlan(*t);
    }
    b.ipv4(Ipv4::new([10, 0, 0, 1], [10, 0, 0, 2]))
        .udp(Udp::new(1000, 2000))
        .payload(b"x")
        .build()
}

fn ours(f: &[u8], field: Field) -> String {
    let p = Packet::new(
        f,
        Meta::new(Timestamp::ZERO, f.len() as u32, LinkType::ETHERNET),
    );
    let d = Decoded::new(&p);
    let mut s = String::new();
    write_field(&mut s, field, 1, &p, &d);
    s
}

#[test]
fn service_tags_are_ieee8021ad() {
    let frames: Vec<(Vec<u8>, usize)> = [
        vec![Vlan::service(100), Vlan::new(200)],
        vec![Vlan::service(7), Vlan::service(8), Vlan::new(9)],
        vec![Vlan::new(300).tpid(0x9100), Vlan::new(301)],
        vec![Vlan::new(42)],
    ]
    .iter()
    .map(|tags| {
        let f = frame(tags);
        let n = f.len();
        (f, n)
    })
    .collect();
    let expected = [("200", "100"), ("9", "7,8"), ("300,301", ""), ("42", "")];
    for ((f, _), (vlan, ad)) in frames.iter().zip(expected) {
        assert_eq!(ours(f, Field::VlanId), vlan);
        assert_eq!(ours(f, Field::Ieee8021adId), ad);
    }
    if !have("tshark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("qinq.pcap");
    write_pcap(&path, 1, &frames);
    let theirs = tshark_fields(
        &path,
        &[
            "vlan.id",
            "ieee8021ad.id",
            "ieee8021ad.svid",
            "ieee8021ad.cvid",
        ],
    );
    assert_eq!(theirs.len(), frames.len());
    for ((f, _), t) in frames.iter().zip(&theirs) {
        assert_eq!(ours(f, Field::VlanId), t[0].replace('~', ","));
        // Two S-tags in a row: Wireshark shows them as one 802.1ad layer's S-VID and
        // C-VID instead of two ieee8021ad.id values.
        let ad = if t[1].is_empty() && !t[2].is_empty() {
            format!("{},{}", t[2], t[3])
        } else {
            t[1].replace('~', ",")
        };
        assert_eq!(ours(f, Field::Ieee8021adId), ad);
    }
}
