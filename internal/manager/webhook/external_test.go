package webhook

import (
	"strings"
	"testing"

	certutil "k8s.io/client-go/util/cert"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

func TestExternalURLErrors(t *testing.T) {
	for _, tc := range []struct {
		url      string
		insecure bool   // the manager runs with --allow-insecure-loopback-external
		want     string // substring of the one error; empty: admitted
	}{
		{url: "wss://codex.example:443/v1"},
		{url: "wss://127.0.0.1:4500"},
		{url: "ws://127.0.0.1:4500", insecure: true},
		{url: "ws://[::1]:4500", insecure: true},
		{url: "ws://localhost:4500", insecure: true},
		{url: "ws://127.0.0.1:4500", want: "only when the manager runs with --allow-insecure-loopback-external"},
		{url: "ws://codex.example:4500", insecure: true, want: "plain ws:// is admitted only to a loopback host"},
		{url: "ws://10.0.0.1:4500", insecure: true, want: "plain ws:// is admitted only to a loopback host"},
		{url: "ws://127.0.0.1.nip.example:4500", insecure: true, want: "only to a loopback host"},
		{url: "wss://user:secret@codex.example", want: "must not carry userinfo"},
		{url: "https://codex.example", want: "must be a wss:// URL"},
	} {
		h := &v1alpha1.AgentHarness{Spec: v1alpha1.AgentHarnessSpec{External: &v1alpha1.ExternalServer{URL: tc.url}}}
		errs := externalURLErrors(h, tc.insecure)
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%s (insecure %v): refused: %v", tc.url, tc.insecure, errs)
		case tc.want != "" && (len(errs) != 1 || errs[0].Field != "spec.external.url" || !strings.Contains(errs[0].Error(), tc.want)):
			t.Errorf("%s (insecure %v): errors %v, want one on spec.external.url containing %q", tc.url, tc.insecure, errs, tc.want)
		}
		if len(errs) > 0 && strings.Contains(errs[0].Error(), "secret") {
			t.Errorf("%s: the error repeats the URL's password: %v", tc.url, errs[0])
		}
	}
}

func TestExternalCABundleErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bundle []byte
		want   string
	}{
		{name: "no bundle (system roots)"},
		{name: "a PEM certificate", bundle: testCAPEM(t)},
		{name: "not PEM", bundle: []byte("not a certificate"), want: "spec.external.caBundle: Invalid value: \"(PEM)\": must hold at least one PEM certificate"},
	} {
		h := &v1alpha1.AgentHarness{Spec: v1alpha1.AgentHarnessSpec{External: &v1alpha1.ExternalServer{URL: "wss://codex.example", CABundle: tc.bundle}}}
		errs := externalURLErrors(h, false)
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%s: refused: %v", tc.name, errs)
		case tc.want != "" && (len(errs) != 1 || errs[0].Error() != tc.want):
			t.Errorf("%s: errors %v, want %q", tc.name, errs, tc.want)
		}
	}
}

// testCAPEM is a self-signed CA certificate in PEM.
func testCAPEM(t *testing.T) []byte {
	t.Helper()
	certPEM, _, err := certutil.GenerateSelfSignedCertKey("codex.example", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM
}
