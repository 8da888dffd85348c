package codexconfig

import (
	"strconv"
	"strings"
)

// ModelGatewayProvider is the model provider id under which a managed
// app-server reaches the operator's model gateway
// (docs/design/model-gateway.md). The dispatcher names the same id in each
// thread's config when it adds the turn's credential.
const ModelGatewayProvider = "harness-gateway"

// CACertificateEnv names the environment variable through which Codex
// trusts an extra CA bundle (a PEM file) beside the platform's roots: the
// model gateway's certificate authority.
const CACertificateEnv = "CODEX_CA_CERTIFICATE"

// Codex's own defaults for a provider (request_max_retries,
// stream_max_retries), written out so that a Codex upgrade that changes them
// does not change how often a failed request is sent again through the
// gateway, which checks every attempt.
const (
	modelGatewayRequestRetries = 4
	modelGatewayStreamRetries  = 5
)

// ModelGatewayArgs are the `codex app-server` options that make the model
// gateway at baseURL (the gateway's address followed by /v1) the server's
// default model provider, with no credential: no env_key, no bearer token,
// no auth command. A thread the dispatcher starts carries the turn's
// credential in its own config; any other thread reaches the gateway
// without one and is refused. The URL is quoted as a TOML string, so it
// cannot inject configuration.
func ModelGatewayArgs(baseURL string) []string {
	def := []string{
		"name=" + tomlString("OpenClaw harness-operator model gateway"),
		"base_url=" + tomlString(baseURL),
		`wire_api="responses"`,
		"request_max_retries=" + strconv.Itoa(modelGatewayRequestRetries),
		"stream_max_retries=" + strconv.Itoa(modelGatewayStreamRetries),
	}
	return []string{
		"-c", "model_provider=" + tomlString(ModelGatewayProvider),
		"-c", "model_providers." + ModelGatewayProvider + "={" + strings.Join(def, ",") + "}",
	}
}
