//! `tracekit flows`: one record per flow (tracekit::flow::FlowTable), like Zeek's
//! conn.log or tshark's conversation tables.

use std::io::Write;

use anyhow::{Result, bail};
use clap::Args;
use tracekit::flow::{
    DefragConfig, Defragmenter, Endpoint, FlowConfig, FlowRecord, FlowTable, KeyOptions,
    OverlapPolicy,
};

use crate::Outcome;
use crate::columns::{push_aligned, push_column, push_int, push_ip};
use crate::numbered::each_packet_joined_seen;

/// One record per bidirectional flow (5-tuple): packets, wire bytes and payload bytes
/// each way, first and last time stamps, TCP state and a Zeek-style history.
///
/// The originator (src) is the sender of the flow's first packet, or its receiver when
/// that packet was a SYN-ACK. Bytes are wire lengths, as tshark's conversation
/// statistics count them. Tunnelled packets count in the outer flow and in the inner
/// flows they carry. Without reassembly, non-first IP fragments have no ports: they
/// count in a flow of their own with port 0 on both sides. Several files are read one
/// after the other as one trace. Records are printed when flows end: timeouts first,
/// then the flows left at the end of the trace in order of their first packet.
///
/// `state` is Zeek's conn_state (S0, S1, SF, REJ, S2, S3, RSTO, RSTR, RSTOS0, RSTRH,
/// SH, SHR, OTH); `tcp_state` the TCP state machine's (syn_sent, syn_received,
/// established, fin_orig, fin_resp, closed, reset, midstream); `end` why the record was
/// written (idle, active, evicted, reused, end). `truncated` counts the flow's TCP/UDP
/// packets whose transport header the capture cut (their ports were captured).
///
/// `history` is Zeek's: S SYN, H SYN-ACK, A pure ACK, D data, F FIN, R RST, Q SYN with
/// FIN or RST, ^ roles flipped (once each way), T retransmitted payload and W zero
/// window (at the 1st, 10th, 100th, ... event, as Zeek repeats them); upper case for the
/// originator, lower case for the responder.
///
/// Example: `tracekit flows --json samples/sample.pcap`
#[derive(Args)]
pub struct FlowsArgs {
    /// Count only the packets matching this tcpdump filter expression.
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// One JSON object per line.
    #[arg(long)]
    json: bool,
    /// Output format: text (default), json, csv or tsv (csv and tsv with a header line).
    #[arg(long, value_parser = ["text", "json", "csv", "tsv"])]
    format: Option<String>,
    /// End a flow after this many seconds (trace time) without a packet; 0 never.
    #[arg(long, default_value_t = 300.0, value_name = "SECONDS")]
    timeout_idle: f64,
    /// Cut a flow's record after this many seconds (trace time) since its first packet
    /// (the flow goes on in a new record); 0 never.
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS")]
    timeout_active: f64,
    /// Hold at most this many flows; beyond it the least recently active flow is ended
    /// early (its record says `evicted`).
    #[arg(long, default_value_t = FlowConfig::default().max_flows)]
    max_flows: usize,
    /// Tell flows on different VLANs apart (the outermost VLAN id is part of the key).
    #[arg(long)]
    vlan: bool,
    /// Tell flows at different tunnel depths apart (the tunnel level is part of the key:
    /// an inner flow with an outer flow's 5-tuple is counted apart from it).
    #[arg(long)]
    tunnel_level: bool,
    /// Count tunnelled packets only in their outer flow.
    #[arg(long)]
    no_tunnels: bool,
    /// Join IP fragments before counting, at every tunnel level (a datagram then counts
    /// once, in its ports' flow, when complete; fragments of datagrams never completed
    /// count nowhere).
    #[arg(long)]
    reassemble: bool,
    /// With --reassemble: whose bytes win where fragments overlap (first, last, bsd,
    /// linux, windows).
    #[arg(long, default_value = "bsd", value_parser = parse_policy)]
    overlap_policy: OverlapPolicy,
    /// Threads, the reading thread among them, which works too (1, the default:
    /// everything on one thread; 0: one per core). Packets are spread by address pair, so
    /// each flow (and each datagram's fragments) stays on one worker; the records are
    /// those of one thread, in another order.
    #[arg(long, default_value_t = 1, value_parser = crate::parse_workers)]
    threads: usize,
    /// Print the table's counters (flows created, timed out, evicted) to stderr.
    #[arg(long)]
    stats: bool,
    /// Trace files (`-` for standard input), read one after the other.
    #[arg(required = true)]
    files: Vec<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Text,
    Json,
    Delimited(u8),
}

