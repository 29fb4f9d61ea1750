//! Parquet round trip: every corpus file is exported with every field, read back with
//! the `parquet` crate's Arrow reader, and each value, rendered the way `tracekit fields`
//! prints it, must equal what `tracekit fields` prints for the same packet
//! (`tracekit_decode::fields::write_field`, which the command uses and which is itself
//! compared with tshark in `crates/decode/tests/tshark_fields.rs`).
//!
//! The rendering here is written from the Arrow types alone (it does not use the export
//! code): integers in decimal, except the fields tshark prints in hex; booleans as 1/0;
//! time stamps as seconds with 9 decimals; lists comma-joined. The 16-byte address
//! columns must hold the address of their text column, IPv4 mapped into IPv6.

use std::fs::File;
use std::net::IpAddr;
use std::path::Path;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{
    DataType, TimestampNanosecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tracekit_decode::Decoded;
use tracekit_decode::fields::{Field, write_field};
use tracekit_export::{ExportOptions, ParquetExport};
use tracekit_testdata::{corpus, corpus_dir, manifest};

/// The fields tshark (and so `tracekit fields`) prints in hex, 4 digits.
const HEX: &[&str] = &[
    "eth.type",
    "ip.id",
    "tcp.flags",
    "dns.id",
    "tls.handshake.version",
    "gtp.teid",
    "quic.version",
];

fn render_scalar(name: &str, a: &dyn Array, i: usize) -> String {
    let hex = HEX.contains(&name);
    let int = |v: u64| {
        if hex {
            // tshark's width: 8 hex digits for 32-bit identifiers, 4 for the rest.
            let digits = if matches!(name, "gtp.teid" | "quic.version") {
                8
            } else {
                4
            };
            format!("0x{v:0digits$x}")
        } else {
            v.to_string()
        }
    };
    match a.data_type() {
        DataType::UInt8 => int(a.as_primitive::<UInt8Type>().value(i).into()),
        DataType::UInt16 => int(a.as_primitive::<UInt16Type>().value(i).into()),
        DataType::UInt32 => int(a.as_primitive::<UInt32Type>().value(i).into()),
        DataType::UInt64 => int(a.as_primitive::<UInt64Type>().value(i)),
        DataType::Boolean => u8::from(a.as_boolean().value(i)).to_string(),
        DataType::Utf8 => a.as_string::<i32>().value(i).to_string(),
        DataType::Timestamp(_, tz) => {
            assert_eq!(tz.as_deref(), Some("UTC"));
            let ns = a.as_primitive::<TimestampNanosecondType>().value(i);
            format!(
                "{}.{:09}",
                ns.div_euclid(1_000_000_000),
                ns.rem_euclid(1_000_000_000)
            )
        }
        t => panic!("{name}: unexpected type {t}"),
    }
}

/// A value as `tracekit fields` prints it ("" for null).
fn render(name: &str, a: &ArrayRef, i: usize) -> String {
    if a.is_null(i) {
        return String::new();
    }
    match a.data_type() {
        DataType::List(_) => {
            let items = a.as_list::<i32>().value(i);
            assert!(!items.is_empty(), "{name}: an empty list must be null");
            (0..items.len())
                .map(|j| render_scalar(name, &items, j))
                .collect::<Vec<_>>()
                .join(",")
        }
        _ => render_scalar(name, a, i),
    }
}

/// What `tracekit fields` prints for every field of every packet of `path`, and the
/// packets' export, read back (the export stops at damage, like the command).
fn export_and_expect(path: &Path, out: &Path) -> Option<(Vec<Vec<String>>, bool)> {
    let mut source = tracekit::open(path.to_str()?).ok()?;
    // Small batches and row groups: several of each even in small files.
    let options = ExportOptions {
        row_group_rows: 50,
        batch_rows: 16,
        ..ExportOptions::default()
    };
    let mut export = ParquetExport::packets(out, Field::ALL, options).expect("export");
    let mut expected = Vec::new();
    let mut number = 0;
    let damaged = loop {
        let packet = match source.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break false,
            Err(_) => break true,
        };
        number += 1;
        let d = Decoded::new(&packet);
        expected.push(
            Field::ALL
                .iter()
                .map(|&f| {
                    let mut s = String::new();
                    write_field(&mut s, f, number, &packet, &d);
                    s
                })
                .collect(),
        );
        export.push_packet(number, &packet, &d).expect("push");
    };
    let summary = if damaged {
        export.finish_incomplete()
    } else {
        export.finish()
    }
    .expect("finish");
    assert_eq!(summary.rows, expected.len() as u64);
    Some((expected, damaged))
}

fn mapped(text: &str) -> [u8; 16] {
    match text.parse::<IpAddr>().expect("an address") {
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
        IpAddr::V6(a) => a.octets(),
    }
}

fn check_file(path: &Path, dir: &Path) -> Option<usize> {
    let file = path.file_name()?.to_str()?;
    let out = dir.join(format!("{file}.parquet"));
    let (expected, damaged) = export_and_expect(path, &out)?;
    let written = if damaged {
        // Damaged input: no complete-looking file, the rows before the damage in the
        // .partial one.
        assert!(
            !out.exists(),
            "{file}: a damaged input left a complete-looking file"
        );
        dir.join(format!("{file}.parquet.partial"))
    } else {
        assert!(!dir.join(format!("{file}.parquet.partial")).exists());
        out
    };
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&written).expect("open"))
        .expect("a Parquet file")
        .with_batch_size(37)
        .build()
        .expect("reader");
    let mut row = 0usize;
    for batch in reader {
        let batch = batch.expect("batch");
        let schema = batch.schema();
        for i in 0..batch.num_rows() {
            let want = &expected[row];
            let mut field = 0;
            for (c, col) in schema.fields().iter().zip(batch.columns()) {
                let name = c.name();
                if let Some(text_name) = name.strip_suffix("_bytes") {
                    // The 16-byte twin of the column before it.
                    let text = &want[field - 1];
                    if text.is_empty() {
                        assert!(col.is_null(i), "{file} packet {}: {name}", row + 1);
                    } else {
                        assert_eq!(
                            col.as_fixed_size_binary().value(i),
                            mapped(text),
                            "{file} packet {}: {name} ({text_name} {text})",
                            row + 1
                        );
                    }
                    continue;
                }
                assert_eq!(name, Field::ALL[field].name(), "{file}: column order");
                assert_eq!(
                    render(name, col, i),
                    want[field],
                    "{file} packet {}: {name}",
                    row + 1
                );
                field += 1;
            }
            assert_eq!(field, Field::ALL.len());
            row += 1;
        }
    }
    assert_eq!(row, expected.len(), "{file}: rows read back");
    Some(row)
}

#[test]
fn every_corpus_file_round_trips() {
    if !corpus_dir().join("MANIFEST.md").exists() {
        eprintln!("no corpus at {}: skipped", corpus_dir().display());
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut files = 0;
    let mut rows = 0;
    for entry in manifest() {
        if let Some(n) = check_file(&corpus(&entry.file), dir.path()) {
            files += 1;
            rows += n;
        }
    }
    eprintln!("{files} corpus files, {rows} packets: every value equal");
    assert!(files > 100, "only {files} corpus files could be read");
}

#[test]
fn sample_round_trips() {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/sample.pcap");
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(check_file(&sample, dir.path()), Some(400));
}
