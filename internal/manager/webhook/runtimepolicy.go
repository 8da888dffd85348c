package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/policy/selection"
)

var policyGK = v1alpha1.GroupVersion.WithKind("RuntimePolicy").GroupKind()

// maxListed bounds the objects a warning names.
const maxListed = 10

// defaultPolicy writes runtime ids in normalized form (pi → openclaw,
// codex-app-server → codex, default → auto) and provider ids in lowercase,
// telling the user each time.
func defaultPolicy(_ context.Context, p *v1alpha1.RuntimePolicy) (admission.Warnings, error) {
	var warnings admission.Warnings
	spec := field.NewPath("spec")
	for i := range p.Spec.Providers {
		row := &p.Spec.Providers[i]
		path := spec.Child("providers").Index(i)
		if n := v1alpha1.ProviderID(selection.NormalizeProvider(string(row.Provider))); n != row.Provider {
			warnings = append(warnings, fmt.Sprintf("%s: provider %q written as %q", path.Child("provider"), row.Provider, n))
			row.Provider = n
		}
		if row.Runtime != "" {
			normalizeRuntime(&row.Runtime, path.Child("runtime"), &warnings)
		}
		for j := range row.Models {
			normalizeRuntime(&row.Models[j].Runtime, path.Child("models").Index(j).Child("runtime"), &warnings)
		}
	}
	for i := range p.Spec.Models {
		normalizeModelEntry(&p.Spec.Models[i], spec.Child("models").Index(i), &warnings)
	}
	for i := range p.Spec.Agents {
		for j := range p.Spec.Agents[i].Models {
			normalizeModelEntry(&p.Spec.Agents[i].Models[j], spec.Child("agents").Index(i).Child("models").Index(j), &warnings)
		}
	}
	return warnings, nil
}

func normalizeModelEntry(e *v1alpha1.ModelRuntimePolicy, path *field.Path, warnings *admission.Warnings) {
	if provider, model, ok := strings.Cut(e.Ref, "/"); ok {
		if n := selection.NormalizeProvider(provider) + "/" + model; n != e.Ref {
			*warnings = append(*warnings, fmt.Sprintf("%s: %q written as %q", path.Child("ref"), e.Ref, n))
			e.Ref = n
		}
	}
	normalizeRuntime(&e.Runtime, path.Child("runtime"), warnings)
}

func normalizeRuntime(id *v1alpha1.RuntimeID, path *field.Path, warnings *admission.Warnings) {
	if n := v1alpha1.RuntimeID(selection.NormalizeRuntimeID(string(*id))); n != *id {
		*warnings = append(*warnings, fmt.Sprintf("%s: runtime %q written as %q", path, *id, n))
		*id = n
	}
}

// policyValidator refuses a policy entry that contradicts an enforcing Deny
// policy over overlapping namespaces, and warns about what the controller
// resolves later: conflicts the oldest policy wins, runtime ids no visible
// harness declares, and sessions a new Deny policy now contradicts.
type policyValidator struct {
	reader readers
	// decide makes reading the other policies, deciding and remembering an
	// admitted policy one step, so two contradicting Deny policies through
	// this server cannot both pass.
	decide sync.Mutex
}

func (v *policyValidator) ValidateCreate(ctx context.Context, p *v1alpha1.RuntimePolicy) (admission.Warnings, error) {
	return v.validate(ctx, nil, p)
}

func (v *policyValidator) ValidateUpdate(ctx context.Context, old, p *v1alpha1.RuntimePolicy) (admission.Warnings, error) {
	return v.validate(ctx, old, p)
}

func (v *policyValidator) ValidateDelete(context.Context, *v1alpha1.RuntimePolicy) (admission.Warnings, error) {
	return nil, nil
}

