//go:build e2e

package system

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL
	certutil "k8s.io/client-go/util/cert"
)

// tlsFront is what a platform team puts before an external app-server:
// Codex listens on plain ws://, so a TLS terminator on the bridge's gateway
// address, with a certificate of a private CA, forwards each connection to
// it. The harness trusts that CA through spec.external.caBundle, and the
// operator dials it at wss:// only.
type tlsFront struct {
	// URL is the wss:// address of the front.
	URL string
	// CABundle is the PEM the harness trusts (the certificate and its CA).
	CABundle []byte
	ln       net.Listener
	conns    sync.WaitGroup
	mu       sync.Mutex
	open     map[net.Conn]bool // the accepted connections, closed with the front
}

// startTLSFront forwards wss://<gateway>:<port> to the ws:// server at
// backend until the suite ends.
func startTLSFront(backend string) *tlsFront {
	GinkgoHelper()
	u, err := url.Parse(backend)
	Expect(err).NotTo(HaveOccurred())
	ip := net.ParseIP(env.gateway)
	Expect(ip).NotTo(BeNil(), "the gateway is an IP address")
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(env.gateway, []net.IP{ip}, nil)
	Expect(err).NotTo(HaveOccurred())
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	Expect(err).NotTo(HaveOccurred())
	ln, err := tls.Listen("tcp", net.JoinHostPort(env.gateway, "0"),
		&tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	Expect(err).NotTo(HaveOccurred())
	f := &tlsFront{URL: "wss://" + ln.Addr().String() + u.Path, CABundle: certPEM, ln: ln, open: map[net.Conn]bool{}}
	go f.serve(u.Host)
	// Until the suite ends, like the Codex behind it (not the spec's end:
	// later specs run turns through it).
	suiteT.Cleanup(f.close)
	return f
}

func (f *tlsFront) serve(backend string) {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.open[c] = true
		f.mu.Unlock()
		f.conns.Add(1)
		go func() {
			defer f.conns.Done()
			defer func() {
				f.mu.Lock()
				delete(f.open, c)
				f.mu.Unlock()
				_ = c.Close()
			}()
			b, err := net.Dial("tcp", backend)
			if err != nil {
				return
			}
			defer func() { _ = b.Close() }()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
			<-done // one side ended: close both, which ends the other copy
		}()
	}
}

func (f *tlsFront) close() {
	err := f.ln.Close()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		GinkgoWriter.Printf("close the TLS front: %v\n", err)
	}
	f.mu.Lock()
	for c := range f.open {
		_ = c.Close() // ends both copies of that connection
	}
	f.mu.Unlock()
	f.conns.Wait()
}

// externalPatch is the merge patch that points a harness at the front.
func (f *tlsFront) externalPatch() string {
	return `{"spec":{"external":{"url":"` + f.URL + `","caBundle":"` + base64.StdEncoding.EncodeToString(f.CABundle) + `"}}}`
}
