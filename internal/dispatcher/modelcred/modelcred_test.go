package modelcred

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// testProfileKey is a profile key no other text of a credential contains.
const testProfileKey = "sk-profile-4f1d7a-key"

// now is the tests' clock.
var now = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// turnTokenKey is a turn-token key made of b.
func turnTokenKey(b byte) []byte { return bytes.Repeat([]byte{b}, TurnTokenKeyBytes) }

func testKey(t testing.TB, b byte) *Key {
	t.Helper()
	k, err := DeriveKey(turnTokenKey(b))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// turnClaims are a turn's claims with an auth profile, as the engine would
// mint them at now.
func turnClaims() Claims {
	return Claims{
		Audience: Audience,
		Lease:    "team-a/0b1e5c2a-7d4f-4c3e-9a1b-2f6d8e0c4a1b",
		Token:    7,
		Run:      "run-1",
		Harness:  Harness{Namespace: "team-a", Name: "codex", UID: "5d2c8e1f-3b4a-4e6d-8c9f-1a2b3c4d5e6f"},
		Models:   []string{"openai/gpt-5.5", "gpt-5.5"},
		Profile:  &Profile{ID: "openai:work", Key: testProfileKey},
		IssuedAt: now,
		// The turn's deadline, the lease's TTL and 5 minutes.
		ExpiresAt: now.Add(10*time.Minute + 30*time.Second + 5*time.Minute),
	}
}

// atBounds are claims with every field at its bound, in the characters
// that take the most bytes in the sealed JSON.
func atBounds() Claims {
	c := turnClaims()
	c.Audience = strings.Repeat("a", MaxAudienceLength)
	c.Lease = strings.Repeat("n", 63) + "/" + strings.Repeat("u", MaxUIDLength) + ".call"
	c.Token = 1<<63 - 1
	c.Run = strings.Repeat(`"`, wire.MaxRunIDLength)
	c.Harness = Harness{Namespace: strings.Repeat("n", 63), Name: strings.Repeat("a", 253), UID: strings.Repeat("u", MaxUIDLength)}
	c.Models = nil
	for range MaxModels {
		c.Models = append(c.Models, strings.Repeat(`\`, MaxModelLength))
	}
	c.Profile = &Profile{ID: strings.Repeat(`"`, MaxProfileIDLength), Key: wire.InlineKey(strings.Repeat("k", wire.MaxInlineKeyLength))}
	c.ExpiresAt = now.Add(MaxLifetime)
	return c
}

// sameClaims fails t unless got are want as Open returns them.
func sameClaims(t *testing.T, got, want Claims) {
	t.Helper()
	if !got.IssuedAt.Equal(want.IssuedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Fatalf("times = iat %s, exp %s; want iat %s, exp %s", got.IssuedAt, got.ExpiresAt, want.IssuedAt, want.ExpiresAt)
	}
	got.IssuedAt, got.ExpiresAt, want.IssuedAt, want.ExpiresAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Open = %#v (key %q), want %#v (key %q)", got, keyOf(got), want, keyOf(want))
	}
}

func keyOf(c Claims) string {
	if c.Profile == nil {
		return ""
	}
	return string(c.Profile.Key)
}

// refusal fails t unless err is an *Error of reason r (and claim, for
// InvalidClaim) whose text names what it should and holds no secret.
func refusal(t *testing.T, err error, r Reason, claim string, secrets ...string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v, want an *Error of reason %s", err, r)
	}
	if e.Reason != r || e.Claim != claim {
		t.Fatalf("error = %v (reason %s, claim %q), want reason %s, claim %q", err, e.Reason, e.Claim, r, claim)
	}
	if claim != "" && !strings.Contains(e.Error(), "claim "+claim+":") {
		t.Fatalf("error %q does not name the claim %s", e, claim)
	}
	for _, s := range append(secrets, testProfileKey) {
		if s != "" && strings.Contains(e.Error(), s) {
			t.Fatalf("error %q holds a secret (%.12s…)", e, s)
		}
	}
}

func TestSealOpenRoundTrip(t *testing.T) {
	k := testKey(t, 1)
	call := turnClaims()
	call.Lease += ".call"
	call.Run = ""
	bare := turnClaims()
	bare.Profile = nil
	fraction := turnClaims()
	fraction.ExpiresAt = fraction.ExpiresAt.Add(999 * time.Millisecond)
	for _, tc := range []struct {
		name string
		c    Claims
	}{
		{"a turn with an auth profile", turnClaims()},
		{"a turn without a profile", bare},
		{"a call, without a run", call},
		{"every claim at its bound", atBounds()},
		{"an expiry with a fraction of a second", fraction},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The minter's clock is a little past the second.
			token, err := Seal(k, tc.c, now.Add(400*time.Millisecond))
			if err != nil {
				t.Fatalf("Seal: %v", err)
			}
			if !strings.HasPrefix(token, Prefix) || len(token) > MaxLength {
				t.Fatalf("credential of %d bytes, %.8q…; want %q first and at most %d bytes", len(token), token, Prefix, MaxLength)
			}
			t.Logf("%d bytes", len(token))
			for _, claim := range []string{tc.c.Harness.UID, tc.c.Models[0], keyOf(tc.c)} {
				if claim != "" && strings.Contains(token, claim) {
					t.Fatalf("the credential shows a claim in clear: %.16q…", claim)
				}
			}
			got, err := Open(k, token, now, tc.c.Audience)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			want := tc.c
			want.IssuedAt = now
			want.ExpiresAt = want.ExpiresAt.Truncate(time.Second)
			sameClaims(t, got, want)
			again, err := Seal(k, tc.c, now)
			if err != nil {
				t.Fatal(err)
			}
			if again == token {
				t.Fatal("two seals of the same claims are the same text: the nonce is not fresh")
			}
		})
	}
}