func (v *policyValidator) validate(ctx context.Context, old, p *v1alpha1.RuntimePolicy) (admission.Warnings, error) {
	v.decide.Lock()
	defer v.decide.Unlock()
	existing, err := v.reader.listPolicies(ctx, v.reader.live)
	if err != nil {
		return nil, err
	}
	namespaces, err := namespaceLabels(ctx, v.reader.cached)
	if err != nil {
		return nil, err
	}

	var errs field.ErrorList
	var warnings admission.Warnings
	paths := entryPaths(p)
	index := selection.NewNamespaceIndex(namespaces)
	for _, c := range selection.ConflictsWith(p, existing, index.Overlap) {
		switch {
		case c.Loser == p.Name && c.Reason == v1alpha1.PolicyReasonDenyPolicyWins:
			errs = append(errs, field.Forbidden(paths.find(c.Key), fmt.Sprintf(
				"runtime %q for %s contradicts RuntimePolicy %q (sessionOverrides: Deny), which enforces runtime %q over overlapping namespaces",
				c.LoserRuntime, c.Key, c.Winner, c.WinnerRuntime)))
		case c.Loser == p.Name:
			warnings = append(warnings, fmt.Sprintf("%s: runtime %q for %s conflicts with older RuntimePolicy %q (runtime %q), which wins; this policy will be Conflicted",
				paths.find(c.Key), c.LoserRuntime, c.Key, c.Winner, c.WinnerRuntime))
		default:
			warnings = append(warnings, fmt.Sprintf("RuntimePolicy %q: runtime %q for %s now loses to this policy's runtime %q (%s)",
				c.Loser, c.LoserRuntime, c.Key, c.WinnerRuntime, c.Reason))
		}
	}
	if len(errs) > 0 {
		return warnings, apierrors.NewInvalid(policyGK, p.Name, errs)
	}

	unresolved, err := v.unresolved(ctx, p, index, namespaces)
	if err != nil {
		return nil, err
	}
	for _, id := range unresolved {
		warnings = append(warnings, fmt.Sprintf("spec: runtime %q names no AgentHarness visible to the namespaces this policy selects; its turns fail closed (HarnessNotRegistered) until one is declared", id))
	}

	newlyDeny := p.Spec.SessionOverrides == v1alpha1.SessionOverridesDeny && (old == nil || old.Spec.SessionOverrides != v1alpha1.SessionOverridesDeny)
	if newlyDeny {
		contradicting, err := v.contradictingSessions(ctx, p, existing, namespaces)
		if err != nil {
			return nil, err
		}
		if len(contradicting) > 0 {
			warnings = append(warnings, fmt.Sprintf("spec.sessionOverrides: Deny: the runtimeOverride of %d AgentSession(s) now contradicts this policy and their turns fail closed (OverrideDenied): %s",
				len(contradicting), strings.Join(contradicting, ", ")))
		}
	}
	cached, err := cachedObject(ctx, v.reader.cached, p, &v1alpha1.RuntimePolicy{})
	if err != nil {
		return nil, err
	}
	v.reader.policies.record(p, old, cached)
	return warnings, nil
}

// unresolved lists runtime ids of p that no AgentHarness visible to a
// namespace p selects declares.
func (v *policyValidator) unresolved(ctx context.Context, p *v1alpha1.RuntimePolicy, index *selection.NamespaceIndex, namespaces map[string]map[string]string) ([]string, error) {
	selected, _ := index.Selected(p) // an invalid selector selects nothing
	visible := func(h *v1alpha1.AgentHarness) bool {
		if _, ok := selection.DeclaredHarnessID(h); !ok {
			return false
		}
		return slices.ContainsFunc(selected, func(ns string) bool {
			ok, err := selection.HarnessVisible(h, ns, namespaces[ns])
			return err == nil && ok
		})
	}
	declared := map[string]bool{}
	for _, id := range selection.PolicyRuntimeIDs(p) {
		if selection.BuiltinRuntime(id) {
			continue
		}
		harnesses, err := v.reader.harnessesWithID(ctx, id)
		if err != nil {
			return nil, err
		}
		declared[id] = slices.ContainsFunc(harnesses, visible)
	}
	return selection.UnresolvedRuntimeIDs(p, func(id string) bool { return declared[id] }), nil
}

