//! What a capture knows about an interface (pcapng IDB, ERF interface, live device).

use crate::{LinkType, TsResolution};

/// Description of a capture interface, as far as the source knows it. Writers that can
/// store it (pcapng) carry it over; others ignore it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceInfo {
    /// Interface name (`if_name`), e.g. `eth0`.
    pub name: Option<String>,
    /// Free-text description (`if_description`).
    pub description: Option<String>,
    /// Link-layer type of its packets.
    pub link_type: LinkType,
    /// Snap length (0: none declared).
    pub snaplen: u32,
    /// Time stamp resolution of its packets.
    pub ts_resolution: TsResolution,
    /// Length of the frame check sequence at the end of each packet, in bytes, if known.
    pub fcs_len: Option<u8>,
}

impl InterfaceInfo {
    /// An interface with only a link type known (µs resolution, no snap length).
    pub fn new(link_type: LinkType) -> InterfaceInfo {
        InterfaceInfo {
            name: None,
            description: None,
            link_type,
            snaplen: 0,
            ts_resolution: TsResolution::MICRO,
            fcs_len: None,
        }
    }
}
