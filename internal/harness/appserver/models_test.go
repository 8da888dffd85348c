package appserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
)

// The real Codex 0.169.0 catalog comes whole, hidden models included: the
// manager publishes it as the models isolated completion cannot have, so a
// model missing from it would be reported Supported.
func TestListModelsReadsTheWholeCatalogOfTheRealServer(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{})
	c := connectStdio(t, r.srv, appserver.Options{})
	models, err := c.ListModels(testCtx(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	hidden := false
	for _, m := range models {
		names = append(names, m.Names()...)
		hidden = hidden || m.Hidden
	}
	if !slices.Contains(names, "gpt-6.1-sol") || !slices.Contains(names, "codex-auto-review") || !hidden {
		t.Fatalf("catalog %v (hidden models included: %v)", names, hidden)
	}
}

// A server that pages on forever, or returns more models than any real
// catalog, yields an error rather than a part of its catalog: a part
// would make a catalog model look absent from it.
func TestListModelsRefusesAnUnboundedCatalog(t *testing.T) {
	t.Parallel()
	page := func(n int, next string) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(`{"id":"m-%d","model":"m-%d","hidden":false}`, i, i)
		}
		return `{"data":[` + strings.Join(items, ",") + `],"nextCursor":` + next + `}`
	}
	cases := []struct {
		name  string
		reply func(call int) string
		want  string
	}{
		{"endless pages", func(int) string { return page(1, `"more"`) }, fmt.Sprintf("more than %d pages", appserver.MaxModelPages)},
		{"too many models", func(int) string { return page(appserver.MaxModels/2+1, `"more"`) },
			fmt.Sprintf("more than %d models", appserver.MaxModels)},
		{"control: three pages", func(call int) string {
			if call == 3 {
				return page(2, "null")
			}
			return page(2, `"c"`)
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, m := connectMem(t, appserver.Options{})
			type result struct {
				models []appserver.Model
				err    error
			}
			done := make(chan result, 1)
			go func() {
				models, err := c.ListModels(context.Background())
				done <- result{models, err}
			}()
			for call := 1; ; call++ {
				select {
				case res := <-done:
					if tc.want == "" {
						if res.err != nil || len(res.models) != 6 {
							t.Fatalf("ListModels = %d models, %v", len(res.models), res.err)
						}
						return
					}
					if res.err == nil || !strings.Contains(res.err.Error(), tc.want) || res.models != nil {
						t.Fatalf("ListModels = %d models, %v; want an error with %q", len(res.models), res.err, tc.want)
					}
					return
				case b := <-m.toPeer:
					var req peerMsg
					if err := json.Unmarshal(b, &req); err != nil || req.Method != appserver.MethodModelList {
						t.Fatalf("the client sent %s", req.Method)
					}
					m.send(`{"id":` + string(req.ID) + `,"result":` + tc.reply(call) + `}`)
				}
			}
		})
	}
}
