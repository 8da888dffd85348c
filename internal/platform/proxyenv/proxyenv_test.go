package proxyenv

import (
	"slices"
	"testing"
)

func TestWithout(t *testing.T) {
	env := []string{
		"PATH=/bin", "HTTP_PROXY=http://192.0.2.9:3128", "https_proxy=http://192.0.2.9:3128",
		"All_Proxy=socks5://192.0.2.9:1080", "NO_PROXY=x", "npm_config_https_proxy=http://192.0.2.9:3128",
		"GRPC_PROXY=x", "HOME=/root", "PROXY_NOT=1",
	}
	if got, want := Without(env), []string{"PATH=/bin", "HOME=/root", "PROXY_NOT=1"}; !slices.Equal(got, want) {
		t.Fatalf("Without: %q, want %q", got, want)
	}
}
