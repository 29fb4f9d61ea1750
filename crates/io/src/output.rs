//! The buffer the file writers append records to.

use std::io::{self, Write};

/// What [`RecordBuffer`] holds before handing bytes to the output. Small enough to stay in
/// the core's L2 cache next to the reader's block: with a 1 MiB buffer, the first store of
/// each record header missed the cache and was the writer's most expensive instruction
/// (`tracekit convert` to /dev/null of a 96-byte-record trace: 17 % of the writer's
/// samples on that one store). 256 KiB is still large enough that a `write` per buffer costs
/// nothing measurable.
pub const WRITE_BUFFER: usize = 256 << 10;

/// Counts one record of `len` bytes in a writer's `packets` and `bytes`. The two adds
/// are kept apart: merged into one 16-byte vector store, as the compiler did, they made
/// the next load of either counter wait (a load of half a vector store is not forwarded
/// from it here), and the facade's sink reads both after every packet (`tracekit
/// convert` of 400,000 96-byte records: the sink's write 17.9 % of the samples before,
/// 13.4 % after).
#[inline(always)]
pub fn count_record(packets: &mut u64, bytes: &mut u64, len: u64) {
    *packets += 1;
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::Release);
    *bytes += len;
}

/// A write buffer for record-oriented writers: a record (header and data) is appended with
/// one capacity check and two copies ([`RecordBuffer::put2`]), where `BufWriter` makes a
/// call and a check per piece. A record larger than the buffer goes straight to the
/// output.
///
/// Dropping the buffer hands what it holds to the output as far as it goes (as `BufWriter`
/// does), so that a writer abandoned after an error leaves every whole buffered record it
/// can in the output.
///
/// ```
/// use tracekit_io::RecordBuffer;
///
/// let mut out = RecordBuffer::new(Vec::new());
/// out.put2(b"head", b"data")?;
/// out.put(b"!")?;
/// assert_eq!(out.into_inner()?, b"headdata!");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct RecordBuffer<W: Write> {
    /// `None` only after `into_inner`.
    out: Option<W>,
    buf: Vec<u8>,
    /// Where full buffers go instead of being written to `out`, if set.
    exchange: Option<BufferExchange>,
}

/// Takes a [`RecordBuffer`]'s full buffer and gives back an empty one to fill next (see
/// [`RecordBuffer::hand_buffers_to`]).
pub type BufferExchange = Box<dyn FnMut(Vec<u8>) -> io::Result<Vec<u8>> + Send>;

impl<W: Write> RecordBuffer<W> {
    /// A buffer of [`WRITE_BUFFER`] bytes in front of `out`.
    pub fn new(out: W) -> RecordBuffer<W> {
        RecordBuffer {
            out: Some(out),
            buf: Vec::with_capacity(WRITE_BUFFER),
            exchange: None,
        }
    }

    /// From now on a full buffer is handed to `exchange` whole, in exchange for an empty
    /// one, instead of being copied into the output by `write`: for an output that writes
    /// on a thread of its own, which would otherwise copy every buffer once more. Records
    /// larger than a buffer, and the output's flush, still go to the output itself, so
    /// `exchange` must put what it takes in the same queue as the output's own writes.
    /// Once handed over, bytes are the exchange's: an error it returns (a destination
    /// that failed earlier) loses them, and it is the output's count of what reached the
    /// destination that says what was written.
    pub fn hand_buffers_to(&mut self, exchange: BufferExchange) {
        self.exchange = Some(exchange);
    }

    /// Appends `head` then `data`.
    #[inline]
    pub fn put2(&mut self, head: &[u8], data: &[u8]) -> io::Result<()> {
        let need = head.len() + data.len();
        if self.buf.len() + need > WRITE_BUFFER {
            return self.put2_slow(head, data);
        }
        self.buf.extend_from_slice(head);
        self.buf.extend_from_slice(data);
        Ok(())
    }

