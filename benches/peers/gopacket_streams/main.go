// Peer implementation of task T11 (TCP streams) with gopacket's tcpassembly, for
// benches/compare.sh: every TCP stream's payload reassembled in order, counted each way
// (client: the side that sent the SYN), printed as `tracekit-bench t11 FILE` prints it.
// Written here for tracekit's comparison; uses gopacket's documented API.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"github.com/google/gopacket/tcpassembly"
)

// One direction of a connection; tcpassembly makes one per direction.
type half struct {
	counts  *totals
	key     [2]gopacket.Flow
	started bool
}

type totals struct {
	clients map[[2]gopacket.Flow]bool // net and transport flows of the client direction
	withData map[[2]gopacket.Flow]bool
	streams, client, server uint64
}

func (h *half) Reassembled(rs []tcpassembly.Reassembly) {
	for _, r := range rs {
		if len(r.Bytes) == 0 {
			continue
		}
		conn := h.key
		if !h.counts.clients[conn] {
			conn = [2]gopacket.Flow{conn[0].Reverse(), conn[1].Reverse()}
		}
		if !h.counts.withData[conn] {
			h.counts.withData[conn] = true
			h.counts.streams++
		}
		if h.counts.clients[h.key] {
			h.counts.client += uint64(len(r.Bytes))
		} else {
			h.counts.server += uint64(len(r.Bytes))
		}
	}
}

func (h *half) ReassemblyComplete() {}

type factory struct{ counts *totals }

func (f *factory) New(net, transport gopacket.Flow) tcpassembly.Stream {
	return &half{counts: f.counts, key: [2]gopacket.Flow{net, transport}}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gopacket_streams FILE")
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
	counts := &totals{clients: map[[2]gopacket.Flow]bool{}, withData: map[[2]gopacket.Flow]bool{}}
	assembler := tcpassembly.NewAssembler(tcpassembly.NewStreamPool(&factory{counts}))
	var eth layers.Ethernet
	var ip4 layers.IPv4
	var ip6 layers.IPv6
	var tcp layers.TCP
	var udp layers.UDP
	var payload gopacket.Payload
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &ip6, &tcp, &udp, &payload)
	parser.IgnoreUnsupported = true
	decoded := make([]gopacket.LayerType, 0, 8)
	for {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = parser.DecodeLayers(data, &decoded)
		var netFlow gopacket.Flow
		isTCP := false
		for _, t := range decoded {
			switch t {
			case layers.LayerTypeIPv4:
				netFlow = ip4.NetworkFlow()
			case layers.LayerTypeIPv6:
				netFlow = ip6.NetworkFlow()
			case layers.LayerTypeTCP:
				isTCP = true
			}
		}
		if !isTCP {
			continue
		}
		if tcp.SYN && !tcp.ACK {
			counts.clients[[2]gopacket.Flow{netFlow, tcp.TransportFlow()}] = true
		}
		assembler.AssembleWithTimestamp(netFlow, &tcp, ci.Timestamp)
	}
	assembler.FlushAll()
	fmt.Printf("streams %d\nclient_bytes %d\nserver_bytes %d\n", counts.streams, counts.client, counts.server)
}
