//! The libtrace paper's Ports analysis on every core: packets and application bytes per
//! transport protocol and port, one table per worker, added up at the end.
//!
//! ```text
//! cargo run --release -p tracekit --example ports -- samples/sample.pcap [workers]
//! ```

use tracekit::analysis::Ports;
use tracekit::parallel::{Emit, Parallel, Worker};
use tracekit::{Error, Packet};

/// One worker's table.
struct PortsWorker(Ports);

impl Worker for PortsWorker {
    type Item = ();

    fn packet(&mut self, packet: &Packet<'_>, _: &mut Emit<'_, ()>) -> Result<(), Error> {
        self.0.add(packet);
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let file = args
        .next()
        .unwrap_or_else(|| "samples/sample.pcap".to_string());
    let workers: usize = args.next().map_or(Ok(0), |w| w.parse())?;
    let mut source = tracekit::open(&file)?;
    let done = Parallel::new(workers).run(&mut source, |_| PortsWorker(Ports::new()), |_, _| {})?;
    let mut ports = Ports::new();
    for w in &done.workers {
        ports.merge(&w.0);
    }
    for row in ports.rows() {
        println!(
            "{} {:>5}  src {:>10} pkts {:>14} B  dst {:>10} pkts {:>14} B",
            row.protocol_name(),
            row.port,
            row.src_packets,
            row.src_bytes,
            row.dst_packets,
            row.dst_bytes
        );
    }
    eprintln!("{}", done.stats);
    if let Some(e) = done.error {
        eprintln!("{file}: {e} (the table covers every packet before it)");
    }
    Ok(())
}
