//! ERF writer.

use std::io::Write;

use tracekit_io::RecordBuffer;

use tracekit_core::{
    CaptureSink, Direction, Error, LinkType, Packet, PacketKind, SinkReport, Timestamp,
};

use crate::record::{EXT_LEN, ErfType, HEADER_LEN};

/// How an [`ErfWriter`] writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErfWriterOptions {
    /// Cut packets to this many bytes (wire length kept).
    pub snaplen: Option<u32>,
}

#[derive(Debug, Default)]
struct Losses {
    interface: u64,
    direction: u64,
    comments: u64,
    loss_counter: u64,
    wire_len: u64,
    snapped: u64,
    meta_records: u64,
    padded_capture: u64,
    raw_link: u64,
}

/// Writes ERF records: the type from the link type (Ethernet, IPv4/IPv6, HDLC; whole
/// `LINKTYPE_ERF` records are written back as they were), 8-byte aligned record lengths,
/// the interface in the flags, the loss counter. What ERF cannot carry (direction,
/// interfaces above 3, comments, counts above 16 bits) is counted in the report.
pub struct ErfWriter<W: Write> {
    out: RecordBuffer<W>,
    options: ErfWriterOptions,
    packets: u64,
    bytes: u64,
    losses: Losses,
}

const PAD: [u8; 8] = [0; 8];

/// Largest record length (16-bit field, multiple of 8).
const MAX_RLEN: usize = 65_528;

impl<W: Write> ErfWriter<W> {
    /// Hands each full buffer to `exchange` instead of copying it into the output (see
    /// [`RecordBuffer::hand_buffers_to`]): for an output that writes on a thread of its own.
    pub fn hand_buffers_to(&mut self, exchange: tracekit_io::BufferExchange) {
        self.out.hand_buffers_to(exchange);
    }

