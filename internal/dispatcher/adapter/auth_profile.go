package adapter

import "fmt"

// AuthProfile is the auth profile a turn's model requests authenticate
// with, as the engine admitted it: the requester may read its Secret, and
// the harness serves no other namespace's sessions.
type AuthProfile struct {
	// ID is the gateway's profile id (not secret).
	ID string
	// APIKey is the credential; formatting an AuthProfile withholds it.
	APIKey string
}

// String names the profile, never the key.
func (p AuthProfile) String() string { return fmt.Sprintf("auth profile %q (key withheld)", p.ID) }

// GoString is String, so %#v withholds the key too.
func (p AuthProfile) GoString() string { return p.String() }
