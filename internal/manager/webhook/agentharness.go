package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/Masterminds/semver/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/policy/selection"
	"github.com/openclaw/harness-operator/internal/policy/toolpolicy"
)

var harnessGK = v1alpha1.GroupVersion.WithKind("AgentHarness").GroupKind()

// harnessDefaulter writes what docs/api.md says the API defaults, so that
// `kubectl get -o yaml` shows the truth: harnessId from metadata.name, the
// adapter's support facts and native tools when omitted, and normalized
// provider and tool names.
type harnessDefaulter struct{}

func (d *harnessDefaulter) Default(_ context.Context, h *v1alpha1.AgentHarness) (admission.Warnings, error) {
	var warnings admission.Warnings
	if h.Spec.HarnessID == "" {
		h.Spec.HarnessID = h.Name
	}
	defaults, known := selection.AdapterDefaults(h.Spec.Adapter)
	if h.Spec.Support == nil && known {
		h.Spec.Support = defaults.Support.DeepCopy()
	}
	if h.Spec.ConversationToolPolicyNativeTools == nil && known && h.Spec.ConversationToolPolicySupport != v1alpha1.ToolPolicySupportExact {
		h.Spec.ConversationToolPolicyNativeTools = slices.Clone(defaults.ConversationToolPolicyNativeTools)
	}
	if s := h.Spec.Support; s != nil {
		s.Providers = normalizeProviders(s.Providers, "spec.support.providers", &warnings)
		s.NativeProviders = normalizeProviders(s.NativeProviders, "spec.support.nativeProviders", &warnings)
	}
	if a := h.Spec.AutoSelection; a != nil {
		a.Providers = normalizeProviders(a.Providers, "spec.autoSelection.providers", &warnings)
	}
	h.Spec.ConversationToolPolicySafeDenyTools = normalizeTools(h.Spec.ConversationToolPolicySafeDenyTools, "spec.conversationToolPolicySafeDenyTools", &warnings)
	h.Spec.ConversationToolPolicyNativeTools = normalizeTools(h.Spec.ConversationToolPolicyNativeTools, "spec.conversationToolPolicyNativeTools", &warnings)
	return warnings, nil
}

func normalizeProviders(in []v1alpha1.ProviderID, path string, warnings *admission.Warnings) []v1alpha1.ProviderID {
	for i, p := range in {
		if n := v1alpha1.ProviderID(selection.NormalizeProvider(string(p))); n != p {
			*warnings = append(*warnings, fmt.Sprintf("%s[%d]: provider %q written as %q", path, i, p, n))
			in[i] = n
		}
	}
	return in
}

func normalizeTools(in []v1alpha1.ToolID, path string, warnings *admission.Warnings) []v1alpha1.ToolID {
	for i, t := range in {
		n := v1alpha1.ToolID(toolpolicy.Normalize(string(t)))
		// Only rewrite spellings of known tools (bash → exec, Exec → exec); anything
		// else is left for the validator to refuse with the user's own spelling.
		if n != t && toolpolicy.IsCoreTool(string(n)) {
			*warnings = append(*warnings, fmt.Sprintf("%s[%d]: tool %q written as %q", path, i, t, n))
			in[i] = n
		}
	}
	return in
}

// harnessValidator enforces the AgentHarness rules that need more than one
// object or know the adapters: canonical tool ids, unique harness ids among
// harnesses one namespace can see, the adapter's version floor, and no Host
// auth bootstrap on codex-app-server.
type harnessValidator struct {
	reader readers
	// namespaces are the only namespaces harnesses are admitted in (none: no
	// namespace).
	namespaces []string
	// access reviews the requester's rights (requester.go), sharing
	// identical reviews (reviews.go).
	access reviewer
	// allowInsecureLoopback admits ws:// external servers on loopback.
	allowInsecureLoopback bool
	// decide makes reading the other harnesses, deciding and remembering an
	// admitted harness one step, so two creates of one id through this
	// server cannot both pass.
	decide sync.Mutex
}

