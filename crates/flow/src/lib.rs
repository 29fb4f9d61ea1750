//! Flows on top of [`tracekit_decode`]: a bounded flow table with TCP state and
//! Zeek-style history, IPv4/IPv6 defragmentation, and TCP stream reassembly.
//!
//! - [`FlowTable`] groups packets into bidirectional flows keyed by the 5-tuple
//!   ([`FlowKey`]; VLAN id and tunnel level optional, see [`KeyOptions`]). Each flow
//!   counts packets, wire bytes and payload bytes per direction, keeps its first and last
//!   time stamps, a TCP state ([`TcpState`], Zeek's `conn_state` through
//!   [`FlowRecord::conn_state`]) and a history string (`ShADadFf`). Flows end on idle
//!   and active timeouts measured on trace time, when a new TCP connection reuses the
//!   5-tuple, when the table is full (the least recently active flow is evicted and
//!   counted in [`FlowStats::evicted`]) and at [`FlowTable::finish`]; each ended flow is
//!   handed to a callback as a [`FlowRecord`]. Memory is bounded by
//!   [`FlowConfig::max_flows`]; updating a flow allocates nothing.
//! - [`Defragmenter`] ([`defrag`]) joins IP fragments under limits on datagrams and
//!   bytes, with a trace-time timeout and a named [`OverlapPolicy`], at every tunnel
//!   level (fragments inside GRE, IP-in-IP, VXLAN, GTP-U, ... keyed by their tunnel);
//!   unfragmented packets pass through uncopied.
//! - [`TcpStreams`] ([`stream`]) delivers each TCP direction's bytes in order, once, to
//!   a [`StreamHandler`], reporting gaps and differing overlaps; it keeps state only for
//!   the flows the table holds when its [`TcpStreams::end`] is called for every flow the
//!   table ends.
//! - [`ScanDetector`] is the libtrace paper's Scans analysis on flow records.
//! - [`QuicConnections`] ([`quic`]) learns QUIC connection ids from long headers, so
//!   that the DCID of short-header packets can be read, and [`HttpHeads`] ([`http`])
//!   joins HTTP heads split over TCP segments; [`FieldTracker`] holds both for `tracekit
//!   fields --reassemble`.
//!
//! ```
//! use tracekit_core::{LinkType, Meta, Packet, Timestamp};
//! use tracekit_flow::{FlowConfig, FlowTable, TcpState};
//! use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Tcp, tcp_flags};
//!
//! let segment = |from_client: bool, flags: u8, seq: u32| {
//!     let (src, dst, sp, dp) = if from_client {
//!         ([10, 0, 0, 1], [10, 0, 0, 2], 40000, 80)
//!     } else {
//!         ([10, 0, 0, 2], [10, 0, 0, 1], 80, 40000)
//!     };
//!     PacketBuilder::new()
//!         .ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]))
//!         .ipv4(Ipv4::new(src, dst))
//!         .tcp(Tcp::new(sp, dp).flags(flags).seq(seq))
//!         .build()
//! };
//! let frames = [
//!     segment(true, tcp_flags::SYN, 100),
//!     segment(false, tcp_flags::SYN | tcp_flags::ACK, 500),
//!     segment(true, tcp_flags::ACK, 101),
//! ];
//! let mut table = FlowTable::new(FlowConfig::default());
//! let mut ended = Vec::new();
//! for (i, f) in frames.iter().enumerate() {
//!     let ts = Timestamp::from_micros(1_700_000_000, i as u32);
//!     let p = Packet::new(f, Meta::new(ts, f.len() as u32, LinkType::ETHERNET));
//!     table.add(&p, &mut |r| ended.push(*r));
//! }
//! table.finish(&mut |r| ended.push(*r));
//! let flow = &ended[0];
//! assert_eq!(flow.src().to_string(), "10.0.0.1:40000");
//! assert_eq!((flow.orig.packets, flow.resp.packets), (2, 1));
//! assert_eq!(flow.tcp_state(), Some(TcpState::Established));
//! assert_eq!(flow.history.as_str(), "ShA");
//! assert_eq!(flow.conn_state(), "S1");
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod defrag;
pub mod http;
mod key;
mod order;
pub mod quic;
mod scan;
pub mod stream;
mod table;

pub use defrag::{
    DefragAnomaly, DefragConfig, DefragStats, Defragged, Defragmenter, OverlapPolicy,
};
pub use http::{FieldTracker, HttpHeads};
pub use key::{Endpoint, FlowKey, KeyOptions, Side, protocol_name};
pub use quic::QuicConnections;
pub use scan::{ScanDetector, Scanner};
pub use stream::{
    StreamConfig, StreamEnd, StreamEvent, StreamEvents, StreamHandler, StreamStats, TcpStreams,
};
pub use table::{
    DirectionStats, EndReason, FlowConfig, FlowRecord, FlowStats, FlowTable, History, Placed,
    TcpState,
};
