//! tracekit: read, write, convert, filter, decode and capture packet traces through one
//! safe, zero-copy API.
//!
//! This is the crate to depend on. It puts the format crates (classic pcap, pcapng and ERF
//! files, compressed or not), live capture on Linux, tcpdump filters and the protocol
//! decoder behind one [`Source`] and one [`Sink`], and adds what tools built on them share:
//! [`copy`] with interface descriptions, [`merge`], [`analysis`] tables, split outputs
//! ([`PartWriter`]) and [`parallel`] processing on every core. Each section below shows one
//! task; the examples run as they are (hidden lines write the small trace they read).
//!
//! Also: legacy trace files, read only ([`legacy`]: pre-ERF DAG files `legacyatm:`,
//! `legacyeth:`, `legacypos:`, `legacynzix:`; NLANR `tsh:` and `fr+:`, recognised by
//! content as `tsh`; ATM cell headers `atmhdr:`; the others named by prefix), Endace DAG cards
//! (`dag:` URIs, feature `dag`), flows, IP reassembly and TCP streams ([`flow`]),
//! anonymisation ([`anon`]) and trace comparison ([`mod@diff`]).
//!
//! # Reading any trace
//!
//! [`open`] takes a path and detects the format from the content (never the name) after
//! undoing any compression (gzip, bzip2, zstd, xz, lz4); `-` is standard input,
//! `pcap:path`, `pcapng:path` or `erf:path` insist on a format, and [`open_with`] takes
//! [`OpenOptions`]. [`Source::next_packet`] lends each packet straight out of the
//! read buffer: no copy and no allocation per packet, and the borrow checker makes sure a
//! packet is not used after its buffer is reused ([`Packet::to_owned`] keeps one). A
//! damaged trace gives every good packet first, then an error naming the file, the packet
//! and the byte offset.
//!
//! ```
//! use tracekit::Summary;
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("trace.pcapng.gz");
//! # let path = path.to_str().unwrap();
//! # {
//! #     // Three TCP SYNs (Ethernet, IPv4 10.0.0.1 -> 10.0.0.2, MSS 1460) to ports 80, 443, 80.
//! #     const SYN: [u8; 58] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0, 0x45, 0, 0, 44, 0, 1, 0x40, 0, 64, 6, 0x26, 0xc9, 10, 0, 0, 1, 10, 0, 0, 2, 0x9c, 0x40, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x60, 2, 0xff, 0xff, 0, 0, 0, 0, 2, 4, 5, 0xb4];
//! #     let mut sink = tracekit::create(path, &Default::default())?;
//! #     for (i, port) in [80u16, 443, 80].into_iter().enumerate() {
//! #         let mut frame = SYN;
//! #         frame[36..38].copy_from_slice(&port.to_be_bytes());
//! #         let ts = tracekit::Timestamp::from_nanos(1_700_000_000 + i as u32, 0);
//! #         sink.write_packet(&tracekit::Packet::new(&frame, tracekit::Meta::new(ts, 58, tracekit::LinkType::ETHERNET)))?;
//! #     }
//! #     sink.finish()?;
//! # }
//! let mut source = tracekit::open(path)?; // "trace.pcapng.gz": pcapng inside gzip
//! let mut summary = Summary::default();
//! while let Some(packet) = source.next_packet()? {
//!     summary.add(&packet); // packet.data(), packet.ts(), packet.wire_len(), packet.meta()
//! }
//! println!("{} {:?}: {} packets, {} bytes", source.format_name(), source.compression(),
//!     summary.packets, summary.captured_bytes);
//! assert_eq!((source.format_name(), summary.packets), ("pcapng", 3));
//! # Ok::<(), tracekit::Error>(())
//! ```
//!
//! # Writing
//!
//! [`create`] opens an output whose format and compression come from its name
//! (`out.pcap`, `out.pcapng.zst`, `-` for standard output) unless [`CreateOptions`] says
//! otherwise; compression runs on worker threads. [`Sink::finish`] flushes and says what
//! the format could not carry (a pcap file has no interface ids or comments): nothing is
//! dropped silently, and a precision loss (ns to µs) is refused unless allowed. A file is
//! written under a temporary name and renamed into place when complete; [`create_checked`]
//! also refuses to overwrite one of the inputs, and [`Sink::salvage`] keeps the whole
//! packets written before a failure.
//!
//! ```
//! use tracekit::{CreateOptions, LinkType, Meta, Packet, Timestamp, TsResolution};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("trace.pcapng.gz");
//! # let path = path.to_str().unwrap();
//! # {
//! #     // Three TCP SYNs (Ethernet, IPv4 10.0.0.1 -> 10.0.0.2, MSS 1460) to ports 80, 443, 80.
//! #     const SYN: [u8; 58] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0, 0x45, 0, 0, 44, 0, 1, 0x40, 0, 64, 6, 0x26, 0xc9, 10, 0, 0, 1, 10, 0, 0, 2, 0x9c, 0x40, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x60, 2, 0xff, 0xff, 0, 0, 0, 0, 2, 4, 5, 0xb4];
//! #     let mut sink = tracekit::create(path, &Default::default())?;
//! #     for (i, port) in [80u16, 443, 80].into_iter().enumerate() {
//! #         let mut frame = SYN;
//! #         frame[36..38].copy_from_slice(&port.to_be_bytes());
//! #         let ts = tracekit::Timestamp::from_nanos(1_700_000_000 + i as u32, 0);
//! #         sink.write_packet(&tracekit::Packet::new(&frame, tracekit::Meta::new(ts, 58, tracekit::LinkType::ETHERNET)))?;
//! #     }
//! #     sink.finish()?;
//! # }
//! # let out = dir.path().join("syns.pcap.zst");
//! # let out = out.to_str().unwrap();
//! let mut source = tracekit::open(path)?;
//! let options = CreateOptions { ts_resolution: Some(TsResolution::NANO), ..Default::default() };
//! let mut sink = tracekit::create(out, &options)?; // "syns.pcap.zst": pcap, zstd-compressed
//! while let Some(packet) = source.next_packet()? {
//!     sink.write_packet(&packet)?;
//! }
//! // A packet of your own: its bytes and its metadata.
//! let frame = [0u8; 60];
//! let meta = Meta::new(Timestamp::from_nanos(1_700_000_100, 5), 60, LinkType::ETHERNET);
//! sink.write_packet(&Packet::new(&frame, meta))?;
//! let report = sink.finish()?; // Ok: the file is complete
//! if let Some(lost) = report.loss_summary() {
//!     eprintln!("{lost}"); // what pcap could not carry
//! }
//! assert_eq!(tracekit::open(out)?.compression(), tracekit::Compression::Zstd);
//! # Ok::<(), tracekit::Error>(())
//! ```
//!
//! # Decoding
//!
//! [`decode::Decoded`] wraps a packet and decodes nothing until asked; each accessor
//! decodes only as far as it must and remembers where the layers start. Link layers from
//! Ethernet to 802.11, VLAN/MPLS/PPPoE, IPv4/IPv6 with extension headers, TCP/UDP/ICMP/SCTP,
//! tunnels ([`decode::Decoded::inner`]) and DNS ([`decode::dns`]). No input panics or
//! allocates: truncated or malformed headers become named anomalies and the layers behind
//! them `None`.
//!
//! ```
//! use tracekit::decode::{Decoded, TcpOption};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("trace.pcapng.gz");
//! # let path = path.to_str().unwrap();
//! # {
//! #     // Three TCP SYNs (Ethernet, IPv4 10.0.0.1 -> 10.0.0.2, MSS 1460) to ports 80, 443, 80.
//! #     const SYN: [u8; 58] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0, 0x45, 0, 0, 44, 0, 1, 0x40, 0, 64, 6, 0x26, 0xc9, 10, 0, 0, 1, 10, 0, 0, 2, 0x9c, 0x40, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x60, 2, 0xff, 0xff, 0, 0, 0, 0, 2, 4, 5, 0xb4];
//! #     let mut sink = tracekit::create(path, &Default::default())?;
//! #     for (i, port) in [80u16, 443, 80].into_iter().enumerate() {
//! #         let mut frame = SYN;
//! #         frame[36..38].copy_from_slice(&port.to_be_bytes());
//! #         let ts = tracekit::Timestamp::from_nanos(1_700_000_000 + i as u32, 0);
//! #         sink.write_packet(&tracekit::Packet::new(&frame, tracekit::Meta::new(ts, 58, tracekit::LinkType::ETHERNET)))?;
//! #     }
//! #     sink.finish()?;
//! # }
//! let mut source = tracekit::open(path)?;
//! let mut syns = Vec::new();
//! while let Some(packet) = source.next_packet()? {
//!     let d = Decoded::new(&packet); // free: nothing decoded yet
//!     let Some(tcp) = d.tcp() else { continue }; // walks link, VLAN/MPLS and IP once
//!     if tcp.syn() {
//!         let mss = tcp.options().find_map(|o| match o {
//!             TcpOption::Mss(mss) => Some(mss),
//!             _ => None,
//!         });
//!         syns.push((d.src_addr().unwrap().to_string(), d.dst_port().unwrap(), mss));
//!     }
//!     assert!(d.anomalies().is_empty());
//! }
//! assert_eq!(syns[1], ("10.0.0.1".to_string(), 443, Some(1460)));
//! # Ok::<(), tracekit::Error>(())
//! ```
//!
//! # Filters
//!
//! [`Source::with_filter`] keeps the packets a tcpdump expression accepts. The expression
//! is compiled by the system libpcap (feature `libpcap`; the library is loaded at run
//! time), once per link type the trace holds, and run by tracekit's own classic-BPF
//! virtual machine on the borrowed bytes; [`Stats::filtered`] counts what it dropped.
//! Without libpcap, [`Filter::from_ddd`] takes a program that `tcpdump -ddd` printed:
//!
//! ```
//! use tracekit::Filter;
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("trace.pcapng.gz");
//! # let path = path.to_str().unwrap();
//! # {
//! #     // Three TCP SYNs (Ethernet, IPv4 10.0.0.1 -> 10.0.0.2, MSS 1460) to ports 80, 443, 80.
//! #     const SYN: [u8; 58] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0, 0x45, 0, 0, 44, 0, 1, 0x40, 0, 64, 6, 0x26, 0xc9, 10, 0, 0, 1, 10, 0, 0, 2, 0x9c, 0x40, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x60, 2, 0xff, 0xff, 0, 0, 0, 0, 2, 4, 5, 0xb4];
//! #     let mut sink = tracekit::create(path, &Default::default())?;
//! #     for (i, port) in [80u16, 443, 80].into_iter().enumerate() {
//! #         let mut frame = SYN;
//! #         frame[36..38].copy_from_slice(&port.to_be_bytes());
//! #         let ts = tracekit::Timestamp::from_nanos(1_700_000_000 + i as u32, 0);
//! #         sink.write_packet(&tracekit::Packet::new(&frame, tracekit::Meta::new(ts, 58, tracekit::LinkType::ETHERNET)))?;
//! #     }
//! #     sink.finish()?;
//! # }
//! // `tcpdump -ddd -y EN10MB 'tcp dst port 80'`; with libpcap:
//! // tracekit::open(path)?.with_filter("tcp dst port 80")?
//! let http = Filter::from_ddd(
//!     "16\n40 0 0 12\n21 0 4 34525\n48 0 0 20\n21 0 11 6\n40 0 0 56\n21 8 9 80\n\
//!      21 0 8 2048\n48 0 0 23\n21 0 6 6\n40 0 0 20\n69 4 0 8191\n177 0 0 14\n72 0 0 16\n\
//!      21 0 1 80\n6 0 0 262144\n6 0 0 0\n",
//! )?;
//! let mut web = tracekit::open(path)?.with_filter_program(http);
//! let mut kept = 0;
//! while let Some(_packet) = web.next_packet()? {
//!     kept += 1;
//! }
//! assert_eq!((kept, web.stats().filtered), (2, 1));
//! # Ok::<(), tracekit::Error>(())
//! ```
//!
//! # Live capture
//!
//! With the `live` feature (on by default; Linux), `afpacket:IFACE` (alias `ring:`) opens
//! a live capture through the same [`open`]: a `TPACKET_V3` ring whose packets are lent
//! straight from kernel memory, VLAN tags put back, filters in the kernel when that gives
//! the same verdict. [`open_members`] opens a `PACKET_FANOUT` group of several rings (one
//! per thread) and [`live`] (`tracekit-afpacket`) has the ring, fan-out and configuration
//! details. Capturing needs `CAP_NET_RAW` (or root).
//!
//! ```no_run
//!
//! let mut live = tracekit::open("afpacket:eth0")?.with_filter("tcp port 443")?;
//! let mut sink = tracekit::create("https.pcapng.zst", &Default::default())?;
//! while let Some(packet) = live.next_packet()? {
//!     sink.write_packet(&packet)?;
//!     if sink.packets_out() == 10_000 {
//!         break;
//!     }
//! }
//! sink.finish()?;
//! let stats = live.stats();
//! println!("{} received, {} dropped by the kernel", stats.received, stats.dropped);
//! # Ok::<(), tracekit::Error>(())
//! ```
//!
//! # On every core
//!
//! [`parallel::Parallel`] reads a trace on a thread of its own and deals the packets to
//! [`parallel::Worker`]s: by flow by default (both directions of a conversation and every
//! fragment of a datagram reach the same worker, in file order), in turn, or by your
//! function. Workers borrow the packets from the reader's buffers (no copy); what they
//! emit reaches the caller as it comes or in stream order, ticks reach every worker at the
//! same point of the stream, and the workers come back at the end for a reduce.
//! [`parallel::Parallel::run_members`] runs the same workers on the members of a live
//! fan-out group.
//!
//! ```
//! use tracekit::decode::Decoded;
//! use tracekit::parallel::{Emit, Order, Parallel, Worker};
//! use tracekit::{Error, Packet};
//!
//! /// Counts the SYNs it sees and emits each one's destination port.
//! struct Syns(u64);
//!
//! impl Worker for Syns {
//!     type Item = u16;
//!     fn packet(&mut self, packet: &Packet<'_>, out: &mut Emit<'_, u16>) -> Result<(), Error> {
//!         let d = Decoded::new(packet);
//!         if d.tcp().is_some_and(|tcp| tcp.syn()) {
//!             self.0 += 1;
//!             out.emit(d.dst_port().unwrap_or(0));
//!         }
//!         Ok(())
//!     }
//! }
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("trace.pcapng.gz");
//! # let path = path.to_str().unwrap();
//! # {
//! #     // Three TCP SYNs (Ethernet, IPv4 10.0.0.1 -> 10.0.0.2, MSS 1460) to ports 80, 443, 80.
//! #     const SYN: [u8; 58] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0, 0x45, 0, 0, 44, 0, 1, 0x40, 0, 64, 6, 0x26, 0xc9, 10, 0, 0, 1, 10, 0, 0, 2, 0x9c, 0x40, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x60, 2, 0xff, 0xff, 0, 0, 0, 0, 2, 4, 5, 0xb4];
//! #     let mut sink = tracekit::create(path, &Default::default())?;
//! #     for (i, port) in [80u16, 443, 80].into_iter().enumerate() {
//! #         let mut frame = SYN;
//! #         frame[36..38].copy_from_slice(&port.to_be_bytes());
//! #         let ts = tracekit::Timestamp::from_nanos(1_700_000_000 + i as u32, 0);
//! #         sink.write_packet(&tracekit::Packet::new(&frame, tracekit::Meta::new(ts, 58, tracekit::LinkType::ETHERNET)))?;
//! #     }
//! #     sink.finish()?;
//! # }
//! let mut source = tracekit::open(path)?;
//! let mut ports = Vec::new();
//! let done = Parallel::new(2) // 0: one worker per core
//!     .order(Order::Stream)
//!     .run(&mut source, |_worker| Syns(0), |_seq, port| ports.push(port))?;
//! if let Some(damage) = done.error {
//!     eprintln!("stopped early: {damage}"); // every packet before it was processed
//! }
//! let syns: u64 = done.workers.iter().map(|w| w.0).sum();
//! assert_eq!((syns, ports), (3, vec![80, 443, 80])); // stream order, whatever the workers
//! # Ok::<(), tracekit::Error>(())
//! ```
//!
//! [`analysis`] holds tables that are ready to use this way (the libtrace paper's Ports
//! analysis, a protocol breakdown), each with a `merge` for the reduce.
//!
//! # Flows
//!
//! [`flow::FlowTable`] keeps one record per conversation (both directions, TCP state,
//! idle and active timeouts, bounded memory) and hands each record out when the flow
//! ends; [`flow::Defragmenter`] joins IP fragments first and [`flow::TcpStreams`]
//! turns TCP segments back into the byte streams. `tracekit flows`, `follow` and
//! `scans` are built on them.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("trace.pcapng.gz");
//! # let path = path.to_str().unwrap();
//! # {
//! #     // Three TCP SYNs (Ethernet, IPv4 10.0.0.1 -> 10.0.0.2, MSS 1460) to ports 80, 443, 80.
//! #     const SYN: [u8; 58] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0, 0x45, 0, 0, 44, 0, 1, 0x40, 0, 64, 6, 0x26, 0xc9, 10, 0, 0, 1, 10, 0, 0, 2, 0x9c, 0x40, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x60, 2, 0xff, 0xff, 0, 0, 0, 0, 2, 4, 5, 0xb4];
//! #     let mut sink = tracekit::create(path, &Default::default())?;
//! #     for (i, port) in [80u16, 443, 80].into_iter().enumerate() {
//! #         let mut frame = SYN;
//! #         frame[36..38].copy_from_slice(&port.to_be_bytes());
//! #         let ts = tracekit::Timestamp::from_nanos(1_700_000_000 + i as u32, 0);
//! #         sink.write_packet(&tracekit::Packet::new(&frame, tracekit::Meta::new(ts, 58, tracekit::LinkType::ETHERNET)))?;
//! #     }
//! #     sink.finish()?;
//! # }
//! use tracekit::flow::{FlowConfig, FlowTable};
//!
//! let mut source = tracekit::open(path)?;
//! let mut table = FlowTable::new(FlowConfig::default());
//! let (mut flows, mut attempts) = (0, 0);
//! let mut count = |flow: &tracekit::flow::FlowRecord| {
//!     flows += 1;
//!     attempts += usize::from(flow.attempted_by().is_some() && !flow.handshake_completed());
//! };
//! while let Some(packet) = source.next_packet()? {
//!     table.add(&packet, &mut count); // hands out the flows that time out
//! }
//! table.finish(&mut count); // and those still open at the end
//! assert_eq!((flows, attempts), (2, 2)); // SYNs to ports 80 and 443, never answered
//! # Ok::<(), tracekit::Error>(())
//! ```
//!
//! # Cargo features
//!
//! | feature | default | adds | needs on the system |
//! |---|---|---|---|
//! | `live` | on | `afpacket:`/`ring:` URIs in [`open`], [`open_members`], the [`live`] module (`tracekit-afpacket`) | Linux (elsewhere the feature adds nothing and live URIs are refused); `CAP_NET_RAW` or root to capture. Nothing to build. |
//! | `libpcap` | off | compiling tcpdump expressions: [`Source::with_filter`], [`Filter::new`] (`tracekit-filter/libpcap`) | at run time only: the libpcap shared library (`libpcap.so.0.8`, Debian's `libpcap0.8`; or the file named by `TRACEKIT_LIBPCAP`), loaded with `dlopen`. Nothing to build or link. |
//! | `dag` | off | `dag:/dev/dag0[,stream...]` URIs in [`open`] and [`create`], the `dag` module (`tracekit-dag`); on its own it only builds the bindings: pick one of the two below | — |
//! | `libdag` | off | `dag` on Endace's driver and library | Endace's DAG software (libdag, the card's driver) |
//! | `dag-emulator` | off | `dag` on tracekit's software card (for tests and development: no hardware) | a C compiler |
//! | `export` | off | the `export` module (`tracekit-export`): Arrow record batches of packets and flows, Parquet files with Hive time partitions | nothing; arrow-rs and parquet build slowly, hence a feature |
//!
//! With neither feature: pcap, pcapng and ERF reading and writing, the five codecs, the
//! decoder, the BPF virtual machine and [`parallel`]. Building needs a C compiler, since
//! the zstd, bzip2, xz and libdeflate codecs are compiled from bundled sources.

