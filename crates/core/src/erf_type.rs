//! ERF record types (`ERF_TYPE_*`): the one table of their numbers, names and payloads,
//! shared by the ERF format crate (which unpacks records) and the decoder (which walks
//! `LINKTYPE_ERF` records), so the two cannot disagree.
//!
//! Numbers and names follow the Endace ERF Types Reference Guide (as libpcap's and
//! Wireshark's `erf.h` spell them).

use std::fmt;

use crate::LinkType;

/// An ERF record type: the low 7 bits of the header's type byte (bit 7 says that an
/// extension header follows and is not part of the type).
///
/// ```
/// use tracekit_core::{ErfPayload, ErfType, LinkType};
/// assert_eq!(ErfType::COLOR_ETH, ErfType(11));
/// assert_eq!(ErfType(11).name(), Some("COLOR_ETH"));
/// assert_eq!(ErfType::from_type_byte(0x80 | 2), ErfType::ETH);
/// assert_eq!(ErfType::COLOR_HDLC_POS.payload(), ErfPayload::Hdlc);
/// assert_eq!(ErfPayload::Ethernet.type_header_len(), 2);
/// assert_eq!(ErfPayload::Hdlc.link_type(&[0xff, 0x03, 0x00, 0x21]), LinkType::PPP_HDLC);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErfType(pub u8);

/// What a record of some type carries after its header and extension headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErfPayload {
    /// An Ethernet frame after a 2-byte offset/pad field.
    Ethernet,
    /// An HDLC frame: PPP in HDLC-like framing or Cisco HDLC, told apart by its first
    /// bytes (see [`ErfPayload::link_type`]).
    Hdlc,
    /// A raw IPv4 packet.
    Ipv4,
    /// A raw IPv6 packet.
    Ipv6,
    /// Nothing a pcap link type describes (ATM, multichannel, counters, META, padding):
    /// the record is kept whole as `LINKTYPE_ERF`.
    Record,
}

impl ErfPayload {
    /// Bytes of type-specific header between the extension headers and the frame.
    #[inline]
    pub const fn type_header_len(self) -> usize {
        match self {
            ErfPayload::Ethernet => 2,
            _ => 0,
        }
    }

    /// The pcap link type of `frame`, a payload of this kind (`LINKTYPE_ERF` for
    /// [`ErfPayload::Record`]: the whole record is the packet).
    #[inline]
    pub fn link_type(self, frame: &[u8]) -> LinkType {
        match self {
            ErfPayload::Ethernet => LinkType::ETHERNET,
            // PPP in HDLC-like framing starts with address 0xFF and control 0x03;
            // anything else is Cisco HDLC.
            ErfPayload::Hdlc if frame.starts_with(&[0xff, 0x03]) => LinkType::PPP_HDLC,
            ErfPayload::Hdlc => LinkType::C_HDLC,
            ErfPayload::Ipv4 => LinkType::IPV4,
            ErfPayload::Ipv6 => LinkType::IPV6,
            ErfPayload::Record => LinkType::ERF,
        }
    }
}

