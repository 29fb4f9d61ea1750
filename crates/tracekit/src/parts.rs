//! Writing a trace in numbered parts: cut by packets, bytes or packet time (libtrace's
//! tracesplit, `editcap -c/-i`), or rotated every so many seconds (`tcpdump -G`).
//!
//! Parts are named after a prefix: its stem, a dash and a six-digit number from
//! 000000, then its extensions (`parts/p.pcap.gz` gives `parts/p-000000.pcap.gz`,
//! `parts/p-000001.pcap.gz`, ...), so that names sort in packet order. Each part is a
//! complete trace: a [`Sink`] finished before the next one starts.
//!
//! ```no_run
//! use tracekit::{CaptureSource, CreateOptions, Cut, Format, InputFiles, PartNames, PartWriter};
//!
//! let mut source = tracekit::open("big.pcap")?;
//! let names = PartNames::new("parts/big.pcap.zst", Format::Pcap);
//! let inputs = InputFiles::new(["big.pcap"]);
//! let mut parts = PartWriter::new(names, Cut::Packets(100_000), CreateOptions::default(), inputs)?;
//! while source.next_packet()?.is_some() {
//!     parts.write_current(&source)?;
//! }
//! let done = parts.finish();
//! for part in &done.parts {
//!     println!("{}: {} packets", part.file, part.packets);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use tracekit_core::{Error, Packet};

use crate::{
    Compression, CreateOptions, Format, InputFiles, InterfaceDescriber, Kept, Sink, Source,
    create_checked,
};

/// How the parts of a trace are named: stem, number, extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartNames {
    stem: String,
    ext: String,
    format: Format,
    /// Numbered parts, or one file named `stem` ([`PartNames::single`]).
    numbered: bool,
}

impl PartNames {
    /// Names from a prefix with extensions (`parts/p.pcapng.zst`). The format is the
    /// prefix's format extension, else `fallback` (whose extension is then added).
    pub fn new(prefix: &str, fallback: Format) -> PartNames {
        let (dir, file) = match prefix.rfind('/') {
            Some(i) => prefix.split_at(i + 1),
            None => ("", prefix),
        };
        let mut stem = file;
        let mut comp_ext = "";
        if Compression::from_file_name(stem) != Compression::None
            && let Some(i) = stem.rfind('.')
        {
            comp_ext = &stem[i..];
            stem = &stem[..i];
        }
        let (stem, ext, format) = match Format::from_file_name(stem) {
            Some(f) => {
                let i = stem.rfind('.').unwrap_or(stem.len());
                (&stem[..i], stem[i..].to_string(), f)
            }
            None => (stem, format!(".{}", fallback.name()), fallback),
        };
        PartNames {
            stem: format!("{dir}{stem}"),
            ext: format!("{ext}{comp_ext}"),
            format,
            numbered: true,
        }
    }

    /// One file named exactly `file` in `format`, not numbered (an output that is cut
    /// only when asked, like `tcpdump -w` without `-G`): every part has that name, so it
    /// suits [`Cut::Never`].
    pub fn single(file: &str, format: Format) -> PartNames {
        PartNames {
            stem: file.to_string(),
            ext: String::new(),
            format,
            numbered: false,
        }
    }

    /// The parts' format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The name of part `n` (from 0).
    pub fn name(&self, n: usize) -> String {
        if !self.numbered {
            return self.stem.clone();
        }
        format!("{}-{n:06}{}", self.stem, self.ext)
    }

    /// Refuses, before anything is written, names one of whose parts already on disk is
    /// one of `inputs` (`split d/p-000000.pcap d/p.pcap` would overwrite its own input
    /// with its first part). Parts are checked again as they are created.
    pub fn check_existing(&self, inputs: &InputFiles) -> Result<(), Error> {
        if !self.numbered {
            return inputs.check_output(&self.stem);
        }
        let (dir, base) = match self.stem.rfind('/') {
            Some(i) => (&self.stem[..=i], &self.stem[i + 1..]),
            None => ("", self.stem.as_str()),
        };
        let listing = std::fs::read_dir(if dir.is_empty() { "." } else { dir });
        for entry in listing.into_iter().flatten().flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let number = name
                .strip_prefix(base)
                .and_then(|r| r.strip_prefix('-'))
                .and_then(|r| r.strip_suffix(self.ext.as_str()));
            if number.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) {
                inputs.check_output(&format!("{dir}{name}"))?;
            }
        }
        Ok(())
    }
}

/// Where one part ends and the next begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Every this many packets.
    Packets(u64),
    /// Before a packet that would take the part's captured bytes past this many.
    Bytes(u64),
    /// Every this many nanoseconds of packet time, aligned to the epoch (3,600 s parts
    /// start on the hour). An interval without packets makes no part.
    Interval(u64),
    /// Never: one part.
    Never,
}

