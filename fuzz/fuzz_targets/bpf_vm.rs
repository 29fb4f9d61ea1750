//! Random programs and packets: the VM never panics, and for every program that passes
//! validation (forward jumps only, so that libpcap's interpreter is sure to end, and no
//! read of unset scratch memory, where libpcap reads garbage) it gives the same verdict
//! as libpcap's own `bpf_filter`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit_filter::{Insn, Program};

// SAFETY: these signatures are bpf_filter as declared in <pcap/bpf.h>; the
// calls that use them state their own preconditions.
#[link(name = "pcap")]
unsafe extern "C" {
    fn bpf_filter(pc: *const Insn, p: *const u8, wirelen: u32, buflen: u32) -> u32;
    fn bpf_validate(f: *const Insn, len: i32) -> i32;
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(n % 24) + 1;
    if rest.len() < n * 8 + 1 {
        return;
    }
    let (code, rest) = rest.split_at(n * 8);
    let insns: Vec<Insn> = code
        .chunks_exact(8)
        .map(|c| {
            Insn::new(
                u16::from_le_bytes([c[0], c[1]]) & 0xff,
                c[2],
                c[3],
                u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
            )
        })
        .collect();
    let (&extra, packet) = rest.split_first().unwrap_or((&0, &[]));
    let wire_len = packet.len() as u32 + u32::from(extra);
    let Ok(program) = Program::new(insns.clone()) else {
        return;
    };
    let verdict = program.run(packet, wire_len);
    let forward_only = insns.iter().enumerate().all(|(pc, i)| {
        i.code & 0x07 != 0x05
            || i.code & 0xf0 != 0
            || (pc as u64 + 1 + u64::from(i.k)) < insns.len() as u64
    });
    // libpcap reads stack garbage for unset scratch memory: nothing to compare.
    // SAFETY: insns outlives the call and holds insns.len() instructions.
    if !forward_only
        || program.reads_unset_memory()
        || unsafe { bpf_validate(insns.as_ptr(), insns.len() as i32) } == 0
    {
        return;
    }
    // SAFETY: the program was validated by libpcap; packet holds buflen bytes.
    let theirs = unsafe {
        bpf_filter(
            insns.as_ptr(),
            packet.as_ptr(),
            wire_len,
            packet.len() as u32,
        )
    };
    assert_eq!(
        verdict,
        theirs,
        "program {insns:?} on {} bytes (wire {wire_len})",
        packet.len()
    );
});
