package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter/codex"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// nativeCleanupTimeout bounds the cleanup of one session on one app-server.
const nativeCleanupTimeout = 30 * time.Second

// appServer is one reachable app-server and the workspace root on it.
type appServer struct {
	name   string // "<harness namespace>/<harness name>/<server>"
	client *appserver.Client
	root   string
}

// appServers connects to every serving app-server of every AgentHarness
// the engine can drive (one connection per distinct address). A server that
// cannot be reached is reported in the error and left out.
func (e *Engine) appServers(ctx context.Context) ([]appServer, error) {
	var harnesses v1alpha1.AgentHarnessList
	if err := e.reader.List(ctx, &harnesses); err != nil {
		return nil, fmt.Errorf("list AgentHarnesses: %w", err)
	}
	var out []appServer
	var errs []error
	seen := map[string]bool{}
	for i := range harnesses.Items {
		h := &harnesses.Items[i]
		if h.Spec.Adapter != v1alpha1.AdapterCodexAppServer {
			continue
		}
		servers, err := e.servingServers(ctx, h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, srv := range servers {
			if seen[srv.URL] {
				continue
			}
			seen[srv.URL] = true
			s, err := e.connect(ctx, h, srv)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, *s)
		}
	}
	return out, errors.Join(errs...)
}

// forgetNative removes a deleted session's native state — every thread
// whose working directory is the session's, and the directory — from the
// app-server its binding names. The session's UID names the directory, so
// nothing of another session, or of a successor under the same name, is
// touched. A harness or server pod that is gone leaves nothing to remove
// (nil); a server that is coming back is an error (retried). Threads of
// earlier bindings on other servers are the GarbageCollector's.
func (e *Engine) forgetNative(ctx context.Context, s *v1alpha1.AgentSession) error {
	b := s.Status.NativeBinding
	if b == nil || b.HarnessName == "" {
		return nil // never bound, or bound before bindings named their harness
	}
	srv, err := e.serverOf(ctx, b.HarnessNamespace, b.HarnessName, b.Pod)
	if srv == nil || err != nil {
		return err
	}
	return e.forgetOn(ctx, *srv, workDir(srv.root, s))
}

// interruptNative interrupts a turn left running on its app-server by a
// dispatcher that stopped (Recover). A server that is gone took the turn
// with it.
func (e *Engine) interruptNative(ctx context.Context, n *v1alpha1.NativeTurn) error {
	if n.TurnID == "" {
		return nil // its start was never confirmed; the next turn's check finds it (codex.ErrThreadBusy)
	}
	srv, err := e.serverOf(ctx, n.HarnessNamespace, n.HarnessName, n.Pod)
	if srv == nil || err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, nativeCleanupTimeout)
	defer cancel()
	err = srv.client.Call(ctx, appserver.MethodTurnInterrupt, map[string]any{"threadId": n.ThreadID, "turnId": n.TurnID}, nil)
	var rpcErr *appserver.RPCError
	if errors.As(err, &rpcErr) {
		return nil // the server answered: the turn is not running (any more)
	}
	if err != nil {
		return fmt.Errorf("app-server %s: interrupt turn %s of thread %s: %w", srv.name, n.TurnID, n.ThreadID, err)
	}
	return nil
}

// serverOf connects to the app-server pod (or the external server) of a
// harness. It returns nil, nil when the harness or the pod is gone for good,
// and an error for one that is coming back.
func (e *Engine) serverOf(ctx context.Context, ns, name, pod string) (*appServer, error) {
	h := &v1alpha1.AgentHarness{}
	if err := e.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, h); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	var srv Server
	if h.Spec.External != nil {
		srv = Server{Name: ExternalServerName, URL: h.Spec.External.URL}
	} else {
		pods, port, err := e.harnessPods(ctx, h)
		if err != nil {
			return nil, err
		}
		var serr *wire.Error
		if srv, serr = boundServer(h, ServerPods{Pods: pods, Port: port}, pod); serr != nil {
			if serr.Code == wire.CodeNativeThreadLost {
				return nil, nil // the pod and its files are gone
			}
			return nil, serr
		}
	}
	return e.connect(ctx, h, srv)
}

// connect opens (or reuses) the pooled connection to srv of harness h.
func (e *Engine) connect(ctx context.Context, h *v1alpha1.AgentHarness, srv Server) (*appServer, error) {
	name := h.Namespace + "/" + h.Name + "/" + srv.Name
	conn, err := e.serverConn(ctx, h, srv)
	if err != nil {
		return nil, fmt.Errorf("app-server %s: %w", name, err)
	}
	c, err := e.open(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("app-server %s: %w", name, err)
	}
	return &appServer{name: name, client: c, root: e.workspaceRoot(c)}, nil
}

// forgetOn removes one session directory and its threads from one server.
func (e *Engine) forgetOn(ctx context.Context, s appServer, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, nativeCleanupTimeout)
	defer cancel()
	archived, err := codex.ForgetSession(ctx, s.client, dir)
	if len(archived) > 0 {
		e.log.Info("archived the native threads of a deleted session", "server", s.name, "dir", dir, "threads", archived)
	}
	if err != nil {
		return fmt.Errorf("app-server %s: %w", s.name, err)
	}
	return nil
}