// TestDeriveKeyIsHKDFWithTheInfoString: dispatchers and gateways of
// different versions must derive the same key from the turn-token key, so
// the derivation is pinned against an HKDF written out from RFC 5869.
func TestDeriveKeyIsHKDFWithTheInfoString(t *testing.T) {
	ikm := turnTokenKey(3)
	mac := func(key, data []byte) []byte {
		m := hmac.New(sha256.New, key)
		m.Write(data)
		return m.Sum(nil)
	}
	prk := mac(make([]byte, sha256.Size), ikm) // no salt: HashLen zeros
	okm := mac(prk, append([]byte("harness-operator model-gateway credential v1"), 1))
	block, err := aes.NewCipher(okm)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		t.Fatal(err)
	}
	pinned := &Key{aead: aead}
	token, err := Seal(testKey(t, 3), turnClaims(), now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(pinned, token, now, Audience); err != nil {
		t.Fatalf("a key made by RFC 5869 from the turn-token key does not open DeriveKey's credential: %v", err)
	}
	mine, err := Seal(pinned, turnClaims(), now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(testKey(t, 3), mine, now, Audience); err != nil {
		t.Fatalf("DeriveKey does not open a credential of the RFC 5869 key: %v", err)
	}

	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := DeriveKey(make([]byte, n)); err == nil || !strings.Contains(err.Error(), "want 32") {
			t.Errorf("DeriveKey of a %d-byte key = %v, want a refusal naming the size", n, err)
		}
	}
}

// TestOpenRefusesAnotherKey: a credential of another cluster's key, and one
// sealed with the turn-token key itself (no derivation), do not open.
func TestOpenRefusesAnotherKey(t *testing.T) {
	raw, err := aes.NewCipher(turnTokenKey(1))
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(raw)
	if err != nil {
		t.Fatal(err)
	}
	for name, sealer := range map[string]*Key{
		"another cluster's turn-token key":       testKey(t, 2),
		"the turn-token key itself, not derived": {aead: aead},
	} {
		t.Run(name, func(t *testing.T) {
			token, err := Seal(sealer, turnClaims(), now)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Open(testKey(t, 1), token, now, Audience)
			refusal(t, err, Forged, "", strings.TrimPrefix(token, Prefix))
		})
	}
}

