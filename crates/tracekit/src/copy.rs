//! Copying a trace into a sink, interface descriptions included.

use tracekit_core::{CaptureSource, Error, InterfaceInfo};

use crate::{Sink, Source};

/// Why [`copy`] stopped early.
#[derive(Debug)]
pub enum CopyError {
    /// The source failed (damage, I/O); every packet before it was written.
    Read(Error),
    /// The sink failed; the output is incomplete.
    Write(Error),
}

impl std::fmt::Display for CopyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CopyError::Read(e) => write!(f, "reading stopped: {e}"),
            CopyError::Write(e) => write!(f, "writing failed, the output is incomplete: {e}"),
        }
    }
}

impl std::error::Error for CopyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CopyError::Read(e) | CopyError::Write(e) => Some(e),
        }
    }
}

/// Tells a sink what is known of each output interface before that interface's first
/// packet, once: formats that store interfaces (pcapng) then keep names, link types and
/// resolutions. Interfaces below a new one are described too, so that numbers are kept.
#[derive(Debug, Clone, Default)]
pub struct InterfaceDescriber {
    described: Vec<bool>,
}

impl InterfaceDescriber {
    /// Whether interface `id` has not been described yet.
    #[inline]
    pub fn is_new(&self, id: u32) -> bool {
        self.described.get(id as usize) != Some(&true)
    }

    /// Describes interface `id` and every undescribed one below it to `sink`, with what
    /// `info` knows of each.
    pub fn describe(
        &mut self,
        sink: &mut Sink,
        id: u32,
        info: impl Fn(u32) -> Option<InterfaceInfo>,
    ) -> Result<(), Error> {
        let id = id as usize;
        if self.described.len() <= id {
            self.described.resize(id + 1, false);
        }
        for (i, done) in self.described.iter_mut().enumerate().take(id + 1) {
            if !*done {
                *done = true;
                if let Some(info) = info(i as u32) {
                    sink.describe_interface(i as u32, &info)?;
                }
            }
        }
        Ok(())
    }

    /// Forgets every description (for a new output file).
    pub fn reset(&mut self) {
        self.described.clear();
    }
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
    let mut describer = InterfaceDescriber::default();
    let mut written = 0u64;
    loop {
        let packet = match source.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => return Ok(written),
            Err(e) => return Err((CopyError::Read(e), written)),
        };
        let id = packet.meta().interface;
        let wrote = if describer.is_new(id) {
            describer
                .describe(sink, id, |i| source.interface_info(i))
                .map_err(|e| (CopyError::Write(e), written))?;
            match source.current_packet() {
                Some(packet) => sink.write_packet(&packet),
                None => Ok(()),
            }
        } else {
            sink.write_packet(&packet)
        };
        wrote.map_err(|e| (CopyError::Write(e), written))?;
        written += 1;
        progress(source);
    }
}
