//! One AF_PACKET TPACKET_V3 socket and its mmap ring: setup, the block walk, VLAN
//! re-insertion, filters, statistics and fan-out membership.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tracekit_core::{
    CaptureSource, Direction, Error, InterfaceInfo, LinkType, Meta, Packet, Polled, Stats,
    Timestamp, TraceInfo, TsResolution,
};
use tracekit_filter::{Filter, Insn, KERNEL_MAX_INSNS};

use crate::config::KernelFilter;
use crate::fanout::{FanoutFlags, FanoutMode, FanoutSpec, option_value};
use crate::sys::{self, ACQUIRE, Mapping, RELEASE};

/// The largest snap length (libpcap's `MAXIMUM_SNAPLEN`).
pub use tracekit_core::MAX_SNAPLEN;

const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;
/// Bytes of a block before the area this module reads: version, offset_to_priv and the
/// status word (which stays the kernel's and this process's shared atomic).
const AREA_START: usize = 12;
/// `tpacket3_hdr` (48 bytes) then `sockaddr_ll` (20 bytes).
const HDR_LEN: usize = 48;
const SLL_LEN: usize = 20;
/// Headroom asked for before each frame, for a re-inserted VLAN tag.
const RESERVE: u32 = 4;
/// Marks this module leaves in a packet header's spare `tp_padding` field.
const MARK_SKIP: u16 = 1;
const MARK_RETAGGED: u16 = 2;
const PACKET_OUTGOING: u8 = 4;
const ARPHRD_ETHER: u16 = 1;
const ARPHRD_LOOPBACK: u16 = 772;

/// How a capture socket is set up.
#[derive(Debug, Clone)]
pub struct Options {
    /// Bytes kept per packet (cut in the kernel); at most [`MAX_SNAPLEN`].
    pub snaplen: u32,
    /// Promiscuous mode, by membership (undone when the socket closes).
    pub promisc: bool,
    /// Ring block size: a page multiple of at least 128 KiB (a block must hold the
    /// largest packet, and GRO or loopback make 64 KiB ones).
    pub block_size: usize,
    /// Blocks per ring.
    pub block_nr: usize,
    /// How long the kernel keeps a partly filled block before handing it over: the
    /// latency bound (`tp_retire_blk_tov`).
    pub latency: Duration,
    /// Filter: a tcpdump expression compiled with libpcap, or a fixed program.
    pub filter: Option<Filter>,
    /// Where the filter runs.
    pub kernel_filter: KernelFilter,
    /// Put VLAN tags the kernel stripped back into the frame, so that packets are the
    /// bytes on the wire (as libpcap does). On by default.
    pub reinsert_vlan: bool,
    /// Drop outgoing packets (in the fan-out group's hook on kernels that have the
    /// flag, otherwise in user space). On loopback the outgoing copies are always
    /// dropped: every packet appears there twice.
    pub ignore_outgoing: bool,
    /// How often a waiting reader looks at its stop flag.
    pub poll_interval: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            snaplen: MAX_SNAPLEN,
            promisc: true,
            block_size: 1 << 20,
            block_nr: 64,
            latency: Duration::from_millis(10),
            filter: None,
            kernel_filter: KernelFilter::Auto,
            reinsert_vlan: true,
            ignore_outgoing: false,
            poll_interval: Duration::from_millis(100),
        }
    }
}

/// Counters of one capture socket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingStats {
    /// Packets the socket accepted (after the kernel filter), dropped ones included
    /// (libpcap's `ps_recv`): the kernel's `tp_packets`, summed over reads.
    pub received: u64,
    /// Packets the ring had no room for: the kernel's `tp_drops`.
    pub dropped: u64,
    /// Times the kernel found the next block still in user hands.
    pub freezes: u64,
    /// Packets user space dropped: filter verdicts and loopback duplicates.
    pub filtered: u64,
    /// Packets handed to the reader.
    pub delivered: u64,
}

impl std::ops::AddAssign for RingStats {
    fn add_assign(&mut self, o: RingStats) {
        self.received += o.received;
        self.dropped += o.dropped;
        self.freezes += o.freezes;
        self.filtered += o.filtered;
        self.delivered += o.delivered;
    }
}

