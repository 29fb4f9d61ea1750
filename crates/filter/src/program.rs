//! Classic BPF programs: instructions, validation, and the virtual machine.

use tracekit_core::Error;

/// One classic-BPF instruction, laid out as `struct bpf_insn` / `struct sock_filter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct Insn {
    /// Operation code.
    pub code: u16,
    /// Jump offset when true.
    pub jt: u8,
    /// Jump offset when false.
    pub jf: u8,
    /// Constant operand.
    pub k: u32,
}

impl Insn {
    /// An instruction.
    pub const fn new(code: u16, jt: u8, jf: u8, k: u32) -> Insn {
        Insn { code, jt, jf, k }
    }
}

/// Opcode fields (values of `<pcap/bpf.h>`).
///
/// An opcode is the OR of an instruction class (low three bits) and the fields that class
/// uses: loads take a size and an addressing mode, ALU and jump instructions an operation
/// and a source, `ret` a return-value source, and `misc` a register transfer.
pub mod op {
    /// Class: load into the accumulator A (`ld`, `ldh`, `ldb`).
    pub const LD: u16 = 0x00;
    /// Class: load into the index register X (`ldx`, `ldxb`).
    pub const LDX: u16 = 0x01;
    /// Class: store A into a scratch memory word (`st`).
    pub const ST: u16 = 0x02;
    /// Class: store X into a scratch memory word (`stx`).
    pub const STX: u16 = 0x03;
    /// Class: arithmetic and logic on A, with a constant or X as the other operand.
    pub const ALU: u16 = 0x04;
    /// Class: jumps, unconditional (`ja`) or comparing A with a constant or X.
    pub const JMP: u16 = 0x05;
    /// Class: end the program, accepting that many bytes of the packet (0 rejects it).
    pub const RET: u16 = 0x06;
    /// Class: register transfers between A and X (`tax`, `txa`).
    pub const MISC: u16 = 0x07;

    /// Load size: a 32-bit word, read in network byte order.
    pub const W: u16 = 0x00;
    /// Load size: a 16-bit half word, read in network byte order.
    pub const H: u16 = 0x08;
    /// Load size: one byte.
    pub const B: u16 = 0x10;

    /// Addressing mode: the constant `k` itself.
    pub const IMM: u16 = 0x00;
    /// Addressing mode: packet bytes at the fixed offset `k`.
    pub const ABS: u16 = 0x20;
    /// Addressing mode: packet bytes at offset X + `k`.
    pub const IND: u16 = 0x40;
    /// Addressing mode: scratch memory word `k`.
    pub const MEM: u16 = 0x60;
    /// Addressing mode: the packet's wire length.
    pub const LEN: u16 = 0x80;
    /// Addressing mode of `ldxb`: four times the low nibble of the byte at `k` (an IPv4
    /// header length).
    pub const MSH: u16 = 0xa0;

    /// ALU operation: A + operand.
    pub const ADD: u16 = 0x00;
    /// ALU operation: A − operand.
    pub const SUB: u16 = 0x10;
    /// ALU operation: A × operand.
    pub const MUL: u16 = 0x20;
    /// ALU operation: A ÷ operand (a division by zero rejects the packet).
    pub const DIV: u16 = 0x30;
    /// ALU operation: bitwise A | operand.
    pub const OR: u16 = 0x40;
    /// ALU operation: bitwise A & operand.
    pub const AND: u16 = 0x50;
    /// ALU operation: A shifted left by the operand.
    pub const LSH: u16 = 0x60;
    /// ALU operation: A shifted right by the operand.
    pub const RSH: u16 = 0x70;
    /// ALU operation: the two's-complement negation of A (no operand).
    pub const NEG: u16 = 0x80;
    /// ALU operation: the remainder of A ÷ operand (zero rejects the packet).
    pub const MOD: u16 = 0x90;
    /// ALU operation: bitwise A ^ operand.
    pub const XOR: u16 = 0xa0;

    /// Jump: always, forward by `k` instructions.
    pub const JA: u16 = 0x00;
    /// Jump: to `jt` if A equals the operand, else to `jf`.
    pub const JEQ: u16 = 0x10;
    /// Jump: to `jt` if A is greater than the operand (unsigned), else to `jf`.
    pub const JGT: u16 = 0x20;
    /// Jump: to `jt` if A is greater than or equal to the operand (unsigned), else to `jf`.
    pub const JGE: u16 = 0x30;
    /// Jump: to `jt` if A & operand is not zero, else to `jf`.
    pub const JSET: u16 = 0x40;

