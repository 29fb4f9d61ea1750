//! Transmitting: packets written as ERF records into a transmit stream.

use tracekit_core::{CaptureSink, Error, Packet, SinkReport};
use tracekit_erf::{ErfWriter, ErfWriterOptions};

use crate::DagUri;
use crate::capture::{Card, TxStream};

/// Writes packets as ERF records into a transmit stream of a card (`dag:/dev/dag0,1`):
/// the ERF crate's writer encodes them (type from the link type, 8-byte aligned records,
/// the interface in the flags), whole records are committed to the card, and
/// [`DagSink::finish`] waits until the card sent them.
///
/// ```no_run
/// use tracekit_core::CaptureSource;
/// let mut input = tracekit_erf::ErfReader::open("trace.erf")?;
/// let mut tx = tracekit_dag::DagSink::open("dag:/dev/dag0,1", &Default::default())?;
/// while let Some(p) = input.next_packet()? {
///     tx.write_packet(&p)?;
/// }
/// let report = tx.finish()?;
/// println!("{} packets sent", report.packets);
/// # Ok::<(), tracekit_core::Error>(())
/// ```
pub struct DagSink {
    writer: ErfWriter<TxStream>,
    device: String,
    stream: u32,
}

impl DagSink {
    /// Opens transmit stream `N` of `dag:/dev/dagX,N` (odd; stream 1 when none is
    /// given).
    pub fn open(uri: &str, options: &ErfWriterOptions) -> Result<DagSink, Error> {
        let mut u = DagUri::parse(uri)?;
        if !uri.contains(',') {
            u.streams = vec![1];
        }
        if u.streams.len() != 1 {
            return Err(Error::invalid_argument(format!(
                "{uri}: name one transmit stream"
            )));
        }
        let card = Card::open(&u.device, &crate::DagOptions::default())?;
        let tx = TxStream::start(card, u.streams[0])?;
        Ok(DagSink {
            writer: ErfWriter::new(tx, *options),
            device: u.device,
            stream: u.streams[0],
        })
    }

    /// Writes one packet.
    pub fn write_packet(&mut self, packet: &Packet<'_>) -> Result<(), Error> {
        self.writer.write_packet(packet)
    }

    /// Sends what is left, waits until the card sent everything, and reports.
    pub fn finish(self) -> Result<SinkReport, Error> {
        let (mut tx, mut report) = self.writer.finish_into_inner()?;
        tx.drain().map_err(|e| {
            Error::from(e).with_path(format!("{} stream {}", self.device, self.stream))
        })?;
        report.bytes = tx.committed();
        Ok(report)
    }
}

impl CaptureSink for DagSink {
    fn write_packet(&mut self, packet: &Packet<'_>) -> Result<(), Error> {
        DagSink::write_packet(self, packet)
    }

    fn finish(self: Box<Self>) -> Result<SinkReport, Error> {
        DagSink::finish(*self)
    }
}
