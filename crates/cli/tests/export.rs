//! `tracekit export` against `tracekit fields` and `tracekit flows --json` (which are
//! checked against tshark elsewhere): the Parquet files are read back with the `parquet`
//! crate and rendered the way those commands print.
#![cfg(feature = "export")]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tracekit::export::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use tracekit::export::arrow::datatypes::{
    DataType, TimestampNanosecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use tracekit::export::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tracekit_testdata::corpus;

fn tracekit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracekit"))
}

fn run(args: &[&str]) -> Output {
    tracekit().args(args).output().expect("tracekit runs")
}

fn sample() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples/sample.pcap")
        .to_str()
        .unwrap()
        .to_string()
}

/// The fields printed in hex by `tracekit fields` (as tshark prints them).
const HEX: &[&str] = &[
    "eth.type",
    "ip.id",
    "tcp.flags",
    "dns.id",
    "tls.handshake.version",
    "gtp.teid",
    "quic.version",
];

fn scalar(name: &str, a: &dyn Array, i: usize) -> String {
    let int = |v: u64| {
        if HEX.contains(&name) {
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
        DataType::Timestamp(..) => {
            let ns = a.as_primitive::<TimestampNanosecondType>().value(i);
            format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
        }
        DataType::FixedSizeBinary(16) => {
            let b: [u8; 16] = a.as_fixed_size_binary().value(i).try_into().unwrap();
            let v6 = std::net::Ipv6Addr::from(b);
            match v6.to_ipv4_mapped() {
                Some(v4) => v4.to_string(),
                None => v6.to_string(),
            }
        }
        t => panic!("{name}: unexpected type {t}"),
    }
}

/// A value as the text commands print it ("" for null, lists comma-joined).
fn render(name: &str, a: &ArrayRef, i: usize) -> String {
    if a.is_null(i) {
        return String::new();
    }
    match a.data_type() {
        DataType::List(_) => {
            let items = a.as_list::<i32>().value(i);
            (0..items.len())
                .map(|j| scalar(name, &items, j))
                .collect::<Vec<_>>()
                .join(",")
        }
        _ => scalar(name, a, i),
    }
}

fn batches(path: &Path) -> Vec<RecordBatch> {
    ParquetRecordBatchReaderBuilder::try_new(File::open(path).expect("output file"))
        .expect("a Parquet file")
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

/// Rows of a Parquet file, each value rendered; the column names.
fn rows(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut names = Vec::new();
    let mut out = Vec::new();
    for b in batches(path) {
        let schema = b.schema();
        names = schema.fields().iter().map(|f| f.name().clone()).collect();
        for i in 0..b.num_rows() {
            out.push(
                schema
                    .fields()
                    .iter()
                    .zip(b.columns())
                    .map(|(f, c)| render(f.name(), c, i))
                    .collect(),
            );
        }
    }
    (names, out)
}

/// Every field name, from `tracekit fields --help`.
fn all_fields() -> Vec<String> {
    let help = String::from_utf8(run(&["fields", "--help"]).stdout).unwrap();
    help.lines()
        .skip_while(|l| !l.starts_with("Fields:"))
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// `tracekit fields` for every field, tab-separated, one vector per line.
fn fields_lines(file: &str, fields: &[String]) -> Vec<Vec<String>> {
    let mut args = vec!["fields".to_string()];
    for f in fields {
        args.push("-e".into());
        args.push(f.clone());
    }
    args.push(file.to_string());
    let out = tracekit().args(&args).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// Checks that the export of `files` (one after the other) equals `tracekit fields` of
/// each, with `frame.number` counting on; the 16-byte address columns must hold the
/// address of the text column before them.
fn check_export(files: &[&str], extra: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.parquet");
    let mut args = vec!["export", "--parquet", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend_from_slice(files);
    let o = run(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let fields = all_fields();
    assert!(fields.len() > 50, "{fields:?}");
    let mut expected = Vec::new();
    let mut offset = 0u64;
    for f in files {
        let lines = fields_lines(f, &fields);
        for mut l in lines.clone() {
            l[0] = (l[0].parse::<u64>().unwrap() + offset).to_string();
            expected.push(l);
        }
        offset += lines.len() as u64;
    }
    let (names, mut got) = rows(&out);
    if extra.contains(&"--threads") {
        got.sort_by_key(|r| r[0].parse::<u64>().unwrap());
    }
    assert_eq!(got.len(), expected.len(), "{files:?}: rows");
    for (row, want) in got.iter().zip(&expected) {
        let mut k = 0;
        for (c, name) in names.iter().enumerate() {
            if name.ends_with("_bytes") {
                assert_eq!(row[c], row[c - 1], "{files:?} row {}: {name}", row[0]);
                continue;
            }
            assert_eq!(name, &fields[k]);
            assert_eq!(row[c], want[k], "{files:?} packet {}: {name}", want[0]);
            k += 1;
        }
    }
}

#[test]
fn export_equals_fields_on_the_sample_and_corpus_files() {
    check_export(&[&sample()], &[]);
    let names = [
        "zeek__dns__mdns.pcap",
        "libtrace__vlan.pcap.gz",
        "libtrace__complex.pcapng",
        "zeek__ipv6-fragmented-dns.pcap",
        "ndpi__gre.pcapng",
        "libtrace__fragtest.erf.gz",
    ];
    let paths: Vec<String> = names
        .iter()
        .map(|n| corpus(n).to_str().unwrap().to_string())
        .filter(|p| Path::new(p).exists())
        .collect();
    if paths.is_empty() {
        eprintln!("no corpus: only the sample checked");
        return;
    }
    for p in &paths {
        check_export(&[p], &["--row-group", "7", "--compression", "snappy"]);
    }
    // Several inputs: one trace, numbers counting on.
    let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
    check_export(&refs, &[]);
}

#[test]
fn threads_give_the_same_rows() {
    check_export(&[&sample()], &["--threads", "2"]);
    let p = corpus("ndpi__1kxun.pcap");
    if p.exists() {
        check_export(&[p.to_str().unwrap(), &sample()], &["--threads", "3"]);
    }
}

#[test]
fn chosen_fields_only() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.parquet");
    let o = run(&[
        "export",
        "--parquet",
        out.to_str().unwrap(),
        "-e",
        "frame.number,ip.dst",
        "-e",
        "tcp.dstport",
        &sample(),
    ]);
    assert!(o.status.success());
    let (names, got) = rows(&out);
    assert_eq!(
        names,
        ["frame.number", "ip.dst", "ip.dst_bytes", "tcp.dstport"]
    );
    let want = fields_lines(
        &sample(),
        &["frame.number".into(), "ip.dst".into(), "tcp.dstport".into()],
    );
    let got: Vec<Vec<String>> = got
        .into_iter()
        .map(|r| vec![r[0].clone(), r[1].clone(), r[3].clone()])
        .collect();
    assert_eq!(got, want);
    let o = run(&[
        "export",
        "--parquet",
        "x.parquet",
        "-e",
        "no.such",
        &sample(),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown field 'no.such'"));
}

#[test]
fn damaged_input_keeps_the_rows_before_the_damage_under_a_partial_name() {
    for name in [
        "corrupt__100_packets_truncated.pcapng",
        "corrupt__100_packets_bad_caplen.pcap",
    ] {
        let path = corpus(name);
        if !path.exists() {
            eprintln!("no corpus: skipped");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("d.parquet");
        let o = run(&[
            "export",
            "--parquet",
            out.to_str().unwrap(),
            path.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(1));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(name) && err.contains("offset"), "{err}");
        assert!(err.contains("incomplete"), "{err}");
        // Nothing that looks complete; the rows before the damage in the .partial file,
        // the same packets `tracekit fields` prints before its own error.
        assert!(!out.exists());
        let partial = PathBuf::from(format!("{}.partial", out.display()));
        let (_, got) = rows(&partial);
        let want = fields_lines(path.to_str().unwrap(), &["frame.number".into()]);
        assert!(!want.is_empty());
        assert_eq!(got.len(), want.len(), "{name}");
        assert_eq!(got.last().unwrap()[0], want.last().unwrap()[0]);
    }
}

#[test]
fn hour_partitions_hold_every_packet_in_its_hour() {
    for threads in ["1", "2"] {
        hour_partitions_with_threads(threads);
    }
}

fn hour_partitions_with_threads(threads: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("parts");
    let mut files = vec![sample()];
    let other = corpus("libtrace__100_packets.pcap");
    if other.exists() {
        files.push(other.to_str().unwrap().to_string());
    }
    let mut args = vec![
        "export".to_string(),
        "--partition".into(),
        "hour".into(),
        "--json".into(),
        "--threads".into(),
        threads.into(),
        "-e".into(),
        "frame.number,frame.time_epoch".into(),
        "--parquet".into(),
        out.to_str().unwrap().into(),
    ];
    args.extend(files.iter().cloned());
    let o = tracekit().args(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut total = 0;
    for f in summary["files"].as_array().unwrap() {
        let path = Path::new(f["path"].as_str().unwrap());
        let rel = path.strip_prefix(&out).unwrap().parent().unwrap();
        let (_, got) = rows(path);
        assert_eq!(got.len() as u64, f["rows"].as_u64().unwrap());
        for r in got {
            let secs = r[1].split('.').next().unwrap();
            let date = Command::new("date")
                .args(["-u", "-d", &format!("@{secs}"), "+date=%F/hour=%H"])
                .output()
                .unwrap();
            assert_eq!(
                rel.to_str().unwrap(),
                String::from_utf8_lossy(&date.stdout).trim(),
                "packet {}",
                r[0]
            );
            total += 1;
        }
    }
    let want: usize = files
        .iter()
        .map(|f| fields_lines(f, &["frame.number".into()]).len())
        .sum();
    assert_eq!(total, want);
    assert_eq!(summary["rows"].as_u64().unwrap() as usize, want);
}

#[test]
fn flows_equal_flows_json() {
    let mut files = vec![sample()];
    let other = corpus("ndpi__1kxun.pcap");
    if other.exists() {
        files.push(other.to_str().unwrap().to_string());
    }
    for threads in ["1", "2"] {
        for f in &files {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("flows.parquet");
            let o = run(&[
                "export",
                "--flows",
                "--threads",
                threads,
                "--parquet",
                out.to_str().unwrap(),
                f,
            ]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let json = run(&["flows", "--json", "--threads", threads, f]);
            let mut want: Vec<String> = String::from_utf8(json.stdout)
                .unwrap()
                .lines()
                .map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).unwrap();
                    let mut cells: Vec<String> = v
                        .as_object()
                        .unwrap()
                        .iter()
                        .map(|(k, v)| {
                            let v = match v {
                                serde_json::Value::String(s) => s.clone(),
                                serde_json::Value::Null => String::new(),
                                other => other.to_string(),
                            };
                            format!("{k}={v}")
                        })
                        .collect();
                    cells.sort();
                    cells.join(" ")
                })
                .collect();
            let mut got: Vec<String> = Vec::new();
            for b in batches(&out) {
                let schema = b.schema();
                for i in 0..b.num_rows() {
                    let mut cells: Vec<(String, String)> = Vec::new();
                    for (field, col) in schema.fields().iter().zip(b.columns()) {
                        let name = field.name();
                        if let Some(text) = name.strip_suffix("_bytes") {
                            let shown = cells.iter().find(|(k, _)| k == text).unwrap();
                            assert_eq!(render(name, col, i), shown.1);
                            continue;
                        }
                        let v = match col.data_type() {
                            // flows --json prints nanoseconds since the epoch.
                            DataType::Timestamp(..) => col
                                .as_primitive::<TimestampNanosecondType>()
                                .value(i)
                                .to_string(),
                            _ => render(name, col, i),
                        };
                        cells.push((name.clone(), v));
                    }
                    cells.sort();
                    got.push(
                        cells
                            .iter()
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(" "),
                    );
                }
            }
            if threads != "1" {
                want.sort();
                got.sort();
            }
            assert!(!want.is_empty());
            assert_eq!(got, want, "{f} threads {threads}");
        }
    }
}
