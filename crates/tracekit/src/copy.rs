//! Copying a trace into a sink, interface descriptions included.

use tracekit_core::{Error, InterfaceInfo, Meta, Packet};

use crate::{Sink, Source};

/// Why [`copy`] stopped early.
#[derive(Debug)]
pub enum CopyError {
    /// The source failed (damage, I/O); every packet before it was written.
    Read(Error),
    /// The sink failed; the output is incomplete ([`Sink::salvage`] keeps and counts
    /// what it holds).
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
///
/// Since describing `id` describes every interface below it, the described interfaces
/// are always `0..next`: one number is the whole state, and describing `n` interfaces
/// costs `n` steps whatever their order (a pcapng file with 200 000 interfaces converts
/// in linear time).
#[derive(Debug, Clone, Default)]
pub struct InterfaceDescriber {
    /// Interfaces `0..next` have been described.
    next: u64,
    /// Interfaces handed to the sink so far (work done), for tests.
    #[cfg(test)]
    steps: u64,
}

impl InterfaceDescriber {
    /// Whether interface `id` has not been described yet.
    #[inline]
    pub fn is_new(&self, id: u32) -> bool {
        u64::from(id) >= self.next
    }

    /// Describes interface `id` and every undescribed one below it to `sink`, with what
    /// `info` knows of each.
    pub fn describe(
        &mut self,
        sink: &mut Sink,
        id: u32,
        info: impl Fn(u32) -> Option<InterfaceInfo>,
    ) -> Result<(), Error> {
        self.describe_with(id, info, |i, info| sink.describe_interface(i, info))
    }

    /// [`InterfaceDescriber::describe`] into any receiver of descriptions.
    fn describe_with(
        &mut self,
        id: u32,
        info: impl Fn(u32) -> Option<InterfaceInfo>,
        mut tell: impl FnMut(u32, &InterfaceInfo) -> Result<(), Error>,
    ) -> Result<(), Error> {
        while self.next <= u64::from(id) {
            // Fits: `next <= id <= u32::MAX` inside the loop.
            let i = self.next as u32;
            self.next += 1;
            #[cfg(test)]
            {
                self.steps += 1;
            }
            if let Some(info) = info(i) {
                tell(i, &info)?;
            }
        }
        Ok(())
    }

