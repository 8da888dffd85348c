package engine

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// secretGets counts the Secrets read through a reader.
type secretGets struct {
	client.Reader
	n atomic.Int32
}

func (r *secretGets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		r.n.Add(1)
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// A turn on a pooled app-server connection reads no token Secret: the
// Secret is read when a connection is dialled, and each dial checks again
// that the harness controls it. A dial to a harness whose Secret it does
// not control sends nothing and pools nothing.
func TestTokenSecretIsReadWhenDialling(t *testing.T) {
	t.Parallel()
	const secret = "managed-harness-shared-secret-7e21c4d9aa"
	managed := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "codex", UID: "codex-uid"},
		Spec: v1alpha1.AgentHarnessSpec{AppServer: &v1alpha1.AppServerWorkload{}}}
	squatted := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "squatted", UID: "squatted-uid"},
		Spec: v1alpha1.AgentHarnessSpec{AppServer: &v1alpha1.AppServerWorkload{}}}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reader := &secretGets{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: objects.TokenSecretName(managed),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(managed, v1alpha1.GroupVersion.WithKind("AgentHarness"))}},
			Data: map[string][]byte{objects.TokenSecretKey: []byte(secret)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: objects.TokenSecretName(squatted)},
			Data: map[string][]byte{objects.TokenSecretKey: []byte(secret)}},
	).Build()}
	stub := stubmodel.Start(t)
	srv := codextest.Start(t, codextest.Options{ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket,
		ListenHost: "127.0.0.7", WSSharedSecret: secret,
		WSIssuer: appserver.SignedBearerIssuer, WSAudience: appserver.SignedBearerAudience})
	e := &Engine{reader: reader}
	defer e.pool.closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	server := Server{Name: "codex-0", URL: srv.URL}

	var first *appserver.Client
	for turn := range 3 {
		sc, err := e.serverConn(ctx, managed, server)
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		c, err := e.open(ctx, sc)
		if err != nil {
			t.Fatalf("turn %d: connect: %v", turn, err)
		}
		if first == nil {
			first = c
		} else if c != first {
			t.Fatalf("turn %d got a new connection, want the pooled one", turn)
		}
	}
	if got := reader.n.Load(); got != 1 {
		t.Fatalf("three turns on one pooled connection read the token Secret %d times, want once (at the dial)", got)
	}

	// The connection ended: the next turn dials again, reading the Secret.
	_ = first.Close()
	<-first.Done()
	sc, err := e.serverConn(ctx, managed, server)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := e.open(ctx, sc); err != nil || c == first {
		t.Fatalf("after the connection ended: %v (same connection %v), want a new one", err, c == first)
	}
	if got := reader.n.Load(); got != 2 {
		t.Fatalf("a redial read the token Secret %d times in all, want 2", got)
	}

	sc, err = e.serverConn(ctx, squatted, Server{Name: "squatted-0", URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.open(ctx, sc); err == nil || !strings.Contains(err.Error(), "is not controlled by AgentHarness squatted") {
		t.Fatalf("a dial with a token Secret the harness does not control: %v, want it refused", err)
	}
	if len(e.pool.conns) != 1 {
		t.Fatalf("the pool holds %d connections after the refused dial, want only the managed harness's", len(e.pool.conns))
	}
}