/// The block being read: where it is and which packet is next.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    /// Block offset in the mapping.
    block: usize,
    /// Next packet's offset in the area.
    off: usize,
    /// Packets left.
    left: u32,
    /// Packets left that are not skipped (what the reader will still be handed).
    kept: u32,
}

/// A stop flag for a capture: [`StopHandle::stop`] from any thread (a signal handler,
/// a timer) makes waiting readers return `None` within the poll interval.
#[derive(Debug, Clone, Default)]
pub struct StopHandle(Arc<AtomicBool>);

impl StopHandle {
    /// The flag itself, for machinery that stops on a plain flag
    /// (`tracekit::parallel::Parallel::stop_flag`).
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }

    /// Asks the capture(s) sharing this handle to stop.
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether stopping was asked for.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// A live capture on one Linux interface: one TPACKET_V3 socket and its mmap ring.
///
/// Packets are lent straight from the ring: [`CaptureSource::next_packet`] lends one
/// until the next call, [`AfPacket::next_block`] lends a whole block whose packets
/// cannot outlive it; a block goes back to the kernel (release ordering) when the
/// reader moves past it. `Packet::to_owned` keeps one.
///
/// ```no_run
/// use tracekit_afpacket::{AfPacket, Options};
/// use tracekit_core::CaptureSource;
///
/// let mut cap = AfPacket::open("eth0", Options::default())?;
/// let stop = cap.stop_handle();
/// std::thread::spawn(move || { std::thread::sleep(std::time::Duration::from_secs(10)); stop.stop() });
/// while let Some(p) = cap.next_packet()? {
///     println!("{} bytes", p.caplen());
/// }
/// println!("{:?}", cap.ring_stats()?);
/// # Ok::<(), tracekit_core::Error>(())
/// ```
pub struct AfPacket {
    fd: OwnedFd,
    map: Mapping,
    block_size: usize,
    block_nr: usize,
    /// Index of the next block to take.
    next_block: usize,
    cursor: Option<Cursor>,
    iface: String,
    ifindex: i32,
    link: LinkType,
    loopback: bool,
    drop_outgoing: bool,
    snaplen: u32,
    reinsert_vlan: bool,
    filter: Option<Filter>,
    /// Whether the filter also runs in the kernel.
    kernel_filtered: bool,
    stop: StopHandle,
    poll_ms: i32,
    /// Kernel counters (clear-on-read) accumulated.
    kernel: Cell<(u64, u64, u64)>,
    filtered: u64,
    delivered: u64,
    fanout: Option<(u16, FanoutSpec)>,
    /// The packet `next_packet` lent last (its block is still held).
    current: Option<(std::ops::Range<usize>, Meta)>,
}

fn io_err(what: &str, iface: &str, e: io::Error) -> Error {
    if matches!(e.raw_os_error(), Some(libc::ENODEV) | Some(libc::ENXIO)) {
        // Said once, as `NotFound`, whichever call met it first.
        return Error::from(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{iface}: no such network interface (`ip link` lists them)"),
        ));
    }
    let hint = match e.raw_os_error() {
        Some(libc::EPERM) => " (live capture needs root or CAP_NET_RAW)",
        _ => "",
    };
    Error::from(io::Error::new(
        e.kind(),
        format!("{iface}: {what}: {e}{hint}"),
    ))
}

/// The link type of an interface, from its ARPHRD hardware type.
fn link_type_of(fd: &OwnedFd, iface: &str) -> Result<(LinkType, bool), Error> {
    let hatype =
        sys::hardware_type(fd, iface).map_err(|e| io_err("cannot use the interface", iface, e))?;
    match hatype {
        ARPHRD_ETHER => Ok((LinkType::ETHERNET, false)),
        ARPHRD_LOOPBACK => Ok((LinkType::ETHERNET, true)),
        0xFFFE => Ok((LinkType::RAW, false)),
        803 => Ok((LinkType(127), false)),
        other => Err(Error::unsupported(format!(
            "{iface}: interface type {other} (ARPHRD) is not supported for capture yet"
        ))),
    }
}

