//! The files a `ParquetExport` leaves: Hive-style time partitions (checked against
//! `date -u`), the part files of a partition written out of time order, row groups of the
//! chosen size written while the export runs, and refusals.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{TimestampNanosecondType, UInt64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::reader::FileReader;
use parquet::file::serialized_reader::SerializedFileReader;
use tracekit_core::{LinkType, Meta, Packet, Timestamp};
use tracekit_decode::Decoded;
use tracekit_export::{ExportError, ExportOptions, Field, ParquetExport, Partitioning};
use tracekit_testdata::builder::{Ethernet, Ipv4, PacketBuilder, Tcp};

fn frame(i: u32) -> Vec<u8> {
    PacketBuilder::new()
        .ethernet(Ethernet::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]))
        .ipv4(Ipv4::new([10, 0, (i >> 8) as u8, i as u8], [192, 0, 2, 1]))
        .tcp(Tcp::new(1024 + (i % 50_000) as u16, 443).seq(i.wrapping_mul(2_654_435_761)))
        .payload(&i.to_be_bytes())
        .build()
}

/// Exports packets with these time stamps (seconds, nanoseconds; `None`: no time stamp)
/// and returns what was written.
fn export(
    out: &Path,
    times: &[Option<(u64, u32)>],
    options: ExportOptions,
) -> tracekit_export::ExportSummary {
    let fields = [Field::FrameNumber, Field::FrameTimeEpoch, Field::IpSrc];
    let mut e = ParquetExport::packets(out, &fields, options).expect("export");
    for (i, t) in times.iter().enumerate() {
        let bytes = frame(i as u32);
        let ts = t.map_or(Timestamp::NONE, |(s, n)| {
            Timestamp::from_unix_nanos(s * 1_000_000_000 + u64::from(n))
        });
        let meta = Meta::new(ts, bytes.len() as u32, LinkType::ETHERNET);
        let p = Packet::new(&bytes, meta);
        e.push_packet(i as u64 + 1, &p, &Decoded::new(&p))
            .expect("push");
    }
    e.finish().expect("finish")
}

/// Every file under `dir`, relative, with the frame numbers and time stamps it holds.
fn contents(dir: &Path) -> BTreeMap<String, Vec<(u64, Option<i64>)>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<(u64, Option<i64>)>>) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(base, &path, out);
                continue;
            }
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            let mut rows = Vec::new();
            let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap())
                .expect("Parquet")
                .build()
                .unwrap();
            for b in reader {
                let b = b.unwrap();
                let n = b.column(0).as_primitive::<UInt64Type>();
                let t = b.column(1).as_primitive::<TimestampNanosecondType>();
                for i in 0..b.num_rows() {
                    rows.push((n.value(i), (!t.is_null(i)).then(|| t.value(i))));
                }
            }
            out.insert(rel, rows);
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// `date -u`'s partition directory of a time stamp in nanoseconds.
fn date_dir(ns: i64, format: &str) -> String {
    let out = Command::new("date")
        .args(["-u", "-d", &format!("@{}", ns.div_euclid(1_000_000_000))])
        .arg(format!("+{format}"))
        .output()
        .expect("date");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

// Time stamps from `date -u -d '2026-11-22 13:59:59 UTC' +%s` and so on.
const T_13_59_59: u64 = 1_795_355_999;
const T_14_00_00: u64 = 1_795_356_000;
const T_13_30_00: u64 = 1_795_354_200;
const T_NEXT_DAY: u64 = 1_795_392_001;
const T_1999: u64 = 946_684_799;

#[test]
fn hour_partitions_follow_utc_time() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let times = [
        Some((T_13_59_59, 999_999_999)),
        Some((T_14_00_00, 0)),
        Some((T_13_30_00, 5)), // earlier again: back into the open 13:00 partition
        Some((T_NEXT_DAY, 1)),
        Some((T_1999, 0)),
        None,
        Some((T_14_00_00, 7)),
    ];
    let summary = export(
        &out,
        &times,
        ExportOptions {
            partition: Some(Partitioning::Hour),
            ..ExportOptions::default()
        },
    );
    assert_eq!(summary.rows, 7);
    let files = contents(&out);
    let names: Vec<&str> = files.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "date=1999-12-31/hour=23/part-0.parquet",
            "date=2026-11-22/hour=13/part-0.parquet",
            "date=2026-11-22/hour=14/part-0.parquet",
            "date=2026-11-23/hour=00/part-0.parquet",
            "date=__HIVE_DEFAULT_PARTITION__/hour=__HIVE_DEFAULT_PARTITION__/part-0.parquet",
        ]
    );
    let mut seen = 0;
    for (name, rows) in &files {
        for &(number, ts) in rows {
            seen += 1;
            match ts {
                Some(ns) => assert_eq!(
                    name.rsplit_once('/').unwrap().0,
                    date_dir(ns, "date=%F/hour=%H"),
                    "packet {number}"
                ),
                None => assert!(name.starts_with("date=__HIVE"), "packet {number}"),
            }
        }
    }
    assert_eq!(seen, 7);
    // Rows keep their order within a partition.
    assert_eq!(
        files["date=2026-11-22/hour=14/part-0.parquet"]
            .iter()
            .map(|r| r.0)
            .collect::<Vec<_>>(),
        [2, 7]
    );
    // No file is left with the .partial suffix.
    assert!(
        summary
            .files
            .iter()
            .all(|(p, _)| p.extension().unwrap() == "parquet")
    );
}

