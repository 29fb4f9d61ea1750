//! One row per packet: the Arrow schema of a field list and the batcher that fills it.

use std::net::IpAddr;
use std::sync::Arc;

use arrow::array::{
    ArrayBuilder, ArrayRef, BooleanBuilder, FixedSizeBinaryBuilder, ListBuilder, RecordBatch,
    StringBuilder, TimestampNanosecondBuilder, UInt8Builder, UInt16Builder, UInt32Builder,
    UInt64Builder,
};
use arrow::datatypes::{DataType, Field as ArrowField, Schema, SchemaRef, TimeUnit};
use tracekit_core::Packet;
use tracekit_decode::Decoded;
use tracekit_decode::fields::{Field, FieldSink, visit_field};
use tracekit_decode::text::IpText;

/// The time zone of every time-stamp column: time stamps are UTC instants.
pub const TIME_ZONE: &str = "UTC";

/// The suffix of the 16-byte address column that follows each address column
/// (`ip.src` → `ip.src_bytes`).
pub const BYTES_SUFFIX: &str = "_bytes";

/// The Arrow shape of a field's column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// `UInt8`.
    UInt8,
    /// `UInt16`.
    UInt16,
    /// `UInt32`.
    UInt32,
    /// `UInt64`.
    UInt64,
    /// `Boolean` (a tshark `1`/`0` flag).
    Boolean,
    /// `Utf8`.
    Utf8,
    /// `Timestamp(Nanosecond, "UTC")`.
    Timestamp,
    /// An address: `Utf8` as tshark prints it, followed by a `FixedSizeBinary(16)` column
    /// named with [`BYTES_SUFFIX`] (IPv4 as IPv4-mapped IPv6, `::ffff:a.b.c.d`).
    Address,
    /// `List<UInt16>`.
    ListUInt16,
    /// `List<UInt32>`.
    ListUInt32,
    /// `List<Utf8>`.
    ListUtf8,
}

impl ColumnType {
    /// The column type of `field`. Values tshark prints in hex (`ip.id`, `tcp.flags`,
    /// `eth.type`, `dns.id`, `tls.handshake.version`) are plain integers here.
    pub fn of(field: Field) -> ColumnType {
        use ColumnType::*;
        match field {
            Field::FrameNumber => UInt64,
            Field::FrameTimeEpoch => Timestamp,
            Field::FrameLen | Field::FrameCapLen | Field::FrameInterfaceId | Field::LinkType => {
                UInt32
            }
            Field::Direction | Field::EthSrc | Field::EthDst => Utf8,
            Field::EthType => UInt16,
            Field::VlanId | Field::Ieee8021adId => ListUInt16,
            Field::IslVlanId => UInt16,
            Field::MplsLabel => ListUInt32,
            Field::IpVersion | Field::IpProto | Field::IpTtl => UInt8,
            Field::IpSrc | Field::IpDst | Field::Ipv6Src | Field::Ipv6Dst => Address,
            Field::IpId | Field::IpFragOffset | Field::Ipv6FragOffset => UInt16,
            Field::IpFlagsMf | Field::IpFlagsDf | Field::Ipv6FragMore => Boolean,
            Field::TcpSrcport | Field::TcpDstport | Field::TcpFlags | Field::TcpWindow => UInt16,
            Field::TcpSeqRaw | Field::TcpAckRaw | Field::TcpLen | Field::PayloadLen => UInt32,
            Field::UdpSrcport | Field::UdpDstport | Field::UdpLength => UInt16,
            Field::SctpSrcport | Field::SctpDstport => UInt16,
            Field::IcmpType | Field::IcmpCode | Field::Icmpv6Type => UInt8,
            Field::DnsId => UInt16,
            Field::DnsResponse => Boolean,
            Field::DnsQryName => ListUtf8,
            Field::DnsQryType => ListUInt16,
            Field::DnsRcode => UInt8,
            Field::DnsA | Field::DnsAaaa | Field::DnsCname => ListUtf8,
            Field::DnsRespTtl => ListUInt32,
            Field::TlsVersion => ListUInt16,
            Field::TlsSni | Field::TlsJa3Full | Field::TlsJa4 => Utf8,
            Field::TlsAlpn | Field::Anomalies => ListUtf8,
            Field::HttpMethod | Field::HttpUri | Field::HttpHost | Field::HttpUserAgent => Utf8,
            Field::HttpResponseCode => UInt16,
            Field::NtpMode | Field::NtpStratum | Field::DhcpType => UInt8,
            Field::DhcpMac | Field::DhcpHostname => Utf8,
            Field::GtpTeid | Field::CapwapMessageType => UInt32,
            Field::LwappControlType => UInt8,
            Field::NdNsTarget | Field::NdNaTarget => Address,
            Field::QuicVersion => ListUInt32,
            Field::QuicDcid => ListUtf8,
        }
    }

