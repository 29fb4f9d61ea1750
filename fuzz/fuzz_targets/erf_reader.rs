//! Any bytes given to the ERF reader and to ERF detection: no panic, packets within the
//! input, the reader finished after an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_erf::{ErfReader, ErfReaderOptions, looks_like_erf};
use tracekit_io::Input;

fuzz_target!(|data: &[u8]| {
    std::hint::black_box(looks_like_erf(data));
    let input = Input::from_reader(std::io::Cursor::new(data.to_vec()));
    let Ok(mut reader) = ErfReader::from_input_with(input, ErfReaderOptions::default()) else {
        return;
    };
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                assert!(p.caplen() <= data.len());
                std::hint::black_box(p.ts().as_unix_nanos());
            }
            Ok(None) => break,
            Err(_) => {
                assert!(matches!(reader.next_packet(), Ok(None)));
                break;
            }
        }
    }
});
