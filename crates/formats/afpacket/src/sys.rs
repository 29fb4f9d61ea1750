//! The system calls behind AF_PACKET capture, each wrapped once with its safety argument.
//! Everything above this module is safe code.

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// `TPACKET_V3`.
pub const TPACKET_V3: libc::c_int = 2;

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// An AF_PACKET raw socket that receives nothing until bound with a protocol.
pub fn packet_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain system call with constant arguments; on success the returned
    // descriptor is new and owned by nobody else.
    let fd =
        check(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `fd` was just returned by socket() and is not owned elsewhere.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The index of interface `name`.
pub fn if_index(name: &str) -> io::Result<i32> {
    let c = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(i as i32)
    }
}

/// The ARPHRD hardware type of interface `name`, as seen from `fd`'s network namespace
/// (sysfs may show another one).
pub fn hardware_type(fd: &OwnedFd, name: &str) -> io::Result<u16> {
    // SAFETY: ifreq is plain old data; all-zero is valid.
    let mut req: libc::ifreq = unsafe { zeroed() };
    let bytes = name.as_bytes();
    if bytes.len() >= req.ifr_name.len() || bytes.contains(&0) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    for (d, s) in req.ifr_name.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    // SAFETY: `req` is a valid ifreq with a NUL-terminated name; SIOCGIFHWADDR writes
    // only into it.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFHWADDR, &raw mut req) })?;
    // SAFETY: SIOCGIFHWADDR fills the `ifru_hwaddr` member of the union.
    Ok(unsafe { req.ifr_ifru.ifru_hwaddr.sa_family })
}

/// Binds `fd` to interface `ifindex` for `protocol` (host order; 0 receives nothing).
pub fn bind(fd: &OwnedFd, ifindex: i32, protocol: u16) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = protocol.to_be();
    sll.sll_ifindex = ifindex;
    // SAFETY: the pointer and length describe `sll`, alive for the call.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&raw const sll).cast(),
            size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// `setsockopt(level, name)` with a plain-data value.
pub fn set_option<T: Copy>(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: the pointer and length describe `value`, a plain `Copy` value alive for the
    // call; the kernel only reads it.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// `getsockopt(level, name)` into a plain-data value; returns the value and the length
/// the kernel wrote.
pub fn get_option<T: Copy>(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
) -> io::Result<(T, usize)> {
    // SAFETY: only instantiated with libc's plain C structs and integers, for which the
    // all-zero pattern is valid.
    let mut value: T = unsafe { zeroed() };
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: the pointer and length describe `value`, writable and alive for the call;
    // the kernel writes at most `len` bytes.
    check(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&raw mut value).cast(),
            &raw mut len,
        )
    })?;
    Ok((value, len as usize))
}

/// Attaches a classic BPF program (`SO_ATTACH_FILTER`, or `PACKET_FANOUT_DATA` with
/// `fanout_data`).
pub fn attach_filter(
    fd: &OwnedFd,
    insns: &[libc::sock_filter],
    fanout_data: bool,
) -> io::Result<()> {
    let prog = libc::sock_fprog {
        len: insns.len() as u16,
        filter: insns.as_ptr().cast_mut(),
    };
    let (level, name) = if fanout_data {
        (libc::SOL_PACKET, libc::PACKET_FANOUT_DATA)
    } else {
        (libc::SOL_SOCKET, libc::SO_ATTACH_FILTER)
    };
    // The kernel copies the instructions during the call; `insns` outlives it.
    set_option(fd, level, name, &prog)
}

