package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter/codex"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
)

// mcpResolveTimeout bounds resolving one MCP server's host.
const mcpResolveTimeout = 5 * time.Second

// admitMCP admits the turn's MCP servers on the prepared harness, for the
// requester by, and records them in p (header values read). Codex in the
// harness's pod, not the dispatcher, connects to them, so every check
// happens here, before anything is journaled:
//
//  1. the URL is under one of the harness's spec.mcp.allowedURLPrefixes
//     (wire.MCPURLHasPrefix): both are in the canonical form Codex's URL
//     parser gives them (the request's validation refused any other), and
//     the URL continues the prefix at a path-segment boundary;
//  2. a server with headers only on a harness that serves the session's
//     namespace alone: the values sit in the app-server's memory (the
//     thread's config), beside the sessions of every namespace the harness
//     admits — the rule of auth profiles (credentialNotIsolated). Every
//     turn sends its own servers (a later turn does not inherit them), so
//     each turn is checked against the harness as it is then;
//  3. its host resolves, now, only to addresses the dispatcher's external
//     dial policy (Options.ExternalDial: --external-refused-cidrs,
//     --external-allowed-cidrs) allows: no metadata, link-local, loopback or
//     cluster-internal address unless the operator allowed it. Codex
//     resolves the name again when it connects: a name whose answer changes
//     in between (DNS rebinding) is not caught here; the pod's egress
//     NetworkPolicy is the layer that holds then (docs/security.md);
//  4. plain http only when every address is loopback and the dispatcher
//     runs with --allow-insecure-loopback-external (development);
//  5. each header's Secret, in the session's namespace, only after a
//     SubjectAccessReview says the requester may get it (access.Checker);
//     the values go to the adapter's input, never to the journal, events,
//     status or logs. A caller without a name (Engine.Turn, in-process) is
//     refused any Secret.
//
// A refusal is a *refusal with the decision: Forbidden for what the
// harness's owner, the operator or RBAC refuses, BadRequest for a Secret
// key that does not exist; each message names the field.
func (e *Engine) admitMCP(ctx context.Context, sess *v1alpha1.AgentSession, req *wire.TurnRequest, p *prepared, by store.Requester) error {
	if len(req.MCPServers) == 0 {
		return nil
	}
	refuse := func(code wire.ErrorCode, format string, args ...any) error {
		terr := wire.Errorf(code, "", format, args...)
		recordRefused(labelsOf(sess.Namespace, p.decision), code)
		return &refusal{err: terr, decision: &p.decision}
	}
	var allowed []string
	if p.harness.Spec.MCP != nil {
		allowed = p.harness.Spec.MCP.AllowedURLPrefixes
	}
	harness := p.harness.Namespace + "/" + p.harness.Name
	out := make([]adapter.MCPServer, 0, len(req.MCPServers))
	for i, s := range req.MCPServers {
		field := "mcpServers[" + strconv.Itoa(i) + "]"
		if !underAnyPrefix(s.URL, allowed) {
			return refuse(wire.CodeForbidden, "%s.url %q matches none of AgentHarness %s spec.mcp.allowedURLPrefixes %q%s",
				field, s.URL, harness, allowed, invalidPrefixes(allowed))
		}
		if len(s.Headers) > 0 {
			if why := credentialNotIsolated(p.harness, sess.Namespace, "the header values"); why != "" {
				return refuse(wire.CodeForbidden, "%s.headers: %s; name the server without headers, or run the turn on a "+
					"harness in namespace %q that admits only its own namespace (spec.allowedNamespaces.from: Same)",
					field, why, sess.Namespace)
			}
		}
		if msg := e.checkMCPAddress(ctx, s.URL); msg != "" {
			return refuse(wire.CodeForbidden, "%s.url: %s", field, msg)
		}
		srv := adapter.MCPServer{Name: s.Name, URL: s.URL, EnabledTools: s.EnabledTools, DisabledTools: s.DisabledTools,
			StartupTimeout: time.Duration(s.StartupTimeoutMs) * time.Millisecond,
			ToolTimeout:    time.Duration(s.ToolTimeoutMs) * time.Millisecond}
		for j, h := range s.Headers {
			hf := field + ".headers[" + strconv.Itoa(j) + "].valueFrom.secretKeyRef"
			value, code, msg := e.secretValue(ctx, sess.Namespace, h.ValueFrom.SecretKeyRef, by)
			if msg != "" {
				return refuse(code, "%s: %s", hf, msg)
			}
			if srv.Headers == nil {
				srv.Headers = adapter.SecretHeaders{}
			}
			srv.Headers[h.Name] = value
		}
		out = append(out, srv)
	}
	p.mcpServers = out
	return nil
}

