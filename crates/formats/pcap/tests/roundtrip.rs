//! Property: any sequence of packets written with the pcap writer reads back identical
//! (bytes, time stamps in the chosen resolution, wire lengths, link type), in both byte
//! orders, through both the mapped and the streaming reader.

use std::io::Write;

use proptest::prelude::*;
use tracekit_core::{ErrorKind, LinkType, Meta, Packet, Timestamp, TsResolution};
use tracekit_io::ReadMode;
use tracekit_pcap::{ByteOrder, PcapReader, PcapWriter, PcapWriterOptions};

#[derive(Debug, Clone)]
struct Pkt {
    data: Vec<u8>,
    secs: u32,
    units: u32,
    extra_wire: u32,
}

fn packets(per_sec: u32) -> impl Strategy<Value = Vec<Pkt>> {
    prop::collection::vec(
        (
            prop::collection::vec(any::<u8>(), 0..300),
            any::<u32>(),
            0..per_sec,
            prop_oneof![Just(0u32), 0u32..100_000],
        )
            .prop_map(|(data, secs, units, extra_wire)| Pkt {
                data,
                secs,
                units,
                extra_wire,
            }),
        0..40,
    )
}

fn check(
    pkts: &[Pkt],
    res: TsResolution,
    order: ByteOrder,
    link: u32,
) -> Result<(), TestCaseError> {
    let link = LinkType(link);
    // The link type comes from the first packet; an empty file needs it in the options.
    let link_type = pkts.is_empty().then_some(link);
    let options = PcapWriterOptions {
        resolution: res,
        byte_order: order,
        link_type,
        ..PcapWriterOptions::default()
    };
    let mut w = PcapWriter::new(Vec::new(), options).unwrap();
    for p in pkts {
        let ts = Timestamp::from_units(u64::from(p.secs), u64::from(p.units), res);
        let meta = Meta::new(ts, p.data.len() as u32 + p.extra_wire, link);
        w.write_packet(&Packet::new(&p.data, meta)).unwrap();
    }
    let (file, report) = w.finish_into_inner().unwrap();
    prop_assert_eq!(report.packets, pkts.len() as u64);
    prop_assert_eq!(report.bytes, file.len() as u64);
    prop_assert!(report.lost.is_empty());

    let mut tmp = tempfile::NamedTempFile::new().unwrap();
    tmp.write_all(&file).unwrap();
    tmp.flush().unwrap();
    for mut r in [
        PcapReader::from_reader(std::io::Cursor::new(file.clone())).unwrap(),
        PcapReader::open_with(tmp.path(), ReadMode::Mmap).unwrap(),
    ] {
        prop_assert_eq!(r.header().link_type, link);
        prop_assert_eq!(r.header().resolution, res);
        prop_assert_eq!(r.header().byte_order, order);
        for p in pkts {
            let got = r.next_packet().unwrap().unwrap();
            prop_assert_eq!(got.data(), &p.data[..]);
            prop_assert_eq!(got.ts().secs(), u64::from(p.secs));
            prop_assert_eq!(got.ts().subsec_units(res), u64::from(p.units));
            prop_assert_eq!(got.wire_len(), p.data.len() as u32 + p.extra_wire);
            prop_assert_eq!(got.link_type(), link);
        }
        prop_assert!(r.next_packet().unwrap().is_none());
    }
    Ok(())
}

proptest! {
    #[test]
    fn micro_round_trip(pkts in packets(1_000_000), big in any::<bool>(), link in 0u32..0xFFFF) {
        check(&pkts, TsResolution::MICRO, if big { ByteOrder::Big } else { ByteOrder::Little }, link)?;
    }

    #[test]
    fn nano_round_trip(pkts in packets(1_000_000_000), big in any::<bool>(), link in 0u32..0xFFFF) {
        check(&pkts, TsResolution::NANO, if big { ByteOrder::Big } else { ByteOrder::Little }, link)?;
    }

    #[test]
    fn micro_time_stamps_survive_a_nano_file(secs: u32, micros in 0u32..1_000_000) {
        let ts = Timestamp::from_micros(secs, micros);
        let mut w = PcapWriter::new(Vec::new(), PcapWriterOptions::nanos()).unwrap();
        w.write_packet(&Packet::new(&[1, 2, 3], Meta::new(ts, 3, LinkType::RAW))).unwrap();
        let (file, _) = w.finish_into_inner().unwrap();
        let mut r = PcapReader::from_reader(std::io::Cursor::new(file)).unwrap();
        let got = r.next_packet().unwrap().unwrap().ts();
        prop_assert_eq!((got.secs(), got.subsec_micros()), (u64::from(secs), micros));
        prop_assert_eq!(got.subsec_nanos(), micros * 1000);
    }
}

#[test]
fn nanos_into_micros_needs_permission() {
    let ts = Timestamp::from_nanos(5, 1_234_567);
    let packet_bytes = [0u8; 20];
    let packet = Packet::new(&packet_bytes, Meta::new(ts, 20, LinkType::RAW));
    let mut strict = PcapWriter::new(Vec::new(), PcapWriterOptions::default()).unwrap();
    let err = strict.write_packet(&packet).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::WouldLose(_)), "{err}");
    assert_eq!(err.packet(), Some(1));

    let lenient = PcapWriterOptions {
        allow_precision_loss: true,
        ..PcapWriterOptions::default()
    };
    let mut w = PcapWriter::new(Vec::new(), lenient).unwrap();
    w.write_packet(&packet).unwrap();
    let (file, report) = w.finish_into_inner().unwrap();
    assert_eq!(report.lost, vec![("sub-resolution time stamp digits", 1)]);
    let mut r = PcapReader::from_reader(std::io::Cursor::new(file)).unwrap();
    assert_eq!(r.next_packet().unwrap().unwrap().ts().subsec_micros(), 1234);
}

#[test]
fn one_link_type_per_file() {
    let mut w = PcapWriter::new(Vec::new(), PcapWriterOptions::default()).unwrap();
    let data = [0u8; 20];
    w.write_packet(&Packet::new(
        &data,
        Meta::new(Timestamp::ZERO, 20, LinkType::ETHERNET),
    ))
    .unwrap();
    let err = w
        .write_packet(&Packet::new(
            &data,
            Meta::new(Timestamp::ZERO, 20, LinkType::LINUX_SLL),
        ))
        .unwrap_err();
    assert!(err.to_string().contains("one link type"), "{err}");
}

#[test]
fn snaplen_cuts_and_reports() {
    let options = PcapWriterOptions {
        snaplen: 10,
        ..PcapWriterOptions::default()
    };
    let mut w = PcapWriter::new(Vec::new(), options).unwrap();
    let data = [7u8; 30];
    w.write_packet(&Packet::new(
        &data,
        Meta::new(Timestamp::ZERO, 30, LinkType::ETHERNET),
    ))
    .unwrap();
    let (file, report) = w.finish_into_inner().unwrap();
    assert_eq!(report.lost, vec![("bytes beyond the snap length", 1)]);
    let mut r = PcapReader::from_reader(std::io::Cursor::new(file)).unwrap();
    assert_eq!(r.header().snaplen, 10);
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!((p.caplen(), p.wire_len()), (10, 30));
}

#[test]
fn empty_file_has_a_header() {
    let w = PcapWriter::new(Vec::new(), PcapWriterOptions::default()).unwrap();
    let (file, report) = w.finish_into_inner().unwrap();
    assert_eq!((file.len(), report.packets), (24, 0));
    let mut r = PcapReader::from_reader(std::io::Cursor::new(file)).unwrap();
    assert!(r.next_packet().unwrap().is_none());
}
