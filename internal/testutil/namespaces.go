package testutil

import "fmt"

// MaxSuiteNamespaces bounds the namespaces a suite creates with
// SuiteNamespace: the manager serves harnesses only in the namespaces it is
// given (Reconciler.HarnessNamespaces; empty means none), so a suite lists
// them all before it starts.
const MaxSuiteNamespaces = 200

// SuiteNamespaces are the names SuiteNamespace hands out for prefix, for
// the reconciler's HarnessNamespaces.
func SuiteNamespaces(prefix string) []string {
	out := make([]string, MaxSuiteNamespaces)
	for i := range out {
		out[i] = SuiteNamespace(prefix, i+1)
	}
	return out
}

// SuiteNamespace is the n-th (from 1) namespace name of prefix; it panics
// beyond MaxSuiteNamespaces, where the manager would not serve it.
func SuiteNamespace(prefix string, n int) string {
	if n < 1 || n > MaxSuiteNamespaces {
		panic(fmt.Sprintf("namespace %d of %q is beyond testutil.MaxSuiteNamespaces (%d): raise it", n, prefix, MaxSuiteNamespaces))
	}
	return fmt.Sprintf("%s-%d", prefix, n)
}
