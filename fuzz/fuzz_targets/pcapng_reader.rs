//! Any bytes given to the pcapng reader, with and without metadata delivery: no panic,
//! packets within the input, options iterable, the reader finished after an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_io::Input;
use tracekit_pcapng::{PcapngReader, PcapngReaderOptions};

fuzz_target!(|data: &[u8]| {
    for deliver_meta in [false, true] {
        let input = Input::from_reader(std::io::Cursor::new(data.to_vec()));
        let Ok(mut reader) =
            PcapngReader::from_input_with(input, PcapngReaderOptions { deliver_meta })
        else {
            return;
        };
        loop {
            match reader.next_packet() {
                Ok(Some(p)) => {
                    assert!(p.caplen() <= data.len());
                    if let Some(options) = p.options() {
                        std::hint::black_box(options.comments().count());
                    }
                    std::hint::black_box(p.ts().as_unix_nanos());
                }
                Ok(None) => break,
                Err(_) => {
                    assert!(matches!(reader.next_packet(), Ok(None)));
                    break;
                }
            }
        }
        std::hint::black_box(reader.interfaces().len());
    }
});