// contradictingSessions names the AgentSessions (namespace/name) whose
// runtimeOverride the Deny policy p would refuse.
func (v *policyValidator) contradictingSessions(ctx context.Context, p *v1alpha1.RuntimePolicy, existing []*v1alpha1.RuntimePolicy, namespaces map[string]map[string]string) ([]string, error) {
	// Only read: the list shares the cache's sessions instead of copying
	// each (a policy update at 10,000 sessions copied them all, the
	// manager's peak memory; docs/benchmarks/operator-scale.md).
	var sessions v1alpha1.AgentSessionList
	if err := v.reader.cached.List(ctx, &sessions, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list AgentSessions: %w", err)
	}
	var names []string
	for i := range sessions.Items {
		s := &sessions.Items[i]
		if s.Spec.RuntimeOverride == "" {
			continue
		}
		selecting, err := policiesSelecting(p, existing, withNameLabel(s.Namespace, namespaces[s.Namespace]))
		if err != nil || selecting == nil {
			continue
		}
		if policy, _, denied := selection.OverrideDeniedBy(selecting, s.Spec.AgentID, s.Spec.Model, s.Spec.RuntimeOverride); denied && policy == p.Name {
			names = append(names, s.Namespace+"/"+s.Name)
		}
	}
	slices.Sort(names)
	if len(names) > maxListed {
		names = append(names[:maxListed], fmt.Sprintf("and %d more", len(names)-maxListed))
	}
	return names, nil
}

// policiesSelecting returns candidate and the other existing policies that
// select a namespace with these labels, or nil when candidate does not.
func policiesSelecting(candidate *v1alpha1.RuntimePolicy, existing []*v1alpha1.RuntimePolicy, labels map[string]string) ([]*v1alpha1.RuntimePolicy, error) {
	if ok, err := selection.PolicySelects(candidate, labels); err != nil || !ok {
		return nil, err
	}
	out := []*v1alpha1.RuntimePolicy{candidate}
	for _, q := range existing {
		if q.Name == candidate.Name {
			continue
		}
		ok, err := selection.PolicySelects(q, labels)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, q)
		}
	}
	return out, nil
}

// entryPathIndex maps conflict keys to the field path of the entry that
// produced them, so a refusal names the entry.
type entryPathIndex map[string]*field.Path

// entryPaths indexes p's entries by the key format of selection.PolicyConflict:
// `<agentId or *>/<provider or *>/<model or *>`.
func entryPaths(p *v1alpha1.RuntimePolicy) entryPathIndex {
	idx := entryPathIndex{}
	add := func(key string, path *field.Path) {
		if _, ok := idx[key]; !ok {
			idx[key] = path
		}
	}
	refKey := func(agent, ref string) string {
		if provider, model, ok := strings.Cut(ref, "/"); ok {
			return agent + "/" + provider + "/" + model
		}
		return agent + "/*/" + ref
	}
	spec := field.NewPath("spec")
	for i, row := range p.Spec.Providers {
		path := spec.Child("providers").Index(i)
		if row.Runtime != "" {
			add("*/"+string(row.Provider)+"/*", path.Child("runtime"))
		}
		for j, m := range row.Models {
			add("*/"+string(row.Provider)+"/"+m.ID, path.Child("models").Index(j).Child("runtime"))
		}
	}
	for i, m := range p.Spec.Models {
		add(refKey("*", m.Ref), spec.Child("models").Index(i).Child("runtime"))
	}
	for i, a := range p.Spec.Agents {
		for j, m := range a.Models {
			add(refKey(a.AgentID, m.Ref), spec.Child("agents").Index(i).Child("models").Index(j).Child("runtime"))
		}
	}
	return idx
}

// find returns the path of the entry behind key, or spec when the key is one
// the entries imply (e.g. a Deny policy's provider entry governing a model).
func (idx entryPathIndex) find(key string) *field.Path {
	if p, ok := idx[key]; ok {
		return p
	}
	return field.NewPath("spec")
}
