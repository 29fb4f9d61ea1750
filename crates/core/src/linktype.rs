//! Link-layer types: the pcap `LINKTYPE_*` registry, as stored in pcap and pcapng files.

use std::fmt;

/// A link-layer header type, by its pcap `LINKTYPE_*` number.
///
/// Unknown values are kept as they are, never rejected: a file with a link type this table
/// does not name still reads, converts and filters.
///
/// ```
/// use tracekit_core::LinkType;
/// assert_eq!(LinkType::ETHERNET.name(), Some("ETHERNET"));
/// assert_eq!(LinkType::from_name("linux_sll2"), Some(LinkType::LINUX_SLL2));
/// assert_eq!(LinkType(4242).to_string(), "LINKTYPE 4242");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkType(pub u32);

impl LinkType {
    /// `LINKTYPE_NULL` (0): BSD loopback, host-order address family.
    pub const NULL: LinkType = LinkType(0);
    /// `LINKTYPE_ETHERNET` (1): Ethernet (10Mb and up).
    pub const ETHERNET: LinkType = LinkType(1);
    /// `LINKTYPE_AX25` (3): AX.25.
    pub const AX25: LinkType = LinkType(3);
    /// `LINKTYPE_IEEE802_5` (6): IEEE 802.5 Token Ring.
    pub const IEEE802_5: LinkType = LinkType(6);
    /// `LINKTYPE_ARCNET_BSD` (7): ARCNET (BSD).
    pub const ARCNET_BSD: LinkType = LinkType(7);
    /// `LINKTYPE_SLIP` (8): SLIP.
    pub const SLIP: LinkType = LinkType(8);
    /// `LINKTYPE_PPP` (9): PPP.
    pub const PPP: LinkType = LinkType(9);
    /// `LINKTYPE_FDDI` (10): FDDI.
    pub const FDDI: LinkType = LinkType(10);
    /// `LINKTYPE_PPP_HDLC` (50): PPP in HDLC-like framing.
    pub const PPP_HDLC: LinkType = LinkType(50);
    /// `LINKTYPE_PPP_ETHER` (51): PPPoE.
    pub const PPP_ETHER: LinkType = LinkType(51);
    /// `LINKTYPE_ATM_RFC1483` (100): RFC 1483 LLC/SNAP ATM.
    pub const ATM_RFC1483: LinkType = LinkType(100);
    /// `LINKTYPE_RAW` (101): raw IP.
    pub const RAW: LinkType = LinkType(101);
    /// `LINKTYPE_C_HDLC` (104): Cisco HDLC.
    pub const C_HDLC: LinkType = LinkType(104);
    /// `LINKTYPE_IEEE802_11` (105): IEEE 802.11 wireless.
    pub const IEEE802_11: LinkType = LinkType(105);
    /// `LINKTYPE_FRELAY` (107): Frame Relay.
    pub const FRELAY: LinkType = LinkType(107);
    /// `LINKTYPE_LOOP` (108): OpenBSD loopback, network-order address family.
    pub const LOOP: LinkType = LinkType(108);
    /// `LINKTYPE_LINUX_SLL` (113): Linux cooked capture v1.
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// `LINKTYPE_LTALK` (114): Apple LocalTalk.
    pub const LTALK: LinkType = LinkType(114);
    /// `LINKTYPE_PFLOG` (117): OpenBSD pflog.
    pub const PFLOG: LinkType = LinkType(117);
    /// `LINKTYPE_IEEE802_11_PRISM` (119): 802.11 with Prism header.
    pub const IEEE802_11_PRISM: LinkType = LinkType(119);
    /// `LINKTYPE_IP_OVER_FC` (122): IP over Fibre Channel.
    pub const IP_OVER_FC: LinkType = LinkType(122);
    /// `LINKTYPE_SUNATM` (123): SunATM.
    pub const SUNATM: LinkType = LinkType(123);
    /// `LINKTYPE_IEEE802_11_RADIOTAP` (127): 802.11 with Radiotap header.
    pub const IEEE802_11_RADIOTAP: LinkType = LinkType(127);
    /// `LINKTYPE_ARCNET_LINUX` (129): ARCNET (Linux).
    pub const ARCNET_LINUX: LinkType = LinkType(129);
    /// `LINKTYPE_APPLE_IP_OVER_IEEE1394` (138): Apple IP over IEEE 1394.
    pub const APPLE_IP_OVER_IEEE1394: LinkType = LinkType(138);
    /// `LINKTYPE_MTP2_WITH_PHDR` (139): SS7 MTP2 with pseudo-header.
    pub const MTP2_WITH_PHDR: LinkType = LinkType(139);
    /// `LINKTYPE_MTP2` (140): SS7 MTP2.
    pub const MTP2: LinkType = LinkType(140);
    /// `LINKTYPE_MTP3` (141): SS7 MTP3.
    pub const MTP3: LinkType = LinkType(141);
    /// `LINKTYPE_SCCP` (142): SS7 SCCP.
    pub const SCCP: LinkType = LinkType(142);
    /// `LINKTYPE_DOCSIS` (143): DOCSIS MAC frames.
    pub const DOCSIS: LinkType = LinkType(143);
    /// `LINKTYPE_LINUX_IRDA` (144): Linux IrDA.
    pub const LINUX_IRDA: LinkType = LinkType(144);
    /// `LINKTYPE_USER0` (147): user-defined 0.
    pub const USER0: LinkType = LinkType(147);
    /// `LINKTYPE_USER1` (148): user-defined 1.
    pub const USER1: LinkType = LinkType(148);
    /// `LINKTYPE_USER2` (149): user-defined 2.
    pub const USER2: LinkType = LinkType(149);
    /// `LINKTYPE_USER3` (150): user-defined 3.
    pub const USER3: LinkType = LinkType(150);
    /// `LINKTYPE_USER4` (151): user-defined 4.
    pub const USER4: LinkType = LinkType(151);
    /// `LINKTYPE_USER5` (152): user-defined 5.
    pub const USER5: LinkType = LinkType(152);
    /// `LINKTYPE_USER6` (153): user-defined 6.
    pub const USER6: LinkType = LinkType(153);
    /// `LINKTYPE_USER7` (154): user-defined 7.
    pub const USER7: LinkType = LinkType(154);
    /// `LINKTYPE_USER8` (155): user-defined 8.
    pub const USER8: LinkType = LinkType(155);
    /// `LINKTYPE_USER9` (156): user-defined 9.
    pub const USER9: LinkType = LinkType(156);
    /// `LINKTYPE_USER10` (157): user-defined 10.
    pub const USER10: LinkType = LinkType(157);
    /// `LINKTYPE_USER11` (158): user-defined 11.
    pub const USER11: LinkType = LinkType(158);
    /// `LINKTYPE_USER12` (159): user-defined 12.
    pub const USER12: LinkType = LinkType(159);
    /// `LINKTYPE_USER13` (160): user-defined 13.
    pub const USER13: LinkType = LinkType(160);
    /// `LINKTYPE_USER14` (161): user-defined 14.
    pub const USER14: LinkType = LinkType(161);
    /// `LINKTYPE_USER15` (162): user-defined 15.
    pub const USER15: LinkType = LinkType(162);
    /// `LINKTYPE_IEEE802_11_AVS` (163): 802.11 with AVS header.
    pub const IEEE802_11_AVS: LinkType = LinkType(163);
    /// `LINKTYPE_BACNET_MS_TP` (165): BACnet MS/TP.
    pub const BACNET_MS_TP: LinkType = LinkType(165);
    /// `LINKTYPE_PPP_PPPD` (166): PPP in HDLC-like framing with direction (pppd).
    pub const PPP_PPPD: LinkType = LinkType(166);
    /// `LINKTYPE_GPRS_LLC` (169): GPRS LLC.
    pub const GPRS_LLC: LinkType = LinkType(169);
    /// `LINKTYPE_GPF_T` (170): GPF-T (ITU-T G.7041).
    pub const GPF_T: LinkType = LinkType(170);
    /// `LINKTYPE_GPF_F` (171): GPF-F (ITU-T G.7041).
    pub const GPF_F: LinkType = LinkType(171);
    /// `LINKTYPE_LINUX_LAPD` (177): LAPD with Linux vISDN header.
    pub const LINUX_LAPD: LinkType = LinkType(177);
    /// `LINKTYPE_MFR` (182): FRF.16.1 Multi-Link Frame Relay.
    pub const MFR: LinkType = LinkType(182);
    /// `LINKTYPE_BLUETOOTH_HCI_H4` (187): Bluetooth HCI UART H4.
    pub const BLUETOOTH_HCI_H4: LinkType = LinkType(187);
    /// `LINKTYPE_USB_LINUX` (189): Linux USB (48-byte header).
    pub const USB_LINUX: LinkType = LinkType(189);
    /// `LINKTYPE_PPI` (192): Per-Packet Information.
    pub const PPI: LinkType = LinkType(192);
    /// `LINKTYPE_IEEE802_15_4_WITHFCS` (195): IEEE 802.15.4 with FCS.
    pub const IEEE802_15_4_WITHFCS: LinkType = LinkType(195);
    /// `LINKTYPE_SITA` (196): SITA.
    pub const SITA: LinkType = LinkType(196);
    /// `LINKTYPE_ERF` (197): Endace ERF records.
    pub const ERF: LinkType = LinkType(197);
    /// `LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR` (201): Bluetooth HCI UART H4 with pseudo-header.
    pub const BLUETOOTH_HCI_H4_WITH_PHDR: LinkType = LinkType(201);
    /// `LINKTYPE_AX25_KISS` (202): AX.25 with KISS header.
    pub const AX25_KISS: LinkType = LinkType(202);
    /// `LINKTYPE_LAPD` (203): LAPD.
    pub const LAPD: LinkType = LinkType(203);
    /// `LINKTYPE_PPP_WITH_DIR` (204): PPP with direction.
    pub const PPP_WITH_DIR: LinkType = LinkType(204);
    /// `LINKTYPE_C_HDLC_WITH_DIR` (205): Cisco HDLC with direction.
    pub const C_HDLC_WITH_DIR: LinkType = LinkType(205);
    /// `LINKTYPE_FRELAY_WITH_DIR` (206): Frame Relay with direction.
    pub const FRELAY_WITH_DIR: LinkType = LinkType(206);
    /// `LINKTYPE_LAPB_WITH_DIR` (207): LAPB with direction.
    pub const LAPB_WITH_DIR: LinkType = LinkType(207);
    /// `LINKTYPE_IPMB_LINUX` (209): IPMB over I2C (Linux).
    pub const IPMB_LINUX: LinkType = LinkType(209);
    /// `LINKTYPE_FLEXRAY` (210): FlexRay.
    pub const FLEXRAY: LinkType = LinkType(210);
    /// `LINKTYPE_LIN` (212): LIN bus.
    pub const LIN: LinkType = LinkType(212);
    /// `LINKTYPE_IEEE802_15_4_NONASK_PHY` (215): IEEE 802.15.4 with PHY.
    pub const IEEE802_15_4_NONASK_PHY: LinkType = LinkType(215);
    /// `LINKTYPE_USB_LINUX_MMAPPED` (220): Linux USB (64-byte header).
    pub const USB_LINUX_MMAPPED: LinkType = LinkType(220);
    /// `LINKTYPE_FC_2` (224): Fibre Channel FC-2.
    pub const FC_2: LinkType = LinkType(224);
    /// `LINKTYPE_FC_2_WITH_FRAME_DELIMS` (225): Fibre Channel FC-2 with delimiters.
    pub const FC_2_WITH_FRAME_DELIMS: LinkType = LinkType(225);
    /// `LINKTYPE_IPNET` (226): Solaris ipnet.
    pub const IPNET: LinkType = LinkType(226);
    /// `LINKTYPE_CAN_SOCKETCAN` (227): SocketCAN.
    pub const CAN_SOCKETCAN: LinkType = LinkType(227);
    /// `LINKTYPE_IPV4` (228): raw IPv4.
    pub const IPV4: LinkType = LinkType(228);
    /// `LINKTYPE_IPV6` (229): raw IPv6.
    pub const IPV6: LinkType = LinkType(229);
    /// `LINKTYPE_IEEE802_15_4_NOFCS` (230): IEEE 802.15.4 without FCS.
    pub const IEEE802_15_4_NOFCS: LinkType = LinkType(230);
    /// `LINKTYPE_DBUS` (231): D-Bus messages.
    pub const DBUS: LinkType = LinkType(231);
    /// `LINKTYPE_DVB_CI` (235): DVB-CI.
    pub const DVB_CI: LinkType = LinkType(235);
    /// `LINKTYPE_MUX27010` (236): 3GPP TS 27.010 multiplexing.
    pub const MUX27010: LinkType = LinkType(236);
    /// `LINKTYPE_STANAG_5066_D_PDU` (237): STANAG 5066 D_PDU.
    pub const STANAG_5066_D_PDU: LinkType = LinkType(237);
    /// `LINKTYPE_NFLOG` (239): Linux netfilter NFLOG.
    pub const NFLOG: LinkType = LinkType(239);
    /// `LINKTYPE_NETANALYZER` (240): Hilscher netANALYZER.
    pub const NETANALYZER: LinkType = LinkType(240);
    /// `LINKTYPE_NETANALYZER_TRANSPARENT` (241): Hilscher netANALYZER (transparent).
    pub const NETANALYZER_TRANSPARENT: LinkType = LinkType(241);
    /// `LINKTYPE_IPOIB` (242): IP over InfiniBand.
    pub const IPOIB: LinkType = LinkType(242);
    /// `LINKTYPE_MPEG_2_TS` (243): MPEG-2 transport stream.
    pub const MPEG_2_TS: LinkType = LinkType(243);
    /// `LINKTYPE_NG40` (244): ng40 protocol tester.
    pub const NG40: LinkType = LinkType(244);
    /// `LINKTYPE_NFC_LLCP` (245): NFC LLCP.
    pub const NFC_LLCP: LinkType = LinkType(245);
    /// `LINKTYPE_INFINIBAND` (247): InfiniBand.
    pub const INFINIBAND: LinkType = LinkType(247);
    /// `LINKTYPE_SCTP` (248): SCTP without lower layers.
    pub const SCTP: LinkType = LinkType(248);
    /// `LINKTYPE_USBPCAP` (249): USBPcap.
    pub const USBPCAP: LinkType = LinkType(249);
    /// `LINKTYPE_RTAC_SERIAL` (250): SEL RTAC serial.
    pub const RTAC_SERIAL: LinkType = LinkType(250);
    /// `LINKTYPE_BLUETOOTH_LE_LL` (251): Bluetooth LE link layer.
    pub const BLUETOOTH_LE_LL: LinkType = LinkType(251);
    /// `LINKTYPE_NETLINK` (253): Linux netlink.
    pub const NETLINK: LinkType = LinkType(253);
    /// `LINKTYPE_BLUETOOTH_LINUX_MONITOR` (254): Bluetooth Linux monitor.
    pub const BLUETOOTH_LINUX_MONITOR: LinkType = LinkType(254);
    /// `LINKTYPE_BLUETOOTH_BREDR_BB` (255): Bluetooth BR/EDR baseband.
    pub const BLUETOOTH_BREDR_BB: LinkType = LinkType(255);
    /// `LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR` (256): Bluetooth LE link layer with pseudo-header.
    pub const BLUETOOTH_LE_LL_WITH_PHDR: LinkType = LinkType(256);
    /// `LINKTYPE_PROFIBUS_DL` (257): PROFIBUS data link.
    pub const PROFIBUS_DL: LinkType = LinkType(257);
    /// `LINKTYPE_PKTAP` (258): Apple PKTAP.
    pub const PKTAP: LinkType = LinkType(258);
    /// `LINKTYPE_EPON` (259): Ethernet passive optical network.
    pub const EPON: LinkType = LinkType(259);
    /// `LINKTYPE_IPMI_HPM_2` (260): IPMI HPM.2 trace.
    pub const IPMI_HPM_2: LinkType = LinkType(260);
    /// `LINKTYPE_ZWAVE_R1_R2` (261): Z-Wave R1/R2.
    pub const ZWAVE_R1_R2: LinkType = LinkType(261);
    /// `LINKTYPE_ZWAVE_R3` (262): Z-Wave R3.
    pub const ZWAVE_R3: LinkType = LinkType(262);
    /// `LINKTYPE_WATTSTOPPER_DLM` (263): WattStopper DLM.
    pub const WATTSTOPPER_DLM: LinkType = LinkType(263);
    /// `LINKTYPE_ISO_14443` (264): ISO 14443 contactless smartcard.
    pub const ISO_14443: LinkType = LinkType(264);
    /// `LINKTYPE_RDS` (265): IEC 62106 Radio Data System.
    pub const RDS: LinkType = LinkType(265);
    /// `LINKTYPE_USB_DARWIN` (266): USB (Darwin).
    pub const USB_DARWIN: LinkType = LinkType(266);
    /// `LINKTYPE_SDLC` (268): SDLC.
    pub const SDLC: LinkType = LinkType(268);
    /// `LINKTYPE_LORATAP` (270): LoRaTap.
    pub const LORATAP: LinkType = LinkType(270);
    /// `LINKTYPE_VSOCK` (271): Linux vsock.
    pub const VSOCK: LinkType = LinkType(271);
    /// `LINKTYPE_NORDIC_BLE` (272): Nordic BLE sniffer.
    pub const NORDIC_BLE: LinkType = LinkType(272);
    /// `LINKTYPE_DOCSIS31_XRA31` (273): DOCSIS 3.1 Excentis XRA-31.
    pub const DOCSIS31_XRA31: LinkType = LinkType(273);
    /// `LINKTYPE_ETHERNET_MPACKET` (274): IEEE 802.3br mPackets.
    pub const ETHERNET_MPACKET: LinkType = LinkType(274);
    /// `LINKTYPE_DISPLAYPORT_AUX` (275): DisplayPort AUX channel.
    pub const DISPLAYPORT_AUX: LinkType = LinkType(275);
    /// `LINKTYPE_LINUX_SLL2` (276): Linux cooked capture v2.
    pub const LINUX_SLL2: LinkType = LinkType(276);
    /// `LINKTYPE_OPENVIZSLA` (278): OpenVizsla USB.
    pub const OPENVIZSLA: LinkType = LinkType(278);
    /// `LINKTYPE_EBHSCR` (279): Elektrobit high-speed capture and replay.
    pub const EBHSCR: LinkType = LinkType(279);
    /// `LINKTYPE_VPP_DISPATCH` (280): fd.io VPP graph dispatch.
    pub const VPP_DISPATCH: LinkType = LinkType(280);
    /// `LINKTYPE_DSA_TAG_BRCM` (281): Broadcom DSA tag.
    pub const DSA_TAG_BRCM: LinkType = LinkType(281);
    /// `LINKTYPE_DSA_TAG_BRCM_PREPEND` (282): Broadcom DSA tag, prepended.
    pub const DSA_TAG_BRCM_PREPEND: LinkType = LinkType(282);
    /// `LINKTYPE_IEEE802_15_4_TAP` (283): IEEE 802.15.4 with TAP header.
    pub const IEEE802_15_4_TAP: LinkType = LinkType(283);
    /// `LINKTYPE_DSA_TAG_DSA` (284): Marvell DSA tag.
    pub const DSA_TAG_DSA: LinkType = LinkType(284);
    /// `LINKTYPE_DSA_TAG_EDSA` (285): Marvell EDSA tag.
    pub const DSA_TAG_EDSA: LinkType = LinkType(285);
    /// `LINKTYPE_ELEE` (286): ELEE lawful intercept.
    pub const ELEE: LinkType = LinkType(286);
    /// `LINKTYPE_Z_WAVE_SERIAL` (287): Z-Wave serial.
    pub const Z_WAVE_SERIAL: LinkType = LinkType(287);
    /// `LINKTYPE_USB_2_0` (288): USB 2.0 packets.
    pub const USB_2_0: LinkType = LinkType(288);
    /// `LINKTYPE_ATSC_ALP` (289): ATSC link-layer protocol.
    pub const ATSC_ALP: LinkType = LinkType(289);
    /// `LINKTYPE_ETW` (290): Event Tracing for Windows.
    pub const ETW: LinkType = LinkType(290);
    /// `LINKTYPE_ZBOSS_NCP` (292): ZBOSS NCP.
    pub const ZBOSS_NCP: LinkType = LinkType(292);
    /// `LINKTYPE_USB_2_0_LOW_SPEED` (293): USB 2.0 low speed.
    pub const USB_2_0_LOW_SPEED: LinkType = LinkType(293);
    /// `LINKTYPE_USB_2_0_FULL_SPEED` (294): USB 2.0 full speed.
    pub const USB_2_0_FULL_SPEED: LinkType = LinkType(294);
    /// `LINKTYPE_USB_2_0_HIGH_SPEED` (295): USB 2.0 high speed.
    pub const USB_2_0_HIGH_SPEED: LinkType = LinkType(295);
    /// `LINKTYPE_AUERSWALD_LOG` (296): Auerswald logger.
    pub const AUERSWALD_LOG: LinkType = LinkType(296);
    /// `LINKTYPE_ZWAVE_TAP` (297): Z-Wave with TAP header.
    pub const ZWAVE_TAP: LinkType = LinkType(297);
    /// `LINKTYPE_SILABS_DEBUG_CHANNEL` (298): Silicon Labs debug channel.
    pub const SILABS_DEBUG_CHANNEL: LinkType = LinkType(298);
    /// `LINKTYPE_FIRA_UCI` (299): FiRa UCI.
    pub const FIRA_UCI: LinkType = LinkType(299);
    /// `LINKTYPE_MDB` (300): Multi-Drop Bus.
    pub const MDB: LinkType = LinkType(300);
    /// `LINKTYPE_DECT_NR` (301): DECT-2020 NR.
    pub const DECT_NR: LinkType = LinkType(301);
    /// Alias of [`LinkType::ETHERNET`], the name libpcap's DLT uses.
    pub const EN10MB: LinkType = LinkType::ETHERNET;
    /// Alias of [`LinkType::IEEE802_11_PRISM`].
    pub const PRISM: LinkType = LinkType::IEEE802_11_PRISM;

