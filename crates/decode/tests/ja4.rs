//! JA4 against an independent implementation on every TCP ClientHello of the corpus,
//! and against the worked example of FoxIO's JA4 specification.
//!
//! The implementation: `ja4plus` (PyPI; `scripts/test` installs it in the test venv and
//! names it in `$TRACEKIT_JA4PLUS`), or FoxIO's own `python/ja4.py` (github.com/FoxIO-LLC/ja4,
//! which reads the trace through tshark) when `$TRACEKIT_JA4_PY` names it. Without
//! either the comparison is skipped with a message, unless `TRACEKIT_REQUIRE_ORACLES=1`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use tracekit_decode::Decoded;
use tracekit_decode::tls;
use tracekit_testdata::{corpus, have, manifest, oracles_required};

/// A ClientHello with the values of the JA4 specification's example
/// (`technical_details/JA4.md`): 15 cipher suites, 16 extensions, ALPN h2, 8 signature
/// algorithms, plus GREASE values that must not count.
fn spec_example() -> Vec<u8> {
    let suites: [u16; 16] = [
        0x0a0a, 0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013,
        0xc014, 0x009c, 0x009d, 0x002f, 0x0035,
    ];
    let order: [u16; 18] = [
        0x2a2a, 0x001b, 0x0000, 0x0033, 0x0010, 0x4469, 0x0017, 0x002d, 0x000d, 0x0005, 0x0023,
        0x0012, 0x002b, 0xff01, 0x000b, 0x000a, 0x0015, 0x3a3a,
    ];
    let sigs: [u16; 8] = [
        0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601,
    ];
    let mut exts = Vec::new();
    for t in order {
        let data: Vec<u8> = match t {
            0x0000 => {
                let name = b"example.org";
                let mut d = ((name.len() + 3) as u16).to_be_bytes().to_vec();
                d.push(0);
                d.extend((name.len() as u16).to_be_bytes());
                d.extend(name);
                d
            }
            0x0010 => vec![0, 3, 2, b'h', b'2'],
            0x000d => {
                let mut d = ((sigs.len() * 2) as u16).to_be_bytes().to_vec();
                sigs.iter().for_each(|s| d.extend(s.to_be_bytes()));
                d
            }
            // supported_versions: GREASE, TLS 1.3, TLS 1.2.
            0x002b => vec![6, 0x7a, 0x7a, 3, 4, 3, 3],
            _ => Vec::new(),
        };
        exts.extend(t.to_be_bytes());
        exts.extend((data.len() as u16).to_be_bytes());
        exts.extend(data);
    }
    let mut body = vec![3, 3];
    body.extend([7; 32]);
    body.push(0);
    body.extend(((suites.len() * 2) as u16).to_be_bytes());
    suites.iter().for_each(|s| body.extend(s.to_be_bytes()));
    body.extend([1, 0]);
    body.extend((exts.len() as u16).to_be_bytes());
    body.extend(exts);
    let mut msg = vec![1, 0];
    msg.extend((body.len() as u16).to_be_bytes());
    msg.extend(body);
    let mut record = vec![22, 3, 1];
    record.extend((msg.len() as u16).to_be_bytes());
    record.extend(msg);
    record
}

#[test]
fn the_specifications_example() {
    let record = spec_example();
    let hello = tls::hellos(&record).next().unwrap();
    let mut s = String::new();
    hello.ja4(&mut s);
    // The fingerprint and raw form FoxIO's JA4.md gives for these values.
    assert_eq!(s, "t13d1516h2_8daaf6152771_e5627efa2ab1");
    s.clear();
    hello.ja4_raw(&mut s);
    assert_eq!(
        s,
        "t13d1516h2_002f,0035,009c,009d,1301,1302,1303,c013,c014,c02b,c02c,c02f,c030,cca8,cca9_\
         0005,000a,000b,000d,0012,0015,0017,001b,0023,002b,002d,0033,4469,ff01_\
         0403,0804,0401,0503,0805,0501,0806,0601"
    );
    assert_eq!(&hello.ja4_a().unwrap(), b"t13d1516h2");
}

