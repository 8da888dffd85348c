package v1alpha1_test

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

const testDigest = "sha256:0f3c1d8e2a7b4c6d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d"

// validExternalHarness is a minimal valid AgentHarness in external mode.
func validExternalHarness(namespace, name string) *v1alpha1.AgentHarness {
	return &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.AgentHarnessSpec{
			HarnessID: "codex",
			Adapter:   v1alpha1.AdapterCodexAppServer,
			External: &v1alpha1.ExternalServer{
				URL:            "ws://127.0.0.1:4500",
				TokenSecretRef: v1alpha1.SecretKeyReference{Name: "codex-token", Key: "token"},
			},
		},
	}
}

// validManagedHarness is a minimal valid AgentHarness in managed mode.
func validManagedHarness(namespace, name string) *v1alpha1.AgentHarness {
	return &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.AgentHarnessSpec{
			Adapter: v1alpha1.AdapterCodexAppServer,
			AppServer: &v1alpha1.AppServerWorkload{
				Image:    "registry.example/codex@" + testDigest,
				Replicas: ptr.To[int32](1),
				Credentials: []v1alpha1.AppServerCredential{{
					Name:         "OPENAI_API_KEY",
					Mount:        v1alpha1.CredentialMountEnv,
					SecretKeyRef: v1alpha1.SecretKeyReference{Name: "codex-credentials", Key: "api-key"},
				}},
				Env: []corev1.EnvVar{{Name: "RUST_LOG", Value: "info"}},
			},
		},
	}
}

// validPolicy is a minimal valid RuntimePolicy.
func validPolicy(name string) *v1alpha1.RuntimePolicy {
	return &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RuntimePolicySpec{
			Providers: []v1alpha1.ProviderRuntimePolicy{{Provider: "openai", Runtime: v1alpha1.RuntimeCodex}},
		},
	}
}

// validSession is a minimal valid AgentSession.
func validSession(namespace, name string) *v1alpha1.AgentSession {
	return &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.AgentSessionSpec{
			AgentID:    "main",
			SessionKey: "agent:main:" + name,
			SessionID:  name + "-0001",
			Model:      "openai/gpt-5.5",
		},
	}
}
