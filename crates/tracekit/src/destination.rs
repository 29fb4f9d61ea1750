//! Where output bytes go, safely: never onto an input, through a temporary file renamed
//! into place when complete, with a count of the bytes the destination accepted so that
//! a failed write can say exactly which packets the file holds.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tracekit_core::Error;

use crate::format::Format;

/// The identity of a file: its device and inode. Two names with the same identity are
/// the same file, whatever the path says (hard links, symbolic links, `/dev/fd/N`,
/// `/dev/stdin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// The file `path` names, following symbolic links; `None` when it does not exist.
    pub fn of_path(path: impl AsRef<Path>) -> Option<FileId> {
        let meta = fs::metadata(path).ok()?;
        Some(FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }

    /// The file a trace URI reads or writes: `-` is standard input (`stdin`) or output,
    /// `pcap:x` is `x`; live interfaces have none.
    pub fn of_uri(uri: &str, stdin: bool) -> Option<FileId> {
        match uri_path(uri)? {
            "-" if stdin => FileId::of_path("/dev/stdin"),
            "-" => FileId::of_path("/dev/stdout"),
            path => FileId::of_path(path),
        }
    }
}

/// The path in a trace URI (`pcap:x.pcap` → `x.pcap`); `None` for live interfaces.
fn uri_path(uri: &str) -> Option<&str> {
    if let Some((scheme, rest)) = uri.split_once(':')
        && !rest.is_empty()
    {
        let scheme = scheme.to_ascii_lowercase();
        if matches!(
            scheme.as_str(),
            "afpacket" | "ring" | "int" | "pcapint" | "dag"
        ) {
            return None;
        }
        if scheme == "file" || Format::from_name(&scheme).is_some() {
            return Some(rest);
        }
    }
    Some(uri)
}

/// The files a program reads, so that no output is written onto one of them.
///
/// ```no_run
/// use tracekit::{CreateOptions, InputFiles};
///
/// let inputs = InputFiles::new(["in.pcap"]);
/// // Refused before anything is written when out.pcap is in.pcap under another name.
/// let sink = tracekit::create_checked("out.pcap", &CreateOptions::default(), &inputs)?;
/// # Ok::<(), tracekit::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct InputFiles {
    files: Vec<(String, FileId)>,
}

impl InputFiles {
    /// The files behind these input URIs (`-`: whatever standard input is).
    pub fn new<S: AsRef<str>>(uris: impl IntoIterator<Item = S>) -> InputFiles {
        let mut inputs = InputFiles::default();
        for uri in uris {
            inputs.add(uri.as_ref());
        }
        inputs
    }

    /// Adds the file behind an input URI.
    pub fn add(&mut self, uri: &str) {
        if let Some(id) = FileId::of_uri(uri, true) {
            self.files.push((uri.to_string(), id));
        }
    }

    /// An error naming the input when writing `output` would write onto it.
    pub fn check_output(&self, output: &str) -> Result<(), Error> {
        let Some(id) = FileId::of_uri(output, false) else {
            return Ok(());
        };
        match self.files.iter().find(|(_, input)| *input == id) {
            Some((input, _)) => Err(Error::invalid_argument(format!(
                "the output {output} is the input {input} (the same file): refusing to overwrite it"
            ))),
            None => Ok(()),
        }
    }
}

/// What an output holds after a failed write (see [`crate::Sink::salvage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// The file is a complete trace of the first `n` packets: it was cut after the last
    /// whole packet that reached it (and renamed into place).
    Whole(u64),
    /// Nothing was kept: no whole packet reached the file, or it was compressed and its
    /// stream cannot be completed; the temporary file was removed and any earlier file
    /// of that name is untouched.
    Nothing,
    /// A stream or device (standard output, a pipe, `/dev/...`) received the first
    /// `packets` whole packets, then part of the next one when `partial`.
    Sent {
        /// Whole packets received.
        packets: u64,
        /// Whether part of one more packet followed them.
        partial: bool,
    },
    /// A compressed stream: how much of it can be read back is not known.
    Unknown,
}