/// An independent JA4 implementation to compare with.
enum Reference {
    /// FoxIO's own `python/ja4.py` (it runs tshark), where `$TRACEKIT_JA4_PY` names it.
    FoxIo(PathBuf),
    /// The `ja4plus` command (PyPI `ja4plus`, an implementation of FoxIO's specification
    /// on scapy), where `$TRACEKIT_JA4PLUS` names it: `scripts/test` installs it in the
    /// test venv.
    Ja4plus(PathBuf),
}

impl Reference {
    fn name(&self) -> &'static str {
        match self {
            Reference::FoxIo(_) => "FoxIO's ja4.py",
            Reference::Ja4plus(_) => "ja4plus",
        }
    }
}

/// The reference implementation, if one can run.
fn reference() -> Option<Reference> {
    let var = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.exists())
    };
    if let Some(p) = var("TRACEKIT_JA4_PY")
        && have("tshark")
        && have("python3")
    {
        return Some(Reference::FoxIo(p));
    }
    if let Some(p) = var("TRACEKIT_JA4PLUS") {
        return Some(Reference::Ja4plus(p));
    }
    assert!(
        !oracles_required(),
        "a JA4 reference is required (TRACEKIT_REQUIRE_ORACLES=1): set TRACEKIT_JA4PLUS \
         (pip install ja4plus; scripts/test does) or TRACEKIT_JA4_PY (FoxIO's ja4.py)"
    );
    eprintln!("neither TRACEKIT_JA4PLUS nor TRACEKIT_JA4_PY set: skipping this comparison");
    None
}

/// (client address, client port, server address, server port).
type Conn = (String, u16, String, u16);

/// Our JA4 of every TCP ClientHello in `path` by connection, and the packets that carry
/// them by link type (whole, as captured).
type Found = (
    BTreeMap<Conn, Vec<String>>,
    BTreeMap<u32, Vec<(Vec<u8>, usize)>>,
);

fn ours(path: &Path) -> Found {
    let mut hellos: BTreeMap<Conn, Vec<String>> = BTreeMap::new();
    let mut packets: BTreeMap<u32, Vec<(Vec<u8>, usize)>> = BTreeMap::new();
    let Ok(mut src) = tracekit::open(path.to_str().unwrap()) else {
        return (hellos, packets);
    };
    while let Ok(Some(p)) = src.next_packet() {
        let d = Decoded::new(&p);
        let Some(payload) = d.tcp().and(d.payload()) else {
            continue;
        };
        if !tls::is_handshake(payload) {
            continue;
        }
        let segment = d.payload_wire_len().map_or(payload.len(), |n| n as usize);
        let mut any = false;
        for h in tls::hellos_in(payload, segment).filter(|h| h.is_client()) {
            let mut s = String::new();
            h.ja4(&mut s);
            let conn = (
                d.src_addr().unwrap().to_string(),
                d.src_port().unwrap(),
                d.dst_addr().unwrap().to_string(),
                d.dst_port().unwrap(),
            );
            hellos.entry(conn).or_default().push(s);
            any = true;
        }
        if any {
            let f = p.data().to_vec();
            let n = f.len();
            packets.entry(p.link_type().0).or_default().push((f, n));
        }
    }
    (hellos, packets)
}

