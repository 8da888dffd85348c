package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The app-server of an AgentHarness: a workload the operator runs
// (appServer) or a server it only connects to (external).

// CredentialMount says how a credential reaches the app-server process.
// +kubebuilder:validation:Enum=Env;HomeFile
type CredentialMount string

const (
	// CredentialMountEnv exposes the Secret key as the environment variable `name`.
	CredentialMountEnv CredentialMount = "Env"
	// CredentialMountHomeFile places the Secret key as the file `name` in the native home
	// (for Codex, `auth.json` in CODEX_HOME).
	CredentialMountHomeFile CredentialMount = "HomeFile"
)

// AppServerCredential is one Secret-backed credential of a managed app-server.
// +kubebuilder:validation:XValidation:rule="self.mount != 'Env' || self.name.matches('^[A-Za-z_][A-Za-z0-9_]*$')",message="credentials[].name must be an environment variable name when mount is Env"
// +kubebuilder:validation:XValidation:rule="self.mount != 'HomeFile' || self.name.matches('^[A-Za-z0-9_][A-Za-z0-9._-]*$')",message="credentials[].name must be a plain file name (no '/') when mount is HomeFile"
type AppServerCredential struct {
	// name is the environment variable (mount Env, e.g. OPENAI_API_KEY) or the
	// file in the native home (mount HomeFile, e.g. auth.json).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`

	// mount says how the credential reaches the process: Env or HomeFile.
	// +required
	Mount CredentialMount `json:"mount"`

	// secretKeyRef is the Secret key that holds the credential.
	// +required
	SecretKeyRef SecretKeyReference `json:"secretKeyRef"`
}

