package wire

import (
	"net/url"
	"strings"
)

// The dispatcher API's routes (docs/dispatcher-api.md, "Routes"): a
// session's path, and the paths below it. The method is part of the route:
// each path serves one (its comment).
const (
	// SessionPath is the prefix of every route: {namespace} and {name} are
	// the AgentSession's.
	SessionPath = "/v1/namespaces/{namespace}/agentsessions/{name}"
	// RouteDecide (POST): the decision, without side effects.
	RouteDecide = "/decide"
	// RouteTurns (POST): run a turn (TurnRequest) and stream it.
	RouteTurns = "/turns"
	// RouteTurn (GET): a run's state.
	RouteTurn = "/turns/{runId}"
	// RouteToolResults (POST): the answer to a host tool call (ToolResultRequest).
	RouteToolResults = "/turns/{runId}/tool-results"
	// RouteInterrupt (POST): interrupt a running turn.
	RouteInterrupt = "/turns/{runId}/interrupt"
	// RouteApprovals (POST): the answer to an approval request (ApprovalAnswer).
	RouteApprovals = "/turns/{runId}/approvals"
	// RouteUserInput (POST): the answer to a user-input request (UserInputAnswer).
	RouteUserInput = "/turns/{runId}/user-input"
	// RouteFinalize (POST): a settled-turn finalization (CompletionRequest).
	RouteFinalize = "/turns/{runId}/finalize"
	// RouteCompletions (POST): an isolated completion (CompletionRequest).
	RouteCompletions = "/completions"
	// RouteTranscript (GET): the session's transcript mirror.
	RouteTranscript = "/transcript"
	// RouteMCPInventory (GET): the MCP tools of the session's native thread.
	RouteMCPInventory = "/mcp-inventory"
)

// SessionRoute is the path of route for the AgentSession namespace/name,
// and for a run's routes the run runID; each value is escaped as one path
// segment.
func SessionRoute(namespace, name, route, runID string) string {
	return strings.NewReplacer("{namespace}", url.PathEscape(namespace), "{name}", url.PathEscape(name),
		"{runId}", url.PathEscape(runID)).Replace(SessionPath + route)
}
