//! The input the io benchmarks share.

/// The corpus pcaps (`../shared/corpus` or `$TRACEKIT_CORPUS`) repeated to at least
/// `len` bytes; without the corpus, generated text.
pub fn corpus_repeated(len: usize) -> Vec<u8> {
    let dir = std::env::var("TRACEKIT_CORPUS").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus").to_string()
    });
    let mut pcaps: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .filter_map(|p| std::fs::read(p).ok())
        .collect();
    if pcaps.is_empty() {
        pcaps.push(
            (0..1_000_000u32)
                .flat_map(|i| format!("line {i} of generated text {}\n", i % 97).into_bytes())
                .collect(),
        );
    }
    let mut out = Vec::new();
    while out.len() < len {
        for p in &pcaps {
            out.extend_from_slice(p);
        }
    }
    out
}

/// Reads `r` to its end through `buf`; returns the bytes read.
pub fn count_read(mut r: impl std::io::Read, buf: &mut [u8]) -> usize {
    let mut total = 0;
    loop {
        let n = r.read(buf).unwrap();
        if n == 0 {
            return total;
        }
        total += n;
    }
}
