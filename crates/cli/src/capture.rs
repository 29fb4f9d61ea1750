//! `tracekit capture`: live capture on Linux (AF_PACKET rings, fan-out members).

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use crossbeam_channel::{Receiver, Sender, bounded};
use tracekit::{Format, Meta, Packet, Sink};
use tracekit_afpacket::{
    AfPacket, FanoutGroup, FanoutSpec, GroupId, KernelFilter, RingStats, StopHandle,
};

use crate::Outcome;
use crate::output::{self, OutputArgs};
use crate::split::{name_parts, part_name};

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
/// Example: `tracekit capture -i eth0 -f "tcp port 443" --members 2 -w https.pcapng.zst`
#[derive(Args)]
pub struct CaptureArgs {
    /// Interface to capture on.
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

/// Packets copied out of a member's ring for the writer thread: one buffer per batch,
/// reused, so that no packet allocates.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    packets: Vec<(Meta, usize, usize)>,
}

/// The output: one file, or one per rotation interval.
struct Output {
    stem: String,
    ext: String,
    rotate_ns: Option<u64>,
    interval: u64,
    options: tracekit::CreateOptions,
    sink: Option<Sink>,
    name: String,
    files: usize,
    written: u64,
    single: String,
}

impl Output {
    fn write(&mut self, p: &Packet<'_>) -> Result<()> {
        if let Some(len) = self.rotate_ns {
            let k = p.ts().as_unix_nanos() / len;
            if self.sink.is_some() && k != self.interval {
                self.close()?;
            }
            self.interval = k;
        }
        if self.sink.is_none() {
            self.name = match self.rotate_ns {
                Some(_) => part_name(&self.stem, &self.ext, self.files),
                None => self.single.clone(),
            };
            self.files += 1;
            self.sink = Some(
                tracekit::create(&self.name, &self.options)
                    .with_context(|| format!("cannot create {}", self.name))?,
            );
        }
        let sink = self.sink.as_mut().expect("just created");
        sink.write_packet(p)
            .with_context(|| format!("{} is incomplete", self.name))?;
        self.written += 1;
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        if let Some(sink) = self.sink.take() {
            output::finish("capture", &self.name, sink)?;
        }
        Ok(())
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
    let (stem, ext, format) = name_parts(&args.output_file, Format::Pcap);
    let mut create = args.output.create_options(
        [tracekit::TsResolution::NANO],
        Some(args.output.snaplen.unwrap_or(snaplen)),
        Some(link),
    );
    // A live capture is written in place, so that the file can be watched as it grows.
    create.in_place = true;
    create.format = Some(args.output.format.unwrap_or(if args.output_file == "-" {
        Format::Pcap
    } else {
        format
    }));
    let mut out = Output {
        stem,
        ext,
        rotate_ns: args.rotate.map(|s| s.max(1) * 1_000_000_000),
        interval: 0,
        options: create,
        sink: None,
        name: String::new(),
        files: 0,
        written: 0,
        single: args.output_file.clone(),
    };
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
        'read: while out.written < limit && !stop.is_stopped() {
            match cap.next_block(Some(tick)) {
                Ok(Some(block)) => {
                    for p in block.packets() {
                        if let Err(e) = out.write(&p) {
                            r = Err(e);
                            break 'read;
                        }
                        if out.written >= limit {
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
            if let Err(e) = check_time(&stats, out.written) {
                r = Err(e);
                break;
            }
        }
        r.and_then(|()| Ok(vec![cap.ring_stats()?]))
    } else {
        capture_members(caps, &mut out, limit, &stop, &mut check_time)
    };
    let closed = out.close();
    let stats = result?;
    closed?;
    print_stats("", &stats, out.written);
    Ok(Outcome::Ok)
}

/// Counters on demand, for the periodic report.
type StatsFn<'a> = dyn Fn() -> Result<Vec<RingStats>> + 'a;
/// Called between blocks with the counters and the packets written: stops at the
/// deadline and prints the periodic report.
type TimeCheck<'a> = dyn FnMut(&StatsFn<'_>, u64) -> Result<()> + 'a;

/// Several members: one reader thread each, copying packets into reused batch buffers
/// for this thread, which writes them.
fn capture_members(
    caps: Vec<AfPacket>,
    out: &mut Output,
    limit: u64,
    stop: &StopHandle,
    check_time: &mut TimeCheck<'_>,
) -> Result<Vec<RingStats>> {
    let n = caps.len();
    // Each member publishes its counters here after every block, for --stats-interval.
    let live = std::sync::Arc::new(std::sync::Mutex::new(vec![RingStats::default(); n]));
    let (full_tx, full_rx): (Sender<Batch>, Receiver<Batch>) = bounded(4 * n);
    let mut returns = Vec::with_capacity(n);
    let mut workers = Vec::with_capacity(n);
    for (m, mut cap) in caps.into_iter().enumerate() {
        let live = live.clone();
        let (empty_tx, empty_rx) = bounded::<Batch>(8);
        for _ in 0..8 {
            let _ = empty_tx.send(Batch::default());
        }
        returns.push(empty_tx);
        let full_tx = full_tx.clone();
        let stop = stop.clone();
        workers.push(std::thread::spawn(
            move || -> Result<(AfPacket, RingStats)> {
                while !stop.is_stopped() {
                    let Some(block) = cap.next_block(Some(Duration::from_millis(100)))? else {
                        continue;
                    };
                    let Ok(mut batch) = empty_rx.recv() else {
                        break;
                    };
                    batch.bytes.clear();
                    batch.packets.clear();
                    for p in block.packets() {
                        let start = batch.bytes.len();
                        batch.bytes.extend_from_slice(p.data());
                        batch.packets.push((*p.meta(), start, p.caplen()));
                    }
                    drop(block);
                    if let Ok(mut l) = live.lock() {
                        l[m] = cap.ring_stats()?;
                    }
                    if full_tx.send(batch).is_err() {
                        break;
                    }
                }
                let stats = cap.ring_stats()?;
                Ok((cap, stats))
            },
        ));
    }
    drop(full_tx);
    let mut failure = None;
    let mut member_of_batch = 0usize;
    loop {
        match full_rx.recv_timeout(Duration::from_millis(100)) {
            Ok(batch) => {
                if failure.is_none() {
                    for &(meta, start, len) in &batch.packets {
                        if out.written >= limit {
                            stop.stop();
                            break;
                        }
                        if let Err(e) =
                            out.write(&Packet::new(&batch.bytes[start..start + len], meta))
                        {
                            failure = Some(e);
                            stop.stop();
                            break;
                        }
                    }
                }
                // Hand the buffer back to any member with room (buffers are alike).
                let mut batch = Some(batch);
                for k in 0..n {
                    let i = (member_of_batch + k) % n;
                    match returns[i].try_send(batch.take().expect("batch")) {
                        Ok(()) => break,
                        Err(e) => batch = Some(e.into_inner()),
                    }
                }
                member_of_batch = (member_of_batch + 1) % n;
            }
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
        }
        if out.written >= limit {
            stop.stop();
        }
        let stats = || Ok(live.lock().map(|l| l.clone()).unwrap_or_default());
        if let Err(e) = check_time(&stats, out.written) {
            failure.get_or_insert(e);
            stop.stop();
        }
    }
    drop(returns);
    let mut stats = Vec::with_capacity(n);
    for w in workers {
        match w.join() {
            Ok(Ok((_, s))) => stats.push(s),
            Ok(Err(e)) => {
                failure.get_or_insert(e);
            }
            Err(_) => bail!("a capture thread panicked"),
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(stats),
    }
}