impl Kept {
    /// Whole packets the output holds, when known.
    pub fn packets(self) -> Option<u64> {
        match self {
            Kept::Whole(n) | Kept::Sent { packets: n, .. } => Some(n),
            Kept::Nothing => Some(0),
            Kept::Unknown => None,
        }
    }
}

impl fmt::Display for Kept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Kept::Whole(1) => f.write_str("is a complete file holding the first packet"),
            Kept::Whole(n) => write!(f, "is a complete file holding the first {n} packets"),
            Kept::Nothing => f.write_str("was not written (no whole packet could be stored)"),
            Kept::Sent {
                packets: 0,
                partial: false,
            } => f.write_str("received no packet"),
            Kept::Sent {
                packets,
                partial: false,
            } => write!(f, "received the first {packets} packets"),
            Kept::Sent {
                packets,
                partial: true,
            } => write!(
                f,
                "received the first {packets} whole packets, then part of the next one"
            ),
            Kept::Unknown => f.write_str("is an incomplete compressed stream"),
        }
    }
}

/// A failed output: the error and what the output holds.
#[derive(Debug)]
pub struct WriteFailure {
    /// Why writing stopped.
    pub error: Error,
    /// What the output holds.
    pub kept: Kept,
}

impl fmt::Display for WriteFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.error)
    }
}

impl std::error::Error for WriteFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// A writer that counts the bytes its destination accepted.
pub(crate) struct Counted<W> {
    inner: W,
    accepted: Arc<AtomicU64>,
}

