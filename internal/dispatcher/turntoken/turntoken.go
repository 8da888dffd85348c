// Package turntoken signs and checks the dispatcher's turn tokens with a key
// every replica shares. A turn token authorizes the tool-results and
// interrupt calls of one turn: HMAC-SHA256(key, session + "\x00" + runId),
// base64url without padding, where session is the store's session key
// "namespace/uid" — so a token is worthless for a session created later
// under the same name, and nothing is stored per turn. The key lives in a
// Secret (Load), not in the process: any replica checks a token another one
// issued, and a restart keeps the tokens of turns that outlive it.
package turntoken

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// KeyBytes is the size of the signing key.
	KeyBytes = 32
	// DataKey is the key of the Secret's data that holds the signing key.
	DataKey = "turn-token-key"
)

// Key signs and checks turn tokens. It is safe for concurrent use.
type Key struct{ key []byte }

// New returns the Key for key, which must be KeyBytes bytes.
func New(key []byte) (*Key, error) {
	if len(key) != KeyBytes {
		return nil, fmt.Errorf("turntoken: the key is %d bytes, want %d", len(key), KeyBytes)
	}
	return &Key{key: append([]byte(nil), key...)}, nil
}

// Sign returns the turn token of runID of session ("namespace/uid").
func (k *Key) Sign(session, runID string) string {
	m := hmac.New(sha256.New, k.key)
	m.Write([]byte(session + "\x00" + runID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Verify reports whether token is the turn token of runID of session, in
// constant time.
func (k *Key) Verify(session, runID, token string) bool {
	return token != "" && hmac.Equal([]byte(token), []byte(k.Sign(session, runID)))
}

// Bytes returns a copy of the key, to derive the key of another use from
// (modelcred.DeriveKey). Never log or store it.
func (k *Key) Bytes() []byte { return append([]byte(nil), k.key...) }

// Read returns the key kept in the Secret ref, which must exist: for a
// process that uses the dispatchers' key and must never make one (the
// model gateway). A missing Secret is an error wrapping the NotFound.
func Read(ctx context.Context, r client.Reader, ref types.NamespacedName) (*Key, error) {
	var s corev1.Secret
	if err := r.Get(ctx, ref, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("turntoken: Secret %s does not exist (the first dispatcher creates it): %w", ref, err)
		}
		return nil, fmt.Errorf("turntoken: read Secret %s: %w", ref, err)
	}
	return fromSecret(&s)
}

// loadAttempts bounds Load's get-or-create rounds: a round repeats only when
// the Secret was deleted between a create that found it and the read after.
const loadAttempts = 3

// Load returns the key kept in the Secret ref under DataKey, creating the
// Secret (immutable, with a random key) when it does not exist. Replicas
// loading at once agree on one key: a create that finds the Secret already
// created reads the key that won. r should read from the API server, not
// from a cache (a cached read of a Secret watches every Secret the client
// may see): pass the manager's APIReader, or a direct client.
//
// A Secret without a KeyBytes key under DataKey is an error, never
// replaced: other replicas may be signing with it. Rotating the key is
// deleting the Secret and restarting the dispatchers; the tokens of running
// turns then stop working.
func Load(ctx context.Context, r client.Reader, w client.Writer, ref types.NamespacedName) (*Key, error) {
	for range loadAttempts {
		var s corev1.Secret
		err := r.Get(ctx, ref, &s)
		if err == nil {
			return fromSecret(&s)
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("turntoken: read Secret %s: %w", ref, err)
		}
		key := make([]byte, KeyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("turntoken: generate a key: %w", err)
		}
		s = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name},
			Type:       corev1.SecretTypeOpaque,
			Immutable:  ptr.To(true),
			Data:       map[string][]byte{DataKey: key},
		}
		err = w.Create(ctx, &s)
		if err == nil {
			return New(key)
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("turntoken: create Secret %s: %w", ref, err)
		}
		// Another replica created it first: its key is the one.
	}
	return nil, fmt.Errorf("turntoken: Secret %s was created and deleted again %d times while it was read", ref, loadAttempts)
}

func fromSecret(s *corev1.Secret) (*Key, error) {
	key, ok := s.Data[DataKey]
	if !ok {
		return nil, fmt.Errorf("turntoken: Secret %s/%s has no data[%s]; delete it to have a new key made", s.Namespace, s.Name, DataKey)
	}
	if len(key) != KeyBytes {
		return nil, fmt.Errorf("turntoken: Secret %s/%s: data[%s] is %d bytes, want %d; delete it to have a new key made",
			s.Namespace, s.Name, DataKey, len(key), KeyBytes)
	}
	return New(key)
}
