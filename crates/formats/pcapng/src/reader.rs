//! Zero-copy pcapng reader.

use tracekit_core::{
    ByteOrder, Direction, Error, InterfaceInfo, LinkType, Meta, PacketKind, PacketOptions, Record,
    RecordFormat, Timestamp, TraceInfo, TsResolution, walk_records,
};
use tracekit_io::{Input, Reader};

use crate::block::{self, opt, padded};
use crate::interface::{Clocked, Interface, InterfaceStats, Section};

/// How a [`PcapngReader`] reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PcapngReaderOptions {
    /// Hand out every non-packet block (SHB, IDB, NRB, ISB, DSB, custom, unknown) as a
    /// packet of kind [`PacketKind::MetaRecord`] whose bytes are the whole block, in the byte
    /// order of its section. Off by default: such blocks are parsed (sections,
    /// interfaces, statistics) and skipped.
    pub deliver_meta: bool,
}

/// Oddities the reader met and accepted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PcapngNotes {
    /// Blocks of a type this reader does not know (skipped).
    pub unknown_blocks: u64,
    /// Name Resolution, Decryption Secrets, custom and journal blocks (skipped unless
    /// metadata delivery is on).
    pub skipped_blocks: u64,
    /// Interfaces whose `if_tsresol` was out of range (µs was used).
    pub bad_tsresol: u64,
    /// Simple Packet Blocks (they carry no time stamp; time 0 is reported).
    pub simple_packets: u64,
}

/// Link type reported for metadata records, which carry no link-layer frame.
pub const META_LINK_TYPE: LinkType = LinkType(u32::MAX);

/// Reads a pcapng file or stream, lending each packet from the input buffer.
///
/// Interfaces are numbered globally across sections in file order ([`Meta::interface`]);
/// [`PcapngFormat::interface`] (through the reader's `format()`) gives each one's section and
/// id inside its section.
///
/// ```no_run
/// use tracekit_pcapng::PcapngReader;
///
/// let mut reader = PcapngReader::open("trace.pcapng")?;
/// while let Some(p) = reader.next_packet()? {
///     let iface = p.meta().interface;
///     let comments: Vec<&str> = p.options().map(|o| o.comments().collect()).unwrap_or_default();
///     println!("{} on interface {iface} {comments:?}", p.ts());
/// }
/// for i in reader.interfaces() {
///     println!("{:?} {} {:?}", i.name, i.link_type, i.stats);
/// }
/// # Ok::<(), tracekit_core::Error>(())
/// ```
pub type PcapngReader = Reader<PcapngFormat>;

/// The pcapng format's state: sections, interfaces, the fast path's cache and what was
/// met so far. A [`PcapngReader`] owns it and lends the packets.
pub struct PcapngFormat {
    input: Input,
    options: PcapngReaderOptions,
    sections: Vec<Section>,
    interfaces: Vec<Interface>,
    order: ByteOrder,
    packets: u64,
    notes: PcapngNotes,
    done: bool,
    /// The first SHB was parsed when opening and is still to be handed out as metadata.
    first_section_pending: bool,
    /// Fast path: the local and global id of the interface of the last EPB, for the
    /// current section (`u32::MAX` when none).
    last_local: u32,
    last_global: u32,
    /// Fast path: a copy of that interface (its clock and link type), so that the common
    /// case does not go through the interface list.
    last_interface: Option<Clocked>,
}

/// Minimum sizes of the fixed parts of blocks (header and trailer included).
const EPB_MIN: usize = 32;
const SPB_MIN: usize = 16;
const IDB_MIN: usize = 20;
const ISB_MIN: usize = 24;
const SHB_MIN: usize = 28;

impl RecordFormat for PcapngFormat {
    type Input = Input;
    type Options = PcapngReaderOptions;

