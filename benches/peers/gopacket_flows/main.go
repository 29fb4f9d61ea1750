// Peer implementation of task T10 (flows) with gopacket, for benches/compare.sh: TCP
// and UDP conversations keyed by the 5-tuple with the endpoints ordered (both
// directions in one), their packets and wire bytes, printed as `tracekit-bench t10 FILE`
// prints them. gopacket's fast path: pcapgo's reader and a DecodingLayerParser into
// preallocated layers. Written here for tracekit's comparison; uses gopacket's
// documented API.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

type key struct {
	a, b   [16]byte
	pa, pb uint16
	proto  uint8
}

type counts struct{ packets, bytes uint64 }

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gopacket_flows FILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r, err := pcapgo.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var eth layers.Ethernet
	var dot1q layers.Dot1Q
	var ip4 layers.IPv4
	var ip6 layers.IPv6
	var tcp layers.TCP
	var udp layers.UDP
	var payload gopacket.Payload
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &dot1q, &ip4, &ip6, &tcp, &udp, &payload)
	parser.IgnoreUnsupported = true
	decoded := make([]gopacket.LayerType, 0, 8)
	flows := make(map[key]*counts, 1<<16)
	for {
		data, ci, err := r.ZeroCopyReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = parser.DecodeLayers(data, &decoded)
		var src, dst [16]byte
		var sp, dp uint16
		var proto uint8
		haveIP := false
		for _, t := range decoded {
			switch t {
			case layers.LayerTypeIPv4:
				copy(src[:], ip4.SrcIP.To4())
				copy(dst[:], ip4.DstIP.To4())
				haveIP = true
			case layers.LayerTypeIPv6:
				copy(src[:], ip6.SrcIP)
				copy(dst[:], ip6.DstIP)
				haveIP = true
			case layers.LayerTypeTCP:
				sp, dp, proto = uint16(tcp.SrcPort), uint16(tcp.DstPort), 6
			case layers.LayerTypeUDP:
				sp, dp, proto = uint16(udp.SrcPort), uint16(udp.DstPort), 17
			}
		}
		if !haveIP || proto == 0 {
			continue
		}
		k := key{src, dst, sp, dp, proto}
		if c := bytes.Compare(src[:], dst[:]); c > 0 || (c == 0 && sp > dp) {
			k = key{dst, src, dp, sp, proto}
		}
		c := flows[k]
		if c == nil {
			c = &counts{}
			flows[k] = c
		}
		c.packets++
		c.bytes += uint64(ci.Length)
	}
	var v [6]uint64
	for k, c := range flows {
		i := 0
		if k.proto == 17 {
			i = 3
		}
		v[i]++
		v[i+1] += c.packets
		v[i+2] += c.bytes
	}
	fmt.Printf("tcp_flows %d\ntcp_packets %d\ntcp_bytes %d\nudp_flows %d\nudp_packets %d\nudp_bytes %d\n", v[0], v[1], v[2], v[3], v[4], v[5])
}