impl<W: Write> Write for Counted<W> {
    #[inline]
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(data)?;
        self.accepted.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Buffers queued for [`Background`]'s thread at most: with the writer's 256 KiB
/// buffers, about 1 MiB in flight.
const QUEUED: usize = 4;

/// Bytes a reader shares with the writer thread: a window's buffer
/// ([`tracekit_io::Input::take_retired`]) or a file's mapping
/// ([`tracekit_io::Input::shared_mapping`]).
pub(crate) type SharedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

enum Job {
    Data(Vec<u8>),
    /// Bytes of a buffer shared with a reader (a window of its input, or its file's
    /// mapping), written from there without a copy; a window's buffer goes back to the
    /// reader when dropped.
    Shared(SharedBytes, std::ops::Range<usize>),
    Flush(std::sync::mpsc::SyncSender<io::Result<()>>),
    /// Acknowledges that every job before it is done.
    Sync(std::sync::mpsc::SyncSender<()>),
    /// The last job: an exchange may outlive the `Background` that made it.
    End,
}

/// Writes on a thread of its own, so that the destination's write calls (copying into
/// the page cache, or waiting for a disk or pipe) overlap with the work that fills the
/// next buffer, as libtrace's writers do. `write` copies the bytes into a recycled
/// buffer and queues it; a file writer's full buffers are queued whole instead, through
/// [`Background::exchange`]. A failure shows at the next `write`, exchange or `flush`,
/// and nothing is written after it, so the destination's accepted count (kept by the
/// [`Counted`] writer on the thread) still says exactly what reached it. Dropping waits
/// for the queue.
pub(crate) struct Background {
    jobs: Option<std::sync::mpsc::SyncSender<Job>>,
    spare: crossbeam_channel::Receiver<Vec<u8>>,
    failed: Failed,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The destination, written by the thread, or by the caller itself once the queue
    /// is empty ([`Background::write_direct`]).
    inner: Arc<std::sync::Mutex<Box<dyn Write + Send>>>,
    /// Jobs queued and not yet done.
    pending: Arc<AtomicU64>,
    /// Set at the first failure: nothing is written after it.
    broken: Arc<std::sync::atomic::AtomicBool>,
}

/// The failure the writer thread met, until reported.
type Failed = Arc<std::sync::Mutex<Option<io::Error>>>;

/// The failure in `failed`, once.
fn take_failure(failed: &Failed) -> io::Result<()> {
    match failed.lock().ok().and_then(|mut f| f.take()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn thread_gone() -> io::Error {
    io::Error::other("the output's writer thread ended")
}

/// Queues `job` for the writer thread, counting it in `pending` until done.
fn queue(
    jobs: Option<&std::sync::mpsc::SyncSender<Job>>,
    pending: &AtomicU64,
    job: Job,
) -> io::Result<()> {
    let jobs = jobs.ok_or_else(thread_gone)?;
    pending.fetch_add(1, Ordering::AcqRel);
    jobs.send(job).map_err(|_| {
        pending.fetch_sub(1, Ordering::AcqRel);
        thread_gone()
    })
}

impl Background {
    pub(crate) fn new(inner: Box<dyn Write + Send>) -> io::Result<Background> {
        let (jobs, rx) = std::sync::mpsc::sync_channel::<Job>(QUEUED);
        // Room for every buffer in flight: the queue's, the thread's and the writer's.
        let (spare_tx, spare) = crossbeam_channel::bounded::<Vec<u8>>(QUEUED + 2);
        let failed = Arc::new(std::sync::Mutex::new(None::<io::Error>));
        let inner = Arc::new(std::sync::Mutex::new(inner));
        let pending = Arc::new(AtomicU64::new(0));
        let broken = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (failure, out, done, stop) = (
            Arc::clone(&failed),
            Arc::clone(&inner),
            Arc::clone(&pending),
            Arc::clone(&broken),
        );
        let thread = std::thread::Builder::new()
            .name("tracekit-write".into())
            .spawn(move || {
                let write = |bytes: &[u8]| {
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    let result = match out.lock() {
                        Ok(mut w) => w.write_all(bytes),
                        Err(_) => Err(thread_gone()),
                    };
                    if let Err(e) = result {
                        stop.store(true, Ordering::Release);
                        if let Ok(mut f) = failure.lock() {
                            *f = Some(e);
                        }
                    }
                };
                for job in rx {
                    match job {
                        Job::Data(buf) => {
                            write(&buf);
                            let _ = spare_tx.try_send(buf);
                        }
                        Job::Shared(buf, range) => write(&(*buf).as_ref()[range]),
                        Job::End => break,
                        Job::Sync(ack) => {
                            let _ = ack.send(());
                        }
                        Job::Flush(ack) => {
                            let result = if stop.load(Ordering::Acquire) {
                                Err(io::Error::other("an earlier write to the output failed"))
                            } else {
                                match out.lock() {
                                    Ok(mut w) => w.flush(),
                                    Err(_) => Err(thread_gone()),
                                }
                            };
                            let _ = ack.send(result);
                        }
                    }
                    done.fetch_sub(1, Ordering::Release);
                }
                if let Ok(mut w) = out.lock() {
                    let _ = w.flush();
                }
            })?;
        Ok(Background {
            jobs: Some(jobs),
            spare,
            failed,
            thread: Some(thread),
            inner,
            pending,
            broken,
        })
    }

    /// Writes `data` on the calling thread, after every job queued before (waiting for
    /// the queue to empty when it is not): for bytes that would otherwise have to be
    /// copied or handed over to be written, when the write call itself is cheap beside
    /// the hand-over (see `copy_verbatim`). A failure is reported here, and nothing is
    /// written after it.
    pub(crate) fn write_direct(&self, data: &[u8]) -> io::Result<()> {
        self.failure()?;
        if self.pending.load(Ordering::Acquire) != 0 {
            let (ack, done) = std::sync::mpsc::sync_channel(1);
            self.send(Job::Sync(ack))?;
            done.recv().map_err(|_| thread_gone())?;
            self.failure()?;
        }
        if self.broken.load(Ordering::Acquire) {
            return Err(io::Error::other("an earlier write to the output failed"));
        }
        let mut out = self.inner.lock().map_err(|_| thread_gone())?;
        out.write_all(data).inspect_err(|_| {
            self.broken.store(true, Ordering::Release);
        })
    }

    /// The failure the thread met, once.
    fn failure(&self) -> io::Result<()> {
        take_failure(&self.failed)
    }

    fn send(&self, job: Job) -> io::Result<()> {
        queue(self.jobs.as_ref(), &self.pending, job)
    }

    /// Queues a writer's full buffers whole, behind every write before, and hands back
    /// recycled ones: no copy (see [`tracekit_io::RecordBuffer::hand_buffers_to`]). With
    /// a copy per 256 KiB buffer, `tracekit convert` of 96-byte records to /dev/null spent
    /// 6.6 % of its samples copying.
    pub(crate) fn exchange(&self) -> tracekit_io::BufferExchange {
        let jobs = self.jobs.clone();
        let spare = self.spare.clone();
        let failed = Arc::clone(&self.failed);
        let pending = Arc::clone(&self.pending);
        Box::new(move |full: Vec<u8>| {
            take_failure(&failed)?;
            queue(jobs.as_ref(), &pending, Job::Data(full))?;
            Ok(spare.try_recv().unwrap_or_default())
        })
    }
}

impl Background {
    /// Queues `buf[range]` behind every write before, to be written from `buf` itself:
    /// for bytes a reader holds in a buffer it shares (a pcap file's records copied as
    /// they are), which then need no copy on this side at all.
    pub(crate) fn queue_shared(
        &self,
        buf: SharedBytes,
        range: std::ops::Range<usize>,
    ) -> io::Result<()> {
        self.failure()?;
        if (*buf).as_ref().get(range.clone()).is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "bytes to write lie outside their buffer",
            ));
        }
        self.send(Job::Shared(buf, range))
    }
}