/// The header of `--format csv|tsv`: the columns in `--json`'s order.
fn header(sep: u8) -> String {
    let mut columns = vec!["proto", "src_addr", "src_port", "dst_addr", "dst_port"];
    columns.extend(FlowRecord::COUNT_NAMES);
    columns.extend([
        "first_ts_ns",
        "last_ts_ns",
        "state",
        "tcp_state",
        "history",
        "vlan",
        "tunnel_level",
        "fragments",
        "truncated",
        "end",
    ]);
    columns.join(&char::from(sep).to_string())
}

fn parse_policy(s: &str) -> Result<OverlapPolicy, String> {
    OverlapPolicy::from_name(s)
        .ok_or_else(|| format!("unknown policy '{s}' (known: first, last, bsd, linux, windows)"))
}

fn seconds_to_ns(s: f64, what: &str) -> Result<u64> {
    if !s.is_finite() || s < 0.0 {
        bail!("{what} must be a number of seconds, 0 or more (got {s})");
    }
    Ok((s * 1e9).round() as u64)
}

/// Appends a protocol as the output spells it: its name, else its number.
fn push_proto(out: &mut Vec<u8>, p: u8) {
    match tracekit::flow::protocol_name(p) {
        Some(name) => out.extend_from_slice(name.as_bytes()),
        None => push_int(out, p),
    }
}

/// Appends an endpoint as its `Display` writes it: `a.b.c.d:port` or `[v6]:port`.
fn push_endpoint(out: &mut Vec<u8>, e: Endpoint) {
    if e.addr.is_ipv6() {
        out.push(b'[');
        push_ip(out, e.addr);
        out.push(b']');
    } else {
        push_ip(out, e.addr);
    }
    out.push(b':');
    push_int(out, e.port);
}

