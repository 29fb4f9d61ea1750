//! The libpcap read loop (`pcap_open_offline` + `pcap_next_ex`) for the in-process peer
//! implementations of the criterion benchmarks.

use std::ffi::{CString, c_char, c_int, c_void};

#[repr(C)]
struct PcapPkthdr {
    ts_sec: i64,
    ts_usec: i64,
    caplen: u32,
    len: u32,
}

// SAFETY: these signatures are pcap_open_offline, pcap_next_ex and pcap_close as declared in <pcap/pcap.h> (libpcap 1.10); the
// calls that use them state their own preconditions.
#[link(name = "pcap")]
unsafe extern "C" {
    fn pcap_open_offline(fname: *const c_char, errbuf: *mut c_char) -> *mut c_void;
    fn pcap_next_ex(p: *mut c_void, hdr: *mut *mut PcapPkthdr, data: *mut *const u8) -> c_int;
    fn pcap_close(p: *mut c_void);
}

/// Reads `path` with libpcap, handing each packet's captured bytes to `f`.
///
/// # Panics
/// When libpcap cannot open the file.
pub fn for_each_packet(path: &str, mut f: impl FnMut(&[u8])) {
    let name = CString::new(path).expect("path without NUL");
    let mut errbuf = [0 as c_char; 256];
    // SAFETY: name is NUL-terminated; errbuf has PCAP_ERRBUF_SIZE (256) bytes.
    let p = unsafe { pcap_open_offline(name.as_ptr(), errbuf.as_mut_ptr()) };
    assert!(!p.is_null(), "libpcap could not open {path}");
    loop {
        let mut hdr: *mut PcapPkthdr = std::ptr::null_mut();
        let mut data: *const u8 = std::ptr::null();
        // SAFETY: p is an open handle; hdr and data are out-pointers libpcap fills.
        let rc = unsafe { pcap_next_ex(p, &mut hdr, &mut data) };
        if rc != 1 {
            break;
        }
        // SAFETY: on rc == 1, hdr and data stay valid until the next call, and data holds
        // caplen bytes.
        let bytes = unsafe { std::slice::from_raw_parts(data, (*hdr).caplen as usize) };
        f(bytes);
    }
    // SAFETY: p came from pcap_open_offline and is closed once.
    unsafe { pcap_close(p) };
}

/// Task T1 through libpcap: packets and captured bytes.
pub fn count(path: &str) -> (u64, u64) {
    let (mut packets, mut bytes) = (0u64, 0u64);
    for_each_packet(path, |b| {
        packets += 1;
        bytes += b.len() as u64;
    });
    (packets, bytes)
}
