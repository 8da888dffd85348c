package agentharness

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/platform/conditions"
)

// Pure functions of the controller, table-tested without an API server.

func TestImageDigest(t *testing.T) {
	d := "sha256:" + strings.Repeat("0", 64)
	for in, want := range map[string]string{
		"registry.example/codex@" + d:                   d,
		"docker-pullable://registry.example/codex@" + d: d,
		"registry.example:5000/codex:1.2@" + d:          d,
		d:                                               d,
		"docker://" + d:                                 d,
		"":                                              "",
		"registry.example/codex-without-digest-or-colons": "",
	} {
		if got := imageDigest(in); got != want {
			t.Errorf("imageDigest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadyzURL(t *testing.T) {
	for in, want := range map[string]string{
		"ws://10.0.0.1:4500":          "http://10.0.0.1:4500/readyz",
		"wss://codex.example/rpc":     "https://codex.example/readyz",
		"ws://[fd00::1]:4500/a/b":     "http://[fd00::1]:4500/readyz",
		"ws://user:secret@host:4500/": "http://host:4500/readyz",
	} {
		got, err := readyzURL(in)
		if err != nil || got != want {
			t.Errorf("readyzURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := readyzURL("http://host"); err == nil {
		t.Error("readyzURL accepted an http URL")
	}
}

func TestVersionVerdict(t *testing.T) {
	ua := func(v string) *handshakeResult {
		return &handshakeResult{server: "p", userAgent: "harness-operator/" + v + " (Debian 12; x86_64) xterm"}
	}
	failed := &handshakeResult{server: "p-1", err: errors.New("websocket upgrade refused: HTTP 401")}
	for _, tc := range []struct {
		name    string
		results []*handshakeResult
		min     string
		want    string
		message string
	}{
		{"none", nil, "", "Unknown/HandshakePending", ""},
		{"pending", []*handshakeResult{nil}, "", "Unknown/HandshakePending", ""},
		{"accepted", []*handshakeResult{ua("0.169.0")}, "", "True/VersionAccepted",
			"Codex app-server 0.169.0 meets the version floor 0.149.0"},
		{"floor prerelease is below", []*handshakeResult{ua("0.149.0-alpha.1")}, "", "False/VersionBelowFloor",
			"Codex app-server 0.149.0 or newer is required, but detected 0.149.0-alpha.1. Update the AgentHarness image to a newer Codex release."},
		{"minVersion raises", []*handshakeResult{ua("0.169.0")}, "0.170.0", "False/VersionBelowFloor",
			"Codex app-server 0.170.0 or newer is required, but detected 0.169.0. Update the AgentHarness image to a newer Codex release."},
		{"minVersion never lowers", []*handshakeResult{ua("0.148.0")}, "0.100.0", "False/VersionBelowFloor",
			"Codex app-server 0.149.0 or newer is required, but detected 0.148.0. Update the AgentHarness image to a newer Codex release."},
		{"no version", []*handshakeResult{{server: "p", userAgent: "codex"}}, "", "False/VersionBelowFloor",
			"Codex app-server 0.149.0 or newer is required, but the running Codex version could not be determined. Update the AgentHarness image to a newer Codex release."},
		{"failed", []*handshakeResult{failed}, "", "False/HandshakeFailed",
			"the handshake with p-1 failed: websocket upgrade refused: HTTP 401"},
		{"below floor wins over failed and pending", []*handshakeResult{nil, failed, ua("0.148.0")}, "", "False/VersionBelowFloor", ""},
		{"failed wins over pending and accepted", []*handshakeResult{ua("0.169.0"), nil, failed}, "", "False/HandshakeFailed", ""},
		{"pending wins over accepted", []*handshakeResult{ua("0.169.0"), nil}, "", "Unknown/HandshakePending", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := versionVerdict(tc.results, tc.min)
			if got := string(v.status) + "/" + string(v.reason); got != tc.want {
				t.Errorf("verdict = %s (%s), want %s", got, v.message, tc.want)
			}
			if tc.message != "" && v.message != tc.message {
				t.Errorf("message = %q, want %q", v.message, tc.message)
			}
		})
	}
}

func TestAttestation(t *testing.T) {
	d1, d2 := "sha256:"+strings.Repeat("1", 64), "sha256:"+strings.Repeat("2", 64)
	ok := &handshakeResult{userAgent: "harness-operator/0.169.0 (x)"}
	srv := func(d string, st v1alpha1.ServerState) observedServer {
		return observedServer{name: "p", digest: d, imageID: "r@" + d, state: st}
	}
	for _, tc := range []struct {
		name     string
		servers  []observedServer
		results  map[string]*handshakeResult
		want     string
		artifact string
	}{
		{"no digest", []observedServer{srv("", v1alpha1.ServerNotReady)}, nil, "Unknown/NoReadyPods", ""},
		{"one digest", []observedServer{srv(d1, v1alpha1.ServerReady), srv(d1, v1alpha1.ServerNotReady)},
			map[string]*handshakeResult{d1: ok}, "True/ArtifactVerified", "codex-app-server:0.169.0@" + d1},
		{"pending", []observedServer{srv(d1, v1alpha1.ServerReady)}, nil, "Unknown/HandshakePending", ""},
		{"mixed", []observedServer{srv(d1, v1alpha1.ServerReady), srv(d2, v1alpha1.ServerNotReady)},
			map[string]*handshakeResult{d1: ok, d2: ok}, "False/MixedArtifacts", ""},
		{"draining pods do not count", []observedServer{srv(d1, v1alpha1.ServerReady), srv(d2, v1alpha1.ServerTerminating)},
			map[string]*handshakeResult{d1: ok}, "True/ArtifactVerified", "codex-app-server:0.169.0@" + d1},
		{"unversioned", []observedServer{srv(d1, v1alpha1.ServerReady)},
			map[string]*handshakeResult{d1: {userAgent: "codex"}}, "False/HandshakeFailed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, a := attestation(&scope{servers: tc.servers, results: tc.results})
			if got := string(v.status) + "/" + string(v.reason); got != tc.want {
				t.Errorf("verdict = %s (%s), want %s", got, v.message, tc.want)
			}
			got := ""
			if a != nil {
				got = a.ID + "@" + a.Fingerprint
			}
			if got != tc.artifact {
				t.Errorf("artifact = %q, want %q", got, tc.artifact)
			}
		})
	}
}

func TestHandshakeRetry(t *testing.T) {
	now := time.Unix(1000, 0)
	fp := tokenFingerprint("t")
	if !needsHandshake(nil, fp, now) {
		t.Error("no result: a handshake is needed")
	}
	if needsHandshake(&handshakeResult{tokenFP: "other"}, fp, now) {
		t.Error("a successful result is never repeated, whatever the token")
	}
	failed := &handshakeResult{err: errors.New("x"), tokenFP: fp, retryAt: now.Add(time.Second)}
	if needsHandshake(failed, fp, now) {
		t.Error("a failure is not retried before its time")
	}
	if !needsHandshake(failed, fp, now.Add(time.Second)) {
		t.Error("a failure is retried when due")
	}
	if !needsHandshake(failed, tokenFingerprint("new"), now) {
		t.Error("a failure is retried at once with a new token")
	}
	for n, want := range map[int]time.Duration{1: 5 * time.Second, 2: 10 * time.Second, 5: 80 * time.Second, 6: 2 * time.Minute, 50: 2 * time.Minute} {
		if got := retryDelay(n); got != want {
			t.Errorf("retryDelay(%d) = %v, want %v", n, got, want)
		}
	}
	if strings.Contains(tokenFingerprint("secret-token"), "secret-token") {
		t.Error("the fingerprint contains the token")
	}
}

func TestConditionEvents(t *testing.T) {
	c := func(s metav1.ConditionStatus, reason string) *metav1.Condition {
		return &metav1.Condition{Status: s, Reason: reason}
	}
	for _, tc := range []struct {
		name      string
		prev, cur *metav1.Condition
		want      bool
	}{
		{"first pending is quiet", nil, c(metav1.ConditionUnknown, "HandshakePending"), false},
		{"first below floor", nil, c(metav1.ConditionFalse, "VersionBelowFloor"), true},
		{"first true", nil, c(metav1.ConditionTrue, "Ready"), true},
		{"unchanged", c(metav1.ConditionFalse, "VersionBelowFloor"), c(metav1.ConditionFalse, "VersionBelowFloor"), false},
		{"reason changed", c(metav1.ConditionFalse, "HandshakeFailed"), c(metav1.ConditionFalse, "VersionBelowFloor"), true},
		{"status changed", c(metav1.ConditionUnknown, "HandshakePending"), c(metav1.ConditionTrue, "VersionAccepted"), true},
	} {
		if got := conditions.Transition(tc.prev, *tc.cur, quietFirst); got != tc.want {
			t.Errorf("%s: Transition = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// An empty HarnessNamespaces serves no namespace: the harness gets only the
// NamespaceNotManaged verdict, whose message says how to configure one.
func TestNoHarnessNamespacesServesNone(t *testing.T) {
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "codex", Generation: 3},
		Spec:       v1alpha1.AgentHarnessSpec{External: &v1alpha1.ExternalServer{URL: "wss://codex.example"}},
	}
	for _, tc := range []struct {
		namespaces []string
		served     bool
		message    string
	}{
		{nil, false, "no harness namespaces are configured (manager flag --harness-namespaces, chart value harnessNamespaces)"},
		{[]string{"team-b"}, false, "namespace team-a is not one of the operator's harness namespaces (team-b; manager flag --harness-namespaces"},
		{[]string{"team-b", "team-a"}, true, ""},
	} {
		r := &Reconciler{HarnessNamespaces: tc.namespaces}
		phases := r.phases(h)
		if served := phases[0].name != "namespace"; served != tc.served {
			t.Errorf("HarnessNamespaces %q: served = %v, want %v", tc.namespaces, served, tc.served)
			continue
		}
		if tc.served {
			continue
		}
		s := &scope{harness: h.DeepCopy()}
		if err := phases[0].run(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(s.harness.Status.Conditions, v1alpha1.HarnessConditionReady)
		if c == nil || c.Reason != string(v1alpha1.HarnessReasonNamespaceNotManaged) || !strings.Contains(c.Message, tc.message) {
			t.Errorf("HarnessNamespaces %q: Ready = %+v, want NamespaceNotManaged containing %q", tc.namespaces, c, tc.message)
		}
	}
}
