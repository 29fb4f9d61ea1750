//! `tracekit anon`: prefix-preserving address anonymisation (traceanon).

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use tracekit::anon::{Anonymizer, Checksums, Method, Prefix, key_from_file_bytes, key_from_text};
use tracekit::{CreateOptions, InputFiles, TsResolution};

use crate::Outcome;
use crate::output;
use crate::progress::Progress;

/// Anonymise the IP addresses of a trace (traceanon).
///
/// Crypto-PAn (`--key` or `--keyfile`) maps addresses so that two addresses sharing k
/// leading bits map to addresses sharing exactly k: subnets stay subnets. With the same
/// key, IPv4 results are those of libtrace's `traceanon -c KEY`. IPv6 addresses use the
/// same construction over 128 bits. `--prefix` instead replaces the leading bits of every
/// address with a prefix's (one IPv4 and one IPv6 prefix may be given).
///
/// Rewritten: the packet's own IPv4 or IPv6 addresses, the addresses of the header an
/// ICMP or ICMPv6 error quotes (which travelled the other way: its destination counts as
/// a source), ARP sender (source) and target (destination) addresses, and the same in
/// every packet tunnelled inside (IP in IP, GRE, VXLAN, Teredo, Geneve, GTP-U; up to
/// four levels deep). By default the IP, TCP, UDP, ICMP and ICMPv6
/// checksums covering a rewritten address are updated (a correct checksum stays
/// correct, a wrong one stays wrong); `--checksums zero` zeroes them as traceanon 3
/// does. Without `-s` or `-d`, both sources and destinations are rewritten.
///
/// Example: `tracekit anon --key "$(cat key.txt)" in.pcap anon.pcap`
#[derive(Args)]
pub struct AnonArgs {
    /// Input trace (`-` for standard input).
    input: String,
    /// Output trace (`-` for standard output).
    output: String,
    /// Rewrite source addresses.
    #[arg(short = 's', long = "source")]
    source: bool,
    /// Rewrite destination addresses.
    #[arg(short = 'd', long = "dest")]
    dest: bool,
    /// Crypto-PAn key as text, as traceanon's `-c`: its first 32 bytes, zero-padded.
    #[arg(short = 'c', long, value_name = "KEY", conflicts_with_all = ["keyfile", "prefix"])]
    key: Option<String>,
    /// Crypto-PAn key file: its first 32 bytes, binary or not.
    #[arg(long, value_name = "FILE", conflicts_with = "prefix")]
    keyfile: Option<String>,
    /// Prefix substitution instead of Crypto-PAn, as ADDRESS/BITS (10.0.0.0/8,
    /// 2001:db8::/32); give it twice for both families.
    #[arg(short = 'p', long, value_name = "ADDRESS/BITS")]
    prefix: Vec<Prefix>,
    /// What happens to checksums covering a rewritten address.
    #[arg(long, value_enum, default_value_t = ChecksumMode::Update)]
    checksums: ChecksumMode,
    /// Output format: pcap, pcapng or erf (default: from the output name).
    #[arg(long, value_parser = output::parse_format)]
    format: Option<tracekit::Format>,
    /// Compress the output: gzip, bzip2, zstd, xz, lz4 or none (default: from the output
    /// name's extension).
    #[arg(long, value_parser = output::parse_compression)]
    compress: Option<tracekit::Compression>,
    /// Compression level in the codec's own range.
    #[arg(long)]
    level: Option<i32>,
}

#[derive(Clone, Copy, ValueEnum)]
enum ChecksumMode {
    /// Update them, so that correct checksums stay correct.
    Update,
    /// Set them to zero, as traceanon 3 does.
    Zero,
}

pub fn run(args: AnonArgs) -> Result<Outcome> {
    let method = if let Some(key) = &args.key {
        Method::cryptopan(&key_from_text(key))
    } else if let Some(path) = &args.keyfile {
        let bytes = std::fs::read(path).with_context(|| format!("key file {path}"))?;
        Method::cryptopan(&key_from_file_bytes(&bytes).with_context(|| path.clone())?)
    } else if !args.prefix.is_empty() {
        Method::prefixes(&args.prefix)
    } else {
        bail!("give a Crypto-PAn key (--key or --keyfile) or a --prefix");
    };
    let (source_on, dest_on) = if args.source || args.dest {
        (args.source, args.dest)
    } else {
        (true, true)
    };
    let checksums = match args.checksums {
        ChecksumMode::Update => Checksums::Update,
        ChecksumMode::Zero => Checksums::Zero,
    };
    let mut anon = Anonymizer::new(method, source_on, dest_on, checksums);

    let stop = crate::ctrl_c_stop();
    let inputs = InputFiles::new([&args.input]);
    inputs.check_output(&args.output)?;
    let mut source = crate::open_source(&args.input)?;
    let input_res = source.ts_resolution();
    // Time stamps are kept exactly: µs input stays µs, anything else is written in ns.
    let options = CreateOptions {
        format: args.format,
        ts_resolution: Some(if input_res == TsResolution::MICRO {
            TsResolution::MICRO
        } else {
            TsResolution::NANO
        }),
        allow_precision_loss: true,
        snaplen: source.snaplen().filter(|s| *s != 0),
        link_type: source.declared_link_type(),
        compression: args.compress,
        level: args.level,
        ..CreateOptions::default()
    };
    let mut sink = tracekit::create_checked(&args.output, &options, &inputs)
        .with_context(|| format!("cannot create {}", args.output))?;
    let mut progress = Progress::new(&args.input, source.size_hint());
    let rewrite = |data: &mut [u8], meta: &tracekit::Meta| {
        anon.rewrite(data, meta.link, meta.wire_len);
    };
    // With a bar on the terminal, a loop that moves it; without, the reader's own loop.
    let copied = if progress.is_shown() {
        tracekit::copy_rewriting_while(&mut source, &mut sink, rewrite, |s| {
            progress.tick(|| s.position());
            !stop.is_stopped()
        })
    } else {
        tracekit::copy_rewriting_until(&mut source, &mut sink, rewrite, || !stop.is_stopped())
    };
    progress.finish();
    let exact = false;
    let (read_error, report) = match output::end_copy("anon", &args.output, copied, sink, exact) {
        Ok(ended) => ended,
        Err(outcome) => return Ok(outcome),
    };
    let stats = anon.stats();
    if stats.unchanged > 0 {
        eprintln!(
            "tracekit anon: warning: {} addresses left unchanged: no --prefix of their family",
            stats.unchanged
        );
    }
    if let Some(lost) = report.loss_summary() {
        eprintln!("tracekit anon: {}: {lost}", args.output);
    }
    if stop.is_stopped() && !crate::is_live(&args.input) {
        eprintln!(
            "tracekit anon: interrupted after {} packets: {} is a complete file holding them",
            report.packets, args.output
        );
        return Ok(Outcome::Interrupted);
    }
    if let Some(e) = read_error {
        eprintln!(
            "tracekit anon: {e}\ntracekit anon: {} is a complete file holding the {} packets before the damage",
            args.output, report.packets
        );
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Ok)
}
