//! The libtrace paper's Scans analysis on every core: for each source address, the
//! distinct (destination address, port) pairs it sent TCP connection attempts to (SYN
//! without ACK); sources that tried at least THRESHOLD of them are reported as scanners.
//! Each worker keeps its own sets (packets are spread by address pair, so one source's
//! attempts are spread over workers); the sets are joined at the end.
//!
//! ```text
//! cargo run --release -p tracekit --example scans -- trace.pcap.gz [workers] [threshold]
//! ```

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use tracekit::decode::Decoded;
use tracekit::parallel::{Emit, Parallel, Worker};
use tracekit::{Error, Packet};

/// One worker's attempts: source -> set of (destination, port).
#[derive(Default)]
struct Scans(HashMap<IpAddr, HashSet<(IpAddr, u16)>>);

impl Worker for Scans {
    type Item = ();

    fn packet(&mut self, packet: &Packet<'_>, _: &mut Emit<'_, ()>) -> Result<(), Error> {
        let d = Decoded::new(packet);
        if let (Some(tcp), Some(src), Some(dst)) = (d.tcp(), d.src_addr(), d.dst_addr())
            && tcp.syn()
            && !tcp.ack_flag()
        {
            self.0.entry(src).or_default().insert((dst, tcp.dst_port()));
        }
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let file = args
        .next()
        .unwrap_or_else(|| "samples/sample.pcap".to_string());
    let workers: usize = args.next().map_or(Ok(0), |w| w.parse())?;
    let threshold: usize = args.next().map_or(Ok(100), |t| t.parse())?;
    let mut source = tracekit::open(&file)?;
    let done = Parallel::new(workers).run(&mut source, |_| Scans::default(), |_, _| {})?;
    let mut all: HashMap<IpAddr, HashSet<(IpAddr, u16)>> = HashMap::new();
    for w in done.workers {
        for (src, targets) in w.0 {
            all.entry(src).or_default().extend(targets);
        }
    }
    let mut scanners: Vec<(usize, IpAddr)> = all
        .iter()
        .filter(|(_, t)| t.len() >= threshold)
        .map(|(s, t)| (t.len(), *s))
        .collect();
    scanners.sort_by(|a, b| b.cmp(a));
    println!(
        "{} sources tried TCP connections; {} tried at least {threshold} targets:",
        all.len(),
        scanners.len()
    );
    for (n, src) in scanners {
        println!("{src:>40}  {n} targets");
    }
    eprintln!("{}", done.stats);
    if let Some(e) = done.error {
        eprintln!("{file}: {e} (the figures cover every packet before it)");
    }
    Ok(())
}
