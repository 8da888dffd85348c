package httpapi

import "net/http"

// mcpInventory answers GET …/mcp-inventory: the MCP tool catalog of the
// session's bound native thread (engine.Engine.MCPInventory), authorized
// as the session's other reads (get agentsessions/turns). It is read-only:
// a session without a bound thread on a live server is 404 NoNativeThread,
// never a reason to start one.
func (h *Handler) mcpInventory(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.authorize(w, r, attrs(r, VerbGet)); !ok {
		return
	}
	if _, ok := h.session(w, r); !ok {
		return
	}
	inv, err := h.eng.MCPInventory(r.Context(), r.PathValue("namespace"), r.PathValue("name"))
	if err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	writeJSON(w, http.StatusOK, inv)
}
