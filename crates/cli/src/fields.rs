//! `tracekit fields`: selected fields of every packet, one line each, like
//! `tshark -T fields`.

use std::io::Write;

use anyhow::Result;
use clap::Args;
use tracekit::decode::Decoded;
use tracekit::decode::fields::{Field, FieldState, NoState, write_field_with};
use tracekit::flow::FieldTracker;

use crate::Outcome;
use crate::numbered::{self, defragmenter, each_packet_joined};

/// Print the named fields of every packet, one line per packet, like `tshark -T fields`.
///
/// Example: `tracekit fields -e frame.number -e ip.src -e tcp.dstport samples/sample.pcap`
#[derive(Args)]
pub struct FieldsArgs {
    /// A field to print (repeatable; see the list below). Default: frame.number,
    /// frame.time_epoch, ip.src, ip.dst, ip.proto, frame.len.
    #[arg(short = 'e', long = "field", value_name = "FIELD")]
    fields: Vec<String>,
    /// Separator between fields.
    #[arg(long, short = 'E', default_value = "\t", value_name = "S")]
    separator: String,
    /// Print a first line with the field names.
    #[arg(long)]
    header: bool,
    /// Print only packets matching this tcpdump filter expression (packet numbers stay
    /// those of the file).
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// Threads, the reading thread among them, which works too (0: one per core; 1, the
    /// default: everything on one thread). Lines are formatted in parallel and written
    /// in file order: the output is that of one thread. With `--reassemble`, one thread.
    #[arg(long, default_value_t = 1, value_parser = crate::parse_workers)]
    threads: usize,
    /// Join IP fragments before decoding: a datagram's fragments are held and the whole
    /// datagram is printed under the number of the fragment that completed it. Also
    /// follow QUIC connections (the ids their long headers announce), so that
    /// short-header packets have their `quic.dcid`, and join HTTP heads split over TCP
    /// segments (the http fields then show on the segment that completes the head, as in
    /// tshark). Connections are learned from the packets printed: a filter that drops some
    /// of a connection's packets loses that state too.
    #[arg(long)]
    reassemble: bool,
    /// Trace file (`-` for standard input).
    file: String,
}

/// The field list for `--help`.
pub fn field_list() -> String {
    let mut s = String::from("Fields:\n");
    for f in Field::ALL {
        s.push_str(&format!("  {:<22} {}\n", f.name(), f.description()));
    }
    s
}

pub fn run(args: FieldsArgs) -> Result<Outcome> {
    let fields: Vec<Field> = if args.fields.is_empty() {
        vec![
            Field::FrameNumber,
            Field::FrameTimeEpoch,
            Field::IpSrc,
            Field::IpDst,
            Field::IpProto,
            Field::FrameLen,
        ]
    } else {
        args.fields
            .iter()
            .map(|f| f.parse::<Field>())
            .collect::<Result<_, _>>()?
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    if args.header {
        let names: Vec<&str> = fields.iter().map(|f| f.name()).collect();
        writeln!(out, "{}", names.join(&args.separator))?;
    }
    let live = crate::is_live(&args.file);
    if numbered::is_parallel(args.threads) && !live && !args.reassemble {
        let separator = args.separator.as_str();
        let (ended, _) = numbered::ordered_text(
            &args.file,
            args.filter.as_deref(),
            args.threads,
            None,
            |number, packet, line| {
                let d = Decoded::new(packet);
                format_line(line, &fields, separator, number, packet, &d, &NoState)
            },
            &mut out,
        )?;
        out.flush()?;
        return finish(&args, ended);
    }
    let mut line = String::with_capacity(256);
    let mut defrag = defragmenter(args.reassemble);
    let mut tracker = args.reassemble.then(FieldTracker::default);
    let ended = each_packet_joined(
        &args.file,
        args.filter.as_deref(),
        defrag.as_mut(),
        |number, packet| {
            line.clear();
            let d = Decoded::new(packet);
            let state: &dyn FieldState = match tracker.as_mut() {
                Some(t) => {
                    t.observe(&d);
                    t
                }
                None => &NoState,
            };
            format_line(
                &mut line,
                &fields,
                &args.separator,
                number,
                packet,
                &d,
                state,
            );
            out.write_all(line.as_bytes())?;
            if live {
                out.flush()?;
            }
            Ok(true)
        },
    )?;
    out.flush()?;
    finish(&args, ended)
}

/// One packet's line.
fn format_line(
    line: &mut String,
    fields: &[Field],
    separator: &str,
    number: u64,
    packet: &tracekit::Packet<'_>,
    d: &Decoded<'_>,
    state: &dyn FieldState,
) {
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            line.push_str(separator);
        }
        write_field_with(line, *field, number, packet, d, state);
    }
    line.push('\n');
}

fn finish(args: &FieldsArgs, ended: numbered::Ended) -> Result<Outcome> {
    match ended.error {
        Some(e) => {
            eprintln!(
                "tracekit fields: {e}\ntracekit fields: {}: the lines above cover the {} packets before the damage",
                args.file, ended.read
            );
            Ok(Outcome::Failed)
        }
        None => Ok(Outcome::Ok),
    }
}
