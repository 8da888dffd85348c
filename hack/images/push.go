package main

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// push uploads the image (or its multi-platform index) to ref with the
// credentials of the default keychain (docker login, or the CI's), and
// returns the pushed reference. It runs only in the release workflow.
func (b *built) push(ref string) (string, error) {
	r, err := name.ParseReference(ref, name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("-push: %q: %w", ref, err)
	}
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	if b.index != nil {
		err = remote.WriteIndex(r, b.index, auth)
	} else {
		err = remote.Write(r, b.images[0], auth)
	}
	if err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	logf("pushed %s@%s", ref, b.digest)
	return ref, nil
}