    /// Operand source: the constant `k`.
    pub const K: u16 = 0x00;
    /// Operand source: the index register X.
    pub const X: u16 = 0x08;
    /// Return-value source of `ret`: the accumulator A.
    pub const A: u16 = 0x10;

    /// Register transfer: copy A into X.
    pub const TAX: u16 = 0x00;
    /// Register transfer: copy X into A.
    pub const TXA: u16 = 0x80;
}

/// Scratch memory words.
pub const MEMWORDS: u32 = 16;

/// Every opcode the VM (and libpcap's interpreter) knows, in its one canonical encoding:
/// an opcode with stray bits (say `ja` with the X bit) is rejected, not guessed at.
const VALID_CODES: &[u16] = &[
    // ld: #k, w/h/b [k], w/h/b [x+k], M[k], len
    0x00, 0x20, 0x28, 0x30, 0x40, 0x48, 0x50, 0x60, 0x80,
    // ldx: #k, M[k], len, 4*([k]&0xf)
    0x01, 0x61, 0x81, 0xb1, // st, stx
    0x02, 0x03,
    // alu: add sub mul div or and lsh rsh (k, x), neg, mod (k, x), xor (k, x)
    0x04, 0x0c, 0x14, 0x1c, 0x24, 0x2c, 0x34, 0x3c, 0x44, 0x4c, 0x54, 0x5c, 0x64, 0x6c, 0x74, 0x7c,
    0x84, 0x94, 0x9c, 0xa4, 0xac, // jmp: ja, jeq jgt jge jset (k, x)
    0x05, 0x15, 0x1d, 0x25, 0x2d, 0x35, 0x3d, 0x45, 0x4d, // ret #k, ret a
    0x06, 0x16, // tax, txa
    0x07, 0x87,
];
/// Longest program the Linux kernel attaches to a socket (its `BPF_MAXINSNS`). Programs
/// that tracekit runs itself may be longer: see [`MAX_INSNS`].
pub const KERNEL_MAX_INSNS: usize = 4096;
/// Longest program accepted: a bound on memory (4 MiB of instructions) rather than on
/// any filter people write; a 1,000-term `host` list compiles to about 3,400.
pub const MAX_INSNS: usize = 1 << 19;
/// Instructions one run may execute before the packet is rejected: more than a program
/// without backward jumps can execute (twice [`MAX_INSNS`]), and more than any libpcap
/// program needs (its `protochain` loop walks one header per round).
#[cfg(not(fuzzing))]
const MAX_STEPS: u32 = 1 << 20;
/// Under cargo-fuzz, a budget that still exceeds what its programs (24 instructions at
/// most) execute without looping, so that a looping program costs thousands of steps
/// rather than a million and the fuzzer keeps its pace.
#[cfg(fuzzing)]
const MAX_STEPS: u32 = 1 << 12;

/// A validated classic-BPF program: plain data, `Send + Sync`, run from any number of
/// threads without locks.
///
/// ```
/// use tracekit_filter::{Insn, Program};
/// // "ret #65535 if the frame's ethertype is IPv4, else ret #0"
/// let p = Program::new(vec![
///     Insn::new(0x28, 0, 0, 12),          // ldh [12]
///     Insn::new(0x15, 0, 1, 0x0800),      // jeq #0x800, L1, L2
///     Insn::new(0x06, 0, 0, 65535),       // L1: ret #65535
///     Insn::new(0x06, 0, 0, 0),           // L2: ret #0
/// ])?;
/// let mut frame = [0u8; 60];
/// frame[12] = 0x08;
/// assert!(p.matches(&frame, 60));
/// frame[12] = 0x86;
/// assert!(!p.matches(&frame, 60));
/// # Ok::<(), tracekit_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    insns: Vec<Insn>,
}

