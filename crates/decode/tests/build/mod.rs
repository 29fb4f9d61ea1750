//! Hand-built packets for the decoder's tests: each builder writes valid headers with
//! consistent lengths, so a test changes exactly the byte it is about.

#![allow(dead_code)]

pub const ETH_IPV4: [u8; 14] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
pub const ETH_IPV6: [u8; 14] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];

/// An IPv4 header (20 bytes + `options`) for `payload_len` bytes of protocol `proto`.
pub fn ipv4(proto: u8, payload_len: usize, options: &[u8]) -> Vec<u8> {
    assert!(options.len().is_multiple_of(4));
    let hlen = 20 + options.len();
    let mut h = vec![0u8; 20];
    h[0] = 0x40 | (hlen / 4) as u8;
    h[2..4].copy_from_slice(&((hlen + payload_len) as u16).to_be_bytes());
    h[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
    h[8] = 64;
    h[9] = proto;
    h[12..16].copy_from_slice(&[10, 0, 0, 1]);
    h[16..20].copy_from_slice(&[10, 0, 0, 2]);
    h.extend_from_slice(options);
    h
}

/// An IPv6 header for `payload_len` bytes starting with header `next`.
pub fn ipv6(next: u8, payload_len: usize) -> Vec<u8> {
    let mut h = vec![0u8; 40];
    h[0] = 0x60;
    h[4..6].copy_from_slice(&(payload_len as u16).to_be_bytes());
    h[6] = next;
    h[7] = 64;
    h[8] = 0x20;
    h[9] = 0x01;
    h[23] = 1;
    h[24] = 0x20;
    h[25] = 0x01;
    h[39] = 2;
    h
}

/// A TCP header with `options` (padded to a multiple of 4 with NOPs... by the caller).
pub fn tcp(sport: u16, dport: u16, flags: u8, options: &[u8]) -> Vec<u8> {
    assert!(options.len().is_multiple_of(4));
    let mut h = vec![0u8; 20];
    h[0..2].copy_from_slice(&sport.to_be_bytes());
    h[2..4].copy_from_slice(&dport.to_be_bytes());
    h[4..8].copy_from_slice(&1000u32.to_be_bytes());
    h[12] = (((20 + options.len()) / 4) as u8) << 4;
    h[13] = flags;
    h[14..16].copy_from_slice(&65535u16.to_be_bytes());
    h.extend_from_slice(options);
    h
}

/// A UDP header for `payload_len` bytes.
pub fn udp(sport: u16, dport: u16, payload_len: usize) -> Vec<u8> {
    let mut h = vec![0u8; 8];
    h[0..2].copy_from_slice(&sport.to_be_bytes());
    h[2..4].copy_from_slice(&dport.to_be_bytes());
    h[4..6].copy_from_slice(&((8 + payload_len) as u16).to_be_bytes());
    h
}

/// Ethernet + IPv4 + `l4` + `payload`.
pub fn eth_ipv4(proto: u8, l4: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut p = ETH_IPV4.to_vec();
    p.extend(ipv4(proto, l4.len() + payload.len(), &[]));
    p.extend_from_slice(l4);
    p.extend_from_slice(payload);
    p
}

/// Ethernet + IPv6 + `l4` + `payload`.
pub fn eth_ipv6(next: u8, l4: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut p = ETH_IPV6.to_vec();
    p.extend(ipv6(next, l4.len() + payload.len()));
    p.extend_from_slice(l4);
    p.extend_from_slice(payload);
    p
}

/// A DNS query for `name` (type A).
pub fn dns_query(id: u16, name: &str) -> Vec<u8> {
    let mut m = vec![0u8; 12];
    m[0..2].copy_from_slice(&id.to_be_bytes());
    m[2] = 0x01;
    m[5] = 1;
    for label in name.split('.') {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.extend_from_slice(&[0, 0, 1, 0, 1]);
    m
}
