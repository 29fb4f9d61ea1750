//! `open` detects formats by content, `create` picks them by name, and a copy through
//! the facade is byte-identical for a same-resolution pcap.

use tracekit::{CreateOptions, Format, ReadMode, TsResolution};
use tracekit_testdata::corpus_uri as corpus;

fn count(uri: &str) -> u64 {
    let mut s = tracekit::open(uri).unwrap();
    let mut n = 0;
    while s.next_packet().unwrap().is_some() {
        n += 1;
    }
    n
}

#[test]
fn content_decides_not_the_extension() {
    // classic pcap content behind a .pcapng name
    let s = tracekit::open(&corpus("ndpi__bets.pcapng")).unwrap();
    assert_eq!(s.format(), Some(Format::Pcap));
    assert_eq!(count(&corpus("ndpi__bets.pcapng")), 33);
    // pcapng content behind a .pcap name: read as pcapng
    let s = tracekit::open(&corpus("ndpi__dtls.pcap")).unwrap();
    assert_eq!(s.format(), Some(Format::Pcapng));
    assert_eq!(count(&corpus("ndpi__dtls.pcap")), 24);
    // ".gz" name, plain ERF content: read as ERF
    let s = tracekit::open(&corpus("libtrace__large_legacy.gz")).unwrap();
    assert_eq!(s.format(), Some(Format::Erf));
    assert_eq!(count(&corpus("libtrace__large_legacy.gz")), 31249);
    // not a capture at all
    let err = tracekit::open(&corpus("pcapparser__err-eof.bin"))
        .err()
        .unwrap();
    assert!(
        matches!(err.kind(), tracekit::ErrorKind::UnknownFormat(_)),
        "{err}"
    );
    // compressed: read through the decompressor, format found inside
    let s = tracekit::open(&corpus("libtrace__vlan.pcap.gz")).unwrap();
    assert_eq!(
        (s.format(), s.compression()),
        (Some(Format::Pcap), tracekit::Compression::Gzip)
    );
    assert_eq!(count(&corpus("libtrace__vlan.pcap.gz")), 395);
}

#[test]
fn forced_format_must_match() {
    assert_eq!(
        count(&format!("pcap:{}", corpus("libtrace__vlan.pcap"))),
        395
    );
    let err = tracekit::open(&format!("pcapng:{}", corpus("libtrace__vlan.pcap")))
        .err()
        .unwrap();
    assert!(err.to_string().contains("asked to read pcapng"), "{err}");
}

#[test]
fn missing_file_names_the_path() {
    let err = tracekit::open("/nonexistent/x.pcap").err().unwrap();
    assert!(
        err.to_string().starts_with("/nonexistent/x.pcap: "),
        "{err}"
    );
}

#[test]
fn both_read_modes_agree() {
    for mode in [ReadMode::Mmap, ReadMode::Read] {
        let options = tracekit::OpenOptions {
            read_mode: mode,
            ..Default::default()
        };
        let mut s = tracekit::open_with(&corpus("ndpi__1kxun.pcap"), &options).unwrap();
        let mut summary = tracekit::Summary::default();
        while let Some(p) = s.next_packet().unwrap() {
            summary.add(&p);
        }
        assert_eq!(summary.packets, 1723);
    }
}

#[test]
fn copy_through_the_facade_is_identical() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("copy.pcap");
    let src_path = corpus("zeek__http__get-to-ssh-server.pcap"); // ns, snaplen 2000
    let mut src = tracekit::open(&src_path).unwrap();
    assert_eq!(src.ts_resolution(), TsResolution::NANO);
    let options = CreateOptions {
        ts_resolution: Some(src.ts_resolution()),
        snaplen: src.snaplen(),
        ..CreateOptions::default()
    };
    let mut sink = tracekit::create(out.to_str().unwrap(), &options).unwrap();
    while let Some(p) = src.next_packet().unwrap() {
        sink.write_packet(&p).unwrap();
    }
    let report = sink.finish().unwrap();
    assert_eq!(report.packets, 9);
    assert!(report.lost.is_empty());
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(&src_path).unwrap()
    );
}