impl Program {
    /// Validates `insns` as the kernel's classic-BPF checker does: known opcodes only,
    /// every jump inside the program, scratch memory index below 16, no division or
    /// modulo by a constant 0, shifts by a constant below 32, and the last instruction a
    /// return. Unlike the kernel (and like libpcap's own user-space filter), an
    /// unconditional jump may go backwards: libpcap's `protochain` loops that way; and a
    /// program may have up to [`MAX_INSNS`] instructions, not only the kernel's 4,096
    /// ([`Program::fits_kernel`] tells). The VM bounds the instructions it executes, so
    /// every run ends.
    pub fn new(insns: Vec<Insn>) -> Result<Program, Error> {
        use op::*;
        let n = insns.len();
        if n == 0 || n > MAX_INSNS {
            return Err(Error::invalid_argument(format!(
                "a BPF program has 1 to {MAX_INSNS} instructions, not {n}"
            )));
        }
        let bad = |pc: usize, why: &str| {
            Err(Error::invalid_argument(format!(
                "BPF instruction {pc}: {why}"
            )))
        };
        for (pc, i) in insns.iter().enumerate() {
            if !VALID_CODES.contains(&i.code) {
                return bad(pc, &format!("unknown opcode {:#06x}", i.code));
            }
            match i.code {
                // ld/ldx M[k], st/stx M[k]
                0x60 | 0x61 | 0x02 | 0x03 if i.k >= MEMWORDS => {
                    return bad(pc, "scratch memory index out of range");
                }
                // div/mod #0
                0x34 | 0x94 if i.k == 0 => return bad(pc, "division by a constant 0"),
                // lsh/rsh #k
                0x64 | 0x74 if i.k >= 32 => return bad(pc, "shift by 32 or more"),
                code if code & 0x07 == JMP => {
                    let next = pc + 1;
                    let in_range = if code == 0x05 {
                        // libpcap's `protochain` loops with a backward `ja` (a wrapped
                        // offset); the target must still be inside the program.
                        ((next as u32).wrapping_add(i.k) as usize) < n
                    } else {
                        next + usize::from(i.jt) < n && next + usize::from(i.jf) < n
                    };
                    if !in_range {
                        return bad(pc, "jump out of the program");
                    }
                }
                _ => {}
            }
        }
        if insns[n - 1].code & 0x07 != RET {
            return bad(n - 1, "the program does not end in a return");
        }
        Ok(Program { insns })
    }

    /// The instructions.
    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }

    /// Whether the Linux kernel would attach the program to a socket as far as its
    /// length goes (at most [`KERNEL_MAX_INSNS`] instructions).
    pub fn fits_kernel(&self) -> bool {
        self.insns.len() <= KERNEL_MAX_INSNS
    }

    /// Whether the program can read a scratch memory word before storing it. The kernel's
    /// checker refuses such programs; libpcap's interpreter reads stack garbage for them.
    /// tracekit's VM starts with zeroed scratch memory, so its verdicts stay deterministic
    /// (libpcap 1.10 itself emits such a program for `pppoes` on radiotap).
    pub fn reads_unset_memory(&self) -> bool {
        check_memory_use(&self.insns).is_err()
    }

    /// Whether the program accepts a packet (returns non-zero).
    #[inline]
    pub fn matches(&self, data: &[u8], wire_len: u32) -> bool {
        self.run(data, wire_len) != 0
    }

    /// Runs the program over a packet's captured bytes; `len`, `greater` and `less` see
    /// `wire_len`. The result is the snap length the program asks for, 0 to reject. A load
    /// past the captured bytes rejects the packet, as in libpcap and the kernel.
    pub fn run(&self, p: &[u8], wire_len: u32) -> u32 {
        use op::*;
        let (mut a, mut x) = (0u32, 0u32);
        let mut mem = [0u32; MEMWORDS as usize];
        let mut pc = 0usize;
        let insns = &self.insns[..];
        let mut budget = MAX_STEPS;
        loop {
            // Validation keeps pc in range; the budget ends loops (backward jumps).
            let Some(i) = insns.get(pc) else { return 0 };
            budget -= 1;
            if budget == 0 {
                return 0;
            }
            pc += 1;
            match i.code {
                // loads
                0x20 => match load(p, i.k as usize, 4) {
                    Some(v) => a = v,
                    None => return 0,
                },
                0x28 => match load(p, i.k as usize, 2) {
                    Some(v) => a = v,
                    None => return 0,
                },
                0x30 => match load(p, i.k as usize, 1) {
                    Some(v) => a = v,
                    None => return 0,
                },
                0x40 | 0x48 | 0x50 => {
                    let size = match i.code {
                        0x40 => 4,
                        0x48 => 2,
                        _ => 1,
                    };
                    let Some(at) = (x as usize).checked_add(i.k as usize) else {
                        return 0;
                    };
                    match load(p, at, size) {
                        Some(v) => a = v,
                        None => return 0,
                    }
                }
                0x00 => a = i.k,
                0x01 => x = i.k,
                0x80 => a = wire_len,
                0x81 => x = wire_len,
                0x60 => a = mem[(i.k & 0xf) as usize],
                0x61 => x = mem[(i.k & 0xf) as usize],
                0xb1 => match p.get(i.k as usize) {
                    Some(b) => x = u32::from(b & 0xf) << 2,
                    None => return 0,
                },
                // stores
                0x02 => mem[(i.k & 0xf) as usize] = a,
                0x03 => mem[(i.k & 0xf) as usize] = x,
                // returns
                0x06 => return i.k,
                0x16 => return a,
                // misc
                0x07 => x = a,
                0x87 => a = x,
                code if code & 0x07 == ALU => {
                    let v = if code & 0x08 == X { x } else { i.k };
                    a = match code & 0xf0 {
                        ADD => a.wrapping_add(v),
                        SUB => a.wrapping_sub(v),
                        MUL => a.wrapping_mul(v),
                        DIV => {
                            if v == 0 {
                                return 0;
                            }
                            a / v
                        }
                        MOD => {
                            if v == 0 {
                                return 0;
                            }
                            a % v
                        }
                        OR => a | v,
                        AND => a & v,
                        XOR => a ^ v,
                        LSH => {
                            if v < 32 {
                                a << v
                            } else {
                                0
                            }
                        }
                        RSH => {
                            if v < 32 {
                                a >> v
                            } else {
                                0
                            }
                        }
                        NEG => a.wrapping_neg(),
                        _ => return 0,
                    };
                }
                code if code & 0x07 == JMP => {
                    let o = code & 0xf0;
                    if o == JA {
                        pc = (pc as u32).wrapping_add(i.k) as usize;
                        continue;
                    }
                    let v = if code & 0x08 == X { x } else { i.k };
                    let taken = match o {
                        JEQ => a == v,
                        JGT => a > v,
                        JGE => a >= v,
                        JSET => a & v != 0,
                        _ => return 0,
                    };
                    pc += usize::from(if taken { i.jt } else { i.jf });
                }
                _ => return 0,
            }
        }
    }
}