#[test]
fn a_partition_reopened_after_it_was_closed_gets_a_new_part() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // One open file at a time: 13h, 14h, 13h again.
    let times = [
        Some((T_13_30_00, 0)),
        Some((T_14_00_00, 0)),
        Some((T_13_59_59, 0)),
        Some((T_13_59_59, 1)),
    ];
    export(
        &out,
        &times,
        ExportOptions {
            partition: Some(Partitioning::Day),
            max_open: 1,
            ..ExportOptions::default()
        },
    );
    // Day partitions: all four in one file.
    let files = contents(&out);
    assert_eq!(files.len(), 1);
    assert_eq!(files["date=2026-11-22/part-0.parquet"].len(), 4);

    let out = dir.path().join("out2");
    export(
        &out,
        &times,
        ExportOptions {
            partition: Some(Partitioning::Hour),
            max_open: 1,
            ..ExportOptions::default()
        },
    );
    let files: Vec<(String, Vec<u64>)> = contents(&out)
        .into_iter()
        .map(|(k, v)| (k, v.into_iter().map(|r| r.0).collect()))
        .collect();
    assert_eq!(
        files,
        [
            (
                "date=2026-11-22/hour=13/part-0.parquet".to_string(),
                vec![1]
            ),
            (
                "date=2026-11-22/hour=13/part-1.parquet".to_string(),
                vec![3, 4]
            ),
            (
                "date=2026-11-22/hour=14/part-0.parquet".to_string(),
                vec![2]
            ),
        ]
    );
}

#[test]
fn row_groups_have_the_chosen_size_and_reach_the_disk_while_writing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rows.parquet");
    let partial = PathBuf::from(format!("{}.partial", out.display()));
    let options = ExportOptions {
        row_group_rows: 1000,
        batch_rows: 256,
        ..ExportOptions::default()
    };
    let mut e = ParquetExport::packets(&out, Field::ALL, options).unwrap();
    let mut sizes = Vec::new();
    for i in 0..10_500u32 {
        let bytes = frame(i);
        let meta = Meta::new(
            Timestamp::from_unix_nanos(T_1999 * 1_000_000_000 + u64::from(i) * 1000),
            bytes.len() as u32,
            LinkType::ETHERNET,
        );
        let p = Packet::new(&bytes, meta);
        e.push_packet(u64::from(i) + 1, &p, &Decoded::new(&p))
            .unwrap();
        if i % 2000 == 1999 {
            sizes.push(std::fs::metadata(&partial).unwrap().len());
        }
    }
    // Row groups leave memory as they fill: the unfinished file grows (behind a 64 KiB
    // write buffer) long before the end.
    assert!(!out.exists());
    assert!(
        sizes.windows(2).all(|w| w[0] <= w[1]) && sizes[2] > 0 && sizes[4] > sizes[3],
        "{sizes:?}"
    );
    let summary = e.finish().unwrap();
    assert_eq!(summary.rows, 10_500);
    assert!(!partial.exists());
    let reader = SerializedFileReader::new(File::open(&out).unwrap()).unwrap();
    let groups: Vec<i64> = reader
        .metadata()
        .row_groups()
        .iter()
        .map(|g| g.num_rows())
        .collect();
    assert_eq!(groups.len(), 11, "{groups:?}");
    assert!(groups[..10].iter().all(|&n| n == 1000), "{groups:?}");
    assert_eq!(groups[10], 500);
}

#[test]
fn a_partitioned_export_wants_a_new_or_empty_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x"), b"x").unwrap();
    let options = ExportOptions {
        partition: Some(Partitioning::Hour),
        ..ExportOptions::default()
    };
    let e = ParquetExport::packets(dir.path(), Field::ALL, options.clone());
    assert!(matches!(e, Err(ExportError::DirectoryNotEmpty { .. })));
    let mut e =
        ParquetExport::packets(dir.path().join("new"), &[Field::FrameNumber], options).unwrap();
    let batch = tracekit_export::PacketBatcher::new(Field::ALL, 1).finish();
    assert!(batch.is_none());
    let mut b = tracekit_export::PacketBatcher::new(Field::ALL, 10);
    let bytes = frame(1);
    let p = Packet::new(&bytes, Meta::new(Timestamp::NONE, 60, LinkType::ETHERNET));
    b.push(1, &p, &Decoded::new(&p));
    let batch = b.finish().unwrap();
    // Not the export's columns.
    assert!(matches!(
        e.push_batch(&batch, None),
        Err(ExportError::Unsupported(_))
    ));
}

