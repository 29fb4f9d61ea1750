//! `copy_until` (the reader's own loop) writes what `copy_while` (a `next_packet` loop)
//! writes, and `copy_rewriting_until` what `copy_rewriting_while` writes: on every corpus file, damaged ones included, into pcapng (where interfaces
//! are described before their first packet, also interfaces that first appear in the
//! middle of a file) and pcap, the output files are byte-identical, the counts equal and
//! the errors the same; a stop asked for after the n-th packet stops both there.

use tracekit::{CopyError, CreateOptions, TsResolution};
use tracekit_testdata::{corpus_uri, manifest};

/// What a copy returned: packets written, and the error's side and text.
type Outcome = (u64, Option<(&'static str, String)>);

fn outcome(r: Result<u64, (CopyError, u64)>) -> Outcome {
    match r {
        Ok(n) => (n, None),
        Err((CopyError::Read(e), n)) => (n, Some(("read", e.to_string()))),
        Err((CopyError::Write(e), n)) => (n, Some(("write", e.to_string()))),
    }
}

/// Copies `input` into `out` (its extension names the format) with `copy_until` or
/// `copy_while` (their rewriting forms, which invert every byte, when `rewriting`),
/// stopping after `stop_after` packets if given; the outcome and the file's bytes (when
/// the copy finished).
fn copy(
    input: &str,
    out: &std::path::Path,
    until: bool,
    rewriting: bool,
    stop_after: Option<u64>,
) -> (Outcome, Option<Vec<u8>>) {
    let mut source = tracekit::open(input).unwrap();
    let options = CreateOptions {
        ts_resolution: Some(TsResolution::NANO),
        allow_precision_loss: true,
        link_type: source.declared_link_type(),
        ..CreateOptions::default()
    };
    let _ = std::fs::remove_file(out);
    let mut sink = tracekit::create(out.to_str().unwrap(), &options).unwrap();
    let mut seen = 0u64;
    let mut go_on = move || {
        seen += 1;
        stop_after.is_none_or(|n| seen < n)
    };
    let invert = |data: &mut [u8], _: &tracekit::Meta| data.iter_mut().for_each(|b| *b = !*b);
    let r = match (until, rewriting) {
        (true, false) => tracekit::copy_until(&mut source, &mut sink, go_on),
        (false, false) => tracekit::copy_while(&mut source, &mut sink, |_| go_on()),
        (true, true) => tracekit::copy_rewriting_until(&mut source, &mut sink, invert, go_on),
        (false, true) => {
            tracekit::copy_rewriting_while(&mut source, &mut sink, invert, |_| go_on())
        }
    };
    let result = outcome(r);
    let bytes = match result.1 {
        Some(("write", _)) => {
            sink.salvage();
            None
        }
        _ => {
            sink.finish().unwrap();
            Some(std::fs::read(out).unwrap())
        }
    };
    (result, bytes)
}

#[test]
fn copy_until_writes_what_copy_while_writes_on_every_corpus_file() {
    let dir = tempfile::tempdir().unwrap();
    let (mut files, mut multi, mut damaged, mut stopped, mut rewritten) = (0, 0, 0, 0, 0);
    for entry in manifest() {
        let input = corpus_uri(&entry.file);
        // Files whose format must be named (legacy formats) are left out.
        if tracekit::open(&input).is_err() {
            continue;
        }
        for ext in ["pcapng", "pcap"] {
            for (stop_after, rewriting) in [(None, false), (Some(3), false), (None, true)] {
                let out = |side: &str| dir.path().join(format!("{side}.{ext}"));
                let a = copy(&input, &out("a"), true, rewriting, stop_after);
                let b = copy(&input, &out("b"), false, rewriting, stop_after);
                let case = format!(
                    "{} -> {ext}, stop {stop_after:?}, rewriting {rewriting}",
                    entry.file
                );
                assert_eq!(a.0, b.0, "{case}");
                assert!(a.1 == b.1, "{case}: the files differ");
                if rewriting && a.0.0 > 0 && a.1.is_some() {
                    rewritten += 1;
                }
                if ext == "pcapng" && stop_after.is_none() && !rewriting {
                    if matches!(a.0.1, Some(("read", _))) {
                        damaged += 1;
                    }
                    let mut interfaces = 0;
                    if a.1.is_some() {
                        let out = dir.path().join("a.pcapng");
                        let mut s = tracekit::open(out.to_str().unwrap()).unwrap();
                        while let Ok(Some(p)) = s.next_packet() {
                            interfaces = interfaces.max(p.meta().interface);
                        }
                    }
                    if interfaces > 0 {
                        multi += 1;
                    }
                }
                if stop_after.is_some() && a.0.0 == 3 && a.0.1.is_none() {
                    stopped += 1;
                }
            }
        }
        files += 1;
    }
    assert!(files > 100, "only {files} files");
    assert!(multi > 5, "only {multi} files with several interfaces");
    assert!(damaged > 3, "only {damaged} damaged files");
    assert!(
        stopped > 100,
        "only {stopped} copies stopped after 3 packets"
    );
    assert!(rewritten > 100, "only {rewritten} rewritten copies");
}
