//! A flow table over a trace: one line per flow when it ends (idle timeout, eviction,
//! port reuse, end of the trace), with the TCP state and a Zeek-style history, and the
//! table's counters at the end. IP fragments are joined first.
//!
//! ```text
//! cargo run --release -p tracekit --example flow_table -- trace.pcap [idle seconds]
//! ```

use tracekit::flow::{DefragConfig, Defragmenter, FlowConfig, FlowRecord, FlowTable};

fn print(r: &FlowRecord) {
    println!(
        "{:<4} {:>45} -> {:<45} {:>6} pkts {:>10} B  {:<6} {:<10} {}",
        r.protocol(),
        r.src().to_string(),
        r.dst().to_string(),
        r.packets(),
        r.wire_bytes(),
        r.conn_state(),
        r.history,
        r.end.name()
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let file = args
        .next()
        .unwrap_or_else(|| "samples/sample.pcap".to_string());
    let idle: f64 = args.next().map_or(Ok(300.0), |s| s.parse())?;
    let mut source = tracekit::open(&file)?;
    let mut defrag = Defragmenter::new(DefragConfig::default());
    let mut table = FlowTable::new(FlowConfig {
        idle_timeout_ns: (idle * 1e9) as u64,
        ..FlowConfig::default()
    });
    let result = loop {
        let packet = match source.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        };
        // Fragments wait for their datagram; everything else goes straight on.
        if let Some(p) = defrag.add(&packet).packet() {
            table.add(&p, &mut print);
        }
    };
    table.finish(&mut print);
    let s = table.stats();
    eprintln!(
        "{} packets, {} flows ({} at once at most), {} idle, {} evicted; {} datagrams reassembled",
        s.packets,
        s.created,
        s.peak,
        s.idle,
        s.evicted,
        defrag.stats().reassembled
    );
    if let Err(e) = result {
        eprintln!("{file}: {e} (the flows above cover every packet before it)");
    }
    Ok(())
}