#![forbid(unsafe_code)]
#![deny(missing_docs)]
// The front page links to the live-capture items, which a build without the `live`
// feature (or off Linux) does not have: there those links stay plain text.
#![cfg_attr(
    not(all(feature = "live", target_os = "linux")),
    allow(rustdoc::broken_intra_doc_links)
)]

pub mod analysis;
pub mod anon;
mod copy;
mod destination;
pub mod diff;
mod format;
pub mod merge;
pub mod parallel;
mod parts;
pub mod replay;
mod sink;
mod source;
mod summary;

pub use copy::{
    CopyError, InterfaceDescriber, copy, copy_rewriting_until, copy_rewriting_while, copy_until,
    copy_until_handing_over_after, copy_while,
};
pub use destination::{FileId, InputFiles, Kept, WriteFailure};
pub use format::Format;
pub use parts::{Cut, Part, PartFailure, PartNames, PartWriter, PartsDone};
pub use sink::{CreateOptions, MAX_COMPRESS_THREADS, Sink, create, create_checked};
#[cfg(all(feature = "live", target_os = "linux"))]
pub use source::open_members;
pub use source::{
    FILE_SCHEMES, LIVE_SCHEMES, MetaRecords, OpenOptions, Source, is_live_uri, open, open_with,
};
pub use summary::Summary;

/// Live capture on Linux (feature `live`, on by default): AF_PACKET rings and fan-out.
#[cfg(all(feature = "live", target_os = "linux"))]
pub use tracekit_afpacket as live;
pub use tracekit_core::{
    ByteOrder, CaptureSink, CaptureSource, Direction, Error, ErrorKind, InterfaceInfo, LinkType,
    MAX_SNAPLEN, Meta, OwnedPacket, Packet, PacketKind, PacketOptions, SinkReport, Stats,
    TimeOutOfRange, Timestamp, TsResolution,
};
/// Endace DAG capture and transmit (feature `dag`): receive streams, several streams,
/// transmit sinks.
#[cfg(feature = "dag")]
pub use tracekit_dag as dag;
/// Packets and flow records as Arrow batches and Parquet files (feature `export`).
#[cfg(feature = "export")]
pub use tracekit_export as export;
pub use tracekit_filter::Filter;
pub use tracekit_io::{Compression, ReadMode};
pub use {
    tracekit_core as core, tracekit_decode as decode, tracekit_erf as erf,
    tracekit_filter as filter, tracekit_flow as flow, tracekit_io as io, tracekit_legacy as legacy,
    tracekit_pcap as pcap, tracekit_pcapng as pcapng,
};
