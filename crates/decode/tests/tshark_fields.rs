//! Differential test: `tracekit_decode::fields` against `tshark -T fields`, packet by
//! packet, for every corpus file tshark can read.
//!
//! Every disagreement is either fixed or listed in `tests/tshark_allow.txt` as
//! `file field count reason`, with the exact number of packets that differ. The list can
//! only shrink: a listed count that is now lower fails too, asking for the line to be
//! updated. Run with `TRACEKIT_TSHARK_SHOW=1` to print the disagreements.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use tracekit::flow::QuicConnections;
use tracekit_decode::Decoded;
use tracekit_decode::fields::{Field, write_field_with};
use tracekit_testdata::{corpus, have, manifest};

/// The fields compared, and how tshark's value is derived for each. (`tls.handshake.ja4`
/// is not among them: tshark 4.0 does not have it; `tests/ja4.rs` compares it with
/// FoxIO's reference implementation instead.)
const FIELDS: &[Field] = &[
    Field::FrameNumber,
    Field::FrameTimeEpoch,
    Field::FrameLen,
    Field::FrameCapLen,
    Field::FrameInterfaceId,
    Field::IpSrc,
    Field::IpDst,
    Field::IpProto,
    Field::TcpSrcport,
    Field::TcpDstport,
    Field::UdpSrcport,
    Field::UdpDstport,
    Field::IpFragOffset,
    Field::IpFlagsMf,
    Field::VlanId,
    Field::Ieee8021adId,
    Field::IslVlanId,
    Field::DnsQryName,
    Field::DnsRcode,
    Field::DnsA,
    Field::DnsAaaa,
    Field::DnsCname,
    Field::DnsRespTtl,
    Field::TlsVersion,
    Field::TlsSni,
    Field::TlsAlpn,
    Field::TlsJa3Full,
    Field::HttpMethod,
    Field::HttpUri,
    Field::HttpHost,
    Field::HttpUserAgent,
    Field::HttpResponseCode,
    Field::NtpMode,
    Field::NtpStratum,
    Field::DhcpMac,
    Field::DhcpHostname,
    Field::DhcpType,
    Field::GtpTeid,
    Field::CapwapMessageType,
    Field::LwappControlType,
    Field::NdNsTarget,
    Field::NdNaTarget,
    Field::QuicVersion,
    Field::QuicDcid,
];

const TSHARK_FIELDS: &[&str] = &[
    "frame.encap_type",
    "frame.protocols",
    "frame.number",
    "frame.time_epoch",
    "frame.len",
    "frame.cap_len",
    "frame.interface_id",
    "ip.src",
    "ip.dst",
    "ipv6.src",
    "ipv6.dst",
    "ip.proto",
    "ipv6.nxt",
    "ipv6.hopopts.nxt",
    "ipv6.routing.nxt",
    "ipv6.fraghdr.nxt",
    "ipv6.dstopts.nxt",
    "ah.next_header",
    "tcp.srcport",
    "tcp.dstport",
    "udp.srcport",
    "udp.dstport",
    "ip.frag_offset",
    "ip.flags.mf",
    "vlan.id",
    "ieee8021ad.id",
    "isl.vlan_id",
    "dns.qry.name",
    "dns.flags.rcode",
    "dns.a",
    "dns.aaaa",
    "dns.cname",
    "dns.resp.ttl",
    "tls.handshake.version",
    "tls.handshake.extensions_server_name",
    "tls.handshake.extensions_alpn_str",
    "tls.handshake.ja3_full",
    "http.request.method",
    "http.request.uri",
    "http.host",
    "http.user_agent",
    "http.response.code",
    "ntp.flags.mode",
    "ntp.stratum",
    "dhcp.hw.mac_addr",
    "dhcp.option.hostname",
    "dhcp.option.dhcp",
    "gtp.teid",
    "capwap.control.header.message_type",
    "lwapp.control.type",
    "icmpv6.nd.ns.target_address",
    "icmpv6.nd.na.target_address",
    "quic.version",
    "quic.dcid",
];

fn tshark_rows(path: &Path) -> Option<Vec<BTreeMap<&'static str, Vec<String>>>> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"]).arg(path);
    cmd.args(["-o", "ip.defragment:FALSE", "-o", "ipv6.defragment:FALSE"]);
    cmd.args(["-o", "tcp.desegment_tcp_streams:FALSE"]);
    cmd.args([
        "-T",
        "fields",
        "-E",
        "separator=\u{1}",
        "-E",
        "aggregator=\u{2}",
        "-E",
        "occurrence=a",
    ]);
    for f in TSHARK_FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    if out.stdout.is_empty() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let rows = text
        .lines()
        .map(|line| {
            TSHARK_FIELDS
                .iter()
                .zip(line.split('\u{1}'))
                .map(|(name, v)| {
                    let vals = if v.is_empty() {
                        Vec::new()
                    } else {
                        v.split('\u{2}').map(str::to_string).collect()
                    };
                    (*name, vals)
                })
                .collect::<BTreeMap<_, _>>()
        })
        .filter(|r| r.get("frame.encap_type").is_some_and(|v| !v.is_empty()))
        .enumerate()
        .map(|(i, mut r)| {
            r.insert("frame.number", vec![(i + 1).to_string()]);
            r
        })
        .collect();
    Some(rows)
}