// AppServerStorage is the persistent volume of each replica's native home.
type AppServerStorage struct {
	// size is the requested size of each replica's volume.
	// +required
	Size resource.Quantity `json:"size"`

	// storageClassName is the StorageClass of the volumes; omitted uses the cluster default.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// SandboxMode is how the native tool processes of threads run on the server
// pods.
// +kubebuilder:validation:Enum=Off;WorkspaceWrite
type SandboxMode string

const (
	// SandboxModeOff runs them with full access to the pod (Codex's
	// danger-full-access): the Pod is the isolation boundary.
	SandboxModeOff SandboxMode = "Off"
	// SandboxModeWorkspaceWrite runs them in Codex's workspace-write sandbox:
	// they may write only the session's working directory, have no network
	// and run in user and PID namespaces of their own.
	SandboxModeWorkspaceWrite SandboxMode = "WorkspaceWrite"
)

// AppServerSandbox asks for Codex's sandbox around native tool processes.
type AppServerSandbox struct {
	// mode is Off (the default) or WorkspaceWrite. WorkspaceWrite needs user
	// namespaces in the pods, which the container runtime's default seccomp
	// profile refuses: each server pod first runs the check
	// `codex sandbox -- true` (init container sandbox-check), and where it
	// fails the pod does not start, the harness reports SandboxReady=False
	// with the check's output, and no turn runs. There is no silent
	// fallback to full access.
	// +optional
	// +kubebuilder:default=Off
	Mode SandboxMode `json:"mode,omitempty"`

	// seccompLocalhostProfile is a seccomp profile installed on the nodes
	// (a path relative to the kubelet's seccomp directory) that allows user
	// namespaces; the server pods use it instead of RuntimeDefault. Pod
	// Security "restricted" admits Localhost profiles.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._/-]+$`
	// +kubebuilder:validation:XValidation:rule="!self.contains('..') && !self.startsWith('/')",message="seccompLocalhostProfile is a path relative to the seccomp directory of the kubelet, without .."
	SeccompLocalhostProfile string `json:"seccompLocalhostProfile,omitempty"`
}

// AppServerWorkload is an app-server the operator runs as a StatefulSet.
type AppServerWorkload struct {
	// image is the app-server container image, pinned by digest
	// (`registry/repo@sha256:<64 hex>`), so the served artifact is known.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^@\\\\s]+@sha256:[0-9a-f]{64}$')",message="appServer.image must be pinned by digest (name@sha256:<64 hex digits>)"
	Image string `json:"image"`

	// imagePullPolicy is the app-server container's pull policy: IfNotPresent
	// (the default; a digest-pinned image never changes once pulled), Always
	// (re-check the registry credentials at every start) or Never (the node
	// must hold the image already, e.g. air-gapped nodes).
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// command overrides the image's entrypoint.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=1024
	Command []string `json:"command,omitempty"`

	// args are the arguments to the command.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	Args []string `json:"args,omitempty"`

	// env sets environment variables of the app-server container. Put credentials
	// in `credentials`, not here.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Env []corev1.EnvVar `json:"env,omitempty"`

	// credentials are Secret-backed credentials of the app-server (authBootstrap: Harness).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Credentials []AppServerCredential `json:"credentials,omitempty"`

	// replicas is the number of app-server pods.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	Replicas *int32 `json:"replicas,omitempty"`

	// resources are the compute resources of the app-server container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// maxSessionsPerReplica bounds the sessions bound to one pod; a full replica
	// answers HarnessAtCapacity.
	// +optional
	// +kubebuilder:default=32
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxSessionsPerReplica *int32 `json:"maxSessionsPerReplica,omitempty"`

	// maxSessionsPerNamespace bounds the sessions of one other namespace
	// bound to this harness's pods, all replicas together: a harness shared
	// with other namespaces (allowedNamespaces) cannot be filled by one of
	// them. A session over it is refused HarnessAtCapacity. The harness's own
	// namespace is bounded only by maxSessionsPerReplica.
	// +optional
	// +kubebuilder:default=16
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MaxSessionsPerNamespace *int32 `json:"maxSessionsPerNamespace,omitempty"`

	// sandbox asks for Codex's own sandbox (bubblewrap) around the native
	// tool processes of every thread on the pods. Without it they run with
	// full access to the pod, which is then the isolation boundary
	// (docs/security.md).
	// +optional
	Sandbox *AppServerSandbox `json:"sandbox,omitempty"`

	// storage is a persistent volume per replica for the native home; omitted
	// uses an emptyDir (threads do not survive a pod restart).
	// +optional
	Storage *AppServerStorage `json:"storage,omitempty"`
}

// ExternalServer is an app-server the operator does not run.
type ExternalServer struct {
	// url is the WebSocket address of the app-server: wss://, because the
	// capability token travels in it. Plain ws:// is admitted only to a
	// loopback host (127.0.0.0/8, [::1], localhost) and only when the manager
	// runs with --allow-insecure-loopback-external (development). No
	// userinfo (user:password@): the token comes from tokenSecretRef.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^wss?://[^\\\\s/?#]+(/[^\\\\s?#]*)?$')",message="external.url must be a ws:// or wss:// URL without query or fragment"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[a-z]+://[^/?#]*@')",message="external.url must not carry userinfo (user:password@host); the token comes from external.tokenSecretRef"
	// +kubebuilder:validation:XValidation:rule="self.startsWith('wss://') || self.matches('^ws://(localhost|127\\\\.[0-9]+\\\\.[0-9]+\\\\.[0-9]+|\\\\[::1\\\\])(:[0-9]+)?(/.*)?$')",message="external.url must be wss:// (plain ws:// only to a loopback host, for development)"
	URL string `json:"url"`

	// tokenSecretRef is the Secret key holding the capability token sent as
	// `Authorization: Bearer`.
	// +required
	TokenSecretRef SecretKeyReference `json:"tokenSecretRef"`

	// caBundle is the PEM certificates of the certificate authorities that
	// sign the server's certificate (a private CA); empty: the system roots
	// of the manager and dispatcher images. Admission refuses a bundle that
	// holds no certificate.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	CABundle []byte `json:"caBundle,omitempty"`
}
