//! `IpView` gives the same answers as the `Decoded` accessors of the same names (which
//! the tshark differential checks), on every packet of every corpus file and at every
//! tunnel level, and leaves the same anomalies behind.

use tracekit_decode::Decoded;
use tracekit_testdata::{corpus, manifest};

fn check(d: &Decoded<'_>, file: &str, n: u64, level: u8) {
    let fresh = d.clone();
    let at = format!("{file} packet {n} level {level}");
    let Some(v) = d.ip_view() else {
        assert_eq!(fresh.ip_version(), None, "{at}");
        return;
    };
    assert_eq!(Some(v.version()), fresh.ip_version(), "{at}");
    let bits = |a: std::net::IpAddr| match a {
        std::net::IpAddr::V4(a) => u128::from(u32::from(a)),
        std::net::IpAddr::V6(a) => u128::from(a),
    };
    let addrs = fresh.src_addr().zip(fresh.dst_addr());
    assert_eq!(
        v.addr_bits(),
        addrs.map(|(s, d)| (bits(s), bits(d))),
        "{at}"
    );
    assert_eq!(Some(v.protocol()), fresh.ip_protocol(), "{at}");
    assert_eq!(v.fragment(), fresh.fragment(), "{at}");
    assert_eq!(v.ports(), fresh.src_port().zip(fresh.dst_port()), "{at}");
    assert_eq!(
        v.tcp()
            .map(|t| (t.seq_number(), t.flag_byte(), t.header_len())),
        fresh
            .tcp()
            .map(|t| (t.seq_number(), t.flag_byte(), t.header_len())),
        "{at}"
    );
    assert_eq!(v.payload(), fresh.payload(), "{at}");
    assert_eq!(v.payload_wire_len(), fresh.payload_wire_len(), "{at}");
    assert_eq!(
        v.payload_with_wire_len(),
        (fresh.payload_wire_len(), fresh.payload()),
        "{at}"
    );
    assert_eq!(d.anomalies(), fresh.anomalies(), "{at}");
}

#[test]
fn ip_view_answers_as_the_accessors_do_on_the_corpus() {
    let mut packets = 0u64;
    let mut with_ports = 0u64;
    for entry in manifest() {
        let path = corpus(&entry.file);
        let Ok(mut src) = tracekit::open(path.to_str().unwrap()) else {
            continue;
        };
        let mut n = 0u64;
        while let Ok(Some(p)) = src.next_packet() {
            n += 1;
            let mut d = Some(Decoded::new(&p));
            let mut level = 0u8;
            while let Some(cur) = d {
                check(&cur, &entry.file, n, level);
                with_ports += u64::from(cur.src_port().is_some());
                d = cur.inner();
                level += 1;
            }
            packets += 1;
        }
    }
    // The corpus has tens of thousands of packets, most with ports.
    assert!(
        packets > 50_000 && with_ports > 30_000,
        "{packets} {with_ports}"
    );
}
