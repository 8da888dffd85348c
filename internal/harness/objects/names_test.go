package objects

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestWorkloadName(t *testing.T) {
	long := strings.Repeat("a", 60)
	for _, tc := range []struct {
		harness, want string
	}{
		{"codex", "codex-app-server"},
		{"1codex", ""},
		{"codex.pool", ""},
		{long, ""},
		{strings.Repeat("b", 253), ""},
	} {
		got := workloadName(tc.harness)
		if tc.want != "" && got != tc.want {
			t.Errorf("workloadName(%q) = %q, want %q", tc.harness, got, tc.want)
		}
		if len(got) > maxWorkloadName {
			t.Errorf("workloadName(%q) = %q is longer than %d", tc.harness, got, maxWorkloadName)
		}
		if errs := validation.IsDNS1035Label(got); len(errs) > 0 {
			t.Errorf("workloadName(%q) = %q is not a Service name: %v", tc.harness, got, errs)
		}
		if !strings.HasSuffix(got, workloadSuffix) {
			t.Errorf("workloadName(%q) = %q lacks %q", tc.harness, got, workloadSuffix)
		}
	}
	if workloadName("codex.pool") == workloadName("codex-pool") {
		t.Error("names differing only by '.' vs '-' must not collide")
	}
	if workloadName(long+"x") == workloadName(long+"y") {
		t.Error("long names differing at the end must not collide")
	}
}

func TestHarnessLabelValue(t *testing.T) {
	for _, name := range []string{"codex", strings.Repeat("a", 63), strings.Repeat("a.b-", 40) + "c"} {
		v := harnessLabelValue(name)
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("harnessLabelValue(%q) = %q: %v", name, v, errs)
		}
		if len(name) <= 63 && v != name {
			t.Errorf("harnessLabelValue(%q) = %q, want the name itself", name, v)
		}
	}
}
