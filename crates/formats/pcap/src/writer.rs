//! pcap writer.

use std::io::Write;

use tracekit_io::RecordBuffer;

use tracekit_core::{
    CaptureSink, Direction, Error, LinkType, Packet, PacketKind, SinkReport, TsResolution,
};

use crate::header::{ByteOrder, FileHeader};
use crate::reader::DEFAULT_MAX_CAPLEN;

/// How a [`PcapWriter`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PcapWriterOptions {
    /// Time stamp resolution: [`TsResolution::MICRO`] or [`TsResolution::NANO`].
    pub resolution: TsResolution,
    /// Snap length written in the header; longer packets are cut to it (their wire length
    /// is kept).
    pub snaplen: u32,
    /// Link type of the file; `None` takes the first packet's.
    pub link_type: Option<LinkType>,
    /// Byte order of the file (native by default, as libpcap writes).
    pub byte_order: ByteOrder,
    /// Whether time stamps that the resolution cannot hold exactly may be rounded down
    /// (counted in the report). When `false`, such a packet is an error.
    pub allow_precision_loss: bool,
}

impl Default for PcapWriterOptions {
    fn default() -> PcapWriterOptions {
        PcapWriterOptions {
            resolution: TsResolution::MICRO,
            snaplen: DEFAULT_MAX_CAPLEN,
            link_type: None,
            byte_order: ByteOrder::NATIVE,
            allow_precision_loss: false,
        }
    }
}

impl PcapWriterOptions {
    /// Nanosecond resolution, everything else default.
    pub fn nanos() -> PcapWriterOptions {
        PcapWriterOptions {
            resolution: TsResolution::NANO,
            ..PcapWriterOptions::default()
        }
    }
}

/// What a pcap file cannot carry, counted per packet.
#[derive(Debug, Default)]
struct Losses {
    first_interface: Option<u32>,
    interface: u64,
    direction: u64,
    loss_counters: u64,
    comments: u64,
    precision: u64,
    snapped: u64,
    meta_records: u64,
}

/// Writes a classic pcap file.
///
/// ```
/// use tracekit_core::{LinkType, Meta, Packet, Timestamp};
/// use tracekit_pcap::{PcapReader, PcapWriter, PcapWriterOptions};
///
/// let mut w = PcapWriter::new(Vec::new(), PcapWriterOptions::nanos())?;
/// let frame = [0xffu8; 60];
/// w.write_packet(&Packet::new(&frame, Meta::new(Timestamp::from_nanos(10, 7), 60, LinkType::ETHERNET)))?;
/// let (bytes, report) = w.finish_into_inner()?;
/// assert_eq!(report.packets, 1);
///
/// let mut r = PcapReader::from_reader(std::io::Cursor::new(bytes))?;
/// let p = r.next_packet()?.unwrap();
/// assert_eq!((p.ts().secs(), p.ts().subsec_nanos(), p.data()), (10, 7, &frame[..]));
/// # Ok::<(), tracekit_core::Error>(())
/// ```
pub struct PcapWriter<W: Write> {
    out: RecordBuffer<W>,
    options: PcapWriterOptions,
    link_type: Option<LinkType>,
    packets: u64,
    bytes: u64,
    losses: Losses,
}

impl<W: Write> PcapWriter<W> {
    /// Hands each full buffer to `exchange` instead of copying it into the output (see
    /// [`RecordBuffer::hand_buffers_to`]): for an output that writes on a thread of its own.
    pub fn hand_buffers_to(&mut self, exchange: tracekit_io::BufferExchange) {
        self.out.hand_buffers_to(exchange);
    }

