//! Parallel compression of an output stream.
//!
//! [`ParallelWriter`] cuts what is written into blocks; N worker threads compress
//! independent blocks, each into a complete unit of its codec (a gzip member, a bzip2
//! stream, a zstd frame, an xz stream, an lz4 frame), and a writer thread puts them out in
//! order. The output is a standard file: `gzip -d`, `bzip2 -d`, `zstd -d`, `xz -d` and
//! `lz4 -d` read the concatenation. Block `i` goes to worker `i % N` and the writer thread
//! takes results from the workers in turn, so order needs no reordering stage, and memory
//! is bounded: at most three blocks per worker are in flight.
//!
//! zstd frames carry a content checksum, lz4 frames block and content checksums.
//!
//! gzip members carry a BGZF-style extra field (subfield `TK`, 4 bytes: the member's
//! total compressed size, little-endian) so that tracekit's reader can find member
//! boundaries without inflating, and decompress members in parallel.

use std::io::{self, Write};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, bounded};

use super::Compression;
use tracekit_core::Error;

/// The gzip extra subfield tracekit writes: `T`, `K`, then the member size.
pub const GZIP_MEMBER_SUBFIELD: [u8; 2] = *b"TK";

/// How to compress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressOptions {
    /// The codec.
    pub codec: Compression,
    /// Level in the codec's own range (gzip 1-9, bzip2 1-9, zstd 1-22, xz 0-9, lz4 1);
    /// `None` takes the codec's usual default.
    pub level: Option<i32>,
    /// Worker threads; 0 means one per core.
    pub threads: usize,
}

impl CompressOptions {
    /// `codec` at its default level on every core.
    pub fn new(codec: Compression) -> CompressOptions {
        CompressOptions {
            codec,
            level: None,
            threads: 0,
        }
    }

    /// The level to use, checked against the codec's own range.
    pub fn checked_level(&self) -> Result<i32, Error> {
        let (range, default) = match self.codec {
            Compression::Gzip => (1..=9, 6),
            Compression::Bzip2 => (1..=9, 9),
            Compression::Zstd => (1..=22, 3),
            Compression::Xz => (0..=9, 6),
            Compression::Lz4 => (1..=1, 1),
            Compression::None => (0..=0, 0),
        };
        let level = self.level.unwrap_or(default);
        if range.contains(&level) {
            Ok(level)
        } else {
            Err(Error::invalid_argument(format!(
                "{} levels run from {} to {} (asked for {level})",
                self.codec,
                range.start(),
                range.end()
            )))
        }
    }

    /// Uncompressed bytes per independently compressed unit: large enough for a good
    /// ratio (bzip2 and xz work on large windows), small enough to keep every core busy
    /// and memory low.
    pub fn block_size(&self) -> usize {
        match self.codec {
            Compression::Bzip2 => 900_000,
            Compression::Xz => 4 << 20,
            Compression::Zstd => 2 << 20,
            _ => 1 << 20,
        }
    }
}

type Job = (Vec<u8>, usize);
type Done = io::Result<Vec<u8>>;

/// A writer that compresses on worker threads; see the module documentation.
/// [`ParallelWriter::finish`] must be called to complete the output; dropping the writer
/// without it leaves the output incomplete.
pub struct ParallelWriter<W: Write + Send + 'static> {
    block: Vec<u8>,
    block_size: usize,
    next: usize,
    blocks: u64,
    jobs: Vec<Sender<Job>>,
    pool: Receiver<Vec<u8>>,
    workers: Vec<JoinHandle<()>>,
    writer: Option<JoinHandle<io::Result<(W, u64)>>>,
    /// The pipeline's first error (kind and message), kept for `finish` after `write`
    /// saw it; the kind matters (a closed pipe is a quiet end for command-line tools).
    failure: Option<(io::ErrorKind, String)>,
}

