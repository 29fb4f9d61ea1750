//! Copying a trace into a sink, interface descriptions included.

use tracekit_core::{CaptureSource, Error};

use crate::{Sink, Source};

/// Why [`copy`] stopped early.
#[derive(Debug)]
pub enum CopyError {
    /// The source failed (damage, I/O); every packet before it was written.
    Read(Error),
    /// The sink failed; the output is incomplete.
    Write(Error),
}

/// Copies every packet of `source` into `sink`, describing each source interface to
/// the sink before its first packet (and, for sources with numbered interfaces, every
/// interface below it, so that numbers are kept). `progress` is called once per packet
/// with the source, for progress display. Returns the number of packets written; the
/// sink is not finished.
pub fn copy(
    source: &mut Source,
    sink: &mut Sink,
    mut progress: impl FnMut(&Source),
) -> Result<u64, (CopyError, u64)> {
    let mut described: Vec<bool> = Vec::new();
    let mut written = 0u64;
    loop {
        let packet = match source.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => return Ok(written),
            Err(e) => return Err((CopyError::Read(e), written)),
        };
        let id = packet.meta().interface as usize;
        if described.get(id) != Some(&true) {
            let packet = packet.to_owned();
            if described.len() <= id {
                described.resize(id + 1, false);
            }
            for (i, done) in described.iter_mut().enumerate().take(id + 1) {
                if !*done {
                    *done = true;
                    if let Some(info) = source.interface_info(i as u32) {
                        sink.describe_interface(i as u32, &info)
                            .map_err(|e| (CopyError::Write(e), written))?;
                    }
                }
            }
            sink.write_packet(&packet.as_packet())
                .map_err(|e| (CopyError::Write(e), written))?;
        } else {
            sink.write_packet(&packet)
                .map_err(|e| (CopyError::Write(e), written))?;
        }
        written += 1;
        progress(source);
    }
}
