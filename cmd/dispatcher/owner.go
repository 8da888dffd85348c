package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ownerFile holds the dispatcher's owner id in its journal directory.
const ownerFile = "OWNER"

// journalOwner is the owner id the engine holds session leases under
// (engine.Options.Owner): created once per journal directory and kept
// there, so a dispatcher restarted on the same volume is the same owner and
// its start-up recovery ends its previous process's runs at once, instead
// of waiting for their leases to expire.
func journalOwner(dir string) (string, error) {
	path := filepath.Join(dir, ownerFile)
	b, err := os.ReadFile(path)
	if err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read the dispatcher's owner id %s: %w", path, err)
	}
	var r [8]byte
	_, _ = rand.Read(r[:])
	owner := "dispatcher-" + hex.EncodeToString(r[:])
	if err := os.WriteFile(path, []byte(owner+"\n"), 0o640); err != nil {
		return "", fmt.Errorf("write the dispatcher's owner id %s: %w", path, err)
	}
	return owner, nil
}