/// Appends one record in `format`, newline included, with the bytes `write!` through
/// `Display` and serde_json wrote before (checked by the tests): integers through itoa,
/// addresses with `IpText`, and no `fmt` machinery, which took 5,600 instructions a
/// record (27 % of `tracekit flows` on 30,000 flows).
fn write_record(out: &mut Vec<u8>, format: Format, r: &FlowRecord) {
    let (src, dst) = (r.src(), r.dst());
    match format {
        Format::Json => {
            let key = |out: &mut Vec<u8>, name: &str| {
                out.extend_from_slice(b",\"");
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b"\":");
            };
            let string = |out: &mut Vec<u8>, name: &str, v: &[u8]| {
                key(out, name);
                out.push(b'"');
                out.extend_from_slice(v);
                out.push(b'"');
            };
            out.extend_from_slice(b"{\"proto\":\"");
            push_proto(out, r.protocol());
            out.extend_from_slice(b"\",\"src_addr\":\"");
            push_ip(out, src.addr);
            out.push(b'"');
            key(out, "src_port");
            push_int(out, src.port);
            key(out, "dst_addr");
            out.push(b'"');
            push_ip(out, dst.addr);
            out.push(b'"');
            key(out, "dst_port");
            push_int(out, dst.port);
            for (name, v) in FlowRecord::COUNT_NAMES.into_iter().zip(r.counts()) {
                key(out, name);
                push_int(out, v);
            }
            key(out, "first_ts_ns");
            push_int(out, r.first.as_unix_nanos());
            key(out, "last_ts_ns");
            push_int(out, r.last.as_unix_nanos());
            string(out, "state", r.conn_state().as_bytes());
            match r.tcp_state() {
                Some(s) => string(out, "tcp_state", s.name().as_bytes()),
                None => {
                    key(out, "tcp_state");
                    out.extend_from_slice(b"null");
                }
            }
            // History letters and the names above are ASCII letters, digits and `^`
            // only: nothing to escape.
            string(out, "history", r.history.as_str().as_bytes());
            key(out, "vlan");
            match r.key.vlan() {
                Some(v) => push_int(out, v),
                None => out.extend_from_slice(b"null"),
            }
            key(out, "tunnel_level");
            push_int(out, r.key.tunnel_level());
            key(out, "fragments");
            push_int(out, r.fragments);
            key(out, "truncated");
            push_int(out, r.truncated);
            string(out, "end", r.end.name().as_bytes());
            out.extend_from_slice(b"}\n");
        }
        Format::Text => {
            push_column(out, 6, false, |o| push_proto(o, r.protocol()));
            out.push(b' ');
            push_column(out, 41, true, |o| push_endpoint(o, src));
            out.extend_from_slice(b" -> ");
            push_column(out, 41, false, |o| push_endpoint(o, dst));
            for (v, width) in [
                (r.packets(), 8),
                (r.wire_bytes(), 12),
                (r.orig.payload_bytes, 8),
                (r.resp.payload_bytes, 8),
            ] {
                out.push(b' ');
                push_aligned(out, itoa::Buffer::new().format(v).as_bytes(), width, true);
            }
            out.push(b' ');
            push_aligned(out, r.conn_state().as_bytes(), 8, false);
            out.push(b' ');
            out.extend_from_slice(r.history.as_str().as_bytes());
            out.push(b'\n');
        }
        Format::Delimited(sep) => {
            push_proto(out, r.protocol());
            out.push(sep);
            push_ip(out, src.addr);
            out.push(sep);
            push_int(out, src.port);
            out.push(sep);
            push_ip(out, dst.addr);
            out.push(sep);
            push_int(out, dst.port);
            for v in r.counts() {
                out.push(sep);
                push_int(out, v);
            }
            for t in [r.first, r.last] {
                out.push(sep);
                push_int(out, t.as_unix_nanos());
            }
            for text in [
                r.conn_state(),
                r.tcp_state().map_or("", |s| s.name()),
                r.history.as_str(),
            ] {
                out.push(sep);
                out.extend_from_slice(text.as_bytes());
            }
            out.push(sep);
            if let Some(v) = r.key.vlan() {
                push_int(out, v);
            }
            for v in [u64::from(r.key.tunnel_level()), r.fragments, r.truncated] {
                out.push(sep);
                push_int(out, v);
            }
            out.push(sep);
            out.extend_from_slice(r.end.name().as_bytes());
            out.push(b'\n');
        }
    }
}

