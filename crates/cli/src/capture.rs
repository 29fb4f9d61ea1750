//! `tracekit capture`: live capture on Linux (AF_PACKET rings, fan-out members) and from
//! Endace DAG cards.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use tracekit::parallel::{Emit, MemberWatch, Parallel, Worker};
use tracekit::{
    Cut, Format, InputFiles, LinkType, Meta, Packet, PartFailure, PartNames, PartWriter, Stats,
};
use tracekit_afpacket::{AfPacket, FanoutGroup, FanoutSpec, GroupId, KernelFilter, StopHandle};

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

fn print_stats(label: &str, per_member: &[Stats], written: u64) {
    let mut total = Stats::default();
    for s in per_member {
        total.received += s.received;
        total.dropped += s.dropped;
        total.filtered += s.filtered;
    }
    eprintln!(
        "tracekit capture: {label}{written} packets captured, {} received by the socket, {} dropped by the kernel, {} dropped by the filter",
        total.received, total.dropped, total.filtered
    );
    if per_member.len() > 1 {
        for (i, s) in per_member.iter().enumerate() {
            eprintln!(
                "tracekit capture:   member {i}: {} delivered, {} received, {} dropped",
                s.captured, s.received, s.dropped
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
    let result: Result<Vec<Stats>> = if caps.len() == 1 {
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
            let stats = || Ok(vec![member_stats(cap)?]);
            if let Err(e) = check_time(&stats, out.written()) {
                r = Err(e);
                break;
            }
        }
        r.and_then(|()| Ok(vec![member_stats(cap)?]))
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
type StatsFn<'a> = dyn Fn() -> Result<Vec<Stats>> + 'a;
/// Called now and then with the counters and the packets written: stops at the deadline
/// and prints the periodic report.
type TimeCheck<'a> = dyn FnMut(&StatsFn<'_>, u64) -> Result<()> + Send + 'a;

/// A member's counters as the report prints them.
fn member_stats(cap: &AfPacket) -> Result<Stats> {
    let r = cap.ring_stats()?;
    Ok(Stats {
        received: r.received,
        dropped: r.dropped,
        filtered: r.filtered,
        captured: r.delivered,
    })
}

/// Packets a member's worker copied out of its ring, for the writer.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    /// Metadata, start and length in `bytes` of each packet.
    packets: Vec<(Meta, usize, usize)>,
}

/// A batch goes to the writer at this many packets or bytes, or on time.
const BATCH_PACKETS: usize = 256;
const BATCH_BYTES: usize = 1 << 18;
/// Emptied batches waiting to go back to each member's worker, at most.
const SPARE_BATCHES: usize = 64;

/// A member's worker: copies its packets into batches (so that the ring block goes back
/// to the kernel at once) and emits each when full, or when the run sends on time.
/// Emptied batches come back from the writer: no allocation once they circulate.
struct Copier {
    member: usize,
    batch: Batch,
    spare: Option<Receiver<Batch>>,
}

impl Copier {
    fn emit(&mut self, out: &mut Emit<'_, (usize, Batch)>) {
        let mut fresh = self
            .spare
            .as_ref()
            .and_then(|s| s.try_recv().ok())
            .unwrap_or_default();
        fresh.bytes.clear();
        fresh.packets.clear();
        let full = std::mem::replace(&mut self.batch, fresh);
        out.emit((self.member, full));
    }
}

impl Worker for Copier {
    type Item = (usize, Batch);

    fn packet(
        &mut self,
        p: &Packet<'_>,
        out: &mut Emit<'_, (usize, Batch)>,
    ) -> Result<(), tracekit::Error> {
        let b = &mut self.batch;
        let start = b.bytes.len();
        b.bytes.extend_from_slice(p.data());
        b.packets.push((*p.meta(), start, p.caplen()));
        if b.packets.len() >= BATCH_PACKETS || b.bytes.len() >= BATCH_BYTES {
            self.emit(out);
            // A batch holds many packets: it goes to the writer now, so that what is in
            // flight stays a few batches per member.
            out.send_soon();
        }
        Ok(())
    }

    fn flush(&mut self, out: &mut Emit<'_, (usize, Batch)>) -> Result<(), tracekit::Error> {
        if !self.batch.packets.is_empty() {
            self.emit(out);
        }
        Ok(())
    }
}

/// Several members: the parallel API's run over members (one thread each, the kernel
/// spreading packets by flow), each worker copying its packets out in batches; the
/// batches are written here, in the order they come. A clock thread keeps the deadline
/// and the periodic report going while no packet comes.
fn capture_members(
    mut caps: Vec<AfPacket>,
    out: &mut Output,
    limit: u64,
    stop: &StopHandle,
    check_time: &mut TimeCheck<'_>,
) -> Result<Vec<Stats>> {
    let n = caps.len();
    let watch = MemberWatch::new();
    let written = AtomicU64::new(out.written());
    let finished = AtomicBool::new(false);
    let (spare_tx, spare_rx): (Vec<SyncSender<Batch>>, Vec<_>) =
        (0..n).map(|_| sync_channel::<Batch>(SPARE_BATCHES)).unzip();
    let spare_rx = Mutex::new(spare_rx.into_iter().map(Some).collect::<Vec<_>>());
    let make = |member: usize| Copier {
        member,
        batch: Batch::default(),
        spare: spare_rx
            .lock()
            .ok()
            .and_then(|mut s| s.get_mut(member).and_then(Option::take)),
    };
    let mut failure = None;
    let mut clock_failure = None;
    /// Ends the clock thread however the run ends (a panic included).
    struct EndClock<'a>(&'a AtomicBool);
    impl Drop for EndClock<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let done = std::thread::scope(|scope| {
        let end_clock = EndClock(&finished);
        let (watch, written, finished) = (&watch, &written, &finished);
        let clock_failure = &mut clock_failure;
        scope.spawn(move || {
            while !finished.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                let stats = || Ok(watch.stats());
                if let Err(e) = check_time(&stats, written.load(Ordering::Relaxed)) {
                    *clock_failure = Some(e);
                    stop.stop();
                    break;
                }
            }
        });
        let members: Vec<&mut AfPacket> = caps.iter_mut().collect();
        let done = Parallel::new(n)
            .stop_flag(stop.flag())
            .watch(watch.clone())
            .run_members(members, make, |_, (member, batch): (usize, Batch)| {
                if failure.is_none() {
                    for &(meta, start, len) in &batch.packets {
                        if out.written() >= limit {
                            break;
                        }
                        let p = Packet::new(&batch.bytes[start..start + len], meta);
                        if let Err(e) = out.write(&p) {
                            failure = Some(e);
                            stop.stop();
                            break;
                        }
                    }
                    if out.written() >= limit {
                        stop.stop();
                    }
                    written.store(out.written(), Ordering::Relaxed);
                }
                let _ = spare_tx[member].try_send(batch);
            });
        drop(end_clock);
        done
    });
    let done = done?;
    if let Some(e) = failure.or(clock_failure) {
        return Err(e);
    }
    if let Some(e) = done.error {
        return Err(e.into());
    }
    caps.iter().map(member_stats).collect()
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
