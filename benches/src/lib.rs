//! tracekit's benchmark support: a deterministic synthetic traffic generator ([`traffic`])
//! used for the sample trace shipped in the repository and for benchmark inputs, and the
//! task implementations behind the `tracekit-bench` binary (the peer-harness contract),
//! cached benchmark inputs, and libpcap's read loop for in-process peers.

#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod inputs;
#[allow(unsafe_code)]
pub mod libpcap;
pub mod tasks;
pub mod traffic;
