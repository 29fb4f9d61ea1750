//! Any bytes as a DNS message: every section, every name through its pointers, every
//! record's data; no panic, no hang; and a message that passes `check` has every
//! question and record it counts, with names that decode.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_decode::dns::{Message, RData};

fuzz_target!(|data: &[u8]| {
    let Some(m) = Message::new(data) else { return };
    let _ = (m.id(), m.flags(), m.opcode(), m.rcode(), m.truncated());
    let whole = m.check().is_ok();
    if whole {
        assert_eq!(m.questions().count(), usize::from(m.qdcount()));
        let records = m.answers().count() + m.authority().count() + m.additional().count();
        let counted =
            usize::from(m.ancount()) + usize::from(m.nscount()) + usize::from(m.arcount());
        assert_eq!(records, counted);
    }
    for q in m.questions() {
        assert!(q.name.labels().count() <= 256);
        assert!(!whole || q.name.is_valid(), "check passed a damaged name");
        std::hint::black_box(q.name.to_string());
    }
    for r in m.answers().chain(m.authority()).chain(m.additional()) {
        assert!(!whole || r.name.is_valid(), "check passed a damaged name");
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
