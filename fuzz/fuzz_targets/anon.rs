//! Hostile packets through the anonymiser: it never panics, never changes a packet's
//! length, gives the same bytes twice for the same key, and keeps a correct IPv4 header
//! checksum correct when it updates checksums.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit::LinkType;
use tracekit::anon::{Anonymizer, Checksums, Method};
use tracekit::decode::Decoded;

const LINKS: [LinkType; 5] = [
    LinkType::ETHERNET,
    LinkType::RAW,
    LinkType::LINUX_SLL,
    LinkType::NULL,
    LinkType::IPV6,
];

fn header_ok(data: &[u8], link: LinkType) -> Option<bool> {
    Decoded::from_bytes(data, link, data.len() as u32)
        .ipv4()?
        .checksum_ok()
}

fuzz_target!(|input: &[u8]| {
    let Some((&sel, packet)) = input.split_first() else {
        return;
    };
    let link = LINKS[usize::from(sel) % LINKS.len()];
    let checksums = if sel & 0x80 == 0 { Checksums::Update } else { Checksums::Zero };
    let method = Method::cryptopan(&[sel; 32]);
    let mut a = Anonymizer::new(method.clone(), sel & 1 == 0, sel & 2 == 0, checksums);
    let mut b = Anonymizer::new(method, sel & 1 == 0, sel & 2 == 0, checksums);
    let (mut x, mut y) = (packet.to_vec(), packet.to_vec());
    a.rewrite(&mut x, link, packet.len() as u32);
    b.rewrite(&mut y, link, packet.len() as u32);
    assert_eq!(x.len(), packet.len());
    assert_eq!(x, y, "not deterministic");
    if checksums == Checksums::Update && header_ok(packet, link) == Some(true) {
        assert_eq!(header_ok(&x, link), Some(true), "a correct IPv4 checksum went wrong");
    }
});
