//! Any bytes as the payload the application-layer views read (HTTP heads, NTP, DHCP,
//! GTPv1, QUIC long and short headers, TLS hellos with JA3 and JA4): every accessor and
//! iterator runs to its end without a panic or a hang, and what they return lies inside
//! the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_decode::dhcp::DhcpMessage;
use tracekit_decode::gtp::GtpHeader;
use tracekit_decode::http::Head;
use tracekit_decode::ntp::NtpHeader;
use tracekit_decode::quic;
use tracekit_decode::tls;

/// Whether `part` is a sub-slice of `whole`.
fn inside(whole: &[u8], part: &[u8]) -> bool {
    let (w, p) = (whole.as_ptr() as usize, part.as_ptr() as usize);
    part.is_empty() || (p >= w && p + part.len() <= w + whole.len())
}

fuzz_target!(|data: &[u8]| {
    if let Some(h) = Head::parse(data) {
        for v in [h.method(), h.target(), h.host(), h.user_agent()].into_iter().flatten() {
            assert!(inside(data, v));
        }
        assert!(h.method().is_some() != h.status_code().is_some());
        let mut n = 0;
        for (name, value) in h.headers() {
            assert!(inside(data, name) && inside(data, value));
            n += 1;
            assert!(n <= data.len());
        }
    }
    if let Some(t) = NtpHeader::new_checked(data) {
        assert!(t.version() < 8 && t.mode() < 8 && t.leap() < 4);
        std::hint::black_box(t.stratum());
    }
    if let Some(m) = DhcpMessage::new_checked(data) {
        std::hint::black_box((m.op(), m.client_mac(), m.message_type()));
        if let Some(name) = m.hostname() {
            assert!(inside(data, name));
        }
        let mut n = 0;
        for (_, value) in m.options() {
            assert!(inside(data, value));
            n += 1;
            assert!(n <= data.len());
        }
    }
    if let Some(g) = GtpHeader::new_checked(data) {
        std::hint::black_box((g.message_type(), g.teid()));
    }
    let mut n = 0;
    let mut headers = quic::long_headers(data);
    for h in headers.by_ref() {
        assert!(inside(data, h.dcid()) && inside(data, h.scid()));
        assert!(quic::is_known_version(h.version()));
        std::hint::black_box(h.kind());
        n += 1;
        assert!(n <= data.len());
    }
    // A short header after them, with any connection id length.
    let rest = headers.remainder();
    assert!(inside(data, rest));
    if let Some(id) = quic::short_header_dcid(rest, data.len() % 21) {
        assert!(inside(rest, id));
    }
    for hello in tls::hellos(data) {
        let mut ja3 = String::new();
        hello.ja3(&mut ja3);
        std::hint::black_box((hello.version(), hello.server_name(), ja3));
        let (mut ja4, mut raw) = (String::new(), String::new());
        hello.ja4(&mut ja4);
        hello.ja4_raw(&mut raw);
        // JA4 is ASCII: ten characters, then two 12-digit hashes (client hellos only).
        assert!(ja4.is_empty() || (ja4.len() == 36 && ja4.is_ascii()), "{ja4}");
        std::hint::black_box((hello.ja4_a(), raw));
        for alpn in hello.alpn() {
            assert!(inside(data, alpn));
        }
    }
});
