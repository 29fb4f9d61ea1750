//! Compiling filter expressions with the system libpcap: `pcap_open_dead` +
//! `pcap_compile` (optimised, netmask unknown). Only compilation goes through C; packets
//! are filtered by tracekit's own VM.
//!
//! libpcap is loaded at run time (`dlopen` through `libloading`) on the first compile, so
//! a tracekit binary links no libpcap and runs on a machine without it: only a filter
//! expression then fails, with a message that names the package to install.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::OnceLock;

use tracekit_core::{Error, LinkType};

use crate::chain;
use crate::program::{Insn, Program};

#[repr(C)]
struct BpfProgram {
    bf_len: u32,
    bf_insns: *mut Insn,
}

type OpenDead = unsafe extern "C" fn(c_int, c_int) -> *mut c_void;
type Compile =
    unsafe extern "C" fn(*mut c_void, *mut BpfProgram, *const c_char, c_int, u32) -> c_int;
type FreeCode = unsafe extern "C" fn(*mut BpfProgram);
type GetErr = unsafe extern "C" fn(*mut c_void) -> *mut c_char;
type Close = unsafe extern "C" fn(*mut c_void);

/// The compile functions of a loaded libpcap. The library handle is kept alive with them
/// for the life of the process.
struct Libpcap {
    _library: libloading::Library,
    open_dead: OpenDead,
    compile: Compile,
    freecode: FreeCode,
    geterr: GetErr,
    close: Close,
}

/// The environment variable that names the libpcap to load (a path or a soname) instead
/// of the usual sonames.
pub const LIBPCAP_ENV: &str = "TRACEKIT_LIBPCAP";

/// The names tried in order: Debian and Ubuntu ship `libpcap.so.0.8`, most other Linux
/// distributions `libpcap.so.1`; `libpcap.so` is the development link; then macOS and
/// the BSDs.
const SONAMES: &[&str] = &[
    "libpcap.so.0.8",
    "libpcap.so.1",
    "libpcap.so",
    "libpcap.A.dylib",
    "libpcap.dylib",
];

/// What to install when no libpcap can be loaded.
const INSTALL_HINT: &str = "install libpcap (Debian/Ubuntu: apt-get install libpcap0.8; \
Fedora/RHEL: dnf install libpcap; Alpine: apk add libpcap), or pass `tcpdump -ddd` output \
instead of an expression";

fn load() -> Result<Libpcap, String> {
    let wanted = std::env::var_os(LIBPCAP_ENV);
    let names: Vec<std::ffi::OsString> = match &wanted {
        Some(name) => vec![name.clone()],
        None => SONAMES.iter().map(Into::into).collect(),
    };
    let mut last = String::new();
    for name in &names {
        // SAFETY: loading libpcap runs its initialisers, which have no preconditions;
        // the handle is kept for the life of the process, so no symbol outlives it.
        let library = match unsafe { libloading::Library::new(name) } {
            Ok(library) => library,
            Err(e) => {
                last = e.to_string();
                continue;
            }
        };
        // SAFETY: each symbol is read with the C signature <pcap/pcap.h> declares for it
        // (libpcap 1.x, unchanged since 0.x); the function pointers are copied out and
        // stay valid because the library handle is stored beside them and never dropped.
        let symbols = unsafe {
            (|| -> Result<Libpcap, libloading::Error> {
                Ok(Libpcap {
                    open_dead: *library.get::<OpenDead>(b"pcap_open_dead\0")?,
                    compile: *library.get::<Compile>(b"pcap_compile\0")?,
                    freecode: *library.get::<FreeCode>(b"pcap_freecode\0")?,
                    geterr: *library.get::<GetErr>(b"pcap_geterr\0")?,
                    close: *library.get::<Close>(b"pcap_close\0")?,
                    _library: library,
                })
            })()
        };
        match symbols {
            Ok(lib) => return Ok(lib),
            Err(e) => last = format!("{}: {e}", name.to_string_lossy()),
        }
    }
    let tried = names
        .iter()
        .map(|n| n.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(", ");
    Err(format!(
        "filter expressions need libpcap, which could not be loaded (tried {tried}; {last}): {INSTALL_HINT}"
    ))
}

fn libpcap() -> Result<&'static Libpcap, Error> {
    static LIBPCAP: OnceLock<Result<Libpcap, String>> = OnceLock::new();
    LIBPCAP
        .get_or_init(load)
        .as_ref()
        .map_err(|message| Error::unsupported(message.clone()))
}

/// Whether a libpcap can be loaded on this machine (filter expressions then compile).
pub fn available() -> bool {
    libpcap().is_ok()
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

/// Compiles `expr` for `link` with libpcap (thread-safe since libpcap 1.8): a long chain
/// of one connective piece by piece (see [`crate::chain`]), anything else whole.
pub fn compile(expr: &str, link: LinkType, snaplen: u32) -> Result<Program, Error> {
    if let Some((connective, pieces)) = chain::pieces(expr) {
        // A piece that fails (say, one that rejects every packet, which libpcap refuses
        // alone) sends the expression to libpcap whole, to be judged as a whole.
        let programs: Option<Vec<Vec<Insn>>> = pieces
            .iter()
            .map(|piece| compile_insns(piece, link, snaplen).ok())
            .collect();
        if let Some(insns) = programs.and_then(|p| chain::join(connective, p)) {
            return Program::new(insns);
        }
    }
    Program::new(compile_insns(expr, link, snaplen)?)
}

/// The instructions libpcap compiles (and optimises) `expr` into.
fn compile_insns(expr: &str, link: LinkType, snaplen: u32) -> Result<Vec<Insn>, Error> {
    let text = CString::new(expr)
        .map_err(|_| Error::invalid_argument("a filter expression cannot contain a NUL byte"))?;
    let pcap = libpcap()?;
    let max = tracekit_core::MAX_SNAPLEN;
    let snaplen = c_int::try_from(snaplen.clamp(1, max)).unwrap_or(max as c_int);
    let linktype = c_int::try_from(dlt_of(link)).map_err(|_| {
        Error::invalid_argument(format!("link type {link} is out of libpcap's range"))
    })?;
    // SAFETY: pcap_open_dead has no preconditions; a null result is handled.
    let handle = unsafe { (pcap.open_dead)(linktype, snaplen) };
    if handle.is_null() {
        return Err(Error::unsupported("libpcap could not open a dead handle"));
    }
    let mut program = BpfProgram {
        bf_len: 0,
        bf_insns: std::ptr::null_mut(),
    };
    // SAFETY: handle is a live pcap_t, program is a valid out-parameter, text is
    // NUL-terminated and outlives the call.
    let rc =
        unsafe { (pcap.compile)(handle, &mut program, text.as_ptr(), 1, PCAP_NETMASK_UNKNOWN) };
    let result = if rc != 0 {
        // SAFETY: after a failed pcap_compile, pcap_geterr returns the handle's
        // NUL-terminated error buffer, valid until the handle is closed (below).
        let message = unsafe { CStr::from_ptr((pcap.geterr)(handle)) }
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
        unsafe { (pcap.freecode)(&mut program) };
        Ok(insns)
    };
    // SAFETY: handle came from pcap_open_dead and is closed once.
    unsafe { (pcap.close)(handle) };
    result
}
