//! Writes a synthetic trace: `tracekit-gen OUT.pcap [PACKETS] [SEED]`.

use tracekit::{CreateOptions, TsResolution};
use tracekit_bench::traffic::{GenOptions, generate};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(out) = args.get(1) else {
        eprintln!("usage: tracekit-gen OUT.pcap [PACKETS] [SEED]");
        std::process::exit(2);
    };
    let mut options = GenOptions::default();
    if let Some(n) = args.get(2) {
        options.packets = n.parse().expect("PACKETS must be a number");
    }
    if let Some(s) = args.get(3) {
        options.seed = s.parse().expect("SEED must be a number");
    }
    let create = CreateOptions {
        ts_resolution: Some(TsResolution::MICRO),
        snaplen: Some(65535),
        ..CreateOptions::default()
    };
    let mut sink = tracekit::create(out, &create).unwrap_or_else(|e| {
        eprintln!("tracekit-gen: {e}");
        std::process::exit(1)
    });
    let mut failure = None;
    generate(options, |p| {
        if failure.is_none() {
            failure = sink.write_packet(p).err();
        }
    });
    if let Some(e) = failure {
        eprintln!("tracekit-gen: {e}");
        std::process::exit(1);
    }
    let report = sink.finish().unwrap_or_else(|e| {
        eprintln!("tracekit-gen: {e}");
        std::process::exit(1)
    });
    eprintln!("tracekit-gen: wrote {} packets to {out}", report.packets);
}
