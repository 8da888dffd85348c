package v1alpha1

// ModelGateway sends a managed harness's model requests through the
// operator's model gateway: the gateway, not the app-server pods, holds the
// provider credential (docs/design/model-gateway.md).
type ModelGateway struct {
	// baseURL is the upstream provider's base URL, as Codex's base_url
	// (e.g. https://api.openai.com/v1); the gateway appends the request's
	// path after /v1 (…/responses). https, or http only for a loopback
	// address in development. No userinfo (the credential is
	// credentialSecretRef), no query (queryParams) and no fragment.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['https', 'http'] && url(self).getHostname() != ''",message="spec.modelGateway.baseURL must be an http or https URL with a host"
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.matches('^http://(localhost|127\\\\.[0-9]+\\\\.[0-9]+\\\\.[0-9]+|\\\\[::1\\\\])(:[0-9]+)?(/.*)?$')",message="spec.modelGateway.baseURL must be https:// (plain http:// only to a loopback host, for development)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@')",message="spec.modelGateway.baseURL must not carry userinfo (user:password@host); the credential comes from credentialSecretRef"
	// +kubebuilder:validation:XValidation:rule="!self.contains('?') && !self.contains('#')",message="spec.modelGateway.baseURL must have no query or fragment; put query parameters in queryParams"
	BaseURL string `json:"baseURL"`

	// credentialSecretRef is the Secret key, in the harness's namespace, whose
	// value the gateway sends upstream as the bearer token of requests
	// without an auth profile. Only the gateway reads it.
	// +required
	CredentialSecretRef SecretKeyReference `json:"credentialSecretRef"`

	// queryParams are added to every upstream request (e.g. api-version):
	// names of 1 to 128 characters, values of at most 1024.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) >= 1 && size(k) <= 128 && size(self[k]) <= 1024)",message="spec.modelGateway.queryParams names must have 1 to 128 characters and values at most 1024"
	QueryParams map[string]string `json:"queryParams,omitempty"`

	// headers are added to every upstream request. They hold no secret:
	// put the credential in credentialSecretRef. Names are HTTP header names
	// (letters, digits, '-' and '_', at most 128); values have at most 4096
	// characters and no control characters (line breaks; admission checks
	// them). The gateway sets Authorization and the connection's own headers
	// itself.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.lowerAscii() in ['authorization', 'host', 'content-length', 'connection', 'transfer-encoding', 'proxy-authorization', 'proxy-connection', 'keep-alive', 'te', 'trailer', 'upgrade']))",message="spec.modelGateway.headers must not set Authorization, Host, Content-Length, Proxy-Authorization or a hop-by-hop header (Connection, Transfer-Encoding, Proxy-Connection, Keep-Alive, TE, Trailer, Upgrade)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 128 && k.matches('^[A-Za-z0-9][A-Za-z0-9_-]*$'))",message="spec.modelGateway.headers names must be HTTP header names: letters, digits, '-' and '_', at most 128 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 4096)",message="spec.modelGateway.headers values must have at most 4096 characters"
	Headers map[string]string `json:"headers,omitempty"`
}