/// Whether `expr` gives the same verdict on a frame whose outer VLAN tag the kernel
/// stripped as on the wire's frame: no VLAN/MPLS/PPPoE/Geneve, no raw link bytes or
/// lengths, and no negation (which would turn "more packets" into "fewer").
pub fn kernel_safe_expression(expr: &str) -> bool {
    let lower = expr.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '[' || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let unsafe_word = |w: &str| {
        matches!(
            w,
            "vlan" | "mpls" | "pppoes" | "pppoed" | "geneve" | "not" | "len" | "less" | "greater"
        ) || w.starts_with("ether[")
            || w.starts_with("link[")
            || w == "ether"
            || w == "link"
    };
    !(lower.contains('!') || words.iter().any(|w| unsafe_word(w)))
}

fn sock_filter(insns: &[Insn]) -> Vec<libc::sock_filter> {
    insns
        .iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect()
}

#[inline]
fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

#[inline]
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_ne_bytes());
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}

/// One packet's place and metadata in a block area.
struct Slot {
    data: std::ops::Range<usize>,
    meta: Meta,
    skip: bool,
}

impl AfPacket {
    /// Opens a capture on `iface` (libpcap's setup order: nothing is queued before the
    /// ring exists).
    pub fn open(iface: &str, options: Options) -> Result<AfPacket, Error> {
        AfPacket::open_inner(iface, options)
    }

