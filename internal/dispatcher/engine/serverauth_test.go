package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The dispatcher authenticates to a managed harness's pod with a token
// signed from the harness's token Secret, which a real app-server started as
// the operator's pods are (`--ws-auth signed-bearer-token`, the Secret as
// the shared secret file) accepts; the Secret's content sent as a static
// token, as the dispatcher did before, is refused. An external harness keeps
// its static token.
func TestServerAuthOfManagedAndExternalHarnesses(t *testing.T) {
	t.Parallel()
	const secret = "managed-harness-shared-secret-0d7c5e9a1b"
	managed := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "codex", UID: "codex-uid"},
		Spec: v1alpha1.AgentHarnessSpec{AppServer: &v1alpha1.AppServerWorkload{}}}
	external := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "remote"},
		Spec: v1alpha1.AgentHarnessSpec{External: &v1alpha1.ExternalServer{URL: "wss://codex.example",
			TokenSecretRef: v1alpha1.SecretKeyReference{Name: "remote-token", Key: "token"}}}}
	// A Secret of a managed harness's generated name that the harness does
	// not control (created by someone else; the manager never adopts it).
	squatted := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "squatted", UID: "squatted-uid"},
		Spec: v1alpha1.AgentHarnessSpec{AppServer: &v1alpha1.AppServerWorkload{}}}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		// The manager's token Secret: controlled by the harness (the
		// dispatcher trusts no other Secret of that name).
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: objects.TokenSecretName(managed),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(managed, v1alpha1.GroupVersion.WithKind("AgentHarness"))}},
			Data: map[string][]byte{objects.TokenSecretKey: []byte(secret)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: objects.TokenSecretName(squatted)},
			Data: map[string][]byte{objects.TokenSecretKey: []byte("a-secret-the-harness-does-not-own-00000")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "remote-token"},
			Data: map[string][]byte{"token": []byte("static-external-token")}},
	).Build()
	e := &Engine{reader: reader}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ext, err := e.serverAuth(ctx, external)
	if err != nil || ext.Token != "static-external-token" || ext.SignedBearer != nil {
		t.Fatalf("external harness auth = %+v, %v; want its static token", ext, err)
	}

	if got, err := e.serverAuth(ctx, squatted); err == nil || got.SignedBearer != nil || got.Token != "" {
		t.Fatalf("a token Secret the harness does not control: %+v, %v; want an error and no credential", got, err)
	}

	auth, err := e.serverAuth(ctx, managed)
	if err != nil || auth.SignedBearer == nil || auth.Token != "" {
		t.Fatalf("managed harness auth = %+v, %v; want a signed bearer", auth, err)
	}
	stub := stubmodel.Start(t)
	srv := codextest.Start(t, codextest.Options{ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket,
		ListenHost: "127.0.0.6", WSSharedSecret: secret,
		WSIssuer: appserver.SignedBearerIssuer, WSAudience: appserver.SignedBearerAudience})
	if _, err := appserver.DialWebSocket(ctx, srv.URL, appserver.WebSocketOptions{Token: secret}); !errors.Is(err, appserver.ErrUnauthorized) {
		t.Fatalf("the shared secret as a static token: %v, want 401", err)
	}
	tr, err := appserver.DialWebSocket(ctx, srv.URL, auth)
	if err != nil {
		t.Fatalf("the dispatcher's managed-harness auth was refused: %v", err)
	}
	c, err := appserver.Connect(ctx, tr, appserver.Options{})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	_ = c.Close()
}
