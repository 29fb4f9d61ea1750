//! `copy_until` (the reader's own loop) writes what `copy_while` (a `next_packet` loop)
//! writes, and `copy_rewriting_until` what `copy_rewriting_while` writes: on every corpus file, damaged ones included, into pcapng (where interfaces
//! are described before their first packet, also interfaces that first appear in the
//! middle of a file) and pcap, the output files are byte-identical, the counts equal and
//! the errors the same; a stop asked for after the n-th packet stops both there.
//!
//! A pcap file copied into pcap as `tracekit convert` copies it (the input's resolution,
//! snap length and link type) goes through `copy_until`'s verbatim runs: those outputs
//! too are byte-identical to `copy_while`'s, on every corpus pcap file and on generated
//! files with the records a run must leave to the reader (longer than the snap length,
//! a fraction of a second out of range, records across the reader's windows and the
//! writer's buffers, other byte orders).

use tracekit::{CopyError, CreateOptions, Source, TsResolution};
use tracekit_testdata::{corpus_uri, manifest};

/// What a copy returned: packets written, and the error's side and text.
type Outcome = (u64, Option<(&'static str, String)>);

fn outcome(r: Result<u64, (CopyError, u64)>) -> Outcome {
    match r {
        Ok(n) => (n, None),
        Err((CopyError::Read(e), n)) => (n, Some(("read", e.to_string()))),
        Err((CopyError::Write(e), n)) => (n, Some(("write", e.to_string()))),
    }
}

/// Copies `input` into `out` (its extension names the format) with `copy_until` or
/// `copy_while` (their rewriting forms, which invert every byte, when `rewriting`),
/// stopping after `stop_after` packets if given; the outcome and the file's bytes (when
/// the copy finished).
fn copy(
    input: &str,
    out: &std::path::Path,
    until: bool,
    rewriting: bool,
    stop_after: Option<u64>,
) -> (Outcome, Option<Vec<u8>>) {
    let nanos = |source: &Source| CreateOptions {
        ts_resolution: Some(TsResolution::NANO),
        allow_precision_loss: true,
        link_type: source.declared_link_type(),
        ..CreateOptions::default()
    };
    let way = if until { Way::Until } else { Way::While };
    copy_with(input, out, way, rewriting, stop_after, nanos)
}

/// Which copy: `copy_while`, `copy_until`, or `copy_until` with its verbatim runs all
/// written on the calling thread (`Direct`) or all handed to the output's writer thread
/// (`HandedOver`, in the reader's shared windows), where `copy_until` itself chooses by
/// how long a write takes; the `Mapped` ways read the input through a mapping, whose
/// runs are handed over in it, and `Remapped` maps the file read with `read()` when it
/// hands runs over, as `copy_until` does for short records.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Way {
    While,
    Until,
    Direct,
    HandedOver,
    MappedDirect,
    MappedHandedOver,
    Remapped,
}

impl Way {
    /// Every way `copy_until` may write a pcap file's verbatim runs.
    const VERBATIM: [Way; 6] = [
        Way::Until,
        Way::Direct,
        Way::HandedOver,
        Way::MappedDirect,
        Way::MappedHandedOver,
        Way::Remapped,
    ];
}

/// [`copy`] with the output's options made from the source.
fn copy_with(
    input: &str,
    out: &std::path::Path,
    way: Way,
    rewriting: bool,
    stop_after: Option<u64>,
    options: impl Fn(&Source) -> CreateOptions,
) -> (Outcome, Option<Vec<u8>>) {
    let read_mode = match way {
        Way::MappedDirect | Way::MappedHandedOver => tracekit::ReadMode::Mmap,
        _ => tracekit::ReadMode::Read,
    };
    let open = tracekit::OpenOptions {
        read_mode,
        ..tracekit::OpenOptions::default()
    };
    let mut source = tracekit::open_with(input, &open).unwrap();
    let options = options(&source);
    let _ = std::fs::remove_file(out);
    let mut sink = tracekit::create(out.to_str().unwrap(), &options).unwrap();
    let mut seen = 0u64;
    let mut go_on = move || {
        seen += 1;
        stop_after.is_none_or(|n| seen < n)
    };
    let invert = |data: &mut [u8], _: &tracekit::Meta| data.iter_mut().for_each(|b| *b = !*b);
    let after = |slow, map| {
        move |source: &mut Source, sink: &mut tracekit::Sink, go_on| {
            tracekit::copy_until_handing_over_after(source, sink, go_on, slow, map)
        }
    };
    let (never, now) = (std::time::Duration::MAX, std::time::Duration::ZERO);
    let r = match (way, rewriting) {
        (Way::Until, false) => tracekit::copy_until(&mut source, &mut sink, go_on),
        (Way::Direct | Way::MappedDirect, false) => after(never, 0)(&mut source, &mut sink, go_on),
        (Way::HandedOver | Way::MappedHandedOver, false) => {
            after(now, 0)(&mut source, &mut sink, go_on)
        }
        (Way::Remapped, false) => after(now, usize::MAX)(&mut source, &mut sink, go_on),
        (Way::While, false) => tracekit::copy_while(&mut source, &mut sink, |_| go_on()),
        (Way::While, true) => {
            tracekit::copy_rewriting_while(&mut source, &mut sink, invert, |_| go_on())
        }
        (_, true) => tracekit::copy_rewriting_until(&mut source, &mut sink, invert, go_on),
    };
    let result = outcome(r);
    let bytes = match result.1 {
        Some(("write", _)) => {
            sink.salvage();
            None
        }
        _ => {
            sink.finish().unwrap();
            Some(std::fs::read(out).unwrap())
        }
    };
    (result, bytes)
}

#[test]
fn copy_until_writes_what_copy_while_writes_on_every_corpus_file() {
    let dir = tempfile::tempdir().unwrap();
    let (mut files, mut multi, mut damaged, mut stopped, mut rewritten) = (0, 0, 0, 0, 0);
    for entry in manifest() {
        let input = corpus_uri(&entry.file);
        // Files whose format must be named (legacy formats) are left out.
        if tracekit::open(&input).is_err() {
            continue;
        }
        for ext in ["pcapng", "pcap"] {
            for (stop_after, rewriting) in [(None, false), (Some(3), false), (None, true)] {
                let out = |side: &str| dir.path().join(format!("{side}.{ext}"));
                let a = copy(&input, &out("a"), true, rewriting, stop_after);
                let b = copy(&input, &out("b"), false, rewriting, stop_after);
                let case = format!(
                    "{} -> {ext}, stop {stop_after:?}, rewriting {rewriting}",
                    entry.file
                );
                assert_eq!(a.0, b.0, "{case}");
                assert!(a.1 == b.1, "{case}: the files differ");
                if rewriting && a.0.0 > 0 && a.1.is_some() {
                    rewritten += 1;
                }
                if ext == "pcapng" && stop_after.is_none() && !rewriting {
                    if matches!(a.0.1, Some(("read", _))) {
                        damaged += 1;
                    }
                    let mut interfaces = 0;
                    if a.1.is_some() {
                        let out = dir.path().join("a.pcapng");
                        let mut s = tracekit::open(out.to_str().unwrap()).unwrap();
                        while let Ok(Some(p)) = s.next_packet() {
                            interfaces = interfaces.max(p.meta().interface);
                        }
                    }
                    if interfaces > 0 {
                        multi += 1;
                    }
                }
                if stop_after.is_some() && a.0.0 == 3 && a.0.1.is_none() {
                    stopped += 1;
                }
            }
        }
        files += 1;
    }
    assert!(files > 100, "only {files} files");
    assert!(multi > 5, "only {multi} files with several interfaces");
    assert!(damaged > 3, "only {damaged} damaged files");
    assert!(
        stopped > 100,
        "only {stopped} copies stopped after 3 packets"
    );
    assert!(rewritten > 100, "only {rewritten} rewritten copies");
}

/// The options `tracekit convert` writes pcap with: the input's resolution (ns for
/// anything but µs), its snap length (or `snaplen`) and its link type.
fn as_convert(snaplen: Option<u32>) -> impl Fn(&Source) -> CreateOptions {
    move |source: &Source| {
        let resolution = if source.ts_resolution() == TsResolution::MICRO {
            TsResolution::MICRO
        } else {
            TsResolution::NANO
        };
        CreateOptions {
            ts_resolution: Some(resolution),
            allow_precision_loss: true,
            snaplen: snaplen.or(source.snaplen().filter(|s| *s != 0)),
            link_type: source.declared_link_type(),
            ..CreateOptions::default()
        }
    }
}

/// Copies `input` into pcap with `copy_until` (each way of writing its runs) and
/// `copy_while` as `convert` does, with each stop and snap length, and asserts the same
/// outcome and bytes; returns how many copies finished with more than one packet
/// written.
fn compare_as_convert(input: &str, dir: &std::path::Path, stops: &[Option<u64>]) -> u32 {
    let mut whole = 0;
    for &stop_after in stops {
        for snaplen in [None, Some(64)] {
            let copy = |way, name| {
                let out = dir.join(name);
                copy_with(input, &out, way, false, stop_after, as_convert(snaplen))
            };
            let b = copy(Way::While, "b.pcap");
            for way in Way::VERBATIM {
                let a = copy(way, "a.pcap");
                let case = format!(
                    "{input} -> pcap, {way:?}, stop {stop_after:?}, snap length {snaplen:?}"
                );
                assert_eq!(a.0, b.0, "{case}");
                assert!(a.1 == b.1, "{case}: the files differ");
                if way == Way::Until && a.0.0 > 1 && a.1.is_some() {
                    whole += 1;
                }
            }
        }
    }
    whole
}

#[test]
fn verbatim_runs_write_what_copy_while_writes_on_every_corpus_pcap_file() {
    let dir = tempfile::tempdir().unwrap();
    let (mut files, mut verbatim) = (0, 0);
    for entry in manifest() {
        let input = corpus_uri(&entry.file);
        let Ok(source) = tracekit::open(&input) else {
            continue;
        };
        let Some(reader) = source.as_pcap() else {
            continue;
        };
        // Files whose records a run can take: this machine's byte order, µs or ns.
        let header = reader.header();
        if header.byte_order == tracekit::pcap::ByteOrder::NATIVE
            && !header.modified
            && matches!(header.resolution, TsResolution::MICRO | TsResolution::NANO)
        {
            verbatim += 1;
        }
        files += 1;
        compare_as_convert(&input, dir.path(), &[None, Some(1), Some(2), Some(7)]);
    }
    assert!(files > 40, "only {files} pcap files");
    assert!(verbatim > 30, "only {verbatim} files a run can copy");
}

/// Writes a pcap file of `n` records by hand, in `order`, µs or ns, snap length 1500,
/// Ethernet, with the records a verbatim run leaves to the reader here and there: a
/// fraction of a second out of range (every 1000th), longer than the snap length (every
/// 997th: 1600 bytes, or 70,000, more than a write buffer's spare room), and records of
/// random lengths in between, so that records cross the reader's 1 MiB windows and the
/// writer's buffers.
fn synthetic(path: &std::path::Path, n: u32, big_endian: bool, nanos: bool) {
    let mut out = Vec::new();
    let put32 = |out: &mut Vec<u8>, v: u32| {
        out.extend_from_slice(&if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    };
    let put16 = |out: &mut Vec<u8>, v: u16| {
        out.extend_from_slice(&if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    };
    put32(&mut out, if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
    put16(&mut out, 2);
    put16(&mut out, 4);
    put32(&mut out, 0);
    put32(&mut out, 0);
    put32(&mut out, 1500);
    put32(&mut out, 1);
    let per_sec = if nanos { 1_000_000_000 } else { 1_000_000 };
    let mut x: u32 = 12345;
    for i in 0..n {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let caplen = match i % 997 {
            10 => 1600,
            500 => 70_000,
            _ => 14 + (x >> 8) % 1487,
        };
        let wire = caplen + if i % 3 == 0 { 20 } else { 0 };
        let frac = if i % 1000 == 5 {
            per_sec + 17
        } else {
            (x >> 2) % per_sec
        };
        put32(&mut out, 1_700_000_000 + i / 10);
        put32(&mut out, frac);
        put32(&mut out, caplen);
        put32(&mut out, wire);
        out.extend((0..caplen).map(|j| (i as u8) ^ (j as u8)));
    }
    std::fs::write(path, out).unwrap();
}

#[test]
fn verbatim_runs_leave_the_records_they_cannot_copy_to_the_reader() {
    let dir = tempfile::tempdir().unwrap();
    let n = 12_000;
    for (big_endian, nanos) in [(false, false), (false, true), (true, false)] {
        let input = dir.path().join("in.pcap");
        synthetic(&input, n, big_endian, nanos);
        let input = input.to_str().unwrap().to_owned();
        let stops = [None, Some(1), Some(2), Some(2_341), Some(9_999)];
        let whole = compare_as_convert(&input, dir.path(), &stops);
        assert_eq!(whole, 8, "big-endian {big_endian}, ns {nanos}");
        // Every record is there, the long ones cut to the snap length.
        let (outcome, bytes) = copy_with(
            &input,
            &dir.path().join("a.pcap"),
            Way::Until,
            false,
            None,
            as_convert(None),
        );
        assert_eq!(outcome, (u64::from(n), None));
        let bytes = bytes.unwrap();
        let cut = (0..n).filter(|i| matches!(i % 997, 10 | 500)).count();
        assert!(cut > 20, "{cut}");
        let mut reader = tracekit::open(dir.path().join("a.pcap").to_str().unwrap()).unwrap();
        let (mut packets, mut longest) = (0u32, 0usize);
        while let Some(p) = reader.next_packet().unwrap() {
            packets += 1;
            longest = longest.max(p.caplen());
        }
        assert_eq!((packets, longest), (n, 1500));
        assert!(bytes.len() > 4 << 20, "{} bytes", bytes.len());
    }
}

#[test]
fn a_source_stopped_in_a_verbatim_run_reads_on_from_the_next_packet() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.pcap");
    let n = 6_000;
    synthetic(&input, n, false, false);
    let input = input.to_str().unwrap();
    // Each way: written on this thread, handed over in shared windows, in a mapping
    // made from here, in the mapping the file was opened with.
    let (never, now) = (std::time::Duration::MAX, std::time::Duration::ZERO);
    let (read, mapped) = (tracekit::ReadMode::Read, tracekit::ReadMode::Mmap);
    let ways = [
        (never, 0, read),
        (now, 0, read),
        (now, usize::MAX, read),
        (never, 0, mapped),
        (now, 0, mapped),
    ];
    for (stop, (slow, map, read_mode)) in [1u64, 2, 1_500, 4_321]
        .into_iter()
        .flat_map(|stop| ways.map(|way| (stop, way)))
    {
        let open = tracekit::OpenOptions {
            read_mode,
            ..tracekit::OpenOptions::default()
        };
        let mut source = tracekit::open_with(input, &open).unwrap();
        let mut sink = tracekit::create(
            dir.path().join("o.pcap").to_str().unwrap(),
            &as_convert(None)(&source),
        )
        .unwrap();
        let mut seen = 0;
        let go_on = || {
            seen += 1;
            seen < stop
        };
        let copied =
            tracekit::copy_until_handing_over_after(&mut source, &mut sink, go_on, slow, map)
                .unwrap();
        assert_eq!(copied, stop);
        sink.finish().unwrap();
        // The rest, read on from the same source, is what a fresh reader has after
        // `stop` packets.
        let mut fresh = tracekit::open(input).unwrap();
        for _ in 0..stop {
            fresh.next_packet().unwrap().unwrap();
        }
        let mut rest = 0u64;
        while let Some(p) = source.next_packet().unwrap() {
            let q = fresh.next_packet().unwrap().expect("as many packets");
            assert_eq!(
                (p.meta(), p.data()),
                (q.meta(), q.data()),
                "packet {}",
                stop + rest + 1
            );
            rest += 1;
        }
        assert!(fresh.next_packet().unwrap().is_none());
        assert_eq!(rest, u64::from(n) - stop);
    }
}
