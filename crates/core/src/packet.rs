//! Packets: borrowed bytes plus per-packet metadata.

use crate::{ByteOrder, LinkType, Timestamp};

/// Which way a packet went, as far as the capture knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Direction {
    /// Received by the capturing host or interface.
    Inbound,
    /// Sent by the capturing host or interface.
    Outbound,
    /// Not recorded by the format (classic pcap) or not known.
    #[default]
    Unknown,
}

/// What a record carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PacketKind {
    /// A captured packet, starting at its link-layer header.
    #[default]
    Data,
    /// A meta record (ERF META provenance, pcapng non-packet blocks) handed out on
    /// request (the facade's `MetaRecords` option). Not to be confused with [`Meta`],
    /// every packet's time stamp, lengths and link type.
    MetaRecord,
}

/// Everything known about a packet apart from its bytes (its metadata): time stamp,
/// lengths, link type, interface, direction. `Copy`, 40 bytes. A record that *is*
/// metadata (ERF META, pcapng non-packet blocks) is a [`PacketKind::MetaRecord`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// When the packet was captured.
    pub ts: Timestamp,
    /// Length on the wire as the format recorded it. It may be larger than the captured
    /// bytes (snap length) and, in damaged or odd files, even smaller; it is never
    /// invented or adjusted.
    pub wire_len: u32,
    /// Link-layer type of the captured bytes (per packet: pcapng interfaces and ERF
    /// records differ from packet to packet).
    pub link: LinkType,
    /// Interface number: pcapng interface id, ERF interface, ring ifindex; 0 when unknown.
    pub interface: u32,
    /// Direction, when the format records it.
    pub direction: Direction,
    /// Packets lost just before this one, when the source knows (ERF loss counter, ring
    /// drops, pcapng drop count); 0 otherwise.
    pub loss: u32,
    /// Packet or metadata record.
    pub kind: PacketKind,
}

impl Meta {
    /// Metadata for a data packet with the given time stamp, wire length and link type;
    /// the other fields take their "unknown" values.
    pub fn new(ts: Timestamp, wire_len: u32, link: LinkType) -> Meta {
        Meta {
            ts,
            wire_len,
            link,
            interface: 0,
            direction: Direction::Unknown,
            loss: 0,
            kind: PacketKind::Data,
        }
    }
}

/// A per-packet option list in pcapng's encoding (16-bit code, 16-bit length, value
/// padded to 4 bytes, in the byte order of its section), borrowed from the record. It
/// carries what `Meta` has no field for, comments first among them, so that a writer that
/// can store them (pcapng) carries them over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketOptions<'a> {
    bytes: &'a [u8],
    order: ByteOrder,
}

/// pcapng `opt_comment`.
const OPT_COMMENT: u16 = 1;

impl<'a> PacketOptions<'a> {
    /// Options encoded in `bytes` with `order`.
    pub fn new(bytes: &'a [u8], order: ByteOrder) -> PacketOptions<'a> {
        PacketOptions { bytes, order }
    }

    /// The encoded options as stored.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Their byte order.
    pub fn byte_order(&self) -> ByteOrder {
        self.order
    }

    /// `(code, value)` of each option up to `opt_endofopt` or the end of the bytes; a
    /// malformed option (length past the end) ends the list.
    pub fn iter(&self) -> impl Iterator<Item = (u16, &'a [u8])> + 'a {
        let (mut rest, order) = (self.bytes, self.order);
        std::iter::from_fn(move || {
            if rest.len() < 4 {
                return None;
            }
            let code = order.u16(&rest[0..2]);
            let len = usize::from(order.u16(&rest[2..4]));
            if code == 0 {
                return None;
            }
            let value = rest.get(4..4 + len)?;
            let padded = (4 + len + 3) & !3;
            rest = rest.get(padded..).unwrap_or(&[]);
            Some((code, value))
        })
    }

    /// The comments (`opt_comment`), those that are valid UTF-8.
    pub fn comments(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.iter()
            .filter(|(code, _)| *code == OPT_COMMENT)
            .filter_map(|(_, v)| std::str::from_utf8(v).ok())
    }

    /// Whether there is at least one comment.
    pub fn has_comments(&self) -> bool {
        self.comments().next().is_some()
    }
}

/// A packet borrowed from the buffer it was read into (a file mapping, a read block, a
/// ring block). The borrow checker keeps it from outliving that buffer; call
/// [`Packet::to_owned`] to keep one.
///
/// ```
/// use tracekit_core::{LinkType, Meta, Packet, Timestamp};
/// let bytes = [0u8; 60];
/// let p = Packet::new(&bytes, Meta::new(Timestamp::from_micros(1, 2), 60, LinkType::ETHERNET));
/// let kept = p.to_owned();
/// assert_eq!(kept.data(), &bytes[..]);
/// assert_eq!(kept.as_packet().meta(), p.meta());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    data: &'a [u8],
    meta: Meta,
    options: Option<PacketOptions<'a>>,
}

impl<'a> Packet<'a> {
    /// A packet over `data` with `meta`.
    #[inline]
    pub fn new(data: &'a [u8], meta: Meta) -> Packet<'a> {
        Packet {
            data,
            meta,
            options: None,
        }
    }

    /// The same packet with a per-packet option list (comments and the like).
    #[inline]
    pub fn with_options(mut self, options: Option<PacketOptions<'a>>) -> Packet<'a> {
        self.options = options;
        self
    }

    /// Per-packet options the source recorded (pcapng), if any.
    #[inline]
    pub fn options(&self) -> Option<PacketOptions<'a>> {
        self.options
    }

    /// The captured bytes, starting at the link-layer header.
    #[inline]
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// The metadata.
    #[inline]
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// Mutable metadata, for sources and filters that adjust it (e.g. a snap length).
    #[inline]
    pub fn meta_mut(&mut self) -> &mut Meta {
        &mut self.meta
    }

    /// Capture time stamp.
    #[inline]
    pub fn ts(&self) -> Timestamp {
        self.meta.ts
    }

    /// Number of captured bytes.
    #[inline]
    pub fn caplen(&self) -> usize {
        self.data.len()
    }

    /// Length on the wire as recorded.
    #[inline]
    pub fn wire_len(&self) -> u32 {
        self.meta.wire_len
    }

    /// Link-layer type.
    #[inline]
    pub fn link_type(&self) -> LinkType {
        self.meta.link
    }

    /// Whether fewer bytes were captured than were on the wire.
    #[inline]
    pub fn is_truncated(&self) -> bool {
        (self.data.len() as u64) < u64::from(self.meta.wire_len)
    }

    /// The same packet with its captured bytes cut to at most `snaplen` (wire length kept).
    #[inline]
    pub fn snapped(self, snaplen: usize) -> Packet<'a> {
        let end = self.data.len().min(snaplen);
        Packet {
            data: &self.data[..end],
            meta: self.meta,
            options: self.options,
        }
    }