#[test]
fn create_needs_a_known_name_or_format() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("x.txt");
    let err = tracekit::create(bad.to_str().unwrap(), &CreateOptions::default())
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("cannot tell the output format"),
        "{err}"
    );
    let forced = CreateOptions {
        format: Some(Format::Pcap),
        ..Default::default()
    };
    let sink = tracekit::create(bad.to_str().unwrap(), &forced).unwrap();
    assert_eq!(sink.finish().unwrap().packets, 0);
    assert_eq!(std::fs::metadata(&bad).unwrap().len(), 24);
}

#[cfg(feature = "libpcap")]
#[test]
fn filtered_packets_are_counted() {
    // every frame of this trace is VLAN-tagged: "icmp" alone matches nothing, as in tcpdump
    let mut s = tracekit::open(&corpus("libtrace__vlan.pcap"))
        .unwrap()
        .with_filter("vlan and icmp")
        .unwrap();
    let mut kept = 0;
    while s.next_packet().unwrap().is_some() {
        kept += 1;
    }
    let stats = s.stats();
    assert_eq!(stats.received, 395);
    assert_eq!(stats.filtered + kept, 395);
    assert_eq!(stats.captured, kept);
    assert!(kept > 0 && stats.filtered > 0);
    let err = tracekit::open(&corpus("libtrace__vlan.pcap"))
        .unwrap()
        .with_filter("tcp port")
        .err()
        .unwrap();
    assert!(err.to_string().contains("syntax error"), "{err}");
    // a fixed program from `tcpdump -ddd ip` (Ethernet)
    let f =
        tracekit::Filter::from_ddd("4\n40 0 0 12\n21 0 1 2048\n6 0 0 262144\n6 0 0 0\n").unwrap();
    let mut s = tracekit::open(&corpus("libtrace__vlan.pcap"))
        .unwrap()
        .with_filter_program(f);
    let mut n = 0;
    while s.next_packet().unwrap().is_some() {
        n += 1;
    }
    assert!(n < 395);
}

/// The error of a name that opens nothing (`open` returns no `Debug`-able source).
fn open_error(uri: &str) -> tracekit::Error {
    match tracekit::open(uri) {
        Ok(_) => panic!("{uri} opened"),
        Err(e) => e,
    }
}

#[test]
fn names_that_are_not_files_say_what_they_might_be() {
    use tracekit::{ErrorKind, FILE_SCHEMES, LIVE_SCHEMES};
    // An unknown scheme (libtrace's `pcapfile:`, `odp:`) lists the known ones.
    for uri in ["pcapfile:/no/such/trace.pcap", "odp:eth0"] {
        let e = open_error(uri);
        assert!(matches!(e.kind(), ErrorKind::InvalidArgument(_)), "{e}");
        let text = e.to_string();
        let scheme = uri.split(':').next().unwrap();
        assert!(
            text.contains(&format!("unknown scheme '{scheme}:'")),
            "{text}"
        );
        for known in FILE_SCHEMES.iter().chain(LIVE_SCHEMES) {
            assert!(
                text.contains(&format!("{known}:")),
                "{known} missing: {text}"
            );
        }
    }
    // A file whose name has a colon still opens, through `file:`.
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("odp:trace.pcap");
    std::fs::copy(corpus("libtrace__100_packets.pcap"), &odd).unwrap();
    assert_eq!(count(odd.to_str().unwrap()), 100);
    assert_eq!(count(&format!("file:{}", odd.display())), 100);
    // A bare interface name (`lo` exists on every Linux machine) suggests the live URI.
    if std::path::Path::new("/sys/class/net/lo").exists() {
        let e = open_error("lo");
        assert!(e.is_not_found());
        assert!(e.to_string().contains("open afpacket:lo"), "{e}");
    }
    // A plain missing file stays the operating system's error.
    let e = open_error("/no/such/dir/trace.pcap");
    assert!(e.is_not_found());
    assert!(!e.to_string().contains("scheme"), "{e}");
}

