//! pcapng writer.

use std::collections::HashSet;
use std::io::Write;

use tracekit_io::RecordBuffer;

use tracekit_core::{
    ByteOrder, CaptureSink, Direction, Error, InterfaceInfo, LinkType, Packet, PacketKind,
    SinkReport, Timestamp, TsResolution,
};

use crate::block::{self, opt, padded};

/// How a [`PcapngWriter`] writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapngWriterOptions {
    /// Byte order of the section (native by default).
    pub byte_order: ByteOrder,
    /// Cut packets to this many bytes (wire length kept) and declare it in every IDB.
    pub snaplen: Option<u32>,
    /// `shb_userappl` of the section.
    pub application: Option<String>,
}

impl Default for PcapngWriterOptions {
    fn default() -> PcapngWriterOptions {
        PcapngWriterOptions {
            byte_order: ByteOrder::NATIVE,
            snaplen: None,
            application: Some(format!("tracekit {}", env!("CARGO_PKG_VERSION"))),
        }
    }
}

/// One Interface Description Block written so far.
#[derive(Debug, Clone, Copy)]
struct Idb {
    source_interface: u32,
    link: LinkType,
    res: TsResolution,
}

/// The output resolution that holds every time stamp of a source resolution exactly:
/// nanoseconds for decimal sources (exact for µs and ns, and the common reading
/// default), the source's own 2^-n for binary ones (ERF).
fn output_resolution(source: TsResolution) -> TsResolution {
    match source {
        TsResolution::Decimal(_) => TsResolution::NANO,
        TsResolution::Binary(n) => TsResolution::Binary(n.min(32)),
    }
}

fn tsresol_byte(res: TsResolution) -> u8 {
    match res {
        TsResolution::Decimal(n) => n,
        TsResolution::Binary(n) => 0x80 | n,
    }
}

/// Raw 64-bit units of `ts` in `res`; `None` when they do not fit 64 bits.
#[inline]
fn units(ts: Timestamp, res: TsResolution) -> Option<u64> {
    let (secs, frac) = ts.split(res);
    match res {
        TsResolution::Binary(n) => {
            (secs.leading_zeros() >= u32::from(n)).then(|| (secs << n) | frac)
        }
        TsResolution::Decimal(_) => secs
            .checked_mul(res.units_per_second())
            .and_then(|u| u.checked_add(frac)),
    }
}

#[derive(Debug, Default)]
struct Losses {
    meta_records: u64,
    snapped: u64,
    renumbered: u64,
}

/// Writes a pcapng file: one section, interfaces described as they appear.
///
/// Interface numbers are kept when the source's interfaces are described (or first
/// seen) in order 0, 1, 2, ...; a packet whose interface, link type and time stamp
/// resolution need a new IDB gets the next free number, counted in the report.
pub struct PcapngWriter<W: Write> {
    out: RecordBuffer<W>,
    options: PcapngWriterOptions,
    started: bool,
    idbs: Vec<Idb>,
    /// Source interfaces that have an IDB, so that asking is O(1) (a file may describe
    /// hundreds of thousands of interfaces).
    with_idb: HashSet<u32>,
    described: Vec<Option<InterfaceInfo>>,
    last: Option<usize>,
    scratch: Vec<u8>,
    packets: u64,
    bytes: u64,
    losses: Losses,
}

impl<W: Write> PcapngWriter<W> {
    /// Hands each full buffer to `exchange` instead of copying it into the output (see
    /// [`RecordBuffer::hand_buffers_to`]): for an output that writes on a thread of its own.
    pub fn hand_buffers_to(&mut self, exchange: tracekit_io::BufferExchange) {
        self.out.hand_buffers_to(exchange);
    }

