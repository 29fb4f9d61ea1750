//! `tracekit capture`: live capture on Linux (AF_PACKET rings, fan-out members) and from
//! Endace DAG cards.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use tracekit::{Cut, Format, InputFiles, LinkType, Packet, PartFailure, PartNames, PartWriter};
use tracekit_afpacket::{
    AfPacket, FanoutGroup, FanoutSpec, GroupId, KernelFilter, MemberThreads, Polled, RingStats,
    StopHandle,
};

use crate::Outcome;
use crate::output::OutputArgs;

/// Capture live packets on a Linux interface into a trace file of any format and
/// compression, like `tcpdump -w`.
///
/// With `--members N` (or `--fanout`/`--group`), N sockets join one PACKET_FANOUT group
/// and are read by N threads; `--fanout` takes the fan-out paper's mode strings (`hash`,
/// `lb`, `cpu`, `rollover`, `rnd`, `qm`, with `|defrag`, `|rollover`,
/// `|ignore_outgoing`). Without flags, `TRACEKIT_GROUP[_<dev>]`, `TRACEKIT_FANOUT` (or
/// `PCAP_GROUP`, `PCAP_FANOUT`) and the file named by `TRACEKIT_CONFIG` are used. The
/// filter runs in the kernel when it gives the same verdict there as on the wire
/// (VLAN tags are put back into the frames), else in user space.
///
/// Ctrl-C (or `-c`, `--duration`) stops: the output is completed and the counters are
/// printed (captured, received by the socket, dropped by the kernel; per member).
/// Needs root or CAP_NET_RAW.
///
/// `-i dag:/dev/dag0` captures from a DAG card's receive stream 0, `dag:/dev/dag0,2`
/// from stream 2, `dag:/dev/dag0,0,2` from several streams read in turn (builds with the
/// `libdag` or `dag-emulator` feature); the counters are then the card's (records lost,
/// from the records' loss counters).
///
/// Example: `tracekit capture -i eth0 -f "tcp port 443" --members 2 -w https.pcapng.zst`
#[derive(Args)]
pub struct CaptureArgs {
    /// Interface to capture on, or a DAG card (`dag:/dev/dag0[,stream...]`).
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    interface: String,
    /// Output trace (`-` for standard output).
    #[arg(short = 'w', long = "write", value_name = "OUT")]
    output_file: String,
    /// Capture only the packets matching this tcpdump filter expression.
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,

    /// Stop after this many packets.
    #[arg(short = 'c', long = "count", value_name = "COUNT")]
    count: Option<u64>,
    /// Start a new output file every this many seconds of packet time (aligned to the
    /// clock); files are named like `split`'s parts.
    #[arg(short = 'G', long = "rotate", value_name = "SECONDS")]
    rotate: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// Fan-out members (sockets and threads).
    #[arg(long, value_name = "N")]
    members: Option<usize>,
    /// Fan-out mode string (default hash).
    #[arg(long, value_name = "MODE")]
    fanout: Option<String>,
    /// Fan-out group id (default: a free one the kernel picks).
    #[arg(long, value_name = "ID")]
    group: Option<u16>,
    /// Print the counters to stderr every this many seconds.
    #[arg(long, value_name = "SECONDS")]
    stats_interval: Option<f64>,
    /// Ring block size in bytes (a page multiple, at least 128 KiB).
    #[arg(long, value_name = "BYTES")]
    block_size: Option<usize>,
    /// Ring blocks per member.
    #[arg(long, value_name = "N")]
    blocks: Option<usize>,
    /// Latency bound: how long a partly filled block waits, in milliseconds.
    #[arg(long, value_name = "MS")]
    latency_ms: Option<u64>,
    /// Do not put the interface into promiscuous mode.
    #[arg(long)]
    no_promisc: bool,
    /// Where the filter runs.
    #[arg(long, value_enum)]
    kernel_filter: Option<KernelFilterArg>,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum KernelFilterArg {
    Auto,
    On,
    Off,
}

/// The output (one file, or one per rotation interval) and the packets written.
struct Output {
    parts: PartWriter,
}

impl Output {
    fn written(&self) -> u64 {
        self.parts.packets_written()
    }

    fn write(&mut self, p: &Packet<'_>) -> Result<()> {
        self.parts.write_packet(p).map_err(failure)?;
        Ok(())
    }