    /// A writer over `out` (buffered internally: [`tracekit_io::WRITE_BUFFER`]). The file header is
    /// written with the first packet, or by `finish` for an empty file.
    pub fn new(out: W, options: PcapWriterOptions) -> Result<PcapWriter<W>, Error> {
        if options.resolution != TsResolution::MICRO && options.resolution != TsResolution::NANO {
            return Err(Error::invalid_argument(format!(
                "pcap stores time stamps in µs or ns, not {}",
                options.resolution
            )));
        }
        Ok(PcapWriter {
            out: RecordBuffer::new(out),
            link_type: None,
            options,
            packets: 0,
            bytes: 0,
            losses: Losses::default(),
        })
    }

    /// Packets written so far (handed to the output; some may still sit in the buffer).
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Bytes of the file so far, headers included, where the last written packet ends
    /// (handed to the output; some may still sit in the buffer).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Options in use.
    pub fn options(&self) -> &PcapWriterOptions {
        &self.options
    }

    fn write_header(&mut self, link_type: LinkType) -> Result<(), Error> {
        let header = FileHeader {
            byte_order: self.options.byte_order,
            resolution: self.options.resolution,
            modified: false,
            version: (2, 4),
            thiszone: 0,
            sigfigs: 0,
            snaplen: self.options.snaplen,
            link_type,
            fcs_len: None,
        };
        self.out.put(&header.to_bytes())?;
        self.bytes += 24;
        self.link_type = Some(link_type);
        Ok(())
    }

    /// Writes one packet.
    #[inline]
    pub fn write_packet(&mut self, packet: &Packet<'_>) -> Result<(), Error> {
        let meta = packet.meta();
        if meta.kind == PacketKind::MetaRecord {
            self.losses.meta_records += 1;
            return Ok(());
        }
        let file_link = match self.link_type {
            Some(l) => l,
            None => {
                let l = self.options.link_type.unwrap_or(meta.link);
                self.write_header(l)?;
                l
            }
        };
        if meta.link != file_link {
            return Err(Error::would_lose(format!(
                "a pcap file holds one link type: this packet is {} but the file is {} (write pcapng to keep both)",
                meta.link, file_link
            ))
            .with_packet(self.packets + 1));
        }
        let res = self.options.resolution;
        if meta.ts.resolution() != res && !meta.ts.is_exact_in(res) {
            if !self.options.allow_precision_loss {
                let hint = if res == TsResolution::MICRO {
                    "allow precision loss to round it, or write ns"
                } else {
                    "allow precision loss to round it, or write pcapng"
                };
                return Err(Error::would_lose(format!(
                    "time stamp {} cannot be written exactly in {res} resolution ({hint})",
                    meta.ts
                ))
                .with_packet(self.packets + 1));
            }
            self.losses.precision += 1;
        }
        self.note_losses(packet);
        let data = packet.data();
        let caplen = data.len().min(self.options.snaplen as usize);
        if caplen < data.len() {
            self.losses.snapped += 1;
        }
        let bo = self.options.byte_order;
        let (secs, frac) = meta.ts.split(res);
        let Ok(secs) = u32::try_from(secs) else {
            return Err(Error::unsupported(format!(
                "time stamp {} is after 2106: classic pcap stores 32-bit seconds (write pcapng)",
                meta.ts
            )));
        };
        let fields = [secs, frac as u32, caplen as u32, meta.wire_len];
        self.out.put_head(
            |rec: &mut [u8; 16]| bo.put_u32s(fields, rec),
            &data[..caplen],
        )?;
        tracekit_io::count_record(&mut self.packets, &mut self.bytes, 16 + caplen as u64);
        Ok(())
    }

    /// Whether records of a file with `header` can be written as that file holds them
    /// ([`PcapWriter::write_verbatim`]): once this file's header is written, when both
    /// have the same link type, byte order and resolution, and standard record headers.
    /// Records longer than the snap length are not for a verbatim copy
    /// ([`PcapWriterOptions::snaplen`] bounds what the reader hands over).
    pub fn takes_verbatim_from(&self, header: &FileHeader) -> bool {
        self.link_type == Some(header.link_type)
            && self.options.link_type.is_none_or(|l| l == header.link_type)
            && !header.modified
            && header.byte_order == self.options.byte_order
            && header.resolution == self.options.resolution
    }