/// What tracekit should print for `field`, from tshark's values.
fn expected(row: &BTreeMap<&'static str, Vec<String>>, field: Field) -> String {
    let get = |k: &str| row.get(k).cloned().unwrap_or_default();
    let first = |k: &str| get(k).into_iter().next().unwrap_or_default();
    let protocols = first("frame.protocols");
    let outer_ip = protocols
        .split(':')
        .find(|p| *p == "ip" || *p == "ipv6")
        .unwrap_or("");
    match field {
        // tshark numbers pcapng custom blocks as frames too: the rows are renumbered
        // after those are left out (see `tshark_rows`).
        Field::FrameNumber => first("frame.number"),
        // Simple packet blocks carry no time stamp: tshark and tracekit print none.
        Field::FrameTimeEpoch => first("frame.time_epoch"),
        Field::FrameLen => first("frame.len"),
        Field::FrameCapLen => first("frame.cap_len"),
        // tshark shows none where the format has no interfaces (pcap) and for pcapng
        // Simple Packet Blocks; tracekit's is 0 there (interface 0, as pcapng says).
        Field::FrameInterfaceId => Some(first("frame.interface_id"))
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "0".to_string()),
        Field::IpSrc if outer_ip == "ip" => first("ip.src"),
        Field::IpSrc if outer_ip == "ipv6" => first("ipv6.src"),
        Field::IpDst if outer_ip == "ip" => first("ip.dst"),
        Field::IpDst if outer_ip == "ipv6" => first("ipv6.dst"),
        Field::IpProto if outer_ip == "ip" => first("ip.proto"),
        Field::IpProto if outer_ip == "ipv6" => {
            // Follow the outermost header's chain through the extension-header fields.
            let mut lists: BTreeMap<&str, std::collections::VecDeque<String>> = [
                ("0", "ipv6.hopopts.nxt"),
                ("43", "ipv6.routing.nxt"),
                ("44", "ipv6.fraghdr.nxt"),
                ("60", "ipv6.dstopts.nxt"),
                ("51", "ah.next_header"),
            ]
            .into_iter()
            .map(|(k, f)| (k, get(f).into()))
            .collect();
            let mut nh = first("ipv6.nxt");
            for _ in 0..16 {
                match lists.get_mut(nh.as_str()).and_then(|l| l.pop_front()) {
                    Some(next) => nh = next,
                    None => break,
                }
            }
            nh
        }
        Field::TcpSrcport => first("tcp.srcport"),
        Field::TcpDstport => first("tcp.dstport"),
        Field::UdpSrcport => first("udp.srcport"),
        Field::UdpDstport => first("udp.dstport"),
        Field::IpFragOffset if outer_ip == "ip" => first("ip.frag_offset"),
        Field::IpFlagsMf if outer_ip == "ip" => first("ip.flags.mf"),
        Field::VlanId => get("vlan.id").join(","),
        Field::Ieee8021adId => get("ieee8021ad.id").join(","),
        Field::IslVlanId => first("isl.vlan_id"),
        Field::DnsQryName => get("dns.qry.name").join(","),
        Field::DnsRcode => first("dns.flags.rcode"),
        Field::DnsA => get("dns.a").join(","),
        Field::DnsAaaa => get("dns.aaaa").join(","),
        Field::DnsCname => get("dns.cname").join(","),
        Field::DnsRespTtl => get("dns.resp.ttl").join(","),
        Field::TlsVersion => get("tls.handshake.version").join(","),
        Field::TlsSni => first("tls.handshake.extensions_server_name"),
        Field::TlsAlpn => get("tls.handshake.extensions_alpn_str").join(","),
        Field::TlsJa3Full => first("tls.handshake.ja3_full"),
        Field::HttpMethod => first("http.request.method"),
        Field::HttpUri => first("http.request.uri"),
        Field::HttpHost => first("http.host"),
        Field::HttpUserAgent => first("http.user_agent"),
        Field::HttpResponseCode => first("http.response.code"),
        Field::NtpMode => first("ntp.flags.mode"),
        Field::NtpStratum => first("ntp.stratum"),
        Field::DhcpMac => first("dhcp.hw.mac_addr"),
        Field::DhcpHostname => first("dhcp.option.hostname"),
        Field::DhcpType => first("dhcp.option.dhcp"),
        Field::GtpTeid => first("gtp.teid"),
        Field::CapwapMessageType => first("capwap.control.header.message_type"),
        Field::LwappControlType => first("lwapp.control.type"),
        Field::NdNsTarget => first("icmpv6.nd.ns.target_address"),
        Field::NdNaTarget => first("icmpv6.nd.na.target_address"),
        Field::QuicVersion => get("quic.version").join(","),
        Field::QuicDcid => get("quic.dcid").join(","),
        _ => String::new(),
    }
}

