//! Property: packets written with the pcapng writer read back identical: bytes, wire
//! length, exact time stamps (µs, ns and ERF 2^-32 sources), interface, link type,
//! direction, drop count and comments, in both byte orders.

use proptest::prelude::*;
use tracekit_core::{
    ByteOrder, Direction, InterfaceInfo, LinkType, Meta, Packet, PacketOptions, Timestamp,
    TsResolution,
};
use tracekit_pcapng::{PcapngReader, PcapngWriter, PcapngWriterOptions};

#[derive(Debug, Clone)]
struct Pkt {
    data: Vec<u8>,
    ts: Timestamp,
    extra_wire: u32,
    interface: u32,
    direction: Direction,
    loss: u32,
    comment: Option<String>,
}

fn timestamp() -> impl Strategy<Value = Timestamp> {
    prop_oneof![
        (any::<u32>(), 0u32..1_000_000).prop_map(|(s, u)| Timestamp::from_micros(s, u)),
        (any::<u32>(), 0u32..1_000_000_000).prop_map(|(s, n)| Timestamp::from_nanos(s, n)),
        any::<u64>().prop_map(Timestamp::from_erf),
    ]
}

fn packet() -> impl Strategy<Value = Pkt> {
    (
        prop::collection::vec(any::<u8>(), 0..200),
        timestamp(),
        0u32..5000,
        0u32..3,
        prop_oneof![
            Just(Direction::Unknown),
            Just(Direction::Inbound),
            Just(Direction::Outbound)
        ],
        prop_oneof![Just(0u32), any::<u32>()],
        prop::option::of("[a-zA-Z0-9 ]{0,40}"),
    )
        .prop_map(
            |(data, ts, extra_wire, interface, direction, loss, comment)| Pkt {
                data,
                ts,
                extra_wire,
                interface,
                direction,
                loss,
                comment,
            },
        )
}

fn comment_options(text: &str) -> Vec<u8> {
    let le = ByteOrder::Little;
    let mut raw = Vec::new();
    raw.extend_from_slice(&le.put_u16(1));
    raw.extend_from_slice(&le.put_u16(text.len() as u16));
    raw.extend_from_slice(text.as_bytes());
    raw.resize(raw.len() + (4 - text.len() % 4) % 4, 0);
    raw.extend_from_slice(&[0; 4]);
    raw
}

proptest! {
    #[test]
    fn round_trip(pkts in prop::collection::vec(packet(), 0..30), big in any::<bool>()) {
        let link_of = |i: u32| [LinkType::ETHERNET, LinkType::RAW, LinkType::LINUX_SLL][i as usize];
        let order = if big { ByteOrder::Big } else { ByteOrder::Little };
        let options = PcapngWriterOptions { byte_order: order, ..PcapngWriterOptions::default() };
        let mut w = PcapngWriter::new(Vec::new(), options).unwrap();
        for i in 0..3 {
            let mut info = InterfaceInfo::new(link_of(i));
            info.name = Some(format!("eth{i}"));
            info.ts_resolution = TsResolution::NANO;
            w.describe_interface(i, &info).unwrap();
        }
        for p in &pkts {
            let mut meta = Meta::new(p.ts, p.data.len() as u32 + p.extra_wire, link_of(p.interface));
            meta.interface = p.interface;
            meta.direction = p.direction;
            meta.loss = p.loss;
            let raw = p.comment.as_deref().map(comment_options);
            let packet = Packet::new(&p.data, meta)
                .with_options(raw.as_deref().map(|r| PacketOptions::new(r, ByteOrder::Little)));
            w.write_packet(&packet).unwrap();
        }
        let (file, report) = w.finish_into_inner().unwrap();
        prop_assert_eq!(report.packets, pkts.len() as u64);
        prop_assert_eq!(report.bytes, file.len() as u64);

        let mut r = PcapngReader::from_reader(std::io::Cursor::new(file)).unwrap();
        for p in &pkts {
            let got = r.next_packet().unwrap().unwrap();
            let m = *got.meta();
            prop_assert_eq!(got.data(), &p.data[..]);
            prop_assert_eq!(m.ts.to_erf(), p.ts.to_erf(), "time stamp {:?}", p.ts);
            prop_assert_eq!(m.wire_len, p.data.len() as u32 + p.extra_wire);
            prop_assert_eq!(m.link, link_of(p.interface));
            prop_assert_eq!(m.direction, p.direction);
            prop_assert_eq!(m.loss, p.loss);
            let comments: Vec<String> = got.options().map(|o| o.comments().map(str::to_string).collect()).unwrap_or_default();
            prop_assert_eq!(comments, p.comment.clone().into_iter().collect::<Vec<_>>());
            // The interface keeps its number when its time stamps fit its first IDB.
            if p.ts.is_exact_in(TsResolution::NANO) {
                prop_assert_eq!(m.interface, p.interface);
            }
            let iface = r.interface(m.interface).unwrap().clone();
            prop_assert_eq!(iface.name.as_deref().map(|n| n.starts_with("eth")), Some(true));
        }
        prop_assert!(r.next_packet().unwrap().is_none());
        prop_assert_eq!(r.sections()[0].byte_order, order);
    }
}

#[test]
fn empty_file_is_a_valid_section() {
    let w = PcapngWriter::new(Vec::new(), PcapngWriterOptions::default()).unwrap();
    let (file, _) = w.finish_into_inner().unwrap();
    let mut r = PcapngReader::from_reader(std::io::Cursor::new(file)).unwrap();
    assert!(r.next_packet().unwrap().is_none());
    assert_eq!(r.sections().len(), 1);
    assert!(
        r.sections()[0]
            .application
            .as_deref()
            .unwrap()
            .starts_with("tracekit")
    );
}
