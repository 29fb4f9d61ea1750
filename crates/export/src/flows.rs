//! One row per flow record of `tracekit-flow`.

use std::net::IpAddr;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, FixedSizeBinaryBuilder, RecordBatch, StringBuilder, TimestampNanosecondBuilder,
    UInt8Builder, UInt16Builder, UInt64Builder,
};
use arrow::datatypes::{DataType, Field as ArrowField, Schema, SchemaRef};
use tracekit_decode::text::IpText;
use tracekit_flow::FlowRecord;

use crate::packets::{TIME_ZONE, timestamp_type};

/// The columns of a flow export: those of `tracekit flows --json`, in its order, with
/// the 16-byte form of each address after it (`src_addr_bytes`, `dst_addr_bytes`).
/// `first_ts_ns` and `last_ts_ns` are `Timestamp(Nanosecond, "UTC")`.
pub fn flow_schema() -> SchemaRef {
    use DataType::*;
    let c = |name: &str, t: DataType, nullable: bool| ArrowField::new(name, t, nullable);
    let mut fields = vec![
        c("proto", Utf8, false),
        c("src_addr", Utf8, false),
        c("src_addr_bytes", FixedSizeBinary(16), false),
        c("src_port", UInt16, false),
        c("dst_addr", Utf8, false),
        c("dst_addr_bytes", FixedSizeBinary(16), false),
        c("dst_port", UInt16, false),
    ];
    fields.extend(FlowRecord::COUNT_NAMES.map(|name| c(name, UInt64, false)));
    fields.extend([
        c("first_ts_ns", timestamp_type(), false),
        c("last_ts_ns", timestamp_type(), false),
        c("state", Utf8, false),
        c("tcp_state", Utf8, true),
        c("history", Utf8, false),
        c("vlan", UInt16, true),
        c("tunnel_level", UInt8, false),
        c("fragments", UInt64, false),
        c("truncated", UInt64, false),
        c("end", Utf8, false),
    ]);
    Arc::new(Schema::new(fields))
}

/// The protocol as `tracekit flows` names it: `tcp`, `udp`, `icmp`, `icmpv6`, `sctp`,
/// or the number.
pub fn proto_name(out: &mut impl std::fmt::Write, protocol: u8) {
    let _ = match tracekit_flow::protocol_name(protocol) {
        Some(name) => out.write_str(name),
        None => out.write_str(itoa::Buffer::new().format(protocol)),
    };
}

fn mapped(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
        IpAddr::V6(a) => a.octets(),
    }
}

/// Builds Arrow [`RecordBatch`]es of flow records with the columns of [`flow_schema`],
/// one row per record, the values of `tracekit flows --json`.
pub struct FlowBatcher {
    schema: SchemaRef,
    batch_rows: usize,
    rows: usize,
    proto: StringBuilder,
    src_addr: StringBuilder,
    src_bytes: FixedSizeBinaryBuilder,
    src_port: UInt16Builder,
    dst_addr: StringBuilder,
    dst_bytes: FixedSizeBinaryBuilder,
    dst_port: UInt16Builder,
    /// In the order of [`FlowRecord::COUNT_NAMES`].
    counts: [UInt64Builder; 8],
    first: TimestampNanosecondBuilder,
    last: TimestampNanosecondBuilder,
    state: StringBuilder,
    tcp_state: StringBuilder,
    history: StringBuilder,
    vlan: UInt16Builder,
    tunnel_level: UInt8Builder,
    fragments: UInt64Builder,
    truncated: UInt64Builder,
    end: StringBuilder,
}