/// Rejects a program that can read a scratch memory word before storing it, as the
/// kernel's checker does (libpcap's interpreter would read stack garbage). The words
/// surely written when reaching each instruction are the intersection over the paths
/// into it; a backward `ja` cannot add a word there (stores only add), so it is left out.
fn check_memory_use(insns: &[Insn]) -> Result<(), Error> {
    let n = insns.len();
    let mut written = vec![u16::MAX; n];
    written[0] = 0;
    for (pc, i) in insns.iter().enumerate() {
        let mut state = written[pc];
        match i.code {
            0x60 | 0x61 if state & (1 << i.k) == 0 => {
                return Err(Error::invalid_argument(format!(
                    "BPF instruction {pc}: reads scratch memory M[{}] before anything is stored there",
                    i.k
                )));
            }
            0x02 | 0x03 => state |= 1 << i.k,
            _ => {}
        }
        let mut flow = |target: usize| {
            if target < n && target > pc {
                written[target] &= state;
            }
        };
        match i.code {
            0x06 | 0x16 => {}
            0x05 => flow(((pc as u32 + 1).wrapping_add(i.k)) as usize),
            code if code & 0x07 == op::JMP => {
                flow(pc + 1 + usize::from(i.jt));
                flow(pc + 1 + usize::from(i.jf));
            }
            _ => flow(pc + 1),
        }
    }
    Ok(())
}

/// A big-endian load of `size` bytes at `at`, if the captured bytes hold it.
#[inline(always)]
fn load(p: &[u8], at: usize, size: usize) -> Option<u32> {
    let b = p.get(at..at.checked_add(size)?)?;
    Some(match size {
        4 => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        2 => u32::from(u16::from_be_bytes([b[0], b[1]])),
        _ => u32::from(b[0]),
    })
}