    /// Reads the first Section Header Block from an input positioned at it.
    fn start(mut input: Input, options: PcapngReaderOptions) -> Result<PcapngFormat, Error> {
        let have = input.fill(12)?;
        if have < 12 {
            return Err(input.cut_error("Section Header Block", 12));
        }
        if ByteOrder::Little.u32(&input.available()[0..4]) != block::SHB {
            return Err(Error::unknown_format(
                "not a pcapng file: it does not start with a Section Header Block",
            )
            .with_shared_path(input.path())
            .with_offset(0));
        }
        let mut reader = PcapngFormat {
            input,
            options,
            sections: Vec::new(),
            interfaces: Vec::new(),
            order: ByteOrder::Little,
            packets: 0,
            notes: PcapngNotes::default(),
            done: false,
            first_section_pending: false,
            last_local: u32::MAX,
            last_global: 0,
            last_interface: None,
        };
        // Parse the first section header now, so that its facts are known before the
        // first packet; it is handed out as metadata when that is asked for.
        let len = reader.parse_first_section()?;
        if options.deliver_meta {
            reader.first_section_pending = true;
        } else {
            reader.input.consume(len);
        }
        Ok(reader)
    }

    /// The Enhanced Packet Blocks the fast path takes, one walk per byte order (a
    /// constant in each, as in the fast path).
    #[inline(always)]
    fn walk_window<E>(
        &mut self,
        first: Option<Record>,
        f: &mut impl FnMut(&Input, &Record, &[u8]) -> Result<(), E>,
    ) -> (u64, Result<(), E>) {
        match self.order {
            ByteOrder::Little => self.walk_in(ByteOrder::Little, first, f),
            ByteOrder::Big => self.walk_in(ByteOrder::Big, first, f),
        }
    }

    /// The fast path first, then the general block loop.
    #[inline(always)]
    fn next_record(&mut self, record: &mut Record) -> Result<bool, Error> {
        if self.fast_enhanced_packet(record)? {
            return Ok(true);
        }
        match self.next_block(self.options.deliver_meta)? {
            Some(r) => {
                *record = r;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn input(&self) -> &Input {
        &self.input
    }

    fn input_mut(&mut self) -> &mut Input {
        &mut self.input
    }

    fn dropped(&self) -> u64 {
        self.interfaces
            .iter()
            .filter_map(|i| i.stats)
            .map(|s| s.if_dropped.unwrap_or(0) + s.os_dropped.unwrap_or(0))
            .sum()
    }
}

impl TraceInfo for PcapngFormat {
    fn description(&self) -> String {
        let orders: Vec<&str> = self.sections.iter().map(|s| s.byte_order.name()).collect();
        format!(
            "pcapng ({} section(s): {}-endian; {} interface(s))",
            self.sections.len(),
            orders.join("/"),
            self.interfaces.len()
        )
    }

    fn notes_described(&self) -> Vec<String> {
        self.notes.describe()
    }

    fn snaplen(&self) -> Option<u32> {
        self.interfaces.iter().map(|i| i.snaplen).max()
    }

    fn declared_link_type(&self) -> Option<LinkType> {
        let mut links = self.interfaces.iter().map(|i| i.link_type);
        let first = links.next()?;
        links.all(|l| l == first).then_some(first)
    }

    fn interface_info(&self, id: u32) -> Option<InterfaceInfo> {
        self.interface(id).map(|i| i.info())
    }

    /// Of the interfaces described so far, and nanoseconds before any is (which holds
    /// the common µs and ns resolutions exactly).
    fn ts_resolution(&self) -> TsResolution {
        self.interfaces
            .iter()
            .map(|i| i.ts_resolution)
            .max_by(|a, b| a.units_per_second().cmp(&b.units_per_second()))
            .unwrap_or(TsResolution::NANO)
    }
}

impl PcapngNotes {
    /// Human-readable notes, one per kind of oddity; empty when there were none.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.unknown_blocks > 0 {
            out.push(format!(
                "{} block(s) of unknown type skipped",
                self.unknown_blocks
            ));
        }
        if self.bad_tsresol > 0 {
            out.push(format!(
                "{} interface(s) with an out-of-range if_tsresol (read as µs)",
                self.bad_tsresol
            ));
        }
        if self.simple_packets > 0 {
            out.push(format!(
                "{} Simple Packet Block(s): no time stamp (written as 0, left out of first/last)",
                self.simple_packets
            ));
        }
        out
    }
}

impl PcapngFormat {
    /// Sections seen so far.
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// Interfaces seen so far, by global number.
    pub fn interfaces(&self) -> &[Interface] {
        &self.interfaces
    }

