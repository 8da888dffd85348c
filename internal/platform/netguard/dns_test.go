package netguard_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// resolverFor returns a resolver whose DNS server is in this process: every
// query is answered with the A (IPv4) or AAAA (IPv6) records among
// answers(query number). Nothing leaves the process.
func resolverFor(t *testing.T, answers func(n int) []string) *net.Resolver {
	t.Helper()
	var n atomic.Int32 // the resolver asks A and AAAA in parallel
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go serveDNS(server, answers(int(n.Add(1))))
		return client, nil
	}}
}

// serveDNS answers one query on a stream (a 2-byte length, then the
// message: the resolver speaks TCP framing on a conn that is not a
// PacketConn), then closes the conn.
func serveDNS(c net.Conn, records []string) {
	defer func() { _ = c.Close() }()
	var size [2]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return
	}
	buf := make([]byte, binary.BigEndian.Uint16(size[:]))
	if _, err := io.ReadFull(c, buf); err != nil {
		return
	}
	var q dnsmessage.Message
	if err := q.Unpack(buf); err != nil || len(q.Questions) != 1 {
		return
	}
	question := q.Questions[0]
	resp := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: q.ID, Response: true, Authoritative: true, RecursionAvailable: true},
		Questions: q.Questions,
	}
	for _, r := range records {
		addr := netip.MustParseAddr(r)
		hdr := dnsmessage.ResourceHeader{Name: question.Name, Class: dnsmessage.ClassINET, TTL: 1}
		switch {
		case addr.Is4() && question.Type == dnsmessage.TypeA:
			hdr.Type = dnsmessage.TypeA
			resp.Answers = append(resp.Answers, dnsmessage.Resource{Header: hdr, Body: &dnsmessage.AResource{A: addr.As4()}})
		case addr.Is6() && question.Type == dnsmessage.TypeAAAA:
			hdr.Type = dnsmessage.TypeAAAA
			resp.Answers = append(resp.Answers, dnsmessage.Resource{Header: hdr, Body: &dnsmessage.AAAAResource{AAAA: addr.As16()}})
		}
	}
	out, err := resp.Pack()
	if err != nil {
		return
	}
	framed := binary.BigEndian.AppendUint16(nil, uint16(len(out)))
	_, _ = c.Write(append(framed, out...))
}
