//! The benchmark tasks, written against the public tracekit API as a user would.

use tracekit::{CaptureSource, Error, ReadMode};

/// Task T1: count packets and captured bytes.
pub fn t1_count(uri: &str, mode: ReadMode) -> Result<(u64, u64), Error> {
    t1_count_with(uri, mode, 0)
}

/// Task T1 with a decompression thread count (0: one per core).
pub fn t1_count_with(uri: &str, mode: ReadMode, threads: usize) -> Result<(u64, u64), Error> {
    let options = tracekit::OpenOptions {
        read_mode: mode,
        threads,
        ..Default::default()
    };
    let mut source = tracekit::open_with(uri, &options)?;
    let (mut packets, mut bytes) = (0u64, 0u64);
    while let Some(p) = source.next_packet()? {
        packets += 1;
        bytes += p.caplen() as u64;
    }
    Ok((packets, bytes))
}

/// Task T1 over the packets a tcpdump filter expression accepts.
pub fn t1_count_filtered(uri: &str, expr: &str) -> Result<(u64, u64), Error> {
    let mut source = tracekit::open(uri)?.with_filter(expr)?;
    let (mut packets, mut bytes) = (0u64, 0u64);
    while let Some(p) = source.next_packet()? {
        packets += 1;
        bytes += p.caplen() as u64;
    }
    Ok((packets, bytes))
}