    fn open_inner(iface: &str, mut options: Options) -> Result<AfPacket, Error> {
        if options.snaplen == 0 || options.snaplen > MAX_SNAPLEN {
            return Err(Error::invalid_argument(format!(
                "snap length {} is outside 1..={MAX_SNAPLEN}",
                options.snaplen
            )));
        }
        let page = 4096usize;
        if options.block_size < 128 * 1024 || !options.block_size.is_multiple_of(page) {
            return Err(Error::invalid_argument(format!(
                "ring block size {} must be a multiple of {page} bytes and at least 128 KiB",
                options.block_size
            )));
        }
        if options.block_nr == 0 {
            return Err(Error::invalid_argument("a ring needs at least one block"));
        }
        let fd = sys::packet_socket().map_err(|e| io_err("socket(AF_PACKET)", iface, e))?;
        let (link, loopback) = link_type_of(&fd, iface)?;
        let ifindex = sys::if_index(iface).map_err(|e| io_err("no such interface", iface, e))?;
        sys::bind(&fd, ifindex, 0).map_err(|e| io_err("bind", iface, e))?;
        if options.promisc {
            let mreq = libc::packet_mreq {
                mr_ifindex: ifindex,
                mr_type: libc::PACKET_MR_PROMISC as u16,
                mr_alen: 0,
                mr_address: [0; 8],
            };
            sys::set_option(&fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)
                .map_err(|e| io_err("promiscuous mode", iface, e))?;
        }
        sys::set_option(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_VERSION,
            &sys::TPACKET_V3,
        )
        .map_err(|e| io_err("TPACKET_V3 (kernel 3.19 or later needed)", iface, e))?;
        sys::set_option(&fd, libc::SOL_PACKET, libc::PACKET_RESERVE, &RESERVE)
            .map_err(|e| io_err("PACKET_RESERVE", iface, e))?;
        // The kernel filter: the compiled expression when it is safe there (its return
        // value is the snap length), else `ret #snaplen` when the snap length is short.
        let mut kernel_filtered = false;
        let mut filter = options.filter.take();
        if let Some(f) = filter.as_mut() {
            let wanted = match options.kernel_filter {
                KernelFilter::Off => false,
                KernelFilter::On => true,
                KernelFilter::Auto => f.expression().is_some_and(kernel_safe_expression),
            };
            // The kernel takes at most 4,096 instructions; a longer program (a long
            // address list) filters in user space, or is refused when the kernel was
            // asked for by name.
            if wanted {
                let program = f.program_for(link)?;
                if program.fits_kernel() {
                    sys::attach_filter(&fd, &sock_filter(program.insns()), false)
                        .map_err(|e| io_err("attaching the filter", iface, e))?;
                    kernel_filtered = true;
                } else if options.kernel_filter == KernelFilter::On {
                    return Err(Error::invalid_argument(format!(
                        "{iface}: the filter compiles to {} BPF instructions for link type {link}, \
                         more than the kernel's limit of {KERNEL_MAX_INSNS}: filter in user space \
                         instead (kernel filter `auto` or `off`)",
                        program.insns().len()
                    )));
                }
            }
        }
        if !kernel_filtered && options.snaplen < MAX_SNAPLEN {
            let ret = [libc::sock_filter {
                code: 0x06,
                jt: 0,
                jf: 0,
                k: options.snaplen,
            }];
            sys::attach_filter(&fd, &ret, false)
                .map_err(|e| io_err("attaching the snap length program", iface, e))?;
        }
        // The ring, smaller on ENOMEM (5 % fewer blocks a try, as libpcap does).
        let frame_size = 2048u32;
        let mut block_nr = options.block_nr;
        let map = loop {
            let req = libc::tpacket_req3 {
                tp_block_size: options.block_size as u32,
                tp_block_nr: block_nr as u32,
                tp_frame_size: frame_size,
                tp_frame_nr: (options.block_size as u32 / frame_size) * block_nr as u32,
                tp_retire_blk_tov: options.latency.as_millis().clamp(1, u32::MAX as u128) as u32,
                tp_sizeof_priv: 0,
                tp_feature_req_word: 0,
            };
            match sys::set_option(&fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &req) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOMEM) && block_nr > 1 => {
                    block_nr = (block_nr * 95 / 100).min(block_nr - 1).max(1);
                    continue;
                }
                Err(e) => return Err(io_err("PACKET_RX_RING", iface, e)),
            }
            match Mapping::ring(&fd, options.block_size * block_nr) {
                Ok(m) => break m,
                Err(e) => return Err(io_err("mapping the ring", iface, e)),
            }
        };
        // Traffic starts now, into the ring.
        sys::bind(&fd, ifindex, libc::ETH_P_ALL as u16).map_err(|e| io_err("bind", iface, e))?;
        Ok(AfPacket {
            fd,
            map,
            block_size: options.block_size,
            block_nr,
            next_block: 0,
            cursor: None,
            iface: iface.to_string(),
            ifindex,
            link,
            loopback,
            drop_outgoing: options.ignore_outgoing,
            snaplen: options.snaplen,
            reinsert_vlan: options.reinsert_vlan,
            filter,
            kernel_filtered,
            stop: StopHandle::default(),
            poll_ms: options.poll_interval.as_millis().clamp(1, i32::MAX as u128) as i32,
            kernel: Cell::new((0, 0, 0)),
            filtered: 0,
            delivered: 0,
            fanout: None,
            current: None,
        })
    }

    /// The interface.
    pub fn interface(&self) -> &str {
        &self.iface
    }

    /// The snap length.
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// The interface index.
    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }

    /// The link type of the packets.
    pub fn link_type(&self) -> LinkType {
        self.link
    }

    /// Blocks in the ring (fewer than asked when memory was short).
    pub fn blocks(&self) -> usize {
        self.block_nr
    }

    /// Whether the filter runs in the kernel.
    pub fn kernel_filtered(&self) -> bool {
        self.kernel_filtered
    }

    /// The fan-out group and mode joined, if any.
    pub fn fanout_group(&self) -> Option<(u16, FanoutSpec)> {
        self.fanout
    }

    /// The stop flag of this capture (share it with [`AfPacket::set_stop_handle`] to
    /// stop several at once).
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// Makes this capture obey `stop`.
    pub fn set_stop_handle(&mut self, stop: StopHandle) {
        self.stop = stop;
    }

    /// The socket, for `poll` alongside other descriptors.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Joins fan-out group `group` with `mode` (`"hash|defrag"`), like the fan-out
    /// paper's `pcap_fanout`. `cbpf` and `ebpf` need a program:
    /// use [`crate::FanoutGroup`].
    pub fn fanout(&mut self, group: u16, mode: &str) -> Result<(), Error> {
        let spec: FanoutSpec = mode.parse()?;
        if matches!(spec.mode, FanoutMode::Cbpf | FanoutMode::Ebpf) {
            return Err(Error::invalid_argument(format!(
                "fan-out mode {} needs a program: use FanoutGroup::program or ebpf_fd",
                spec.mode.name()
            )));
        }
        if spec.flags.contains(FanoutFlags::UNIQUE_ID) {
            return Err(Error::invalid_argument(
                "uniqueid picks the group id: use FanoutGroup with GroupId::Unique",
            ));
        }
        self.join(group, spec, FanoutFlags::NONE, None)?;
        Ok(())
    }

    /// Joins a group; returns the id (the kernel's pick with `UNIQUE_ID`).
    pub(crate) fn join(
        &mut self,
        group: u16,
        spec: FanoutSpec,
        extra: FanoutFlags,
        program: Option<&FanoutProgram>,
    ) -> Result<u16, Error> {
        spec.check()?;
        let mut kernel_spec = spec;
        if spec.flags.contains(FanoutFlags::IGNORE_OUTGOING) && sys::kernel_version() < (6, 2) {
            // The flag's bit is accepted and ignored before 6.2: drop outgoing packets
            // here instead (the same result).
            kernel_spec.flags = spec.flags.without(FanoutFlags::IGNORE_OUTGOING);
            self.drop_outgoing = true;
        }
        let value = option_value(group, kernel_spec, extra);
        sys::set_option(&self.fd, libc::SOL_PACKET, libc::PACKET_FANOUT, &value).map_err(|e| {
            let why = match e.raw_os_error() {
                Some(libc::EINVAL) => " (the group exists with another mode, flags or device, or the combination is invalid)",
                Some(libc::ENOSPC) => " (the group is full)",
                Some(libc::EALREADY) => " (already in a group)",
                _ => "",
            };
            io_err(&format!("joining fan-out group {group} as {spec}{why}"), &self.iface, e)
        })?;
        if let Some(p) = program {
            match p {
                FanoutProgram::Cbpf(insns) => {
                    sys::attach_filter(&self.fd, &sock_filter(insns), true)
                        .map_err(|e| io_err("PACKET_FANOUT_DATA", &self.iface, e))?
                }
                FanoutProgram::Ebpf(fd) => sys::set_option(
                    &self.fd,
                    libc::SOL_PACKET,
                    libc::PACKET_FANOUT_DATA,
                    &(*fd as u32),
                )
                .map_err(|e| io_err("PACKET_FANOUT_DATA", &self.iface, e))?,
            }
        }
        let id = if extra.contains(FanoutFlags::UNIQUE_ID) {
            let (v, _) = sys::get_option::<u32>(&self.fd, libc::SOL_PACKET, libc::PACKET_FANOUT)
                .map_err(|e| io_err("reading the fan-out id", &self.iface, e))?;
            (v & 0xffff) as u16
        } else {
            group
        };
        self.fanout = Some((id, spec));
        Ok(id)
    }

    /// Reads and accumulates the kernel's counters (they clear on read).
    fn refresh_kernel_stats(&self) -> io::Result<()> {
        let (s, _) = sys::get_option::<libc::tpacket_stats_v3>(
            &self.fd,
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
        )?;
        let (p, d, f) = self.kernel.get();
        self.kernel.set((
            p + u64::from(s.tp_packets),
            d + u64::from(s.tp_drops),
            f + u64::from(s.tp_freeze_q_cnt),
        ));
        Ok(())
    }

    /// The counters, the kernel's read now.
    pub fn ring_stats(&self) -> Result<RingStats, Error> {
        self.refresh_kernel_stats()
            .map_err(|e| io_err("PACKET_STATISTICS", &self.iface, e))?;
        let (received, dropped, freezes) = self.kernel.get();
        Ok(RingStats {
            received,
            dropped,
            freezes,
            filtered: self.filtered,
            delivered: self.delivered,
        })
    }

    fn block_offset(&self, index: usize) -> usize {
        index * self.block_size
    }

    /// Takes the next block if the kernel has handed it over: fixes VLAN tags, marks
    /// the packets to skip, and sets the cursor.
    fn take_block(&mut self) -> Result<bool, Error> {
        let block = self.block_offset(self.next_block);
        if self.map.block_status(block).load(ACQUIRE) & TP_STATUS_USER == 0 {
            return Ok(false);
        }
        let area_len = self.block_size - AREA_START;
        // SAFETY: the block's status was seen as user-owned (acquire) just above; it is
        // handed back only in `release_block`, which needs `&mut self` and so cannot run
        // while this slice lives; the area starts past the status word.
        let area = unsafe { self.map.user_block_mut(block + AREA_START, area_len) };
        let packets = u32_at(area, 0);
        let first = u32_at(area, 4) as usize;
        let malformed = |what: &str| {
            Error::malformed(format!(
                "{}: ring block {} holds a bad packet header ({what})",
                self.iface, self.next_block
            ))
        };
        if first < AREA_START + 8 {
            return Err(malformed("first packet offset"));
        }
        let mut off = first - AREA_START;
        let mut filtered = 0u64;
        for i in 0..packets {
            if off + HDR_LEN + SLL_LEN > area.len() {
                return Err(malformed("outside the block"));
            }
            let status = u32_at(area, off + 20);
            let mac = usize::from(u16_at(area, off + 24));
            let snap = u32_at(area, off + 12) as usize;
            if mac < HDR_LEN + SLL_LEN || off + mac + snap > area.len() {
                return Err(malformed("frame outside the block"));
            }
            put_u16(area, off + 38, 0);
            let vlan = status & TP_STATUS_VLAN_VALID != 0 || u32_at(area, off + 32) != 0;
            if self.reinsert_vlan
                && vlan
                && self.link == LinkType::ETHERNET
                && snap >= 12
                && mac >= HDR_LEN + SLL_LEN + 4
            {
                let tci = u32_at(area, off + 32) as u16;
                let tpid = if status & TP_STATUS_VLAN_TPID_VALID != 0 {
                    u16_at(area, off + 36)
                } else {
                    0x8100
                };
                let data = off + mac;
                area.copy_within(data..data + 12, data - 4);
                area[data + 8..data + 10].copy_from_slice(&tpid.to_be_bytes());
                area[data + 10..data + 12].copy_from_slice(&tci.to_be_bytes());
                put_u16(area, off + 24, (mac - 4) as u16);
                put_u32(area, off + 12, (snap + 4) as u32);
                put_u32(area, off + 16, u32_at(area, off + 16) + 4);
                put_u32(area, off + 20, status & !TP_STATUS_VLAN_VALID);
                put_u16(area, off + 38, MARK_RETAGGED);
            }
            let pkttype = area[off + HDR_LEN + 10];
            let mut skip = pkttype == PACKET_OUTGOING && (self.loopback || self.drop_outgoing);
            if !skip
                && let Some(f) = self.filter.as_mut()
                && (!self.kernel_filtered || u16_at(area, off + 38) == MARK_RETAGGED)
            {
                let mac = usize::from(u16_at(area, off + 24));
                let snap = u32_at(area, off + 12) as usize;
                let meta = Meta::new(Timestamp::ZERO, u32_at(area, off + 16), self.link);
                let p = Packet::new(&area[off + mac..off + mac + snap], meta);
                skip = !f.matches(&p)?;
            }
            if skip {
                put_u16(area, off + 38, MARK_SKIP);
                filtered += 1;
            }
            if i + 1 < packets {
                let next = u32_at(area, off) as usize;
                if next == 0 {
                    return Err(malformed("next offset"));
                }
                off += next;
            }
        }
        self.filtered += filtered;
        self.cursor = Some(Cursor {
            block,
            off: first - AREA_START,
            left: packets,
            kept: packets - filtered as u32,
        });
        Ok(true)
    }

    /// Hands the current block back to the kernel and moves to the next.
    fn release_block(&mut self) {
        self.current = None;
        if let Some(c) = self.cursor.take() {
            self.map
                .block_status(c.block)
                .store(TP_STATUS_KERNEL, RELEASE);
            self.next_block = (self.next_block + 1) % self.block_nr;
        }
    }

    /// Reads the packet at the cursor and advances it.
    fn slot(&self, area: &[u8], c: &mut Cursor) -> Slot {
        let off = c.off;
        let next = u32_at(area, off) as usize;
        let mac = usize::from(u16_at(area, off + 24));
        let snap = u32_at(area, off + 12) as usize;
        let caplen = snap.min(self.snaplen as usize);
        let pkttype = area[off + HDR_LEN + 10];
        let mut meta = Meta::new(
            Timestamp::from_nanos(u32_at(area, off + 4), u32_at(area, off + 8)),
            u32_at(area, off + 16),
            self.link,
        );
        meta.direction = if pkttype == PACKET_OUTGOING {
            Direction::Outbound
        } else {
            Direction::Inbound
        };
        let skip = u16_at(area, off + 38) == MARK_SKIP;
        c.left -= 1;
        c.kept -= u32::from(!skip);
        c.off += next;
        Slot {
            data: off + mac..off + mac + caplen,
            meta,
            skip,
        }
    }

    /// Waits for the next block (or the stop flag, or `deadline`).
    fn wait_block(&mut self, deadline: Option<Instant>) -> Result<bool, Error> {
        loop {
            // The stop flag first: under continuous traffic a block is always ready.
            if self.stop.is_stopped() {
                return Ok(false);
            }
            if self.take_block()? {
                return Ok(true);
            }
            let mut wait = self.poll_ms;
            if let Some(d) = deadline {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(false);
                }
                wait = wait.min(left.as_millis().max(1) as i32);
            }
            sys::poll_in(&self.fd, wait).map_err(|e| io_err("poll", &self.iface, e))?;
        }
    }

    /// The next block of packets, waiting at most `timeout` (forever with `None`, until
    /// the stop flag). Packets left from `next_packet` in the current block come first.
    /// The block goes back to the kernel when the returned value is dropped.
    pub fn next_block(&mut self, timeout: Option<Duration>) -> Result<Option<Block<'_>>, Error> {
        self.current = None;
        if self.cursor.is_some_and(|c| c.left == 0) {
            self.release_block();
        }
        if self.cursor.is_none() && !self.wait_block(timeout.map(|t| Instant::now() + t))? {
            return Ok(None);
        }
        Ok(Some(Block { cap: self }))
    }
}

