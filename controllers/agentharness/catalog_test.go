package agentharness

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// The catalog a harness publishes is one a gateway can trust to exclude
// every model any of its judged servers knows: the union of their
// catalogs, and unknown (nil) rather than partial when any server's catalog
// is missing or the union does not fit the API's limits.
func TestModelCatalogIsTheUnionOrUnknown(t *testing.T) {
	withCatalog := func(names ...string) *handshakeResult {
		return &handshakeResult{server: "p", userAgent: "harness-operator/0.169.0 (x)", catalog: append([]string{}, names...)}
	}
	many := make([]string, maxExcludedModels+1)
	for i := range many {
		many[i] = "m" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
	}
	cases := []struct {
		name    string
		results []*handshakeResult
		want    []string
	}{
		{"one server", []*handshakeResult{withCatalog("gpt-6.1-sol", "gpt-5.5")}, []string{"gpt-5.5", "gpt-6.1-sol"}},
		{"the union of servers that disagree", []*handshakeResult{withCatalog("gpt-5.5"), withCatalog("gpt-5.5", "gpt-6.1-sol")},
			[]string{"gpt-5.5", "gpt-6.1-sol"}},
		{"an empty catalog is known", []*handshakeResult{withCatalog()}, []string{}},
		{"no judged server", nil, nil},
		{"a pending handshake", []*handshakeResult{withCatalog("gpt-5.5"), nil}, nil},
		{"a failed handshake", []*handshakeResult{withCatalog("gpt-5.5"), {err: errors.New("401")}}, nil},
		{"a server whose catalog was not read", []*handshakeResult{withCatalog("gpt-5.5"), {userAgent: "codex"}}, nil},
		{"more names than excludedModels holds", []*handshakeResult{withCatalog(many...)}, nil},
		{"a name longer than excludedModels holds", []*handshakeResult{withCatalog(strings.Repeat("g", maxModelName+1))}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := modelCatalog(tc.results)
			if !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Fatalf("modelCatalog = %#v, want %#v", got, tc.want)
			}
		})
	}
}

// A model is known by its id and its model name; an empty catalog stays
// known (not nil).
func TestCatalogNames(t *testing.T) {
	got := catalogNames([]appserver.Model{{ID: "b", Model: "b"}, {ID: "a", Model: "a-model"}, {Model: "c"}})
	if want := []string{"a", "a-model", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("catalogNames = %v, want %v", got, want)
	}
	if got := catalogNames(nil); got == nil || len(got) != 0 {
		t.Fatalf("an empty catalog: %#v", got)
	}
}