impl<W: Write + Send + 'static> ParallelWriter<W> {
    /// Compresses into `out` as `options` says.
    pub fn new(out: W, options: CompressOptions) -> Result<ParallelWriter<W>, Error> {
        if options.codec == Compression::None {
            return Err(Error::invalid_argument("ParallelWriter needs a codec"));
        }
        let level = options.checked_level()?;
        let threads = if options.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            options.threads
        };
        let block_size = options.block_size();
        // Uncompressed buffers: one being filled, plus up to two per worker in flight.
        let pool_size = 1 + 2 * threads;
        let (pool_tx, pool_rx) = bounded::<Vec<u8>>(pool_size);
        for _ in 1..pool_size {
            let _ = pool_tx.send(Vec::with_capacity(block_size));
        }
        let mut jobs = Vec::with_capacity(threads);
        let mut results = Vec::with_capacity(threads);
        let mut workers = Vec::with_capacity(threads);
        for k in 0..threads {
            let (job_tx, job_rx) = bounded::<Job>(1);
            let (done_tx, done_rx) = bounded::<Done>(1);
            let codec = options.codec;
            let pool = pool_tx.clone();
            let worker = std::thread::Builder::new()
                .name(format!("tracekit-{codec}-{k}"))
                .spawn(move || {
                    let mut scratch = Vec::new();
                    while let Ok((mut input, _)) = job_rx.recv() {
                        let out = compress_block(codec, level, &input, &mut scratch);
                        input.clear();
                        let _ = pool.try_send(input);
                        if done_tx.send(out).is_err() {
                            return;
                        }
                    }
                })
                .map_err(Error::from)?;
            jobs.push(job_tx);
            results.push(done_rx);
            workers.push(worker);
        }
        let writer = std::thread::Builder::new()
            .name("tracekit-compressed-out".into())
            .spawn(move || write_in_order(out, &results))
            .map_err(Error::from)?;
        Ok(ParallelWriter {
            block: Vec::with_capacity(block_size),
            block_size,
            next: 0,
            blocks: 0,
            jobs,
            pool: pool_rx,
            workers,
            writer: Some(writer),
            failure: None,
        })
    }

    /// Hands the current block to its worker and takes a fresh buffer.
    fn dispatch(&mut self) -> io::Result<()> {
        let fresh = self.pool.recv().unwrap_or_default();
        let full = std::mem::replace(&mut self.block, fresh);
        let len = full.len();
        let k = self.next;
        self.next = (self.next + 1) % self.jobs.len();
        self.blocks += 1;
        if self.jobs[k].send((full, len)).is_err() {
            // A worker or the writer stopped: the real cause comes from `finish`.
            return Err(io::Error::other("the compression pipeline stopped"));
        }
        Ok(())
    }

    /// Compresses what is left, waits for every worker and the writer, and returns the
    /// inner writer and the number of compressed bytes written. An error means the output
    /// is incomplete.
    pub fn finish(mut self) -> Result<(W, u64), Error> {
        // An empty input still becomes one valid (empty) unit of the codec.
        if !self.block.is_empty() || self.blocks == 0 {
            let _ = self.dispatch();
        }
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(W, u64), Error> {
        self.jobs.clear();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
        let (kind, message) = match self.writer.take().map(JoinHandle::join) {
            Some(Ok(Ok(done))) => return Ok(done),
            Some(Ok(Err(e))) => (e.kind(), e.to_string()),
            Some(Err(_)) => (
                io::ErrorKind::Other,
                "the compressed-output thread failed".to_string(),
            ),
            None => self.failure.clone().unwrap_or((
                io::ErrorKind::Other,
                "the compressed output was already finished".to_string(),
            )),
        };
        self.failure = Some((kind, message.clone()));
        Err(Error::from(io::Error::new(kind, message)))
    }
}

impl<W: Write + Send + 'static> Write for ParallelWriter<W> {
    fn write(&mut self, mut data: &[u8]) -> io::Result<usize> {
        let total = data.len();
        while !data.is_empty() {
            let room = self.block_size - self.block.len();
            let take = room.min(data.len());
            self.block.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.block.len() == self.block_size
                && let Err(e) = self.dispatch()
            {
                // Surface the writer's own error (disk full, closed pipe) if it has one.
                return Err(match self.shutdown() {
                    Err(_) => {
                        let (kind, message) =
                            self.failure.clone().unwrap_or((e.kind(), e.to_string()));
                        io::Error::new(kind, message)
                    }
                    Ok(_) => e,
                });
            }
        }
        Ok(total)
    }

    fn flush(&mut self) -> io::Result<()> {
        // Blocks are compressed whole; `finish` writes the last one.
        Ok(())
    }
}

impl<W: Write + Send + 'static> Drop for ParallelWriter<W> {
    fn drop(&mut self) {
        if self.writer.is_some() {
            let _ = self.shutdown();
        }
    }
}