/// Every file under `dir`, relative.
fn names(dir: &Path) -> Vec<String> {
    contents_names(dir, dir)
}

fn contents_names(base: &Path, dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(contents_names(base, &path));
        } else {
            out.push(
                path.strip_prefix(base)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_string(),
            );
        }
    }
    out.sort();
    out
}

#[test]
fn files_completed_early_are_renamed_only_when_the_export_is() {
    let dir = tempfile::tempdir().unwrap();
    let fields = [Field::FrameNumber, Field::FrameTimeEpoch];
    let options = ExportOptions {
        partition: Some(Partitioning::Hour),
        max_open: 1,
        ..ExportOptions::default()
    };
    for complete in [false, true] {
        let out = dir.path().join(format!("out-{complete}"));
        let mut e = ParquetExport::packets(&out, &fields, options.clone()).unwrap();
        for (i, s) in [T_13_30_00, T_14_00_00, T_NEXT_DAY].into_iter().enumerate() {
            let bytes = frame(i as u32);
            let ts = Timestamp::from_unix_nanos(s * 1_000_000_000);
            let p = Packet::new(&bytes, Meta::new(ts, 60, LinkType::ETHERNET));
            e.push_packet(i as u64 + 1, &p, &Decoded::new(&p)).unwrap();
        }
        // Two partitions were completed to stay within one open file: still partial.
        assert!(names(&out).iter().all(|n| n.ends_with(".parquet.partial")));
        assert_eq!(e.rows(), 3);
        let summary = if complete {
            e.finish()
        } else {
            e.finish_incomplete()
        }
        .unwrap();
        let want_suffix = if complete {
            ".parquet"
        } else {
            ".parquet.partial"
        };
        let got = names(&out);
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|n| n.ends_with(want_suffix)), "{got:?}");
        assert_eq!(summary.rows, 3);
        // Each is a readable Parquet file either way.
        for n in got {
            let f = File::open(out.join(&n)).unwrap();
            assert_eq!(
                SerializedFileReader::new(f)
                    .unwrap()
                    .metadata()
                    .file_metadata()
                    .num_rows(),
                1
            );
        }
    }
}

#[test]
fn batches_go_to_the_partition_of_their_time() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let fields = [Field::FrameNumber, Field::FrameTimeEpoch, Field::IpSrc];
    let options = ExportOptions {
        partition: Some(Partitioning::Hour),
        ..ExportOptions::default()
    };
    let mut e = ParquetExport::packets(&out, &fields, options).unwrap();
    let hour = Partitioning::Hour;
    let mut pending: Option<(tracekit_export::PartitionKey, Option<Timestamp>)> = None;
    let mut b = tracekit_export::PacketBatcher::new(&fields, 1000);
    for (i, s) in [T_13_30_00, T_13_59_59, T_14_00_00, T_13_30_00]
        .into_iter()
        .enumerate()
    {
        let t = Timestamp::from_unix_nanos(s * 1_000_000_000);
        let ts = Some(t);
        // One batch per partition: flush when the key changes.
        if let Some((key, first)) = pending
            && key != hour.key(ts)
        {
            e.push_batch(&b.finish().unwrap(), first).unwrap();
            pending = None;
        }
        pending.get_or_insert((hour.key(ts), ts));
        let bytes = frame(i as u32);
        let p = Packet::new(&bytes, Meta::new(t, 60, LinkType::ETHERNET));
        b.push(i as u64 + 1, &p, &Decoded::new(&p));
    }
    e.push_batch(&b.finish().unwrap(), pending.unwrap().1)
        .unwrap();
    assert_eq!(
        hour.key(Some(Timestamp::from_unix_nanos(T_14_00_00 * 1_000_000_000)))
            .to_string(),
        "date=2026-11-22/hour=14"
    );
    assert_eq!(
        hour.key(None).to_string(),
        "date=__HIVE_DEFAULT_PARTITION__/hour=__HIVE_DEFAULT_PARTITION__"
    );
    e.finish().unwrap();
    let files: Vec<(String, Vec<u64>)> = contents(&out)
        .into_iter()
        .map(|(k, v)| (k, v.into_iter().map(|r| r.0).collect()))
        .collect();
    assert_eq!(
        files,
        [
            (
                "date=2026-11-22/hour=13/part-0.parquet".to_string(),
                vec![1, 2, 4]
            ),
            (
                "date=2026-11-22/hour=14/part-0.parquet".to_string(),
                vec![3]
            ),
        ]
    );
}
