package modelcred

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestPrintingWithholdsKeys: claims, a profile and a key printed every way
// a log line, an error or a debug dump prints them — fmt's verbs, log/slog's
// handlers, the dispatcher's logger, JSON — hold neither the profile key nor
// the credential key, and still name what is not secret.
func TestPrintingWithholdsKeys(t *testing.T) {
	c := turnClaims()
	k := testKey(t, 9)
	derived, err := hkdf.Key(sha256.New, turnTokenKey(9), nil, KeyInfo, 32)
	if err != nil {
		t.Fatal(err)
	}
	things := map[string]any{"claims": c, "*claims": &c, "profile": *c.Profile, "*profile": c.Profile, "key": *k, "*key": k}
	printed := map[string]string{}
	for name, v := range things {
		for _, verb := range []string{"%v", "%+v", "%s", "%q", "%x", "%#v"} {
			printed[verb+" "+name] = fmt.Sprintf(verb, v)
		}
		var text, js, zapped bytes.Buffer
		slog.New(slog.NewTextHandler(&text, nil)).Info("turn", name, v)
		slog.New(slog.NewJSONHandler(&js, nil)).Info("turn", name, v)
		zap.New(zap.WriteTo(&zapped)).Info("turn", name, v)
		printed["slog text "+name], printed["slog JSON "+name], printed["zap "+name] = text.String(), js.String(), zapped.String()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%s): %v", name, err)
		}
		printed["JSON "+name] = string(b)
		printed["error "+name] = fmt.Errorf("mint: %v", v).Error()
	}
	secrets := map[string][]byte{"the profile key": []byte(testProfileKey), "the derived key": derived, "the turn-token key": turnTokenKey(9)}
	for how, s := range printed {
		for what, secret := range secrets {
			for _, form := range []string{string(secret), fmt.Sprintf("%x", secret), base64.StdEncoding.EncodeToString(secret)[:16]} {
				if len(form) >= 8 && strings.Contains(s, form) {
					t.Errorf("%s prints %s: %s", how, what, s)
				}
			}
		}
	}
	// The controls: what is not secret is printed.
	for _, how := range []string{"%v claims", "slog JSON claims", "zap claims", "JSON claims"} {
		for _, want := range []string{c.Lease, "openai:work", c.Models[1], c.Harness.UID} {
			if !strings.Contains(printed[how], want) {
				t.Errorf("%s does not name %q: %s", how, want, printed[how])
			}
		}
	}
	if !strings.Contains(printed["%v claims"], "[withheld]") {
		t.Errorf("%%v of claims does not say the key is withheld: %s", printed["%v claims"])
	}
}