/// tracekit's values: one row per packet, one string per field of [`FIELDS`]. QUIC
/// connections are followed, as `tracekit fields --reassemble` does (tshark follows
/// them too), so that short-header packets have their DCID.
fn tracekit_rows(path: &Path) -> Vec<Vec<String>> {
    let Ok(mut src) = tracekit::open(path.to_str().unwrap()) else {
        return Vec::new();
    };
    let mut quic = QuicConnections::new(QuicConnections::DEFAULT_MAX);
    let mut rows = Vec::new();
    let mut n = 0;
    while let Ok(Some(p)) = src.next_packet() {
        n += 1;
        let d = Decoded::new(&p);
        quic.observe(&d);
        rows.push(
            FIELDS
                .iter()
                .map(|f| {
                    let mut s = String::new();
                    write_field_with(&mut s, *f, n, &p, &d, &quic);
                    s
                })
                .collect(),
        );
    }
    rows
}

type Key = (String, String);

fn allow_list() -> BTreeMap<Key, usize> {
    let text = include_str!("tshark_allow.txt");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut it = l.split_whitespace();
            let file = it.next().unwrap().to_string();
            let field = it.next().unwrap().to_string();
            let count = it.next().unwrap().parse().unwrap();
            assert!(it.next().is_some(), "allow-list line without a reason: {l}");
            ((file, field), count)
        })
        .collect()
}

fn compare(name: &str) -> (BTreeMap<Key, usize>, Vec<String>) {
    let path = corpus(name);
    let mut diffs = BTreeMap::new();
    let mut examples = Vec::new();
    let Some(theirs) = tshark_rows(&path) else {
        return (diffs, examples);
    };
    let ours = tracekit_rows(&path);
    if ours.len() != theirs.len() {
        diffs.insert(
            (name.to_string(), "packet-count".to_string()),
            ours.len().abs_diff(theirs.len()),
        );
        examples.push(format!(
            "{name}: tracekit {} packets, tshark {}",
            ours.len(),
            theirs.len()
        ));
    }
    for (row, t) in ours.iter().zip(&theirs) {
        for (i, field) in FIELDS.iter().enumerate() {
            let want = expected(t, *field);
            if row[i] != want {
                *diffs
                    .entry((name.to_string(), field.name().to_string()))
                    .or_insert(0) += 1;
                if examples.len() < 2000 {
                    examples.push(format!(
                        "{name} #{} {}: tracekit {:?} tshark {:?} ({})",
                        row[0],
                        field.name(),
                        row[i],
                        want,
                        t["frame.protocols"].join(",")
                    ));
                }
            }
        }
    }
    (diffs, examples)
}

#[test]
fn fields_agree_with_tshark_on_the_corpus() {
    if !have("tshark") {
        return;
    }
    let names: Vec<String> = manifest()
        .into_iter()
        .map(|e| e.file)
        .filter(|f| !f.ends_with(".bz2") && !f.ends_with(".xz"))
        .filter(|f| corpus(f).exists())
        .collect();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let workers = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .min(4);
        for w in 0..workers {
            let tx = tx.clone();
            let names = &names;
            s.spawn(move || {
                for name in names.iter().skip(w).step_by(workers) {
                    tx.send(compare(name)).unwrap();
                }
            });
        }
    });
    drop(tx);
    let mut diffs = BTreeMap::new();
    let mut examples = Vec::new();
    for (d, e) in rx {
        diffs.extend(d);
        examples.extend(e);
    }
    if std::env::var_os("TRACEKIT_TSHARK_SHOW").is_some() {
        examples.sort();
        for e in &examples {
            eprintln!("{e}");
        }
    }
    let allowed = allow_list();
    let mut problems = Vec::new();
    for (key, n) in &diffs {
        match allowed.get(key) {
            None => problems.push(format!(
                "{} {}: {n} packets disagree (not allow-listed)",
                key.0, key.1
            )),
            Some(a) if a != n => problems.push(format!(
                "{} {}: {n} packets disagree, allow-list says {a}",
                key.0, key.1
            )),
            Some(_) => {}
        }
    }
    for (key, a) in &allowed {
        if !diffs.contains_key(key) {
            problems.push(format!(
                "{} {}: allow-listed ({a}) but now agrees: remove the line",
                key.0, key.1
            ));
        }
    }
    let compared_files = names.len();
    assert!(compared_files > 100, "only {compared_files} corpus files");
    assert!(
        problems.is_empty(),
        "{} problems:\n{}\nexamples:\n{}",
        problems.len(),
        problems.join("\n"),
        examples
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
