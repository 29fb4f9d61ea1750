//! The peer-harness task programs: `tracekit-bench TASK FILE`.
//!
//! - `t1 FILE`: count packets and captured bytes; prints `packets N` and `bytes M`.
//! - `t2 FILE`: decode to TCP; prints `tcp_packets`, `port_sum`, `seq_sum`, `syn`, `payload_bytes`.
//! - `t3 FILE`: TCP options; prints `tcp_packets`, `mss`, `mss_sum`, `wscale`, `sackok`,
//!   `sack_blocks`, `timestamps`, `other`.
//! - `t4 FILE`: DNS; prints `messages`, `responses`, `questions`, `answers`, `name_bytes`,
//!   `addresses`.
//! - `t5 FILE`: the Ports analysis; prints `packets` (counted by source port),
//!   `fragments`, `truncated`, `other`, `checksum`.
//! - `t6 FILE.gz`, `t7 FILE.bz2`: T1 on a gzip or bzip2 compressed trace (decompressed
//!   in parallel); same lines as `t1`.
//! - `t8 IN OUT.gz`: write IN as gzip-compressed pcap at level 6; prints `packets N`.
//! - `t9 FILE [THRESHOLD]`: the Scans analysis on the flow table; prints `attempts`
//!   (failed TCP connection attempts), `sources`, `scanners` (sources above THRESHOLD
//!   distinct destinations, default 100).
//! - `t10 FILE`: the flow table (no timeouts); prints `tcp_flows`, `tcp_packets`,
//!   `tcp_bytes`, `udp_flows`, `udp_packets`, `udp_bytes`.
//! - `t11 FILE`: TCP stream reassembly beside the flow table; prints `streams` (with
//!   data), `client_bytes`, `server_bytes`.
//! - `digest FILE...`: the packets of the files in sequence, as `packets N` and
//!   `digest HEX` (time stamp, lengths and bytes), to compare outputs of different tools.
//!
//! Set `TRACEKIT_READ_MODE=mmap|read` to force a read mode (default: the library's) and
//! `TRACEKIT_THREADS=N` for the decompression threads (default: one per core).

use tracekit::ReadMode;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(task), Some(file)) = (args.get(1), args.get(2)) else {
        eprintln!(
            "usage: tracekit-bench t1|t2|t3|t4|t5|t6|t7|t10|t11 FILE | t8 IN OUT.gz | t9 FILE [THRESHOLD] | digest FILE..."
        );
        std::process::exit(2);
    };
    let mode = match std::env::var("TRACEKIT_READ_MODE").as_deref() {
        Ok("mmap") => ReadMode::Mmap,
        Ok("read") => ReadMode::Read,
        _ => ReadMode::Auto,
    };
    let threads = std::env::var("TRACEKIT_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    match task.as_str() {
        "t8" | "gzwrite" => {
            let Some(out) = args.get(3) else {
                eprintln!("usage: tracekit-bench t8 IN OUT.gz");
                std::process::exit(2);
            };
            report(tracekit_bench::tasks::t8_gzwrite(file, out, threads).map(|n| format!("packets {n}")))
        }
        "digest" => report(
            tracekit_bench::tasks::digest(&args[2..])
                .map(|(n, d)| format!("packets {n}\ndigest {d:016x}")),
        ),
        "t1" | "count" | "t6" | "gzread" | "t7" | "bz2read" => match tracekit_bench::tasks::t1_count_with(file, mode, threads) {
            Ok((packets, bytes)) => println!("packets {packets}\nbytes {bytes}"),
            Err(e) => {
                eprintln!("tracekit-bench: {e}");
                std::process::exit(1);
            }
        },
        "t2" | "tcp" => report(tracekit_bench::tasks::t2_tcp(file).map(|s| {
            format!(
                "tcp_packets {}\nport_sum {}\nseq_sum {}\nsyn {}\npayload_bytes {}",
                s.packets, s.ports, s.seq, s.syn, s.payload
            )
        })),
        "t3" | "tcpopts" => report(tracekit_bench::tasks::t3_tcpopts(file).map(|c| {
            format!(
                "tcp_packets {}\nmss {}\nmss_sum {}\nwscale {}\nsackok {}\nsack_blocks {}\ntimestamps {}\nother {}",
                c.packets, c.mss, c.mss_sum, c.wscale, c.sack_permitted, c.sack_blocks, c.timestamps, c.other
            )
        })),
        "t4" | "dns" => report(tracekit_bench::tasks::t4_dns(file).map(|c| {
            format!(
                "messages {}\nresponses {}\nquestions {}\nanswers {}\nname_bytes {}\naddresses {}",
                c.messages, c.responses, c.questions, c.answers, c.name_bytes, c.addresses
            )
        })),
        "t5" | "ports" => report(tracekit_bench::tasks::t5_ports(file).map(|c| {
            format!(
                "packets {}\nfragments {}\ntruncated {}\nother {}\nchecksum {}",
                c.packets(), c.fragments, c.truncated, c.other, c.checksum()
            )
        })),
        "t9" | "scans" => {
            let threshold = args.get(3).and_then(|t| t.parse().ok()).unwrap_or(100);
            report(
                tracekit_bench::tasks::t9_scans(file, threshold)
                    .map(|(a, s, n)| format!("attempts {a}\nsources {s}\nscanners {n}")),
            )
        }
        "t10" | "flows" => report(tracekit_bench::tasks::t10_flows(file).map(|c| {
            format!(
                "tcp_flows {}\ntcp_packets {}\ntcp_bytes {}\nudp_flows {}\nudp_packets {}\nudp_bytes {}",
                c.tcp_flows, c.tcp_packets, c.tcp_bytes, c.udp_flows, c.udp_packets, c.udp_bytes
            )
        })),
        "t11" | "streams" => report(tracekit_bench::tasks::t11_streams(file).map(|c| {
            format!(
                "streams {}\nclient_bytes {}\nserver_bytes {}",
                c.streams, c.client_bytes, c.server_bytes
            )
        })),
        other => {
            eprintln!(
                "tracekit-bench: unknown task {other} (known: t1 t2 t3 t4 t5 t6 t7 t8 t9 t10 t11 digest)"
            );
            std::process::exit(2);
        }
    }
}

fn report(result: Result<String, tracekit::Error>) {
    match result {
        Ok(text) => println!("{text}"),
        Err(e) => {
            eprintln!("tracekit-bench: {e}");
            std::process::exit(1);
        }
    }
}
