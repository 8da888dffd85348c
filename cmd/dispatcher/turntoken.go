package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/internal/dispatcher/turntoken"
)

// defaultTurnTokenSecret names the Secret of the turn-token key (the Helm
// chart's default too, and the name config/rbac grants).
const defaultTurnTokenSecret = "harness-dispatcher-turn-token"

// turnTokenOptions name the Secret that keeps the key turn tokens are signed
// with: one key for every replica and every restart (internal/dispatcher/turntoken).
type turnTokenOptions struct {
	secretName string
	secretNS   string // default POD_NAMESPACE, then the Lease's
}

func bindTurnTokenFlags(fs *flag.FlagSet, o *turnTokenOptions) {
	fs.StringVar(&o.secretName, "turn-token-secret-name", defaultTurnTokenSecret,
		"Secret holding the key turn tokens are signed with (data turn-token-key; created, immutable, with a random key when missing): every replica and restart accepts the tokens the others issued. Delete it and restart every replica to rotate the key.")
	fs.StringVar(&o.secretNS, "turn-token-secret-namespace", "",
		"Namespace of --turn-token-secret-name (default: $POD_NAMESPACE, then --leader-election-namespace).")
}

// secretRef is the key's Secret; leaderNS is the fallback namespace after
// $POD_NAMESPACE.
func (o turnTokenOptions) secretRef(leaderNS string) (types.NamespacedName, error) {
	if o.secretName == "" {
		return types.NamespacedName{}, errors.New("--turn-token-secret-name must not be empty")
	}
	ns := namespaceOrDefault(o.secretNS, leaderNS)
	if ns == "" {
		return types.NamespacedName{}, errors.New("--turn-token-secret-name needs the Secret's namespace: set --turn-token-secret-namespace (default: $POD_NAMESPACE, then --leader-election-namespace; neither is set)")
	}
	return types.NamespacedName{Namespace: ns, Name: o.secretName}, nil
}

// load reads the key from its Secret, creating the Secret when it does not
// exist. c must read from the API server: the manager does not cache
// Secrets, and a cached read would watch every Secret it may see.
func (o turnTokenOptions) load(ctx context.Context, c client.Client, leaderNS string, log logr.Logger) (*turntoken.Key, error) {
	ref, err := o.secretRef(leaderNS)
	if err != nil {
		return nil, err
	}
	key, err := turntoken.Load(ctx, c, c, ref)
	if err != nil {
		return nil, fmt.Errorf("load the turn-token key from Secret %s (--turn-token-secret-name, --turn-token-secret-namespace): %w", ref, err)
	}
	log.Info("turn tokens are signed with the key of a Secret", "secret", ref.String())
	return key, nil
}
