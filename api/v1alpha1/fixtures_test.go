package v1alpha1_test

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	harnessv1alpha1 "github.com/openclaw/harness-operator/api/v1alpha1"
)

const testDigest = "sha256:0f3c1d8e2a7b4c6d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d"

// validExternalHarness is a minimal valid AgentHarness in external mode.
func validExternalHarness(namespace, name string) *harnessv1alpha1.AgentHarness {
	return &harnessv1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: harnessv1alpha1.AgentHarnessSpec{
			HarnessID: "codex",
			Adapter:   harnessv1alpha1.AdapterCodexAppServer,
			External: &harnessv1alpha1.ExternalServer{
				URL:            "ws://127.0.0.1:4500",
				TokenSecretRef: harnessv1alpha1.SecretKeyReference{Name: "codex-token", Key: "token"},
			},
		},
	}
}

// validManagedHarness is a minimal valid AgentHarness in managed mode.
func validManagedHarness(namespace, name string) *harnessv1alpha1.AgentHarness {
	return &harnessv1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: harnessv1alpha1.AgentHarnessSpec{
			Adapter: harnessv1alpha1.AdapterCodexAppServer,
			AppServer: &harnessv1alpha1.AppServerWorkload{
				Image:    "registry.example/codex@" + testDigest,
				Replicas: ptr.To[int32](1),
				Credentials: []harnessv1alpha1.AppServerCredential{{
					Name:         "OPENAI_API_KEY",
					Mount:        harnessv1alpha1.CredentialMountEnv,
					SecretKeyRef: harnessv1alpha1.SecretKeyReference{Name: "codex-credentials", Key: "api-key"},
				}},
				Env: []corev1.EnvVar{{Name: "RUST_LOG", Value: "info"}},
			},
		},
	}
}

// validPolicy is a minimal valid RuntimePolicy.
func validPolicy(name string) *harnessv1alpha1.RuntimePolicy {
	return &harnessv1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: harnessv1alpha1.RuntimePolicySpec{
			Providers: []harnessv1alpha1.ProviderRuntimePolicy{{Provider: "openai", Runtime: harnessv1alpha1.RuntimeCodex}},
		},
	}
}

// validSession is a minimal valid AgentSession.
func validSession(namespace, name string) *harnessv1alpha1.AgentSession {
	return &harnessv1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: harnessv1alpha1.AgentSessionSpec{
			AgentID:    "main",
			SessionKey: "agent:main:" + name,
			SessionID:  name + "-0001",
			Model:      "openai/gpt-5.5",
		},
	}
}
