package modelcred

import (
	"errors"
	"strings"
	"testing"
)

// reasons are the refusals Open may answer with.
var reasons = map[Reason]bool{Malformed: true, TooLong: true, BadEncoding: true, TooShort: true, Forged: true,
	Unreadable: true, InvalidClaim: true, WrongAudience: true, NotYetValid: true, Expired: true}

// FuzzOpen: any text an app-server pod sends as its bearer token is opened
// without panic and refused with an *Error of a known reason that does not
// quote it; only what the key sealed opens, and it seals and opens again
// to the same claims.
func FuzzOpen(f *testing.F) {
	k := testKey(f, 1)
	token, err := Seal(k, turnClaims(), now)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		token, token[:len(token)-1], token + "A", strings.Replace(token, Prefix, "hmg2.", 1),
		"", Prefix, Prefix + "====", Prefix + strings.Repeat("A", 40), Prefix + "\n" + token[len(Prefix):],
		"Bearer " + token, strings.ToUpper(token),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, err := Open(k, text, now, Audience)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !reasons[e.Reason] {
				t.Fatalf("Open refused with %v, not an *Error of a known reason", err)
			}
			// Any 16 characters of the alphabet appear in no message.
			if body, ok := strings.CutPrefix(text, Prefix); ok && len(body) >= 16 && strings.Contains(e.Error(), body) {
				t.Fatalf("the refusal quotes the credential: %v", e)
			}
			return
		}
		reopened(t, k, c)
	})
}

// FuzzOpenSealed: any bytes sealed with the key — a minter of another
// version, a bug — are read without panic, refused with an *Error of a
// known reason, or opened to claims that seal and open again the same.
func FuzzOpenSealed(f *testing.F) {
	k := testKey(f, 1)
	c := turnClaims()
	c.IssuedAt = now
	good, err := encode(c)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(good), `{}`, `null`, `[]`, `{"aud":"model-gateway"}`, string(good) + `{}`,
		strings.Replace(string(good), `"token":7`, `"token":7.5`, 1),
		strings.Replace(string(good), `"token":7`, `"token":7,"extra":true`, 1),
		strings.Replace(string(good), `"iat":`, `"iat":-`, 1),
		strings.Replace(string(good), `"profile":{`, `"profile":null,"x":{`, 1),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, plain []byte) {
		token, err := sealRaw(k, plain)
		if err != nil {
			return // longer than a credential may be
		}
		c, err := Open(k, token, now, Audience)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !reasons[e.Reason] || e.Reason == Forged || e.Reason == BadEncoding {
				t.Fatalf("Open refused what the key sealed with %v", err)
			}
			return
		}
		reopened(t, k, c)
	})
}

// reopened fails t unless claims c, that Open returned, seal at their iat
// and open to the same claims.
func reopened(t *testing.T, k *Key, c Claims) {
	t.Helper()
	again, err := Seal(k, c, c.IssuedAt)
	if err != nil {
		t.Fatalf("claims Open accepted are refused by Seal: %v", err)
	}
	got, err := Open(k, again, c.IssuedAt, c.Audience)
	if err != nil {
		t.Fatalf("claims Open accepted, sealed again, do not open: %v", err)
	}
	sameClaims(t, got, c)
}