func (v *harnessValidator) ValidateCreate(ctx context.Context, h *v1alpha1.AgentHarness) (admission.Warnings, error) {
	return v.validate(ctx, nil, h)
}

func (v *harnessValidator) ValidateUpdate(ctx context.Context, old, h *v1alpha1.AgentHarness) (admission.Warnings, error) {
	return v.validate(ctx, old, h)
}

func (v *harnessValidator) ValidateDelete(context.Context, *v1alpha1.AgentHarness) (admission.Warnings, error) {
	return nil, nil
}

// validate checks h; old is the object before an update, nil on create.
func (v *harnessValidator) validate(ctx context.Context, old, h *v1alpha1.AgentHarness) (admission.Warnings, error) {
	spec := field.NewPath("spec")
	var warnings admission.Warnings
	errs := harnessNamespaceErrors(h.Namespace, v.namespaces)
	errs = append(errs, externalURLErrors(h, v.allowInsecureLoopback)...)
	errs = append(errs, mcpPrefixErrors(old, h)...)
	errs = append(errs, modelGatewayErrors(h)...)
	accessErrs, err := v.requesterErrors(ctx, old, h)
	if err != nil {
		return nil, err
	}
	errs = append(errs, accessErrs...)

	errs = append(errs, toolIDErrors(spec.Child("conversationToolPolicySafeDenyTools"), h.Spec.ConversationToolPolicySafeDenyTools)...)
	errs = append(errs, toolIDErrors(spec.Child("conversationToolPolicyNativeTools"), h.Spec.ConversationToolPolicyNativeTools)...)

	codex := h.Spec.Adapter == v1alpha1.AdapterCodexAppServer
	if codex && h.Spec.AuthBootstrap == v1alpha1.AuthBootstrapHost {
		errs = append(errs, field.NotSupported(spec.Child("authBootstrap"), h.Spec.AuthBootstrap, []string{string(v1alpha1.AuthBootstrapHarness)}))
	}
	if codex && h.Spec.MinVersion != "" {
		if min, err := semver.StrictNewVersion(h.Spec.MinVersion); err != nil {
			errs = append(errs, field.Invalid(spec.Child("minVersion"), h.Spec.MinVersion, "must be a semantic version"))
		} else if min.LessThan(semver.MustParse(appserver.MinimumVersion)) {
			errs = append(errs, field.Invalid(spec.Child("minVersion"), h.Spec.MinVersion,
				fmt.Sprintf("must not be below the codex-app-server floor %s (minVersion can only raise it)", appserver.MinimumVersion)))
		}
	}

	if an := h.Spec.AllowedNamespaces; an != nil && an.From == v1alpha1.NamespacesFromAll {
		warnings = append(warnings, fmt.Sprintf("spec.allowedNamespaces.from: All shares every replica with sessions of every namespace that consents (label %s=%s); a replica is one trust domain",
			v1alpha1.AcceptHarnessesLabel(h.Namespace), v1alpha1.AcceptHarnessesLabelValue))
	}
	if codex && h.Spec.ConversationToolPolicySupport == v1alpha1.ToolPolicySupportExact {
		warnings = append(warnings, "spec.conversationToolPolicySupport: Exact on codex-app-server: Codex cannot isolate its native tool surface for its catalog models (apply_patch and MCP helpers remain), so such restricted turns fail closed with ToolPolicyUnenforceable at dispatch")
	}
	if codex {
		warnings = append(warnings, supportWarnings(h)...)
		w, err := v.implicitCodexWarning(ctx, h)
		if err != nil {
			return nil, err
		}
		warnings = append(warnings, w...)
	}

	// Only the check of the id and the record of the admitted harness hold
	// the lock: what they read must not change in between.
	v.decide.Lock()
	defer v.decide.Unlock()
	dup, err := v.duplicateID(ctx, h)
	if err != nil {
		return nil, err
	}
	if dup != "" {
		errs = append(errs, field.Invalid(spec.Child("harnessId"), effectiveHarnessID(h), dup))
	}
	if len(errs) > 0 {
		return warnings, apierrors.NewInvalid(harnessGK, h.Name, errs)
	}
	cached, err := cachedObject(ctx, v.reader.cached, h, &v1alpha1.AgentHarness{})
	if err != nil {
		return nil, err
	}
	v.reader.harnesses.record(h, old, cached)
	return warnings, nil
}

