//! The libtrace paper's Ports analysis on every core: packets and application bytes per
//! transport protocol and port, one table per worker (the workers take turns at the
//! file), added up at the end. Its table is
//! that of `tracekit ports`.
//!
//! ```text
//! cargo run --release -p tracekit --example ports -- samples/sample.pcap [workers]
//! ```

use tracekit::analysis::Ports;
use tracekit::parallel::{Distribution, Emit, Parallel, Worker};
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
    let file = args.next().unwrap_or("samples/sample.pcap".into());
    let workers: usize = args.next().map_or(Ok(0), |w| w.parse())?;
    let mut source = tracekit::open(&file)?;
    // The tables add up, so no flow needs to stay on one worker: the workers take turns
    // at the file, each reading and counting buffers of its own.
    let done = Parallel::new(workers)
        .distribution(Distribution::Blocks)
        .run(
            &mut source,
            |_| PortsWorker(Ports::new_written()),
            |_, _| {},
        )?;
    let mut ports = Ports::new();
    for w in &done.workers {
        ports.merge(&w.0);
    }
    let columns = [
        "proto",
        "port",
        "src packets",
        "src bytes",
        "dst packets",
        "dst bytes",
    ];
    let [proto, port, sp, sb, dp, db] = columns;
    println!("{proto:<5} {port:>5} {sp:>12} {sb:>15} {dp:>12} {db:>15}");
    for r in ports.rows() {
        let (name, port) = (r.protocol_name(), r.port);
        let (sp, sb, dp, db) = (r.src_packets, r.src_bytes, r.dst_packets, r.dst_bytes);
        println!("{name:<5} {port:>5} {sp:>12} {sb:>15} {dp:>12} {db:>15}");
    }
    if let Some(e) = done.error {
        eprintln!("{file}: {e} (the table covers every packet before it)");
    }
    Ok(())
}
