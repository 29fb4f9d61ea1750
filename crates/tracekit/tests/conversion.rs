//! The conversion matrix over the corpus: every undamaged pcap, pcapng and ERF file is
//! converted into each format, and for a representative set also through every second
//! format; what comes out is compared with what went in, packet by packet. Round trips
//! are exact where the formats can carry the information: bytes, wire length, time
//! stamps, interface and direction; what a target cannot carry is an error (a link type
//! it has no place for) or a line in the loss report, never silently different data.

use std::path::Path;

use tracekit::{
    CreateOptions, Direction, ErrorKind, Format, LinkType, OwnedPacket, PacketKind, SinkReport,
    TsResolution,
};
use tracekit_testdata::{corpus_dir, corpus_uri};

fn read_all(uri: &str) -> Result<Vec<OwnedPacket>, tracekit::Error> {
    let mut s = tracekit::open(uri)?;
    let mut out = Vec::new();
    while let Some(p) = s.next_packet()? {
        out.push(p.to_owned());
    }
    Ok(out)
}

fn extension(f: Format) -> &'static str {
    match f {
        Format::Pcap => "pcap",
        Format::Pcapng => "pcapng",
        _ => "erf",
    }
}

/// Converts `input` into `format` under `dir` and returns the output's URI (`FORMAT:path`)
/// with the report; `None` when the format cannot hold the trace's link types (an error
/// of kind `WouldLose`, which is checked).
fn convert(input: &str, format: Format, dir: &Path, tag: &str) -> Option<(String, SinkReport)> {
    let out = dir.join(format!("{tag}.{}", extension(format)));
    let out = out.to_str().unwrap().to_string();
    let input = input.to_string();
    let input = input.as_str();
    let mut source = tracekit::open(input).unwrap();
    let res = source.ts_resolution();
    let options = CreateOptions {
        // pcap: keep µs sources µs, everything else ns (exact for ns; ERF values that
        // came from ns convert back exactly, others are counted as rounded)
        ts_resolution: Some(if res == TsResolution::MICRO {
            res
        } else {
            TsResolution::NANO
        }),
        allow_precision_loss: true,
        link_type: source.declared_link_type(),
        ..CreateOptions::default()
    };
    let mut sink = tracekit::create(&out, &options).unwrap();
    match tracekit::copy(&mut source, &mut sink, |_| {}) {
        // Name the format when reading it back: ERF detection rightly refuses files whose
        // time stamps are before 1995 (some corpus files have time stamp 0).
        Ok(_) => Some((format!("{}:{out}", format.name()), sink.finish().unwrap())),
        Err((tracekit::CopyError::Write(e), _)) => {
            assert!(
                matches!(e.kind(), ErrorKind::WouldLose(_)),
                "{input} -> {format}: {e}"
            );
            None
        }
        Err((tracekit::CopyError::Read(e), _)) => panic!("{input}: {e}"),
    }
}

/// What a format keeps of a source's packets: pcap and pcapng drop metadata records
/// (counted), ERF keeps its own META records.
fn carried(packets: &[OwnedPacket], format: Format) -> Vec<&OwnedPacket> {
    packets
        .iter()
        .filter(|p| {
            p.meta().kind == PacketKind::Data
                || (format == Format::Erf && p.meta().link == LinkType::ERF)
        })
        .collect()
}

