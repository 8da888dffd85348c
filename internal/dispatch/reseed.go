package dispatch

import (
	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/adapter"
	"github.com/openclaw/harness-operator/internal/adapter/codex"
)

// noHostTools is the fingerprint of a turn that offers no host tools.
var noHostTools = codex.HostToolsFingerprint(adapter.TurnInput{})

// continueThread decides how the turn in continues the session's bound
// thread b (nil: none, or a reset): it resumes b, re-seeds from b, or starts
// a new thread. It returns the host-tools fingerprint the binding records
// once the turn ran on its thread.
//
// Codex fixes a thread's host (dynamic) tools when the thread starts, so a
// turn whose offered tools differ from the thread's continues the
// conversation on a new thread with its own tools (a re-seed, see
// codex.Reseed). A binding without a fingerprint was written before
// fingerprints existed, so the thread's tools are unknown. Such a thread is
// resumed while the turn offers no host tools — any tools it has are refused
// by the adapter, and a re-seed would lose what it cannot carry over
// (reasoning, images) for nothing the model needs — and the fingerprint stays
// unknown; the first turn that offers host tools re-seeds, because they may
// be invisible on the old thread.
func continueThread(in *adapter.TurnInput, b *v1alpha1.NativeBinding) string {
	fp := codex.HostToolsFingerprint(*in)
	switch {
	case b == nil:
	case b.HostToolsFingerprint == fp:
		in.ThreadID = b.ThreadID
	case b.HostToolsFingerprint == "" && fp == noHostTools:
		in.ThreadID = b.ThreadID
		return ""
	default:
		in.ReseedFrom = b.ThreadID
	}
	return fp
}