pub fn run(args: FlowsArgs) -> Result<Outcome> {
    let format = match (args.json, args.format.as_deref()) {
        (true, None | Some("json")) | (false, Some("json")) => Format::Json,
        (true, Some(other)) => bail!("--json and --format {other} disagree"),
        (false, Some("csv")) => Format::Delimited(b','),
        (false, Some("tsv")) => Format::Delimited(b'\t'),
        _ => Format::Text,
    };
    let config = FlowConfig {
        idle_timeout_ns: seconds_to_ns(args.timeout_idle, "--timeout-idle")?,
        active_timeout_ns: seconds_to_ns(args.timeout_active, "--timeout-active")?,
        max_flows: args.max_flows.max(1),
        key: KeyOptions {
            vlan: args.vlan,
            tunnel_level: args.tunnel_level,
        },
        tunnels: !args.no_tunnels,
    };
    let mut table = FlowTable::new(config);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    match format {
        Format::Delimited(sep) => {
            writeln!(out, "{}", header(sep))?;
        }
        Format::Text => writeln!(
            out,
            "{:<6} {:>41}    {:<41} {:>8} {:>12} {:>8} {:>8} {:<8} history",
            "proto", "src", "dst", "packets", "bytes", "payload>", "payload<", "state"
        )?,
        Format::Json => {}
    }
    let defrag_config = DefragConfig {
        policy: args.overlap_policy,
        ..DefragConfig::default()
    };
    if crate::numbered::is_parallel(args.threads) {
        return run_parallel(&args, config, defrag_config, format, &mut out);
    }
    let mut defrag = args.reassemble.then(|| Defragmenter::new(defrag_config));
    let mut failure = None;
    let mut write_error: Option<std::io::Error> = None;
    // Each record is formatted into `line` and written with one call: formatting
    // straight into the BufWriter costs a bounds check and copy per field.
    let mut line = Vec::with_capacity(512);
    let mut emit = |r: &FlowRecord| {
        line.clear();
        write_record(&mut line, format, r);
        if write_error.is_none()
            && let Err(e) = out.write_all(&line)
        {
            write_error = Some(e);
        }
    };
    for file in &args.files {
        // The trace time moves on with every packet read, also with fragments kept for
        // joining and packets the filter drops (as in a run over several workers).
        let latest = std::cell::Cell::new(tracekit::Timestamp::NONE);
        let ended = each_packet_joined_seen(
            file,
            args.filter.as_deref(),
            defrag.as_mut(),
            |packet| {
                if packet.ts().is_known()
                    && (!latest.get().is_known() || packet.ts() > latest.get())
                {
                    latest.set(packet.ts());
                }
            },
            |_, packet| {
                table.advance(latest.get());
                table.add(packet, &mut emit);
                Ok(true)
            },
        )?;
        // What the last packets read (held back or dropped) moved the time to.
        table.advance(latest.get());
        if let Some(e) = ended.error {
            failure = Some((file.clone(), e, ended.read));
            break;
        }
    }
    // The end as a run over several workers ends it: flows idle at the last time stamp
    // end as idle, the rest at the end.
    table.expire(table.now(), &mut emit);
    table.finish(&mut emit);
    if let Some(e) = write_error {
        return Err(e.into());
    }
    out.flush()?;
    drop(out);
    if args.stats {
        let s = table.stats();
        eprintln!(
            "tracekit flows: {} packets, {} not IP; {} flows created (at most {} at once), {} idle, {} cut by the active timeout, {} evicted, {} TCP 5-tuples reused",
            s.packets, s.not_ip, s.created, s.peak, s.idle, s.active, s.evicted, s.reused
        );
        if let Some(d) = &defrag {
            let d = d.stats();
            eprintln!(
                "tracekit flows: {} fragments, {} datagrams reassembled; {} overlaps ({} with different bytes), {} inconsistent, {} too large, {} with too many fragments, {} timed out, {} evicted, {} truncated, {} left incomplete",
                d.fragments,
                d.reassembled,
                d.overlaps,
                d.overlaps_differ,
                d.inconsistent,
                d.too_large,
                d.too_many_fragments,
                d.timed_out,
                d.evicted,
                d.truncated,
                d.in_progress
            );
        }
    }
    if let Some((file, e, read)) = failure {
        eprintln!(
            "tracekit flows: {e}\ntracekit flows: {file}: the flows above cover the {read} packets before the damage"
        );
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Ok)
}

/// One worker of a parallel run: a flow table (and defragmenter) of its own. Its flows
/// still open at the end are handed out by `finish`, in the run.
pub struct FlowsWorker {
    pub table: FlowTable,
    pub defrag: Option<Defragmenter>,
    /// A filter for the joined packets (with `--reassemble`, where it cannot run on the
    /// fragments in the reader).
    pub filter: Option<tracekit::Filter>,
}

impl FlowsWorker {
    /// A worker with no defragmenter and no filter of its own.
    pub fn plain(config: FlowConfig) -> FlowsWorker {
        FlowsWorker {
            table: FlowTable::new(config),
            defrag: None,
            filter: None,
        }
    }

