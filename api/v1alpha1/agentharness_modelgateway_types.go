package v1alpha1

// ModelGateway sends a managed harness's model requests through the
// operator's model gateway: the gateway, not the app-server pods, holds the
// provider credential (docs/design/model-gateway.md).
type ModelGateway struct {
	// baseURL is the upstream provider's base URL, as Codex's base_url
	// (e.g. https://api.openai.com/v1); the gateway appends the request's
	// path after /v1 (…/responses). https, or http only for a loopback
	// address in development.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (url(self).getScheme() == 'https' || url(self).getScheme() == 'http')",message="spec.modelGateway.baseURL must be an http or https URL"
	BaseURL string `json:"baseURL"`

	// credentialSecretRef is the Secret key, in the harness's namespace, whose
	// value the gateway sends upstream as the bearer token of requests
	// without an auth profile. Only the gateway reads it.
	// +required
	CredentialSecretRef SecretKeyReference `json:"credentialSecretRef"`

	// queryParams are added to every upstream request (e.g. api-version).
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	QueryParams map[string]string `json:"queryParams,omitempty"`

	// headers are added to every upstream request. They hold no secret:
	// put the credential in credentialSecretRef.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.lowerAscii() in ['authorization', 'host', 'content-length', 'connection', 'transfer-encoding', 'proxy-authorization']))",message="spec.modelGateway.headers must not set Authorization, Host, Content-Length, Connection, Transfer-Encoding or Proxy-Authorization"
	Headers map[string]string `json:"headers,omitempty"`
}
