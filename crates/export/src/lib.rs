//! tracekit's packets and flows as Apache Arrow record batches and Parquet files, for the
//! engines that analyse traces too large for one machine or one program: Spark, DuckDB,
//! DataFusion, pandas and polars read the files as they are.
//!
//! - [`schema`] and [`PacketBatcher`]: one row per packet, one typed column per
//!   [`Field`] (the `tracekit fields` names, e.g. `ip.src`, `tcp.dstport`), with the same
//!   values `tracekit fields` prints; the time stamp is `Timestamp(Nanosecond, "UTC")`,
//!   lists (VLAN ids, DNS names, anomalies) are Arrow lists, each address also has a
//!   16-byte column (`ip.src_bytes`, IPv4 mapped into IPv6), absent fields are null.
//! - [`flow_schema`] and [`FlowBatcher`]: one row per `tracekit-flow` record, the
//!   columns of `tracekit flows --json`.
//! - [`ParquetExport`]: either kind of row streamed into Parquet with bounded memory
//!   (row groups of a chosen size), into one file or a Hive-style directory partitioned
//!   by hour or day (`date=2026-11-22/hour=13/part-0.parquet`). Files are written under
//!   a `.partial` name and renamed when complete.
//!
//! The batchers are the building block of the Python bindings too (`tracekit.fields()`
//! returns their batches as a `pyarrow.Table`).
//!
//! ```
//! use tracekit_core::{LinkType, Meta, Packet, Timestamp};
//! use tracekit_decode::Decoded;
//! use tracekit_decode::fields::Field;
//! use tracekit_export::PacketBatcher;
//! use arrow::array::{Array, AsArray};
//! use arrow::datatypes::UInt16Type;
//!
//! // An Ethernet + IPv4 + UDP frame, 10.0.0.1:5353 -> 10.0.0.2:53.
//! let mut frame = vec![0u8; 14 + 20 + 8];
//! frame[12..14].copy_from_slice(&[0x08, 0x00]);
//! frame[14] = 0x45;
//! frame[16..18].copy_from_slice(&28u16.to_be_bytes());
//! frame[22] = 64;
//! frame[23] = 17;
//! frame[26..30].copy_from_slice(&[10, 0, 0, 1]);
//! frame[30..34].copy_from_slice(&[10, 0, 0, 2]);
//! frame[34..36].copy_from_slice(&5353u16.to_be_bytes());
//! frame[36..38].copy_from_slice(&53u16.to_be_bytes());
//! frame[38..40].copy_from_slice(&8u16.to_be_bytes());
//! let meta = Meta::new(Timestamp::from_unix_nanos(1_700_000_000_123_456_789), 42, LinkType::ETHERNET);
//! let packet = Packet::new(&frame, meta);
//!
//! let fields = [Field::FrameNumber, Field::IpSrc, Field::UdpDstport, Field::TcpDstport];
//! let mut batcher = PacketBatcher::new(&fields, 1024);
//! assert!(batcher.push(1, &packet, &Decoded::new(&packet)).is_none()); // batch not full
//! let batch = batcher.finish().unwrap();
//! assert_eq!(batch.num_rows(), 1);
//! // ip.src, then its 16-byte twin ip.src_bytes
//! assert_eq!(batch.schema().field(2).name(), "ip.src_bytes");
//! assert_eq!(batch.column(1).as_string::<i32>().value(0), "10.0.0.1");
//! assert_eq!(batch.column(3).as_primitive::<UInt16Type>().value(0), 53);
//! assert!(batch.column(4).is_null(0)); // no TCP
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod flows;
mod packets;
mod parquet_out;

pub use flows::{FlowBatcher, flow_schema, proto_name};
pub use packets::{BYTES_SUFFIX, ColumnType, PacketBatcher, TIME_ZONE, schema, timestamp_type};
pub use parquet_out::{
    Codec, ExportError, ExportOptions, ExportSummary, NULL_PARTITION, PARTIAL_SUFFIX,
    ParquetExport, Partitioning,
};
pub use tracekit_decode::fields::Field;

/// The arrow-rs crates this one builds on, re-exported so that users get the same
/// versions.
pub use arrow;
pub use parquet;
