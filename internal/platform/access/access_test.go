package access_test

import (
	"context"
	"errors"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openclaw/harness-operator/internal/platform/access"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// TestCheckAsksAsTheUser runs real SubjectAccessReviews against a real
// kube-apiserver with RBAC: a user (or a group the user is in) bound to a
// Role with `get` on one Secret may get that Secret and no other; a user
// without a binding may get none; a Checker whose own identity may not
// create reviews refuses (fails closed) instead of allowing.
func TestCheckAsksAsTheUser(t *testing.T) {
	env, err := testutil.StartEnv()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	admin := env.Client
	const ns = "team-a"
	mustCreate(t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	mustCreate(t, admin, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-token"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"token"}, Verbs: []string{"get"}}},
	})
	mustCreate(t, admin, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-token"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-token"},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"},
			{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "team-a-devs"},
			{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: bindingSeen},
		},
	})

	checker := access.NewChecker(admin)
	waitForBinding(t, checker, ns)
	alice := authenticationv1.UserInfo{Username: "alice", UID: "u-1", Groups: []string{"system:authenticated"}}
	bob := authenticationv1.UserInfo{Username: "bob", Groups: []string{"team-a-devs", "system:authenticated"}}
	mallory := authenticationv1.UserInfo{Username: "mallory", Groups: []string{"system:authenticated"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"all"}}}
	for _, tc := range []struct {
		name        string
		user        authenticationv1.UserInfo
		secret      string
		wantAllowed bool
	}{
		{"a user bound by a RoleBinding may get the Secret", alice, "token", true},
		{"a user bound through a group may get the Secret", bob, "token", true},
		{"the binding names one Secret: another is refused", alice, "other", false},
		{"a user without a binding is refused", mallory, "token", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checker.CheckGetSecret(ctx, tc.user, ns, tc.secret)
			if tc.wantAllowed {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var denied *access.DeniedError
			if !errors.As(err, &denied) {
				t.Fatalf("err = %v, want a *DeniedError", err)
			}
			want := `user "` + tc.user.Username + `" may not get secrets "` + tc.secret + `" in namespace "team-a"`
			if err.Error() != want {
				t.Errorf("message %q, want %q", err.Error(), want)
			}
		})
	}

	t.Run("a review that cannot be made is a refusal, not a permission", func(t *testing.T) {
		u, err := env.AddUser(envtest.User{Name: "cannot-review"})
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.New(u.Config(), client.Options{Scheme: admin.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		err = access.NewChecker(c).CheckGetSecret(ctx, alice, ns, "token")
		var denied *access.DeniedError
		if err == nil || errors.As(err, &denied) {
			t.Fatalf("err = %v, want the review's own failure", err)
		}
	})

	t.Run("a refusal names the resource with its group", func(t *testing.T) {
		err := checker.Check(ctx, alice, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: "apps", Resource: "statefulsets"})
		if err == nil || err.Error() != `user "alice" may not create statefulsets.apps in namespace "team-a"` {
			t.Fatalf("err = %v", err)
		}
	})
}

// bindingSeen is a subject of the test's RoleBinding that only
// waitForBinding asks about.
const bindingSeen = "binding-seen"

// waitForBinding waits until the API server's RBAC authorizer has seen the
// test's RoleBinding (its informer lags the create): then bindingSeen, a
// subject of the same object, is allowed. The cases never ask about it.
func waitForBinding(t *testing.T, checker *access.Checker, ns string) {
	t.Helper()
	user := authenticationv1.UserInfo{Username: bindingSeen, Groups: []string{"system:authenticated"}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := checker.CheckGetSecret(context.Background(), user, ns, "token")
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the RoleBinding never took effect: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mustCreate(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}
