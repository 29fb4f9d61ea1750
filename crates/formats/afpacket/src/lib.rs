//! Live capture on Linux with AF_PACKET: TPACKET_V3 mmap rings, zero copy, and
//! `PACKET_FANOUT` groups that spread one interface's packets over several sockets.
//!
//! - [`AfPacket`]: one socket and ring; a [`CaptureSource`](tracekit_core::CaptureSource)
//!   whose packets borrow the ring, plus a per-block interface ([`AfPacket::next_block`]).
//! - [`FanoutGroup`]: opens N members of one fan-out group, each movable to its own
//!   thread; [`AfPacket::fanout`] joins a group per handle, with the fan-out paper's mode
//!   strings (`"hash|defrag"`); [`MemberThreads`] reads the members on one thread each
//!   and hands their packets out as one stream (for users of this crate alone: the
//!   facade's `tracekit::parallel::Parallel::run_members` runs a worker per member, and
//!   `tracekit capture --members` uses it).
//! - [`config`]: the `TRACEKIT_GROUP`/`TRACEKIT_FANOUT` environment (and the paper's
//!   `PCAP_*` names) and the `key[@group] = value` file named by `TRACEKIT_CONFIG`.
//! - [`Injector`] sends frames (for tests and traffic generators); [`enter_netns`] moves
//!   the calling thread into a network namespace.
//!
//! Setup follows libpcap's order (no stale packets before the ring exists). VLAN tags
//! the kernel strips are put back, so packets are the bytes on the wire. On loopback
//! every packet shows up twice (outgoing and incoming); the outgoing copies are dropped.
//! Filters run in the kernel when that gives the same verdict as on the wire
//! ([`capture::kernel_safe_expression`]), else in user space; without a filter a short
//! snap length is enforced in the kernel with a `ret #snaplen` program.
//!
//! Capturing needs `CAP_NET_RAW` (or root); most users reach this crate through
//! `tracekit::open("afpacket:eth0")`. Here, two members of a fan-out group split the
//! traffic of `eth0` by flow, each on a thread of its own:
//!
//! ```no_run
//! use tracekit_afpacket::{FanoutGroup, Options};
//! use tracekit_core::CaptureSource;
//!
//! let members = FanoutGroup::new("eth0")
//!     .members(2)
//!     .mode("hash|defrag".parse()?) // both directions of a flow reach one member
//!     .options(Options { snaplen: 128, ..Options::default() })
//!     .open()?;
//! let threads: Vec<_> = members
//!     .into_iter()
//!     .map(|mut ring| {
//!         std::thread::spawn(move || -> Result<u64, tracekit_core::Error> {
//!             let mut bytes = 0;
//!             while let Some(packet) = ring.next_packet()? { // lent from the ring
//!                 bytes += u64::from(packet.wire_len());
//!                 if bytes > 1 << 30 {
//!                     break;
//!                 }
//!             }
//!             println!("{:?}", ring.ring_stats()?); // received, dropped, ...
//!             Ok(bytes)
//!         })
//!     })
//!     .collect();
//! for t in threads {
//!     println!("{} bytes", t.join().unwrap()?);
//! }
//! # Ok::<(), tracekit_core::Error>(())
//! ```

#![deny(unsafe_code)]
#![deny(missing_docs)]

// `unsafe` is confined to the system-call wrappers (`sys`) and to the four places in
// `capture` that turn a user-owned ring block into a slice; each has its safety
// argument next to it.
#[allow(unsafe_code)]
pub mod capture;
pub mod config;
pub mod fanout;
mod members;
#[allow(unsafe_code)]
mod sys;

use std::os::fd::OwnedFd;

pub use capture::{AfPacket, Block, FanoutProgram, MAX_SNAPLEN, Options, RingStats, StopHandle};
pub use config::{Config, KernelFilter, Settings};
pub use fanout::{FanoutFlags, FanoutMode, FanoutSpec, GroupId};
pub use members::MemberThreads;
use tracekit_core::Error;
/// What [`MemberThreads::poll`] and [`AfPacket`]'s `next_packet_within` found.
pub use tracekit_core::Polled;
use tracekit_filter::Insn;