    /// Forgets every description (for a new output file).
    pub fn reset(&mut self) {
        self.next = 0;
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
    copy_while(source, sink, |s| {
        progress(s);
        true
    })
}

/// [`copy`], stopping early (with every packet so far written) when `go_on`, called
/// after each packet, returns `false`: for Ctrl-C or a packet budget.
pub fn copy_while(
    source: &mut Source,
    sink: &mut Sink,
    mut go_on: impl FnMut(&Source) -> bool,
) -> Result<u64, (CopyError, u64)> {
    let mut describer = InterfaceDescriber::default();
    let mut written = 0u64;
    loop {
        // The packet is used where `next_packet` put it: moved out of the `Result` into a
        // binding of its own, it was copied with 16-byte loads right after the reader
        // stored its fields in narrower pieces, and such a load waits for those stores
        // (no store forwarding): writing a 400,000-packet trace of 96-byte records, 15.2 ms
        // moved against 11.8 ms borrowed (criterion `write_format/snap96`, `pcap` and
        // `pcap_borrowed`).
        let next = source.next_packet();
        let packet = match next {
            Ok(Some(ref p)) => p,
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
            sink.write_packet(packet)
        };
        wrote.map_err(|e| (CopyError::Write(e), written))?;
        written += 1;
        if !go_on(source) {
            return Ok(written);
        }
    }
}

/// [`copy_while`] through the reader's own loop ([`Source::try_for_each`]): `go_on`,
/// called after each packet, does not see the source, so it cannot move a progress bar,
/// but each packet costs a third of the instructions of the `next_packet` loop (96-byte
/// records: T1's 44 a packet against 159). A packet on an interface not yet described
/// stops the walk; it is described and written here, and the walk goes on after it.
///
/// A pcap file copied into a pcap output of the same link type, byte order and time
/// stamp resolution (`tracekit convert a.pcap b.pcap`) is copied as it is held: after
/// the first packet (which writes the output's file header), runs of records are
/// checked as the reader checks them and copied into the output with one copy per run
/// ([`tracekit_io::Reader::take_verbatim`]); the records such a copy leaves out (longer
/// than the output's snap length, a fraction of a second out of range, one that crosses
/// the reader's window) are read and written one by one. The output is the same bytes
/// as packet by packet. Runs are written on the calling thread while the output takes
/// them at once (`/dev/null`), and handed to the output's writer thread once a write
/// takes long (a file, a pipe).
pub fn copy_until(
    source: &mut Source,
    sink: &mut Sink,
    go_on: impl FnMut() -> bool,
) -> Result<u64, (CopyError, u64)> {
    copy_until_handing_over_after(source, sink, go_on, SLOW_WRITE, MAP_BELOW)
}

/// [`copy_until`], handing verbatim runs to the output's writer thread once two writes
/// in a row take longer than `slow_write` (instead of [`copy_until`]'s 50 µs):
/// `Duration::ZERO` hands them over from the first run, `Duration::MAX` never; and
/// mapping a file read with `read()` to hand them over in the mapping when the records
/// written so far take fewer than `map_below` bytes on average (instead of
/// [`copy_until`]'s 256; 0: never, `usize::MAX`: always). For tests of every way.
#[doc(hidden)]
pub fn copy_until_handing_over_after(
    source: &mut Source,
    sink: &mut Sink,
    mut go_on: impl FnMut() -> bool,
    slow_write: std::time::Duration,
    map_below: usize,
) -> Result<u64, (CopyError, u64)> {
    let mut describer = InterfaceDescriber::default();
    let mut written = 0;
    if let Some(header) = source.verbatim_pcap().map(|r| *r.header()) {
        // The first packet writes the output's header; then the sink can tell.
        match copy_one(source, sink, &mut describer) {
            Ok(false) => return Ok(0),
            Ok(true) => written = 1,
            Err(e) => return Err((e, 0)),
        }
        if !go_on() {
            return Ok(written);
        }
        if sink.takes_verbatim_from(&header) {
            let ways = Ways {
                slow_write,
                map_below,
            };
            return copy_verbatim(source, sink, go_on, describer, written, ways);
        }
    }
    walk_copy(
        source,
        sink,
        |sink, packet| sink.write_packet(packet),
        go_on,
        describer,
        written,
    )
}

/// The smallest run of records worth a copy of its own: with less room than this left
/// in the output's buffer, the buffer is handed on first.
const MIN_VERBATIM_RUN: usize = 64 << 10;

/// The rest of [`copy_until`] for a pcap source and an output that takes its records
/// as they are.
///
/// Runs of records are written straight from the reader's window, on this thread, for
/// as long as the output takes them at once (`/dev/null`, a compressor's buffer). Two
/// writes in a row that take longer than `slow_write` ([`SLOW_WRITE`] for
/// [`copy_until`]) mean that the output does real work (a file's page cache, a pipe's
/// reader): from then on runs are handed to its writer thread instead, so that the
/// writing overlaps with the reading.
///
/// Handed on, when the source is read with `read()` (uncompressed, not mapped), its
/// window buffers are shared ([`tracekit_io::Input::share_windows`]): a run's records
/// are handed to the output's writer thread in the buffer they were read into, once the
/// reader has moved to its next buffer, and are not copied on this thread at all; a
/// record across the window's end is brought into the next window and starts the next
/// run there. Runs the window does not leave (before a record that needs the reader, a
/// stop, the end, damage) are copied into the writer's buffer, as every run is without
/// sharing. A mapped file's runs are handed over in the mapping itself, which outlives
/// the window ([`tracekit_io::Input::shared_mapping`]).
fn copy_verbatim(
    source: &mut Source,
    sink: &mut Sink,
    go_on: impl FnMut() -> bool,
    describer: InterfaceDescriber,
    written: u64,
    ways: Ways,
) -> Result<u64, (CopyError, u64)> {
    let mut way = if ways.slow_write.is_zero() {
        Way::handed_over(source, ways.map_below > 0)
    } else {
        Way::Direct { slow: 0 }
    };
    let copied = copy_verbatim_runs(source, sink, go_on, describer, written, ways, &mut way);
    if way == Way::Shared {
        // The source may be read on: its windows are its own again (buffers it left
        // would otherwise be kept for a taker that is gone).
        source.stop_sharing_verbatim_windows();
    }
    copied
}

/// Two write calls in a row longer than this make [`copy_verbatim`] hand runs to the
/// output's writer thread. Handing a run over costs the thread's wake-up and a buffer that
/// rotates through it: on the 2-vCPU test host, 36-90 µs a 1 MiB window (`tracekit
/// convert` to /dev/null: 24.4 against 32.7 ms for 400,000 full-size packets, 10.9
/// against 14.5 ms cut to 96 B), where writing the window to /dev/null takes about 1 µs
/// and into a file's page cache well over 100 µs.
const SLOW_WRITE: std::time::Duration = std::time::Duration::from_micros(50);

/// How [`copy_verbatim`] chooses its way of writing runs.
#[derive(Clone, Copy)]
struct Ways {
    /// Two writes in a row longer than this hand the runs over ([`SLOW_WRITE`]).
    slow_write: std::time::Duration,
    /// Handed over, a file read with `read()` goes on through a mapping when its
    /// records so far take fewer bytes than this on average ([`MAP_BELOW`]).
    map_below: usize,
}

/// [`copy_until`] maps a file read with `read()` when it hands runs over and its records
/// so far take fewer bytes than this on average. The runs then go to the writer thread
/// in the mapping, and the one copy left is the output's, where `read()` copies them out
/// of the input's page cache first; but the mapping's page faults and the two threads
/// sharing it cost more than that copy once records are long. Into a file, 400,000
/// records (25-41 interleaved runs with `sync` before each, medians; mean record length,
/// read and shared windows against mapped): 99 B 17.4 against 15.0 ms, 137 B 23.2
/// against 21.7 ms, 213 B 31.1 against 30.0 ms, 347 B 43.6 against 64.1 ms, 571 B 62.8
/// against 70.8 ms.
const MAP_BELOW: usize = 256;

/// How [`copy_verbatim`] writes its runs.
#[derive(Clone, Copy, PartialEq)]
enum Way {
    /// On this thread, straight from the reader's window; `slow`: slow writes in a row.
    Direct { slow: u8 },
    /// Handed to the output's writer thread in the buffers the source shares.
    Shared,
    /// Handed to the output's writer thread in the source's file mapping.
    Mapped,
    /// Copied into the writer's buffer (a source that cannot share its windows).
    Copied,
}

impl Way {
    /// The way of runs handed over to the output's writer thread: in the file's
    /// mapping when it is mapped, or when `map` says to map it from here (a file read
    /// with `read()` would copy every run once more, out of its page cache).
    fn handed_over(source: &mut Source, map: bool) -> Way {
        if source.verbatim_mapping().is_some() || (map && source.map_verbatim_input()) {
            Way::Mapped
        } else if source.share_verbatim_windows() {
            Way::Shared
        } else {
            Way::Copied
        }
    }
}

/// The loop of [`copy_verbatim`], which goes from `Direct` to a way that hands runs over
/// when writes are slow.
fn copy_verbatim_runs(
    source: &mut Source,
    sink: &mut Sink,
    mut go_on: impl FnMut() -> bool,
    mut describer: InterfaceDescriber,
    mut written: u64,
    ways: Ways,
    way: &mut Way,
) -> Result<u64, (CopyError, u64)> {
    // Where each record of a run ends, for the sink's count of whole packets out
    // (reused: nothing is allocated per run once it has grown).
    let mut ends: Vec<u32> = Vec::new();
    // Bytes and records of the runs written directly: their mean length decides on a
    // mapping ([`MAP_BELOW`]).
    let mut direct = (0u64, 0u64);
    loop {
        let copied = *way == Way::Copied;
        let (snaplen, room) = sink
            .verbatim_room(if copied { MIN_VERBATIM_RUN } else { 0 })
            .map_err(|e| (CopyError::Write(e), written))?;
        // Runs that do not go into the writer's buffer are bounded by the window alone.
        let room = if copied { room } else { usize::MAX };
        ends.clear();
        let mut stopped = false;
        let generation = source.window_generation();
        let start = source.window_pos();
        let len = source.take_verbatim(
            room,
            snaplen,
            #[inline(always)]
            |end| {
                // A run lies in one window (or fits the buffer), so its offsets fit 32
                // bits.
                ends.push(end as u32);
                stopped = !go_on();
                !stopped
            },
        );
        let run = Run {
            generation,
            start,
            len,
        };
        match *way {
            Way::Direct { .. } | Way::Mapped => {
                if len > 0 {
                    let mapping = (*way == Way::Mapped)
                        .then(|| source.verbatim_mapping())
                        .flatten();
                    let took = match mapping {
                        // The mapping outlives the window: the run is handed over now.
                        Some(map) => sink
                            .write_verbatim_shared(map, start..start + len, &ends)
                            .map(|()| None),
                        None => sink
                            .write_verbatim_direct(source.window_bytes(start, len), &ends)
                            .map(Some),
                    }
                    .map_err(|e| (CopyError::Write(e), written))?;
                    written += ends.len() as u64;
                    if stopped {
                        return Ok(written);
                    }
                    if let (Way::Direct { slow }, Some(took)) = (*way, took) {
                        direct.0 += len as u64;
                        direct.1 += ends.len() as u64;
                        // Two in a row: one can be a moment this thread was not running.
                        let slow = if took > ways.slow_write { slow + 1 } else { 0 };
                        *way = Way::Direct { slow };
                        if slow == 2 {
                            let short = direct.0 < direct.1.saturating_mul(ways.map_below as u64);
                            *way = Way::handed_over(source, short);
                            continue;
                        }
                    }
                }
                // The next record across the window's end: into the window (the run
                // is out), and the next run starts with it.
                match source.refill_verbatim(snaplen) {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(e) => return Err((CopyError::Read(e), written)),
                }
            }
            _ if len > 0 && (copied || stopped) => {
                run.put(source, sink, &ends)
                    .map_err(|e| (CopyError::Write(e), written))?;
                written += ends.len() as u64;
                if stopped {
                    return Ok(written);
                }
                continue;
            }
            Way::Shared => {
                // The next record across the window's end: into the window (the run
                // goes out of the buffer the window leaves), and the next run starts
                // with it.
                let refilled = source.refill_verbatim(snaplen);
                run.put(source, sink, &ends)
                    .map_err(|e| (CopyError::Write(e), written))?;
                written += if len > 0 { ends.len() as u64 } else { 0 };
                match refilled {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(e) => return Err((CopyError::Read(e), written)),
                }
            }
            Way::Copied => {}
        }
        // A record left to the reader: larger than the room, one with a note; or the
        // end of the input, or damage.
        let generation = source.window_generation();
        let copied = copy_one(source, sink, &mut describer);
        if source.window_generation() != generation {
            // Nothing of the window it left is still to be written.
            source.take_retired_window(generation);
        }
        match copied {
            Ok(true) => written += 1,
            Ok(false) => return Ok(written),
            Err(e) => return Err((e, written)),
        }
        if !go_on() {
            return Ok(written);
        }
    }
}

/// A run of records taken verbatim: `len` bytes from `start` of the reader's window in
/// `generation`.
struct Run {
    generation: u64,
    start: usize,
    len: usize,
}

impl Run {
    /// Writes the run (its records end at `ends`): out of the buffer the reader's window
    /// left, when it has moved on since the run was taken (shared windows), or copied
    /// from the window. Lets go of a buffer the window left either way.
    fn put(&self, source: &mut Source, sink: &mut Sink, ends: &[u32]) -> Result<(), Error> {
        if source.window_generation() != self.generation {
            let left = source.take_retired_window(self.generation);
            if self.len == 0 {
                return Ok(());
            }
            let buf = left.ok_or_else(|| {
                Error::invalid_argument("the reader let go of a buffer still to be written")
            })?;
            return sink.write_verbatim_shared(buf, self.start..self.start + self.len, ends);
        }
        if self.len == 0 {
            return Ok(());
        }
        sink.write_verbatim(source.window_bytes(self.start, self.len), ends)
    }
}

/// Copies the next packet of `source` into `sink` (describing its interface first if
/// new); `false` at the end.
fn copy_one(
    source: &mut Source,
    sink: &mut Sink,
    describer: &mut InterfaceDescriber,
) -> Result<bool, CopyError> {
    let id = match source.next_packet() {
        Ok(Some(p)) => p.meta().interface,
        Ok(None) => return Ok(false),
        Err(e) => return Err(CopyError::Read(e)),
    };
    if describer.is_new(id) {
        describer
            .describe(sink, id, |i| source.interface_info(i))
            .map_err(CopyError::Write)?;
    }
    if let Some(packet) = source.current_packet() {
        sink.write_packet(&packet).map_err(CopyError::Write)?;
    }
    Ok(true)
}

/// [`copy_rewriting_while`] through the reader's own loop, as [`copy_until`] is
/// [`copy_while`] through it.
pub fn copy_rewriting_until(
    source: &mut Source,
    sink: &mut Sink,
    mut rewrite: impl FnMut(&mut [u8], &Meta),
    go_on: impl FnMut() -> bool,
) -> Result<u64, (CopyError, u64)> {
    let mut buf = Vec::new();
    walk_copy(
        source,
        sink,
        |sink, packet| {
            buf.clear();
            buf.extend_from_slice(packet.data());
            let meta = *packet.meta();
            rewrite(&mut buf, &meta);
            sink.write_packet(&Packet::new(&buf, meta).with_options(packet.options()))
        },
        go_on,
        InterfaceDescriber::default(),
        0,
    )
}

/// The walk of [`copy_until`] and [`copy_rewriting_until`]: `put` writes a packet;
/// `describer` and `written` are what was described and written before.
#[inline(always)]
fn walk_copy(
    source: &mut Source,
    sink: &mut Sink,
    mut put: impl FnMut(&mut Sink, &Packet<'_>) -> Result<(), Error>,
    mut go_on: impl FnMut() -> bool,
    mut describer: InterfaceDescriber,
    mut written: u64,
) -> Result<u64, (CopyError, u64)> {
    /// Why a walk stopped before the end.
    enum Halt {
        Read(Error),
        Write(Error),
        /// At a packet on an interface not yet described (not written yet).
        NewInterface(u32),
        /// `go_on` said no.
        Stop,
    }
    impl From<Error> for Halt {
        fn from(e: Error) -> Halt {
            Halt::Read(e)
        }
    }
    loop {
        let walk = source.try_for_each(
            #[inline(always)]
            |packet| {
                let id = packet.meta().interface;
                if describer.is_new(id) {
                    return Err(Halt::NewInterface(id));
                }
                put(sink, packet).map_err(Halt::Write)?;
                written += 1;
                if go_on() { Ok(()) } else { Err(Halt::Stop) }
            },
        );
        match walk {
            Ok(_) | Err(Halt::Stop) => return Ok(written),
            Err(Halt::Read(e)) => return Err((CopyError::Read(e), written)),
            Err(Halt::Write(e)) => return Err((CopyError::Write(e), written)),
            Err(Halt::NewInterface(id)) => {
                describer
                    .describe(sink, id, |i| source.interface_info(i))
                    .map_err(|e| (CopyError::Write(e), written))?;
                if let Some(packet) = source.current_packet() {
                    put(sink, &packet).map_err(|e| (CopyError::Write(e), written))?;
                    written += 1;
                }
                if !go_on() {
                    return Ok(written);
                }
            }
        }
    }
}

/// [`copy_while`], passing each packet's bytes through `rewrite` on the way (in one
/// buffer reused for every packet, so nothing is allocated per packet): for tools that
/// change packets in place, such as address anonymisation.
pub fn copy_rewriting_while(
    source: &mut Source,
    sink: &mut Sink,
    mut rewrite: impl FnMut(&mut [u8], &Meta),
    mut go_on: impl FnMut(&Source) -> bool,
) -> Result<u64, (CopyError, u64)> {
    let mut describer = InterfaceDescriber::default();
    let mut buf = Vec::new();
    let mut written = 0u64;
    loop {
        let meta = match source.next_packet() {
            Ok(Some(p)) => {
                buf.clear();
                buf.extend_from_slice(p.data());
                *p.meta()
            }
            Ok(None) => return Ok(written),
            Err(e) => return Err((CopyError::Read(e), written)),
        };
        rewrite(&mut buf, &meta);
        if describer.is_new(meta.interface) {
            describer
                .describe(sink, meta.interface, |i| source.interface_info(i))
                .map_err(|e| (CopyError::Write(e), written))?;
        }
        let options = source.current_packet().and_then(|p| p.options());
        sink.write_packet(&Packet::new(&buf, meta).with_options(options))
            .map_err(|e| (CopyError::Write(e), written))?;
        written += 1;
        if !go_on(source) {
            return Ok(written);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracekit_core::LinkType;

    fn info(_: u32) -> Option<InterfaceInfo> {
        Some(InterfaceInfo::new(LinkType::ETHERNET))
    }

    /// Describing interfaces one by one, as a pcapng file with an IDB before each
    /// interface's first packet asks, is linear: one step per interface (the old
    /// bitmap walked every interface below the new one each time: n²/2 steps).
    #[test]
    fn describing_many_interfaces_is_linear() {
        let n = 50_000u32;
        let mut d = InterfaceDescriber::default();
        let mut told = Vec::new();
        for id in 0..n {
            assert!(d.is_new(id));
            d.describe_with(id, info, |i, _| {
                told.push(i);
                Ok(())
            })
            .unwrap();
            assert!(!d.is_new(id));
            // An interface seen again costs nothing.
            d.describe_with(id / 2, info, |_, _| unreachable!("described already"))
                .unwrap();
        }
        assert_eq!(d.steps, u64::from(n));
        assert_eq!(told, (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn interfaces_below_a_new_one_are_described_once_and_reset_forgets() {
        let mut d = InterfaceDescriber::default();
        let mut told = Vec::new();
        d.describe_with(3, info, |i, _| {
            told.push(i);
            Ok(())
        })
        .unwrap();
        d.describe_with(5, info, |i, _| {
            told.push(i);
            Ok(())
        })
        .unwrap();
        assert_eq!(told, [0, 1, 2, 3, 4, 5]);
        assert!(!d.is_new(4) && d.is_new(6));
        d.reset();
        assert!(d.is_new(0));
    }
}