    /// One packet dealt to this worker: the stream's trace time first (also from
    /// fragments the defragmenter keeps), then the packet, joined, filtered, and counted
    /// at the tunnel levels that are this worker's.
    fn count(
        &mut self,
        packet: &tracekit::Packet<'_>,
        (levels, clock): (tracekit::parallel::Levels, Option<tracekit::Timestamp>),
        emit: &mut impl FnMut(&FlowRecord),
    ) -> Result<(), tracekit::Error> {
        if let Some(clock) = clock {
            self.table.advance(clock);
            if let Some(d) = self.defrag.as_mut() {
                d.advance(clock);
            }
        }
        // A packet counted moves the time on in the table; one held back or dropped,
        // here.
        if self.defrag.is_some() || self.filter.is_some() {
            self.table.advance(packet.ts());
        }
        let packet = match self.defrag.as_mut() {
            Some(d) => match d.add(packet).packet() {
                Some(p) => p,
                None => return Ok(()),
            },
            None => *packet,
        };
        if let Some(f) = self.filter.as_mut()
            && !f.matches(&packet)?
        {
            return Ok(());
        }
        self.table
            .add_levels(&packet, |level| levels.contains(level), emit);
        Ok(())
    }
}

impl tracekit::parallel::Worker for FlowsWorker {
    type Item = FlowRecord;

    fn packet(
        &mut self,
        packet: &tracekit::Packet<'_>,
        out: &mut tracekit::parallel::Emit<'_, FlowRecord>,
    ) -> Result<(), tracekit::Error> {
        let note = (out.levels(), out.clock());
        self.count(packet, note, &mut |r| out.emit(*r))
    }
}

/// How many bytes of formatted records a [`FormattingFlows`] worker gathers before it
/// hands them on.
const RUN_CHUNK: usize = 64 << 10;

/// A [`FlowsWorker`] that formats the records it ends during the run itself, in chunks
/// of about [`RUN_CHUNK`] bytes, so that the combining thread only writes bytes. What is
/// left in `buf` after the run, and the flows still open, are written after it.
struct FormattingFlows {
    flows: FlowsWorker,
    format: Format,
    buf: Vec<u8>,
}

impl tracekit::parallel::Worker for FormattingFlows {
    type Item = Vec<u8>;

    fn packet(
        &mut self,
        packet: &tracekit::Packet<'_>,
        out: &mut tracekit::parallel::Emit<'_, Vec<u8>>,
    ) -> Result<(), tracekit::Error> {
        let note = (out.levels(), out.clock());
        let (buf, format) = (&mut self.buf, self.format);
        self.flows.count(packet, note, &mut |r| {
            write_record(buf, format, r);
        })?;
        if self.buf.len() >= RUN_CHUNK {
            out.emit(std::mem::replace(
                &mut self.buf,
                Vec::with_capacity(RUN_CHUNK + (4 << 10)),
            ));
        }
        Ok(())
    }
}

/// Ends the flows still open in the workers of one file at the file's last time stamp
/// over all of them (idle ones as idle), then the rest: what one table would have done.
/// A worker that saw few packets has a clock behind the trace's.
pub fn end_flows(workers: &mut [FlowsWorker], emit: &mut impl FnMut(&FlowRecord)) {
    let end = workers.iter().map(|w| w.table.now()).max().unwrap_or(0);
    for w in workers {
        w.table.expire(end, emit);
        w.table.finish(emit);
    }
}

/// Chunks of formatted records [`end_flows_written`] hands over, and how many may wait.
const END_CHUNK: usize = 1 << 20;
const END_CHUNKS: usize = 16;

/// [`end_flows`] with the records written to `out`: each worker's flows ended and
/// formatted on a thread of its own (formatting is most of this work, and one table can
/// hold most of a trace's flows), then written in worker order, in chunks: the bytes one
/// thread would write, with at most [`END_CHUNKS`] chunks per worker waiting.
fn end_flows_written(
    workers: &mut [FlowsWorker],
    format: Format,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let end = workers.iter().map(|w| w.table.now()).max().unwrap_or(0);
    std::thread::scope(|scope| {
        let mut chunks = Vec::with_capacity(workers.len());
        for w in workers.iter_mut() {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(END_CHUNKS);
            chunks.push(rx);
            scope.spawn(move || {
                let mut buf = Vec::with_capacity(END_CHUNK + (4 << 10));
                let mut gone = false;
                let mut emit = |r: &FlowRecord| {
                    write_record(&mut buf, format, r);
                    if buf.len() >= END_CHUNK && !gone {
                        let full =
                            std::mem::replace(&mut buf, Vec::with_capacity(END_CHUNK + (4 << 10)));
                        gone = tx.send(full).is_err();
                    }
                    if gone {
                        buf.clear();
                    }
                };
                w.table.expire(end, &mut emit);
                w.table.finish(&mut emit);
                if !gone {
                    let _ = tx.send(buf);
                }
            });
        }
        // A write error drops the receivers: the threads stop sending and end.
        for rx in chunks {
            for chunk in rx {
                out.write_all(&chunk)?;
            }
        }
        Ok(())
    })
}