// TestOpenRefusesAlteredCredentials: a change anywhere — the prefix, the
// text, the nonce, the sealed claims, the tag, the length — is refused, and
// no refusal quotes the credential.
func TestOpenRefusesAlteredCredentials(t *testing.T) {
	k := testKey(t, 1)
	token, err := Seal(k, turnClaims(), now)
	if err != nil {
		t.Fatal(err)
	}
	box, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(token, Prefix))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) string {
		b := bytes.Clone(box)
		b[i] ^= 0x01
		return Prefix + base64.RawURLEncoding.EncodeToString(b)
	}
	text := func(b []byte) string { return Prefix + base64.RawURLEncoding.EncodeToString(b) }
	// The claims sealed under another prefix as additional data.
	plain, err := encode(func() Claims { c := turnClaims(); c.IssuedAt = now; return c }())
	if err != nil {
		t.Fatal(err)
	}
	otherAD := "hmg0." + base64.RawURLEncoding.EncodeToString(k.aead.Seal(nil, nil, plain, []byte("hmg0.")))
	// The last character carries padding bits (the box is not a multiple
	// of 3 bytes): setting one changes the text, not the decoded bytes.
	last := token[len(token)-1]
	i := strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", last)
	paddingBit := token[:len(token)-1] + string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[i|1])
	if len(box)%3 == 0 || paddingBit == token {
		t.Fatalf("the test needs a box that is not a multiple of 3 bytes (%d) and a last character with a free bit (%c)", len(box), last)
	}
	n := len(box)
	for _, tc := range []struct {
		name   string
		token  string
		reason Reason
	}{
		{"empty", "", Malformed},
		{"no prefix", strings.TrimPrefix(token, Prefix), Malformed},
		{"a prefix of another version", "hmg2." + strings.TrimPrefix(token, Prefix), Malformed},
		{"the prefix in capitals", "HMG1." + strings.TrimPrefix(token, Prefix), Malformed},
		{"a bearer scheme left on", "Bearer " + token, Malformed},
		{"sealed under another prefix, presented under ours", Prefix + strings.TrimPrefix(otherAD, "hmg0."), Forged},
		{"over the length limit", token + strings.Repeat("A", MaxLength), TooLong},
		{"padding", token + "==", BadEncoding},
		{"standard base64's characters", strings.NewReplacer("-", "+", "_", "/").Replace(token) + "+/", BadEncoding},
		{"a space", token[:20] + " " + token[20:], BadEncoding},
		{"a line break at the end", token + "\n", BadEncoding},
		{"a padding bit set", paddingBit, BadEncoding},
		{"the prefix alone", Prefix, TooShort},
		{"a nonce and a tag, nothing sealed", text(box[:overhead]), TooShort},
		{"the nonce's first byte", flip(0), Forged},
		{"the nonce's last byte", flip(11), Forged},
		{"the sealed claims' first byte", flip(12), Forged},
		{"the sealed claims' middle byte", flip(12 + (n-overhead)/2), Forged},
		{"the sealed claims' last byte", flip(n - 17), Forged},
		{"the tag's first byte", flip(n - 16), Forged},
		{"the tag's last byte", flip(n - 1), Forged},
		{"one byte cut off", text(box[:n-1]), Forged},
		{"one byte added", text(append(bytes.Clone(box), 0)), Forged},
		{"the nonce swapped with another credential's", func() string {
			other, err := Seal(k, turnClaims(), now)
			if err != nil {
				t.Fatal(err)
			}
			ob, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(other, Prefix))
			return text(append(ob[:12:12], box[12:]...))
		}(), Forged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(k, tc.token, now, Audience)
			sent := strings.TrimPrefix(tc.token, Prefix)
			refusal(t, err, tc.reason, "", strings.TrimPrefix(token, Prefix), sent[:min(len(sent), 24)])
		})
	}
	if _, err := Open(k, token, now, Audience); err != nil {
		t.Fatalf("the control, the credential unaltered: %v", err)
	}
}

// TestOpenChecksAudienceAndClock: a credential opens for its audience from
// iat to exp, each widened by Skew, and for nothing else.
func TestOpenChecksAudienceAndClock(t *testing.T) {
	k := testKey(t, 1)
	c := turnClaims()
	token, err := Seal(k, c, now)
	if err != nil {
		t.Fatal(err)
	}
	exp := c.ExpiresAt
	for _, tc := range []struct {
		name     string
		at       time.Time
		audience string
		reason   Reason // "" opens
	}{
		{"when sealed", now, Audience, ""},
		{"just before expiry", exp.Add(-time.Second), Audience, ""},
		{"a replica's clock behind by the skew", now.Add(-Skew), Audience, ""},
		{"a replica's clock behind by more than the skew", now.Add(-Skew - time.Second), Audience, NotYetValid},
		{"expired, within the skew", exp.Add(Skew - time.Second), Audience, ""},
		{"expired by the skew", exp.Add(Skew), Audience, Expired},
		{"a day later", now.Add(24 * time.Hour), Audience, Expired},
		{"another audience", now, "dispatcher", WrongAudience},
		{"no audience", now, "", WrongAudience},
		{"an audience in capitals", now, "Model-Gateway", WrongAudience},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Open(k, token, tc.at, tc.audience)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				sameClaims(t, got, c)
				return
			}
			refusal(t, err, tc.reason, "", strings.TrimPrefix(token, Prefix))
			if got.Lease != "" || got.Profile != nil {
				t.Fatalf("a refusal returns claims: %v", got)
			}
		})
	}
}