    /// The Arrow data type of the (first) column.
    pub fn data_type(self) -> DataType {
        let list = |t| DataType::List(Arc::new(ArrowField::new_list_field(t, true)));
        match self {
            ColumnType::UInt8 => DataType::UInt8,
            ColumnType::UInt16 => DataType::UInt16,
            ColumnType::UInt32 => DataType::UInt32,
            ColumnType::UInt64 => DataType::UInt64,
            ColumnType::Boolean => DataType::Boolean,
            ColumnType::Utf8 | ColumnType::Address => DataType::Utf8,
            ColumnType::Timestamp => timestamp_type(),
            ColumnType::ListUInt16 => list(DataType::UInt16),
            ColumnType::ListUInt32 => list(DataType::UInt32),
            ColumnType::ListUtf8 => list(DataType::Utf8),
        }
    }
}

/// `Timestamp(Nanosecond, "UTC")`.
pub fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, Some(TIME_ZONE.into()))
}

/// The Arrow schema of a packet export with `fields`, in that order: one column per
/// field, named as the field (`tracekit fields` names), every column nullable (null
/// where the packet has no such field; an empty list is null too), and after each
/// address column its 16-byte twin (`ip.src_bytes`).
pub fn schema(fields: &[Field]) -> SchemaRef {
    let mut columns = Vec::with_capacity(fields.len() + 4);
    for &f in fields {
        let t = ColumnType::of(f);
        columns.push(ArrowField::new(f.name(), t.data_type(), true));
        if t == ColumnType::Address {
            columns.push(ArrowField::new(
                format!("{}{BYTES_SUFFIX}", f.name()),
                DataType::FixedSizeBinary(16),
                true,
            ));
        }
    }
    Arc::new(Schema::new(columns))
}

/// One column's builder(s).
enum Column {
    UInt8(UInt8Builder),
    UInt16(UInt16Builder),
    UInt32(UInt32Builder),
    UInt64(UInt64Builder),
    Boolean(BooleanBuilder),
    Utf8(StringBuilder),
    Timestamp(TimestampNanosecondBuilder),
    Address(StringBuilder, FixedSizeBinaryBuilder),
    ListUInt16(ListBuilder<UInt16Builder>),
    ListUInt32(ListBuilder<UInt32Builder>),
    ListUtf8(ListBuilder<StringBuilder>),
}

impl Column {
    fn new(t: ColumnType, rows: usize) -> Column {
        match t {
            ColumnType::UInt8 => Column::UInt8(UInt8Builder::with_capacity(rows)),
            ColumnType::UInt16 => Column::UInt16(UInt16Builder::with_capacity(rows)),
            ColumnType::UInt32 => Column::UInt32(UInt32Builder::with_capacity(rows)),
            ColumnType::UInt64 => Column::UInt64(UInt64Builder::with_capacity(rows)),
            ColumnType::Boolean => Column::Boolean(BooleanBuilder::with_capacity(rows)),
            ColumnType::Utf8 => Column::Utf8(StringBuilder::with_capacity(rows, rows * 8)),
            ColumnType::Timestamp => Column::Timestamp(
                TimestampNanosecondBuilder::with_capacity(rows).with_timezone(TIME_ZONE),
            ),
            ColumnType::Address => Column::Address(
                StringBuilder::with_capacity(rows, rows * 12),
                FixedSizeBinaryBuilder::with_capacity(rows, 16),
            ),
            ColumnType::ListUInt16 => Column::ListUInt16(ListBuilder::with_capacity(
                UInt16Builder::with_capacity(rows / 8),
                rows,
            )),
            ColumnType::ListUInt32 => Column::ListUInt32(ListBuilder::with_capacity(
                UInt32Builder::with_capacity(rows / 8),
                rows,
            )),
            ColumnType::ListUtf8 => Column::ListUtf8(ListBuilder::with_capacity(
                StringBuilder::with_capacity(rows / 8, rows),
                rows,
            )),
        }
    }