fn run_parallel(
    args: &FlowsArgs,
    config: FlowConfig,
    defrag_config: DefragConfig,
    format: Format,
    out: &mut impl Write,
) -> Result<Outcome> {
    let mut write_error: Option<std::io::Error> = None;
    let mut write = |chunk: &[u8], out: &mut dyn Write| {
        if write_error.is_none()
            && let Err(e) = out.write_all(chunk)
        {
            write_error = Some(e);
        }
    };
    let mut failure = None;
    // The filter runs in the workers, on joined packets, as with one thread; every
    // packet reaches a worker and moves the trace time on, as with one thread.
    let filter = args
        .filter
        .as_deref()
        .map(crate::numbered::compile)
        .transpose()?;
    let mut parallel = tracekit::parallel::Parallel::new(args.threads)
        .distribution(tracekit::parallel::Distribution::FlowLevels)
        .stop_flag(crate::ctrl_c_stop().flag());
    let n = parallel.workers();
    if args.files.len() > 1 {
        // Several files are one trace, as with one thread: each worker's table and
        // defragmenter go on from one file's run to the next, so a flow must reach the
        // same worker in every run. Workers that take turns at a file and a reader
        // thread that deals (a source with no input to share: live capture, a DAG
        // stream) share the flows out in other proportions by default; an equal share
        // for every run keeps them in place.
        parallel = parallel.reader_share(1.0 / n as f64);
    }
    // Worker i's flows between runs (`None` before the first).
    let carried: std::sync::Mutex<Vec<Option<FlowsWorker>>> =
        std::sync::Mutex::new((0..n).map(|_| None).collect());
    for file in &args.files {
        let mut source = crate::open_source(file)?;
        let done = parallel.run(
            &mut source,
            |i| FormattingFlows {
                flows: carried
                    .lock()
                    .ok()
                    .and_then(|mut c| c.get_mut(i).and_then(Option::take))
                    .unwrap_or_else(|| FlowsWorker {
                        table: FlowTable::new(config),
                        defrag: args.reassemble.then(|| Defragmenter::new(defrag_config)),
                        filter: filter.clone(),
                    }),
                format,
                buf: Vec::with_capacity(RUN_CHUNK + (4 << 10)),
            },
            |_, chunk| write(&chunk, out),
        )?;
        let (workers, ended, _) = crate::numbered::ended_run(done);
        // Between files every worker's clock moves on to the trace time the run reached,
        // as one thread's table and defragmenter have it when the next file begins.
        let now = workers.iter().map(|w| w.flows.table.now()).max();
        let mut carried = carried.lock().unwrap_or_else(|e| e.into_inner());
        for (slot, w) in carried.iter_mut().zip(workers) {
            write(&w.buf, out);
            let mut flows = w.flows;
            if let Some(now) = now.filter(|&t| t > 0) {
                let ts = tracekit::Timestamp::from_unix_nanos(now);
                flows.table.advance(ts);
                if let Some(d) = flows.defrag.as_mut() {
                    d.advance(ts);
                }
            }
            *slot = Some(flows);
        }
        if let Some(e) = ended.error {
            failure = Some((file.clone(), e, ended.read));
            break;
        }
    }
    // The flows still open end with the last file, at the trace time of its last
    // packet: a worker that saw few packets ends its idle flows then, as one thread
    // would.
    let mut workers: Vec<FlowsWorker> = carried
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .flatten()
        .collect();
    let end_error = end_flows_written(&mut workers, format, out).err();
    let mut stats = tracekit::flow::FlowStats::default();
    for w in &workers {
        let s = w.table.stats();
        stats.packets += s.packets;
        stats.not_ip += s.not_ip;
        stats.created += s.created;
        stats.peak += s.peak;
        stats.idle += s.idle;
        stats.active += s.active;
        stats.evicted += s.evicted;
        stats.reused += s.reused;
    }
    if let Some(e) = write_error.or(end_error) {
        return Err(e.into());
    }
    out.flush()?;
    if args.stats {
        let s = stats;
        eprintln!(
            "tracekit flows: {} packets, {} not IP; {} flows created (at most {} at once, summed over the workers), {} idle, {} cut by the active timeout, {} evicted, {} TCP 5-tuples reused",
            s.packets, s.not_ip, s.created, s.peak, s.idle, s.active, s.evicted, s.reused
        );
    }
    if let Some((file, e, read)) = failure {
        eprintln!(
            "tracekit flows: {e}\ntracekit flows: {file}: the flows above cover the {read} packets before the damage"
        );
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Ok)
}