/// A missing interface is `NotFound`, said once (needs CAP_NET_RAW to get that far).
#[cfg(target_os = "linux")]
#[test]
fn a_missing_interface_is_not_found() {
    let e = open_error("afpacket:nosuch0");
    let text = e.to_string();
    if text.contains("CAP_NET_RAW") {
        eprintln!("not root: skipping ({text})");
        return;
    }
    assert!(e.is_not_found(), "{text}");
    assert_eq!(text.matches("no such").count(), 1, "{text}");
    assert!(text.contains("nosuch0"), "{text}");
}

#[test]
fn try_for_each_lends_every_packet_and_stops_at_the_first_error() {
    // Every packet, its bytes as `next_packet` lends them (the manifest's counts, those
    // of capinfos).
    for (name, packets) in [
        ("libtrace__100_packets.pcap", 100),
        ("libtrace__vlan.pcap.gz", 0),
    ] {
        let uri = corpus(name);
        let mut want = Vec::new();
        let mut s = tracekit::open(&uri).unwrap();
        while let Some(p) = s.next_packet().unwrap() {
            want.push((p.data().to_vec(), p.wire_len(), p.ts()));
        }
        if packets > 0 {
            assert_eq!(want.len(), packets);
        }
        let mut got = Vec::new();
        let mut s = tracekit::open(&uri).unwrap();
        let n = s
            .try_for_each(|p| {
                got.push((p.data().to_vec(), p.wire_len(), p.ts()));
                Ok::<(), tracekit::Error>(())
            })
            .unwrap();
        assert_eq!(n as usize, want.len(), "{name}");
        assert!(got == want, "{name}");
    }
    // A file cut inside record 200: the 199 before, then the source's error.
    let mut s = tracekit::open(&corpus("corrupt__vlan_truncated_midrecord.pcap")).unwrap();
    let mut seen = 0;
    let err = s
        .try_for_each(|_| {
            seen += 1;
            Ok::<(), tracekit::Error>(())
        })
        .unwrap_err();
    assert_eq!(seen, 199, "{err}");
    assert!(err.to_string().contains("record"), "{err}");
    // An error of `f` stops at its packet, in each reader's walk; the failing packet
    // stays the current one, and the next `next_packet` gives the one after it, as
    // after `next_packet`.
    for name in [
        "libtrace__100_packets.pcap",
        "libtrace__100_packets.erf",
        "pcapparser__wireshark_samples-test.pcapng",
    ] {
        let mut s = tracekit::open(&corpus(name)).unwrap();
        let mut seen = 0;
        let r: Result<u64, Box<dyn std::error::Error>> = s.try_for_each(|_| {
            seen += 1;
            match seen {
                7 => Err("enough".into()),
                _ => Ok(()),
            }
        });
        assert_eq!(r.unwrap_err().to_string(), "enough", "{name}");
        assert_eq!(seen, 7, "{name}");
        let mut by_next = tracekit::open(&corpus(name)).unwrap();
        for _ in 0..7 {
            by_next.next_packet().unwrap();
        }
        let current =
            |s: &tracekit::Source| s.current_packet().map(|p| (p.data().to_vec(), *p.meta()));
        let want = current(&by_next);
        assert!(want.is_some() && current(&s) == want, "{name}");
        let next = |s: &mut tracekit::Source| {
            s.next_packet()
                .unwrap()
                .map(|p| (p.data().to_vec(), *p.meta()))
        };
        let want = next(&mut by_next);
        assert!(want.is_some() && next(&mut s) == want, "{name}");
    }
}

/// `tcpdump -ddd greater 100`: a filter for any link type.
const GREATER_100: &str = "4\n128 0 0 0\n53 0 1 100\n6 0 0 262144\n6 0 0 0\n";

/// A source for `uri`, filtered by `filter` (`tcpdump -ddd` output) if given.
fn open_filtered(uri: &str, filter: Option<&str>) -> tracekit::Source {
    let s = tracekit::open(uri).unwrap();
    match filter {
        Some(f) => s.with_filter_program(tracekit::Filter::from_ddd(f).unwrap()),
        None => s,
    }
}