// TestClaimsAreCheckedOnSealAndOpen: a claim that is missing, malformed or
// over its bound is refused naming it, by Seal (nothing is minted) and by
// Open (of the same claims sealed without the check) alike.
func TestClaimsAreCheckedOnSealAndOpen(t *testing.T) {
	k := testKey(t, 1)
	for _, tc := range []struct {
		name  string
		edit  func(*Claims)
		claim string // "" valid: the controls
	}{
		{"the controls: a turn", func(*Claims) {}, ""},
		{"a call without run", func(c *Claims) { c.Lease += ".call"; c.Run = "" }, ""},
		{"the longest lifetime", func(c *Claims) { c.ExpiresAt = now.Add(MaxLifetime) }, ""},
		{"a model with '<' and non-ASCII", func(c *Claims) { c.Models = []string{"a<b>&ü"} }, ""},

		{"no aud", func(c *Claims) { c.Audience = "" }, "aud"},
		{"aud in capitals", func(c *Claims) { c.Audience = "Model-Gateway" }, "aud"},
		{"aud too long", func(c *Claims) { c.Audience = strings.Repeat("a", MaxAudienceLength+1) }, "aud"},
		{"no lease", func(c *Claims) { c.Lease = "" }, "lease"},
		{"a lease without namespace", func(c *Claims) { c.Lease = "0b1e5c2a" }, "lease"},
		{"a lease with a bad namespace", func(c *Claims) { c.Lease = "Team_A/0b1e5c2a" }, "lease"},
		{"a lease without uid", func(c *Claims) { c.Lease = "team-a/" }, "lease"},
		{"a call lease without uid", func(c *Claims) { c.Lease = "team-a/.call" }, "lease"},
		{"a lease with another suffix", func(c *Claims) { c.Lease = "team-a/0b1e5c2a.turn" }, "lease"},
		{"a lease with a second slash", func(c *Claims) { c.Lease = "team-a/x/0b1e5c2a" }, "lease"},
		{"a lease uid too long", func(c *Claims) { c.Lease = "team-a/" + strings.Repeat("u", MaxUIDLength+1) }, "lease"},
		{"no token", func(c *Claims) { c.Token = 0 }, "token"},
		{"a negative token", func(c *Claims) { c.Token = -7 }, "token"},
		{"a turn without run", func(c *Claims) { c.Run = "" }, "run"},
		{"a run too long", func(c *Claims) { c.Run = strings.Repeat("r", wire.MaxRunIDLength+1) }, "run"},
		{"a run with a line break", func(c *Claims) { c.Run = "run-1\nx" }, "run"},
		{"no harness namespace", func(c *Claims) { c.Harness.Namespace = "" }, "harness.namespace"},
		{"no harness name", func(c *Claims) { c.Harness.Name = "" }, "harness.name"},
		{"a harness name too long", func(c *Claims) { c.Harness.Name = strings.Repeat("a", 254) }, "harness.name"},
		{"a harness name in capitals", func(c *Claims) { c.Harness.Name = "Codex" }, "harness.name"},
		{"no harness uid", func(c *Claims) { c.Harness.UID = "" }, "harness.uid"},
		{"a harness uid with a slash", func(c *Claims) { c.Harness.UID = "a/b" }, "harness.uid"},
		{"no models", func(c *Claims) { c.Models = nil }, "models"},
		{"too many models", func(c *Claims) { c.Models = make([]string, MaxModels+1) }, "models"},
		{"an empty model", func(c *Claims) { c.Models = []string{"gpt-5.5", ""} }, "models[1]"},
		{"a model with a space", func(c *Claims) { c.Models = []string{"gpt 5.5"} }, "models[0]"},
		{"a model too long", func(c *Claims) { c.Models = []string{strings.Repeat("m", MaxModelLength+1)} }, "models[0]"},
		// JSON carries only UTF-8 (the encoder replaces the byte): for Seal.
		{"a model not UTF-8", func(c *Claims) { c.Models = []string{"gpt-\xff"} }, "models[0]"},
		{"a profile without id", func(c *Claims) { c.Profile.ID = "" }, "profile.id"},
		{"a profile id too long", func(c *Claims) { c.Profile.ID = strings.Repeat("p", MaxProfileIDLength+1) }, "profile.id"},
		{"a profile without key", func(c *Claims) { c.Profile.Key = "" }, "profile.key"},
		{"a profile key too long", func(c *Claims) {
			c.Profile.Key = wire.InlineKey(testProfileKey + strings.Repeat("k", wire.MaxInlineKeyLength))
		}, "profile.key"},
		{"a profile key with a line break", func(c *Claims) { c.Profile.Key = testProfileKey + "\r\nX-Other: 1" }, "profile.key"},
		{"a profile key with a space", func(c *Claims) { c.Profile.Key = "Bearer " + testProfileKey }, "profile.key"},
		{"no exp", func(c *Claims) { c.ExpiresAt = time.Time{} }, "exp"},
		{"exp at iat", func(c *Claims) { c.ExpiresAt = now }, "exp"},
		{"exp within iat's second", func(c *Claims) { c.ExpiresAt = now.Add(999 * time.Millisecond) }, "exp"},
		{"exp before iat", func(c *Claims) { c.ExpiresAt = now.Add(-time.Hour) }, "exp"},
		{"a lifetime over the bound", func(c *Claims) { c.ExpiresAt = now.Add(MaxLifetime + time.Second) }, "exp"},
		{"exp at the end of time", func(c *Claims) { c.ExpiresAt = time.Unix(1<<63-1, 0) }, "exp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := turnClaims()
			tc.edit(&c)
			token, err := Seal(k, c, now)
			if tc.claim == "" {
				if err != nil {
					t.Fatalf("Seal: %v", err)
				}
				if _, err := Open(k, token, now, Audience); err != nil {
					t.Fatalf("Open: %v", err)
				}
				return
			}
			refusal(t, err, InvalidClaim, tc.claim)
			if token != "" {
				t.Fatal("Seal refused and returned a credential")
			}
			if slices.ContainsFunc(c.Models, func(m string) bool { return !utf8.ValidString(m) }) {
				return
			}
			// The same claims sealed without the check.
			c.IssuedAt = now
			plain, err := encode(c)
			if err != nil {
				t.Fatal(err)
			}
			unchecked, err := sealRaw(k, plain)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Open(k, unchecked, now, Audience)
			refusal(t, err, InvalidClaim, tc.claim, strings.TrimPrefix(unchecked, Prefix))
		})
	}
}

