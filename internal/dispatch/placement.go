package dispatch

import (
	"context"
	"path"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/appserver"
)

// serverConn is how the engine reaches one app-server of a harness: the
// pooled connection's key and the dial that (re)opens it.
type serverConn struct {
	poolKey string
	dial    func(context.Context) (*appserver.Client, error)
}

// serverConn reads the harness's capability token and returns how to reach
// srv with the harness's version floor.
func (e *Engine) serverConn(ctx context.Context, h *v1alpha1.AgentHarness, srv Server) (serverConn, error) {
	token, err := e.token(ctx, h)
	if err != nil {
		return serverConn{}, err
	}
	minVersion, url := h.Spec.MinVersion, srv.URL
	return serverConn{
		poolKey: h.Namespace + "/" + h.Name + "/" + srv.Name + "|" + srv.URL,
		dial: func(ctx context.Context) (*appserver.Client, error) {
			ctx, cancel := context.WithTimeout(ctx, dialTimeout)
			defer cancel()
			t, err := appserver.DialWebSocket(ctx, url, appserver.WebSocketOptions{Token: token})
			if err != nil {
				return nil, err
			}
			return appserver.Connect(ctx, t, appserver.Options{MinVersion: minVersion})
		},
	}, nil
}

// open returns the pooled connection of sc, dialing it when needed.
func (e *Engine) open(ctx context.Context, sc serverConn) (*appserver.Client, error) {
	return e.pool.get(ctx, sc.poolKey, sc.dial)
}

// workspaceRoot is the directory, on the server of c, that holds the
// sessions' working directories: Options.WorkspaceRoot, or <the server's
// native home>/workspaces.
func (e *Engine) workspaceRoot(c *appserver.Client) string {
	if e.opts.WorkspaceRoot != "" {
		return e.opts.WorkspaceRoot
	}
	home := c.ServerInfo().CodexHome
	if home == "" {
		home = "/tmp"
	}
	return path.Join(home, workspacesDir)
}

// servingServers are the app-servers of a harness that serve now: an
// external harness's one, a managed harness's ready pods that are not
// terminating.
func (e *Engine) servingServers(ctx context.Context, h *v1alpha1.AgentHarness) ([]Server, error) {
	if h.Spec.External != nil {
		return []Server{{Name: ExternalServerName, URL: h.Spec.External.URL}}, nil
	}
	pods, port, err := e.harnessPods(ctx, h)
	if err != nil {
		return nil, err
	}
	var out []Server
	for i := range pods {
		if podServes(&pods[i]) {
			out = append(out, podServer(&pods[i], port))
		}
	}
	return out, nil
}
