//! No allocation per packet in `tracekit::parallel`'s distribution: a counting global
//! allocator shows that a run allocates a fixed amount per worker (threads, read buffers
//! and position lists for the turns in flight) and a few times per read buffer (the
//! shared handles of the window fed and of the window left, the vector of a dealt turn's
//! lists), not per packet: a run over 180,000 packets allocates at most 5 times per
//! extra buffer more than a run over 60,000 (2 workers: 3 times; 3 workers on 2 cores:
//! 3.3-3.6 times, 4.3-5.3 before the buffers and lists of turns in flight were kept).

mod counting;

use counting::allocations;
use tracekit::parallel::{Emit, Parallel, Worker};
use tracekit::{Error, Packet};

fn trace(dir: &std::path::Path, packets: u64) -> (String, u64) {
    let uri = tracekit_bench::inputs::write_pcap(dir, packets);
    let bytes = std::fs::metadata(&uri).unwrap().len();
    (uri, bytes)
}

/// Counts packets and bytes: nothing of its own allocates.
struct Count(u64, u64);

impl Worker for Count {
    type Item = ();
    fn packet(&mut self, p: &Packet<'_>, _: &mut Emit<'_, ()>) -> Result<(), Error> {
        self.0 += 1;
        self.1 += p.caplen() as u64;
        Ok(())
    }
}

#[test]
fn distribution_does_not_allocate_per_packet() {
    let dir = tempfile::tempdir().unwrap();
    for workers in [2usize, 3] {
        let mut runs = Vec::new();
        for packets in [60_000u64, 180_000] {
            let (uri, bytes) = trace(dir.path(), packets);
            let buffers = bytes / tracekit::io::BLOCK_SIZE as u64 + 1;
            // The least of three runs: other threads of the harness only add.
            let mut least = u64::MAX;
            for _ in 0..3 {
                let mut source = tracekit::open(&uri).unwrap();
                let mut seen = 0;
                let n = allocations(|| {
                    let done = Parallel::new(workers)
                        .run(&mut source, |_| Count(0, 0), |_, _| {})
                        .unwrap();
                    seen = done.workers.iter().map(|w| w.0).sum::<u64>();
                });
                assert_eq!(seen, packets);
                least = least.min(n);
            }
            println!(
                "{packets} packets ({buffers} buffers), {workers} workers: {least} allocations"
            );
            assert!(
                least < packets / 50,
                "{least} allocations for {packets} packets"
            );
            assert!(
                least < 4 * buffers + 100 * workers as u64,
                "{least} allocations for {buffers} buffers and {workers} workers"
            );
            runs.push((buffers, least));
        }
        let ((b0, a0), (b1, a1)) = (runs[0], runs[1]);
        assert!(
            a1.saturating_sub(a0) < 5 * (b1 - b0),
            "{workers} workers: {} more allocations for {} more buffers",
            a1.saturating_sub(a0),
            b1 - b0
        );
    }
}
