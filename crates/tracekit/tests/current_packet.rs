//! `Source::current_packet` lends again exactly the packet `next_packet` returned, for
//! every reader, with and without a filter, and nothing before the first packet or
//! after the end.

use tracekit::Packet;
use tracekit_testdata::corpus_uri;

fn same(a: &Packet<'_>, b: &Packet<'_>) -> bool {
    a.data() == b.data()
        && a.ts() == b.ts()
        && a.wire_len() == b.wire_len()
        && a.meta().interface == b.meta().interface
        && a.meta().direction == b.meta().direction
        && a.options().map(|o| o.iter().collect::<Vec<_>>())
            == b.options().map(|o| o.iter().collect::<Vec<_>>())
}

/// `tcpdump -ddd ip` on Ethernet (a fixed program, so that this test needs no libpcap).
const IP: &str = "4\n40 0 0 12\n21 0 1 2048\n6 0 0 262144\n6 0 0 0\n";

#[test]
fn current_packet_is_the_packet_just_read() {
    for (file, filter) in [
        ("libtrace__100_packets.pcap", None),
        ("libtrace__100_packets.erf", None),
        ("libtrace__100_packets.pcapng", None),
        ("zeek__pcapng-multi-interface.pcapng", None),
        ("ndpi__sites.pcapng", Some(IP)),
        ("libtrace__100_packets.erf.gz", None),
        ("swapbe_nsec__libtrace__100_packetsns.pcap", Some(IP)),
        ("libtrace__vlan.pcap.gz", None),
        ("ndpi__1kxun.pcap", Some(IP)),
    ] {
        let uri = corpus_uri(file);
        let mut source = tracekit::open(&uri).unwrap();
        if let Some(f) = filter {
            source = source.with_filter_program(tracekit::Filter::from_ddd(f).unwrap());
        }
        assert!(
            source.current_packet().is_none(),
            "{file}: before the first packet"
        );
        let mut n = 0;
        while let Some(p) = source.next_packet().unwrap() {
            let copy = p.to_owned();
            n += 1;
            let again = source.current_packet().expect("a current packet");
            assert!(same(&copy.as_packet(), &again), "{file}: packet {n}");
        }
        assert!(n > 0, "{file}");
        assert!(source.current_packet().is_none(), "{file}: after the end");
    }
}