    /// Appends an `N`-byte record head, written in place by `head`, then `data`. Cheaper
    /// than [`RecordBuffer::put2`] for heads assembled field by field: the fields are
    /// stored straight into the buffer, where a head built in a local array is loaded back
    /// whole right after its fields were stored, and such a load waits for the stores to
    /// retire (no store forwarding from several stores to one wider load). Measured on
    /// `tracekit convert` of 96-byte records: that load was 18 % of the pcap writer's time.
    #[inline]
    pub fn put_head<const N: usize>(
        &mut self,
        head: impl FnOnce(&mut [u8; N]),
        data: &[u8],
    ) -> io::Result<()> {
        if self.buf.len() + N + data.len() > WRITE_BUFFER {
            let mut h = [0u8; N];
            head(&mut h);
            return self.put2_slow(&h, data);
        }
        let start = self.buf.len();
        self.buf.extend_from_slice(&[0u8; N]);
        let slot: &mut [u8; N] = (&mut self.buf[start..start + N])
            .try_into()
            .expect("N bytes were just added");
        head(slot);
        self.buf.extend_from_slice(data);
        Ok(())
    }

    /// Free bytes in the buffer, handing it to the output first when fewer than `min`
    /// are free: for writers that append runs of records cut to fit
    /// ([`RecordBuffer::put`] of at most that many bytes is then one copy).
    #[inline]
    pub fn room(&mut self, min: usize) -> io::Result<usize> {
        if WRITE_BUFFER - self.buf.len().min(WRITE_BUFFER) < min {
            self.flush_buffer()?;
        }
        Ok(WRITE_BUFFER.saturating_sub(self.buf.len()))
    }

    /// Appends `data`.
    #[inline]
    pub fn put(&mut self, data: &[u8]) -> io::Result<()> {
        self.put2(&[], data)
    }

    #[cold]
    fn put2_slow(&mut self, head: &[u8], data: &[u8]) -> io::Result<()> {
        self.flush_buffer()?;
        if head.len() + data.len() > WRITE_BUFFER {
            let out = self.out_mut();
            out.write_all(head)?;
            return out.write_all(data);
        }
        self.buf.extend_from_slice(head);
        self.buf.extend_from_slice(data);
        Ok(())
    }

    fn out_mut(&mut self) -> &mut W {
        self.out
            .as_mut()
            .expect("a RecordBuffer is written only before into_inner")
    }

    /// Hands the buffered bytes to the output (without flushing the output itself). On
    /// failure the buffer keeps what was not written; with an exchange
    /// ([`RecordBuffer::hand_buffers_to`]) the bytes are the exchange's either way.
    pub fn flush_buffer(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if let Some(exchange) = self.exchange.as_mut() {
            let mut next = exchange(std::mem::take(&mut self.buf))?;
            next.clear();
            next.reserve(WRITE_BUFFER);
            self.buf = next;
            return Ok(());
        }
        let Some(out) = self.out.as_mut() else {
            return Ok(());
        };
        let mut done = 0;
        let result = loop {
            if done == self.buf.len() {
                break Ok(());
            }
            match out.write(&self.buf[done..]) {
                Ok(0) => {
                    break Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "the output accepted no more bytes",
                    ));
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.buf.drain(..done);
        result
    }

    /// Hands the buffered bytes to `write` with the output, to write them there itself
    /// ahead of what it writes next, without going through the buffer or an exchange.
    /// The buffer is empty afterwards whatever `write` returns: the bytes are its own, as
    /// they are an exchange's, and the output's count of what reached the destination
    /// says what was written.
    pub fn write_buffered_with<R>(
        &mut self,
        write: impl FnOnce(&mut W, &[u8]) -> io::Result<R>,
    ) -> io::Result<R> {
        let out = self
            .out
            .as_mut()
            .expect("a RecordBuffer is written only before into_inner");
        let result = write(out, &self.buf);
        self.buf.clear();
        result
    }

    /// The output.
    pub fn get_ref(&self) -> &W {
        self.out
            .as_ref()
            .expect("a RecordBuffer is used only before into_inner")
    }

    /// Writes out the buffer, flushes the output and returns it; a failure is the error
    /// (the output is then incomplete).
    pub fn into_inner(mut self) -> io::Result<W> {
        self.flush_buffer()?;
        let mut out = self.out.take().expect("into_inner is called once");
        out.flush()?;
        Ok(out)
    }
}

impl<W: Write> Drop for RecordBuffer<W> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = self.flush_buffer();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accepts at most `limit` bytes, `chunk` at a time, then fails.
    struct Limited {
        got: Vec<u8>,
        limit: usize,
        chunk: usize,
    }

