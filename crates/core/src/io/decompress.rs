//! Decompression on a thread of its own, handing out large blocks in order.
//!
//! The decoder thread fills buffers from a fixed pool (recycled by the parser: no
//! allocation per block in steady state, memory bounded by the pool) and sends them over a
//! bounded channel. [`crate::io::Input`] walks the blocks in place and copies only a
//! record that straddles two of them.
//!
//! A damaged or truncated stream delivers every byte that decoded before the damage, then
//! the error.

use std::io::{self, Read};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, bounded};

use super::Compression;

/// Size of one decompressed block.
pub const DECOMPRESSED_BLOCK: usize = 1 << 20;

/// Blocks in flight between the decoder and the parser.
const QUEUE: usize = 4;

/// A decompressed block (its buffer and valid length; an empty block ends the stream),
/// or the decoder's error.
pub(crate) type Block = io::Result<(Vec<u8>, usize)>;

/// Decompressed blocks in stream order, produced by a background thread.
pub(crate) struct BlockStream {
    ready: Receiver<Block>,
    pool: Sender<Vec<u8>>,
    worker: Option<JoinHandle<()>>,
}

impl BlockStream {
    /// Starts decoding `raw` (compressed with `codec`) on a new thread.
    pub(crate) fn start(raw: Box<dyn Read + Send>, codec: Compression) -> io::Result<BlockStream> {
        let pool_size = QUEUE + 3;
        let (pool_tx, pool_rx) = bounded::<Vec<u8>>(pool_size);
        for _ in 0..pool_size {
            let _ = pool_tx.send(Vec::new());
        }
        let (tx, rx) = bounded::<Block>(QUEUE);
        let worker = std::thread::Builder::new()
            .name(format!("tracekit-{codec}"))
            .spawn(move || {
                let decoder = match decoder(raw, codec) {
                    Ok(d) => d,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                pump(decoder, &pool_rx, &tx);
            })?;
        Ok(BlockStream {
            ready: rx,
            pool: pool_tx,
            worker: Some(worker),
        })
    }

    /// The next block; an empty block is the end of the stream.
    pub(crate) fn next_block(&mut self) -> Block {
        self.ready
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("the decompression thread ended early")))
    }

    /// Gives a block's buffer back.
    pub(crate) fn recycle(&self, buf: Vec<u8>) {
        let _ = self.pool.try_send(buf);
    }
}

impl Drop for BlockStream {
    fn drop(&mut self) {
        // Closing our ends makes the decoder's next send fail, and it returns.
        let (dead_tx, _) = bounded(0);
        self.pool = dead_tx;
        let (_, dead_rx) = bounded(0);
        self.ready = dead_rx;
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// The streaming decoder of a codec, reading every member / stream / frame in turn.
fn decoder(raw: Box<dyn Read + Send>, codec: Compression) -> io::Result<Box<dyn Read + Send>> {
    let raw = io::BufReader::with_capacity(1 << 18, raw);
    Ok(match codec {
        Compression::None => Box::new(raw),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(raw)),
        Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(raw)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(raw)?),
        Compression::Xz => Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(raw)),
        Compression::Lz4 => Box::new(MultiLz4Decoder {
            frame: Some(lz4_flex::frame::FrameDecoder::new(raw)),
        }),
    })
}

/// Reads concatenated LZ4 frames (the frame decoder stops after one).
struct MultiLz4Decoder<R: io::BufRead> {
    frame: Option<lz4_flex::frame::FrameDecoder<R>>,
}

impl<R: io::BufRead> Read for MultiLz4Decoder<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(frame) = self.frame.as_mut() else {
                return Ok(0);
            };
            let n = frame.read(out)?;
            if n > 0 || out.is_empty() {
                return Ok(n);
            }
            // End of a frame: another one follows if there are bytes left.
            let Some(frame) = self.frame.take() else {
                return Ok(0);
            };
            let mut raw = frame.into_inner();
            if raw.fill_buf()?.is_empty() {
                return Ok(0);
            }
            self.frame = Some(lz4_flex::frame::FrameDecoder::new(raw));
        }
    }
}

/// Fills pool buffers from `decoder` and sends them until the end or an error.
fn pump(mut decoder: Box<dyn Read + Send>, pool: &Receiver<Vec<u8>>, out: &Sender<Block>) {
    loop {
        let Ok(mut buf) = pool.recv() else { return };
        if buf.len() < DECOMPRESSED_BLOCK {
            buf.resize(DECOMPRESSED_BLOCK, 0);
        }
        let mut len = 0;
        let mut failure = None;
        while len < buf.len() {
            match decoder.read(&mut buf[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        let last = len < buf.len();
        if len > 0 && out.send(Ok((buf, len))).is_err() {
            return;
        }
        // The end is an explicit empty block; an error follows the bytes decoded before it.
        match failure {
            Some(e) => {
                let _ = out.send(Err(e));
                return;
            }
            None if last => {
                let _ = out.send(Ok((Vec::new(), 0)));
                return;
            }
            None => {}
        }
    }
}
