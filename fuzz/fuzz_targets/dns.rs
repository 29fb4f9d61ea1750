//! Any bytes as a DNS message: every section, every name through its pointers, every
//! record's data; no panic, no hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_decode::dns::{Message, RData};

fuzz_target!(|data: &[u8]| {
    let Some(m) = Message::new(data) else { return };
    let _ = (m.id(), m.flags(), m.opcode(), m.rcode(), m.truncated());
    for q in m.questions() {
        assert!(q.name.labels().count() <= 256);
        std::hint::black_box(q.name.to_string());
    }
    for r in m.answers().chain(m.authority()).chain(m.additional()) {
        std::hint::black_box(r.name.to_string());
        match r.data() {
            RData::Cname(n) | RData::Ns(n) | RData::Ptr(n) => {
                std::hint::black_box(n.to_string());
            }
            RData::Mx { exchange, .. } => {
                std::hint::black_box(exchange.to_string());
            }
            RData::Srv { target, .. } => {
                std::hint::black_box(target.to_string());
            }
            RData::Soa { mname, rname, .. } => {
                std::hint::black_box((mname.to_string(), rname.to_string()));
            }
            RData::Txt(t) => {
                std::hint::black_box(t.iter().count());
            }
            RData::Opt(o) => {
                std::hint::black_box(o.iter().count());
            }
            RData::A(_) | RData::Aaaa(_) | RData::Other(_) => {}
        }
    }
});
