//go:build postgres

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/dispatchertest"
	"github.com/openclaw/harness-operator/internal/testutil/pgtest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// TestTurnsSurviveARestartOnPostgres runs the dispatcher binary with
// --store=postgres, its connection string in a Secret of envtest's API
// server and a real PostgreSQL (pgtest) behind it: a turn run by one process
// is known to the next process of the same replica (POD_NAME) — its state,
// result and requester, and a repeated request is replayed from the
// database, not run again. Neither process, nor one started with a wrong
// password, ever prints the password; the latter fails naming the server.
func TestTurnsSurviveARestartOnPostgres(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	work := t.TempDir()
	binDir := filepath.Join(work, "bin")
	built := make(chan error, 1)
	go func() { built <- testutil.BuildBinaries(binDir, "./cmd/dispatcher") }()

	pg := pgtest.Start(t)
	uri := pg.NewDatabase(t)
	cfg, err := pgconn.ParseConfig(uri)
	must(t, err)
	password := cfg.Password
	const wrongPassword = "not-the-Pa55word-of-this-server"
	if len(password) < 8 {
		t.Fatalf("pgtest's password %q is too short to be searched for in logs", password)
	}

	const ns = "dispatcher-pg"
	fx := dispatchertest.NewTurnFixture(ctx, t, ns, "pg")
	admin, err := fx.Env.AddUser(envtest.User{Name: "dispatcher-pg-admin", Groups: []string{"system:masters"}})
	must(t, err)
	kc, err := admin.KubeConfig()
	must(t, err)
	kubeconfig := filepath.Join(work, "kubeconfig")
	must(t, os.WriteFile(kubeconfig, kc, 0o600))
	// The dispatcher's namespace is --leader-election-namespace's (no
	// $POD_NAMESPACE here).
	for name, conn := range map[string]string{
		"dispatcher-db":       uri,
		"dispatcher-db-wrong": strings.Replace(uri, "password="+password, "password="+wrongPassword, 1),
	} {
		must(t, fx.K8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Data:       map[string][]byte{"uri": []byte(conn)},
		}))
	}
	must(t, <-built)

	bindAddr := dispatchertest.FreeAddr(t)
	var procs []*testutil.Process
	start := func(secret string) (*testutil.Process, string) {
		t.Helper()
		probe, caFile := dispatchertest.FreeAddr(t), filepath.Join(work, "ca-"+strconv.Itoa(len(procs))+".pem")
		p, err := testutil.StartProcess("dispatcher-"+strconv.Itoa(len(procs)), filepath.Join(binDir, "dispatcher"), work,
			[]string{podNameEnv + "=harness-dispatcher-0"}, append([]string{
				"--kubeconfig=" + kubeconfig, "--bind-address=" + bindAddr, "--probe-bind-address=" + probe,
				"--metrics-bind-address=0", "--tls-ca-out=" + caFile, "--token-audience=" + audience,
				"--leader-elect=true", "--leader-election-namespace=default", "--shutdown-grace=5s",
				"--store=postgres", "--postgres-secret-name=" + secret,
			}, testutil.DispatcherProcessArgs()...)...)
		must(t, err)
		procs = append(procs, p)
		t.Cleanup(func() { p.Stop(30 * time.Second) })
		return p, "http://" + probe + "/readyz"
	}
	session := "https://" + bindAddr + "/v1/namespaces/" + ns + "/agentsessions/pg"
	const body = `{"runId":"run-pg1","prompt":"pg-1 go"}`
	fx.Stub.When("pg-1", stubmodel.Text("kept in the database", "kept ", "in the database"))

	first, ready := start("dispatcher-db")
	must(t, first.WaitReady(ready+"?verbose", 90*time.Second))
	hc := dispatchertest.TrustingClient(t, filepath.Join(work, "ca-0.pem"))
	resp, err := dispatchertest.TurnRequest(ctx, hc, session+"/turns", fx.Gateway, body)
	must(t, err)
	ran := dispatchertest.ParseSSE(t, resp.Body)
	_ = resp.Body.Close()
	if ran[len(ran)-1].Type != wire.EventResult {
		t.Fatalf("the turn ended with %v", typesOf(ran))
	}
	t.Log(first.Stop(30 * time.Second))
	if err := first.Unexpected(); err != nil {
		t.Fatalf("%v\n%s", err, first.Tail(4<<10))
	}

	second, ready := start("dispatcher-db")
	must(t, second.WaitReady(ready, 90*time.Second))
	hc = dispatchertest.TrustingClient(t, filepath.Join(work, "ca-1.pem"))
	st, got := do(t, hc, http.MethodGet, session+"/turns/run-pg1", fx.Gateway, "", nil)
	var state struct {
		State       string          `json:"state"`
		LastEventID int64           `json:"lastEventId"`
		Result      json.RawMessage `json:"result"`
		Requester   *struct {
			User string `json:"user"`
		} `json:"requester"`
	}
	if st == http.StatusOK {
		must(t, json.Unmarshal([]byte(got), &state))
	}
	wantUser := "system:serviceaccount:" + ns + ":gateway"
	if st != http.StatusOK || state.State != "finished" || state.LastEventID != ran[len(ran)-1].ID ||
		!strings.Contains(string(state.Result), "kept in the database") || state.Requester == nil || state.Requester.User != wantUser {
		t.Fatalf("the run after a restart: %d %s; want finished with %d events, its result, and requester %s", st, got, len(ran), wantUser)
	}
	resp, err = dispatchertest.TurnRequest(ctx, hc, session+"/turns", fx.Gateway, body)
	must(t, err)
	replayed := dispatchertest.ParseSSE(t, resp.Body)
	_ = resp.Body.Close()
	if len(replayed) != len(ran) || replayed[len(replayed)-1].Type != wire.EventResult {
		t.Fatalf("the repeated request after a restart: %v, want the replay of %v", typesOf(replayed), typesOf(ran))
	}
	if n := len(fx.Stub.RequestsContaining("pg-1")); n != 1 {
		t.Fatalf("the model was asked %d times for the turn, want once (a replay runs nothing)", n)
	}
	t.Log(second.Stop(30 * time.Second))

	wrong, ready := start("dispatcher-db-wrong")
	if err := wrong.WaitReady(ready, 90*time.Second); err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Fatalf("a dispatcher with a wrong password: %v, want it to exit", err)
	}
	out, err := os.ReadFile(wrong.LogPath)
	must(t, err)
	server := "open the PostgreSQL store at 127.0.0.1:" + strconv.Itoa(pg.Port())
	if !strings.Contains(string(out), server) || !strings.Contains(string(out), "password authentication failed") {
		t.Errorf("the dispatcher with a wrong password does not say %q and why:\n%s", server, out)
	}
	for _, p := range procs {
		out, err := os.ReadFile(p.LogPath)
		must(t, err)
		for _, secret := range []string{password, wrongPassword} {
			if strings.Contains(string(out), secret) {
				t.Errorf("%s printed a password (%s)", p.Name, p.LogPath)
			}
		}
	}
}
