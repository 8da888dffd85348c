package engine

// The engine's rights in the cluster, generated into the dispatcher's
// ClusterRole (config/rbac/dispatcher/role.yaml, `make manifests`), which
// the chart's rbac-dispatcher.yaml must grant (test/e2e/chart checks it):
// it reads harnesses, policies, sessions and namespaces through informers
// to decide; it trusts a server pod only when its harness's StatefulSet
// controls it (both cached by label); it reads a harness's token Secret one
// by one, never listing or watching Secrets (the chart narrows this to the
// harness namespaces); and it writes its part of AgentSession status.

// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentharnesses;runtimepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentsessions,verbs=get;list;watch
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentsessions/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