/// A part written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// Its file name.
    pub file: String,
    /// Packets it holds.
    pub packets: u64,
    /// Its size in bytes, as written.
    pub bytes: u64,
    /// What its format could not carry (see [`tracekit_core::SinkReport::loss_summary`]).
    pub lost: Option<String>,
}

/// A part that could not be created or completed: why, and what its file holds.
#[derive(Debug)]
pub struct PartFailure {
    /// Its file name.
    pub file: String,
    /// Why writing stopped.
    pub error: Error,
    /// What the file holds; `None` when it could not be created.
    pub kept: Option<Kept>,
}

impl std::fmt::Display for PartFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kept {
            None => write!(f, "cannot create {}: {}", self.file, self.error),
            Some(kept) => write!(f, "{}: {} ({} {kept})", self.file, self.error, self.file),
        }
    }
}

impl std::error::Error for PartFailure {}

/// What a [`PartWriter`] wrote.
#[derive(Debug)]
pub struct PartsDone {
    /// The parts, in order (a failed part is listed when it holds packets).
    pub parts: Vec<Part>,
    /// The last part, when it could not be completed.
    pub failure: Option<PartFailure>,
}

impl PartsDone {
    /// Packets in all the parts listed.
    pub fn packets(&self) -> u64 {
        self.parts.iter().map(|p| p.packets).sum()
    }
}

/// Writes packets into numbered parts, starting a new part where the [`Cut`] says.
///
/// A part that cannot be created, a write error (disk full) or a part that cannot be
/// completed stops the writer: the write returns the [`PartFailure`] (the part salvaged,
/// cut after its last whole packet, and listed when it holds packets), and later writes
/// return `Ok(false)`.
pub struct PartWriter {
    names: PartNames,
    cut: Cut,
    options: CreateOptions,
    inputs: InputFiles,
    max_parts: Option<u64>,
    sink: Option<Sink>,
    describer: InterfaceDescriber,
    /// The current part's interval number, packets and captured bytes.
    key: u64,
    in_part: u64,
    part_bytes: u64,
    written: u64,
    parts: Vec<Part>,
    stopped: bool,
}

impl PartWriter {
    /// A writer of parts named by `names`, each created with `options` (its format set
    /// to the names' format unless given) and refused when it is one of `inputs`.
    /// Existing files that would be parts are checked against the inputs first.
    pub fn new(
        names: PartNames,
        cut: Cut,
        mut options: CreateOptions,
        inputs: InputFiles,
    ) -> Result<PartWriter, Error> {
        names.check_existing(&inputs)?;
        if matches!(cut, Cut::Packets(0) | Cut::Bytes(0) | Cut::Interval(0)) {
            return Err(Error::invalid_argument(
                "a part must hold at least one packet, byte or nanosecond",
            ));
        }
        options.format.get_or_insert(names.format);
        Ok(PartWriter {
            names,
            cut,
            options,
            inputs,
            max_parts: None,
            sink: None,
            describer: InterfaceDescriber::default(),
            key: 0,
            in_part: 0,
            part_bytes: 0,
            written: 0,
            parts: Vec::new(),
            stopped: false,
        })
    }

    /// Writes at most `n` parts: the packet that would start part `n + 1` is refused.
    pub fn with_max_parts(mut self, n: u64) -> PartWriter {
        self.max_parts = Some(n);
        self
    }

    /// Packets written into all parts so far.
    pub fn packets_written(&self) -> u64 {
        self.written
    }

    /// The parts completed so far.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// Writes `packet`, completing the current part and starting the next first when
    /// the cut says so. `Ok(false)`: the packet was not written, because it would start
    /// a part past the maximum or the writer has stopped.
    pub fn write_packet(&mut self, packet: &Packet<'_>) -> Result<bool, PartFailure> {
        if !self.ready_for(packet)? {
            return Ok(false);
        }
        let result = match self.sink.as_mut() {
            Some(sink) => sink.write_packet(packet),
            None => Ok(()),
        };
        self.wrote(packet, result)
    }

    /// Writes the packet `source` last returned, describing each of the source's
    /// interfaces to the part before its first packet there (names, link types and
    /// resolutions carry over to pcapng parts). Nothing is written when the source has
    /// no current packet.
    pub fn write_current(&mut self, source: &Source) -> Result<bool, PartFailure> {
        let Some(packet) = source.current_packet() else {
            return Ok(true);
        };
        if !self.ready_for(&packet)? {
            return Ok(false);
        }
        let id = packet.meta().interface;
        let result = match self.sink.as_mut() {
            Some(sink) if self.describer.is_new(id) => self
                .describer
                .describe(sink, id, |i| source.interface_info(i))
                .and_then(|()| sink.write_packet(&packet)),
            Some(sink) => sink.write_packet(&packet),
            None => Ok(()),
        };
        self.wrote(&packet, result)
    }

