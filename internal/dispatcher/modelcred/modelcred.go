// Package modelcred seals and opens the model gateway's credential: the
// opaque token a dispatcher mints for one turn (or call) and hands to the
// app-server as its provider's bearer token, and that the model gateway
// opens on every model request (docs/design/model-gateway.md, "The
// credential").
//
// A credential is Prefix + base64url without padding of (nonce ‖
// AES-256-GCM(key, JSON claims)), with Prefix as additional data. It is
// encrypted, not only signed: the pod that carries it sees an opaque
// string, and a profile key sealed in it is unreadable there. The key is
// derived (DeriveKey) from the turn-token key every dispatcher replica
// already shares, so the gateway needs no Secret of its own, and no raw
// key serves two uses. Nonces are random (96 bits), so a key may seal 2^32
// credentials (one per turn or call) before it should be rotated.
//
// Open checks, in order, and refuses with an *Error whose Reason says which
// check failed: the prefix, the length, the encoding, the size, the
// key (GCM cannot tell a credential of another key from an altered one),
// the claims' shape, the audience, then the clock: a credential is valid
// from iat until exp, each widened by Skew for the clocks of the replica
// that sealed it and the one that opens it. Seal refuses what Open would
// refuse at the same instant, naming the claim. An error never holds the
// credential, a key or a profile key, and printing Claims or Key withholds
// them too.
//
// Liveness is not the credential's: it opens until exp, long after its turn
// ended. The gateway asks the dispatcher whether the grant (Claims.Lease,
// Claims.Token) is still current on every request.
package modelcred

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

const (
	// Prefix starts every credential; the 1 is the format's version. A
	// later format takes another prefix, so a gateway refuses what it
	// cannot read as Malformed.
	Prefix = "hmg1."
	// Audience is the model gateway's audience.
	Audience = "model-gateway"
	// KeyInfo is the HKDF info string of the credential key: another use of
	// the turn-token key takes another info, so no two uses share a key.
	KeyInfo = "harness-operator model-gateway credential v1"
	// TurnTokenKeyBytes is the size of the turn-token key DeriveKey takes.
	TurnTokenKeyBytes = 32
	// Skew is how far the clocks of the replica that seals a credential
	// and the one that opens it may disagree: Open accepts a credential
	// issued up to Skew in the future, and one that expired up to Skew ago.
	Skew = time.Minute
	// MaxLength bounds a credential (bytes). Claims at every bound seal to
	// less; the model gateway's header limit (64 KiB) holds it easily.
	MaxLength = 12 << 10
)

// overhead is what GCM adds to the claims: a 12-byte nonce and a 16-byte tag.
const overhead = 12 + 16

// Key seals and opens credentials. It holds the derived key only inside
// its cipher, and printing it shows nothing of it. It is safe for
// concurrent use.
type Key struct{ aead cipher.AEAD }

// DeriveKey returns the credential key derived from the turn-token key:
// HKDF-SHA256 without salt, with KeyInfo, 32 bytes for AES-256-GCM.
func DeriveKey(turnTokenKey []byte) (*Key, error) {
	if len(turnTokenKey) != TurnTokenKeyBytes {
		return nil, fmt.Errorf("modelcred: the turn-token key is %d bytes, want %d", len(turnTokenKey), TurnTokenKeyBytes)
	}
	k, err := hkdf.Key(sha256.New, turnTokenKey, nil, KeyInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("modelcred: derive the credential key: %w", err)
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, fmt.Errorf("modelcred: make the cipher: %w", err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("modelcred: make the cipher: %w", err)
	}
	return &Key{aead: aead}, nil
}

// String shows nothing of the key.
func (Key) String() string { return "modelcred.Key(" + withheld + ")" }

// GoString is String, so %#v shows nothing of the key either.
func (k Key) GoString() string { return k.String() }

// LogValue withholds the key from log/slog.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.String()) }

// MarshalLog withholds the key from logr's sinks.
func (k Key) MarshalLog() any { return k.String() }

// sealed is the claims' form inside a credential. Times are Unix seconds.
type sealed struct {
	Audience string         `json:"aud"`
	Lease    string         `json:"lease"`
	Token    int64          `json:"token"`
	Run      string         `json:"run,omitempty"`
	Harness  Harness        `json:"harness"`
	Models   []string       `json:"models"`
	Profile  *sealedProfile `json:"profile,omitempty"`
	IssuedAt int64          `json:"iat"`
	Expires  int64          `json:"exp"`
}

type sealedProfile struct {
	ID  string `json:"id"`
	Key string `json:"key"`
}

// Seal returns the credential of c, issued now: IssuedAt is set to now (a
// value in c is replaced), and ExpiresAt loses its fraction of a second.
// Claims that Open would refuse at now are refused, naming the claim.
func Seal(k *Key, c Claims, now time.Time) (string, error) {
	if k == nil || k.aead == nil {
		return "", errors.New("modelcred: Seal without a key")
	}
	c.IssuedAt = time.Unix(now.Unix(), 0)
	c.ExpiresAt = time.Unix(c.ExpiresAt.Unix(), 0)
	if err := c.validate(); err != nil {
		return "", err
	}
	plain, err := encode(c)
	if err != nil {
		return "", err
	}
	return sealRaw(k, plain)
}

// encode is c's sealed form, as it is: Seal has checked it.
func encode(c Claims) ([]byte, error) {
	s := sealed{Audience: c.Audience, Lease: c.Lease, Token: c.Token, Run: c.Run, Harness: c.Harness,
		Models: c.Models, IssuedAt: c.IssuedAt.Unix(), Expires: c.ExpiresAt.Unix()}
	if c.Profile != nil {
		s.Profile = &sealedProfile{ID: c.Profile.ID, Key: string(c.Profile.Key)}
	}
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	// '<', '>' and '&' stay one byte each: the claims are no HTML.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&s); err != nil {
		return nil, fmt.Errorf("modelcred: encode the claims: %w", err)
	}
	return bytes.TrimSuffix(plain.Bytes(), []byte("\n")), nil
}

