//! Read-only file mappings that survive the file shrinking under them.
//!
//! A plain `mmap` of a file that another process truncates kills the reader with SIGBUS
//! the moment it touches a page past the new end. This module makes that case an
//! ordinary, reportable condition:
//!
//! - every mapping is registered in a small fixed table of address ranges;
//! - a process-wide SIGBUS handler (installed once, chaining to any previous handler for
//!   faults outside our ranges) replaces the faulting page of a registered mapping with
//!   an anonymous zero page and marks that mapping as damaged, so the faulting load
//!   completes instead of killing the process;
//! - readers only parse bytes of a window they have *verified*: [`GuardedMap::verify`]
//!   touches each page of the next window and then checks the damage mark; on damage it
//!   asks the kernel for the file's current size and stops the visible data there.
//!
//! What a user sees when a file shrinks while being read: every packet that lies before
//! the new end is delivered, then the reader reports that the file ends inside a record
//! and that it shrank while mapped. The check happens once per verified window (one read
//! block, 1 MiB): bytes of the current window that vanish before the check, and bytes
//! of packets already handed out, read as zeros instead of killing the process.
//!
//! Limits: a program that installs its own SIGBUS handler *after* tracekit mapped a file
//! replaces this protection. At most [`MAX_MAPPINGS`] mappings are guarded at a time;
//! beyond that [`GuardedMap::open`] returns `None` and callers fall back to `read()`.

use std::fs::File;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Number of mappings that can be guarded at the same time.
pub const MAX_MAPPINGS: usize = 256;

struct Slot {
    start: AtomicUsize,
    len: AtomicUsize,
    damaged: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: Slot = Slot {
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    damaged: AtomicBool::new(false),
};

static SLOTS: [Slot; MAX_MAPPINGS] = [EMPTY_SLOT; MAX_MAPPINGS];
static PAGE_SIZE: AtomicUsize = AtomicUsize::new(4096);
static INSTALL: Once = Once::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The SIGBUS disposition that was in place before ours, for chaining. Written once,
/// inside `INSTALL`, before our handler can run; only read afterwards.
static mut PREVIOUS: Option<libc::sigaction> = None;

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = PAGE_SIZE.load(Ordering::Relaxed);
    for slot in &SLOTS {
        let start = slot.start.load(Ordering::Acquire);
        let len = slot.len.load(Ordering::Acquire);
        if start != 0 && addr >= start && addr < start + len {
            let page_addr = addr & !(page - 1);
            // SAFETY: the page lies inside a read-only mapping we own (registered while
            // the mapping is alive); replacing it with an anonymous zero page of the same
            // protection keeps every pointer into the mapping valid. mmap is a plain
            // system call and safe to issue from a signal handler on Linux.
            let p = unsafe {
                libc::mmap(
                    page_addr as *mut libc::c_void,
                    page,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_FIXED | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p != libc::MAP_FAILED {
                slot.damaged.store(true, Ordering::Release);
                return;
            }
        }
    }
    // Not one of ours: behave as if we were not installed.
    // SAFETY: PREVIOUS was written before this handler was installed and never again.
    let previous = unsafe { *std::ptr::addr_of!(PREVIOUS) };
    match previous {
        Some(old)
            if old.sa_sigaction != libc::SIG_DFL
                && old.sa_sigaction != libc::SIG_IGN
                && old.sa_flags & libc::SA_SIGINFO != 0 =>
        {
            // SAFETY: the previous handler was registered with SA_SIGINFO, so it has this
            // signature.
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(old.sa_sigaction) };
            f(sig, info, ctx);
        }
        Some(old) if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN => {
            // SAFETY: a handler registered without SA_SIGINFO takes only the signal number.
            let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(old.sa_sigaction) };
            f(sig);
        }
        _ => {
            // Restore the default action; returning re-executes the faulting access,
            // which then terminates the process as it would have without us.
            // SAFETY: resetting a signal disposition to SIG_DFL is always valid.
            unsafe {
                libc::signal(libc::SIGBUS, libc::SIG_DFL);
            }
        }
    }
}

fn install_handler() -> bool {
    INSTALL.call_once(|| {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if page > 0 {
            PAGE_SIZE.store(page as usize, Ordering::Relaxed);
        }
        // SAFETY: a zeroed sigaction is a valid "no handler" value; we fill the fields we
        // use, and PREVIOUS is written here before our handler is active.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) != 0 {
                return;
            }
            *std::ptr::addr_of_mut!(PREVIOUS) = Some(old);
            if libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) == 0 {
                INSTALLED.store(true, Ordering::Release);
            }
        }
    });
    INSTALLED.load(Ordering::Acquire)
}

/// A read-only mapping of a whole file, guarded against the file shrinking.
///
/// One thread may extend the verified prefix ([`GuardedMap::verify`], which takes
/// `&self`) while others read the bytes verified so far, so a mapping can be shared
/// (`Arc<GuardedMap>`) between a thread that walks ahead and workers that decode what it
/// verified: the parallel gzip reader maps compressed files this way.
pub struct GuardedMap {
    map: memmap2::Mmap,
    file: File,
    slot: usize,
    /// Bytes from the start that were verified readable (touched with no fault). Only
    /// ever raised.
    verified: AtomicUsize,
    /// Current usable length: the mapping length, or the file's size once it shrank.
    /// Only ever lowered.
    usable: AtomicUsize,
    /// The mapping's length once the file was seen to shrink; 0 before (an empty file
    /// is never mapped).
    shrank_from: AtomicU64,
}