#[cfg(test)]
mod tests {
    //! The records as `Display` and serde_json wrote them before [`write_record`]
    //! wrote their bytes itself: the oracle of its output.

    use super::*;
    use crate::columns::aligned;
    use serde::Serialize;
    use std::net::IpAddr;

    #[derive(Serialize)]
    struct FlowJson<'a> {
        proto: Proto,
        src_addr: IpAddr,
        src_port: u16,
        dst_addr: IpAddr,
        dst_port: u16,
        packets: u64,
        bytes: u64,
        packets_ab: u64,
        packets_ba: u64,
        bytes_ab: u64,
        bytes_ba: u64,
        payload_ab: u64,
        payload_ba: u64,
        first_ts_ns: u64,
        last_ts_ns: u64,
        state: &'static str,
        tcp_state: Option<&'static str>,
        history: &'a str,
        vlan: Option<u16>,
        tunnel_level: u8,
        fragments: u64,
        truncated: u64,
        end: &'static str,
    }

    /// An IP protocol as the output spells it: a name for the common ones, else the number
    /// (a string in JSON either way).
    #[derive(Clone, Copy)]
    struct Proto(u8);

    impl std::fmt::Display for Proto {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self.0 {
                6 => f.write_str("tcp"),
                17 => f.write_str("udp"),
                1 => f.write_str("icmp"),
                58 => f.write_str("icmpv6"),
                132 => f.write_str("sctp"),
                n => write!(f, "{n}"),
            }
        }
    }

    impl Serialize for Proto {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_str(self)
        }
    }

    fn to_json(r: &FlowRecord) -> FlowJson<'_> {
        let (src, dst) = (r.src(), r.dst());
        FlowJson {
            proto: Proto(r.protocol()),
            src_addr: src.addr,
            src_port: src.port,
            dst_addr: dst.addr,
            dst_port: dst.port,
            packets: r.packets(),
            bytes: r.wire_bytes(),
            packets_ab: r.orig.packets,
            packets_ba: r.resp.packets,
            bytes_ab: r.orig.wire_bytes,
            bytes_ba: r.resp.wire_bytes,
            payload_ab: r.orig.payload_bytes,
            payload_ba: r.resp.payload_bytes,
            first_ts_ns: r.first.as_unix_nanos(),
            last_ts_ns: r.last.as_unix_nanos(),
            state: r.conn_state(),
            tcp_state: r.tcp_state().map(|s| s.name()),
            history: r.history.as_str(),
            vlan: r.key.vlan(),
            tunnel_level: r.key.tunnel_level(),
            fragments: r.fragments,
            truncated: r.truncated,
            end: r.end.name(),
        }
    }

    /// An optional value as a delimited column: empty when absent.
    struct Optional<T>(Option<T>);

    impl<T: std::fmt::Display> std::fmt::Display for Optional<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match &self.0 {
                Some(v) => v.fmt(f),
                None => Ok(()),
            }
        }
    }

    fn reference_record(
        out: &mut (impl Write + ?Sized),
        format: Format,
        r: &FlowRecord,
    ) -> std::io::Result<()> {
        match format {
            Format::Json => {
                serde_json::to_writer(&mut *out, &to_json(r))?;
                writeln!(out)
            }
            Format::Text => {
                aligned(out, Proto(r.protocol()), 6, false)?;
                out.write_all(b" ")?;
                aligned(out, r.src(), 41, true)?;
                out.write_all(b" -> ")?;
                aligned(out, r.dst(), 41, false)?;
                out.write_all(b" ")?;
                aligned(out, r.packets(), 8, true)?;
                out.write_all(b" ")?;
                aligned(out, r.wire_bytes(), 12, true)?;
                out.write_all(b" ")?;
                aligned(out, r.orig.payload_bytes, 8, true)?;
                out.write_all(b" ")?;
                aligned(out, r.resp.payload_bytes, 8, true)?;
                out.write_all(b" ")?;
                aligned(out, r.conn_state(), 8, false)?;
                out.write_all(b" ")?;
                out.write_all(r.history.as_str().as_bytes())?;
                out.write_all(b"\n")
            }
            Format::Delimited(sep) => {
                let j = to_json(r);
                let sep = sep as char;
                writeln!(
                    out,
                    "{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}{sep}{}",
                    j.proto,
                    j.src_addr,
                    j.src_port,
                    j.dst_addr,
                    j.dst_port,
                    j.packets,
                    j.bytes,
                    j.packets_ab,
                    j.packets_ba,
                    j.bytes_ab,
                    j.bytes_ba,
                    j.payload_ab,
                    j.payload_ba,
                    j.first_ts_ns,
                    j.last_ts_ns,
                    j.state,
                    j.tcp_state.unwrap_or_default(),
                    j.history,
                    Optional(j.vlan),
                    j.tunnel_level,
                    j.fragments,
                    j.truncated,
                    j.end
                )
            }
        }
    }

    /// Every record of traces with IPv4 and IPv6 flows, TCP states, VLANs, tunnels,
    /// fragments and ICMP, in every format, as the reference writes it.
    #[test]
    fn records_are_written_as_display_and_serde_json_wrote_them() {
        let config = FlowConfig {
            key: KeyOptions {
                vlan: true,
                tunnel_level: true,
            },
            ..FlowConfig::default()
        };
        let mut records = 0;
        for name in [
            "ndpi__1kxun.pcap",
            "libtrace__fragtest.erf.gz",
            "libtrace__vlan.pcap",
            "zeek__ipv6-http-atomic-frag.pcap",
            "zeek__dns-edns-ecs.pcap",
        ] {
            let path = tracekit_testdata::corpus(name);
            let mut source = tracekit::open(path.to_str().unwrap()).unwrap();
            let mut table = FlowTable::new(config);
            let mut ended = Vec::new();
            let mut keep = |r: &FlowRecord| ended.push(*r);
            while let Some(p) = source.next_packet().unwrap() {
                table.add(&p, &mut keep);
            }
            table.finish(&mut keep);
            for r in &ended {
                for format in [
                    Format::Json,
                    Format::Text,
                    Format::Delimited(b','),
                    Format::Delimited(b'\t'),
                ] {
                    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
                    write_record(&mut ours, format, r);
                    reference_record(&mut theirs, format, r).unwrap();
                    assert_eq!(
                        String::from_utf8_lossy(&ours),
                        String::from_utf8_lossy(&theirs),
                        "{name}"
                    );
                }
                if records == 0 {
                    // The delimited header names the JSON keys in their order.
                    let mut json = Vec::new();
                    reference_record(&mut json, Format::Json, r).unwrap();
                    let json = String::from_utf8(json).unwrap();
                    let pieces: Vec<&str> = json.split("\":").collect();
                    let keys: Vec<&str> = pieces[..pieces.len() - 1]
                        .iter()
                        .map(|p| p.rsplit('"').next().unwrap())
                        .collect();
                    assert_eq!(header(b','), keys.join(","));
                    assert_eq!(header(b'\t'), keys.join("\t"));
                }
                records += 1;
            }
        }
        assert!(records > 300, "only {records} records");
    }
}
