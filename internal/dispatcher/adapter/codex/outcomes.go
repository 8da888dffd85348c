package codex

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// nativeMutation derives a native item's mutation facts from its kind alone
// (the harness SDK: protocol-owned facts, not OpenClaw's classifier): a file change
// mutates, a command or MCP call possibly does, everything else only reads.
// An image generation writes a new file under Codex's home but changes
// nothing that existed, so it counts as read-only. key is what identifies
// the action for ActionFingerprint; changed are a file change's paths.
func nativeMutation(itemType, tool string, started bool, key any, changed []string) *wire.NativeMutation {
	m := &wire.NativeMutation{Mutation: wire.MutationNo, ChangedPaths: changed}
	switch itemType {
	case "fileChange":
		m.Mutation = wire.MutationYes
	case "commandExecution", "mcpToolCall":
		m.Mutation = wire.MutationPossibly
	}
	m.MutatingAction = started && m.Mutation != wire.MutationNo
	m.ReplaySafe = !m.MutatingAction
	b, _ := json.Marshal(key) // plain values: cannot fail
	m.ActionFingerprint = fingerprint(tool, b)
	return m
}

// changedPaths lists the paths of a fileChange item's changes, the
// destination of a move included, sorted and without repeats.
func changedPaths(changes json.RawMessage) []string {
	var cs []struct {
		Path string `json:"path"`
		Kind struct {
			MovePath *string `json:"move_path"`
		} `json:"kind"`
	}
	_ = json.Unmarshal(changes, &cs)
	var out []string
	for _, c := range cs {
		out = append(out, c.Path)
		if c.Kind.MovePath != nil && *c.Kind.MovePath != "" {
			out = append(out, *c.Kind.MovePath)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// fingerprint identifies an action: its tool and canonical key.
func fingerprint(tool string, key json.RawMessage) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write([]byte(canonicalJSON(key)))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:32]
}

// nextToolError is lastToolError after a tool's terminal outcome; the rules
// are wire.ToolError's.
func nextToolError(cur *wire.ToolError, term *wire.ToolTerminal) *wire.ToolError {
	mutating, fp := term.ExecutionStarted, fingerprint(term.Tool, term.Arguments)
	if m := term.NativeMutation; m != nil {
		mutating, fp = m.MutatingAction, m.ActionFingerprint
	}
	if term.Outcome == wire.OutcomeFailure {
		if cur != nil && cur.MutatingAction && !mutating {
			return cur
		}
		e := &wire.ToolError{CallID: term.CallID, Tool: term.Tool, Arguments: term.Arguments,
			ExecutionStarted: term.ExecutionStarted, Native: term.Native, MutatingAction: mutating, ActionFingerprint: fp}
		if term.Failure != nil {
			e.Reason, e.Message = term.Failure.Reason, term.Failure.Message
		}
		return e
	}
	if cur == nil || cur.ActionFingerprint == fp || !cur.MutatingAction {
		return nil
	}
	return cur
}

// canonicalJSON is b re-marshalled with sorted keys and no insignificant
// space (b itself when it is not JSON).
func canonicalJSON(b json.RawMessage) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}