impl FlowBatcher {
    /// A batcher that hands out a batch every `batch_rows` records (at least 1).
    pub fn new(batch_rows: usize) -> FlowBatcher {
        let n = batch_rows.max(1);
        let text = || StringBuilder::with_capacity(n, n * 8);
        let ts = || TimestampNanosecondBuilder::with_capacity(n).with_timezone(TIME_ZONE);
        FlowBatcher {
            schema: flow_schema(),
            batch_rows: n,
            rows: 0,
            proto: text(),
            src_addr: text(),
            src_bytes: FixedSizeBinaryBuilder::with_capacity(n, 16),
            src_port: UInt16Builder::with_capacity(n),
            dst_addr: text(),
            dst_bytes: FixedSizeBinaryBuilder::with_capacity(n, 16),
            dst_port: UInt16Builder::with_capacity(n),
            counts: std::array::from_fn(|_| UInt64Builder::with_capacity(n)),
            first: ts(),
            last: ts(),
            state: text(),
            tcp_state: text(),
            history: text(),
            vlan: UInt16Builder::with_capacity(n),
            tunnel_level: UInt8Builder::with_capacity(n),
            fragments: UInt64Builder::with_capacity(n),
            truncated: UInt64Builder::with_capacity(n),
            end: text(),
        }
    }

    /// The schema of the batches ([`flow_schema`]).
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Records added since the last batch was handed out.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no record waits.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Adds a record; returns a full batch when this one makes `batch_rows`.
    pub fn push(&mut self, r: &FlowRecord) -> Option<RecordBatch> {
        let (src, dst) = (r.src(), r.dst());
        proto_name(&mut self.proto, r.protocol());
        self.proto.append_value("");
        self.src_addr.append_value(IpText::new(src.addr).as_str());
        let _ = self.src_bytes.append_value(mapped(src.addr));
        self.src_port.append_value(src.port);
        self.dst_addr.append_value(IpText::new(dst.addr).as_str());
        let _ = self.dst_bytes.append_value(mapped(dst.addr));
        self.dst_port.append_value(dst.port);
        for (b, v) in self.counts.iter_mut().zip(r.counts()) {
            b.append_value(v);
        }
        let ns = |t: tracekit_core::Timestamp| t.as_unix_nanos().min(i64::MAX as u64) as i64;
        self.first.append_value(ns(r.first));
        self.last.append_value(ns(r.last));
        self.state.append_value(r.conn_state());
        self.tcp_state
            .append_option(r.tcp_state().map(|s| s.name()));
        self.history.append_value(r.history.as_str());
        self.vlan.append_option(r.key.vlan());
        self.tunnel_level.append_value(r.key.tunnel_level());
        self.fragments.append_value(r.fragments);
        self.truncated.append_value(r.truncated);
        self.end.append_value(r.end.name());
        self.rows += 1;
        if self.rows >= self.batch_rows {
            self.finish()
        } else {
            None
        }
    }

    /// The records added since the last batch, if any.
    pub fn finish(&mut self) -> Option<RecordBatch> {
        if self.rows == 0 {
            return None;
        }
        self.rows = 0;
        let [
            packets,
            bytes,
            packets_ab,
            packets_ba,
            bytes_ab,
            bytes_ba,
            payload_ab,
            payload_ba,
        ] = &mut self.counts;
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(self.proto.finish()),
            Arc::new(self.src_addr.finish()),
            Arc::new(self.src_bytes.finish()),
            Arc::new(self.src_port.finish()),
            Arc::new(self.dst_addr.finish()),
            Arc::new(self.dst_bytes.finish()),
            Arc::new(self.dst_port.finish()),
            Arc::new(packets.finish()),
            Arc::new(bytes.finish()),
            Arc::new(packets_ab.finish()),
            Arc::new(packets_ba.finish()),
            Arc::new(bytes_ab.finish()),
            Arc::new(bytes_ba.finish()),
            Arc::new(payload_ab.finish()),
            Arc::new(payload_ba.finish()),
            Arc::new(self.first.finish()),
            Arc::new(self.last.finish()),
            Arc::new(self.state.finish()),
            Arc::new(self.tcp_state.finish()),
            Arc::new(self.history.finish()),
            Arc::new(self.vlan.finish()),
            Arc::new(self.tunnel_level.finish()),
            Arc::new(self.fragments.finish()),
            Arc::new(self.truncated.finish()),
            Arc::new(self.end.finish()),
        ];
        // The arrays are built from the schema's own types, one row per record.
        Some(RecordBatch::try_new(self.schema.clone(), arrays).expect("arrays match the schema"))
    }
}