    /// The registry name without the `LINKTYPE_` prefix, if the value is registered.
    pub fn name(self) -> Option<&'static str> {
        self.entry().map(|(name, _)| name)
    }

    /// A short human description, if the value is registered.
    pub fn description(self) -> Option<&'static str> {
        self.entry().map(|(_, description)| description)
    }

    /// Looks a link type up by registry name (case-insensitive, with or without the
    /// `LINKTYPE_` / `DLT_` prefix; `EN10MB` is accepted for Ethernet) or by number.
    pub fn from_name(name: &str) -> Option<LinkType> {
        let upper = name.trim().to_ascii_uppercase();
        let bare = upper
            .strip_prefix("LINKTYPE_")
            .or_else(|| upper.strip_prefix("DLT_"))
            .unwrap_or(&upper);
        if let Ok(value) = bare.parse::<u32>() {
            return Some(LinkType(value));
        }
        match bare {
            "EN10MB" => return Some(LinkType::ETHERNET),
            "PRISM" => return Some(LinkType::IEEE802_11_PRISM),
            _ => {}
        }
        (0u32..=301)
            .map(LinkType)
            .find(|lt| lt.name() == Some(bare))
    }

    fn entry(self) -> Option<(&'static str, &'static str)> {
        match self.0 {
            0 => Some(("NULL", "BSD loopback, host-order address family")),
            1 => Some(("ETHERNET", "Ethernet (10Mb and up)")),
            3 => Some(("AX25", "AX.25")),
            6 => Some(("IEEE802_5", "IEEE 802.5 Token Ring")),
            7 => Some(("ARCNET_BSD", "ARCNET (BSD)")),
            8 => Some(("SLIP", "SLIP")),
            9 => Some(("PPP", "PPP")),
            10 => Some(("FDDI", "FDDI")),
            50 => Some(("PPP_HDLC", "PPP in HDLC-like framing")),
            51 => Some(("PPP_ETHER", "PPPoE")),
            100 => Some(("ATM_RFC1483", "RFC 1483 LLC/SNAP ATM")),
            101 => Some(("RAW", "raw IP")),
            104 => Some(("C_HDLC", "Cisco HDLC")),
            105 => Some(("IEEE802_11", "IEEE 802.11 wireless")),
            107 => Some(("FRELAY", "Frame Relay")),
            108 => Some(("LOOP", "OpenBSD loopback, network-order address family")),
            113 => Some(("LINUX_SLL", "Linux cooked capture v1")),
            114 => Some(("LTALK", "Apple LocalTalk")),
            117 => Some(("PFLOG", "OpenBSD pflog")),
            119 => Some(("IEEE802_11_PRISM", "802.11 with Prism header")),
            122 => Some(("IP_OVER_FC", "IP over Fibre Channel")),
            123 => Some(("SUNATM", "SunATM")),
            127 => Some(("IEEE802_11_RADIOTAP", "802.11 with Radiotap header")),
            129 => Some(("ARCNET_LINUX", "ARCNET (Linux)")),
            138 => Some(("APPLE_IP_OVER_IEEE1394", "Apple IP over IEEE 1394")),
            139 => Some(("MTP2_WITH_PHDR", "SS7 MTP2 with pseudo-header")),
            140 => Some(("MTP2", "SS7 MTP2")),
            141 => Some(("MTP3", "SS7 MTP3")),
            142 => Some(("SCCP", "SS7 SCCP")),
            143 => Some(("DOCSIS", "DOCSIS MAC frames")),
            144 => Some(("LINUX_IRDA", "Linux IrDA")),
            147 => Some(("USER0", "user-defined 0")),
            148 => Some(("USER1", "user-defined 1")),
            149 => Some(("USER2", "user-defined 2")),
            150 => Some(("USER3", "user-defined 3")),
            151 => Some(("USER4", "user-defined 4")),
            152 => Some(("USER5", "user-defined 5")),
            153 => Some(("USER6", "user-defined 6")),
            154 => Some(("USER7", "user-defined 7")),
            155 => Some(("USER8", "user-defined 8")),
            156 => Some(("USER9", "user-defined 9")),
            157 => Some(("USER10", "user-defined 10")),
            158 => Some(("USER11", "user-defined 11")),
            159 => Some(("USER12", "user-defined 12")),
            160 => Some(("USER13", "user-defined 13")),
            161 => Some(("USER14", "user-defined 14")),
            162 => Some(("USER15", "user-defined 15")),
            163 => Some(("IEEE802_11_AVS", "802.11 with AVS header")),
            165 => Some(("BACNET_MS_TP", "BACnet MS/TP")),
            166 => Some(("PPP_PPPD", "PPP in HDLC-like framing with direction (pppd)")),
            169 => Some(("GPRS_LLC", "GPRS LLC")),
            170 => Some(("GPF_T", "GPF-T (ITU-T G.7041)")),
            171 => Some(("GPF_F", "GPF-F (ITU-T G.7041)")),
            177 => Some(("LINUX_LAPD", "LAPD with Linux vISDN header")),
            182 => Some(("MFR", "FRF.16.1 Multi-Link Frame Relay")),
            187 => Some(("BLUETOOTH_HCI_H4", "Bluetooth HCI UART H4")),
            189 => Some(("USB_LINUX", "Linux USB (48-byte header)")),
            192 => Some(("PPI", "Per-Packet Information")),
            195 => Some(("IEEE802_15_4_WITHFCS", "IEEE 802.15.4 with FCS")),
            196 => Some(("SITA", "SITA")),
            197 => Some(("ERF", "Endace ERF records")),
            201 => Some((
                "BLUETOOTH_HCI_H4_WITH_PHDR",
                "Bluetooth HCI UART H4 with pseudo-header",
            )),
            202 => Some(("AX25_KISS", "AX.25 with KISS header")),
            203 => Some(("LAPD", "LAPD")),
            204 => Some(("PPP_WITH_DIR", "PPP with direction")),
            205 => Some(("C_HDLC_WITH_DIR", "Cisco HDLC with direction")),
            206 => Some(("FRELAY_WITH_DIR", "Frame Relay with direction")),
            207 => Some(("LAPB_WITH_DIR", "LAPB with direction")),
            209 => Some(("IPMB_LINUX", "IPMB over I2C (Linux)")),
            210 => Some(("FLEXRAY", "FlexRay")),
            212 => Some(("LIN", "LIN bus")),
            215 => Some(("IEEE802_15_4_NONASK_PHY", "IEEE 802.15.4 with PHY")),
            220 => Some(("USB_LINUX_MMAPPED", "Linux USB (64-byte header)")),
            224 => Some(("FC_2", "Fibre Channel FC-2")),
            225 => Some((
                "FC_2_WITH_FRAME_DELIMS",
                "Fibre Channel FC-2 with delimiters",
            )),
            226 => Some(("IPNET", "Solaris ipnet")),
            227 => Some(("CAN_SOCKETCAN", "SocketCAN")),
            228 => Some(("IPV4", "raw IPv4")),
            229 => Some(("IPV6", "raw IPv6")),
            230 => Some(("IEEE802_15_4_NOFCS", "IEEE 802.15.4 without FCS")),
            231 => Some(("DBUS", "D-Bus messages")),
            235 => Some(("DVB_CI", "DVB-CI")),
            236 => Some(("MUX27010", "3GPP TS 27.010 multiplexing")),
            237 => Some(("STANAG_5066_D_PDU", "STANAG 5066 D_PDU")),
            239 => Some(("NFLOG", "Linux netfilter NFLOG")),
            240 => Some(("NETANALYZER", "Hilscher netANALYZER")),
            241 => Some((
                "NETANALYZER_TRANSPARENT",
                "Hilscher netANALYZER (transparent)",
            )),
            242 => Some(("IPOIB", "IP over InfiniBand")),
            243 => Some(("MPEG_2_TS", "MPEG-2 transport stream")),
            244 => Some(("NG40", "ng40 protocol tester")),
            245 => Some(("NFC_LLCP", "NFC LLCP")),
            247 => Some(("INFINIBAND", "InfiniBand")),
            248 => Some(("SCTP", "SCTP without lower layers")),
            249 => Some(("USBPCAP", "USBPcap")),
            250 => Some(("RTAC_SERIAL", "SEL RTAC serial")),
            251 => Some(("BLUETOOTH_LE_LL", "Bluetooth LE link layer")),
            253 => Some(("NETLINK", "Linux netlink")),
            254 => Some(("BLUETOOTH_LINUX_MONITOR", "Bluetooth Linux monitor")),
            255 => Some(("BLUETOOTH_BREDR_BB", "Bluetooth BR/EDR baseband")),
            256 => Some((
                "BLUETOOTH_LE_LL_WITH_PHDR",
                "Bluetooth LE link layer with pseudo-header",
            )),
            257 => Some(("PROFIBUS_DL", "PROFIBUS data link")),
            258 => Some(("PKTAP", "Apple PKTAP")),
            259 => Some(("EPON", "Ethernet passive optical network")),
            260 => Some(("IPMI_HPM_2", "IPMI HPM.2 trace")),
            261 => Some(("ZWAVE_R1_R2", "Z-Wave R1/R2")),
            262 => Some(("ZWAVE_R3", "Z-Wave R3")),
            263 => Some(("WATTSTOPPER_DLM", "WattStopper DLM")),
            264 => Some(("ISO_14443", "ISO 14443 contactless smartcard")),
            265 => Some(("RDS", "IEC 62106 Radio Data System")),
            266 => Some(("USB_DARWIN", "USB (Darwin)")),
            268 => Some(("SDLC", "SDLC")),
            270 => Some(("LORATAP", "LoRaTap")),
            271 => Some(("VSOCK", "Linux vsock")),
            272 => Some(("NORDIC_BLE", "Nordic BLE sniffer")),
            273 => Some(("DOCSIS31_XRA31", "DOCSIS 3.1 Excentis XRA-31")),
            274 => Some(("ETHERNET_MPACKET", "IEEE 802.3br mPackets")),
            275 => Some(("DISPLAYPORT_AUX", "DisplayPort AUX channel")),
            276 => Some(("LINUX_SLL2", "Linux cooked capture v2")),
            278 => Some(("OPENVIZSLA", "OpenVizsla USB")),
            279 => Some(("EBHSCR", "Elektrobit high-speed capture and replay")),
            280 => Some(("VPP_DISPATCH", "fd.io VPP graph dispatch")),
            281 => Some(("DSA_TAG_BRCM", "Broadcom DSA tag")),
            282 => Some(("DSA_TAG_BRCM_PREPEND", "Broadcom DSA tag, prepended")),
            283 => Some(("IEEE802_15_4_TAP", "IEEE 802.15.4 with TAP header")),
            284 => Some(("DSA_TAG_DSA", "Marvell DSA tag")),
            285 => Some(("DSA_TAG_EDSA", "Marvell EDSA tag")),
            286 => Some(("ELEE", "ELEE lawful intercept")),
            287 => Some(("Z_WAVE_SERIAL", "Z-Wave serial")),
            288 => Some(("USB_2_0", "USB 2.0 packets")),
            289 => Some(("ATSC_ALP", "ATSC link-layer protocol")),
            290 => Some(("ETW", "Event Tracing for Windows")),
            292 => Some(("ZBOSS_NCP", "ZBOSS NCP")),
            293 => Some(("USB_2_0_LOW_SPEED", "USB 2.0 low speed")),
            294 => Some(("USB_2_0_FULL_SPEED", "USB 2.0 full speed")),
            295 => Some(("USB_2_0_HIGH_SPEED", "USB 2.0 high speed")),
            296 => Some(("AUERSWALD_LOG", "Auerswald logger")),
            297 => Some(("ZWAVE_TAP", "Z-Wave with TAP header")),
            298 => Some(("SILABS_DEBUG_CHANNEL", "Silicon Labs debug channel")),
            299 => Some(("FIRA_UCI", "FiRa UCI")),
            300 => Some(("MDB", "Multi-Drop Bus")),
            301 => Some(("DECT_NR", "DECT-2020 NR")),
            _ => None,
        }
    }
}