// sealRaw seals plaintext as it is; Seal has checked it.
func sealRaw(k *Key, plain []byte) (string, error) {
	box := k.aead.Seal(nil, nil, plain, []byte(Prefix))
	token := Prefix + base64.RawURLEncoding.EncodeToString(box)
	if len(token) > MaxLength {
		return "", refuse(TooLong, "the credential would be %d bytes, more than the limit of %d", len(token), MaxLength)
	}
	return token, nil
}

// Open returns the claims of token if k sealed it, for audience, and it is
// valid at now; else an *Error saying why not.
func Open(k *Key, token string, now time.Time, audience string) (Claims, error) {
	if k == nil || k.aead == nil {
		return Claims{}, errors.New("modelcred: Open without a key")
	}
	rest, ok := strings.CutPrefix(token, Prefix)
	if !ok {
		return Claims{}, refuse(Malformed, "not a model-gateway credential: it does not start with %q", Prefix)
	}
	if len(token) > MaxLength {
		return Claims{}, refuse(TooLong, "the credential is %d bytes, more than the limit of %d", len(token), MaxLength)
	}
	// Only the alphabet (the decoder skips line breaks) and Strict (it
	// ignores set padding bits): one text per credential.
	if strings.IndexFunc(rest, notBase64URL) >= 0 {
		return Claims{}, refuse(BadEncoding, "the credential after %q is not unpadded base64url", Prefix)
	}
	box, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	if err != nil {
		return Claims{}, refuse(BadEncoding, "the credential after %q is not unpadded base64url", Prefix)
	}
	if len(box) <= overhead {
		return Claims{}, refuse(TooShort, "the credential holds %d bytes, too few for a nonce, a tag and claims (more than %d)", len(box), overhead)
	}
	plain, err := k.aead.Open(nil, nil, box, []byte(Prefix))
	if err != nil {
		return Claims{}, refuse(Forged, "the credential does not open with this key: another key sealed it, or it was altered")
	}
	var s sealed
	dec := json.NewDecoder(bytes.NewReader(plain))
	// A claim this version does not know may be a restriction it would
	// not enforce: refuse it.
	dec.DisallowUnknownFields()
	err = dec.Decode(&s)
	if err == nil {
		if _, after := dec.Token(); !errors.Is(after, io.EOF) {
			err = errTrailing
		}
	}
	if err != nil {
		return Claims{}, refuse(Unreadable, "the sealed claims are not claims of this version: %s", describe(err))
	}
	c := Claims{Audience: s.Audience, Lease: s.Lease, Token: s.Token, Run: s.Run, Harness: s.Harness,
		Models: s.Models, IssuedAt: time.Unix(s.IssuedAt, 0).UTC(), ExpiresAt: time.Unix(s.Expires, 0).UTC()}
	if s.Profile != nil {
		c.Profile = &Profile{ID: s.Profile.ID, Key: wire.InlineKey(s.Profile.Key)}
	}
	if err := c.validate(); err != nil {
		return Claims{}, err
	}
	if c.Audience != audience {
		return Claims{}, refuse(WrongAudience, "the credential is for audience %q, not %q", c.Audience, audience)
	}
	// In seconds, as the claims are: no Duration to overflow.
	at, skew := now.Unix(), int64(Skew/time.Second)
	if s.IssuedAt > at+skew {
		return Claims{}, refuse(NotYetValid, "the credential is issued at %s, later than now (%s) plus the allowed clock skew of %s",
			stamp(c.IssuedAt), stamp(now), Skew)
	}
	if at >= s.Expires+skew {
		return Claims{}, refuse(Expired, "the credential expired at %s; now (%s) is past it by the allowed clock skew of %s or more",
			stamp(c.ExpiresAt), stamp(now), Skew)
	}
	return c, nil
}

func notBase64URL(r rune) bool {
	return (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '_'
}

// errTrailing: the sealed claims go on after their object.
var errTrailing = errors.New("trailing data")

// describe says what is wrong with the sealed JSON without quoting it: a
// claim of the wrong type or an unknown claim is named, any other fault is
// only classed.
func describe(err error) string {
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, errTrailing):
		return "more than one JSON value"
	case errors.As(err, &typ) && typ.Field != "":
		return "claim " + typ.Field + " is not of type " + typ.Type.String()
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown claim " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return "not a JSON object"
}