// underAnyPrefix reports whether the MCP URL raw is under one of prefixes
// (wire.MCPURLHasPrefix; a prefix that is not in canonical form admits
// nothing).
func underAnyPrefix(raw string, prefixes []string) bool {
	for _, p := range prefixes {
		if wire.MCPURLHasPrefix(raw, p) {
			return true
		}
	}
	return false
}

// invalidPrefixes says which of prefixes admit nothing and why, for the
// refusal's message ("" when all are valid): the harness's owner learns
// why a URL that seems to match was refused.
func invalidPrefixes(prefixes []string) string {
	var out []string
	for _, p := range prefixes {
		if err := wire.ValidMCPURLPrefix(p); err != nil {
			out = append(out, fmt.Sprintf("%q %v", p, err))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (these prefixes admit nothing: " + strings.Join(out, "; ") + ")"
}

// checkMCPAddress resolves the URL's host and returns why it is refused,
// or "" when every address may be reached.
func (e *Engine) checkMCPAddress(ctx context.Context, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "is not a URL"
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		rctx, cancel := context.WithTimeout(ctx, mcpResolveTimeout)
		defer cancel()
		addrs, err = net.DefaultResolver.LookupNetIP(rctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			return fmt.Sprintf("host %q does not resolve", host)
		}
	}
	policy := e.opts.ExternalDial
	loopback := true
	for _, a := range addrs {
		a = a.Unmap()
		if rule := policy.Refuses(a); rule != "" {
			return fmt.Sprintf("host %q resolves to %s, a %s address the dispatcher does not connect MCP servers to "+
				"(allowed only by --%s)", host, a, rule, netguard.AllowedCIDRsFlag)
		}
		loopback = loopback && a.IsLoopback()
	}
	if u.Scheme == "http" && (!loopback || !policy.AllowLoopback) {
		return fmt.Sprintf("must be https: plain http is admitted only to a loopback host on a dispatcher running with --%s (development)",
			netguard.AllowInsecureLoopbackFlag)
	}
	return ""
}

// MCPInventory returns the MCP tool catalog of the native thread the
// session ns/name is bound to, read from the app-server that holds it
// (codex.MCPInventory). It is a read: it dials (or reuses) the connection to
// that existing server and never starts a process, a thread or a turn. A
// session without a current, trusted binding, a server that is gone and a
// thread its server has not loaded (it restarted since) are NoNativeThread
// (404): the next turn binds or resumes the thread, the inventory does not.
func (e *Engine) MCPInventory(ctx context.Context, ns, name string) (*wire.MCPInventory, error) {
	sess, err := e.session(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	b := sess.Status.NativeBinding
	if b == nil || b.HarnessName == "" || b.Generation != sess.Spec.ResetGeneration || trustedBinding(sess) != nil {
		return nil, wire.Errorf(wire.CodeNoNativeThread, "",
			"AgentSession %s/%s has no bound native thread (no turn ran since it was created or reset); the inventory never starts one", ns, name)
	}
	srv, err := e.serverOf(ctx, b.HarnessNamespace, b.HarnessName, b.Pod)
	if err != nil {
		return nil, wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness, "reach the app-server of thread %s: %v", b.ThreadID, err)
	}
	if srv == nil {
		return nil, wire.Errorf(wire.CodeNoNativeThread, "",
			"the app-server %s of AgentSession %s/%s's native thread is gone", b.Pod, ns, name)
	}
	inv, err := codex.MCPInventory(ctx, srv.client, b.ThreadID)
	switch {
	case errors.Is(err, codex.ErrThreadNotFound):
		return nil, wire.Errorf(wire.CodeNoNativeThread, "",
			"native thread %s of AgentSession %s/%s is not loaded on its app-server (it restarted since the last turn); the next turn resumes it",
			b.ThreadID, ns, name)
	case err != nil:
		return nil, wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness, "app-server %s: %v", srv.name, err)
	}
	return inv, nil
}