/// The registry name (`ETHERNET`), or `LINKTYPE <n>` for unregistered values.
impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "LINKTYPE {}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_names() {
        for (lt, value) in [
            (LinkType::EN10MB, 1),
            (LinkType::RAW, 101),
            (LinkType::IPV4, 228),
            (LinkType::IPV6, 229),
            (LinkType::NULL, 0),
            (LinkType::LOOP, 108),
            (LinkType::LINUX_SLL, 113),
            (LinkType::LINUX_SLL2, 276),
            (LinkType::PPP, 9),
            (LinkType::PPP_HDLC, 50),
            (LinkType::C_HDLC, 104),
            (LinkType::IEEE802_11, 105),
            (LinkType::IEEE802_11_RADIOTAP, 127),
            (LinkType::PRISM, 119),
            (LinkType::PFLOG, 117),
            (LinkType::NFLOG, 239),
            (LinkType::ERF, 197),
        ] {
            assert_eq!(lt.0, value);
            assert_eq!(LinkType::from_name(lt.name().unwrap()), Some(lt));
        }
    }

    #[test]
    fn unknown_kept() {
        let lt = LinkType(60000);
        assert_eq!(lt.name(), None);
        assert_eq!(lt.to_string(), "LINKTYPE 60000");
        assert_eq!(LinkType::from_name("dlt_en10mb"), Some(LinkType::ETHERNET));
        assert_eq!(LinkType::from_name("nonsense"), None);
    }
}