    /// Ends a row in which the column received `items` values.
    fn end_row(&mut self, items: usize) {
        if items > 0 {
            match self {
                Column::ListUInt16(b) => b.append(true),
                Column::ListUInt32(b) => b.append(true),
                Column::ListUtf8(b) => b.append(true),
                _ => {}
            }
            return;
        }
        match self {
            Column::UInt8(b) => b.append_null(),
            Column::UInt16(b) => b.append_null(),
            Column::UInt32(b) => b.append_null(),
            Column::UInt64(b) => b.append_null(),
            Column::Boolean(b) => b.append_null(),
            Column::Utf8(b) => b.append_null(),
            Column::Timestamp(b) => b.append_null(),
            Column::Address(s, b) => {
                s.append_null();
                b.append_null();
            }
            Column::ListUInt16(b) => b.append(false),
            Column::ListUInt32(b) => b.append(false),
            Column::ListUtf8(b) => b.append(false),
        }
    }

    /// The finished arrays (two for an address column).
    fn finish_into(&mut self, out: &mut Vec<ArrayRef>) {
        match self {
            Column::UInt8(b) => out.push(Arc::new(b.finish())),
            Column::UInt16(b) => out.push(Arc::new(b.finish())),
            Column::UInt32(b) => out.push(Arc::new(b.finish())),
            Column::UInt64(b) => out.push(Arc::new(b.finish())),
            Column::Boolean(b) => out.push(Arc::new(b.finish())),
            Column::Utf8(b) => out.push(Arc::new(b.finish())),
            Column::Timestamp(b) => out.push(Arc::new(b.finish())),
            Column::Address(s, b) => {
                out.push(Arc::new(s.finish()));
                out.push(Arc::new(b.finish()));
            }
            Column::ListUInt16(b) => out.push(Arc::new(b.finish())),
            Column::ListUInt32(b) => out.push(Arc::new(b.finish())),
            Column::ListUtf8(b) => out.push(Arc::new(b.finish())),
        }
    }

    fn len(&self) -> usize {
        match self {
            Column::UInt8(b) => b.len(),
            Column::UInt16(b) => b.len(),
            Column::UInt32(b) => b.len(),
            Column::UInt64(b) => b.len(),
            Column::Boolean(b) => b.len(),
            Column::Utf8(b) => b.len(),
            Column::Timestamp(b) => b.len(),
            Column::Address(s, _) => s.len(),
            Column::ListUInt16(b) => b.len(),
            Column::ListUInt32(b) => b.len(),
            Column::ListUtf8(b) => b.len(),
        }
    }
}

/// The [`FieldSink`] that appends one field's values to its column. A scalar column takes
/// the first value of a row (fields with one value send one); a list column takes every
/// value as an item.
struct ColumnSink<'c> {
    column: &'c mut Column,
    /// Reused for text values: the closure of [`FieldSink::text`] writes here first.
    scratch: &'c mut String,
    items: usize,
}

impl ColumnSink<'_> {
    /// Whether a scalar column already has this row's value.
    fn scalar_done(&mut self) -> bool {
        self.items += 1;
        self.items > 1
    }

    fn integer(&mut self, v: u64) {
        let list = matches!(
            self.column,
            Column::ListUInt16(_) | Column::ListUInt32(_) | Column::ListUtf8(_)
        );
        if !list && self.scalar_done() {
            return;
        }
        if list {
            self.items += 1;
        }
        // The decoder's values fit the field's type (a u16 port, a u8 TTL); a wider value
        // would be a mapping mistake, which the round-trip tests catch.
        match self.column {
            Column::UInt8(b) => b.append_value(v as u8),
            Column::UInt16(b) => b.append_value(v as u16),
            Column::UInt32(b) => b.append_value(v as u32),
            Column::UInt64(b) => b.append_value(v),
            Column::ListUInt16(b) => b.values().append_value(v as u16),
            Column::ListUInt32(b) => b.values().append_value(v as u32),
            Column::Utf8(b) => b.append_value(itoa::Buffer::new().format(v)),
            Column::ListUtf8(b) => b.values().append_value(itoa::Buffer::new().format(v)),
            // A mapping mistake: keep the row count right.
            _ => self.items -= 1,
        }
    }

    fn string(&mut self, write: &mut dyn FnMut(&mut String)) {
        self.scratch.clear();
        write(self.scratch);
        if matches!(self.column, Column::Utf8(_)) && self.scalar_done() {
            return;
        }
        match self.column {
            Column::Utf8(b) => b.append_value(&*self.scratch),
            Column::ListUtf8(b) => {
                self.items += 1;
                b.values().append_value(&*self.scratch);
            }
            _ => {}
        }
    }
}

