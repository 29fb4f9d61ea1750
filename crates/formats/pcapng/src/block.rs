//! Block types and the generic option encoding of pcapng.
//!
//! ```text
//! block:   type (4) | total length (4) | body ... | total length (4)     all multiples of 4
//! option:  code (2) | length (2) | value, padded to 4                     code 0 ends the list
//! ```

use tracekit_core::ByteOrder;

/// Section Header Block (also the file magic; a palindrome, so byte-order free).
pub const SHB: u32 = 0x0A0D_0D0A;
/// Interface Description Block.
pub const IDB: u32 = 0x0000_0001;
/// Packet Block (obsolete).
pub const OPB: u32 = 0x0000_0002;
/// Simple Packet Block.
pub const SPB: u32 = 0x0000_0003;
/// Name Resolution Block.
pub const NRB: u32 = 0x0000_0004;
/// Interface Statistics Block.
pub const ISB: u32 = 0x0000_0005;
/// Enhanced Packet Block.
pub const EPB: u32 = 0x0000_0006;
/// systemd Journal Export Block.
pub const JOURNAL: u32 = 0x0000_0009;
/// Decryption Secrets Block.
pub const DSB: u32 = 0x0000_000A;
/// Custom Block that rewriters may copy.
pub const CB_COPY: u32 = 0x0000_0BAD;
/// Custom Block that rewriters must not copy.
pub const CB_NOCOPY: u32 = 0x4000_0BAD;

/// The byte-order magic of a Section Header Block.
pub const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;

/// Blocks larger than this are damage, not data (Wireshark's own bound is 16 MiB).
pub const MAX_BLOCK_LEN: u32 = 32 * 1024 * 1024;

/// Option codes used here.
pub mod opt {
    /// `opt_endofopt`.
    pub const END: u16 = 0;
    /// `opt_comment`.
    pub const COMMENT: u16 = 1;
    /// `shb_hardware`.
    pub const SHB_HARDWARE: u16 = 2;
    /// `shb_os`.
    pub const SHB_OS: u16 = 3;
    /// `shb_userappl`.
    pub const SHB_USERAPPL: u16 = 4;
    /// `if_name`.
    pub const IF_NAME: u16 = 2;
    /// `if_description`.
    pub const IF_DESCRIPTION: u16 = 3;
    /// `if_tsresol`.
    pub const IF_TSRESOL: u16 = 9;
    /// `if_fcslen`.
    pub const IF_FCSLEN: u16 = 13;
    /// `if_tsoffset`.
    pub const IF_TSOFFSET: u16 = 14;
    /// `epb_flags` (also `pack_flags` of the obsolete Packet Block).
    pub const EPB_FLAGS: u16 = 2;
    /// `epb_dropcount`.
    pub const EPB_DROPCOUNT: u16 = 4;
    /// `isb_starttime`.
    pub const ISB_STARTTIME: u16 = 2;
    /// `isb_endtime`.
    pub const ISB_ENDTIME: u16 = 3;
    /// `isb_ifrecv`.
    pub const ISB_IFRECV: u16 = 4;
    /// `isb_ifdrop`.
    pub const ISB_IFDROP: u16 = 5;
    /// `isb_filteraccept`.
    pub const ISB_FILTERACCEPT: u16 = 6;
    /// `isb_osdrop`.
    pub const ISB_OSDROP: u16 = 7;
    /// `isb_usrdeliv`.
    pub const ISB_USRDELIV: u16 = 8;
}

/// The only major version of the format; a reader must not guess at another.
pub const MAJOR_VERSION: u16 = 1;

/// An option whose value runs past the end of its block's option bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionOverrun {
    /// Where the option starts, from the start of the option bytes.
    pub at: usize,
    /// Its code.
    pub code: u16,
    /// The value length it claims.
    pub len: usize,
    /// The bytes left for its value.
    pub room: usize,
}

/// Checks that every option up to `opt_endofopt` (or the end) fits in `options`, a
/// block's option bytes: Wireshark refuses a file with one that does not, and a reader
/// that stopped quietly would drop the options after it.
pub fn check_options(options: &[u8], order: ByteOrder) -> Result<(), OptionOverrun> {
    let mut at = 0;
    while let Some(head) = options.get(at..at + 4) {
        let code = order.u16(&head[0..2]);
        let len = usize::from(order.u16(&head[2..4]));
        if code == opt::END {
            break;
        }
        let room = options.len() - at - 4;
        if len > room {
            return Err(OptionOverrun {
                at,
                code,
                len,
                room,
            });
        }
        at += padded(4 + len);
    }
    Ok(())
}

/// Bytes needed to pad `len` to a multiple of 4.
#[inline]
pub fn padded(len: usize) -> usize {
    (len + 3) & !3
}

/// A short name for a block type, for messages.
pub fn name(block_type: u32) -> &'static str {
    match block_type {
        SHB => "Section Header Block",
        IDB => "Interface Description Block",
        OPB => "Packet Block",
        SPB => "Simple Packet Block",
        NRB => "Name Resolution Block",
        ISB => "Interface Statistics Block",
        EPB => "Enhanced Packet Block",
        JOURNAL => "systemd Journal Export Block",
        DSB => "Decryption Secrets Block",
        CB_COPY | CB_NOCOPY => "Custom Block",
        _ => "block",
    }
}