/// Parses `tcpdump -ddd` output: the instruction count on the first line, then one
/// `code jt jf k` line (decimal) per instruction.
pub fn parse_ddd(text: &str) -> Result<Vec<Insn>, Error> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let count: usize = lines.next().and_then(|l| l.parse().ok()).ok_or_else(|| {
        Error::invalid_argument("tcpdump -ddd output starts with the instruction count")
    })?;
    // The count is text from outside: it sizes nothing before the lines are there.
    let mut insns = Vec::with_capacity(count.min(MAX_INSNS));
    for (n, line) in lines.enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let parse = || -> Option<Insn> {
            Some(Insn::new(
                f.first()?.parse().ok()?,
                f.get(1)?.parse().ok()?,
                f.get(2)?.parse().ok()?,
                f.get(3)?.parse().ok()?,
            ))
        };
        match (f.len(), parse()) {
            (4, Some(i)) => insns.push(i),
            _ => {
                return Err(Error::invalid_argument(format!(
                    "tcpdump -ddd line {}: expected `code jt jf k`, found `{line}`",
                    n + 2
                )));
            }
        }
    }
    if insns.len() != count {
        return Err(Error::invalid_argument(format!(
            "tcpdump -ddd output announces {count} instructions but has {}",
            insns.len()
        )));
    }
    Ok(insns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_rejects_what_the_kernel_rejects() {
        let ret = Insn::new(0x06, 0, 0, 1);
        assert!(Program::new(vec![]).is_err());
        assert!(
            Program::new(vec![Insn::new(0x00, 0, 0, 1)]).is_err(),
            "no return"
        );
        assert!(
            Program::new(vec![Insn::new(0x15, 5, 0, 1), ret]).is_err(),
            "jump out"
        );
        assert!(
            Program::new(vec![Insn::new(0x05, 0, 0, 3), ret]).is_err(),
            "ja out"
        );
        // a backward ja (protochain) is fine, and an endless loop ends
        let looping = Program::new(vec![Insn::new(0x05, 0, 0, u32::MAX), ret]).unwrap();
        assert_eq!(looping.run(&[0; 4], 4), 0);
        assert!(
            Program::new(vec![Insn::new(0x02, 0, 0, 16), ret]).is_err(),
            "scratch index"
        );
        assert!(
            Program::new(vec![Insn::new(0x34, 0, 0, 0), ret]).is_err(),
            "div by 0"
        );
        assert!(
            Program::new(vec![Insn::new(0xff, 0, 0, 0), ret]).is_err(),
            "unknown"
        );
        assert!(Program::new(vec![Insn::new(0x34, 0, 0, 2), ret]).is_ok());
        // longer than the kernel takes: fine here, and said so
        let mut long = vec![Insn::new(0x00, 0, 0, 1); KERNEL_MAX_INSNS];
        long.push(ret);
        let long = Program::new(long).unwrap();
        assert!(!long.fits_kernel());
        assert!(long.matches(&[], 0));
        assert!(
            Program::new(vec![ret; KERNEL_MAX_INSNS])
                .unwrap()
                .fits_kernel()
        );
        assert!(Program::new(vec![ret; MAX_INSNS + 1]).is_err());
        // the longest program runs to its end within the step budget
        let mut longest = vec![Insn::new(0x00, 0, 0, 7); MAX_INSNS - 1];
        longest.push(Insn::new(0x16, 0, 0, 0)); // ret a
        assert_eq!(Program::new(longest).unwrap().run(&[], 0), 7);
        assert!(
            Program::new(vec![Insn::new(0x0d, 0, 0, 0), ret]).is_err(),
            "ja with the X bit"
        );
        // M[2] read before any store; after a store it is fine
        assert!(
            Program::new(vec![Insn::new(0x60, 0, 0, 2), ret])
                .unwrap()
                .reads_unset_memory()
        );
        assert!(
            !Program::new(vec![
                Insn::new(0x02, 0, 0, 2),
                Insn::new(0x60, 0, 0, 2),
                ret
            ])
            .unwrap()
            .reads_unset_memory()
        );
        // a store on only one branch does not count
        let one_branch = vec![
            Insn::new(0x15, 0, 1, 0),
            Insn::new(0x02, 0, 0, 3),
            Insn::new(0x60, 0, 0, 3),
            ret,
        ];
        assert!(Program::new(one_branch).unwrap().reads_unset_memory());
    }

    #[test]
    fn wire_length_and_loads_past_the_capture() {
        // ld len; jge #100 -> ret 1 else ret 0
        let p = Program::new(vec![
            Insn::new(0x80, 0, 0, 0),
            Insn::new(0x35, 0, 1, 100),
            Insn::new(0x06, 0, 0, 1),
            Insn::new(0x06, 0, 0, 0),
        ])
        .unwrap();
        assert!(p.matches(&[0; 10], 100));
        assert!(!p.matches(&[0; 200], 99));
        // a load past the captured bytes rejects
        let q = Program::new(vec![Insn::new(0x20, 0, 0, 8), Insn::new(0x06, 0, 0, 1)]).unwrap();
        assert!(!q.matches(&[0; 11], 1000));
        assert!(q.matches(&[0; 12], 12));
    }

    #[test]
    fn ddd_round_trip() {
        let text = "4\n40 0 0 12\n21 0 1 2048\n6 0 0 262144\n6 0 0 0\n";
        let insns = parse_ddd(text).unwrap();
        assert_eq!(insns[1], Insn::new(21, 0, 1, 2048));
        assert!(Program::new(insns).is_ok());
        assert!(parse_ddd("3\n40 0 0 12\n").is_err());
        assert!(parse_ddd("1\n40 0 zero 12\n").is_err());
    }
}