impl AfPacket {
    /// The next packet `keep` accepts (a filter over the lent packet), waiting for one;
    /// `None` once the stop flag is set.
    pub fn next_matching(
        &mut self,
        keep: &mut dyn FnMut(&Packet<'_>) -> Result<bool, Error>,
    ) -> Result<Option<Packet<'_>>, Error> {
        Ok(match self.poll_matching(keep, None)? {
            Polled::Packet(p) => Some(p),
            Polled::Idle | Polled::Ended => None,
        })
    }

    /// The next packet `keep` accepts, waiting at most `timeout` for it (`None`: until
    /// the stop flag): [`Polled::Idle`] when none came in time, [`Polled::Ended`] once
    /// the stop flag is set.
    pub fn poll_matching(
        &mut self,
        keep: &mut dyn FnMut(&Packet<'_>) -> Result<bool, Error>,
        timeout: Option<Duration>,
    ) -> Result<Polled<'_>, Error> {
        // The clock is read only when the packets at hand are used up.
        let mut deadline = None;
        self.current = None;
        let slot = loop {
            if let Some(mut c) = self.cursor {
                if c.left > 0 {
                    let area_len = self.block_size - AREA_START;
                    // SAFETY: the cursor's block is user-owned until `release_block`,
                    // which cannot run while this slice lives (it needs `&mut self`).
                    let area = unsafe { self.map.user_block(c.block + AREA_START, area_len) };
                    let slot = self.slot(area, &mut c);
                    self.cursor = Some(c);
                    if slot.skip {
                        continue;
                    }
                    if !keep(&Packet::new(&area[slot.data.clone()], slot.meta))? {
                        self.filtered += 1;
                        continue;
                    }
                    break slot;
                }
                self.release_block();
                // Blocks whose packets the filter all dropped do not stop the clock.
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Ok(Polled::Idle);
                }
            }
            let deadline = timeout.map(|t| *deadline.get_or_insert_with(|| Instant::now() + t));
            if !self.wait_block(deadline)? {
                return Ok(if self.stop.is_stopped() {
                    Polled::Ended
                } else {
                    Polled::Idle
                });
            }
        };
        self.delivered += 1;
        self.current = Some((slot.data.clone(), slot.meta));
        let c = self.cursor.expect("a block is being read");
        // SAFETY: as above: the block stays user-owned while the returned packet borrows
        // `self`.
        let area = unsafe {
            self.map
                .user_block(c.block + AREA_START, self.block_size - AREA_START)
        };
        Ok(Polled::Packet(Packet::new(&area[slot.data], slot.meta)))
    }

    /// The packet the last `next_packet` lent, again (`None` once its block was
    /// handed back).
    pub fn current_packet(&self) -> Option<Packet<'_>> {
        let (range, meta) = self.current.clone()?;
        let c = self.cursor?;
        // SAFETY: `current` is cleared whenever the block is handed back, so the block
        // is still user-owned; the packet borrows `self`.
        let area = unsafe {
            self.map
                .user_block(c.block + AREA_START, self.block_size - AREA_START)
        };
        Some(Packet::new(&area[range], meta))
    }
}