/// Opens the members of one fan-out group on one interface.
///
/// ```no_run
/// use tracekit_afpacket::{FanoutGroup, GroupId, Options};
/// use tracekit_core::CaptureSource;
///
/// let members = FanoutGroup::new("eth0")
///     .members(4)
///     .mode("hash|ignore_outgoing".parse()?)
///     .group(GroupId::Unique)
///     .options(Options::default())
///     .open()?;
/// let workers: Vec<_> = members
///     .into_iter()
///     .map(|mut m| std::thread::spawn(move || {
///         let mut n = 0u64;
///         while let Ok(Some(_)) = m.next_packet() { n += 1 }
///         n
///     }))
///     .collect();
/// # Ok::<(), tracekit_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct FanoutGroup {
    iface: String,
    members: usize,
    spec: FanoutSpec,
    group: GroupId,
    options: Options,
    program: Option<FanoutProgram>,
}

impl FanoutGroup {
    /// A group on `iface`: one member, `hash`, a unique id, default options.
    pub fn new(iface: &str) -> FanoutGroup {
        FanoutGroup {
            iface: iface.to_string(),
            members: 1,
            spec: FanoutSpec::default(),
            group: GroupId::Unique,
            options: Options::default(),
            program: None,
        }
    }

    /// A group set up from the environment and `TRACEKIT_CONFIG` (see [`config`]);
    /// later builder calls override what they say.
    pub fn configured(iface: &str) -> Result<FanoutGroup, Error> {
        let config = Config::from_env()?;
        let r = config::resolve(iface, |k| std::env::var(k).ok(), config.as_ref())?;
        let mut g = FanoutGroup::new(iface);
        if let Some(id) = r.group {
            g.group = GroupId::Fixed(id);
        }
        let s = r.settings;
        if let Some(spec) = s.fanout {
            g.spec = spec;
        }
        if let Some(m) = s.members {
            g.members = m;
        }
        let o = &mut g.options;
        if let Some(v) = s.snaplen {
            o.snaplen = v;
        }
        if let Some(v) = s.block_size {
            o.block_size = v;
        }
        if let Some(v) = s.block_nr {
            o.block_nr = v;
        }
        if let Some(v) = s.latency_ms {
            o.latency = std::time::Duration::from_millis(u64::from(v));
        }
        if let Some(v) = s.promisc {
            o.promisc = v;
        }
        if let Some(v) = s.kernel_filter {
            o.kernel_filter = v;
        }
        if let Some(expr) = s.filter {
            o.filter = Some(compile_filter(&expr, o.snaplen)?);
        }
        Ok(g)
    }

    /// Number of members (sockets), at least 1.
    pub fn members(mut self, n: usize) -> FanoutGroup {
        self.members = n;
        self
    }

    /// Fan-out mode and flags.
    pub fn mode(mut self, spec: FanoutSpec) -> FanoutGroup {
        self.spec = spec;
        self
    }

    /// The group id.
    pub fn group(mut self, group: GroupId) -> FanoutGroup {
        self.group = group;
        self
    }

    /// Socket options for every member.
    pub fn options(mut self, options: Options) -> FanoutGroup {
        self.options = options;
        self
    }

    /// The classic BPF program of mode `cbpf` (it returns the member index).
    pub fn program(mut self, insns: Vec<Insn>) -> FanoutGroup {
        self.program = Some(FanoutProgram::Cbpf(insns));
        self
    }

    /// The eBPF program of mode `ebpf` (a loaded socket-filter program's descriptor).
    pub fn ebpf_fd(mut self, fd: std::os::fd::RawFd) -> FanoutGroup {
        self.program = Some(FanoutProgram::Ebpf(fd));
        self
    }

    /// What is configured so far: (members, mode, group, options).
    pub fn settings(&self) -> (usize, FanoutSpec, GroupId, &Options) {
        (self.members, self.spec, self.group, &self.options)
    }