/// The writer thread: takes compressed blocks from the workers in turn and writes them.
fn write_in_order<W: Write>(mut out: W, results: &[Receiver<Done>]) -> io::Result<(W, u64)> {
    let mut bytes = 0u64;
    let mut k = 0;
    loop {
        match results[k].recv() {
            Ok(Ok(compressed)) => {
                out.write_all(&compressed)?;
                bytes += compressed.len() as u64;
            }
            Ok(Err(e)) => return Err(e),
            // Every worker finished and was drained: the end.
            Err(_) => break,
        }
        k = (k + 1) % results.len();
    }
    out.flush()?;
    Ok((out, bytes))
}

/// One block as one complete unit of `codec`.
fn compress_block(
    codec: Compression,
    level: i32,
    input: &[u8],
    scratch: &mut Vec<u8>,
) -> io::Result<Vec<u8>> {
    match codec {
        Compression::Gzip => Ok(gzip_member(input, level, scratch)),
        Compression::Bzip2 => {
            let mut e =
                bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level as u32));
            e.write_all(input)?;
            e.finish()
        }
        // Content checksums (zstd: XXH64 of the frame; lz4: XXH32 of every block and of
        // the frame): damage that still decodes is caught when reading.
        Compression::Zstd => {
            let mut c = zstd::bulk::Compressor::new(level)?;
            c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
            c.compress(input)
        }
        Compression::Xz => {
            let mut e = liblzma::write::XzEncoder::new(Vec::new(), level as u32);
            e.write_all(input)?;
            e.finish()
        }
        Compression::Lz4 => {
            let info = lz4_flex::frame::FrameInfo::new()
                .block_checksums(true)
                .content_checksum(true);
            let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
            e.write_all(input)?;
            e.finish().map_err(io::Error::other)
        }
        Compression::None => Ok(input.to_vec()),
    }
}

