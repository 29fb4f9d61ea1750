//! tracekit's benchmark support: a deterministic synthetic traffic generator ([`traffic`])
//! used for the sample trace shipped in the repository and for benchmark inputs, and the
//! task implementations behind the `tracekit-bench` binary (the peer-harness contract).

#![forbid(unsafe_code)]

pub mod tasks;
pub mod traffic;
