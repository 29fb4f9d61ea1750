//! Any bytes given to the legacy reader, the kind picked by the first byte (0 ATM,
//! 1 Ethernet, 2 PoS, 3 NZIX, 4 TSH, 5 FR+, 6 ATM cell headers): no panic; each packet
//! within the kind's snap length and its wire length; NZIX time stamps never going
//! back; the whole records all read when no error stops the reader, no more packets
//! than records, and the reader finished after an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_core::TraceInfo;
use tracekit_io::Input;
use tracekit_legacy::{LegacyKind, LegacyReader, looks_like_tsh};

fuzz_target!(|input: &[u8]| {
    let Some((&sel, data)) = input.split_first() else {
        return;
    };
    let kind = LegacyKind::ALL[usize::from(sel) % LegacyKind::ALL.len()];
    // Detection looks at bytes only: any input is fine.
    let _ = looks_like_tsh(data);
    let source = Input::from_reader(std::io::Cursor::new(data.to_vec()));
    let Ok(mut reader) = LegacyReader::from_input_with(source, kind) else {
        return;
    };
    let snaplen = reader.format().snaplen().unwrap_or(0) as usize;
    let records = data.len() / kind.record_len();
    let mut n = 0;
    let mut last_ts = None;
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                n += 1;
                assert!(p.caplen() <= snaplen);
                assert!(p.caplen() <= p.wire_len() as usize);
                if kind == LegacyKind::Nzix {
                    assert!(last_ts.is_none_or(|t| t <= p.ts()));
                    last_ts = Some(p.ts());
                }
                let again = reader.current_packet().expect("the packet just read");
                assert_eq!(again.caplen(), again.data().len());
            }
            Ok(None) => {
                assert_eq!(reader.format().records_read() as usize, records);
                // Only NZIX skips records (those without a frame).
                assert!(kind == LegacyKind::Nzix || n == records);
                break;
            }
            Err(_) => {
                assert!(matches!(reader.next_packet(), Ok(None)));
                break;
            }
        }
    }
    assert!(n <= records);
});