/// What a packet loop saw of a packet: its bytes, its time stamp in nanoseconds and its
/// metadata (time stamp, wire length, link type, interface, direction, loss, kind).
type Seen = (Vec<u8>, u64, tracekit::Meta);

/// Packets received and dropped, and the link types of the first interfaces.
type Counts = (u64, u64, Vec<Option<tracekit::LinkType>>);

/// Every packet and the error a `next_packet` loop meets, with or without a filter,
/// and the source's notes and counts at the end.
fn by_next_packet(
    uri: &str,
    filter: Option<&str>,
) -> (Vec<Seen>, Option<String>, Vec<String>, Counts) {
    let mut s = open_filtered(uri, filter);
    let mut got = Vec::new();
    let err = loop {
        match s.next_packet() {
            Ok(Some(p)) => got.push((p.data().to_vec(), p.ts().as_unix_nanos(), *p.meta())),
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    let counts = (s.stats().received, s.stats().dropped, links(&s));
    (got, err, s.notes(), counts)
}

/// The link type of each of the first four interfaces, as the source last knew it.
fn links(s: &tracekit::Source) -> Vec<Option<tracekit::LinkType>> {
    (0..4)
        .map(|i| s.interface_info(i).map(|info| info.link_type))
        .collect()
}

/// An ERF file of several 1 MiB windows for the ERF reader's window walk: Ethernet
/// records of many lengths with loss counters, interface bits and card flags, among
/// padding, IPv4 records and Ethernet records with an extension header (which the walk
/// leaves to `next_record`), ending with a record shorter than its header.
fn erf_of_several_windows(path: &std::path::Path) {
    let mut out = Vec::new();
    let mut x = 0x2545_f491_u32;
    for i in 0..4000u32 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let (ty, ext) = match i % 50 {
            7 => (48u8, false),
            19 => (22, false),
            33 => (2, true),
            _ => (2, false),
        };
        let body = 20 + (x % 1400) as usize;
        let framing = if ext { 24 } else { 16 };
        let pad = if ty == 2 { 2 } else { 0 };
        let rlen = framing + pad + body;
        let ts = (u64::from(1_600_000_000 + i) << 32) | u64::from(x);
        out.extend_from_slice(&ts.to_le_bytes());
        out.push(if ext { ty | 0x80 } else { ty });
        // Interface bits, and now and then "truncated" or a receive error.
        let flags = (x >> 8) as u8 & 0x03
            | if i % 97 == 5 { 0x08 } else { 0 }
            | if i % 89 == 3 { 0x10 } else { 0 };
        out.push(flags);
        out.extend_from_slice(&(rlen as u16).to_be_bytes());
        let lctr = if i % 13 == 0 {
            (x >> 20) as u16 & 0xff
        } else {
            0
        };
        out.extend_from_slice(&lctr.to_be_bytes());
        // Wire length: sometimes shorter than what was captured (FCS-less).
        let wlen = if i % 7 == 0 { body - 4 } else { body + 4 };
        out.extend_from_slice(&(wlen as u16).to_be_bytes());
        if ext {
            // One extension header (type 1, no more follow).
            out.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
        }
        out.extend(std::iter::repeat_n(0u8, pad));
        out.extend((0..body).map(|k| (k as u32 ^ x) as u8));
    }
    // A last record whose length is shorter than its header.
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0x61, 2, 0, 0, 8, 0, 0, 0, 60]);
    assert!(out.len() > 2 << 20);
    std::fs::write(path, out).unwrap();
}