/// Compares packets that went through `formats` (in order) with the originals.
fn compare(
    name: &str,
    original: &[&OwnedPacket],
    got: &[OwnedPacket],
    formats: &[Format],
    report_mentions_padding: bool,
) {
    assert_eq!(
        got.len(),
        original.len(),
        "{name} via {formats:?}: packet count"
    );
    let through_pcap = formats.contains(&Format::Pcap);
    let through_erf = formats.contains(&Format::Erf);
    for (i, (a, b)) in original.iter().zip(got).enumerate() {
        let (ma, mb) = (a.meta(), b.meta());
        let n = i + 1;
        let ctx = || format!("{name} via {formats:?}, packet {n}");
        // bytes: ERF pads records to 8 bytes, and a truncated packet reads back with the
        // padding (the writer reported it)
        if through_erf && a.data().len() < ma.wire_len as usize && b.data().len() > a.data().len() {
            assert!(report_mentions_padding, "{}", ctx());
            assert!(b.data().starts_with(a.data()), "{}", ctx());
            assert!(b.data().len() - a.data().len() < 8, "{}", ctx());
            assert!(
                b.data()[a.data().len()..].iter().all(|&x| x == 0),
                "{}",
                ctx()
            );
        } else {
            assert!(a.data() == b.data(), "{}: bytes", ctx());
        }
        assert_eq!(ma.wire_len, mb.wire_len, "{}: wire length", ctx());
        // ERF has IPv4 and IPv6 record types but no "raw IP" one (the writer reports it)
        let raw_as_ip = through_erf
            && ma.link == LinkType::RAW
            && matches!(mb.link, LinkType::IPV4 | LinkType::IPV6);
        assert!(
            ma.link == mb.link || raw_as_ip,
            "{}: link type {} became {}",
            ctx(),
            ma.link,
            mb.link
        );
        assert_eq!(
            ma.loss.min(if through_erf { 65535 } else { u32::MAX }),
            mb.loss
                .min(if through_erf { 65535 } else { u32::MAX })
                .max(if through_pcap { 0 } else { mb.loss }),
            "{}: loss",
            ctx()
        );
        // time stamps: exact; through pcap, exact to the nanosecond
        if through_pcap {
            assert_eq!(
                ma.ts.as_unix_nanos(),
                mb.ts.as_unix_nanos(),
                "{}: time stamp",
                ctx()
            );
        } else {
            assert_eq!(ma.ts.to_erf(), mb.ts.to_erf(), "{}: time stamp", ctx());
        }
        if !through_pcap && !through_erf {
            assert_eq!(ma.interface, mb.interface, "{}: interface", ctx());
            assert_eq!(ma.direction, mb.direction, "{}: direction", ctx());
        }
        if through_erf && !through_pcap && ma.interface < 4 {
            assert_eq!(ma.interface, mb.interface, "{}: interface", ctx());
        }
        if through_pcap || through_erf {
            assert_eq!(mb.direction, Direction::Unknown, "{}", ctx());
        }
    }
}

fn corpus_sources() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            !name.starts_with("corrupt__") && !name.starts_with("ndpi__fuzz")
        })
        .map(|p| p.to_str().unwrap().to_string())
        .filter(|uri| tracekit::open(uri).is_ok())
        .collect();
    files.sort();
    files
}

#[test]
fn every_corpus_trace_into_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let sources = corpus_sources();
    assert!(sources.len() >= 100, "{}", sources.len());
    let mut converted = 0;
    for (k, uri) in sources.iter().enumerate() {
        let name = Path::new(uri).file_name().unwrap().to_str().unwrap();
        let original = read_all(uri).unwrap();
        for format in [Format::Pcap, Format::Pcapng, Format::Erf] {
            let Some((out, report)) = convert(uri, format, dir.path(), &format!("{k}")) else {
                continue;
            };
            let got = read_all(&out).unwrap();
            let padding = report.lost.iter().any(|(w, _)| w.contains("pads records"));
            compare(name, &carried(&original, format), &got, &[format], padding);
            // metadata records are never dropped silently
            let meta = original.len() - carried(&original, format).len();
            if meta > 0 {
                let said = report
                    .lost
                    .iter()
                    .find(|(w, _)| w.contains("metadata"))
                    .map(|(_, n)| *n);
                assert_eq!(
                    said,
                    Some(meta as u64),
                    "{name} -> {format}: {:?}",
                    report.lost
                );
            }
            converted += 1;
        }
    }
    assert!(converted >= 250, "only {converted} conversions ran");
}