impl GuardedMap {
    /// Maps `file` (read-only). `None` when the file is empty, cannot be mapped, or no
    /// guard slot or handler is available; callers then read with `read()`.
    pub fn open(file: File) -> Option<GuardedMap> {
        let len = file.metadata().ok()?.len();
        if len == 0 || usize::try_from(len).is_err() || !install_handler() {
            return None;
        }
        // SAFETY: the mapping is read-only and private to this process. The one hazard of
        // file mappings, the file shrinking under us, is handled by the SIGBUS guard: the
        // range is registered below before any byte of it is read, and readers only look
        // at verified windows.
        let map = unsafe { memmap2::MmapOptions::new().map(&file) }.ok()?;
        let _ = map.advise(memmap2::Advice::Sequential);
        let start = map.as_ptr() as usize;
        let slot = SLOTS.iter().position(|s| {
            s.start
                .compare_exchange(0, start, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })?;
        SLOTS[slot].damaged.store(false, Ordering::Relaxed);
        SLOTS[slot].len.store(map.len(), Ordering::Release);
        let usable = AtomicUsize::new(map.len());
        Some(GuardedMap {
            map,
            file,
            slot,
            verified: AtomicUsize::new(0),
            usable,
            shrank_from: AtomicU64::new(0),
        })
    }

    /// The verified bytes, from the start of the file.
    #[inline]
    pub fn verified(&self) -> &[u8] {
        &self.map[..self.verified.load(Ordering::Acquire)]
    }

    /// Length of the mapping when it was made.
    pub fn mapped_len(&self) -> usize {
        self.map.len()
    }

    /// When the file shrank while mapped: its length when it was mapped.
    pub fn shrank_from(&self) -> Option<u64> {
        match self.shrank_from.load(Ordering::Acquire) {
            0 => None,
            n => Some(n),
        }
    }

    /// Extends the verified prefix to at least `upto` bytes (bounded by the usable
    /// length), touching each new page. Returns the verified length. Meant for one
    /// thread at a time; others may meanwhile read [`GuardedMap::verified`].
    pub fn verify(&self, upto: usize) -> usize {
        let verified = self.verified.load(Ordering::Acquire);
        let target = upto.min(self.usable());
        if target <= verified {
            return verified;
        }
        let page = PAGE_SIZE.load(Ordering::Relaxed);
        let base = self.map.as_ptr();
        let mut at = verified & !(page - 1);
        while at < target {
            // SAFETY: `at` < map length; a volatile read so the touch is not optimised
            // away. A fault here is turned into a zero page by the guard.
            unsafe {
                std::ptr::read_volatile(base.add(at));
            }
            at += page;
        }
        let usable = self.usable();
        if self.check() < usable {
            return self.verify(upto);
        }
        self.verified
            .fetch_max(target, Ordering::AcqRel)
            .max(target)
    }

    /// Counts the bytes before `offset` as verified without touching them: for an input
    /// that read them another way and goes on from there through the mapping (its
    /// positions before `offset` are never parsed through it).
    pub fn skip_to(&self, offset: usize) {
        self.verified
            .fetch_max(offset.min(self.usable()), Ordering::AcqRel);
    }

    /// Takes note of faults since the last look (a page past the file's new end, read
    /// as zeros): the file's current size then bounds the usable length. Returns the
    /// usable length. A thread that read bytes of the mapping calls this afterwards to
    /// learn whether all it read was the file's.
    pub fn check(&self) -> usize {
        if SLOTS[self.slot].damaged.swap(false, Ordering::AcqRel) {
            let now = self.file.metadata().map(|m| m.len()).unwrap_or(0);
            let now = usize::try_from(now)
                .unwrap_or(usize::MAX)
                .min(self.map.len());
            let _ = self.shrank_from.compare_exchange(
                0,
                self.map.len() as u64,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            // `verified` is never lowered: its bytes may already be lent out. Readers clamp
            // what they parse to `usable()`.
            self.usable.fetch_min(now, Ordering::AcqRel);
        }
        self.usable()
    }

    /// Bytes that are part of the file now: the mapping length, or the file's size after
    /// it shrank. May be below `verified().len()` when it shrank below bytes already read.
    pub fn usable(&self) -> usize {
        self.usable.load(Ordering::Acquire)
    }

    /// Whether everything usable was verified.
    pub fn fully_verified(&self) -> bool {
        self.verified.load(Ordering::Acquire) >= self.usable()
    }
}

/// The whole mapping, for a thread that writes bytes of it out (a writer handed
/// records of a verified window: [`crate::Input::shared_mapping`]). Bytes past the
/// verified prefix can be read too: should the file shrink under them, the guard turns
/// the vanished pages into zeros, and a `write()` from them fails in the kernel instead
/// of faulting.
impl AsRef<[u8]> for GuardedMap {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

impl Drop for GuardedMap {
    fn drop(&mut self) {
        SLOTS[self.slot].len.store(0, Ordering::Release);
        SLOTS[self.slot].start.store(0, Ordering::Release);
    }
}