    /// One interface by global number.
    pub fn interface(&self, id: u32) -> Option<&Interface> {
        self.interfaces.get(id as usize)
    }

    /// Oddities accepted so far.
    pub fn notes(&self) -> &PcapngNotes {
        &self.notes
    }

    /// The common case, taken without the general block loop: an Enhanced Packet Block on
    /// the interface of the previous one, written into `record`. Anything else (or
    /// anything odd) returns `false` without consuming, and the general loop handles the
    /// block.
    #[inline(always)]
    fn fast_enhanced_packet(&mut self, record: &mut Record) -> Result<bool, Error> {
        if self.done || self.first_section_pending || self.input.fill(EPB_MIN)? < EPB_MIN {
            return Ok(false);
        }
        // One byte-order decision per block, not one per field.
        match self.order {
            ByteOrder::Little => self.fast_enhanced_packet_in(ByteOrder::Little, record),
            ByteOrder::Big => self.fast_enhanced_packet_in(ByteOrder::Big, record),
        }
    }

    /// The fast path for one byte order (a constant once inlined).
    #[inline(always)]
    fn fast_enhanced_packet_in(
        &mut self,
        order: ByteOrder,
        record: &mut Record,
    ) -> Result<bool, Error> {
        // The window already seen usually holds the whole block: no second look.
        let (found, len) =
            match self.fast_block(self.input.available(), order, self.input.window_pos()) {
                Ok(found) => found,
                Err(None) => return Ok(false),
                Err(Some(len)) => {
                    if self.input.fill(len)? < len {
                        return Ok(false);
                    }
                    match self.fast_block(self.input.available(), order, self.input.window_pos()) {
                        Ok(found) => found,
                        Err(_) => return Ok(false),
                    }
                }
            };
        *record = found;
        self.input.consume(len);
        self.packets += 1;
        Ok(true)
    }

    /// The block at the start of `b` (window index `start`) as the fast path takes it:
    /// an Enhanced Packet Block on the interface of the one before, well formed, with
    /// its length. `Err(Some(len))`: such a block, of `len` bytes, that `b` does not
    /// hold whole; `Err(None)`: a block the general loop takes.
    #[inline(always)]
    fn fast_block(
        &self,
        b: &[u8],
        order: ByteOrder,
        start: usize,
    ) -> Result<(Record, usize), Option<usize>> {
        let fixed = PacketFixed::read(b, order).ok_or(None)?;
        let len = fixed.len;
        if fixed.block_type != block::EPB
            || len < EPB_MIN + padded(fixed.caplen)
            || !len.is_multiple_of(4)
            || len > block::MAX_BLOCK_LEN as usize
            || fixed.interface != self.last_local
        {
            return Err(None);
        }
        let b = b.get(..len).ok_or(Some(len))?;
        if order.u32(&b[len - 4..]) as usize != len {
            return Err(None);
        }
        let info = self.last_interface.as_ref().ok_or(None)?;
        let (opt_at, opt_len) = fixed.options(len);
        let (flags, drops) = if opt_len > 0 {
            // Options past the block end: the general loop reports them.
            packet_flags(&b[opt_at..opt_at + opt_len], order).ok_or(None)?
        } else {
            (0, 0)
        };
        let record = Record {
            start: start + epb::DATA,
            len: fixed.caplen,
            meta: Meta {
                ts: info.timestamp(fixed.units),
                wire_len: fixed.wire_len,
                link: info.link_type,
                interface: self.last_global,
                direction: direction(flags),
                loss: drops.min(u64::from(u32::MAX)) as u32,
                kind: PacketKind::Data,
            },
            options: (start + opt_at, opt_len),
            order,
        };
        Ok((record, len))
    }

