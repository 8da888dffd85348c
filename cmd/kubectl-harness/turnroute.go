package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// The route facts `kubectl harness turn` sends. An OpenClaw gateway sends the
// facts of the route it prepared; the CLI prepares none, so it says which one
// it means. For provider openai that is the official Platform Responses route
// with no authored request behaviour, on which OpenClaw's OpenAI route
// contract declares `codex` compatible (the harness SDK: "an exact official HTTPS
// Platform Responses or ChatGPT Responses route with no authored request
// override"). With route facts the harness that runs — a locked session's
// pin included — must support the route (docs/dispatcher-api.md, "Selection:
// the pin and route facts"). `--route-facts none` sends no facts: the
// attempt is pending, and a locked, pinned session stays on its harness
// unchecked.

// Values of --route-facts.
const (
	routeFactsOfficial = "official"
	routeFactsNone     = "none"
)

// officialOpenAIRoute is OpenAI's official Platform Responses route as
// OpenClaw prepares it for a default openai provider.
func officialOpenAIRoute() *wire.ModelProvider {
	return &wire.ModelProvider{
		API:                       "openai-responses",
		BaseURL:                   "https://api.openai.com/v1",
		RequestTransportOverrides: wire.TransportOverridesNone,
		RuntimePolicy:             &wire.RouteRuntimePolicy{CompatibleIDs: []string{"codex"}},
	}
}

func addRouteFactsFlag(f *pflag.FlagSet, v *string) {
	f.StringVar(v, "route-facts", routeFactsOfficial,
		"Route facts to send: official (for provider openai, OpenAI's official Platform Responses route, codex compatible; other providers have none) or none (pending: a pinned session stays on its harness).")
}

// routeFacts returns the modelProvider the turn sends for provider.
func routeFacts(mode, provider string) (*wire.ModelProvider, error) {
	switch mode {
	case routeFactsNone:
		return nil, nil
	case routeFactsOfficial, "":
		if provider == "openai" {
			return officialOpenAIRoute(), nil
		}
		return nil, nil
	}
	return nil, badInput(fmt.Errorf("--route-facts %q: want %s or %s", mode, routeFactsOfficial, routeFactsNone))
}