    /// A writer over `out`, buffered internally.
    pub fn new(out: W, options: PcapngWriterOptions) -> Result<PcapngWriter<W>, Error> {
        Ok(PcapngWriter {
            out: RecordBuffer::new(out),
            options,
            started: false,
            idbs: Vec::new(),
            with_idb: HashSet::new(),
            described: Vec::new(),
            last: None,
            scratch: Vec::with_capacity(256),
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

    fn put_option(buf: &mut Vec<u8>, order: ByteOrder, code: u16, value: &[u8]) {
        let len = value.len().min(usize::from(u16::MAX));
        buf.extend_from_slice(&order.put_u16(code));
        buf.extend_from_slice(&order.put_u16(len as u16));
        buf.extend_from_slice(&value[..len]);
        buf.resize(buf.len() + padded(len) - len, 0);
    }

    /// Writes a block of `block_type` whose body (after type and length) is `body`.
    fn write_block(&mut self, block_type: u32, body: &[u8]) -> Result<(), Error> {
        let order = self.options.byte_order;
        let total = (12 + body.len()) as u32;
        self.out.put(&order.put_u32(block_type))?;
        self.out.put(&order.put_u32(total))?;
        self.out.put(body)?;
        self.out.put(&order.put_u32(total))?;
        self.bytes += u64::from(total);
        Ok(())
    }

    fn start(&mut self) -> Result<(), Error> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        let order = self.options.byte_order;
        let mut body = Vec::with_capacity(64);
        body.extend_from_slice(&order.put_u32(block::BYTE_ORDER_MAGIC));
        body.extend_from_slice(&order.put_u16(1));
        body.extend_from_slice(&order.put_u16(0));
        body.extend_from_slice(&order.put_u64(u64::MAX)); // section length unknown
        if let Some(app) = self.options.application.clone() {
            Self::put_option(&mut body, order, opt::SHB_USERAPPL, app.as_bytes());
            Self::put_option(&mut body, order, opt::END, &[]);
        }
        self.write_block(block::SHB, &body)
    }

    fn write_idb(
        &mut self,
        source_interface: u32,
        link: LinkType,
        res: TsResolution,
    ) -> Result<usize, Error> {
        self.start()?;
        // Keep interface numbers: interfaces below this one that were never described or
        // seen (ERF numbers them without declaring them) get placeholder IDBs.
        let has_idb = self.with_idb.contains(&source_interface);
        while (self.idbs.len() as u32) < source_interface && !has_idb {
            let missing = self.idbs.len() as u32;
            self.write_one_idb(missing, link, res)?;
        }
        self.write_one_idb(source_interface, link, res)
    }

    fn write_one_idb(
        &mut self,
        source_interface: u32,
        link: LinkType,
        res: TsResolution,
    ) -> Result<usize, Error> {
        if link.0 > u32::from(u16::MAX) {
            return Err(Error::would_lose(format!(
                "pcapng link types are 16 bits; {link} cannot be written"
            )));
        }
        let order = self.options.byte_order;
        let info = self
            .described
            .get(source_interface as usize)
            .and_then(Option::as_ref)
            .filter(|i| i.link_type == link)
            .cloned();
        let snaplen = self
            .options
            .snaplen
            .or(info.as_ref().map(|i| i.snaplen))
            .unwrap_or(0);
        let mut body = Vec::with_capacity(64);
        body.extend_from_slice(&order.put_u16(link.0 as u16));
        body.extend_from_slice(&order.put_u16(0));
        body.extend_from_slice(&order.put_u32(snaplen));
        let mut any = false;
        if let Some(info) = &info {
            if let Some(name) = &info.name {
                Self::put_option(&mut body, order, opt::IF_NAME, name.as_bytes());
                any = true;
            }
            if let Some(d) = &info.description {
                Self::put_option(&mut body, order, opt::IF_DESCRIPTION, d.as_bytes());
                any = true;
            }
            if let Some(fcs) = info.fcs_len {
                Self::put_option(&mut body, order, opt::IF_FCSLEN, &[fcs]);
                any = true;
            }
        }
        if res != TsResolution::MICRO {
            Self::put_option(&mut body, order, opt::IF_TSRESOL, &[tsresol_byte(res)]);
            any = true;
        }
        if any {
            Self::put_option(&mut body, order, opt::END, &[]);
        }
        self.write_block(block::IDB, &body)?;
        self.idbs.push(Idb {
            source_interface,
            link,
            res,
        });
        self.with_idb.insert(source_interface);
        Ok(self.idbs.len() - 1)
    }

    /// Describes a source interface (name, description, link type, resolution). Its IDB
    /// is written now, so describing interfaces 0, 1, 2, ... in order keeps their numbers.
    pub fn describe_interface(&mut self, id: u32, info: &InterfaceInfo) -> Result<(), Error> {
        let slot = id as usize;
        if self.described.len() <= slot {
            self.described.resize(slot + 1, None);
        }
        if self.described[slot].is_some() {
            return Ok(());
        }
        self.described[slot] = Some(info.clone());
        if !self.with_idb.contains(&id) {
            self.write_idb(id, info.link_type, output_resolution(info.ts_resolution))?;
        }
        Ok(())
    }

    /// The IDB for a packet, writing a new one when needed.
    #[inline]
    fn idb_for(&mut self, interface: u32, link: LinkType, ts: Timestamp) -> Result<usize, Error> {
        let fits = |idb: &Idb| {
            idb.source_interface == interface && idb.link == link && ts.is_exact_in(idb.res)
        };
        // The IDB that keeps the interface's number comes first.
        if let Some(idb) = self.idbs.get(interface as usize)
            && fits(idb)
        {
            return Ok(interface as usize);
        }
        if let Some(i) = self.last
            && fits(&self.idbs[i])
        {
            return Ok(i);
        }
        let found = self.idbs.iter().position(fits);
        let i = match found {
            Some(i) => i,
            None => {
                let mut res = output_resolution(ts.resolution());
                if !ts.is_exact_in(res) {
                    res = TsResolution::ERF;
                }
                let i = self.write_idb(interface, link, res)?;
                if i as u32 != interface {
                    self.losses.renumbered += 1;
                }
                i
            }
        };
        self.last = Some(i);
        Ok(i)
    }

    /// Writes one packet as an Enhanced Packet Block.
    pub fn write_packet(&mut self, packet: &Packet<'_>) -> Result<(), Error> {
        let meta = packet.meta();
        if meta.kind == PacketKind::MetaRecord {
            self.losses.meta_records += 1;
            return Ok(());
        }
        self.start()?;
        let idb = self
            .idb_for(meta.interface, meta.link, meta.ts)
            .map_err(|e| e.with_packet(self.packets + 1))?;
        let res = self.idbs[idb].res;
        let order = self.options.byte_order;
        let data = packet.data();
        let caplen = match self.options.snaplen {
            Some(s) if (s as usize) < data.len() => {
                self.losses.snapped += 1;
                s as usize
            }
            _ => data.len(),
        };
        // Options: direction, drop count, comments.
        self.scratch.clear();
        if meta.direction != Direction::Unknown {
            let flags: u32 = if meta.direction == Direction::Inbound {
                1
            } else {
                2
            };
            Self::put_option(
                &mut self.scratch,
                order,
                opt::EPB_FLAGS,
                &order.put_u32(flags),
            );
        }
        if meta.loss != 0 {
            Self::put_option(
                &mut self.scratch,
                order,
                opt::EPB_DROPCOUNT,
                &order.put_u64(u64::from(meta.loss)),
            );
        }
        if let Some(options) = packet.options() {
            for comment in options.comments() {
                Self::put_option(&mut self.scratch, order, opt::COMMENT, comment.as_bytes());
            }
        }
        if !self.scratch.is_empty() {
            Self::put_option(&mut self.scratch, order, opt::END, &[]);
        }
        let total = (32 + padded(caplen) + self.scratch.len()) as u32;
        let Some(t) = units(meta.ts, res) else {
            return Err(Error::unsupported(format!(
                "time stamp {} does not fit pcapng's 64-bit count of {res} units",
                meta.ts
            )));
        };
        // The byte order chosen once for the seven fields; the head stored straight into
        // the buffer (see `RecordBuffer::put_head`).
        let fields = [
            block::EPB,
            total,
            idb as u32,
            (t >> 32) as u32,
            t as u32,
            caplen as u32,
            meta.wire_len,
        ];
        self.out.put_head(
            |head: &mut [u8; 28]| order.put_u32s(fields, head),
            &data[..caplen],
        )?;
        // Padding, options and the closing length: one piece without options.
        let pad = padded(caplen) - caplen;
        if self.scratch.is_empty() {
            let mut tail = [0u8; 7];
            tail[pad..pad + 4].copy_from_slice(&order.put_u32(total));
            self.out.put(&tail[..pad + 4])?;
        } else {
            self.out.put(&[0u8; 3][..pad])?;
            self.out.put(&self.scratch)?;
            self.out.put(&order.put_u32(total))?;
        }
        tracekit_io::count_record(&mut self.packets, &mut self.bytes, u64::from(total));
        Ok(())
    }

    fn report(&self) -> SinkReport {
        let mut r = SinkReport {
            packets: self.packets,
            bytes: self.bytes,
            lost: Vec::new(),
        };
        r.add_loss("metadata record (not written)", self.losses.meta_records);
        r.add_loss("bytes beyond the snap length", self.losses.snapped);
        r.add_loss("interface number (renumbered)", self.losses.renumbered);
        r
    }

    /// Writes the section header of an empty file if needed, flushes, and returns the
    /// inner writer with the report.
    pub fn finish_into_inner(mut self) -> Result<(W, SinkReport), Error> {
        self.start()?;
        let report = self.report();
        let inner = self.out.into_inner()?;
        Ok((inner, report))
    }

    /// Flushes and reports; `Ok` means the output is complete.
    pub fn finish(self) -> Result<SinkReport, Error> {
        self.finish_into_inner().map(|(_, r)| r)
    }
}

impl<W: Write> CaptureSink for PcapngWriter<W> {
    fn write_packet(&mut self, packet: &Packet<'_>) -> Result<(), Error> {
        PcapngWriter::write_packet(self, packet)
    }

    fn finish(self: Box<Self>) -> Result<SinkReport, Error> {
        PcapngWriter::finish(*self)
    }
}
