//! The software card against the API's documented behaviour, through the raw bindings:
//! every record of a corpus ERF file comes out whole and byte for byte (with a ring
//! small enough that records straddle the end of its first mapping), and misuse fails
//! with the errno the API documents.

#![cfg(feature = "dag-emulator")]

use std::ffi::CString;
use std::ptr;

use dag_sys::*;

fn set(dev: &str, name: &str, value: &str) {
    let (d, n, v) = (c(dev), c(name), c(value));
    // SAFETY: three NUL-terminated strings that outlive the call.
    assert_eq!(
        unsafe { emulator::dagemu_set_option(d.as_ptr(), n.as_ptr(), v.as_ptr()) },
        0
    );
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn open(dev: &str) -> i32 {
    let d = c(dev);
    // SAFETY: `d` is NUL-terminated and outlives the call.
    unsafe { dag_open(d.as_ptr().cast_mut()) }
}

/// The records of an ERF file, one slice each.
fn records(file: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 16 <= file.len() {
        let rlen = usize::from(u16::from_be_bytes([file[at + 10], file[at + 11]]));
        out.push(&file[at..at + rlen]);
        at += rlen;
    }
    out
}

#[test]
fn records_come_out_whole_and_byte_exact_across_the_ring_end() {
    let path = tracekit_testdata::corpus("libtrace__100_packets.erf");
    let file = std::fs::read(&path).unwrap();
    let expected = records(&file);
    let dev = "/dev/dag10";
    set(dev, "DAGEMU_INPUT", path.to_str().unwrap());
    set(dev, "DAGEMU_BUFFER", "4096");
    set(dev, "DAGEMU_END", "1");
    let fd = open(dev);
    assert!(fd >= 0, "dag_open: errno {}", errno());
    // SAFETY (this block and the reads below): `fd` is an open card; stream 0 is
    // attached and started before it is advanced; `bottom` starts NULL as the API asks,
    // and bytes are read only between `bottom` and the `top` the card returned.
    unsafe {
        assert_eq!(dag_get_stream_buffer_size64(fd, 0), 4096);
        assert_eq!(dag_attach_stream64(fd, 0, 0, 0), 0);
        let mut wait = libc::timeval {
            tv_sec: 0,
            tv_usec: 100_000,
        };
        let mut poll = libc::timeval {
            tv_sec: 0,
            tv_usec: 1_000,
        };
        assert_eq!(dag_set_stream_poll64(fd, 0, 16, &mut wait, &mut poll), 0);
        assert_eq!(dag_start_stream(fd, 0), 0);
        let mut bottom: *mut u8 = ptr::null_mut();
        let mut got = Vec::new();
        let mut straddled = 0;
        let mut base: *mut u8 = ptr::null_mut();
        loop {
            let top = dag_advance_stream(fd, 0, &mut bottom);
            if top.is_null() {
                assert_eq!(
                    errno(),
                    libc::ENODATA,
                    "the end of the input (DAGEMU_END=1)"
                );
                break;
            }
            if base.is_null() {
                base = bottom;
            }
            while (top as usize) - (bottom as usize) >= 16 {
                let rlen = usize::from(u16::from_be_bytes([*bottom.add(10), *bottom.add(11)]));
                assert!(
                    rlen >= 16 && rlen <= top as usize - bottom as usize,
                    "a torn record"
                );
                if bottom < base.add(4096) && bottom.add(rlen) > base.add(4096) {
                    straddled += 1;
                }
                got.push(std::slice::from_raw_parts(bottom, rlen).to_vec());
                bottom = bottom.add(rlen);
            }
        }
        assert_eq!(got.len(), expected.len());
        for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
            assert_eq!(g.as_slice(), *e, "record {i}");
        }
        assert!(
            straddled > 0,
            "no record straddled the end of the first mapping"
        );
        assert_eq!(emulator::dagemu_stream_drops(fd, 0), 0);
        assert_eq!(dag_stop_stream(fd, 0), 0);
        assert_eq!(dag_detach_stream(fd, 0), 0);
        assert_eq!(dag_close(fd), 0);
    }
}

#[test]
fn misuse_fails_with_the_documented_errno() {
    assert_eq!(open("/dev/nodag"), -1);
    assert_eq!(errno(), libc::ENOENT);
    let dev = "/dev/dag11";
    set(dev, "DAGEMU_RX_STREAMS", "2");
    let fd = open(dev);
    assert!(fd >= 0);
    assert_eq!(open(dev), -1, "a second open of the same card");
    assert_eq!(errno(), libc::EBUSY);
    // SAFETY: `fd` is an open card; every pointer passed is valid or NULL where allowed.
    unsafe {
        assert_eq!(dag_rx_get_stream_count(fd), 2);
        assert_eq!(dag_start_stream(fd, 0), -1, "start before attach");
        assert_eq!(errno(), libc::EINVAL);
        assert_eq!(
            dag_attach_stream64(fd, 4, 0, 0),
            -1,
            "no stream 4 with 2 receive streams"
        );
        assert_eq!(errno(), libc::EINVAL);
        assert_eq!(dag_attach_stream64(fd, 2, 0, 0), 0);
        assert_eq!(dag_attach_stream64(fd, 2, 0, 0), -1, "double attach");
        assert_eq!(errno(), libc::EBUSY);
        assert_eq!(dag_start_stream(fd, 2), 0);
        assert_eq!(dag_detach_stream(fd, 2), -1, "detach while started");
        assert_eq!(errno(), libc::EBUSY);
        let mut bottom: *mut u8 = ptr::null_mut();
        assert_eq!(dag_attach_stream64(fd, 1, 0, 1 << 20), 0);
        assert!(
            dag_advance_stream(fd, 1, &mut bottom).is_null(),
            "advance on a transmit stream"
        );
        assert_eq!(errno(), libc::EINVAL);
        // A bottom outside the window is refused.
        let top = dag_advance_stream(fd, 2, &mut bottom);
        assert!(!top.is_null());
        let mut wrong = top.add(8);
        assert!(dag_advance_stream(fd, 2, &mut wrong).is_null());
        assert_eq!(errno(), libc::EINVAL);
        assert_eq!(dag_stop_stream(fd, 2), 0);
        assert_eq!(dag_detach_stream(fd, 2), 0);
        assert_eq!(dag_close(fd), 0);
    }
    let again = open(dev);
    assert!(again >= 0, "closed cards can be opened again");
    // SAFETY: `again` is an open card.
    assert_eq!(unsafe { dag_close(again) }, 0);
}