    /// `walk_window` for one byte order: the blocks [`fast_block`](Self::fast_block)
    /// takes that lie wholly in the window.
    #[inline(always)]
    fn walk_in<E>(
        &mut self,
        order: ByteOrder,
        first: Option<Record>,
        f: &mut impl FnMut(&Input, &Record, &[u8]) -> Result<(), E>,
    ) -> (u64, Result<(), E>) {
        let input = &self.input;
        let walk = !self.done && !self.first_section_pending;
        let window = if walk { input.available() } else { &[] };
        let base = input.window_pos();
        let this = &*self;
        let walked = walk_records(
            input,
            window,
            first,
            f,
            #[inline(always)]
            |window, off| {
                let (record, len) = this.fast_block(&window[off..], order, base + off).ok()?;
                Some((record, &window[off + epb::DATA..][..record.len], len))
            },
        );
        self.input.consume(walked.bytes);
        self.packets += walked.consumed;
        (walked.taken, walked.result)
    }

    /// Parses the first SHB without consuming it; returns its length.
    fn parse_first_section(&mut self) -> Result<usize, Error> {
        let (order, len) = self.section_header_order_and_len()?;
        if self.input.fill(len)? < len {
            return Err(self.cut("Section Header Block", len));
        }
        let body = self.input.available()[..len].to_vec();
        let trailer = order.u32(&body[len - 4..]);
        if trailer as usize != len {
            return Err(self.malformed(format!(
                "Section Header Block: the block length at its start ({len}) and at its end ({trailer}) differ"
            )));
        }
        self.add_section(&body, order)?;
        Ok(len)
    }

    fn section_header_order_and_len(&mut self) -> Result<(ByteOrder, usize), Error> {
        if self.input.fill(12)? < 12 {
            return Err(self.cut("Section Header Block", 12));
        }
        let h = self.input.available();
        let order = match (
            ByteOrder::Little.u32(&h[8..12]),
            ByteOrder::Big.u32(&h[8..12]),
        ) {
            (block::BYTE_ORDER_MAGIC, _) => ByteOrder::Little,
            (_, block::BYTE_ORDER_MAGIC) => ByteOrder::Big,
            _ => {
                return Err(self.malformed(format!(
                    "Section Header Block has no byte-order magic (found {:02x}{:02x}{:02x}{:02x})",
                    h[8], h[9], h[10], h[11]
                )));
            }
        };
        let len = order.u32(&h[4..8]);
        self.check_len(block::SHB, len, SHB_MIN)?;
        Ok((order, len as usize))
    }

    fn check_len(&self, block_type: u32, len: u32, min: usize) -> Result<(), Error> {
        if (len as usize) < min || !len.is_multiple_of(4) || len > block::MAX_BLOCK_LEN {
            return Err(self.malformed(format!(
                "{} has a bad block length {len} (must be a multiple of 4, at least {min}, at most {})",
                block::name(block_type),
                block::MAX_BLOCK_LEN
            )));
        }
        Ok(())
    }

    fn malformed(&self, reason: String) -> Error {
        Error::malformed(reason)
            .with_shared_path(self.input.path())
            .with_offset(self.input.position())
    }

    fn cut(&self, what: &'static str, needed: usize) -> Error {
        self.input.cut_error(what, needed as u64)
    }

    /// Reads blocks until a packet (or, with `meta`, any block) is found; returns where
    /// its bytes are in the input window, after consuming the block.
    fn next_block(&mut self, meta: bool) -> Result<Option<Record>, Error> {
        let result = self.next_block_inner(meta);
        if result.is_err() {
            self.done = true;
        }
        result
    }