impl TraceInfo for AfPacket {
    fn description(&self) -> String {
        format!(
            "live AF_PACKET capture on {} (TPACKET_V3, {} ring blocks)",
            self.iface, self.block_nr
        )
    }

    fn snaplen(&self) -> Option<u32> {
        Some(self.snaplen)
    }

    fn declared_link_type(&self) -> Option<LinkType> {
        Some(self.link)
    }

    fn interface_info(&self, id: u32) -> Option<InterfaceInfo> {
        (id == 0).then(|| InterfaceInfo {
            name: Some(self.iface.clone()),
            snaplen: self.snaplen,
            ts_resolution: TsResolution::NANO,
            ..InterfaceInfo::new(self.link)
        })
    }

    fn ts_resolution(&self) -> TsResolution {
        TsResolution::NANO
    }
}

impl CaptureSource for AfPacket {
    /// The next packet, waiting for one; `None` once the stop flag is set.
    fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error> {
        self.next_matching(&mut |_| Ok(true))
    }

    /// The next packet if one comes within `timeout`.
    fn next_packet_within(&mut self, timeout: Duration) -> Result<Polled<'_>, Error> {
        self.poll_matching(&mut |_| Ok(true), Some(timeout))
    }

    fn stats(&self) -> Stats {
        let _ = self.refresh_kernel_stats();
        let (received, dropped, _) = self.kernel.get();
        Stats {
            received,
            dropped,
            filtered: self.filtered,
            captured: self.delivered,
        }
    }
}

