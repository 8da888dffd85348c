package engine

import (
	"errors"
	"strings"
	"time"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter/codex"
	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
	"github.com/openclaw/harness-operator/internal/policy/selection"
)

// A harness with spec.modelGateway keeps provider credentials out of its
// app-server pods: each turn's model requests carry a credential this engine
// seals for the turn (internal/dispatcher/modelcred), which the model gateway
// accepts only while the turn's grant of the session lease is current
// (docs/design/model-gateway.md). The credential names the grant, the
// harness, the model, and the turn's auth profile, sealed: the raw profile
// key never reaches the pod.

// credentialSlack is added to a credential's expiry beyond the turn's
// deadline and the lease's TTL: liveness, not the clock, ends a credential.
const credentialSlack = 5 * time.Minute

// mintModelCredential seals the model-gateway credential of a turn (run
// runID; "" for a call) that holds lease into p when its harness has
// spec.modelGateway; nothing otherwise. A turn mints under the session's
// lease, before the run is claimed, so a refusal journals nothing; a call
// under its call lease.
func (e *Engine) mintModelCredential(sess *v1alpha1.AgentSession, p *prepared, lease store.Lease, runID string, timeoutMs int64, profile *wire.AuthProfileRef, now time.Time) *wire.Error {
	if p.harness == nil || p.harness.Spec.ModelGateway == nil {
		return nil
	}
	if e.opts.ModelCredentials == nil {
		return wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness,
			"AgentHarness %s/%s sends model requests through the model gateway (spec.modelGateway), and this dispatcher "+
				"cannot seal the gateway's credentials: it was started without the turn-token key they derive from",
			p.harness.Namespace, p.harness.Name)
	}
	timeout := e.opts.DefaultTurnTimeout
	if timeoutMs > 0 {
		timeout = time.Duration(timeoutMs) * time.Millisecond
	}
	_, model := selection.SplitModel("", sess.Spec.Model)
	claims := modelcred.Claims{
		Audience:  modelcred.Audience,
		Lease:     lease.Session,
		Token:     lease.Token,
		Run:       runID,
		Harness:   modelcred.Harness{Namespace: p.harness.Namespace, Name: p.harness.Name, UID: string(p.harness.UID)},
		Models:    []string{model},
		ExpiresAt: now.Add(timeout + e.opts.LeaseTTL + credentialSlack),
	}
	if a := p.authProfile; a != nil {
		claims.Profile = &modelcred.Profile{ID: a.ID, Key: wire.InlineKey(a.APIKey)}
	}
	cred, err := modelcred.Seal(e.opts.ModelCredentials, claims, now)
	if err != nil {
		return credentialRefusal(err, profile)
	}
	p.modelCredential = cred
	return nil
}

// credentialRefusal is the turn's error for claims Seal refused: a profile
// key the gateway could not send as a bearer token names where the key came
// from; anything else is the dispatcher's fault and names the claim only.
func credentialRefusal(err error, profile *wire.AuthProfileRef) *wire.Error {
	var ce *modelcred.Error
	if errors.As(err, &ce) && strings.HasPrefix(ce.Claim, "profile.key") && profile != nil {
		field := "authProfile.apiKey"
		if profile.SecretKeyRef != nil {
			field = "authProfile.secretKeyRef (the Secret's value)"
		}
		return wire.Errorf(wire.CodeAuthProfileUnsupported, "",
			"%s of auth profile %q cannot travel to the model gateway: it must be one line of at most %d bearer-token "+
				"characters (letters, digits and -._~+/, then any '=')", field, profile.ID, wire.MaxInlineKeyLength)
	}
	return wire.Errorf(wire.CodeHarnessUnavailable, "", "seal the model gateway's credential for the turn: %v", err)
}

// turnModelProvider is the model provider the threads of a turn prepared as
// p use (codex.TurnProvider's answer for the input the turn will have).
func turnModelProvider(p *prepared) string {
	switch {
	case p.modelCredential != "":
		return codexconfig.ModelGatewayProvider
	case p.authProfile != nil:
		return codex.ProfileProvider
	}
	return ""
}

// bindingModelProvider is the model provider the bound thread was started
// with: the binding's, or, for a binding written before the field existed,
// the profile's copy when it has an auth profile and the server's own
// otherwise (no such binding predates the gateway's provider).
func bindingModelProvider(b *v1alpha1.NativeBinding) string {
	switch {
	case b.ModelProvider != "":
		return b.ModelProvider
	case b.AuthProfile != "":
		return codex.ProfileProvider
	}
	return ""
}

// withModelCredential gives the turn's input its credential: on a gateway
// harness the auth profile rides sealed in it, not in the thread's config.
func withModelCredential(in *adapter.TurnInput, p *prepared) {
	if p.modelCredential == "" {
		return
	}
	in.ModelCredential, in.AuthProfile = p.modelCredential, nil
}
