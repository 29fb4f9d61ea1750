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
    let (a, b) = (run(1_000), run(3_000));
    assert!(a > 0, "the generator's buffers are counted");
    assert_eq!(a, b, "{a} allocations for 1,000 packets, {b} for 3,000");
}