    /// Free bytes in the write buffer, handing it to the output first when fewer than
    /// `min` are free: a run of records of at most this size is written with one copy.
    #[inline]
    pub fn verbatim_room(&mut self, min: usize) -> Result<usize, Error> {
        Ok(self.out.room(min)?)
    }

    /// Writes `count` records as a file this writer [takes
    /// verbatim](PcapWriter::takes_verbatim_from) holds them (`tracekit_io::Reader::
    /// take_verbatim`): record headers and data, each record at most the snap length,
    /// its fraction below a second. What such records would need of `write_packet` is
    /// nothing but the copy: their link type, interface, resolution and length are the
    /// file's.
    #[inline]
    pub fn write_verbatim(&mut self, records: &[u8], count: u64) -> Result<(), Error> {
        debug_assert!(self.link_type.is_some(), "the file header is written first");
        self.out.put(records)?;
        self.packets += count;
        self.bytes += records.len() as u64;
        Ok(())
    }

    /// [`PcapWriter::write_verbatim`] of `count` records taking `len` bytes that `hand`
    /// gives the output itself, after the bytes buffered before, which it is given to
    /// write first: for an output that can take the records without a copy (a writer
    /// thread handed the reader's buffer, or a write straight from it).
    pub fn write_verbatim_by(
        &mut self,
        len: usize,
        count: u64,
        hand: impl FnOnce(&mut W, &[u8]) -> std::io::Result<()>,
    ) -> Result<(), Error> {
        debug_assert!(self.link_type.is_some(), "the file header is written first");
        self.out.write_buffered_with(hand)?;
        self.packets += count;
        self.bytes += len as u64;
        Ok(())
    }

    #[inline]
    fn note_losses(&mut self, packet: &Packet<'_>) {
        let meta = packet.meta();
        let l = &mut self.losses;
        match l.first_interface {
            None => l.first_interface = Some(meta.interface),
            Some(i) if i != meta.interface => l.interface += 1,
            Some(_) => {}
        }
        if meta.direction != Direction::Unknown {
            l.direction += 1;
        }
        if meta.loss != 0 {
            l.loss_counters += 1;
        }
        if packet.options().is_some_and(|o| o.has_comments()) {
            l.comments += 1;
        }
    }

    fn report(&self) -> SinkReport {
        let mut r = SinkReport {
            packets: self.packets,
            bytes: self.bytes,
            lost: Vec::new(),
        };
        let l = &self.losses;
        r.add_loss("interface id", l.interface);
        r.add_loss("direction", l.direction);
        r.add_loss("loss counter", l.loss_counters);
        r.add_loss("comments", l.comments);
        r.add_loss("sub-resolution time stamp digits", l.precision);
        r.add_loss("bytes beyond the snap length", l.snapped);
        r.add_loss("metadata record (not written)", l.meta_records);
        r
    }

    /// Writes the header of an empty file if needed, flushes, and returns the inner
    /// writer with the report.
    pub fn finish_into_inner(mut self) -> Result<(W, SinkReport), Error> {
        if self.link_type.is_none() {
            self.write_header(self.options.link_type.unwrap_or(LinkType::ETHERNET))?;
        }
        let report = self.report();
        let inner = self.out.into_inner()?;
        Ok((inner, report))
    }

    /// Flushes and reports; `Ok` means the output is complete.
    pub fn finish(self) -> Result<SinkReport, Error> {
        self.finish_into_inner().map(|(_, report)| report)
    }
}

impl<W: Write> CaptureSink for PcapWriter<W> {
    fn write_packet(&mut self, packet: &Packet<'_>) -> Result<(), Error> {
        PcapWriter::write_packet(self, packet)
    }

    fn finish(self: Box<Self>) -> Result<SinkReport, Error> {
        PcapWriter::finish(*self)
    }
}