// TestOpenRefusesClaimsItCannotRead: what opens but is not claims of this
// version — an unknown claim (a restriction it would not enforce), a claim
// of another type, no object, or more than one — is refused; the refusal
// names the claim and quotes nothing sealed.
func TestOpenRefusesClaimsItCannotRead(t *testing.T) {
	k := testKey(t, 1)
	c := turnClaims()
	c.IssuedAt = now
	good, err := encode(c)
	if err != nil {
		t.Fatal(err)
	}
	body := string(good[1 : len(good)-1]) // the members, without the braces
	for _, tc := range []struct {
		name  string
		plain string
		names string // what the refusal says
	}{
		{"an unknown claim", `{` + body + `,"paths":["/v1/responses"]}`, `unknown claim "paths"`},
		{"a token as text", `{` + strings.Replace(body, `"token":7`, `"token":"7"`, 1) + `}`, "claim token is not of type int64"},
		{"a model as a number", `{` + strings.Replace(body, `"models":["openai/gpt-5.5"`, `"models":[5`, 1) + `}`, "claim models"},
		{"a fractional exp", `{` + strings.Replace(body, `"exp":`, `"exp":0.5,"x":`, 1) + `}`, "claim exp is not of type int64"},
		{"an array", `[` + string(good) + `]`, "not a JSON object"},
		{"two objects", string(good) + string(good), "more than one JSON value"},
		{"not JSON", `"` + testProfileKey + ``, "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			token, err := sealRaw(k, []byte(tc.plain))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Open(k, token, now, Audience)
			refusal(t, err, Unreadable, "", strings.TrimPrefix(token, Prefix))
			if !strings.Contains(err.Error(), tc.names) {
				t.Fatalf("error %q does not say %q", err, tc.names)
			}
		})
	}
	if token, err := sealRaw(k, good); err != nil {
		t.Fatal(err)
	} else if _, err := Open(k, token, now, Audience); err != nil {
		t.Fatalf("the control, the members unchanged: %v", err)
	}
}
