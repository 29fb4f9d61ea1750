//! Any bytes given to the legacy DAG reader (the kind from the first byte): no panic,
//! one packet per whole 64-byte record, each within its record, and the reader finished
//! after an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_io::Input;
use tracekit_legacy::{LegacyKind, LegacyReader, RECORD_LEN};

fuzz_target!(|input: &[u8]| {
    let Some((&sel, data)) = input.split_first() else {
        return;
    };
    let kind = [LegacyKind::Atm, LegacyKind::Ethernet, LegacyKind::Pos][usize::from(sel % 3)];
    let source = Input::from_reader(std::io::Cursor::new(data.to_vec()));
    let Ok(mut reader) = LegacyReader::from_input_with(source, kind) else {
        return;
    };
    let mut n = 0;
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                n += 1;
                assert!(p.caplen() <= RECORD_LEN - 10);
                assert!(p.caplen() <= p.wire_len() as usize);
            }
            Ok(None) => break,
            Err(_) => {
                assert!(matches!(reader.next_packet(), Ok(None)));
                break;
            }
        }
    }
    assert_eq!(n, data.len() / RECORD_LEN);
});