#[test]
fn try_for_each_meets_what_next_packet_meets_in_every_format() {
    // Each reader's own loop (pcap, pcapng, ERF, legacy DAG) and the filtered one: the
    // same packets, and the same error with the same offsets (in a compressed file, the
    // offsets are marked as decompressed ones: a pcap cut inside a record, gzipped).
    let dir = tempfile::tempdir().unwrap();
    let cut_gz = dir.path().join("cut.pcap.gz");
    let out = std::process::Command::new("gzip")
        .arg("-c")
        .arg(corpus("corrupt__vlan_truncated_midrecord.pcap"))
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::write(&cut_gz, out.stdout).unwrap();
    let cut_gz = cut_gz.to_str().unwrap().to_string();
    let erf = dir.path().join("windows.erf");
    erf_of_several_windows(&erf);
    let erf = erf.to_str().unwrap().to_string();
    assert!(
        by_next_packet(&cut_gz, None)
            .1
            .unwrap()
            .contains("decompressed")
    );
    for name in [
        cut_gz.as_str(),
        "libtrace__100_packets.pcap",
        "zeek__pcapng-multi-interface.pcapng",
        "libtrace__100_packets.erf",
        "libtrace__vlan.pcap.gz",
        "corrupt__100_packets_truncated.pcapng",
        "corrupt__100_packets_bad_caplen.pcap",
        "corrupt__100_packets_rlen_short.erf",
        "corrupt__fragtest_truncated_stream.erf.gz",
        // pcap's own loop walks a window's records apart from `next_packet`: byte
        // orders, resolutions, the modified format, records that get a note, and files
        // of several 1 MiB windows (records that cross from one to the next).
        "swapbe_nsec__libtrace__100_packetsns.pcap",
        "libtrace__100_packetsns.pcap",
        "pcapparser__modified-format.pcap",
        "corrupt__100_packetsns_caplen_over_snaplen.pcap",
        "ndpi__1kxun.pcap",
        "zeek__smb__smb2.pcap",
        // And pcapng's: big-endian with several interfaces and block kinds, sections of
        // either byte order in one file, a file of several windows.
        "libtrace__complex.pcapng",
        "pcapnggen__test202_le.pcapng",
        "pcapnggen__test202_be.pcapng",
        "pcapparser__wireshark_samples-test.pcapng",
        // And ERF's: extension headers, tunnels, provenance (META) records, fragments,
        // and a file of several windows with losses, flags, padding and other types.
        "erfconv__zeek__q-in-q_ext.erf",
        "erfconv__zeek__tunnels__6in4.erf",
        "libtrace__provenance.erf",
        "libtrace__fragtest.erf.gz",
        erf.as_str(),
    ] {
        let uri = if name.starts_with('/') {
            name.to_string()
        } else {
            corpus(name)
        };
        for filter in [None, Some(GREATER_100)] {
            let (want, want_err, want_notes, (want_received, want_dropped, want_links)) =
                by_next_packet(&uri, filter);
            let mut s = open_filtered(&uri, filter);
            let mut got = Vec::new();
            let r = s.try_for_each(|p| {
                got.push((p.data().to_vec(), p.ts().as_unix_nanos(), *p.meta()));
                Ok::<(), tracekit::Error>(())
            });
            assert_eq!(s.notes(), want_notes, "{name} {filter:?}");
            if name.contains("caplen_over_snaplen") {
                assert!(!want_notes.is_empty(), "{name}");
            }
            if name == erf {
                // Losses, the card's flags, padding and extension headers were met,
                // and the damage at the end.
                assert!(want_dropped > 0 && want_notes.len() == 3, "{want_notes:?}");
                assert!(want_err.as_deref().is_some_and(|e| e.contains("length 8")));
            }
            assert_eq!(s.stats().received, want_received, "{name} {filter:?}");
            assert_eq!(s.stats().dropped, want_dropped, "{name} {filter:?}");
            assert_eq!(links(&s), want_links, "{name} {filter:?}");
            // (The packets of the modified-format, 6in4 and provenance files are
            // shorter than the filter asks.)
            let all_short = ["modified-format", "6in4", "provenance"];
            assert!(
                !want.is_empty()
                    || (filter.is_some() && all_short.iter().any(|s| name.contains(s))),
                "{name} {filter:?}"
            );
            assert!(
                got == want,
                "{name} {filter:?}: {} against {}",
                got.len(),
                want.len()
            );
            match (r, want_err) {
                (Ok(n), None) => assert_eq!(n as usize, want.len(), "{name}"),
                (Err(e), Some(w)) => assert_eq!(e.to_string(), w, "{name} {filter:?}"),
                (r, w) => panic!("{name} {filter:?}: {r:?} against {w:?}"),
            }
        }
    }
}
