//! Compiling filter expressions with the system libpcap: `pcap_open_dead` +
//! `pcap_compile` (optimised, netmask unknown), through a hand-declared FFI surface. Only
//! compilation goes through C; packets are filtered by tracekit's own VM.

use std::ffi::{CStr, CString, c_char, c_int, c_void};

use tracekit_core::{Error, LinkType};

use crate::program::{Insn, Program};

#[repr(C)]
struct BpfProgram {
    bf_len: u32,
    bf_insns: *mut Insn,
}

// SAFETY: these signatures are the compile functions as declared in <pcap/pcap.h> (libpcap 1.10); the
// calls that use them state their own preconditions.
#[link(name = "pcap")]
unsafe extern "C" {
    fn pcap_open_dead(linktype: c_int, snaplen: c_int) -> *mut c_void;
    fn pcap_compile(
        p: *mut c_void,
        fp: *mut BpfProgram,
        s: *const c_char,
        optimize: c_int,
        netmask: u32,
    ) -> c_int;
    fn pcap_freecode(fp: *mut BpfProgram);
    fn pcap_geterr(p: *mut c_void) -> *mut c_char;
    fn pcap_close(p: *mut c_void);
}

const PCAP_NETMASK_UNKNOWN: u32 = 0xffff_ffff;

/// The `DLT_` value libpcap's API takes for a `LINKTYPE_` value. They are equal except for
/// a few old types below 104 whose DLT numbers differ between systems (Linux values).
fn dlt_of(link: LinkType) -> u32 {
    match link.0 {
        100 => 11, // ATM_RFC1483
        101 => 12, // RAW
        102 => 15, // SLIP_BSDOS
        103 => 16, // PPP_BSDOS
        other => other,
    }
}

/// Compiles `expr` for `link` with libpcap (thread-safe since libpcap 1.8).
pub fn compile(expr: &str, link: LinkType, snaplen: u32) -> Result<Program, Error> {
    let text = CString::new(expr)
        .map_err(|_| Error::invalid_argument("a filter expression cannot contain a NUL byte"))?;
    let snaplen = c_int::try_from(snaplen.clamp(1, 262_144)).unwrap_or(262_144);
    let linktype = c_int::try_from(dlt_of(link)).map_err(|_| {
        Error::invalid_argument(format!("link type {link} is out of libpcap's range"))
    })?;
    // SAFETY: pcap_open_dead has no preconditions; a null result is handled.
    let handle = unsafe { pcap_open_dead(linktype, snaplen) };
    if handle.is_null() {
        return Err(Error::unsupported("libpcap could not open a dead handle"));
    }
    let mut program = BpfProgram {
        bf_len: 0,
        bf_insns: std::ptr::null_mut(),
    };
    // SAFETY: handle is a live pcap_t, program is a valid out-parameter, text is
    // NUL-terminated and outlives the call.
    let rc = unsafe { pcap_compile(handle, &mut program, text.as_ptr(), 1, PCAP_NETMASK_UNKNOWN) };
    let result = if rc != 0 {
        // SAFETY: after a failed pcap_compile, pcap_geterr returns the handle's
        // NUL-terminated error buffer, valid until the handle is closed (below).
        let message = unsafe { CStr::from_ptr(pcap_geterr(handle)) }
            .to_string_lossy()
            .into_owned();
        Err(Error::invalid_argument(format!(
            "filter `{expr}` for link type {link}: {message}"
        )))
    } else {
        // SAFETY: on success bf_insns points at bf_len instructions laid out as Insn
        // (#[repr(C)], the layout of struct bpf_insn); they are copied before freeing.
        let insns =
            unsafe { std::slice::from_raw_parts(program.bf_insns, program.bf_len as usize) }
                .to_vec();
        // SAFETY: program was filled by pcap_compile and is freed once.
        unsafe { pcap_freecode(&mut program) };
        Program::new(insns)
    };
    // SAFETY: handle came from pcap_open_dead and is closed once.
    unsafe { pcap_close(handle) };
    result
}