/// A gzip member (RFC 1952) with the `TK` extra subfield holding its total size.
fn gzip_member(input: &[u8], level: i32, scratch: &mut Vec<u8>) -> Vec<u8> {
    const HEADER: usize = 10 + 2 + 8;
    let mut compressor =
        libdeflater::Compressor::new(libdeflater::CompressionLvl::new(level).unwrap_or_default());
    let bound = compressor.deflate_compress_bound(input.len());
    scratch.resize(bound, 0);
    let n = compressor
        .deflate_compress(input, scratch)
        .unwrap_or_default();
    let total = HEADER + n + 8;
    let mut out = Vec::with_capacity(total);
    // ID1 ID2 CM=8 FLG=FEXTRA MTIME=0 XFL OS=255(unknown)
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0x04, 0, 0, 0, 0, 0, 0xff]);
    out.extend_from_slice(&8u16.to_le_bytes()); // XLEN
    out.extend_from_slice(&GZIP_MEMBER_SUBFIELD);
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&(total as u32).to_le_bytes());
    out.extend_from_slice(&scratch[..n]);
    out.extend_from_slice(&crc32fast::hash(input).to_le_bytes());
    out.extend_from_slice(&(input.len() as u32).to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| ((i * 7) % 251) as u8 ^ (i >> 12) as u8)
            .collect()
    }

    #[test]
    fn every_codec_round_trips_through_its_own_decoder() {
        let data = sample(5 * (1 << 20) + 77);
        for codec in [
            Compression::Gzip,
            Compression::Bzip2,
            Compression::Zstd,
            Compression::Xz,
            Compression::Lz4,
        ] {
            for threads in [1, 3] {
                let options = CompressOptions {
                    codec,
                    level: None,
                    threads,
                };
                let mut w = ParallelWriter::new(Vec::new(), options).unwrap();
                for chunk in data.chunks(70_001) {
                    w.write_all(chunk).unwrap();
                }
                let (packed, bytes) = w.finish().unwrap();
                assert_eq!(bytes, packed.len() as u64);
                assert_eq!(Compression::detect(&packed), codec);
                let raw = crate::Input::from_reader(io::Cursor::new(packed));
                let mut input = crate::Input::decompress(raw, codec).unwrap();
                let mut back = Vec::new();
                input.read_to_end(&mut back).unwrap();
                assert!(back == data, "{codec} with {threads} threads");
            }
        }
    }

    fn gzip_of(data: &[u8], threads: usize) -> Vec<u8> {
        let options = CompressOptions {
            codec: Compression::Gzip,
            level: Some(1),
            threads,
        };
        let mut w = ParallelWriter::new(Vec::new(), options).unwrap();
        w.write_all(data).unwrap();
        w.finish().unwrap().0
    }

    fn gunzip_with(packed: Vec<u8>, threads: usize) -> Result<Vec<u8>, tracekit_core::Error> {
        let raw = crate::Input::from_reader(io::Cursor::new(packed));
        let mut input = crate::Input::decompress_with(raw, Compression::Gzip, threads)?;
        let mut back = Vec::new();
        input
            .read_to_end(&mut back)
            .map_err(tracekit_core::Error::from)?;
        Ok(back)
    }

    #[test]
    fn tracekit_gzip_is_read_in_parallel_and_in_order() {
        let data = sample(7 * (1 << 20) + 12345);
        let packed = gzip_of(&data, 2);
        assert!(crate::decompress::is_splittable_gzip(&packed));
        for threads in [1, 2, 3] {
            assert!(
                gunzip_with(packed.clone(), threads).unwrap() == data,
                "{threads} threads"
            );
        }
        // A foreign member (no size field) and BGZF's empty end-of-file block after ours.
        let mut mixed = packed.clone();
        let mut foreign = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        foreign.write_all(b"tail bytes").unwrap();
        mixed.extend(foreign.finish().unwrap());
        let bgzf_eof = [
            0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 6, 0, b'B', b'C', 2, 0, 0x1b, 0, 3, 0, 0, 0, 0,
            0, 0, 0, 0, 0,
        ];
        mixed.extend_from_slice(&bgzf_eof);
        let mut want = data.clone();
        want.extend_from_slice(b"tail bytes");
        assert!(gunzip_with(mixed, 2).unwrap() == want);
    }

    #[test]
    fn cut_parallel_gzip_gives_whole_members_then_an_error() {
        let data = sample(4 * (1 << 20));
        let mut packed = gzip_of(&data, 2);
        packed.truncate(packed.len() * 3 / 4);
        let raw = crate::Input::from_reader(io::Cursor::new(packed));
        let mut input = crate::Input::decompress_with(raw, Compression::Gzip, 2).unwrap();
        let mut got = 0;
        let err = loop {
            match input.fill(1 << 16) {
                Ok(0) => panic!("a cut stream must end in an error"),
                Ok(have) => {
                    let take = have.min(1 << 16);
                    assert!(input.available()[..take] == data[got..got + take]);
                    input.consume(take);
                    got += take;
                }
                Err(e) => break e,
            }
        };
        assert_eq!(got, 3 << 20, "the three whole members before the cut");
        assert!(err.to_string().contains("cut short"), "{err}");
    }

    #[test]
    fn levels_follow_each_codec() {
        assert!(
            CompressOptions {
                codec: Compression::Gzip,
                level: Some(0),
                threads: 1
            }
            .checked_level()
            .is_err()
        );
        assert!(
            CompressOptions {
                codec: Compression::Xz,
                level: Some(0),
                threads: 1
            }
            .checked_level()
            .is_ok()
        );
        assert!(
            CompressOptions {
                codec: Compression::Zstd,
                level: Some(22),
                threads: 1
            }
            .checked_level()
            .is_ok()
        );
        assert!(
            CompressOptions {
                codec: Compression::Bzip2,
                level: Some(10),
                threads: 1
            }
            .checked_level()
            .is_err()
        );
    }

    #[test]
    fn empty_input_is_a_valid_stream() {
        for codec in [
            Compression::Gzip,
            Compression::Bzip2,
            Compression::Zstd,
            Compression::Xz,
            Compression::Lz4,
        ] {
            let w = ParallelWriter::new(Vec::new(), CompressOptions::new(codec)).unwrap();
            let (packed, _) = w.finish().unwrap();
            assert!(!packed.is_empty(), "{codec}");
            let raw = crate::Input::from_reader(io::Cursor::new(packed));
            let mut back = Vec::new();
            crate::Input::decompress(raw, codec)
                .unwrap()
                .read_to_end(&mut back)
                .unwrap();
            assert!(back.is_empty());
        }
    }

    #[test]
    fn a_failing_output_is_an_error() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = ParallelWriter::new(
            Full,
            CompressOptions {
                codec: Compression::Gzip,
                level: Some(1),
                threads: 2,
            },
        )
        .unwrap();
        let data = sample(8 << 20);
        let written = w.write_all(&data);
        let finished = w.finish();
        assert!(written.is_err() || finished.is_err());
        if let Err(e) = finished {
            assert!(e.to_string().contains("disk full"), "{e}");
        }
    }
}