impl Write for Background {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.failure()?;
        if data.is_empty() {
            return Ok(0);
        }
        let mut buf = self.spare.try_recv().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(data);
        self.send(Job::Data(buf))?;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let (ack, done) = std::sync::mpsc::sync_channel(1);
        self.send(Job::Flush(ack))?;
        let result = done.recv().unwrap_or_else(|_| Err(thread_gone()));
        self.failure()?;
        result
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // The queue is written out before the destination is looked at (salvage, rename).
        if let Some(jobs) = self.jobs.take() {
            let _ = jobs.send(Job::End);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A temporary file that becomes the output when renamed; removed if dropped first.
struct Staging {
    temp: PathBuf,
    dest: PathBuf,
    done: bool,
}

impl Staging {
    fn commit(mut self) -> Result<(), Error> {
        self.done = true;
        fs::rename(&self.temp, &self.dest).map_err(|e| {
            let _ = fs::remove_file(&self.temp);
            Error::from(e).with_path(&self.dest)
        })
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// An opened output destination.
pub(crate) struct Destination {
    /// Where the bytes go (counted).
    pub writer: Counted<Box<dyn Write + Send>>,
}

/// What is left of a destination once its writer is handed over.
pub(crate) struct Landing {
    /// Bytes the destination accepted.
    accepted: Arc<AtomicU64>,
    /// The same file, to cut it after the last whole packet (regular files only).
    file: Option<File>,
    /// The temporary file to rename into place.
    staging: Option<Staging>,
}

impl Destination {
    /// Opens `path` (`-`: standard output) for writing. A regular file (or a new name)
    /// is written to a temporary file beside it unless `in_place`; devices, pipes and
    /// `/dev/...`, `/proc/...` names are written directly.
    pub fn open(path: &str, in_place: bool) -> Result<(Destination, Landing), Error> {
        let accepted = Arc::new(AtomicU64::new(0));
        let (out, file, staging): (Box<dyn Write + Send>, _, _) = if path == "-" {
            // Unbuffered, so that the count is what reached the descriptor.
            let fd = io::stdout()
                .as_fd()
                .try_clone_to_owned()
                .map_err(|e| Error::from(e).with_path("-"))?;
            (Box::new(File::from(fd)), None, None)
        } else {
            let special = path.starts_with("/dev/")
                || path.starts_with("/proc/")
                || fs::metadata(path).is_ok_and(|m| {
                    let t = m.file_type();
                    t.is_char_device() || t.is_block_device() || t.is_fifo() || t.is_socket()
                });
            if fs::metadata(path).is_ok_and(|m| m.is_dir()) {
                return Err(Error::invalid_argument("the output is a directory").with_path(path));
            }
            if special || in_place {
                let file = File::create(path).map_err(|e| Error::from(e).with_path(path))?;
                let regular = file.metadata().is_ok_and(|m| m.is_file());
                let clone = if regular { file.try_clone().ok() } else { None };
                (Box::new(file), clone, None)
            } else {
                let (file, staging) = stage(path)?;
                let clone = file
                    .try_clone()
                    .map_err(|e| Error::from(e).with_path(path))?;
                (Box::new(file), Some(clone), Some(staging))
            }
        };
        let writer = Counted {
            inner: out,
            accepted: Arc::clone(&accepted),
        };
        Ok((
            Destination { writer },
            Landing {
                accepted,
                file,
                staging,
            },
        ))
    }
}

/// Creates a temporary file beside `path` (beside its target when it is a symbolic
/// link, so that the link keeps pointing at the output).
fn stage(path: &str) -> Result<(File, Staging), Error> {
    let dest = match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            fs::canonicalize(path).map_err(|e| Error::from(e).with_path(path))?
        }
        _ => PathBuf::from(path),
    };
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| Error::invalid_argument("the output names no file").with_path(path))?;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.tracekit-{}-{n}.part", std::process::id()));
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(file) => {
                let staging = Staging {
                    temp,
                    dest,
                    done: false,
                };
                return Ok((file, staging));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::from(e).with_path(path)),
        }
    }
}

