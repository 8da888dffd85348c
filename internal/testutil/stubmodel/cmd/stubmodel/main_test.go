package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The e2e suite's Codex Pod reaches the stub over the network: the command
// must answer a Responses request on the address it was given and stop when
// its context ends (SIGTERM in a Pod).
func TestServesTheDefaultReplyOnTheListenAddressUntilStopped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listen, err := testutil.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stop := context.WithCancel(ctx)
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(serveCtx, listen, func(addr string) { addrs <- addr }) }()

	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	}
	if addr != listen {
		t.Fatalf("serving on %s, want the --listen address %s", addr, listen)
	}
	body := `{"model":"stub-model","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/responses", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /v1/responses: %v", err)
	}
	got, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/responses = %d, %v", resp.StatusCode, err)
	}
	// The default reply is streamed word by word; its completion carries the whole text.
	if !strings.Contains(string(got), stubmodel.DefaultText) {
		t.Fatalf("reply does not carry %q:\n%s", stubmodel.DefaultText, got)
	}

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("run did not return after its context ended")
	}
}
