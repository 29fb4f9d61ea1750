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
//!   controls are in `emulator`;
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

#![deny(missing_docs)]

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
pub mod emulator {
    #[allow(missing_docs, clippy::all)]
    mod raw {
        include!("emulator_bindings.rs");
    }
    pub use raw::*;

    use std::ffi::CString;

    /// Sets `DAGEMU_*` option `name` for the card at `device` (taking precedence over
    /// the environment at its next `dag_open`); `None` removes it. `false` if a string
    /// holds a NUL byte or the option table is full.
    pub fn set_option(device: &str, name: &str, value: Option<&str>) -> bool {
        let (Ok(d), Ok(n)) = (CString::new(device), CString::new(name)) else {
            return false;
        };
        let v = match value.map(CString::new) {
            Some(Ok(v)) => Some(v),
            Some(Err(_)) => return false,
            None => None,
        };
        let vp = v.as_ref().map_or(std::ptr::null(), |v| v.as_ptr());
        // SAFETY: `d` and `n` are NUL-terminated and outlive the call; `vp` is NULL or
        // points into `v`, which outlives the call; the card copies the strings.
        unsafe { raw::dagemu_set_option(d.as_ptr(), n.as_ptr(), vp) == 0 }
    }

    /// Records the card dropped on receive stream `stream` of the card open as `fd`
    /// (0 for anything that is not an open software card).
    pub fn stream_drops(fd: i32, stream: u32) -> u64 {
        // SAFETY: the call takes plain integers and checks them.
        unsafe { raw::dagemu_stream_drops(fd, stream as i32) }
    }

    /// Records the card open as `fd` received from its input so far.
    pub fn records_received(fd: i32) -> u64 {
        // SAFETY: the call takes plain integers and checks them.
        unsafe { raw::dagemu_records_received(fd) }
    }
}
