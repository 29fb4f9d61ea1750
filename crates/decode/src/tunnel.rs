//! UDP-carried tunnel headers: VXLAN, Geneve and GTP-U.

use crate::bytes::{be16, be32, u8_at};

/// The well-known UDP ports the decoder looks for tunnels on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TunnelPorts {
    /// VXLAN (IANA 4789).
    pub vxlan: u16,
    /// Geneve (IANA 6081).
    pub geneve: u16,
    /// GTP-U (IANA 2152).
    pub gtpu: u16,
}

impl Default for TunnelPorts {
    fn default() -> TunnelPorts {
        TunnelPorts {
            vxlan: 4789,
            geneve: 6081,
            gtpu: 2152,
        }
    }
}

/// What was found in a UDP tunnel header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UdpTunnel {
    Vxlan { vni: u32, len: usize },
    Geneve { vni: u32, protocol: u16, len: usize },
    GtpU { teid: u32, len: usize },
}

/// Why a tunnel header was not followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TunnelError {
    Truncated,
    Malformed,
    /// Not a tunnel after all (GTP-U signalling, for instance).
    NotData,
}

pub(crate) fn vxlan(b: &[u8]) -> Result<UdpTunnel, TunnelError> {
    let flags = u8_at(b, 0).ok_or(TunnelError::Truncated)?;
    let word = be32(b, 4).ok_or(TunnelError::Truncated)?;
    if flags & 0x08 == 0 {
        return Err(TunnelError::Malformed);
    }
    Ok(UdpTunnel::Vxlan {
        vni: word >> 8,
        len: 8,
    })
}

pub(crate) fn geneve(b: &[u8]) -> Result<UdpTunnel, TunnelError> {
    let b0 = u8_at(b, 0).ok_or(TunnelError::Truncated)?;
    let protocol = be16(b, 2).ok_or(TunnelError::Truncated)?;
    let word = be32(b, 4).ok_or(TunnelError::Truncated)?;
    if b0 >> 6 != 0 {
        return Err(TunnelError::Malformed);
    }
    let len = 8 + usize::from(b0 & 0x3f) * 4;
    if b.len() < len {
        return Err(TunnelError::Truncated);
    }
    Ok(UdpTunnel::Geneve {
        vni: word >> 8,
        protocol,
        len,
    })
}

pub(crate) fn gtpu(b: &[u8]) -> Result<UdpTunnel, TunnelError> {
    let flags = u8_at(b, 0).ok_or(TunnelError::Truncated)?;
    let msg_type = u8_at(b, 1).ok_or(TunnelError::Truncated)?;
    let teid = be32(b, 4).ok_or(TunnelError::Truncated)?;
    if flags >> 5 != 1 || flags & 0x10 == 0 {
        return Err(TunnelError::Malformed);
    }
    if msg_type != 0xFF {
        return Err(TunnelError::NotData);
    }
    let mut len = 8;
    if flags & 0x07 != 0 {
        // sequence number, N-PDU number and next extension header type
        let mut next = u8_at(b, 11).ok_or(TunnelError::Truncated)?;
        len = 12;
        let mut count = 0;
        while next != 0 {
            let words = usize::from(u8_at(b, len).ok_or(TunnelError::Truncated)?);
            if words == 0 || count == 16 {
                return Err(TunnelError::Malformed);
            }
            len += words * 4;
            next = u8_at(b, len - 1).ok_or(TunnelError::Truncated)?;
            count += 1;
        }
    }
    if b.len() < len {
        return Err(TunnelError::Truncated);
    }
    Ok(UdpTunnel::GtpU { teid, len })
}
