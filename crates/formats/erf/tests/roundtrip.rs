//! Property: packets written with the ERF writer read back with the same bytes, wire
//! length, time stamp (any 32.32 value), interface (0-3) and loss counter; whole
//! `LINKTYPE_ERF` records come back as they went in; the report names what ERF cannot
//! carry.

use proptest::prelude::*;
use tracekit_core::{Direction, LinkType, Meta, Packet, Timestamp};
use tracekit_erf::{ErfReader, ErfWriter, ErfWriterOptions, looks_like_erf};

#[derive(Debug, Clone)]
struct Pkt {
    link: LinkType,
    data: Vec<u8>,
    raw_ts: u64,
    interface: u32,
    loss: u32,
}

fn packet() -> impl Strategy<Value = Pkt> {
    (
        prop_oneof![
            Just(LinkType::ETHERNET),
            Just(LinkType::IPV4),
            Just(LinkType::IPV6),
            Just(LinkType::C_HDLC)
        ],
        prop::collection::vec(any::<u8>(), 1..300),
        (0u64..100_000, any::<u32>()),
        0u32..4,
        0u32..=65535,
    )
        .prop_map(|(link, mut data, (secs, frac), interface, loss)| {
            // make the payload what the link type says it is
            match link {
                LinkType::IPV4 => data[0] = 0x45,
                LinkType::IPV6 => data[0] = 0x60,
                LinkType::C_HDLC => data[0] = 0x0f,
                _ => {}
            }
            // time stamps of a real trace: after 1995 and close together
            let secs = 1_700_000_000 + secs;
            Pkt {
                link,
                data,
                raw_ts: (secs << 32) | u64::from(frac),
                interface,
                loss,
            }
        })
}

proptest! {
    #[test]
    fn round_trip(pkts in prop::collection::vec(packet(), 1..30)) {
        let mut w = ErfWriter::new(Vec::new(), ErfWriterOptions::default());
        for p in &pkts {
            let mut meta = Meta::new(Timestamp::from_erf(p.raw_ts), p.data.len() as u32, p.link);
            meta.interface = p.interface;
            meta.loss = p.loss;
            w.write_packet(&Packet::new(&p.data, meta)).unwrap();
        }
        let (file, report) = w.finish_into_inner().unwrap();
        prop_assert!(report.lost.is_empty(), "{:?}", report.lost);
        prop_assert_eq!(file.len() % 8, 0);
        prop_assert!(looks_like_erf(&file[..file.len().min(512)]));
        let mut r = ErfReader::from_reader(std::io::Cursor::new(file)).unwrap();
        for p in &pkts {
            let got = r.next_packet().unwrap().unwrap();
            prop_assert_eq!(got.data(), &p.data[..]);
            prop_assert_eq!(got.ts().to_erf(), p.raw_ts);
            prop_assert_eq!(got.link_type(), p.link);
            prop_assert_eq!(got.wire_len(), p.data.len() as u32);
            prop_assert_eq!(got.meta().interface, p.interface);
            prop_assert_eq!(got.meta().loss, p.loss);
        }
        prop_assert!(r.next_packet().unwrap().is_none());
    }

    #[test]
    fn nanosecond_time_stamps_survive(secs in 788_918_400u32.., nanos in 0u32..1_000_000_000) {
        let ts = Timestamp::from_nanos(secs, nanos);
        let mut w = ErfWriter::new(Vec::new(), ErfWriterOptions::default());
        w.write_packet(&Packet::new(&[0u8; 60], Meta::new(ts, 60, LinkType::ETHERNET))).unwrap();
        let (file, _) = w.finish_into_inner().unwrap();
        let mut r = ErfReader::from_reader(std::io::Cursor::new(file)).unwrap();
        let got = r.next_packet().unwrap().unwrap().ts();
        prop_assert_eq!(got.as_unix_nanos(), ts.as_unix_nanos());
    }
}

#[test]
fn whole_records_come_back() {
    // A provenance record as the reader hands it out, written back.
    let path = tracekit_testdata::corpus("libtrace__provenance.erf");
    let original = std::fs::read(&path).unwrap();
    let mut r = ErfReader::open(&path).unwrap();
    let mut w = ErfWriter::new(Vec::new(), ErfWriterOptions::default());
    while let Some(p) = r.next_packet().unwrap() {
        w.write_packet(&p).unwrap();
    }
    let (copy, report) = w.finish_into_inner().unwrap();
    assert!(report.lost.is_empty());
    assert!(copy == original, "META records are copied bit for bit");
}

#[test]
fn what_erf_cannot_carry_is_reported() {
    let mut w = ErfWriter::new(Vec::new(), ErfWriterOptions::default());
    let data = [0x45u8; 41];
    let mut meta = Meta::new(
        Timestamp::from_micros(1_000_000_000, 1),
        1500,
        LinkType::RAW,
    );
    meta.interface = 9;
    meta.direction = Direction::Inbound;
    w.write_packet(&Packet::new(&data, meta)).unwrap();
    let err = w
        .write_packet(&Packet::new(
            &data,
            Meta::new(Timestamp::ZERO, 41, LinkType::NULL),
        ))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("no record type for link type NULL"),
        "{err}"
    );
    let (_, report) = w.finish_into_inner().unwrap();
    let lost: Vec<&str> = report.lost.iter().map(|(w, _)| *w).collect();
    assert_eq!(
        lost,
        [
            "interface id above 3",
            "direction",
            "link type RAW (written as IPv4/IPv6 records)",
            "exact capture length of truncated packets (ERF pads records to 8 bytes)"
        ]
    );
}
