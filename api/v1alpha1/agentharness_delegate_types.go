package v1alpha1

// DelegateKind is the kind of subject a harness owner trusts to run locked
// sessions on their owners' behalf.
// +kubebuilder:validation:Enum=ServiceAccount;User;Group
type DelegateKind string

const (
	// DelegateServiceAccount is a Kubernetes ServiceAccount (namespace and name).
	DelegateServiceAccount DelegateKind = "ServiceAccount"
	// DelegateUser is an authenticated user name, as TokenReview reports it.
	DelegateUser DelegateKind = "User"
	// DelegateGroup is a group the authenticated user belongs to.
	DelegateGroup DelegateKind = "Group"
)

// Delegate is one subject the harness's owner consents to let run existing
// model-locked sessions on this harness on behalf of their owners (the
// seed's delegatedExecutionPluginIds), e.g. a voice transport that keeps a
// conversation going. Listing is consent, not a grant: the delegate also
// needs the verb `delegate` on agentsessions/turns in the session's
// namespace (RBAC there), so a harness author never grants rights in
// another namespace.
// +kubebuilder:validation:XValidation:rule="self.kind == 'ServiceAccount' ? has(self.namespace) : !has(self.namespace)",message="spec.delegates[].namespace must be set for kind ServiceAccount, and only then"
type Delegate struct {
	// kind is ServiceAccount, User or Group.
	// +required
	Kind DelegateKind `json:"kind"`

	// name is the ServiceAccount's, user's or group's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// namespace is the ServiceAccount's namespace (kind ServiceAccount only).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// serviceAccountUserPrefix begins the user name Kubernetes gives a
// ServiceAccount's tokens.
const serviceAccountUserPrefix = "system:serviceaccount:"

// Matches reports whether the authenticated user (name and groups, as
// TokenReview reports them) is this delegate.
func (d Delegate) Matches(user string, groups []string) bool {
	switch d.Kind {
	case DelegateServiceAccount:
		return user == serviceAccountUserPrefix+d.Namespace+":"+d.Name
	case DelegateUser:
		return user == d.Name
	case DelegateGroup:
		for _, g := range groups {
			if g == d.Name {
				return true
			}
		}
	}
	return false
}
