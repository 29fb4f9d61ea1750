//! A per-layer, human-readable description of a decoded packet (what `tracepktdump` and
//! `tcpdump -v` users read), used by `tracekit dump`.

use std::fmt::{self, Write};

use crate::dns::{self, RData};
use crate::{Decoded, Layer3, LinkKind, TcpOption, Transport, Tunnel, tcp_flags};

fn mac(m: [u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

/// Writes one line per layer of `d` (and of the packets inside its tunnels), each
/// starting with `indent`.
pub fn write_layers(out: &mut String, d: &Decoded<'_>, indent: &str) -> fmt::Result {
    let link = d.link();
    if let Some(rt) = d.radiotap() {
        write!(out, "{indent}RadioTap  len {}", rt.len)?;
        if let Some(v) = rt.tsft {
            write!(out, " tsft {v}us")?;
        }
        if let Some(v) = rt.rate {
            write!(
                out,
                " rate {}.{}Mb/s",
                v / 2,
                if v % 2 == 1 { 5 } else { 0 }
            )?;
        }
        if let Some(v) = rt.channel_freq {
            write!(out, " {v}MHz")?;
        }
        if let Some(v) = rt.signal_dbm {
            write!(out, " signal {v}dBm")?;
        }
        if let Some(v) = rt.noise_dbm {
            write!(out, " noise {v}dBm")?;
        }
        if let Some(v) = rt.antenna {
            write!(out, " antenna {v}")?;
        }
        out.push('\n');
    }
    if let Some(h) = d.isl() {
        writeln!(
            out,
            "{indent}ISL       from {} vlan {} type {}",
            mac(h.src()),
            h.vlan_id(),
            h.frame_type()
        )?;
    }
    if let Some(subframes) = d.amsdu() {
        writeln!(
            out,
            "{indent}A-MSDU    {} subframes (the layers below are the first's)",
            subframes.count()
        )?;
    }
    match link.kind {
        LinkKind::Ethernet => {
            if let Some(e) = d.ethernet() {
                let t = e.ethertype();
                let kind = if t <= 1500 {
                    format!("802.3 length {t}")
                } else {
                    format!("type 0x{t:04x}")
                };
                writeln!(
                    out,
                    "{indent}Ethernet  {} > {} {kind}",
                    mac(e.src()),
                    mac(e.dst())
                )?;
            }
        }
        LinkKind::Unknown => writeln!(out, "{indent}Link      {:?} (not decoded)", d.framing())?,
        LinkKind::Ethertype => {}
        k => writeln!(out, "{indent}Link      {k:?}, {} bytes", link.bytes.len())?,
    }
    for v in d.vlans() {
        let name = if v.tpid == 0x8100 {
            "802.1Q"
        } else {
            "802.1ad"
        };
        writeln!(
            out,
            "{indent}{name:<9} vlan {} pcp {} dei {}",
            v.id,
            v.pcp,
            u8::from(v.dei)
        )?;
    }
    for l in d.mpls_labels() {
        writeln!(
            out,
            "{indent}MPLS      label {} tc {} ttl {}{}",
            l.label,
            l.tc,
            l.ttl,
            if l.bottom { " [bottom]" } else { "" }
        )?;
    }
    match d.layer3() {
        Some(Layer3::Ipv4(h)) => {
            write!(
                out,
                "{indent}IPv4      {} > {} proto {} ttl {} id 0x{:04x} len {} hlen {}",
                h.src(),
                h.dst(),
                h.protocol(),
                h.ttl(),
                h.ident(),
                h.total_len(),
                h.header_len()
            )?;
            if h.dont_frag() {
                out.push_str(" [DF]");
            }
            if h.more_frags() || h.frag_offset() != 0 {
                write!(
                    out,
                    " frag offset {}{}",
                    h.frag_offset(),
                    if h.more_frags() { " [MF]" } else { "" }
                )?;
            }
            out.push('\n');
        }
        Some(Layer3::Ipv6(h)) => {
            writeln!(
                out,
                "{indent}IPv6      {} > {} next {} hlim {} plen {} flow 0x{:05x}",
                h.src(),
                h.dst(),
                h.next_header(),
                h.hop_limit(),
                h.payload_len(),
                h.flow_label()
            )?;
            for e in h.extensions() {
                let name = match e.kind {
                    0 => "hop-by-hop",
                    43 => "routing",
                    44 => "fragment",
                    51 => "AH",
                    _ => "dest-opts",
                };
                writeln!(
                    out,
                    "{indent}  ext     {name} ({} bytes) next {}",
                    e.bytes.len(),
                    e.next
                )?;
            }
            if let Some(f) = d.fragment() {
                writeln!(
                    out,
                    "{indent}  frag    id 0x{:08x} offset {}{}",
                    f.id,
                    f.offset,
                    if f.more { " [M]" } else { "" }
                )?;
            }
        }
        Some(Layer3::Arp(b)) => writeln!(out, "{indent}ARP       {} bytes", b.len())?,
        Some(Layer3::Other { ethertype, bytes }) => writeln!(
            out,
            "{indent}Network   ethertype 0x{ethertype:04x}, {} bytes (not decoded)",
            bytes.len()
        )?,
        None => {}
    }
    if d.fragment().is_some_and(|f| !f.is_first()) {
        writeln!(out, "{indent}(non-first fragment: no transport header)")?;
    }
    match d.transport() {
        Some(Transport::Tcp(h)) => {
            write!(
                out,
                "{indent}TCP       {} > {} [",
                h.src_port(),
                h.dst_port()
            )?;
            let names = [
                (tcp_flags::SYN, "S"),
                (tcp_flags::FIN, "F"),
                (tcp_flags::RST, "R"),
                (tcp_flags::PSH, "P"),
                (tcp_flags::ACK, "."),
                (tcp_flags::URG, "U"),
                (tcp_flags::ECE, "E"),
                (tcp_flags::CWR, "W"),
            ];
            for (bit, n) in names {
                if h.flags() & bit != 0 {
                    out.push_str(n);
                }
            }
            write!(
                out,
                "] seq {} ack {} win {} hlen {}",
                h.seq_number(),
                h.ack_number(),
                h.window(),
                h.header_len()
            )?;
            let opts: Vec<String> = h
                .options()
                .map(|o| match o {
                    TcpOption::Mss(v) => format!("mss {v}"),
                    TcpOption::WindowScale(v) => format!("wscale {v}"),
                    TcpOption::SackPermitted => "sackOK".to_string(),
                    TcpOption::Sack(b) => {
                        let blocks: Vec<String> =
                            b.iter().map(|(l, r)| format!("{l}:{r}")).collect();
                        format!("sack {}", blocks.join(" "))
                    }
                    TcpOption::Timestamps { value, echo } => format!("TS val {value} ecr {echo}"),
                    TcpOption::Unknown { kind, data } => {
                        format!("opt-{kind} ({} bytes)", data.len())
                    }
                })
                .collect();
            if !opts.is_empty() {
                write!(out, " <{}>", opts.join(","))?;
            }
            out.push('\n');
        }
        Some(Transport::Udp(h)) => writeln!(
            out,
            "{indent}UDP       {} > {} len {}",
            h.src_port(),
            h.dst_port(),
            h.length()
        )?,
        Some(Transport::Icmp(h)) => writeln!(
            out,
            "{indent}ICMP      type {} code {}",
            h.icmp_type(),
            h.code()
        )?,
        Some(Transport::Icmpv6(h)) => writeln!(
            out,
            "{indent}ICMPv6    type {} code {}",
            h.icmp_type(),
            h.code()
        )?,
        Some(Transport::Sctp(h)) => {
            let chunks = h.chunks().count();
            writeln!(
                out,
                "{indent}SCTP      {} > {} vtag 0x{:08x} {chunks} chunks",
                h.src_port(),
                h.dst_port(),
                h.verification_tag()
            )?
        }
        Some(Transport::Gre(h)) => {
            write!(
                out,
                "{indent}GRE       v{} protocol 0x{:04x}",
                h.version(),
                h.protocol()
            )?;
            if let Some(k) = h.key() {
                write!(out, " key 0x{k:08x}")?;
            }
            if let Some(s) = h.sequence() {
                write!(out, " seq {s}")?;
            }
            let routes = h.source_routes().count();
            if routes > 0 {
                write!(out, " {routes} source routes")?;
            }
            out.push('\n');
        }
        Some(Transport::Truncated { protocol, bytes }) => writeln!(
            out,
            "{indent}Transport protocol {protocol}, header cut after {} bytes",
            bytes.len()
        )?,
        Some(Transport::Other { protocol, bytes }) => writeln!(
            out,
            "{indent}Transport protocol {protocol}, {} bytes",
            bytes.len()
        )?,
        None => {}
    }
    if let Some(m) = d.dns() {
        write_dns(out, &m, indent)?;
    } else if let Some(p) = d.payload()
        && !p.is_empty()
        && d.tunnel().is_none()
    {
        {
            writeln!(out, "{indent}Payload   {} bytes", p.len())?;
        }
    }
    let own = d.level_anomalies();
    if !own.is_empty() {
        let names: Vec<&str> = own.iter().map(|a| a.name()).collect();
        writeln!(out, "{indent}Anomalies {}", names.join(", "))?;
    }
    if let Some(t) = d.tunnel() {
        {
            match t {
                Tunnel::IpInIp { protocol } => {
                    writeln!(out, "{indent}Tunnel    IP-in-IP (protocol {protocol})")?
                }
                Tunnel::Gre(_) => writeln!(out, "{indent}Tunnel    GRE")?,
                Tunnel::Vxlan { vni } => writeln!(out, "{indent}Tunnel    VXLAN vni {vni}")?,
                Tunnel::Geneve { vni, protocol } => writeln!(
                    out,
                    "{indent}Tunnel    Geneve vni {vni} protocol 0x{protocol:04x}"
                )?,
                Tunnel::GtpU { teid } => {
                    writeln!(out, "{indent}Tunnel    GTP-U teid 0x{teid:08x}")?
                }
                Tunnel::Capwap {
                    wbid,
                    native,
                    fragment,
                } => {
                    write!(
                        out,
                        "{indent}Tunnel    CAPWAP data (binding {wbid}, {})",
                        if native {
                            "native frame"
                        } else {
                            "802.3 frame"
                        }
                    )?;
                    if let Some(f) = fragment {
                        let last = if f.last { ", last" } else { "" };
                        write!(out, " fragment {} at {}{last}", f.id, f.offset)?;
                    }
                    out.push('\n');
                }
                Tunnel::CapwapControl {
                    message_type,
                    sequence,
                } => writeln!(
                    out,
                    "{indent}Tunnel    CAPWAP control message type {message_type} sequence {sequence}"
                )?,
                Tunnel::CapwapDtls { control } => writeln!(
                    out,
                    "{indent}Tunnel    CAPWAP {} channel, DTLS-protected",
                    if control { "control" } else { "data" }
                )?,
                Tunnel::Lwapp { control_type } => match control_type {
                    Some(t) => writeln!(out, "{indent}Tunnel    LWAPP control message type {t}")?,
                    None => writeln!(out, "{indent}Tunnel    LWAPP 802.11 frame")?,
                },
            }
            if let Some(inner) = d.inner() {
                let deeper = format!("{indent}  ");
                write_layers(out, &inner, &deeper)?;
                return Ok(());
            }
        }
    }
    Ok(())
}

fn write_dns(out: &mut String, m: &dns::Message<'_>, indent: &str) -> fmt::Result {
    writeln!(
        out,
        "{indent}DNS       {} id 0x{:04x} opcode {} rcode {} qd {} an {} ns {} ar {}",
        if m.is_response() { "response" } else { "query" },
        m.id(),
        m.opcode(),
        m.rcode(),
        m.qdcount(),
        m.ancount(),
        m.nscount(),
        m.arcount()
    )?;
    for q in m.questions() {
        writeln!(
            out,
            "{indent}  question {} type {} class {}",
            q.name,
            q.qtype,
            q.qclass & 0x7fff
        )?;
    }
    for r in m.answers().chain(m.authority()).chain(m.additional()) {
        let data = match r.data() {
            RData::A(a) => format!("A {a}"),
            RData::Aaaa(a) => format!("AAAA {a}"),
            RData::Cname(n) => format!("CNAME {n}"),
            RData::Ns(n) => format!("NS {n}"),
            RData::Ptr(n) => format!("PTR {n}"),
            RData::Mx {
                preference,
                exchange,
            } => format!("MX {preference} {exchange}"),
            RData::Txt(t) => format!("TXT {} strings", t.iter().count()),
            RData::Soa {
                mname,
                rname,
                serial,
                ..
            } => format!("SOA {mname} {rname} serial {serial}"),
            RData::Srv {
                priority,
                weight,
                port,
                target,
            } => format!("SRV {priority} {weight} {port} {target}"),
            RData::Opt(o) => format!("OPT udp {} options {}", r.class, o.iter().count()),
            RData::Other(b) => format!("type {} ({} bytes)", r.rtype, b.len()),
        };
        writeln!(out, "{indent}  record  {} ttl {} {data}", r.name, r.ttl)?;
    }
    Ok(())
}
