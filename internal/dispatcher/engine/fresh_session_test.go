package engine

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// countingGets counts the Gets that reach a reader.
type countingGets struct {
	client.Reader
	gets int
}

func (r *countingGets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets++
	return r.Reader.Get(ctx, key, obj, opts...)
}

// TestATurnOnAModelJustWrittenIsCheckedAgainstTheAPIServer: the gateway
// writes spec.model right before a turn on another model; a dispatcher
// whose cache still holds the old model reads the session from the API
// server and checks the turn against the new one. It reads again only for
// a mismatch of the model alone, and never takes another session (a
// successor under the same name) for the cached one.
func TestATurnOnAModelJustWrittenIsCheckedAgainstTheAPIServer(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	session := func(uid k8stypes.UID, model string) *v1alpha1.AgentSession {
		return &v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s", UID: uid},
			Spec: v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:s", SessionID: "s", Model: model}}
	}
	cases := []struct {
		name      string
		cached    *v1alpha1.AgentSession
		api       *v1alpha1.AgentSession
		attempt   wire.Attempt
		wantModel string
		wantReads int
	}{
		{name: "the cache lags behind a model change", cached: session("u1", "openai/gpt-a"), api: session("u1", "openai/gpt-b"),
			attempt: wire.Attempt{Provider: "openai", ModelID: "gpt-b"}, wantModel: "openai/gpt-b", wantReads: 1},
		{name: "the cache agrees with the attempt", cached: session("u1", "openai/gpt-b"), api: session("u1", "openai/gpt-b"),
			attempt: wire.Attempt{Provider: "openai", ModelID: "gpt-b"}, wantModel: "openai/gpt-b", wantReads: 0},
		{name: "another session under the name", cached: session("u1", "openai/gpt-a"), api: session("u2", "openai/gpt-b"),
			attempt: wire.Attempt{Provider: "openai", ModelID: "gpt-b"}, wantModel: "openai/gpt-a", wantReads: 1},
		{name: "a mismatch beyond the model", cached: session("u1", "openai/gpt-a"), api: session("u1", "openai/gpt-b"),
			attempt: wire.Attempt{Provider: "openai", ModelID: "gpt-b", AgentID: "other"}, wantModel: "openai/gpt-a", wantReads: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := &countingGets{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.api).Build()}
			e := &Engine{reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.cached).Build(), opts: Options{APIReader: api}}
			got, err := e.sessionForTurn(context.Background(), "team", "s", &wire.TurnRequest{Attempt: tc.attempt})
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.Model != tc.wantModel {
				t.Errorf("checked against spec.model %q, want %q", got.Spec.Model, tc.wantModel)
			}
			if api.gets != tc.wantReads {
				t.Errorf("%d reads from the API server, want %d", api.gets, tc.wantReads)
			}
		})
	}
}