/// The reference's JA4 values of TLS-over-TCP ClientHellos in the pcap `path`, by
/// connection.
fn theirs(reference: &Reference, path: &Path) -> BTreeMap<Conn, Vec<String>> {
    let out = match reference {
        Reference::FoxIo(ja4_py) => Command::new("python3")
            .arg(ja4_py)
            .arg(path)
            .args(["-J", "--ja4"])
            .current_dir(ja4_py.parent().unwrap())
            .output(),
        Reference::Ja4plus(bin) => Command::new(bin)
            .args(["--format", "json", "--types", "ja4", "analyze"])
            .arg(path)
            .output(),
    }
    .expect("the JA4 reference runs");
    assert!(
        out.status.success(),
        "{} failed on {}: {}",
        reference.name(),
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut found: BTreeMap<Conn, Vec<String>> = BTreeMap::new();
    for v in serde_json::Deserializer::from_str(&text).into_iter::<serde_json::Value>() {
        let v = v.expect("the reference prints JSON objects");
        let text = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
        match reference {
            Reference::FoxIo(_) => {
                let port = |k: &str| text(k).parse::<u16>().unwrap_or(0);
                let conn = (text("src"), port("srcport"), text("dst"), port("dstport"));
                for i in 1.. {
                    let Some(ja4) = v.get(format!("JA4.{i}")).and_then(|x| x.as_str()) else {
                        break;
                    };
                    found.entry(conn.clone()).or_default().push(ja4.to_string());
                }
            }
            Reference::Ja4plus(_) => {
                // TLS over TCP only ("t"): QUIC Initials ("q") need decryption, which
                // tracekit does not do.
                let ja4 = text("fingerprint");
                if text("type") != "ja4" || !ja4.starts_with('t') {
                    continue;
                }
                let port = |k: &str| v.get(k).and_then(|x| x.as_u64()).unwrap_or(0) as u16;
                let conn = (
                    text("src_ip"),
                    port("src_port"),
                    text("dst_ip"),
                    port("dst_port"),
                );
                found.entry(conn).or_default().push(ja4);
            }
        }
    }
    found
}

/// Connections whose ClientHello the reference does not see. FoxIO's ja4.py reads
/// through tshark, which reads TLS on its registered ports only, tracekit on any port by
/// the record header (the same packets as in `tshark_allow.txt`); ja4plus, like
/// tracekit, on any port.
fn unseen_for(reference: &Reference) -> &'static [&'static str] {
    match reference {
        Reference::FoxIo(_) => &["ndpi__KakaoTalk_talk.pcap 10.24.82.188:32968"],
        Reference::Ja4plus(_) => &[],
    }
}

/// Every TCP ClientHello tracekit finds in the corpus goes to the reference in a pcap of
/// the packets that carry them (so that the reference reads exactly those packets;
/// ja4.py's JA4X code fails on some of the corpus's certificates), and the values must
/// agree.
/// (ClientHellos split over TCP segments are not compared: tracekit does not join
/// them.)
#[test]
fn agrees_with_a_reference_implementation_on_the_corpus() {
    let Some(reference) = reference() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut compared = 0;
    let mut files = BTreeSet::new();
    let mut unseen = Vec::new();
    for entry in manifest() {
        let path = corpus(&entry.file);
        if !path.exists() || entry.file.ends_with(".bz2") || entry.file.ends_with(".xz") {
            continue;
        }
        let (ours, packets) = ours(&path);
        let mut theirs: BTreeMap<Conn, Vec<String>> = BTreeMap::new();
        for (link, frames) in &packets {
            let pcap = dir.path().join(format!("{}.{link}.pcap", entry.file));
            tracekit_testdata::write_pcap(&pcap, *link, frames);
            for (conn, v) in self::theirs(&reference, &pcap) {
                theirs.entry(conn).or_default().extend(v);
            }
        }
        for (conn, values) in &ours {
            let Some(want) = theirs.get(conn) else {
                unseen.push(format!("{} {}:{}", entry.file, conn.0, conn.1));
                continue;
            };
            assert_eq!(values, want, "{} {conn:?}", entry.file);
            compared += values.len();
        }
        if !ours.is_empty() {
            files.insert(entry.file);
        }
    }
    eprintln!(
        "{compared} ClientHellos in {} files agree with {}",
        files.len(),
        reference.name()
    );
    assert_eq!(
        unseen,
        unseen_for(&reference),
        "connections whose ClientHello the reference does not see"
    );
    assert!(compared >= 59, "only {compared} ClientHellos compared");
    assert!(files.contains("ndpi__sites.pcapng"));
}
