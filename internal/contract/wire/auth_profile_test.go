package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// testInlineKey is a key no other text of a request contains.
const testInlineKey = "sk-inline-7c3e91-key"

func TestAuthProfileValidate(t *testing.T) {
	ref := &SecretKeyRef{Name: "openai-work", Key: "apiKey"}
	for _, tc := range []struct {
		name  string
		p     *AuthProfileRef
		field string // "" valid
	}{
		{"a Secret's key", &AuthProfileRef{ID: "openai:work", SecretKeyRef: ref}, ""},
		{"an inline key", &AuthProfileRef{ID: "openai:work", APIKey: testInlineKey}, ""},
		{"an inline key with base64 padding", &AuthProfileRef{ID: "openai:work", APIKey: "abc+/def=="}, ""},
		{"neither", &AuthProfileRef{ID: "openai:work"}, "authProfile"},
		{"both", &AuthProfileRef{ID: "openai:work", SecretKeyRef: ref, APIKey: testInlineKey}, "authProfile"},
		{"a Secret without key", &AuthProfileRef{ID: "openai:work", SecretKeyRef: &SecretKeyRef{Name: "s"}}, "authProfile.secretKeyRef"},
		{"a key with a line break", &AuthProfileRef{ID: "openai:work", APIKey: testInlineKey + "\r\nX-Other: 1"}, "authProfile.apiKey"},
		{"a key with a space", &AuthProfileRef{ID: "openai:work", APIKey: "Bearer " + testInlineKey}, "authProfile.apiKey"},
		{"a key too long", &AuthProfileRef{ID: "openai:work", APIKey: InlineKey(strings.Repeat("k", MaxInlineKeyLength+1))}, "authProfile.apiKey"},
		{"a bad id", &AuthProfileRef{ID: "-", APIKey: testInlineKey}, "authProfile.id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := AuthProfileTurnFields{AuthProfile: tc.p}
			err := f.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("Validate = %v, want a *FieldError on %s", err, tc.field)
			}
			if strings.Contains(fe.Error(), testInlineKey) {
				t.Fatalf("the error quotes the key: %v", fe)
			}
		})
	}
}

// The inline key's JSON is the wire form (a client sends it); every other
// printing of it, alone or inside the request, withholds it.
func TestInlineKeyIsWithheldFromPrinting(t *testing.T) {
	req := &TurnRequest{Attempt: Attempt{RunID: "r1"}, Prompt: "hi",
		AuthProfileTurnFields: AuthProfileTurnFields{AuthProfile: &AuthProfileRef{ID: "openai:work", APIKey: testInlineKey}}}
	p := req.AuthProfile
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("turn", "key", p.APIKey, "profile", *p, "ref", p)
	// The dispatcher's logger (controller-runtime's zap, JSON).
	var zapped bytes.Buffer
	zap.New(zap.WriteTo(&zapped)).Info("turn", "key", p.APIKey, "profile", *p, "ref", p)
	printed := map[string]string{"MarshalLog": fmt.Sprint(p.APIKey.MarshalLog()), "slog": logged.String(), "zap": zapped.String(),
		"error": fmt.Errorf("turn: %v", *p).Error()}
	for _, verb := range []string{"%v", "%+v", "%s", "%q", "%x", "%#v"} {
		printed[verb+" key"] = fmt.Sprintf(verb, p.APIKey)
		printed[verb+" profile"] = fmt.Sprintf(verb, *p)
		printed[verb+" request"] = fmt.Sprintf(verb, *req)
	}
	for how, s := range printed {
		if strings.Contains(s, testInlineKey) || strings.Contains(s, fmt.Sprintf("%x", testInlineKey)) {
			t.Errorf("%s prints the key: %s", how, s)
		}
	}
	if !strings.Contains(printed["%v profile"], "openai:work") {
		t.Errorf("the profile's id should print: %s", printed["%v profile"])
	}
	// The control: the wire form carries the key.
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"apiKey":"`+testInlineKey+`"`) {
		t.Fatalf("the JSON does not carry the key: %s", b)
	}
}

// The journal records a request's digest: an inline key is no part of it,
// so nothing the journal keeps derives from the key, and a retry whose key
// was rotated is the same request. The form and the profile still count.
func TestDigestLeavesOutTheInlineKey(t *testing.T) {
	digest := func(p *AuthProfileRef) [32]byte {
		t.Helper()
		req := &TurnRequest{Attempt: Attempt{RunID: "r1"}, Prompt: "hi", AuthProfileTurnFields: AuthProfileTurnFields{AuthProfile: p}}
		d, err := req.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	inline := digest(&AuthProfileRef{ID: "openai:work", APIKey: testInlineKey})
	if inline != digest(&AuthProfileRef{ID: "openai:work", APIKey: "sk-rotated"}) {
		t.Error("two requests that differ only in the inline key have different digests")
	}
	if inline == digest(&AuthProfileRef{ID: "openai:other", APIKey: testInlineKey}) {
		t.Error("another profile id has the same digest")
	}
	if inline == digest(&AuthProfileRef{ID: "openai:work", SecretKeyRef: &SecretKeyRef{Name: "s", Key: "k"}}) {
		t.Error("a Secret's key has the digest of an inline key")
	}
	if inline == digest(nil) {
		t.Error("a request without profile has the digest of one with an inline key")
	}
	req := &TurnRequest{AuthProfileTurnFields: AuthProfileTurnFields{AuthProfile: &AuthProfileRef{ID: "openai:work", APIKey: testInlineKey}}}
	if _, err := req.Digest(); err != nil || req.AuthProfile.APIKey != testInlineKey {
		t.Errorf("Digest changed the request's key (err %v)", err)
	}
}