    fn next_block_inner(&mut self, meta: bool) -> Result<Option<Record>, Error> {
        loop {
            if self.done {
                return Ok(None);
            }
            if std::mem::take(&mut self.first_section_pending) {
                // Already parsed by `peek_first_section`; hand it out now.
                let (_, len) = self.section_header_order_and_len()?;
                return Ok(Some(self.consume_meta(len, self.order, 0, Timestamp::ZERO)));
            }
            let have = self.input.fill(8)?;
            if have < 8 {
                self.done = true;
                if have == 0 {
                    return Ok(None);
                }
                return Err(self.cut("block header", 8));
            }
            let h = self.input.available();
            let block_type = self.order.u32(&h[0..4]);
            let (order, len) = if block_type == block::SHB {
                self.section_header_order_and_len()?
            } else {
                let len = self.order.u32(&h[4..8]);
                let min = match block_type {
                    block::EPB => EPB_MIN,
                    block::OPB => EPB_MIN,
                    block::SPB => SPB_MIN,
                    block::IDB => IDB_MIN,
                    block::ISB => ISB_MIN,
                    _ => 12,
                };
                self.check_len(block_type, len, min)?;
                (self.order, len as usize)
            };
            if self.input.fill(len)? < len {
                let what = match block_type {
                    block::EPB | block::SPB | block::OPB => "packet block",
                    _ => "block",
                };
                return Err(self.cut(what, len).with_packet(self.packets + 1));
            }
            let b = &self.input.available()[..len];
            let trailer = order.u32(&b[len - 4..]);
            if trailer as usize != len {
                return Err(self.malformed(format!(
                    "{}: the block length at its start ({len}) and at its end ({trailer}) differ",
                    block::name(block_type)
                )));
            }
            match block_type {
                block::EPB => return self.packet_block(len, false).map(Some),
                block::SPB => return self.simple_packet(len).map(Some),
                block::OPB => return self.packet_block(len, true).map(Some),
                block::SHB => {
                    let body = b.to_vec();
                    self.add_section(&body, order)?;
                }
                block::IDB => {
                    let body = b.to_vec();
                    self.add_interface(&body)?;
                }
                block::ISB => {
                    let body = b.to_vec();
                    let (iface, ts) = self.interface_statistics(&body)?;
                    if meta {
                        return Ok(Some(self.consume_meta(len, order, iface, ts)));
                    }
                    self.input.consume(len);
                    continue;
                }
                block::NRB | block::DSB | block::CB_COPY | block::CB_NOCOPY | block::JOURNAL => {
                    self.notes.skipped_blocks += 1;
                }
                _ => self.notes.unknown_blocks += 1,
            }
            if meta {
                return Ok(Some(self.consume_meta(len, order, 0, Timestamp::ZERO)));
            }
            self.input.consume(len);
        }
    }

    fn consume_meta(
        &mut self,
        len: usize,
        order: ByteOrder,
        interface: u32,
        ts: Timestamp,
    ) -> Record {
        let start = self.input.window_pos();
        self.input.consume(len);
        let mut meta = Meta::new(ts, len as u32, META_LINK_TYPE);
        meta.kind = PacketKind::MetaRecord;
        meta.interface = interface;
        Record {
            start,
            len,
            options: (0, 0),
            order,
            meta,
        }
    }

    /// The global interface of a packet block, or an error naming the block.
    fn global_interface(&self, local: u32, what: &str) -> Result<u32, Error> {
        let section = self.sections.last().map_or(0, |s| s.first_interface);
        let global = section.saturating_add(local);
        if (global as usize) < self.interfaces.len() {
            Ok(global)
        } else {
            Err(self
                .malformed(format!(
                    "{what} refers to interface {local}, but its section describes {} interface(s)",
                    self.interfaces.len() as u32 - section
                ))
                .with_packet(self.packets + 1))
        }
    }