    /// Completes the file being written, saying what its format could not carry.
    fn close(self) -> Result<()> {
        let done = self.parts.finish();
        for part in &done.parts {
            if let Some(lost) = &part.lost {
                eprintln!("tracekit capture: {}: {lost}", part.file);
            }
        }
        match done.failure {
            Some(f) => Err(failure(f)),
            None => Ok(()),
        }
    }
}

/// A failed output as an error that says what the file holds.
fn failure(f: PartFailure) -> anyhow::Error {
    match f.kept {
        None => anyhow::Error::from(f.error).context(format!("cannot create {}", f.file)),
        Some(kept) => anyhow::Error::from(f.error).context(format!("{} {kept}", f.file)),
    }
}

fn print_stats(label: &str, per_member: &[RingStats], written: u64) {
    let mut total = RingStats::default();
    for s in per_member {
        total += *s;
    }
    eprintln!(
        "tracekit capture: {label}{written} packets captured, {} received by the socket, {} dropped by the kernel, {} dropped by the filter",
        total.received, total.dropped, total.filtered
    );
    if per_member.len() > 1 {
        for (i, s) in per_member.iter().enumerate() {
            eprintln!(
                "tracekit capture:   member {i}: {} delivered, {} received, {} dropped",
                s.delivered, s.received, s.dropped
            );
        }
    }
}

pub fn run(args: CaptureArgs) -> Result<Outcome> {
    if args
        .interface
        .get(..4)
        .is_some_and(|p| p.eq_ignore_ascii_case("dag:"))
    {
        return capture_dag(args);
    }
    // Environment and config file first, then the flags over them.
    let mut group = FanoutGroup::configured(&args.interface)?;
    if let Some(m) = args.members {
        if m == 0 {
            bail!("--members must be at least 1");
        }
        group = group.members(m);
    }
    if let Some(mode) = &args.fanout {
        group = group.mode(mode.parse::<FanoutSpec>()?);
    }
    if let Some(id) = args.group {
        group = group.group(GroupId::Fixed(id));
    }
    let (members, _, group_id, base) = group.settings();
    // A group is joined when one is named (flag, environment or file), several members
    // are asked for, or a mode is given on the command line.
    let use_fanout = members > 1 || matches!(group_id, GroupId::Fixed(_)) || args.fanout.is_some();
    let mut options = base.clone();
    // -s 0 is whole packets (the ring's default), as with tcpdump.
    if let Some(s) = args.output.snaplen.filter(|s| *s != 0) {
        options.snaplen = s;
    }
    if let Some(v) = args.block_size {
        options.block_size = v;
    }
    if let Some(v) = args.blocks {
        options.block_nr = v;
    }
    if let Some(v) = args.latency_ms {
        options.latency = Duration::from_millis(v);
    }
    if args.no_promisc {
        options.promisc = false;
    }
    if let Some(k) = args.kernel_filter {
        options.kernel_filter = match k {
            KernelFilterArg::Auto => KernelFilter::Auto,
            KernelFilterArg::On => KernelFilter::On,
            KernelFilterArg::Off => KernelFilter::Off,
        };
    }
    if let Some(expr) = &args.filter {
        options.filter = Some(
            tracekit_afpacket::compile_filter(expr, options.snaplen)
                .with_context(|| format!("filter '{expr}'"))?,
        );
    }
    options.poll_interval = Duration::from_millis(50);
    let snaplen = options.snaplen;
    let mut caps: Vec<AfPacket> = if use_fanout {
        group.options(options).open()?
    } else {
        vec![AfPacket::open(&args.interface, options)?]
    };

    let stop: StopHandle = crate::ctrl_c_stop();
    for c in caps.iter_mut() {
        c.set_stop_handle(stop.clone());
    }
    if let Some((id, spec)) = caps[0].fanout_group() {
        eprintln!(
            "tracekit capture: {} members in fan-out group {id} ({spec}) on {}",
            caps.len(),
            args.interface
        );
    }
    let link = caps[0].link_type();
    let mut out = open_output(
        &args,
        Some(args.output.snaplen.unwrap_or(snaplen)),
        Some(link),
    )?;
    let deadline = args
        .duration
        .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
    let every = args
        .stats_interval
        .map(|s| Duration::from_secs_f64(s.max(0.1)));
    let mut next_report = every.map(|e| Instant::now() + e);
    let limit = args.count.unwrap_or(u64::MAX);
    let tick = Duration::from_millis(100);
    let mut check_time = |stats: &StatsFn<'_>, written: u64| -> Result<()> {
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            stop.stop();
        }
        if let (Some(e), Some(at)) = (every, next_report.as_mut())
            && now >= *at
        {
            *at = now + e;
            print_stats("", &stats()?, written);
        }
        Ok(())
    };
    let result: Result<Vec<RingStats>> = if caps.len() == 1 {
        // One member: straight from the ring into the output, no copy.
        let cap = &mut caps[0];
        let mut r = Ok(());
        'read: while out.written() < limit && !stop.is_stopped() {
            match cap.next_block(Some(tick)) {
                Ok(Some(block)) => {
                    for p in block.packets() {
                        if let Err(e) = out.write(&p) {
                            r = Err(e);
                            break 'read;
                        }
                        if out.written() >= limit {
                            break;
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    r = Err(e.into());
                    break;
                }
            }
            let stats = || Ok(vec![cap.ring_stats()?]);
            if let Err(e) = check_time(&stats, out.written()) {
                r = Err(e);
                break;
            }
        }
        r.and_then(|()| Ok(vec![cap.ring_stats()?]))
    } else {
        capture_members(caps, &mut out, limit, &stop, &mut check_time)
    };
    let written = out.written();
    let closed = out.close();
    let stats = result?;
    closed?;
    print_stats("", &stats, written);
    Ok(Outcome::Ok)
}

