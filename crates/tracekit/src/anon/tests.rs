use super::*;

fn pan() -> Anonymizer {
    Anonymizer::new(
        Method::cryptopan(&key_from_text("abcdefghijklmnopqrstuvwxyz012345")),
        true,
        true,
        Checksums::Update,
    )
}

#[test]
fn prefixes_parse_and_substitute() {
    let p: Prefix = "10.20.0.0/14".parse().unwrap();
    assert_eq!(p.bits, 14);
    assert!("10.0.0.0/33".parse::<Prefix>().is_err());
    assert!("10.0.0.0".parse::<Prefix>().is_err());
    assert!("2001:db8::/129".parse::<Prefix>().is_err());
    let v6: Prefix = "2001:db8::/32".parse().unwrap();
    let mut a = Anonymizer::new(Method::prefixes(&[p, v6]), true, true, Checksums::Update);
    assert_eq!(
        a.map_v4("192.168.1.2".parse().unwrap()).to_string(),
        "10.20.1.2"
    );
    assert_eq!(
        a.map_v6("fe80::1:2".parse().unwrap()).to_string(),
        "2001:db8::1:2"
    );
    let mut only_v4 = Anonymizer::new(Method::prefixes(&[p]), true, true, Checksums::Update);
    assert_eq!(
        only_v4.map_v6("fe80::1".parse().unwrap()).to_string(),
        "fe80::1"
    );
    assert_eq!(only_v4.stats().unchanged, 1);
}

#[test]
fn text_keys_are_cut_or_padded_and_key_files_must_be_long_enough() {
    assert_eq!(&key_from_text("ab")[..3], b"ab\0");
    assert_eq!(key_from_text(&"x".repeat(40)), [b'x'; 32]);
    assert!(matches!(
        key_from_file_bytes(b"short"),
        Err(AnonError::ShortKey(5))
    ));
    assert_eq!(key_from_file_bytes(&[0u8; 40]).unwrap(), [0u8; 32]);
}

/// An Ethernet + IPv4 + UDP frame with correct checksums (computed here by summing).
fn udp_frame(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 8 + 4];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&32u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst);
    let c = !ones_sum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let udp = &mut f[34..];
    udp[0..2].copy_from_slice(&1234u16.to_be_bytes());
    udp[2..4].copy_from_slice(&53u16.to_be_bytes());
    udp[4..6].copy_from_slice(&12u16.to_be_bytes());
    udp[8..].copy_from_slice(b"abcd");
    let c = udp_checksum(&f);
    f[40..42].copy_from_slice(&c.to_be_bytes());
    f
}

fn udp_checksum(f: &[u8]) -> u16 {
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&f[26..34]);
    pseudo.extend_from_slice(&[0, 17, 0, 12]);
    let mut seg = f[34..].to_vec();
    seg[6..8].copy_from_slice(&[0, 0]);
    pseudo.extend_from_slice(&seg);
    !ones_sum(&pseudo)
}

#[test]
fn rewritten_udp_packet_keeps_correct_checksums() {
    let mut f = udp_frame([192, 0, 2, 1], [198, 51, 100, 2]);
    let mut a = pan();
    assert!(a.rewrite(&mut f, LinkType::ETHERNET, 46));
    assert_ne!(&f[26..30], &[192, 0, 2, 1]);
    assert_ne!(&f[30..34], &[198, 51, 100, 2]);
    assert_eq!(ones_sum(&f[14..34]), 0xffff, "IPv4 header checksum");
    let stored = u16::from_be_bytes([f[40], f[41]]);
    assert_eq!(stored, udp_checksum(&f), "UDP checksum");
    assert_eq!(a.stats().ipv4, 1);
}

#[test]
fn an_address_cut_by_the_capture_keeps_its_captured_bytes_images() {
    let whole = udp_frame([192, 0, 2, 1], [198, 51, 100, 2]);
    let mut full = whole.clone();
    pan().rewrite(&mut full, LinkType::ETHERNET, 46);
    // The packet's own header cut short is left alone (traceanon asks for 20 bytes).
    let mut cut = whole[..32].to_vec();
    assert!(!pan().rewrite(&mut cut, LinkType::ETHERNET, 46));
    assert_eq!(cut, whole[..32]);
    // A cut address: its captured leading bytes get the whole address's images.
    let (old, have) = read_partial::<4>(&whole[..32], 30).unwrap();
    assert_eq!((old, have), ([198, 51, 0, 0], 2));
    let img = pan().v4(u32::from_be_bytes(old)).to_be_bytes();
    assert_eq!(&img[..have], &full[30..32]);
}

