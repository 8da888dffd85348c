package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/policy/toolpolicy"
)

// A turn's MCP servers reach Codex as per-thread configuration: the
// `mcp_servers` table of thread/start's and thread/resume's config. Codex
// does not persist thread config: every turn sends its own table, and since
// every resume carries a non-empty config, which rebuilds the thread's
// config from the server's own (openThread), a turn without mcpServers does
// not inherit an earlier turn's servers.
//
// What Codex 0.169.0 does with them (TestMCPServerToolCalledWithSecretHeader,
// docs/codex-app-server.md "MCP servers per turn"): it connects from the
// app-server's process (in a pod: the pod's network) when the thread starts
// or resumes, offers the tools to the model as the namespace mcp__<server>
// (members are the tool names; enabled_tools and disabled_tools filter
// them), adds its MCP resource helpers (list_mcp_resources,
// list_mcp_resource_templates, read_mcp_resource) as soon as any server is
// configured, and reports calls as mcpToolCall items.

// mcpConfig is the thread config of the turn's MCP servers: nil when the
// turn names none. A restricted turn with MCP servers fails closed: the
// policy of a restricted turn offers exactly the turn's host tools, and
// with any MCP server Codex also offers its MCP resource helpers, for which
// this operator found no per-thread switch. A server tool named
// <server>__<tool> (the stream's name) among the safe-denied ids is never
// offered (disabled_tools).
func mcpConfig(in adapter.TurnInput, restricted bool) (map[string]any, error) {
	if len(in.MCPServers) == 0 {
		return nil, nil
	}
	if restricted {
		return nil, unenforceable("a restricted turn cannot offer MCP servers on Codex: with any MCP server Codex adds " +
			"its MCP resource helpers (list_mcp_resources, list_mcp_resource_templates, read_mcp_resource), which no " +
			"thread setting removes; send the turn without mcpServers or unrestricted")
	}
	denied := map[string]bool{}
	for _, id := range in.SafeDeniedTools {
		denied[toolpolicy.Normalize(id)] = true
	}
	servers := map[string]any{}
	for _, s := range in.MCPServers {
		cfg := map[string]any{"url": s.URL}
		if len(s.Headers) > 0 {
			cfg["http_headers"] = maps.Clone(map[string]string(s.Headers))
		}
		if len(s.EnabledTools) > 0 {
			cfg["enabled_tools"] = slices.Clone(s.EnabledTools)
		}
		disabled := slices.Clone(s.DisabledTools)
		for id := range denied {
			if tool, ok := strings.CutPrefix(id, toolpolicy.Normalize(s.Name)+"__"); ok && tool != "" {
				disabled = append(disabled, tool)
			}
		}
		if len(disabled) > 0 {
			cfg["disabled_tools"] = disabled
		}
		if s.StartupTimeout > 0 {
			cfg["startup_timeout_sec"] = s.StartupTimeout.Seconds()
		}
		if s.ToolTimeout > 0 {
			cfg["tool_timeout_sec"] = s.ToolTimeout.Seconds()
		}
		servers[s.Name] = cfg
	}
	return map[string]any{"mcp_servers": servers}, nil
}

// MCPInventory reads the MCP tool catalog of the thread threadID, which
// must be loaded in the app-server c is connected to: mcpServerStatus/list
// with the thread's id (its own MCP servers, not the server's global ones).
// It starts nothing: Codex answers a thread it has not loaded with "thread
// not found" (ErrThreadNotFound here) instead of loading it.
func MCPInventory(ctx context.Context, c *appserver.Client, threadID string) (*wire.MCPInventory, error) {
	inv := &wire.MCPInventory{ThreadID: threadID, Servers: []wire.MCPServerInventory{}}
	cursor := ""
	for page := 0; page < 100; page++ {
		params := map[string]any{"threadId": threadID, "detail": "toolsAndAuthOnly"}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var res struct {
			Data []struct {
				Name          string  `json:"name"`
				RuntimeStatus *string `json:"runtimeStatus"`
				ToolsError    *string `json:"toolsError"`
				Tools         map[string]struct {
					Name        string          `json:"name"`
					Description *string         `json:"description"`
					InputSchema json.RawMessage `json:"inputSchema"`
				} `json:"tools"`
			} `json:"data"`
			NextCursor *string `json:"nextCursor"`
		}
		if err := c.Call(ctx, "mcpServerStatus/list", params, &res); err != nil {
			var rpc *appserver.RPCError
			if errors.As(err, &rpc) && strings.HasPrefix(rpc.Message, "thread not found") {
				return nil, fmt.Errorf("%w: mcpServerStatus/list %s: %s", ErrThreadNotFound, threadID, rpc.Message)
			}
			return nil, fmt.Errorf("codex: mcpServerStatus/list %s: %w", threadID, err)
		}
		for _, d := range res.Data {
			s := wire.MCPServerInventory{Name: d.Name, Status: deref(d.RuntimeStatus), Error: deref(d.ToolsError), Tools: []wire.MCPTool{}}
			for key, tool := range d.Tools {
				name := tool.Name
				if name == "" {
					name = key
				}
				s.Tools = append(s.Tools, wire.MCPTool{Name: name, Description: deref(tool.Description), InputSchema: tool.InputSchema})
			}
			slices.SortFunc(s.Tools, func(a, b wire.MCPTool) int { return strings.Compare(a.Name, b.Name) })
			inv.Servers = append(inv.Servers, s)
		}
		if res.NextCursor == nil || *res.NextCursor == "" {
			slices.SortFunc(inv.Servers, func(a, b wire.MCPServerInventory) int { return strings.Compare(a.Name, b.Name) })
			return inv, nil
		}
		cursor = *res.NextCursor
	}
	return nil, fmt.Errorf("codex: mcpServerStatus/list %s: more than 100 pages", threadID)
}

// merged is a copy of base with extra's keys set.
func merged(base, extra map[string]any) map[string]any {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]any{}
	}
	maps.Copy(out, extra)
	return out
}
