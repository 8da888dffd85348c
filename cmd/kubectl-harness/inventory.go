package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/cli/manifest"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/policy/toolpolicy"
)

// inventory is every object a decision may read, unfiltered.
type inventory struct {
	harnesses       []*v1alpha1.AgentHarness
	policies        []*v1alpha1.RuntimePolicy
	sessions        []*v1alpha1.AgentSession
	namespaceLabels map[string]map[string]string
}

// loadManifests reads the -f paths. Unknown fields of the three kinds are an
// error naming the object (a typo would otherwise change a decision silently);
// other kinds are ignored.
func loadManifests(paths []string) (*inventory, error) {
	inv := &inventory{namespaceLabels: map[string]map[string]string{}}
	for _, p := range paths {
		objs, err := manifest.ReadPath(p)
		if err != nil {
			return nil, fmt.Errorf("--filename: %w", err)
		}
		for _, u := range objs {
			if err := inv.add(u); err != nil {
				return nil, err
			}
		}
	}
	return inv, nil
}

func (inv *inventory) add(u *unstructured.Unstructured) error {
	gvk := u.GroupVersionKind()
	where := fmt.Sprintf("%s %s", gvk.Kind, objectName(u.GetNamespace(), u.GetName()))
	convert := func(into any) error {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		return nil
	}
	if gvk.Group == "" && gvk.Kind == "Namespace" {
		inv.namespaceLabels[u.GetName()] = u.GetLabels()
		return nil
	}
	if gvk.GroupVersion() != v1alpha1.GroupVersion {
		return nil
	}
	switch gvk.Kind {
	case "AgentHarness":
		h := &v1alpha1.AgentHarness{}
		if err := convert(h); err != nil {
			return err
		}
		if h.Namespace == "" {
			h.Namespace = "default"
		}
		inv.harnesses = append(inv.harnesses, h)
	case "RuntimePolicy":
		p := &v1alpha1.RuntimePolicy{}
		if err := convert(p); err != nil {
			return err
		}
		inv.policies = append(inv.policies, p)
	case "AgentSession":
		s := &v1alpha1.AgentSession{}
		if err := convert(s); err != nil {
			return err
		}
		if s.Namespace == "" {
			s.Namespace = "default"
		}
		inv.sessions = append(inv.sessions, s)
	}
	return nil
}

// loadCluster reads the objects through a kubeconfig. It returns the namespace
// to use when no session is found: the flag, else the context's namespace.
func loadCluster(ctx context.Context, kubeconfig, kubeContext, namespace string) (*inventory, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("load kubeconfig: %w", err)
	}
	if namespace == "" {
		if namespace, _, err = cc.Namespace(); err != nil {
			return nil, "", fmt.Errorf("kubeconfig namespace: %w", err)
		}
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", fmt.Errorf("create client: %w", err)
	}

	inv := &inventory{namespaceLabels: map[string]map[string]string{}}
	var harnesses v1alpha1.AgentHarnessList
	if err := c.List(ctx, &harnesses); err != nil {
		return nil, "", fmt.Errorf("list AgentHarnesses: %w", err)
	}
	var policies v1alpha1.RuntimePolicyList
	if err := c.List(ctx, &policies); err != nil {
		return nil, "", fmt.Errorf("list RuntimePolicies: %w", err)
	}
	var sessions v1alpha1.AgentSessionList
	if err := c.List(ctx, &sessions, client.InNamespace(namespace)); err != nil {
		return nil, "", fmt.Errorf("list AgentSessions in %s: %w", namespace, err)
	}
	var ns corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
		return nil, "", fmt.Errorf("get Namespace %s (its labels decide which policies and harnesses apply): %w", namespace, err)
	}
	inv.namespaceLabels[namespace] = ns.Labels
	for i := range harnesses.Items {
		inv.harnesses = append(inv.harnesses, &harnesses.Items[i])
	}
	for i := range policies.Items {
		inv.policies = append(inv.policies, &policies.Items[i])
	}
	for i := range sessions.Items {
		inv.sessions = append(inv.sessions, &sessions.Items[i])
	}
	return inv, namespace, nil
}

// sessionFor picks the AgentSession of an attempt: sessionId first, then
// sessionKey (OpenClaw's /new keeps the key), then the only session given. It
// returns the namespace decisions are made for and a note when no session applies.
func (inv *inventory) sessionFor(a *wire.Attempt, fallbackNamespace string) (*v1alpha1.AgentSession, string, string) {
	if id := a.SessionID; id != "" {
		for _, s := range inv.sessions {
			if s.Spec.SessionID == id {
				return s, s.Namespace, ""
			}
		}
	}
	if key := a.SessionKey; key != "" {
		for _, s := range inv.sessions {
			if s.Spec.SessionKey == key {
				return s, s.Namespace, ""
			}
		}
	}
	switch len(inv.sessions) {
	case 0:
		return nil, fallbackNamespace, ""
	case 1:
		return inv.sessions[0], inv.sessions[0].Namespace, ""
	}
	return nil, fallbackNamespace, fmt.Sprintf("%d AgentSessions given and none matches the attempt's sessionId or sessionKey: evaluating without a session in namespace %s", len(inv.sessions), fallbackNamespace)
}

// admissionWarnings lists what admission would refuse in the given objects;
// explain evaluates them as given, like the cluster would after an admission race.
func (inv *inventory) admissionWarnings() []string {
	var warnings []string
	ids := map[string][]string{}
	for _, h := range inv.harnesses {
		id := h.Spec.HarnessID
		if id == "" {
			id = h.Name
		}
		ids[id] = append(ids[id], objectName(h.Namespace, h.Name))
		where := "AgentHarness " + objectName(h.Namespace, h.Name)
		if h.Spec.AuthBootstrap == v1alpha1.AuthBootstrapHost {
			warnings = append(warnings, where+": spec.authBootstrap: Host is not supported by adapter "+string(h.Spec.Adapter))
		}
		for _, list := range []struct {
			field string
			ids   []v1alpha1.ToolID
		}{
			{"spec.conversationToolPolicySafeDenyTools", h.Spec.ConversationToolPolicySafeDenyTools},
			{"spec.conversationToolPolicyNativeTools", h.Spec.ConversationToolPolicyNativeTools},
		} {
			names := make([]string, len(list.ids))
			for i, t := range list.ids {
				names[i] = string(t)
			}
			for _, p := range toolpolicy.ValidateCanonicalToolIDs(names) {
				warnings = append(warnings, fmt.Sprintf("%s: %s[%d]: %s", where, list.field, p.Index, p.Message))
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		if objs := ids[id]; len(objs) > 1 {
			warnings = append(warnings, fmt.Sprintf("harness id %q is declared by %s: admission refuses a duplicate id among harnesses one namespace can see; the oldest counts", id, strings.Join(objs, ", ")))
		}
	}
	return warnings
}

func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
