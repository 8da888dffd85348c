package wire

import "regexp"

// authProfileIDRE is what an auth profile id may be: OpenClaw's profile ids
// (`openai:work`, `anthropic-default`), which appear in messages, events
// and the session's status, never a credential.
var authProfileIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$`)

// AuthProfileTurnFields are a turn request's auth field (embedded in
// TurnRequest, so the JSON stays flat).
type AuthProfileTurnFields struct {
	// AuthProfile is the prepared auth profile the gateway selected for
	// this attempt (the seed: core forwards "a compatible, explicitly
	// selected or ordered OpenClaw auth profile"). The harness's model
	// requests for this session then authenticate with its credential
	// instead of the app-server's own. The dispatcher reads the credential
	// only after a SubjectAccessReview says the requester may get the
	// Secret, and only for a harness that serves no other namespace.
	AuthProfile *AuthProfileRef `json:"authProfile,omitempty"`
}

// AuthProfileRef names an auth profile and where its credential is.
type AuthProfileRef struct {
	// ID is the profile's id as the gateway knows it (e.g. openai:work):
	// named in errors, events and status.nativeBinding.authProfile.
	ID string `json:"id"`
	// SecretKeyRef is the key of a Secret in the session's namespace that
	// holds the profile's API key (sent as a bearer token).
	SecretKeyRef *SecretKeyRef `json:"secretKeyRef"`
}

// Validate checks the auth profile's shape; the error is a *FieldError
// naming the field.
func (f *AuthProfileTurnFields) Validate() error {
	p := f.AuthProfile
	if p == nil {
		return nil
	}
	if !authProfileIDRE.MatchString(p.ID) {
		return &FieldError{Field: "authProfile.id",
			Message: "must be 1 to 128 letters, digits or '.', '_', ':', '@', '/', '-', starting with a letter or digit"}
	}
	if ref := p.SecretKeyRef; ref == nil || ref.Name == "" || ref.Key == "" {
		return &FieldError{Field: "authProfile.secretKeyRef",
			Message: "name and key are required (the credential comes only from a Secret in the session's namespace)"}
	}
	return nil
}