    impl Write for Limited {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            let room = self.limit - self.got.len();
            if room == 0 {
                return Err(io::Error::other("disk full"));
            }
            let n = data.len().min(room).min(self.chunk);
            self.got.extend_from_slice(&data[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn records_of_every_size_arrive_in_order() {
        let mut expected = Vec::new();
        let mut out = RecordBuffer::new(Vec::new());
        for i in 0..2000usize {
            // Sizes from 0 to past the buffer, so that every path is taken.
            let len = (i * 7919) % (WRITE_BUFFER + 5000);
            let head = (i as u32).to_le_bytes();
            let data = vec![(i % 251) as u8; if i % 97 == 0 { len } else { len % 3000 }];
            out.put2(&head, &data).unwrap();
            expected.extend_from_slice(&head);
            expected.extend_from_slice(&data);
        }
        assert_eq!(out.into_inner().unwrap(), expected);
    }

    /// Appends what it is given to a log that an exchange shares.
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn an_exchange_takes_full_buffers_whole_in_their_place_among_direct_writes() {
        use std::sync::{Arc, Mutex};
        let log = Arc::new(Mutex::new(Vec::new()));
        let handed = Arc::new(Mutex::new(Vec::new()));
        let mut out = RecordBuffer::new(Shared(Arc::clone(&log)));
        let (to, sizes) = (Arc::clone(&log), Arc::clone(&handed));
        out.hand_buffers_to(Box::new(move |full: Vec<u8>| {
            to.lock().unwrap().extend_from_slice(&full);
            sizes.lock().unwrap().push(full.len());
            Ok(full)
        }));
        let mut expected = Vec::new();
        for i in 0..1000usize {
            // Now and then a record larger than a buffer, which goes to the output itself.
            let len = if i % 300 == 299 {
                WRITE_BUFFER + 7
            } else {
                (i * 131) % 2000
            };
            let data = vec![(i % 251) as u8; len];
            let head = (i as u32).to_be_bytes();
            out.put2(&head, &data).unwrap();
            expected.extend_from_slice(&head);
            expected.extend_from_slice(&data);
        }
        let _ = out.into_inner().unwrap();
        assert_eq!(*log.lock().unwrap(), expected);
        let handed = handed.lock().unwrap();
        assert!(handed.len() > 3, "{handed:?}");
        assert!(handed.iter().all(|&n| n <= WRITE_BUFFER), "{handed:?}");
    }

    #[test]
    fn heads_written_in_place_equal_heads_copied() {
        let (mut a, mut b) = (RecordBuffer::new(Vec::new()), RecordBuffer::new(Vec::new()));
        for i in 0..3000usize {
            let data = vec![i as u8; (i * 131) % 70_000];
            let head = (i as u64 * 0x0101_0101_0101).to_be_bytes();
            a.put2(&head, &data).unwrap();
            b.put_head(|h: &mut [u8; 8]| *h = head, &data).unwrap();
        }
        assert_eq!(a.into_inner().unwrap(), b.into_inner().unwrap());
    }

    #[test]
    fn a_failing_output_keeps_what_was_not_written_and_drop_writes_what_it_can() {
        let data = vec![7u8; WRITE_BUFFER - 10];
        let mut sink = Limited {
            got: Vec::new(),
            limit: WRITE_BUFFER + 100,
            chunk: 4096,
        };
        {
            let mut out = RecordBuffer::new(&mut sink);
            out.put(&data).unwrap();
            // Does not fit: the buffer goes out first, whole.
            out.put2(&[1; 8], &data).unwrap();
            assert_eq!(out.get_ref().got.len(), WRITE_BUFFER - 10);
            let err = out.flush_buffer().unwrap_err();
            assert_eq!(err.to_string(), "disk full");
            // 110 of the second record's bytes were taken; the rest stays buffered.
            assert_eq!(out.buf.len(), WRITE_BUFFER - 2 - 110);
        }
        assert_eq!(sink.got.len(), WRITE_BUFFER + 100);
        assert!(sink.got[..WRITE_BUFFER - 10].iter().all(|&b| b == 7));
        assert_eq!(&sink.got[WRITE_BUFFER - 10..WRITE_BUFFER - 2], &[1; 8]);
    }
}
