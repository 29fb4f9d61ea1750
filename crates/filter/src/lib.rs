//! tcpdump filter expressions for tracekit.
//!
//! - [`Program`]: a classic-BPF program as plain data (`Send + Sync`), validated once like
//!   the kernel's checker, run per packet by a virtual machine in safe Rust over the
//!   borrowed bytes, with the captured length and the wire length kept apart (`len`,
//!   `greater` and `less` see the wire length), without allocating.
//! - [`Filter`]: an expression compiled once per link type it meets, lazily, with the
//!   system libpcap (feature `libpcap`: `pcap_open_dead` + `pcap_compile`, optimised,
//!   netmask unknown); or a fixed program from `tcpdump -ddd` output
//!   ([`Filter::from_ddd`]) for builds without libpcap. A long list of terms joined by
//!   one connective (`host a or host b or …`) is compiled in pieces of a few dozen terms
//!   and the programs joined, because libpcap's optimiser takes minutes over a thousand
//!   terms at once.
//! - Programs are not limited to the kernel's 4,096 instructions: files are filtered by
//!   the VM ([`Program::fits_kernel`] says whether a live capture can also attach it).
//! - libpcap is loaded at run time, not linked: the usual sonames are tried
//!   (`libpcap.so.0.8`, `libpcap.so.1`, `libpcap.so`, macOS's `libpcap.A.dylib`), or the
//!   one named by `TRACEKIT_LIBPCAP`. Without it, everything but compiling an expression
//!   works, and compiling fails with a message that names the package to install.
//!
//! ```
//! use tracekit_core::{LinkType, Meta, Packet, Timestamp};
//! use tracekit_filter::Filter;
//!
//! // `tcpdump -ddd ip` for Ethernet
//! let mut f = Filter::from_ddd("4\n40 0 0 12\n21 0 1 2048\n6 0 0 262144\n6 0 0 0\n")?;
//! let mut frame = [0u8; 64];
//! frame[12] = 0x08;
//! let p = Packet::new(&frame, Meta::new(Timestamp::ZERO, 64, LinkType::ETHERNET));
//! assert!(f.matches(&p)?);
//! # Ok::<(), tracekit_core::Error>(())
//! ```

#![deny(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "libpcap")]
mod chain;
#[cfg(feature = "libpcap")]
#[allow(unsafe_code)]
mod libpcap;
mod program;

pub use program::{Insn, KERNEL_MAX_INSNS, MAX_INSNS, Program, op, parse_ddd};

use tracekit_core::{Error, LinkType, Packet, PacketKind};

#[cfg(feature = "libpcap")]
pub use libpcap::{LIBPCAP_ENV, available as libpcap_available};

/// Compiles `expr` for `link` with libpcap.
#[cfg(feature = "libpcap")]
pub fn compile(expr: &str, link: LinkType, snaplen: u32) -> Result<Program, Error> {
    libpcap::compile(expr, link, snaplen)
}

/// A filter: an expression compiled per link type on demand, or one fixed program.
#[derive(Debug, Clone)]
pub struct Filter {
    expr: Option<String>,
    #[cfg_attr(not(feature = "libpcap"), allow(dead_code))]
    snaplen: u32,
    fixed: Option<Program>,
    programs: Vec<(LinkType, Program)>,
}

impl Filter {
    /// A filter for a tcpdump expression, compiled with libpcap for each link type when
    /// it first meets it. `snaplen` is what compiled programs return for accepted packets.
    /// The expression is checked now (compiled for Ethernet), so a syntax error is found
    /// before any packet is read.
    #[cfg(feature = "libpcap")]
    pub fn new(expr: &str, snaplen: u32) -> Result<Filter, Error> {
        let mut f = Filter {
            expr: Some(expr.to_string()),
            snaplen,
            fixed: None,
            programs: Vec::with_capacity(2),
        };
        // Validate the syntax up front, keeping the program (the commonest link type is
        // not compiled twice); a link type on which the expression makes no sense is
        // reported when it is met.
        match compile(expr, LinkType::ETHERNET, snaplen) {
            Ok(program) => f.programs.push((LinkType::ETHERNET, program)),
            Err(e) => match compile(expr, LinkType::RAW, snaplen) {
                Ok(program) => f.programs.push((LinkType::RAW, program)),
                Err(_) => return Err(e),
            },
        }
        Ok(f)
    }

    /// Without libpcap an expression cannot be compiled: use [`Filter::from_ddd`].
    #[cfg(not(feature = "libpcap"))]
    pub fn new(expr: &str, _snaplen: u32) -> Result<Filter, Error> {
        Err(Error::unsupported(format!(
            "this build of tracekit has no libpcap to compile `{expr}`: pass `tcpdump -ddd` output instead"
        )))
    }

    /// Compiles `expr` for one link type with libpcap into a [`Program`] (plain data,
    /// `Send + Sync`); a compile error carries libpcap's message.
    #[cfg(feature = "libpcap")]
    pub fn compile(expr: &str, link: LinkType, snaplen: u32) -> Result<Program, Error> {
        compile(expr, link, snaplen)
    }

    /// A filter from raw instructions (validated first).
    pub fn from_bytecode(insns: Vec<Insn>) -> Result<Filter, Error> {
        Ok(Filter::from_program(Program::new(insns)?))
    }

    /// A filter running one fixed program on every packet, whatever its link type.
    pub fn from_program(program: Program) -> Filter {
        Filter {
            expr: None,
            snaplen: 0,
            fixed: Some(program),
            programs: Vec::new(),
        }
    }

    /// A filter from `tcpdump -ddd EXPR` output (compiled for one link type: the filter
    /// runs it on every packet).
    pub fn from_ddd(text: &str) -> Result<Filter, Error> {
        Ok(Filter::from_program(Program::new(parse_ddd(text)?)?))
    }

    /// The expression, if the filter has one.
    pub fn expression(&self) -> Option<&str> {
        self.expr.as_deref()
    }

    /// The program for a link type, compiled on first use.
    pub fn program_for(&mut self, link: LinkType) -> Result<&Program, Error> {
        if let Some(p) = &self.fixed {
            return Ok(p);
        }
        let i = match self.programs.iter().position(|(l, _)| *l == link) {
            Some(i) => i,
            None => {
                let program = self.compile_for(link)?;
                self.programs.push((link, program));
                self.programs.len() - 1
            }
        };
        Ok(&self.programs[i].1)
    }

    #[cfg(feature = "libpcap")]
    fn compile_for(&self, link: LinkType) -> Result<Program, Error> {
        compile(self.expr.as_deref().unwrap_or(""), link, self.snaplen)
    }

    #[cfg(not(feature = "libpcap"))]
    fn compile_for(&self, link: LinkType) -> Result<Program, Error> {
        Err(Error::unsupported(format!(
            "no program for link type {link}"
        )))
    }

    /// Whether a packet passes. Metadata records never do.
    #[inline]
    pub fn matches(&mut self, packet: &Packet<'_>) -> Result<bool, Error> {
        if packet.meta().kind == PacketKind::MetaRecord {
            return Ok(false);
        }
        let wire_len = packet.wire_len();
        let data = packet.data();
        Ok(self
            .program_for(packet.link_type())?
            .matches(data, wire_len))
    }
}