    /// Copies the bytes out so the packet can be kept past the next read.
    pub fn to_owned(&self) -> OwnedPacket {
        OwnedPacket {
            data: self.data.to_vec().into_boxed_slice(),
            meta: self.meta,
            options: self
                .options
                .map(|o| (o.bytes.to_vec().into_boxed_slice(), o.order)),
        }
    }
}

/// A packet that owns its bytes: made by [`Packet::to_owned`], the one way to keep a
/// packet past the next `next_packet` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedPacket {
    data: Box<[u8]>,
    meta: Meta,
    options: Option<(Box<[u8]>, ByteOrder)>,
}

impl OwnedPacket {
    /// A packet owning `data`, with `meta`.
    pub fn new(data: impl Into<Box<[u8]>>, meta: Meta) -> OwnedPacket {
        OwnedPacket {
            data: data.into(),
            meta,
            options: None,
        }
    }

    /// The captured bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The metadata.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// Mutable metadata.
    pub fn meta_mut(&mut self) -> &mut Meta {
        &mut self.meta
    }

    /// A borrowed view, for writing to a sink or decoding.
    pub fn as_packet(&self) -> Packet<'_> {
        Packet::new(&self.data, self.meta).with_options(
            self.options
                .as_ref()
                .map(|(bytes, order)| PacketOptions::new(bytes, *order)),
        )
    }
}

impl<'a> From<&'a OwnedPacket> for Packet<'a> {
    fn from(p: &'a OwnedPacket) -> Packet<'a> {
        p.as_packet()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_is_small() {
        assert!(std::mem::size_of::<Meta>() <= 40);
    }

    #[test]
    fn options_iterate_and_survive_to_owned() {
        // comment "hi", unknown option 9 with 3 bytes, end of options
        let le = ByteOrder::Little;
        let mut raw = Vec::new();
        raw.extend_from_slice(&le.put_u16(1));
        raw.extend_from_slice(&le.put_u16(2));
        raw.extend_from_slice(b"hi\0\0");
        raw.extend_from_slice(&le.put_u16(9));
        raw.extend_from_slice(&le.put_u16(3));
        raw.extend_from_slice(&[1, 2, 3, 0]);
        raw.extend_from_slice(&[0, 0, 0, 0]);
        let opts = PacketOptions::new(&raw, le);
        assert_eq!(opts.iter().count(), 2);
        assert_eq!(opts.comments().collect::<Vec<_>>(), ["hi"]);
        let bytes = [0u8; 4];
        let p = Packet::new(&bytes, Meta::new(Timestamp::ZERO, 4, LinkType::RAW))
            .with_options(Some(opts));
        let kept = p.to_owned();
        assert_eq!(
            kept.as_packet()
                .options()
                .unwrap()
                .comments()
                .collect::<Vec<_>>(),
            ["hi"]
        );
        // a length running past the end stops the list
        let bad = [1u8, 0, 200, 0, b'x'];
        assert_eq!(PacketOptions::new(&bad, le).iter().count(), 0);
    }

    #[test]
    fn snapped_keeps_wire_len() {
        let bytes = [1u8; 100];
        let p =
            Packet::new(&bytes, Meta::new(Timestamp::ZERO, 100, LinkType::ETHERNET)).snapped(64);
        assert_eq!(p.caplen(), 64);
        assert_eq!(p.wire_len(), 100);
        assert!(p.is_truncated());
    }
}
