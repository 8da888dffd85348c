package engine

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// TestMintModelCredential: a turn on a harness with spec.modelGateway gets
// a credential that names its grant, harness, model and sealed profile and
// outlives its deadline; a harness without the field gets none; a profile
// key the gateway could not send, or an engine without the key, refuses
// the turn naming why.
func TestMintModelCredential(t *testing.T) {
	key, err := modelcred.DeriveKey(make([]byte, modelcred.TurnTokenKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	sess := &v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "s", UID: "sess-uid"},
		Spec: v1alpha1.AgentSessionSpec{Model: "openai/gpt-5.5"}}
	gateway := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "codex", UID: "harness-uid"},
		Spec: v1alpha1.AgentHarnessSpec{AppServer: &v1alpha1.AppServerWorkload{}, ModelGateway: &v1alpha1.ModelGateway{BaseURL: "https://models.test/v1"}}}
	plain := &v1alpha1.AgentHarness{ObjectMeta: gateway.ObjectMeta, Spec: v1alpha1.AgentHarnessSpec{AppServer: &v1alpha1.AppServerWorkload{}}}
	lease := store.Lease{Session: "team-a/sess-uid", Token: 7}
	e := &Engine{opts: Options{ModelCredentials: key, DefaultTurnTimeout: 10 * time.Minute, LeaseTTL: 30 * time.Second}}

	p := &prepared{harness: gateway, authProfile: &adapter.AuthProfile{ID: "openai:work", APIKey: "sk-tenant-1"}}
	if terr := e.mintModelCredential(sess, p, lease, "run-1", 60_000, &wire.AuthProfileRef{ID: "openai:work"}, now); terr != nil {
		t.Fatalf("mint: %v", terr)
	}
	c, err := modelcred.Open(key, p.modelCredential, now, modelcred.Audience)
	if err != nil {
		t.Fatalf("open the minted credential: %v", err)
	}
	want := modelcred.Harness{Namespace: "team-a", Name: "codex", UID: "harness-uid"}
	if c.Lease != lease.Session || c.Token != 7 || c.Run != "run-1" || c.Harness != want || len(c.Models) != 1 || c.Models[0] != "gpt-5.5" {
		t.Errorf("claims %v: want the lease's grant, the run, the harness and the bare model id", c)
	}
	if c.Profile == nil || c.Profile.ID != "openai:work" || c.Profile.Key != "sk-tenant-1" {
		t.Errorf("the profile is not sealed in the credential: %v", c.Profile)
	}
	if exp := now.Add(time.Minute + 30*time.Second + credentialSlack); !c.ExpiresAt.Equal(exp) {
		t.Errorf("expires %s, want the deadline plus the lease's TTL plus the slack (%s)", c.ExpiresAt, exp)
	}
	if turnModelProvider(p) != "harness-gateway" {
		t.Errorf("a gateway turn's provider is %q", turnModelProvider(p))
	}
	in := adapter.TurnInput{AuthProfile: p.authProfile}
	withModelCredential(&in, p)
	if in.ModelCredential != p.modelCredential || in.AuthProfile != nil {
		t.Errorf("the input carries the profile beside the credential (%v) or no credential", in.AuthProfile)
	}

	none := &prepared{harness: plain}
	if terr := e.mintModelCredential(sess, none, lease, "run-2", 0, nil, now); terr != nil || none.modelCredential != "" {
		t.Errorf("a harness without spec.modelGateway: %v, credential %q; want none", terr, none.modelCredential)
	}

	multiLine := &prepared{harness: gateway, authProfile: &adapter.AuthProfile{ID: "openai:work", APIKey: "sk-a\nsk-b"}}
	terr := e.mintModelCredential(sess, multiLine, lease, "run-3", 0, &wire.AuthProfileRef{ID: "openai:work", SecretKeyRef: &wire.SecretKeyRef{Name: "k", Key: "v"}}, now)
	if terr == nil || terr.Code != wire.CodeAuthProfileUnsupported || !strings.Contains(terr.Message, "authProfile.secretKeyRef") || strings.Contains(terr.Message, "sk-a") {
		t.Errorf("a multi-line Secret key: %v; want AuthProfileUnsupported naming authProfile.secretKeyRef and not the key", terr)
	}

	keyless := &Engine{opts: e.opts}
	keyless.opts.ModelCredentials = nil
	if terr := keyless.mintModelCredential(sess, &prepared{harness: gateway}, lease, "run-4", 0, nil, now); terr == nil || terr.Code != wire.CodeHarnessUnavailable {
		t.Errorf("an engine without the key: %v; want HarnessUnavailable", terr)
	}
}