// harnessNamespaceErrors refuses a harness outside the operator's harness
// namespaces; none configured admits no namespace. The operator reads
// Secrets only in those namespaces, so a harness elsewhere could never get
// its token, and an operator that was given no list must not be able to.
func harnessNamespaceErrors(namespace string, harnessNamespaces []string) field.ErrorList {
	if slices.Contains(harnessNamespaces, namespace) {
		return nil
	}
	path := field.NewPath("metadata", "namespace")
	if len(harnessNamespaces) == 0 {
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
			"no harness namespaces are configured (manager flag --harness-namespaces / chart value harnessNamespaces), so no namespace may hold AgentHarnesses; %q is not one of them", namespace))}
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf(
		"the operator manages AgentHarnesses only in its harness namespaces %s (Helm value harnessNamespaces, manager flag --harness-namespaces); %q is not one of them",
		strings.Join(harnessNamespaces, ", "), namespace))}
}

// effectiveHarnessID is the id the engine looks the harness up by.
func effectiveHarnessID(h *v1alpha1.AgentHarness) string {
	id, _ := selection.DeclaredHarnessID(h)
	return id
}

// toolIDErrors refuses entries that are not known canonical core tool ids
// (unknown names, wildcards, groups, aliases) and duplicates, by index.
func toolIDErrors(path *field.Path, ids []v1alpha1.ToolID) field.ErrorList {
	names := make([]string, len(ids))
	for i, t := range ids {
		names[i] = string(t)
	}
	var errs field.ErrorList
	for _, p := range toolpolicy.ValidateCanonicalToolIDs(names) {
		if p.Kind == toolpolicy.ProblemDuplicate {
			errs = append(errs, field.Duplicate(path.Index(p.Index), p.Value))
			continue
		}
		errs = append(errs, field.Invalid(path.Index(p.Index), p.Value, p.Message))
	}
	return errs
}

// duplicateID names another AgentHarness with h's harness id that some
// namespace can see together with h, or returns "".
func (v *harnessValidator) duplicateID(ctx context.Context, h *v1alpha1.AgentHarness) (string, error) {
	id := effectiveHarnessID(h)
	sameID, err := v.reader.harnessesWithID(ctx, id)
	if err != nil {
		return "", err
	}
	others := slices.DeleteFunc(sameID, func(o *v1alpha1.AgentHarness) bool { return o.Namespace == h.Namespace && o.Name == h.Name })
	if len(others) == 0 {
		return "", nil
	}
	namespaces, err := namespaceLabels(ctx, v.reader.cached)
	if err != nil {
		return "", err
	}
	for _, o := range others {
		if harnessesOverlap(h, o, namespaces) {
			return fmt.Sprintf("harness id %q is already declared by AgentHarness %s/%s, visible to some of the same namespaces", id, o.Namespace, o.Name), nil
		}
	}
	return "", nil
}

// harnessesOverlap reports whether some namespace can see both harnesses: a
// known namespace (or either harness's own) that both admit, or two
// harnesses that admit every namespace or use the same selector.
func harnessesOverlap(a, b *v1alpha1.AgentHarness, namespaces map[string]map[string]string) bool {
	candidates := map[string]map[string]string{a.Namespace: namespaces[a.Namespace], b.Namespace: namespaces[b.Namespace]}
	for n, l := range namespaces {
		candidates[n] = l
	}
	for n, l := range candidates {
		if l == nil {
			l = map[string]string{}
		}
		l = withNameLabel(n, l)
		va, errA := selection.HarnessVisible(a, n, l)
		vb, errB := selection.HarnessVisible(b, n, l)
		if errA == nil && errB == nil && va && vb {
			return true
		}
	}
	fromOf := func(h *v1alpha1.AgentHarness) v1alpha1.NamespacesFrom {
		if h.Spec.AllowedNamespaces == nil || h.Spec.AllowedNamespaces.From == "" {
			return v1alpha1.NamespacesFromSame
		}
		return h.Spec.AllowedNamespaces.From
	}
	if fromOf(a) == v1alpha1.NamespacesFromSelector && fromOf(b) == v1alpha1.NamespacesFromSelector {
		return a.Spec.AllowedNamespaces.Selector.String() == b.Spec.AllowedNamespaces.Selector.String()
	}
	return false
}

