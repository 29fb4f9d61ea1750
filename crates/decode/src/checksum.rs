//! The Internet checksum (RFC 1071), as IPv4, TCP, UDP and ICMP use it.

/// The Internet checksum of `data` folded with `initial` (a pseudo-header sum, or 0):
/// 0 when `data` includes its own correct checksum field.
pub(crate) fn internet_checksum(data: &[u8], initial: u32) -> u16 {
    let mut sum = u64::from(initial);
    let mut words = data.chunks_exact(2);
    for w in words.by_ref() {
        sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    // An odd last byte is padded with a zero byte.
    if let [last] = words.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::internet_checksum;

    #[test]
    fn rfc1071_example_and_a_correct_header() {
        // RFC 1071 section 3: the sum of these words is 0xddf2, so the checksum is !0xddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(internet_checksum(&data, 0), !0xddf2);
        // An IPv4 header with its checksum filled in sums to 0.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(internet_checksum(&h, 0), 0);
        // An odd length pads with zero; the initial value is folded in.
        assert_eq!(internet_checksum(&[0xff], 0), !0xff00);
        assert_eq!(internet_checksum(&[], 0x1_fffe), !0xffff);
    }
}
