//! No allocation per packet on the decode tasks: a counting global allocator shows that
//! T2–T5 allocate exactly as often over 3,000 packets as over 1,000 (only set-up
//! allocations: buffers, the Ports table).

mod counting;

use counting::allocations;
use tracekit_bench::tasks::{t2_tcp, t3_tcpopts, t4_dns, t5_ports};

fn trace(dir: &std::path::Path, packets: u64) -> String {
    tracekit_bench::inputs::write_pcap(dir, packets)
}

#[test]
fn decode_tasks_do_not_allocate_per_packet() {
    let dir = tempfile::tempdir().unwrap();
    let small = trace(dir.path(), 1_000);
    let large = trace(dir.path(), 3_000);
    type Task = (&'static str, fn(&str) -> u64);
    let tasks: [Task; 4] = [
        ("t2", |u| t2_tcp(u).unwrap().packets),
        ("t3", |u| t3_tcpopts(u).unwrap().mss),
        ("t4", |u| t4_dns(u).unwrap().questions),
        ("t5", |u| t5_ports(u).unwrap().packets()),
    ];
    for (name, task) in tasks {
        let mut seen = (0, 0);
        let a = allocations(|| seen.0 = task(&small));
        let b = allocations(|| seen.1 = task(&large));
        assert!(
            seen.1 > seen.0 && seen.0 > 0,
            "{name}: the task saw nothing ({seen:?})"
        );
        assert_eq!(
            a, b,
            "{name}: {a} allocations for 1,000 packets, {b} for 3,000"
        );
    }
}