/// A shared mapping of a packet ring; unmapped on drop.
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory shared with the kernel; `Mapping` owns it
// exclusively (one reader per ring) and moving it to another thread is sound.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd`'s ring.
    pub fn ring(fd: &OwnedFd, len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh shared mapping of the socket's ring at offset 0; the kernel
        // checks that `len` equals the ring size.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        Ok(Mapping { ptr, len })
    }

    /// The status word of the block at `offset` (the `block_status` of its
    /// `tpacket_hdr_v1`, 8 bytes in), shared with the kernel.
    pub fn block_status(&self, offset: usize) -> &AtomicU32 {
        assert!(offset + 12 <= self.len && offset.is_multiple_of(8));
        // SAFETY: the address is inside the mapping (checked), 4-byte aligned (block
        // offsets are page multiples), and the word is only ever accessed atomically by
        // this process and by the kernel; it lives as long as `self`.
        unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().add(offset + 8).cast::<u32>()) }
    }

    /// Bytes `offset .. offset + len` of the mapping, to read.
    ///
    /// # Safety
    ///
    /// The range must lie in a block this process owns (its status was seen as
    /// `TP_STATUS_USER` with acquire ordering), the block must not be handed back while
    /// the slice lives, and the range must not cover the block's status word.
    pub unsafe fn user_block(&self, offset: usize, len: usize) -> &[u8] {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len));
        // SAFETY: inside the mapping (checked); by the caller's contract the kernel does
        // not write these bytes while the slice lives, and no `&mut` slice exists (those
        // need `&mut self`).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(offset), len) }
    }

    /// The same, to modify (VLAN tag re-insertion, marks in packet headers).
    ///
    /// # Safety
    ///
    /// As for [`Mapping::user_block`].
    pub unsafe fn user_block_mut(&mut self, offset: usize, len: usize) -> &mut [u8] {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len));
        // SAFETY: as above; `&mut self` makes this the only slice into the mapping.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(offset), len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned, and no slice into the
        // mapping outlives `self` (they all borrow it).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// Waits until `fd` is readable or `timeout_ms` passes (−1: forever). `Ok(false)` on
/// timeout or interruption; an error when the interface went down.
pub fn poll_in(fd: &OwnedFd, timeout_ms: i32) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN | libc::POLLERR,
        revents: 0,
    };
    // SAFETY: one valid pollfd, alive for the call.
    let n = unsafe { libc::poll(&raw mut p, 1, timeout_ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    if p.revents & libc::POLLERR != 0 {
        let (err, _) = get_option::<libc::c_int>(fd, libc::SOL_SOCKET, libc::SO_ERROR)?;
        if err != 0 {
            return Err(io::Error::from_raw_os_error(err));
        }
    }
    Ok(n > 0)
}

/// Sends one frame on a bound packet socket.
pub fn send(fd: &OwnedFd, frame: &[u8]) -> io::Result<usize> {
    // SAFETY: the pointer and length describe `frame`, alive for the call.
    let n = unsafe { libc::send(fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Moves the calling thread into the network namespace open as `ns`.
pub fn set_netns(ns: RawFd) -> io::Result<()> {
    // SAFETY: plain system call; it changes only the calling thread's namespace.
    check(unsafe { libc::setns(ns, libc::CLONE_NEWNET) })?;
    Ok(())
}

/// (major, minor) of the running kernel.
pub fn kernel_version() -> (u32, u32) {
    // SAFETY: utsname is plain old data; uname fills it.
    let mut u: libc::utsname = unsafe { zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&raw mut u) } != 0 {
        return (0, 0);
    }
    let release: String = u
        .release
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8 as char)
        .collect();
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor)
}

/// Release ordering for handing a block back: every read of the block happens before
/// the kernel sees it as its own again.
pub const RELEASE: Ordering = Ordering::Release;
/// Acquire ordering for taking a block: the kernel's writes to it are visible.
pub const ACQUIRE: Ordering = Ordering::Acquire;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_structs_have_the_kernel_sizes() {
        // A V3 ring set up with the V1 request struct is the classic bug (rscap #9).
        assert_eq!(size_of::<libc::tpacket_req3>(), 28);
        assert_eq!(size_of::<libc::tpacket_req>(), 16);
        assert_eq!(size_of::<libc::tpacket3_hdr>(), 48);
        assert_eq!(size_of::<libc::tpacket_block_desc>(), 48);
        assert_eq!(size_of::<libc::tpacket_stats_v3>(), 12);
        assert_eq!(size_of::<libc::fanout_args>(), 8);
        assert_eq!(size_of::<libc::sockaddr_ll>(), 20);
        assert!(kernel_version().0 >= 3);
    }
}
