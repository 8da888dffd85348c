package webhook

import (
	"strings"
	"testing"
)

func TestHarnessNamespaceErrors(t *testing.T) {
	for _, tc := range []struct {
		namespace  string
		namespaces []string
		want       string // substring of the error; empty: admitted
	}{
		{namespace: "anything", namespaces: nil,
			want: `metadata.namespace: Forbidden: no harness namespaces are configured (manager flag --harness-namespaces / chart value harnessNamespaces), so no namespace may hold AgentHarnesses; "anything" is not one of them`},
		{namespace: "team-a", namespaces: []string{"team-a", "team-b"}},
		{namespace: "team-c", namespaces: []string{"team-a", "team-b"},
			want: `metadata.namespace: Forbidden: the operator manages AgentHarnesses only in its harness namespaces team-a, team-b (Helm value harnessNamespaces, manager flag --harness-namespaces); "team-c" is not one of them`},
	} {
		errs := harnessNamespaceErrors(tc.namespace, tc.namespaces)
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%s in %v: refused: %v", tc.namespace, tc.namespaces, errs)
		case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want)):
			t.Errorf("%s in %v: errors %v, want one containing %q", tc.namespace, tc.namespaces, errs, tc.want)
		}
	}
}