    /// An Enhanced Packet Block, or the obsolete Packet Block (`obsolete`): the same
    /// layout but for a 16-bit interface id followed by a 16-bit drop count where the EPB
    /// has a 32-bit interface id (its drop count is the `epb_dropcount` option).
    fn packet_block(&mut self, len: usize, obsolete: bool) -> Result<Record, Error> {
        let what = if obsolete {
            "Packet Block"
        } else {
            "Enhanced Packet Block"
        };
        let order = self.order;
        let b = &self.input.available()[..len];
        let Some(fixed) = PacketFixed::read(b, order) else {
            return Err(self.cut(what, EPB_MIN));
        };
        let (local, block_drops) = if obsolete {
            (
                u32::from(order.u16(&b[epb::PB_INTERFACE])),
                Some(u64::from(order.u16(&b[epb::PB_DROPS]))),
            )
        } else {
            (fixed.interface, None)
        };
        let (units, caplen, wire_len) = (fixed.units, fixed.caplen, fixed.wire_len);
        if caplen > len - EPB_MIN {
            return Err(self
                .malformed(format!(
                    "{what} claims {caplen} captured bytes but has room for {}",
                    len - EPB_MIN
                ))
                .with_packet(self.packets + 1));
        }
        let (opt_at, opt_len) = fixed.options(len);
        let (flags, option_drops) = if opt_len > 0 {
            let options = &b[opt_at..opt_at + opt_len];
            match packet_flags(options, order) {
                Some(found) => found,
                None => {
                    let reason = self.option_overrun(what, options, opt_at, order);
                    return Err(self.malformed(reason).with_packet(self.packets + 1));
                }
            }
        } else {
            (0, 0)
        };
        let drops = block_drops.unwrap_or(option_drops);
        let iface = self.global_interface(local, what)?;
        if !obsolete && (self.last_local != local || self.last_global != iface) {
            self.last_local = local;
            self.last_global = iface;
            self.last_interface = Some(self.interfaces[iface as usize].clocked());
        }
        let info = &self.interfaces[iface as usize];
        let meta = Meta {
            ts: info.timestamp(units),
            wire_len,
            link: info.link_type,
            interface: iface,
            direction: direction(flags),
            loss: drops.min(u64::from(u32::MAX)) as u32,
            kind: PacketKind::Data,
        };
        Ok(self.consume_packet(len, epb::DATA, caplen, opt_at, opt_len, meta))
    }

    fn simple_packet(&mut self, len: usize) -> Result<Record, Error> {
        let order = self.order;
        let wire_len = order.u32(&self.input.available()[8..12]);
        let iface = self.global_interface(0, "Simple Packet Block")?;
        let info = &self.interfaces[iface as usize];
        let mut caplen = (wire_len as usize).min(len - SPB_MIN);
        if info.snaplen != 0 {
            caplen = caplen.min(info.snaplen as usize);
        }
        self.notes.simple_packets += 1;
        let meta = Meta {
            ts: Timestamp::NONE.with_resolution(info.ts_resolution),
            wire_len,
            link: info.link_type,
            interface: iface,
            direction: Direction::Unknown,
            loss: 0,
            kind: PacketKind::Data,
        };
        Ok(self.consume_packet(len, 12, caplen, 0, 0, meta))
    }

    fn consume_packet(
        &mut self,
        len: usize,
        data_at: usize,
        caplen: usize,
        opt_at: usize,
        opt_len: usize,
        meta: Meta,
    ) -> Record {
        let start = self.input.window_pos();
        self.input.consume(len);
        self.packets += 1;
        Record {
            start: start + data_at,
            len: caplen,
            options: (start + opt_at, opt_len),
            order: self.order,
            meta,
        }
    }

    /// Reads a Section Header Block (whole, its lengths checked): a major version other
    /// than 1 or options past its end are errors, as in Wireshark, before anything of
    /// the section is believed.
    fn add_section(&mut self, b: &[u8], order: ByteOrder) -> Result<(), Error> {
        let (major, minor) = (order.u16(&b[12..14]), order.u16(&b[14..16]));
        if major != block::MAJOR_VERSION {
            return Err(Error::unsupported(format!(
                "Section Header Block: pcapng version {major}.{minor}; only major version {} \
                 exists, and a section of another cannot be read",
                block::MAJOR_VERSION
            ))
            .with_shared_path(self.input.path())
            .with_offset(self.input.position()));
        }
        self.check_options(block::SHB, b, 24, order)?;
        self.order = order;
        self.last_local = u32::MAX;
        let length = order.u64(&b[16..24]);
        let mut section = Section {
            byte_order: order,
            version: (major, minor),
            length: (length != u64::MAX).then_some(length),
            hardware: None,
            os: None,
            application: None,
            comments: Vec::new(),
            first_interface: self.interfaces.len() as u32,
        };
        for (code, value) in PacketOptions::new(&b[24..b.len() - 4], order).iter() {
            let text = || String::from_utf8_lossy(value).into_owned();
            match code {
                opt::COMMENT => section.comments.push(text()),
                opt::SHB_HARDWARE => section.hardware = Some(text()),
                opt::SHB_OS => section.os = Some(text()),
                opt::SHB_USERAPPL => section.application = Some(text()),
                _ => {}
            }
        }
        self.sections.push(section);
        Ok(())
    }