macro_rules! erf_types {
    ($( $(#[$doc:meta])* $name:ident = $number:literal, $payload:ident, $colour:literal; )*) => {
        impl ErfType {
            $( $(#[$doc])* pub const $name: ErfType = ErfType($number); )*

            /// Every type the table names, in number order.
            pub const ALL: &'static [ErfType] = &[$(ErfType::$name,)*];

            /// The type's name without the `ERF_TYPE_` prefix, if the table names it.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($number => Some(stringify!($name)),)*
                    _ => None,
                }
            }

            /// What a record of this type carries ([`ErfPayload::Record`] for unknown
            /// types).
            #[inline]
            pub const fn payload(self) -> ErfPayload {
                match self.0 {
                    $($number => ErfPayload::$payload,)*
                    _ => ErfPayload::Record,
                }
            }

            /// Whether the header's loss-counter field holds a colour instead.
            #[inline]
            pub const fn is_colour(self) -> bool {
                match self.0 {
                    $($number => $colour,)*
                    _ => false,
                }
            }
        }
    };
}

erf_types! {
    /// Legacy (pre-ERF) record.
    LEGACY = 0, Record, false;
    /// PoS with HDLC framing.
    HDLC_POS = 1, Hdlc, false;
    /// Ethernet.
    ETH = 2, Ethernet, false;
    /// ATM cell.
    ATM = 3, Record, false;
    /// Reassembled AAL5 frame.
    AAL5 = 4, Record, false;
    /// Multichannel HDLC.
    MC_HDLC = 5, Record, false;
    /// Multichannel raw.
    MC_RAW = 6, Record, false;
    /// Multichannel ATM.
    MC_ATM = 7, Record, false;
    /// Multichannel raw link.
    MC_RAW_CHANNEL = 8, Record, false;
    /// Multichannel AAL5.
    MC_AAL5 = 9, Record, false;
    /// Colour HDLC PoS.
    COLOR_HDLC_POS = 10, Hdlc, true;
    /// Colour Ethernet.
    COLOR_ETH = 11, Ethernet, true;
    /// Multichannel AAL2.
    MC_AAL2 = 12, Record, false;
    /// IP counter.
    IP_COUNTER = 13, Record, false;
    /// TCP flow counter.
    TCP_FLOW_COUNTER = 14, Record, false;
    /// DSM colour HDLC PoS.
    DSM_COLOR_HDLC_POS = 15, Hdlc, true;
    /// DSM colour Ethernet.
    DSM_COLOR_ETH = 16, Ethernet, true;
    /// Colour multichannel HDLC PoS (a multichannel header precedes the HDLC frame).
    COLOR_MC_HDLC_POS = 17, Record, true;
    /// AAL2.
    AAL2 = 18, Record, false;
    /// Colour hash PoS.
    COLOR_HASH_POS = 19, Hdlc, true;
    /// Colour hash Ethernet.
    COLOR_HASH_ETH = 20, Ethernet, true;
    /// InfiniBand.
    INFINIBAND = 21, Record, false;
    /// IPv4.
    IPV4 = 22, Ipv4, false;
    /// IPv6.
    IPV6 = 23, Ipv6, false;
    /// Raw link.
    RAW_LINK = 24, Record, false;
    /// InfiniBand link.
    INFINIBAND_LINK = 25, Record, false;
    /// Provenance metadata (TLVs).
    META = 27, Record, false;
    /// Omni-Path SnC.
    OPA_SNC = 28, Record, false;
    /// Omni-Path 9B.
    OPA_9B = 29, Record, false;
    /// Padding record.
    PAD = 48, Record, false;
}

impl ErfType {
    /// The type in a header's type byte (bit 7, "an extension header follows", cleared).
    #[inline]
    pub const fn from_type_byte(byte: u8) -> ErfType {
        ErfType(byte & 0x7f)
    }

    /// Whether the table names this type.
    #[inline]
    pub const fn is_known(self) -> bool {
        self.name().is_some()
    }
}

impl fmt::Display for ErfType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "ERF type {}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ERF Types Reference Guide's numbers and names, written out independently of
    /// the table above.
    const SPEC: &[(u8, &str)] = &[
        (0, "LEGACY"),
        (1, "HDLC_POS"),
        (2, "ETH"),
        (3, "ATM"),
        (4, "AAL5"),
        (5, "MC_HDLC"),
        (6, "MC_RAW"),
        (7, "MC_ATM"),
        (8, "MC_RAW_CHANNEL"),
        (9, "MC_AAL5"),
        (10, "COLOR_HDLC_POS"),
        (11, "COLOR_ETH"),
        (12, "MC_AAL2"),
        (13, "IP_COUNTER"),
        (14, "TCP_FLOW_COUNTER"),
        (15, "DSM_COLOR_HDLC_POS"),
        (16, "DSM_COLOR_ETH"),
        (17, "COLOR_MC_HDLC_POS"),
        (18, "AAL2"),
        (19, "COLOR_HASH_POS"),
        (20, "COLOR_HASH_ETH"),
        (21, "INFINIBAND"),
        (22, "IPV4"),
        (23, "IPV6"),
        (24, "RAW_LINK"),
        (25, "INFINIBAND_LINK"),
        (27, "META"),
        (28, "OPA_SNC"),
        (29, "OPA_9B"),
        (48, "PAD"),
    ];

    #[test]
    fn numbers_and_names_match_the_spec() {
        let table: Vec<(u8, &str)> = ErfType::ALL
            .iter()
            .map(|t| (t.0, t.name().unwrap()))
            .collect();
        assert_eq!(table, SPEC);
        for n in 0..=127u8 {
            assert_eq!(
                ErfType(n).is_known(),
                SPEC.iter().any(|(s, _)| *s == n),
                "{n}"
            );
        }
    }

    #[test]
    fn colour_types_are_the_ones_copied_wrongly_before() {
        // 10/11/17 were once taken for COLOR_ETH/COLOR_HDLC_POS/colour HDLC.
        assert_eq!(ErfType(10), ErfType::COLOR_HDLC_POS);
        assert_eq!(ErfType(11), ErfType::COLOR_ETH);
        assert_eq!(ErfType(17), ErfType::COLOR_MC_HDLC_POS);
        assert_eq!(ErfType(10).payload(), ErfPayload::Hdlc);
        assert_eq!(ErfType(11).payload(), ErfPayload::Ethernet);
        assert_eq!(ErfType(17).payload(), ErfPayload::Record);
    }

    #[test]
    fn payloads_and_colours() {
        use ErfPayload::*;
        let carried: Vec<(u8, ErfPayload)> = ErfType::ALL
            .iter()
            .filter(|t| t.payload() != Record)
            .map(|t| (t.0, t.payload()))
            .collect();
        assert_eq!(
            carried,
            [
                (1, Hdlc),
                (2, Ethernet),
                (10, Hdlc),
                (11, Ethernet),
                (15, Hdlc),
                (16, Ethernet),
                (19, Hdlc),
                (20, Ethernet),
                (22, Ipv4),
                (23, Ipv6),
            ]
        );
        let colours: Vec<u8> = ErfType::ALL
            .iter()
            .filter(|t| t.is_colour())
            .map(|t| t.0)
            .collect();
        assert_eq!(colours, [10, 11, 15, 16, 17, 19, 20]);
        assert_eq!(ErfType(26).payload(), Record);
        assert_eq!(ErfType(26).to_string(), "ERF type 26");
        assert_eq!(ErfType::from_type_byte(0x80 | 22), ErfType::IPV4);
    }

    #[test]
    fn link_types_of_payloads() {
        assert_eq!(ErfPayload::Hdlc.link_type(&[0x0f, 0x00]), LinkType::C_HDLC);
        assert_eq!(ErfPayload::Hdlc.link_type(&[0xff]), LinkType::C_HDLC);
        assert_eq!(ErfPayload::Record.link_type(&[]), LinkType::ERF);
        assert_eq!(ErfPayload::Ipv6.link_type(&[]), LinkType::IPV6);
    }
}
