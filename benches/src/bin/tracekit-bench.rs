//! The peer-harness task programs: `tracekit-bench TASK FILE`.
//!
//! - `t1 FILE`: count packets and captured bytes; prints `packets N` and `bytes M`.
//!
//! Set `TRACEKIT_READ_MODE=mmap|read` to force a read mode (default: the library's) and
//! `TRACEKIT_THREADS=N` for the decompression threads (default: one per core).

use tracekit::ReadMode;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(task), Some(file)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: tracekit-bench t1 FILE");
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
        "t1" | "count" => match tracekit_bench::tasks::t1_count_with(file, mode, threads) {
            Ok((packets, bytes)) => println!("packets {packets}\nbytes {bytes}"),
            Err(e) => {
                eprintln!("tracekit-bench: {e}");
                std::process::exit(1);
            }
        },
        other => {
            eprintln!("tracekit-bench: unknown task {other} (known: t1)");
            std::process::exit(2);
        }
    }
}