    /// An error when an option of the block `b` (its options from `opt_at` to the
    /// trailer) runs past the block's end.
    fn check_options(
        &self,
        block_type: u32,
        b: &[u8],
        opt_at: usize,
        order: ByteOrder,
    ) -> Result<(), Error> {
        let options = b.get(opt_at..b.len() - 4).unwrap_or(&[]);
        if block::check_options(options, order).is_err() {
            let reason = self.option_overrun(block::name(block_type), options, opt_at, order);
            return Err(self.malformed(reason));
        }
        Ok(())
    }

    /// Says which option of a block runs past its end (the options start at `opt_at`).
    fn option_overrun(
        &self,
        what: &str,
        options: &[u8],
        opt_at: usize,
        order: ByteOrder,
    ) -> String {
        match block::check_options(options, order) {
            Err(o) => format!(
                "{what}: option {} at byte {} of the block claims {} bytes of value, but only {} \
                 remain before the block's end",
                o.code,
                opt_at + o.at,
                o.len,
                o.room
            ),
            Ok(()) => format!("{what}: its options are damaged"),
        }
    }

    fn add_interface(&mut self, b: &[u8]) -> Result<(), Error> {
        self.check_options(block::IDB, b, 16, self.order)?;
        let order = self.order;
        let section_index = self.sections.len().saturating_sub(1);
        let first = self.sections.last().map_or(0, |s| s.first_interface);
        let local = self.interfaces.len() as u32 - first;
        let link = LinkType(u32::from(order.u16(&b[8..10])));
        let mut iface = Interface::new(section_index, local, link, order.u32(&b[12..16]));
        for (code, value) in PacketOptions::new(&b[16..b.len() - 4], order).iter() {
            match code {
                opt::IF_NAME => iface.name = Some(String::from_utf8_lossy(value).into_owned()),
                opt::IF_DESCRIPTION => {
                    iface.description = Some(String::from_utf8_lossy(value).into_owned())
                }
                opt::IF_TSRESOL => {
                    if let Some(&raw) = value.first()
                        && !iface.set_tsresol(raw)
                    {
                        self.notes.bad_tsresol += 1;
                    }
                }
                opt::IF_TSOFFSET if value.len() >= 8 => iface.ts_offset = order.u64(value) as i64,
                opt::IF_FCSLEN => iface.fcs_len = value.first().copied(),
                _ => {}
            }
        }
        self.interfaces.push(iface);
        Ok(())
    }

    fn interface_statistics(&mut self, b: &[u8]) -> Result<(u32, Timestamp), Error> {
        self.check_options(block::ISB, b, 20, self.order)?;
        let order = self.order;
        let local = order.u32(&b[8..12]);
        let first = self.sections.last().map_or(0, |s| s.first_interface);
        let global = first.saturating_add(local);
        let Some(iface) = self.interfaces.get(global as usize) else {
            // Statistics for an undeclared interface: nothing to attach them to.
            return Ok((global, Timestamp::ZERO));
        };
        let units_at =
            |v: &[u8]| (u64::from(order.u32(&v[0..4])) << 32) | u64::from(order.u32(&v[4..8]));
        let ts = iface.timestamp(units_at(&b[12..20]));
        let mut stats = InterfaceStats {
            ts: Some(ts),
            ..InterfaceStats::default()
        };
        for (code, value) in PacketOptions::new(&b[20..b.len() - 4], order).iter() {
            if value.len() < 8 {
                continue;
            }
            match code {
                opt::ISB_STARTTIME => stats.start = Some(iface.timestamp(units_at(value))),
                opt::ISB_ENDTIME => stats.end = Some(iface.timestamp(units_at(value))),
                opt::ISB_IFRECV => stats.received = Some(order.u64(value)),
                opt::ISB_IFDROP => stats.if_dropped = Some(order.u64(value)),
                opt::ISB_FILTERACCEPT => stats.filter_accepted = Some(order.u64(value)),
                opt::ISB_OSDROP => stats.os_dropped = Some(order.u64(value)),
                opt::ISB_USRDELIV => stats.delivered = Some(order.u64(value)),
                _ => {}
            }
        }
        self.interfaces[global as usize].stats = Some(stats);
        Ok((global, ts))
    }
}

/// Byte positions in an Enhanced Packet Block (and in the obsolete Packet Block, whose
/// 32-bit interface field is a 16-bit interface id and a 16-bit drop count).
mod epb {
    use std::ops::Range;