impl Landing {
    /// The landing of an output that is not a file (a DAG transmit stream): nothing to
    /// rename or cut.
    #[cfg(feature = "dag")]
    pub fn none() -> Landing {
        Landing {
            accepted: Arc::new(AtomicU64::new(0)),
            file: None,
            staging: None,
        }
    }

    /// Bytes the destination accepted so far.
    #[inline]
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    /// The output is complete: renames it into place.
    pub fn commit(self) -> Result<(), Error> {
        match self.staging {
            Some(s) => s.commit(),
            None => Ok(()),
        }
    }

    /// Writing failed: keeps the first `packets` packets, which end at byte `end`, when
    /// `exact` (uncompressed); see [`Kept`].
    pub fn salvage(self, packets: u64, end: u64, exact: bool) -> Kept {
        let accepted = self.accepted();
        if !exact {
            // A compressed stream cut short cannot be completed.
            return match self.staging {
                Some(_) => Kept::Nothing,
                None => Kept::Unknown,
            };
        }
        let Some(file) = self.file else {
            return Kept::Sent {
                packets,
                partial: accepted > end,
            };
        };
        if packets == 0 {
            // Nothing worth keeping: the staging file goes (dropped), an in-place one is
            // emptied.
            let _ = file.set_len(0);
            return Kept::Nothing;
        }
        if file.set_len(end).is_err() {
            return Kept::Sent {
                packets,
                partial: accepted > end,
            };
        }
        drop(file);
        match self.staging {
            Some(s) => match s.commit() {
                Ok(()) => Kept::Whole(packets),
                Err(_) => Kept::Nothing,
            },
            None => Kept::Whole(packets),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_file_under_other_names() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.pcap");
        fs::write(&a, b"x").unwrap();
        let hard = dir.path().join("hard.pcap");
        fs::hard_link(&a, &hard).unwrap();
        let soft = dir.path().join("soft.pcap");
        std::os::unix::fs::symlink(&a, &soft).unwrap();
        let other = dir.path().join("other.pcap");
        fs::write(&other, b"x").unwrap();
        let s = |p: &Path| p.to_str().unwrap().to_string();
        let inputs = InputFiles::new([format!("pcap:{}", s(&a))]);
        for same in [&a, &hard, &soft] {
            let e = inputs.check_output(&s(same)).unwrap_err().to_string();
            assert!(e.contains("refusing to overwrite"), "{e}");
        }
        inputs.check_output(&s(&other)).unwrap();
        inputs
            .check_output(&s(&dir.path().join("new.pcap")))
            .unwrap();
        assert_eq!(uri_path("afpacket:eth0"), None);
        assert_eq!(uri_path("erf:x.erf"), Some("x.erf"));
        assert_eq!(uri_path("c:x"), Some("c:x"));
    }

    #[test]
    fn staging_renames_on_commit_and_removes_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("o.pcap");
        let name = out.to_str().unwrap();
        let (mut d, landing) = Destination::open(name, false).unwrap();
        d.writer.write_all(b"hello").unwrap();
        assert!(!out.exists(), "written to a temporary file first");
        drop(d);
        assert_eq!(landing.accepted(), 5);
        landing.commit().unwrap();
        assert_eq!(fs::read(&out).unwrap(), b"hello");

        let (mut d, landing) = Destination::open(name, false).unwrap();
        d.writer.write_all(b"abcdefgh").unwrap();
        drop(d);
        drop(landing);
        assert_eq!(
            fs::read(&out).unwrap(),
            b"hello",
            "the old file is untouched"
        );
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );

