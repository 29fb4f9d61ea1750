//! The traffic generator allocates nothing per packet: a counting global allocator shows
//! as many allocations (its reused buffers) for 3,000 packets as for 1,000.

mod counting;

use counting::allocations;
use tracekit_bench::traffic::{GenOptions, generate};

#[test]
fn the_generator_does_not_allocate_per_packet() {
    let run = |packets| {
        let mut bytes = 0u64;
        let options = GenOptions {
            packets,
            ..GenOptions::default()
        };
        let n = allocations(|| generate(options, |p| bytes += p.data().len() as u64));
        assert!(bytes > 0, "the generator wrote nothing");
        n
    };
    // The count is process-wide, and the test harness's own threads may allocate now and
    // then on a loaded machine: such noise only adds, so the least of three tries is the
    // generator's own difference.
    let tries: Vec<(u64, u64)> = (0..3).map(|_| (run(1_000), run(3_000))).collect();
    let (a, b) = tries
        .iter()
        .copied()
        .min_by_key(|(a, b)| b.abs_diff(*a))
        .unwrap_or_default();
    assert!(a > 0, "the generator's buffers are counted");
    assert_eq!(a, b, "{a} allocations for 1,000 packets, {b} for 3,000");
}