    /// A writer over `out`, buffered internally.
    pub fn new(out: W, options: ErfWriterOptions) -> ErfWriter<W> {
        ErfWriter {
            out: RecordBuffer::new(out),
            options,
            packets: 0,
            bytes: 0,
            losses: Losses::default(),
        }
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

    /// Writes one packet as one record.
    pub fn write_packet(&mut self, packet: &Packet<'_>) -> Result<(), Error> {
        let meta = packet.meta();
        if meta.kind == PacketKind::MetaRecord && meta.link != LinkType::ERF {
            self.losses.meta_records += 1;
            return Ok(());
        }
        let data = packet.data();
        if meta.link == LinkType::ERF {
            return self.write_record(packet);
        }
        let (erf_type, type_header): (ErfType, &[u8]) = match meta.link {
            LinkType::ETHERNET => (ErfType::ETH, &[0, 0]),
            LinkType::IPV4 => (ErfType::IPV4, &[]),
            LinkType::IPV6 => (ErfType::IPV6, &[]),
            LinkType::RAW => match data.first().map(|b| b >> 4) {
                Some(4) => {
                    self.losses.raw_link += 1;
                    (ErfType::IPV4, &[])
                }
                Some(6) => {
                    self.losses.raw_link += 1;
                    (ErfType::IPV6, &[])
                }
                _ => {
                    return Err(Error::would_lose(
                        "a raw-IP packet that is neither IPv4 nor IPv6 has no ERF record type",
                    )
                    .with_packet(self.packets + 1));
                }
            },
            LinkType::PPP_HDLC | LinkType::C_HDLC => (ErfType::HDLC_POS, &[]),
            other => {
                return Err(Error::would_lose(format!(
                    "ERF has no record type for link type {other} (write pcap or pcapng to keep it)"
                ))
                .with_packet(self.packets + 1));
            }
        };
        let framing = HEADER_LEN + type_header.len();
        let mut caplen = data.len();
        if let Some(s) = self.options.snaplen {
            caplen = caplen.min(s as usize);
        }
        caplen = caplen.min(MAX_RLEN - framing);
        if caplen < data.len() {
            self.losses.snapped += 1;
        }
        let rlen = (framing + caplen + 7) & !7;
        if (caplen as u64) < u64::from(meta.wire_len) && rlen != framing + caplen {
            // The reader will see the alignment padding as captured bytes.
            self.losses.padded_capture += 1;
        }
        let wlen = if meta.wire_len > u32::from(u16::MAX) {
            self.losses.wire_len += 1;
            u16::MAX
        } else {
            meta.wire_len as u16
        };
        let lctr = if meta.loss > u32::from(u16::MAX) {
            self.losses.loss_counter += 1;
            u16::MAX
        } else {
            meta.loss as u16
        };
        if meta.interface > 3 {
            self.losses.interface += 1;
        }
        if meta.direction != Direction::Unknown {
            self.losses.direction += 1;
        }
        if packet.options().is_some_and(|o| o.has_comments()) {
            self.losses.comments += 1;
        }
        // varying-length records; interface in bits 0-1
        let flags = 0x04 | (meta.interface & 0x03) as u8;
        let mut head = [0u8; HEADER_LEN];
        head[0..8].copy_from_slice(&erf_time(meta.ts)?.to_le_bytes());
        head[8] = erf_type.0;
        head[9] = flags;
        head[10..12].copy_from_slice(&(rlen as u16).to_be_bytes());
        head[12..14].copy_from_slice(&lctr.to_be_bytes());
        head[14..16].copy_from_slice(&wlen.to_be_bytes());
        self.out.put(&head)?;
        self.out.put(type_header)?;
        self.out.put(&data[..caplen])?;
        self.out.put(&PAD[..rlen - framing - caplen])?;
        tracekit_io::count_record(&mut self.packets, &mut self.bytes, rlen as u64);
        Ok(())
    }

    /// Writes a whole `LINKTYPE_ERF` record back, with the packet's time stamp and its
    /// record length set to the bytes present. Such records keep their own length, so a
    /// record that was not 8-byte aligned in its source (libtrace writes META records
    /// that way) is copied bit for bit.
    fn write_record(&mut self, packet: &Packet<'_>) -> Result<(), Error> {
        let data = packet.data();
        if data.len() < HEADER_LEN {
            return Err(Error::malformed(format!(
                "a LINKTYPE_ERF packet of {} bytes is shorter than an ERF header",
                data.len()
            ))
            .with_packet(self.packets + 1));
        }
        let mut framing = HEADER_LEN;
        let mut more = data[8] & 0x80 != 0;
        while more && framing + EXT_LEN <= data.len() {
            more = data[framing] & 0x80 != 0;
            framing += EXT_LEN;
        }
        let body = &data[HEADER_LEN..data.len().min(MAX_RLEN)];
        let rlen = HEADER_LEN + body.len();
        let mut head = [0u8; HEADER_LEN];
        head.copy_from_slice(&data[..HEADER_LEN]);
        head[0..8].copy_from_slice(&erf_time(packet.ts())?.to_le_bytes());
        head[10..12].copy_from_slice(&(rlen as u16).to_be_bytes());
        self.out.put(&head)?;
        self.out.put(body)?;
        tracekit_io::count_record(&mut self.packets, &mut self.bytes, rlen as u64);
        Ok(())
    }

    fn report(&self) -> SinkReport {
        let mut r = SinkReport {
            packets: self.packets,
            bytes: self.bytes,
            lost: Vec::new(),
        };
        let l = &self.losses;
        r.add_loss("interface id above 3", l.interface);
        r.add_loss("direction", l.direction);
        r.add_loss("comments", l.comments);
        r.add_loss("loss counter above 65535", l.loss_counter);
        r.add_loss("wire length above 65535", l.wire_len);
        r.add_loss("bytes beyond the snap length or 64 KiB", l.snapped);
        r.add_loss("metadata record (not written)", l.meta_records);
        r.add_loss("link type RAW (written as IPv4/IPv6 records)", l.raw_link);
        r.add_loss(
            "exact capture length of truncated packets (ERF pads records to 8 bytes)",
            l.padded_capture,
        );
        r
    }

    /// Flushes and returns the inner writer with the report.
    pub fn finish_into_inner(self) -> Result<(W, SinkReport), Error> {
        let report = self.report();
        let inner = self.out.into_inner()?;
        Ok((inner, report))
    }

    /// Flushes and reports; `Ok` means the output is complete.
    pub fn finish(self) -> Result<SinkReport, Error> {
        self.finish_into_inner().map(|(_, r)| r)
    }
}

impl<W: Write> CaptureSink for ErfWriter<W> {
    fn write_packet(&mut self, packet: &Packet<'_>) -> Result<(), Error> {
        ErfWriter::write_packet(self, packet)
    }

    fn finish(self: Box<Self>) -> Result<SinkReport, Error> {
        ErfWriter::finish(*self)
    }
}

/// The 32.32 value of a time stamp; ERF cannot store one after 2106.
fn erf_time(ts: Timestamp) -> Result<u64, Error> {
    ts.try_to_erf().ok_or_else(|| {
        Error::unsupported(format!(
            "time stamp {ts} is after 2106: ERF stores 32-bit seconds (write pcapng)"
        ))
    })
}
