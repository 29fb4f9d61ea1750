//! The libtrace paper's Scans analysis over tracekit's flow table: sources that sent TCP
//! SYNs to more than THRESHOLD distinct destinations (address and port) without
//! completing the handshakes. The flow table does the flow upkeep (keys, both
//! directions, timeouts, TCP state); the program keeps one set per source. Its output is
//! that of `tracekit scans`.
//!
//! ```text
//! cargo run --release -p tracekit --example scans -- trace.pcap.gz [threshold]
//! ```

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use tracekit::flow::{FlowConfig, FlowRecord, FlowTable};

/// Failed connection attempts: source -> distinct (destination, port).
#[derive(Default)]
struct Scans {
    failed: HashMap<IpAddr, HashSet<(IpAddr, u16)>>,
    attempts: u64,
}

impl Scans {
    fn add(&mut self, flow: &FlowRecord) {
        if let Some(opener) = flow.attempted_by()
            && !flow.handshake_completed()
        {
            let target = if opener == flow.src() {
                flow.dst()
            } else {
                flow.src()
            };
            self.attempts += 1;
            let targets = self.failed.entry(opener.addr).or_default();
            targets.insert((target.addr, target.port));
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let file = args.next().unwrap_or("samples/sample.pcap".into());
    let threshold: usize = args.next().map_or(Ok(100), |t| t.parse())?;
    let mut source = tracekit::open(&file)?;
    let mut table = FlowTable::new(FlowConfig::default());
    let mut scans = Scans::default();
    while let Some(packet) = source.next_packet()? {
        table.add(&packet, &mut |flow| scans.add(flow));
    }
    table.finish(&mut |flow| scans.add(flow));

    let mut scanners: Vec<(usize, IpAddr, usize)> = (scans.failed.iter())
        .filter(|(_, targets)| targets.len() > threshold)
        .map(|(src, t)| {
            (
                t.len(),
                *src,
                t.iter().map(|d| d.0).collect::<HashSet<_>>().len(),
            )
        })
        .collect();
    scanners.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    println!("{:>39} {:>12} {:>8}", "source", "destinations", "hosts");
    for (destinations, src, hosts) in &scanners {
        println!("{:>39} {destinations:>12} {hosts:>8}", src.to_string());
    }
    println!(
        "\n{} failed TCP connection attempts from {} sources; {} sources above {threshold}",
        scans.attempts,
        scans.failed.len(),
        scanners.len()
    );
    Ok(())
}