    /// Starts a part when `packet` belongs to a new one; `false` past the maximum.
    #[inline]
    fn ready_for(&mut self, packet: &Packet<'_>) -> Result<bool, PartFailure> {
        if self.stopped {
            return Ok(false);
        }
        let new_part = match (&self.sink, self.cut) {
            (None, _) => true,
            (Some(_), Cut::Packets(n)) => self.in_part >= n,
            (Some(_), Cut::Bytes(n)) => self.part_bytes + packet.caplen() as u64 > n,
            (Some(_), Cut::Interval(len)) => packet.ts().as_unix_nanos() / len != self.key,
            (Some(_), Cut::Never) => false,
        };
        if !new_part {
            return Ok(true);
        }
        self.start_part(packet)
    }

    /// Completes the current part and starts the next one with `packet`.
    #[cold]
    fn start_part(&mut self, packet: &Packet<'_>) -> Result<bool, PartFailure> {
        if let Some(failure) = self.close_part() {
            self.stopped = true;
            return Err(failure);
        }
        if self.max_parts.is_some_and(|m| self.parts.len() as u64 >= m) {
            self.stopped = true;
            return Ok(false);
        }
        let file = self.names.name(self.parts.len());
        match create_checked(&file, &self.options, &self.inputs) {
            Ok(sink) => self.sink = Some(sink),
            Err(error) => {
                self.stopped = true;
                return Err(PartFailure {
                    file,
                    error,
                    kept: None,
                });
            }
        }
        self.describer.reset();
        (self.in_part, self.part_bytes) = (0, 0);
        if let Cut::Interval(len) = self.cut {
            self.key = packet.ts().as_unix_nanos() / len;
        }
        Ok(true)
    }

    /// Counts a written packet, or salvages the failed part.
    #[inline]
    fn wrote(
        &mut self,
        packet: &Packet<'_>,
        result: Result<(), Error>,
    ) -> Result<bool, PartFailure> {
        let Err(error) = result else {
            self.in_part += 1;
            self.part_bytes += packet.caplen() as u64;
            self.written += 1;
            return Ok(true);
        };
        Err(self.write_failed(error))
    }

    /// Salvages the part a write failed in.
    #[cold]
    fn write_failed(&mut self, error: Error) -> PartFailure {
        self.stopped = true;
        let file = self.names.name(self.parts.len());
        let kept = self.sink.take().map_or(Kept::Nothing, Sink::salvage);
        self.list_salvaged(&file, kept);
        PartFailure {
            file,
            error,
            kept: Some(kept),
        }
    }

    /// Lists a failed part when it holds packets.
    fn list_salvaged(&mut self, file: &str, kept: Kept) {
        if let Some(packets) = kept.packets().filter(|n| *n > 0) {
            self.parts.push(Part {
                file: file.to_string(),
                packets,
                bytes: std::fs::metadata(file).map_or(0, |m| m.len()),
                lost: None,
            });
        }
    }

    /// Completes the part being written, if any, and lists it; a part that cannot be
    /// completed is salvaged, listed when it holds packets, and returned.
    fn close_part(&mut self) -> Option<PartFailure> {
        let done = self.sink.take()?;
        let file = self.names.name(self.parts.len());
        match done.finish_or_salvage() {
            Ok(report) => {
                self.parts.push(Part {
                    file,
                    packets: report.packets,
                    bytes: report.bytes,
                    lost: report.loss_summary(),
                });
                None
            }
            Err(f) => {
                self.list_salvaged(&file, f.kept);
                Some(PartFailure {
                    file,
                    error: f.error,
                    kept: Some(f.kept),
                })
            }
        }
    }

    /// Completes the last part and says what was written.
    pub fn finish(mut self) -> PartsDone {
        let failure = self.close_part();
        PartsDone {
            parts: self.parts,
            failure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let n = |p: &str| {
            let names = PartNames::new(p, Format::Pcapng);
            (names.name(3), names.format())
        };
        assert_eq!(n("out.pcap"), ("out-000003.pcap".into(), Format::Pcap));
        assert_eq!(
            n("d/x.y/out.pcapng.zst"),
            ("d/x.y/out-000003.pcapng.zst".into(), Format::Pcapng)
        );
        assert_eq!(n("p.erf.gz"), ("p-000003.erf.gz".into(), Format::Erf));
        assert_eq!(
            n("parts/p"),
            ("parts/p-000003.pcapng".into(), Format::Pcapng)
        );
        assert_eq!(n("p.gz"), ("p-000003.pcapng.gz".into(), Format::Pcapng));
    }
}