#[test]
fn two_step_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let sources = [
        "libtrace__100_packetsns.pcap",
        "zeek__http__get-to-ssh-server.pcap",
        "zeek__pcapng-multi-interface.pcapng",
        "ndpi__rtp.pcapng",
        "libtrace__100_packets.erf",
        "erfconv__zeek__q-in-q_ext.erf",
        "zeek__tunnels__gre-sample.pcap",
    ];
    let formats = [Format::Pcap, Format::Pcapng, Format::Erf];
    for (k, name) in sources.iter().enumerate() {
        let uri = corpus_uri(name);
        let original = read_all(&uri).unwrap();
        for a in formats {
            for b in formats {
                let Some((mid, r1)) = convert(&uri, a, dir.path(), &format!("{k}-a-{a}-{b}"))
                else {
                    continue;
                };
                let Some((out, r2)) = convert(&mid, b, dir.path(), &format!("{k}-b-{a}-{b}"))
                else {
                    continue;
                };
                let padding = [&r1, &r2]
                    .iter()
                    .any(|r| r.lost.iter().any(|(w, _)| w.contains("pads records")));
                let got = read_all(&out).unwrap();
                let mut kept = carried(&original, a);
                if b != Format::Erf {
                    kept.retain(|p| p.meta().kind == PacketKind::Data);
                }
                compare(name, &kept, &got, &[a, b], padding);
            }
        }
    }
}

#[test]
fn nanoseconds_survive_pcap_erf_pcapng_pcap() {
    // pcap-ns -> ERF -> pcapng -> pcap-ns gives back the same nanoseconds (and bytes).
    let dir = tempfile::tempdir().unwrap();
    let start = dir.path().join("start.pcap");
    let options = CreateOptions {
        ts_resolution: Some(TsResolution::NANO),
        ..CreateOptions::default()
    };
    let mut sink = tracekit::create(start.to_str().unwrap(), &options).unwrap();
    let frame = [0x5au8; 64];
    for i in 0..500u32 {
        let ts = tracekit::Timestamp::from_nanos(
            1_700_000_000 + i / 7,
            i.wrapping_mul(2_654_435_761) % 1_000_000_000,
        );
        sink.write_packet(&tracekit::Packet::new(
            &frame,
            tracekit::Meta::new(ts, 64, LinkType::ETHERNET),
        ))
        .unwrap();
    }
    sink.finish().unwrap();
    let s = start.to_str().unwrap();
    let (erf, _) = convert(s, Format::Erf, dir.path(), "step1").unwrap();
    let (ng, _) = convert(&erf, Format::Pcapng, dir.path(), "step2").unwrap();
    let (back, report) = convert(&ng, Format::Pcap, dir.path(), "step3").unwrap();
    assert!(report.lost.is_empty(), "{:?}", report.lost);
    let back = back.strip_prefix("pcap:").unwrap();
    assert!(
        std::fs::read(back).unwrap() == std::fs::read(&start).unwrap(),
        "byte-identical pcap at the end"
    );
}

#[test]
fn what_cannot_be_carried_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    // pcapng with comments and two interfaces -> pcap
    let uri = corpus_uri("ndpi__rtp.pcapng");
    let (_, report) = convert(&uri, Format::Pcap, dir.path(), "rtp").unwrap();
    let lost: Vec<&str> = report.lost.iter().map(|(w, _)| *w).collect();
    assert!(
        lost.contains(&"comments") && lost.contains(&"interface id"),
        "{lost:?}"
    );
    // two link types -> pcap: refused, with the reason
    let uri = corpus_uri("pcapnggen__test006_le.pcapng");
    assert!(convert(&uri, Format::Pcap, dir.path(), "t6").is_none());
    // SLL2 -> ERF: no record type
    let uri = corpus_uri("zeek__linux_dlt_sll2.pcap");
    assert!(convert(&uri, Format::Erf, dir.path(), "sll2").is_none());
}
