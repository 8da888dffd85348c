package agentharness

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/harness/objects"
)

// Server pods authenticate their clients with Codex's signed bearer tokens:
// the token Secret holds a shared secret that the pod reads from a file and
// the manager and dispatcher sign a short-lived token with for each
// connection (appserver.SignedBearer). No standing credential crosses the
// network, and the pod holds only what lets it verify.
const (
	// WSSecretDir is where the token Secret is mounted (read-only) in the
	// app-server container.
	WSSecretDir = "/var/run/harness-operator/ws-auth"
	// EnvSharedSecretFile, EnvIssuer and EnvAudience are set on the
	// app-server container so that custom spec.appServer.args can pass
	// `--ws-shared-secret-file $(HARNESS_WS_SHARED_SECRET_FILE) --ws-issuer
	// $(HARNESS_WS_ISSUER) --ws-audience $(HARNESS_WS_AUDIENCE)`.
	EnvSharedSecretFile = "HARNESS_WS_SHARED_SECRET_FILE"
	EnvIssuer           = "HARNESS_WS_ISSUER"
	EnvAudience         = "HARNESS_WS_AUDIENCE"

	wsSecretVolume = "ws-auth"
)

// wsSharedSecretFile is the shared secret's path in the container.
const wsSharedSecretFile = WSSecretDir + "/" + objects.TokenSecretKey

// wsAuthArgs are the default args' authentication flags.
func wsAuthArgs() []string {
	return []string{
		"--ws-auth", "signed-bearer-token",
		"--ws-shared-secret-file", wsSharedSecretFile,
		"--ws-issuer", appserver.SignedBearerIssuer,
		"--ws-audience", appserver.SignedBearerAudience,
	}
}

// wsAuthEnv are the variables custom args refer to.
func wsAuthEnv() []*corev1ac.EnvVarApplyConfiguration {
	return []*corev1ac.EnvVarApplyConfiguration{
		corev1ac.EnvVar().WithName(EnvSharedSecretFile).WithValue(wsSharedSecretFile),
		corev1ac.EnvVar().WithName(EnvIssuer).WithValue(appserver.SignedBearerIssuer),
		corev1ac.EnvVar().WithName(EnvAudience).WithValue(appserver.SignedBearerAudience),
	}
}

// wsSecretMount mounts the token Secret's key read-only. Codex reads it once
// at start; the credentials hash rolls the pods when it changes.
func (w workload) wsSecretMount() (*corev1ac.VolumeApplyConfiguration, *corev1ac.VolumeMountApplyConfiguration) {
	vol := corev1ac.Volume().WithName(wsSecretVolume).
		WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(objects.TokenSecretName(w.harness)).
			WithDefaultMode(0o440).
			WithItems(corev1ac.KeyToPath().WithKey(objects.TokenSecretKey).WithPath(objects.TokenSecretKey)))
	mount := corev1ac.VolumeMount().WithName(wsSecretVolume).WithMountPath(WSSecretDir).WithReadOnly(true)
	return vol, mount
}

// managedServerAuth is how the manager dials a managed harness's pods: a
// token signed with the harness's shared secret, minted per dial.
func managedServerAuth(secret string) appserver.WebSocketOptions {
	return appserver.WebSocketOptions{SignedBearer: appserver.ManagedServerAuth(secret)}
}