impl FieldSink for ColumnSink<'_> {
    fn number(&mut self, v: u64) {
        self.integer(v);
    }

    fn hex(&mut self, v: u64, _digits: usize) {
        self.integer(v);
    }

    fn flag(&mut self, v: bool) {
        if !matches!(self.column, Column::Boolean(_)) || self.scalar_done() {
            return;
        }
        if let Column::Boolean(b) = self.column {
            b.append_value(v);
        }
    }

    fn addr(&mut self, v: IpAddr) {
        if let Column::Address(..) = self.column {
            if self.scalar_done() {
                return;
            }
            if let Column::Address(s, b) = self.column {
                s.append_value(IpText::new(v).as_str());
                let bytes = match v {
                    IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
                    IpAddr::V6(a) => a.octets(),
                };
                // 16 bytes into a 16-byte column: cannot fail.
                let _ = b.append_value(bytes);
            }
            return;
        }
        self.string(&mut |s| s.push_str(IpText::new(v).as_str()));
    }

    fn time(&mut self, secs: u64, nanos: u32) {
        if !matches!(self.column, Column::Timestamp(_)) || self.scalar_done() {
            return;
        }
        if let Column::Timestamp(b) = self.column {
            // i64 nanoseconds reach the year 2262; later time stamps saturate.
            let ns = (secs as i128 * 1_000_000_000 + nanos as i128).min(i64::MAX as i128);
            b.append_value(ns as i64);
        }
    }

    fn text(&mut self, write: &mut dyn FnMut(&mut String)) {
        self.string(write);
    }
}

/// Builds Arrow [`RecordBatch`]es of packets, one row per packet, with the columns of
/// [`schema`]`(fields)`.
///
/// Values are the ones `tracekit fields` prints for the same fields (both come from
/// [`tracekit_decode::fields::visit_field`]), typed: numbers as unsigned integers (also
/// those tshark prints in hex), flags as booleans, the time stamp as
/// `Timestamp(Nanosecond, "UTC")`, comma-joined lists as Arrow lists, addresses as text
/// plus 16 bytes. Nothing is allocated per packet beyond the growth of the Arrow
/// builders, which start with room for a whole batch.
pub struct PacketBatcher {
    fields: Vec<Field>,
    schema: SchemaRef,
    columns: Vec<Column>,
    batch_rows: usize,
    scratch: String,
}

impl PacketBatcher {
    /// A batcher for `fields` that hands out a batch every `batch_rows` packets (at
    /// least 1).
    pub fn new(fields: &[Field], batch_rows: usize) -> PacketBatcher {
        let batch_rows = batch_rows.max(1);
        PacketBatcher {
            fields: fields.to_vec(),
            schema: schema(fields),
            columns: fields
                .iter()
                .map(|&f| Column::new(ColumnType::of(f), batch_rows))
                .collect(),
            batch_rows,
            scratch: String::with_capacity(256),
        }
    }

    /// The schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The fields, one column each (two for an address).
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// Rows added since the last batch was handed out.
    pub fn len(&self) -> usize {
        self.columns.first().map_or(0, Column::len)
    }

    /// Whether no row waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds packet number `number` (1-based, as `frame.number`); returns a full batch
    /// when this row makes `batch_rows`.
    pub fn push(
        &mut self,
        number: u64,
        packet: &Packet<'_>,
        decoded: &Decoded<'_>,
    ) -> Option<RecordBatch> {
        for (column, &field) in self.columns.iter_mut().zip(&self.fields) {
            let mut sink = ColumnSink {
                column,
                scratch: &mut self.scratch,
                items: 0,
            };
            visit_field(&mut sink, field, number, packet, decoded);
            let items = sink.items;
            column.end_row(items);
        }
        if self.len() >= self.batch_rows {
            self.finish()
        } else {
            None
        }
    }

    /// The rows added since the last batch, if any.
    pub fn finish(&mut self) -> Option<RecordBatch> {
        if self.is_empty() {
            return None;
        }
        let mut arrays = Vec::with_capacity(self.schema.fields().len());
        for c in &mut self.columns {
            c.finish_into(&mut arrays);
        }
        // The arrays are built from the schema's own types, one row per push.
        Some(RecordBatch::try_new(self.schema.clone(), arrays).expect("arrays match the schema"))
    }
}
