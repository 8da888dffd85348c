package v1alpha1_test

import (
	"testing"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// A harness owner lists delegates by the identity TokenReview reports: a
// ServiceAccount's user name, a user name, or one of the user's groups.
func TestDelegateMatchesTheAuthenticatedIdentity(t *testing.T) {
	sa := v1alpha1.Delegate{Kind: v1alpha1.DelegateServiceAccount, Namespace: "voice", Name: "transport"}
	user := v1alpha1.Delegate{Kind: v1alpha1.DelegateUser, Name: "alice"}
	group := v1alpha1.Delegate{Kind: v1alpha1.DelegateGroup, Name: "voice-bots"}
	for _, tc := range []struct {
		name   string
		d      v1alpha1.Delegate
		user   string
		groups []string
		want   bool
	}{
		{"the ServiceAccount's tokens", sa, "system:serviceaccount:voice:transport", nil, true},
		{"a ServiceAccount of the same name in another namespace", sa, "system:serviceaccount:other:transport", nil, false},
		{"a user named like the ServiceAccount", sa, "transport", nil, false},
		{"the user", user, "alice", nil, true},
		{"another user", user, "bob", []string{"alice"}, false},
		{"a member of the group", group, "bob", []string{"system:authenticated", "voice-bots"}, true},
		{"a user named like the group", group, "voice-bots", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.d.Matches(tc.user, tc.groups); got != tc.want {
				t.Fatalf("%+v.Matches(%q, %q) = %v, want %v", tc.d, tc.user, tc.groups, got, tc.want)
			}
		})
	}
}