/// A block of packets lent from the ring; it goes back to the kernel when dropped.
///
/// Its packets borrow it, so none can be used after the block went back:
///
/// ```compile_fail
/// use tracekit_afpacket::AfPacket;
/// fn first(cap: &mut AfPacket) -> usize {
///     let kept;
///     {
///         let block = cap.next_block(None).unwrap().unwrap();
///         kept = block.packets().next().unwrap();
///     } // the block is handed back here
///     kept.caplen()
/// }
/// ```
///
/// `to_owned()` keeps a copy:
///
/// ```no_run
/// use tracekit_afpacket::AfPacket;
/// fn first(cap: &mut AfPacket) -> Option<tracekit_core::OwnedPacket> {
///     let block = cap.next_block(None).ok()??;
///     let kept = block.packets().next().map(|p| p.to_owned());
///     kept
/// }
/// ```
pub struct Block<'a> {
    cap: &'a mut AfPacket,
}

impl Block<'_> {
    /// The block's packets not read yet (all of them, unless `next_packet` read some),
    /// skipping those the filter or the loopback rule dropped.
    pub fn packets(&self) -> impl Iterator<Item = Packet<'_>> + use<'_> {
        let cap = &*self.cap;
        let mut c = cap.cursor.expect("a block is being read");
        // SAFETY: the block is user-owned until this `Block` is dropped, and the
        // packets borrow `self`.
        let area = unsafe {
            cap.map
                .user_block(c.block + AREA_START, cap.block_size - AREA_START)
        };
        std::iter::from_fn(move || {
            while c.left > 0 {
                let slot = cap.slot(area, &mut c);
                if !slot.skip {
                    return Some(Packet::new(&area[slot.data], slot.meta));
                }
            }
            None
        })
    }

    /// How many packets the block holds (skipped ones included).
    pub fn len(&self) -> usize {
        self.cap.cursor.map_or(0, |c| c.left as usize)
    }

    /// Whether the block holds no packets left.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for Block<'_> {
    fn drop(&mut self) {
        // The block's unread packets count as handed over (known since it was taken).
        self.cap.delivered += self.cap.cursor.map_or(0, |c| u64::from(c.kept));
        self.cap.release_block();
    }
}

/// The program of a `cbpf` or `ebpf` fan-out.
#[derive(Debug, Clone)]
pub enum FanoutProgram {
    /// Classic BPF returning the member index.
    Cbpf(Vec<Insn>),
    /// An eBPF socket-filter program's descriptor.
    Ebpf(RawFd),
}
