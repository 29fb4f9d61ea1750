//! Any bytes given to the pcap reader: no panic, no read past the input, every packet's
//! bytes inside the input, and the reader stays finished after an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_io::Input;
use tracekit_pcap::PcapReader;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) =
        PcapReader::from_input(Input::from_reader(std::io::Cursor::new(data.to_vec())))
    else {
        return;
    };
    let mut total = 0usize;
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                total += p.caplen() + 16;
                assert!(
                    total <= data.len(),
                    "packets claim more bytes than the input has"
                );
                std::hint::black_box(p.data().iter().fold(0u8, |a, b| a ^ b));
            }
            Ok(None) => break,
            Err(_) => {
                assert!(matches!(reader.next_packet(), Ok(None)));
                break;
            }
        }
    }
});