/// Counters on demand, for the periodic report.
type StatsFn<'a> = dyn Fn() -> Result<Vec<RingStats>> + 'a;
/// Called between blocks with the counters and the packets written: stops at the
/// deadline and prints the periodic report.
type TimeCheck<'a> = dyn FnMut(&StatsFn<'_>, u64) -> Result<()> + 'a;

/// Several members: one reader thread each (the library's [`MemberThreads`]), their
/// packets written here.
fn capture_members(
    caps: Vec<AfPacket>,
    out: &mut Output,
    limit: u64,
    stop: &StopHandle,
    check_time: &mut TimeCheck<'_>,
) -> Result<Vec<RingStats>> {
    let mut group = MemberThreads::start(caps, stop.clone());
    let mut failure = None;
    let tick = Duration::from_millis(100);
    // The clock is looked at every so many packets, and whenever the members are idle.
    let mut since_check = 0u32;
    loop {
        let idle = match group.poll(tick) {
            Ok(Polled::Packet(p)) => {
                if failure.is_none()
                    && out.written() < limit
                    && let Err(e) = out.write(&p)
                {
                    failure = Some(e);
                    stop.stop();
                }
                false
            }
            Ok(Polled::Idle) => true,
            Ok(Polled::Ended) => break,
            Err(e) => {
                failure.get_or_insert(e.into());
                break;
            }
        };
        if out.written() >= limit {
            stop.stop();
        }
        since_check += 1;
        if idle || since_check >= 1024 {
            since_check = 0;
            let stats = || Ok(group.member_stats());
            if let Err(e) = check_time(&stats, out.written()) {
                failure.get_or_insert(e);
                stop.stop();
            }
        }
    }
    let stats = group.finish();
    match failure {
        Some(e) => Err(e),
        None => Ok(stats?),
    }
}

/// The output of a capture: one file, or one per rotation interval.
fn open_output(args: &CaptureArgs, snaplen: Option<u32>, link: Option<LinkType>) -> Result<Output> {
    let rotating = PartNames::new(&args.output_file, Format::Pcap);
    let mut create = args
        .output
        .create_options([tracekit::TsResolution::NANO], snaplen, link);
    // A live capture is written in place, so that the file can be watched as it grows.
    create.in_place = true;
    create.format = Some(args.output.format.unwrap_or(if args.output_file == "-" {
        Format::Pcap
    } else {
        rotating.format()
    }));
    let (names, cut) = match args.rotate {
        Some(s) => (rotating, Cut::Interval(s.max(1) * 1_000_000_000)),
        None => (
            PartNames::single(&args.output_file, rotating.format()),
            Cut::Never,
        ),
    };
    Ok(Output {
        parts: PartWriter::new(names, cut, create, InputFiles::default())?,
    })
}

/// Capture from a DAG card: the library's source for `dag:` URIs (several streams read
/// in turn), into the output.
fn capture_dag(args: CaptureArgs) -> Result<Outcome> {
    if args.members.is_some()
        || args.fanout.is_some()
        || args.group.is_some()
        || args.block_size.is_some()
        || args.blocks.is_some()
        || args.latency_ms.is_some()
        || args.no_promisc
        || args.kernel_filter.is_some()
    {
        bail!(
            "--members, --fanout, --group, --block-size, --blocks, --latency-ms, --no-promisc and --kernel-filter are AF_PACKET options; a DAG card's streams are named in the URI (dag:/dev/dag0,0,2)"
        );
    }
    let mut source = crate::open_source(&args.interface)?;
    if let Some(expr) = &args.filter {
        source = source
            .with_filter(expr)
            .with_context(|| format!("filter '{expr}'"))?;
    }
    let stop = crate::ctrl_c_stop();
    let mut out = open_output(&args, args.output.snaplen, None)?;
    if let Some(secs) = args.duration {
        let s = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs_f64(secs.max(0.0)));
            s.stop();
        });
    }
    let every = args
        .stats_interval
        .map(|s| Duration::from_secs_f64(s.max(0.1)));
    let mut next_report = every.map(|e| Instant::now() + e);
    let limit = args.count.unwrap_or(u64::MAX);
    let mut failure = None;
    let mut since_check = 0u32;
    while out.written() < limit && !stop.is_stopped() {
        match source.next_packet() {
            Ok(Some(p)) => {
                if let Err(e) = out.write(&p) {
                    failure = Some(e);
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                failure = Some(anyhow::Error::from(e).context(args.interface.clone()));
                break;
            }
        }
        since_check += 1;
        if since_check >= 256 {
            since_check = 0;
            if let (Some(e), Some(at)) = (every, next_report.as_mut())
                && Instant::now() >= *at
            {
                *at = Instant::now() + e;
                print_dag_stats(&source, out.written());
            }
        }
    }
    let written = out.written();
    let closed = out.close();
    if let Some(e) = failure {
        return Err(e);
    }
    closed?;
    print_dag_stats(&source, written);
    Ok(Outcome::Ok)
}

fn print_dag_stats(source: &tracekit::Source, written: u64) {
    let s = source.stats();
    eprintln!(
        "tracekit capture: {written} packets captured, {} received by the card, {} dropped by the card, {} dropped by the filter",
        s.received, s.dropped, s.filtered
    );
}
