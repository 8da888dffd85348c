package engine

import (
	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter/codex"
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
//
// A thread's model provider is fixed the same way: a turn that adds or
// drops an auth profile, or the first turn after the harness's
// spec.modelGateway was set or removed, re-seeds too (another profile id,
// or a new gateway credential, resumes the thread).
//
// A turn that carries the gateway's messages (gatewayTranscript: turns the
// gateway ran itself since the thread last ran) gives them to whichever
// thread it continues: a resumed thread gets them appended before the
// prompt, a re-seeded one after the old thread's history, a new one alone
// (codex.Reseed). The dispatcher learns of turns that ran elsewhere only
// from that transcript: an EmbeddedRuntimeSelected answer in between without
// one leaves the thread as complete as the dispatcher knows it.
func continueThread(in *adapter.TurnInput, b *v1alpha1.NativeBinding, gateway []wire.GatewayMessage) string {
	fp := codex.HostToolsFingerprint(*in)
	in.GatewayMessages = gateway
	switch {
	case b == nil:
	case bindingModelProvider(b) != codex.TurnProvider(*in):
		// Codex fixes a thread's model provider, and with it how the
		// thread authenticates, when it starts (codex/authprofile.go,
		// codex/modelgateway.go).
		in.ReseedFrom, in.ReseedFromProvider = b.ThreadID, bindingModelProvider(b)
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

// checkGatewayTranscript refuses a gatewayTranscript that does not start
// where the dispatcher's part of the conversation ends — after the
// session's last turn (last, nil when it ran none) — with SessionMismatch:
// injected, it would repeat turns the thread already has or leave out a
// dispatcher turn the gateway did not see. It runs under the session's
// lease, so no turn ends in between.
func checkGatewayTranscript(sess *v1alpha1.AgentSession, last *v1alpha1.LastTurn, f wire.GatewayTranscriptFields) *wire.Error {
	if f.GatewayTranscript == nil {
		return nil
	}
	want := ""
	if last != nil {
		want = last.RunID
	}
	if got := f.GatewayTranscript.AfterRunID; got != want {
		return wire.Errorf(wire.CodeSessionMismatch, "",
			"gatewayTranscript.afterRunId %q does not match status.lastTurn.runId %q of AgentSession %s/%s: "+
				"send the messages the gateway ran after that turn, with its runId (empty when the session has no lastTurn)",
			got, want, sess.Namespace, sess.Name)
	}
	return nil
}

// authProfileID is the binding's authProfile for the turn's admitted
// profile (nil: none).
func authProfileID(p *adapter.AuthProfile) string {
	if p == nil {
		return ""
	}
	return p.ID
}