    pub const TYPE: Range<usize> = 0..4;
    pub const LEN: Range<usize> = 4..8;
    pub const INTERFACE: Range<usize> = 8..12;
    /// Packet Block: the interface id, then the drop count.
    pub const PB_INTERFACE: Range<usize> = 8..10;
    pub const PB_DROPS: Range<usize> = 10..12;
    pub const TS_HIGH: Range<usize> = 12..16;
    pub const TS_LOW: Range<usize> = 16..20;
    pub const CAPLEN: Range<usize> = 20..24;
    pub const WIRE_LEN: Range<usize> = 24..28;
    /// The captured bytes, then options, then the trailing length.
    pub const DATA: usize = 28;
}

/// The fixed part of a packet block, read once for the fast path and the general loop
/// alike.
#[derive(Clone, Copy)]
struct PacketFixed {
    block_type: u32,
    len: usize,
    /// The 32-bit interface field (the obsolete Packet Block splits it: see [`epb`]).
    interface: u32,
    units: u64,
    caplen: usize,
    wire_len: u32,
}

impl PacketFixed {
    /// The fixed part at the start of `b`, or `None` when `b` is shorter.
    #[inline(always)]
    fn read(b: &[u8], order: ByteOrder) -> Option<PacketFixed> {
        // As an array: constant offsets, no bounds checks.
        let h: &[u8; epb::DATA] = b.get(..epb::DATA)?.try_into().ok()?;
        let u32_at = |r: std::ops::Range<usize>| order.u32(&h[r]);
        Some(PacketFixed {
            block_type: u32_at(epb::TYPE),
            len: u32_at(epb::LEN) as usize,
            interface: u32_at(epb::INTERFACE),
            units: (u64::from(u32_at(epb::TS_HIGH)) << 32) | u64::from(u32_at(epb::TS_LOW)),
            caplen: u32_at(epb::CAPLEN) as usize,
            wire_len: u32_at(epb::WIRE_LEN),
        })
    }

    /// Where the options of a `len`-byte block with this captured length start, and how
    /// long they are (the trailing length excluded).
    #[inline(always)]
    fn options(&self, len: usize) -> (usize, usize) {
        let at = epb::DATA + padded(self.caplen);
        (at, (len - 4).saturating_sub(at))
    }
}

/// `epb_flags` and `epb_dropcount` from a packet block's options (out of line: most
/// packet blocks have no options, and the fast path stays small); `None` when an option
/// runs past the block's end.
#[inline(never)]
fn packet_flags(options: &[u8], order: ByteOrder) -> Option<(u32, u64)> {
    block::check_options(options, order).ok()?;
    let (mut flags, mut drops) = (0, 0);
    for (code, value) in PacketOptions::new(options, order).iter() {
        match code {
            opt::EPB_FLAGS if value.len() >= 4 => flags = order.u32(value),
            opt::EPB_DROPCOUNT if value.len() >= 8 => drops = order.u64(value),
            _ => {}
        }
    }
    Some((flags, drops))
}

/// The direction bits (0-1) of `epb_flags`.
fn direction(flags: u32) -> Direction {
    match flags & 0b11 {
        1 => Direction::Inbound,
        2 => Direction::Outbound,
        _ => Direction::Unknown,
    }
}