#[test]
fn arp_sender_and_target_are_rewritten() {
    let mut f = vec![0u8; 42];
    f[12..14].copy_from_slice(&[0x08, 0x06]);
    f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    f[28..32].copy_from_slice(&[192, 0, 2, 1]);
    f[38..42].copy_from_slice(&[192, 0, 2, 2]);
    let mut a = pan();
    assert!(a.rewrite(&mut f, LinkType::ETHERNET, 42));
    assert_eq!(&f[28..32], &a.map_v4("192.0.2.1".parse().unwrap()).octets());
    assert_eq!(&f[38..42], &a.map_v4("192.0.2.2".parse().unwrap()).octets());
    assert_eq!(a.stats().arp, 1);
}

#[test]
fn hostile_bytes_never_panic() {
    let mut a = pan();
    let mut z = Anonymizer::new(Method::cryptopan(&[7; 32]), true, true, Checksums::Zero);
    let base = udp_frame([192, 0, 2, 1], [198, 51, 100, 2]);
    for len in 0..base.len() {
        for flip in 0..base.len().min(len) {
            let mut f = base[..len].to_vec();
            f[flip] ^= 0xff;
            a.rewrite(&mut f, LinkType::ETHERNET, 46);
            z.rewrite(&mut f, LinkType::ETHERNET, 46);
            a.rewrite(&mut f, LinkType::RAW, 46);
        }
    }
}

proptest::proptest! {
    /// The shortcut for plain IPv4 over Ethernet changes exactly what the decoder's path
    /// changes, for both checksum modes and for frames whose IPv4 header and transport
    /// are anything at all (the protocol drawn mostly from those that matter here).
    #[test]
    fn the_plain_ipv4_shortcut_agrees_with_the_decoders_path(
        tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..120),
        ihl in 0u8..16,
        proto in proptest::prop_oneof![
            proptest::prelude::Just(1u8), proptest::prelude::Just(6u8), proptest::prelude::Just(17u8),
            proptest::prelude::Just(4u8), proptest::prelude::Just(47u8), proptest::prelude::any::<u8>()
        ],
        frag in proptest::prelude::any::<bool>(),
        cut in 0usize..200,
        zero in proptest::prelude::any::<bool>(),
        src in proptest::prelude::any::<bool>(),
        nested in proptest::prelude::any::<bool>(),
    ) {
        let mut f = udp_frame([192, 0, 2, 1], [198, 51, 100, 2]);
        f[14] = 0x40 | ihl;
        f[14 + 9] = proto;
        if frag {
            f[14 + 6] = 0x20;
            f[14 + 7] = 0x10;
        }
        let inner = f[14..].to_vec();
        f.truncate(34);
        if nested {
            // A whole IPv4 packet where the transport starts, for the tunnelling protocols.
            f.resize(14 + 4 * usize::from(ihl.max(5)), 0);
            f.extend_from_slice(&inner);
        }
        f.extend_from_slice(&tail);
        f.truncate(cut.max(14));
        let checksums = if zero { Checksums::Zero } else { Checksums::Update };
        let method = Method::cryptopan(&key_from_text("abcdefghijklmnopqrstuvwxyz012345"));
        let mut fast = Anonymizer::new(method.clone(), true, !src, checksums);
        let mut slow = Anonymizer::new(method, true, !src, checksums);
        let (mut a, mut b) = (f.clone(), f.clone());
        let wire = f.len() as u32;
        let changed = (fast.rewrite(&mut a, LinkType::ETHERNET, wire), slow.rewrite_decoded(&mut b, LinkType::ETHERNET, wire));
        proptest::prop_assert_eq!(changed.0, changed.1);
        proptest::prop_assert_eq!(a, b);
        proptest::prop_assert_eq!(fast.stats(), slow.stats());
    }
}
