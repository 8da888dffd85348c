package engine

import (
	"context"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// admitAuthProfile admits the turn's auth profile on the prepared harness
// for the requester by, and records it in p with its key. The harness SDK: the
// harness "must resolve that profile ... before issuing model requests,
// keep secrets scoped to the attempt". In order:
//
//  1. the harness serves no other namespace (credentialNotIsolated, the
//     rule of MCP headers too): the key goes into the app-server's memory
//     (the thread's config), where the sessions of every namespace the
//     harness admits run their turns and tools, so on a harness shared with
//     other namespaces it would sit beside other tenants' sessions —
//     AuthProfileNotIsolated, whoever asks, whichever form the key has;
//  2. a secretKeyRef: the requester may get the Secret (a
//     SubjectAccessReview; Forbidden names the field), which is in the
//     session's namespace. An inline apiKey needs no review: the requester
//     already holds the key, and using it gives the turn nothing the
//     requester could not do with the key itself.
//
// The key reaches only the adapter's input, for this turn: never the
// journal (the request's digest leaves an inline key out), events, status
// or logs (status.nativeBinding.authProfile keeps the id).
func (e *Engine) admitAuthProfile(ctx context.Context, sess *v1alpha1.AgentSession, req *wire.TurnRequest, p *prepared, by store.Requester) error {
	ap := req.AuthProfile
	if ap == nil {
		return nil
	}
	refuse := func(code wire.ErrorCode, format string, args ...any) error {
		terr := wire.Errorf(code, "", format, args...)
		recordRefused(labelsOf(sess.Namespace, p.decision), code)
		return &refusal{err: terr, decision: &p.decision}
	}
	if why := credentialNotIsolated(p.harness, sess.Namespace, "the profile's credential"); why != "" {
		return refuse(wire.CodeAuthProfileNotIsolated,
			"authProfile %q: %s; send the turn without authProfile (the harness's own credentials), or run it on a "+
				"harness in namespace %q that admits only its own namespace (spec.allowedNamespaces.from: Same)",
			ap.ID, why, sess.Namespace)
	}
	key := string(ap.APIKey)
	if ap.SecretKeyRef != nil {
		var code wire.ErrorCode
		var msg string
		key, code, msg = e.secretValue(ctx, sess.Namespace, ap.SecretKeyRef, by)
		if msg != "" {
			return refuse(code, "authProfile.secretKeyRef: %s", msg)
		}
		if key == "" {
			return refuse(wire.CodeBadRequest, "authProfile.secretKeyRef: the value of key %q of Secret %q is empty",
				ap.SecretKeyRef.Key, ap.SecretKeyRef.Name)
		}
	}
	p.authProfile = &adapter.AuthProfile{ID: ap.ID, APIKey: key}
	return nil
}

// credentialNotIsolated says why a credential a turn brings (what: the
// profile's key, an MCP server's header values) may not go to harness h for
// a session of namespace ns, or "" when it may. One rule for every such
// credential: it sits in the app-server's memory (the thread's config),
// where the sessions of every namespace the harness admits run their turns
// and tools, so it goes only to a harness that serves ns alone. The harness
// is read anew for every turn and a turn's credentials are not inherited by
// the next, so a harness shared later refuses the next turn that brings
// one; a turn without it moves the session to a thread without it (the
// engine re-seeds a profile thread).
func credentialNotIsolated(h *v1alpha1.AgentHarness, ns, what string) string {
	why := sharedHarness(h, ns)
	if why == "" {
		return ""
	}
	return "AgentHarness " + h.Namespace + "/" + h.Name + " " + why + ", so " + what +
		" would sit in an app-server beside other namespaces' sessions"
}

// sharedHarness says why harness h may run sessions of namespaces other
// than ns, or "" when it serves ns alone.
func sharedHarness(h *v1alpha1.AgentHarness, ns string) string {
	if h.Namespace != ns {
		return "is in namespace " + h.Namespace
	}
	if an := h.Spec.AllowedNamespaces; an != nil && an.From != "" && an.From != v1alpha1.NamespacesFromSame {
		return "admits other namespaces (spec.allowedNamespaces.from: " + string(an.From) + ")"
	}
	return ""
}
