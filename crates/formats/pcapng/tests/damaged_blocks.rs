//! Crafted files that Wireshark refuses and a quiet reader would misread: a Section
//! Header Block of a major version other than 1, and options (of a section, interface,
//! statistics or packet block) that run past their block's end. Each is an error naming
//! the block's file offset and the reason, after every good packet before it; tshark
//! refuses the same files after the same packets.

use std::path::Path;
use std::process::Command;

use tracekit_core::{Error, ErrorKind};
use tracekit_pcapng::PcapngReader;
use tracekit_testdata::have;

fn block(block_type: u32, body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    body.resize(body.len().next_multiple_of(4), 0);
    let len = (12 + body.len()) as u32;
    let mut b = block_type.to_le_bytes().to_vec();
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&body);
    b.extend_from_slice(&len.to_le_bytes());
    b
}

/// An option whose length field says `claimed` while `value` follows.
fn option(code: u16, claimed: u16, value: &[u8]) -> Vec<u8> {
    let mut o = code.to_le_bytes().to_vec();
    o.extend_from_slice(&claimed.to_le_bytes());
    o.extend_from_slice(value);
    o.resize(o.len().next_multiple_of(4), 0);
    o
}

fn shb(major: u16, options: &[u8]) -> Vec<u8> {
    let mut body = 0x1A2B_3C4Du32.to_le_bytes().to_vec();
    body.extend_from_slice(&major.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    body.extend_from_slice(&(-1i64).to_le_bytes());
    body.extend_from_slice(options);
    block(0x0A0D_0D0A, &body)
}

fn idb(options: &[u8]) -> Vec<u8> {
    let mut body = vec![1, 0, 0, 0];
    body.extend_from_slice(&65535u32.to_le_bytes());
    body.extend_from_slice(options);
    block(1, &body)
}

fn epb(n: u8, options: &[u8]) -> Vec<u8> {
    let data = [n; 60];
    let mut body = 0u32.to_le_bytes().to_vec();
    body.extend_from_slice(&0u32.to_le_bytes());
    body.extend_from_slice(&u32::from(n).to_le_bytes());
    body.extend_from_slice(&60u32.to_le_bytes());
    body.extend_from_slice(&60u32.to_le_bytes());
    body.extend_from_slice(&data);
    body.extend_from_slice(options);
    block(6, &body)
}

fn isb(options: &[u8]) -> Vec<u8> {
    let mut body = vec![0; 12];
    body.extend_from_slice(options);
    block(5, &body)
}

/// Packets read (their first data byte) and the error that ended the file.
fn read(path: &Path) -> (Vec<u8>, Option<Error>) {
    let mut r = match PcapngReader::open(path) {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut got = Vec::new();
    loop {
        match r.next_packet() {
            Ok(Some(p)) => got.push(p.data()[0]),
            Ok(None) => return (got, None),
            Err(e) => return (got, Some(e)),
        }
    }
}

/// tshark's frame count for `path` and whether it reported an error.
fn tshark(path: &Path) -> (usize, bool) {
    let out = Command::new("tshark")
        .args(["-n", "-T", "fields", "-e", "frame.number", "-r"])
        .arg(path)
        .output()
        .unwrap();
    let frames = String::from_utf8_lossy(&out.stdout).lines().count();
    let stderr = String::from_utf8_lossy(&out.stderr);
    (frames, !out.status.success() && stderr.contains("pcapng"))
}

struct Case {
    name: &'static str,
    file: Vec<u8>,
    /// Packets delivered before the error.
    packets: usize,
    /// Where the error is, and words its message has.
    offset: u64,
    says: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    let good = [shb(1, &[]), idb(&[]), epb(1, &[])].concat();
    let at = good.len() as u64;
    let overrun = option(3, 200, b"abcd");
    let mut cases = vec![
        Case {
            name: "first section of version 2",
            file: [shb(2, &[]), idb(&[]), epb(1, &[])].concat(),
            packets: 0,
            offset: 0,
            says: &["version 2.0", "major version 1"],
        },
        Case {
            name: "second section of version 2",
            file: [good.clone(), shb(2, &[]), idb(&[]), epb(2, &[])].concat(),
            packets: 1,
            offset: at,
            says: &["Section Header Block", "version 2.0"],
        },
        Case {
            name: "first section's options past its end",
            file: [shb(1, &overrun), idb(&[]), epb(1, &[])].concat(),
            packets: 0,
            offset: 0,
            says: &[
                "Section Header Block",
                "option 3",
                "claims 200 bytes",
                "only 4",
            ],
        },
        Case {
            name: "second section's options past its end",
            file: [good.clone(), shb(1, &overrun), idb(&[]), epb(2, &[])].concat(),
            packets: 1,
            offset: at,
            says: &[
                "Section Header Block",
                "at byte 24 of the block",
                "claims 200",
            ],
        },
        Case {
            name: "interface options past the block end",
            file: [good.clone(), idb(&option(2, 64, b"eth0")), epb(2, &[])].concat(),
            packets: 1,
            offset: at,
            says: &["Interface Description Block", "option 2", "claims 64"],
        },
        Case {
            name: "statistics options past the block end",
            file: [good.clone(), isb(&option(4, 9, &[0; 8])), epb(2, &[])].concat(),
            packets: 1,
            offset: at,
            says: &["Interface Statistics Block", "option 4"],
        },
    ];
    // A packet's options: the second packet of an interface goes through the reader's
    // fast path, which must hand it to the checking one.
    let mut file = good.clone();
    file.extend_from_slice(&epb(2, &[]));
    let bad_at = file.len() as u64;
    file.extend_from_slice(&epb(3, &option(1, 100, b"a comment")));
    file.extend_from_slice(&epb(4, &[]));
    cases.push(Case {
        name: "packet options past the block end",
        file,
        packets: 2,
        offset: bad_at,
        says: &["Enhanced Packet Block", "option 1", "claims 100"],
    });
    cases
}

#[test]
fn damaged_sections_and_options_are_errors_after_the_good_packets() {
    let dir = tempfile::tempdir().unwrap();
    let tshark_here = have("tshark");
    for (i, case) in cases().iter().enumerate() {
        let path = dir.path().join(format!("{i}.pcapng"));
        std::fs::write(&path, &case.file).unwrap();
        let (got, err) = read(&path);
        let name = case.name;
        assert_eq!(got.len(), case.packets, "{name}: packets before the error");
        assert!(
            got.iter()
                .enumerate()
                .all(|(k, b)| usize::from(*b) == k + 1),
            "{name}"
        );
        let err = err.unwrap_or_else(|| panic!("{name}: read without an error"));
        assert_eq!(err.offset(), Some(case.offset), "{name}: {err}");
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("byte offset {}", case.offset)),
            "{name}: {msg}"
        );
        for word in case.says {
            assert!(msg.contains(word), "{name}: `{word}` not in: {msg}");
        }
        if let Some(p) = err.packet() {
            assert_eq!(p, case.packets as u64 + 1, "{name}");
        }
        if name.contains("version") {
            assert!(
                matches!(err.kind(), ErrorKind::Unsupported(_)),
                "{name}: {err}"
            );
        } else {
            assert!(
                matches!(err.kind(), ErrorKind::Malformed(_)),
                "{name}: {err}"
            );
        }
        if tshark_here {
            let (frames, refused) = tshark(&path);
            assert!(refused, "{name}: tshark accepted the file");
            assert_eq!(
                frames, case.packets,
                "{name}: tshark's frames before its error"
            );
        }
    }
}

#[test]
fn the_same_files_without_the_damage_read_whole() {
    // The crafted blocks themselves are right: only the damage makes the errors.
    let dir = tempfile::tempdir().unwrap();
    let file = [
        shb(1, &option(3, 4, b"abcd")),
        idb(&option(2, 4, b"eth0")),
        epb(1, &[]),
        epb(2, &option(1, 9, b"a comment")),
        isb(&option(4, 8, &[0; 8])),
        shb(1, &[]),
        idb(&[]),
        epb(3, &[]),
    ]
    .concat();
    let path = dir.path().join("good.pcapng");
    std::fs::write(&path, file).unwrap();
    let (got, err) = read(&path);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(got, [1, 2, 3]);
    if have("tshark") {
        assert_eq!(tshark(&path), (3, false));
    }
}
