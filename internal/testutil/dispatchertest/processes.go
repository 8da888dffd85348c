package dispatchertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openclaw/harness-operator/internal/contract/sse"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// podNameEnv is the dispatcher's variable for its pod's name (cmd/dispatcher,
// the chart's downward API): a PostgreSQL replica's owner id.
const podNameEnv = "POD_NAME"

// Processes is what dispatcher processes of one test share: the dispatcher
// binary, envtest's API server with an admin kubeconfig, and the fixture's
// Codex, stub model, sessions and gateway token.
type Processes struct {
	T          *testing.T
	Fx         *TurnFixture
	Work       string
	Bin        string
	Kubeconfig string
	NS         string
}

// Replica is one dispatcher process.
type Replica struct {
	Name string
	Proc *testutil.Process
	Base string // https://…/v1/namespaces/<ns>/agentsessions
	HC   *http.Client
}

// NewProcesses builds the dispatcher binary while it starts the fixture.
func NewProcesses(ctx context.Context, t *testing.T, ns string, opts Options, sessions ...string) *Processes {
	t.Helper()
	work := t.TempDir()
	binDir := filepath.Join(work, "bin")
	built := make(chan error, 1)
	go func() { built <- testutil.BuildBinaries(binDir, "./cmd/dispatcher") }()
	fx := NewTurnFixtureWith(ctx, t, ns, opts, sessions...)
	admin, err := fx.Env.AddUser(envtest.User{Name: ns + "-admin", Groups: []string{"system:masters"}})
	must(t, err)
	kc, err := admin.KubeConfig()
	must(t, err)
	kubeconfig := filepath.Join(work, "kubeconfig")
	must(t, os.WriteFile(kubeconfig, kc, 0o600))
	must(t, <-built)
	return &Processes{T: t, Fx: fx, Work: work, Bin: filepath.Join(binDir, "dispatcher"), Kubeconfig: kubeconfig, NS: ns}
}

// Start runs a dispatcher named name (its POD_NAME) as the chart's
// Deployment does (leader election on) with the store's flags, and waits
// until it is ready: serving, leader or not.
func (e *Processes) Start(name string, storeArgs ...string) *Replica {
	e.T.Helper()
	return e.StartInstance(name, name, storeArgs...)
}

// StartInstance is Start with the process's log in <work>/<instance>.log: a
// replica restarted under its name keeps its earlier logs.
func (e *Processes) StartInstance(name, instance string, storeArgs ...string) *Replica {
	t := e.T
	t.Helper()
	bind, probe, caFile := FreeAddr(t), FreeAddr(t), filepath.Join(e.Work, name+"-ca.pem")
	args := append([]string{
		"--kubeconfig=" + e.Kubeconfig, "--bind-address=" + bind, "--probe-bind-address=" + probe,
		"--metrics-bind-address=0", "--tls-ca-out=" + caFile, "--token-audience=" + Audience,
		"--leader-elect=true", "--leader-election-namespace=default", "--shutdown-grace=30s",
	}, storeArgs...)
	p, err := testutil.StartProcess(instance, e.Bin, e.Work, []string{podNameEnv + "=" + name}, append(args, testutil.DispatcherProcessArgs()...)...)
	must(t, err)
	t.Cleanup(func() { p.Stop(45 * time.Second) })
	must(t, p.WaitReady("http://"+probe+"/readyz?verbose", 90*time.Second))
	return &Replica{Name: name, Proc: p, Base: "https://" + bind + "/v1/namespaces/" + e.NS + "/agentsessions", HC: TrustingClient(t, caFile)}
}

// TrustingClient is an HTTPS client that trusts only the CA in caFile (a
// dispatcher's --tls-ca-out).
func TrustingClient(t *testing.T, caFile string) *http.Client {
	t.Helper()
	tr, err := testutil.TrustingTransport(caFile)
	must(t, err)
	return &http.Client{Transport: tr}
}

// FreeAddr is a free loopback address.
func FreeAddr(t *testing.T) string {
	t.Helper()
	addr, err := testutil.FreeAddr()
	must(t, err)
	return addr
}

// TurnRequest posts a turn and returns its event stream (status 200).
func TurnRequest(ctx context.Context, hc *http.Client, url, token, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return nil, fmt.Errorf("turn: %d %s", resp.StatusCode, b)
	}
	return resp, nil
}

// SSEEvent is one event of a stream.
type SSEEvent struct {
	ID   int64
	Type string
	Data json.RawMessage
}

// ParseSSE reads an event stream to its end.
func ParseSSE(t *testing.T, r io.Reader) []SSEEvent {
	t.Helper()
	var evs []SSEEvent
	if err := sse.Read(r, func(ev sse.Event) bool {
		id, _ := strconv.ParseInt(ev.ID, 10, 64)
		evs = append(evs, SSEEvent{ID: id, Type: ev.Type, Data: ev.Data})
		return true
	}); err != nil {
		t.Fatalf("read event stream: %v", err)
	}
	if len(evs) == 0 {
		t.Fatal("empty event stream")
	}
	for i, e := range evs {
		if e.ID != int64(i)+1 || !json.Valid(e.Data) {
			t.Fatalf("event %d: id %d, data %q", i, e.ID, e.Data)
		}
	}
	return evs
}