        let (mut d, landing) = Destination::open(name, false).unwrap();
        d.writer.write_all(b"abcdefgh").unwrap();
        drop(d);
        assert_eq!(landing.salvage(2, 6, true), Kept::Whole(2));
        assert_eq!(
            fs::read(&out).unwrap(),
            b"abcdef",
            "cut after the last whole packet"
        );
    }

    /// Takes `room` bytes, then fails like a full disk; what it took is shared.
    struct Room {
        room: usize,
        took: Arc<std::sync::Mutex<Vec<u8>>>,
    }

    impl Write for Room {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            let mut took = self.took.lock().unwrap();
            let n = data.len().min(self.room - took.len());
            if n == 0 {
                return Err(io::Error::from_raw_os_error(28)); // ENOSPC
            }
            took.extend_from_slice(&data[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn background_writes_in_order_and_reports_a_failure_once_with_the_count_exact() {
        // In order, everything, counted.
        let took = Arc::new(std::sync::Mutex::new(Vec::new()));
        let accepted = Arc::new(AtomicU64::new(0));
        let counted = Counted {
            inner: Box::new(Room {
                room: 1 << 20,
                took: Arc::clone(&took),
            }) as Box<dyn Write + Send>,
            accepted: Arc::clone(&accepted),
        };
        let mut w = Background::new(Box::new(counted)).unwrap();
        let mut want = Vec::new();
        for i in 0..100u32 {
            let chunk: Vec<u8> = (0..(i * 37 % 1000)).map(|j| (i + j) as u8).collect();
            w.write_all(&chunk).unwrap();
            want.extend(chunk);
        }
        w.flush().unwrap();
        assert_eq!(*took.lock().unwrap(), want);
        assert_eq!(accepted.load(Ordering::Relaxed), want.len() as u64);

        // A destination that fills up: the failure comes out (at a later write or at the
        // flush), nothing is written after it, and the count says what went in.
        let took = Arc::new(std::sync::Mutex::new(Vec::new()));
        let accepted = Arc::new(AtomicU64::new(0));
        let counted = Counted {
            inner: Box::new(Room {
                room: 1000,
                took: Arc::clone(&took),
            }) as Box<dyn Write + Send>,
            accepted: Arc::clone(&accepted),
        };
        let mut w = Background::new(Box::new(counted)).unwrap();
        let mut failed = None;
        for _ in 0..10 {
            if let Err(e) = w.write_all(&[7u8; 300]) {
                failed = Some(e);
                break;
            }
        }
        let failed = failed
            .or_else(|| w.flush().err())
            .expect("the failure comes out");
        assert_eq!(failed.raw_os_error(), Some(28), "{failed}");
        assert!(w.flush().is_err(), "and the output stays failed");
        drop(w);
        assert_eq!(took.lock().unwrap().len(), 1000);
        assert_eq!(accepted.load(Ordering::Relaxed), 1000);
    }

    /// A `Background` over a `Room` of `room` bytes, with what the room took and the
    /// accepted count.
    fn background(room: usize) -> (Background, Arc<std::sync::Mutex<Vec<u8>>>, Arc<AtomicU64>) {
        let took = Arc::new(std::sync::Mutex::new(Vec::new()));
        let accepted = Arc::new(AtomicU64::new(0));
        let counted = Counted {
            inner: Box::new(Room {
                room,
                took: Arc::clone(&took),
            }) as Box<dyn Write + Send>,
            accepted: Arc::clone(&accepted),
        };
        (Background::new(Box::new(counted)).unwrap(), took, accepted)
    }

    #[test]
    fn exchanged_buffers_keep_their_place_among_writes_and_come_back_for_reuse() {
        let (mut w, took, accepted) = background(1 << 20);
        let mut exchange = w.exchange();
        let mut want = Vec::new();
        let mut buf = Vec::new();
        let mut reused = 0;
        for i in 0..50u8 {
            reused += usize::from(buf.capacity() >= 1000);
            buf.clear();
            buf.resize(1000 + usize::from(i), i);
            want.extend_from_slice(&buf);
            buf = exchange(std::mem::take(&mut buf)).unwrap();
            w.write_all(&[i; 3]).unwrap();
            want.extend([i; 3]);
        }
        w.flush().unwrap();
        assert_eq!(*took.lock().unwrap(), want, "in the order given");
        assert_eq!(accepted.load(Ordering::Relaxed), want.len() as u64);
        assert!(reused > 0, "buffers written come back");

        // A destination that fills up: an exchange reports it, nothing is written
        // after it, and the count says what went in.
        let (w, took, accepted) = background(1000);
        let mut exchange = w.exchange();
        let failed = (0..50)
            .find_map(|_| {
                std::thread::sleep(std::time::Duration::from_millis(1));
                exchange(vec![7u8; 300]).err()
            })
            .expect("the failure comes out");
        assert_eq!(failed.raw_os_error(), Some(28), "{failed}");
        drop(w);
        assert!(
            exchange(vec![1]).is_err(),
            "an exchange outliving its thread fails"
        );
        assert_eq!(took.lock().unwrap().len(), 1000);
        assert_eq!(accepted.load(Ordering::Relaxed), 1000);
    }

    #[test]
    fn direct_writes_come_after_everything_queued_and_stop_at_a_failure() {
        let (mut w, took, accepted) = background(1 << 20);
        let mut exchange = w.exchange();
        let mut want = Vec::new();
        for i in 0..40u8 {
            // Queued (copied, exchanged), then written on this thread: the direct write
            // waits for the queue, and what is queued after it comes after it.
            w.write_all(&[i; 5]).unwrap();
            let _ = exchange(vec![i; 700]).unwrap();
            w.write_direct(&[!i; 333]).unwrap();
            w.write_direct(&[i; 2]).unwrap();
            want.extend([i; 5]);
            want.extend([i; 700]);
            want.extend([!i; 333]);
            want.extend([i; 2]);
        }
        w.write_all(b"end").unwrap();
        want.extend(b"end");
        w.flush().unwrap();
        assert_eq!(*took.lock().unwrap(), want, "in the order given");
        assert_eq!(accepted.load(Ordering::Relaxed), want.len() as u64);

        // Filling up on this thread: the failure is the direct write's, the thread
        // writes nothing after it, and the count says what went in.
        let (mut w, took, accepted) = background(1000);
        w.write_all(&[1; 400]).unwrap();
        let failed = w
            .write_direct(&[2; 700])
            .expect_err("the room is 1000 bytes");
        assert_eq!(failed.raw_os_error(), Some(28), "{failed}");
        assert!(w.write_direct(&[3]).is_err(), "and the output stays failed");
        assert!(w.write_all(&[4]).is_ok_and(|_| w.flush().is_err()));
        drop(w);
        assert_eq!(
            *took.lock().unwrap(),
            [[1u8; 400].as_slice(), &[2; 600]].concat()
        );
        assert_eq!(accepted.load(Ordering::Relaxed), 1000);

        // Filled up on the thread: the next direct write reports it.
        let (mut w, took, _) = background(1000);
        w.write_all(&[1; 1200]).unwrap();
        let failed = w.write_direct(&[2; 10]).expect_err("the thread failed");
        assert_eq!(failed.raw_os_error(), Some(28), "{failed}");
        assert!(w.write_direct(&[3]).is_err(), "and the output stays failed");
        drop(w);
        assert_eq!(*took.lock().unwrap(), [1u8; 1000]);
    }
}
