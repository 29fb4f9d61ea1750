//! `tracekit fields`: selected fields of every packet, one line each, like
//! `tshark -T fields`.

use std::io::Write;

use anyhow::Result;
use clap::Args;
use tracekit::decode::Decoded;
use tracekit::decode::fields::{Field, write_field};

use crate::Outcome;
use crate::numbered::{defragmenter, each_packet_joined};

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
    /// Join IP fragments before decoding: a datagram's fragments are held and the whole
    /// datagram is printed under the number of the fragment that completed it.
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
    let mut line = String::with_capacity(256);
    let live = crate::is_live(&args.file);
    let mut defrag = defragmenter(args.reassemble);
    let ended = each_packet_joined(
        &args.file,
        args.filter.as_deref(),
        defrag.as_mut(),
        |number, packet| {
            let d = Decoded::new(packet);
            line.clear();
            for (i, field) in fields.iter().enumerate() {
                if i > 0 {
                    line.push_str(&args.separator);
                }
                write_field(&mut line, *field, number, packet, &d);
            }
            line.push('\n');
            out.write_all(line.as_bytes())?;
            if live {
                out.flush()?;
            }
            Ok(true)
        },
    )?;
    out.flush()?;
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