    /// Opens every member and joins them to the group; all share one stop handle.
    pub fn open(self) -> Result<Vec<AfPacket>, Error> {
        if self.members == 0 {
            return Err(Error::invalid_argument(
                "a fan-out group needs at least one member",
            ));
        }
        self.spec.check()?;
        match (self.spec.mode, &self.program) {
            (FanoutMode::Cbpf, Some(FanoutProgram::Cbpf(_)))
            | (FanoutMode::Ebpf, Some(FanoutProgram::Ebpf(_))) => {}
            (FanoutMode::Cbpf | FanoutMode::Ebpf, _) => {
                return Err(Error::invalid_argument(format!(
                    "fan-out mode {} needs its program (FanoutGroup::program / ebpf_fd)",
                    self.spec.mode.name()
                )));
            }
            (_, Some(_)) => {
                return Err(Error::invalid_argument(format!(
                    "a fan-out program only applies to modes cbpf and ebpf, not {}",
                    self.spec.mode.name()
                )));
            }
            _ => {}
        }
        let unique_in_spec = self.spec.flags.contains(FanoutFlags::UNIQUE_ID);
        let spec = FanoutSpec {
            mode: self.spec.mode,
            flags: self.spec.flags.without(FanoutFlags::UNIQUE_ID),
        };
        let mut id = match self.group {
            GroupId::Fixed(_) if unique_in_spec => {
                return Err(Error::invalid_argument(
                    "uniqueid lets the kernel pick the group id: do not give one",
                ));
            }
            GroupId::Fixed(id) => Some(id),
            GroupId::Unique => None,
        };
        let stop = StopHandle::default();
        let mut members = Vec::with_capacity(self.members);
        for _ in 0..self.members {
            let mut m = AfPacket::open(&self.iface, self.options.clone())?;
            m.set_stop_handle(stop.clone());
            let program = if members.is_empty() {
                self.program.as_ref()
            } else {
                None
            };
            id = Some(match id {
                Some(id) => m.join(id, spec, FanoutFlags::NONE, program)?,
                None => m.join(0, spec, FanoutFlags::UNIQUE_ID, program)?,
            });
            members.push(m);
        }
        Ok(members)
    }
}

/// Compiles a tcpdump expression (needs the `libpcap` feature; otherwise pass a
/// [`tracekit_filter::Filter`] built from `tcpdump -ddd` output in [`Options::filter`]).
pub fn compile_filter(expr: &str, snaplen: u32) -> Result<tracekit_filter::Filter, Error> {
    tracekit_filter::Filter::new(expr, snaplen)
}

/// Sends frames on an interface through an AF_PACKET socket (what a traffic generator
/// or a test needs; frames go out as given, link header included).
pub struct Injector {
    fd: OwnedFd,
    iface: String,
}

impl Injector {
    /// Opens a sending socket on `iface`.
    pub fn open(iface: &str) -> Result<Injector, Error> {
        let ifindex = sys::if_index(iface)
            .map_err(|e| Error::from(std::io::Error::new(e.kind(), format!("{iface}: {e}"))))?;
        let fd = sys::packet_socket()?;
        sys::bind(&fd, ifindex, libc::ETH_P_ALL as u16)?;
        // Straight to the driver: no queueing discipline (kernel 3.14 and later).
        let _ = sys::set_option(&fd, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &1i32);
        Ok(Injector {
            fd,
            iface: iface.to_string(),
        })
    }

    /// Sends one frame; retries briefly when the device queue is full.
    pub fn send(&self, frame: &[u8]) -> Result<(), Error> {
        loop {
            match sys::send(&self.fd, frame) {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => std::thread::yield_now(),
                Err(e) => {
                    return Err(Error::from(std::io::Error::new(
                        e.kind(),
                        format!("{}: send: {e}", self.iface),
                    )));
                }
            }
        }
    }
}

/// Moves the calling thread into the network namespace `name` (as created by
/// `ip netns add`, under /run/netns). Sockets the thread opens afterwards live there.
pub fn enter_netns(name: &str) -> Result<(), Error> {
    let path = format!("/run/netns/{name}");
    let file = std::fs::File::open(&path).map_err(|e| Error::from(e).with_path(&path))?;
    sys::set_netns(std::os::fd::AsRawFd::as_raw_fd(&file))
        .map_err(|e| Error::from(e).with_path(&path))
}