// supportWarnings flags a written support block that claims more than the
// adapter's defaults: the declaration is trusted as written, so say so.
func supportWarnings(h *v1alpha1.AgentHarness) admission.Warnings {
	defaults, ok := selection.AdapterDefaults(h.Spec.Adapter)
	s := h.Spec.Support
	if !ok || s == nil {
		return nil
	}
	d := defaults.Support
	var claims []string
	if len(s.Providers) == 0 && len(d.Providers) > 0 {
		claims = append(claims, "every provider (support.providers omitted)")
	}
	for _, p := range s.Providers {
		if !slices.Contains(d.Providers, p) {
			claims = append(claims, fmt.Sprintf("provider %q", p))
		}
	}
	for _, p := range s.NativeProviders {
		if !slices.Contains(d.NativeProviders, p) {
			claims = append(claims, fmt.Sprintf("native provider %q", p))
		}
	}
	if s.RequestTransportOverrides == v1alpha1.RequestTransportOverridesSupported && d.RequestTransportOverrides != v1alpha1.RequestTransportOverridesSupported {
		claims = append(claims, "requestTransportOverrides: Supported")
	}
	if routeStrictness(s.RoutePolicy) < routeStrictness(d.RoutePolicy) {
		claims = append(claims, fmt.Sprintf("routePolicy: %s", s.RoutePolicy))
	}
	if d.PreparedAuth != nil {
		if s.PreparedAuth == nil {
			claims = append(claims, "any prepared auth (support.preparedAuth omitted)")
		} else {
			for _, m := range s.PreparedAuth.SubscriptionModes {
				if !slices.Contains(d.PreparedAuth.SubscriptionModes, m) {
					claims = append(claims, fmt.Sprintf("subscription mode %q", m))
				}
			}
			for _, m := range s.PreparedAuth.APIKeyModes {
				if !slices.Contains(d.PreparedAuth.APIKeyModes, m) {
					claims = append(claims, fmt.Sprintf("api-key mode %q", m))
				}
			}
		}
	}
	if len(claims) == 0 {
		return nil
	}
	return admission.Warnings{fmt.Sprintf("spec.support claims more than the %s adapter's defaults: %s; make sure the app-server's configuration really supports it",
		h.Spec.Adapter, strings.Join(claims, ", "))}
}

func routeStrictness(r v1alpha1.RoutePolicyRequirement) int {
	switch r {
	case v1alpha1.RoutePolicyMustListHarness:
		return 2
	case v1alpha1.RoutePolicyMustBeDeclared:
		return 1
	}
	return 0
}

// implicitCodexWarning: implicit Codex selection
// (docs/design/contract-rules.md, rule 2) looks
// for the harness id `codex`; a codex-app-server harness with another id is
// only reached when a policy or session names it.
func (v *harnessValidator) implicitCodexWarning(ctx context.Context, h *v1alpha1.AgentHarness) (admission.Warnings, error) {
	id := effectiveHarnessID(h)
	if id == string(v1alpha1.RuntimeCodex) {
		return nil, nil
	}
	naming, err := v.reader.policiesNaming(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(naming) > 0 {
		return nil, nil
	}
	return admission.Warnings{fmt.Sprintf("harness id %q: implicit Codex selection for OpenAI looks for the id %q, and no RuntimePolicy names %q yet, so only an explicit runtime selects this harness", id, v1alpha1.RuntimeCodex, id)}, nil
}
