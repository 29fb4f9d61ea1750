//! Raw bindings to the Endace DAG API, for `tracekit-dag`.
//!
//! The declarations come from tracekit's own header, `include/dagapi_min.h`, written from
//! the API's documented signatures (the vendor's `dagapi.h` may not be copied). The Rust
//! side is bindgen's output, committed as `src/bindings.rs`; `regen.sh` regenerates it
//! and `regen.sh --check` (run by CI) proves the committed file is bindgen's output, so
//! a normal build needs neither libclang nor the vendor SDK.
//!
//! Who provides the functions is chosen by feature:
//! - `libdag`: the vendor's libdag (`$DAG_ROOT/lib`, default `/usr/local/lib`), for real
//!   cards;
//! - `dag-emulator`: tracekit's software card (`emulator/dagemu.c`, built with `cc`),
//!   which behaves as the API documents, for tests on machines without a card; its test
//!   controls are in [`emulator`];
//! - neither: the declarations only (a crate that calls them does not link).
//!
//! Everything here is `unsafe` FFI; `tracekit-dag` wraps it in a safe capture API.
//!
//! ```no_run
//! # #[cfg(feature = "dag-emulator")]
//! # fn main() {
//! use std::ffi::CString;
//!
//! let dev = CString::new("/dev/dag0").unwrap();
//! // SAFETY: `dev` is a NUL-terminated string that outlives the call.
//! let fd = unsafe { dag_sys::dag_open(dev.as_ptr().cast_mut()) };
//! assert!(fd >= 0, "no card");
//! // SAFETY: `fd` was returned by dag_open and is closed once.
//! let streams = unsafe { dag_sys::dag_rx_get_stream_count(fd) };
//! println!("{streams} receive streams");
//! unsafe { dag_sys::dag_close(fd) };
//! # }
//! # #[cfg(not(feature = "dag-emulator"))]
//! # fn main() {}
//! ```

#[allow(
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    missing_docs,
    clippy::all,
    unsafe_op_in_unsafe_fn
)]
mod bindings {
    include!("bindings.rs");
}

pub use bindings::*;

/// Test controls of the software card (feature `dag-emulator`): per-device settings
/// (`DAGEMU_*`, see `emulator/dagemu.h`) and its own counters.
#[cfg(feature = "dag-emulator")]
#[allow(missing_docs, clippy::all)]
pub mod emulator {
    include!("emulator_bindings.rs");
}
