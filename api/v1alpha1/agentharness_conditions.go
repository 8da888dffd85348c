package v1alpha1

// AgentHarness condition types.
const (
	// HarnessConditionWorkloadReady: managed, at least one server pod is Ready;
	// external, the last /readyz probe succeeded.
	HarnessConditionWorkloadReady = "WorkloadReady"
	// HarnessConditionVersionSupported: the handshake version is at or above the floor.
	HarnessConditionVersionSupported = "VersionSupported"
	// HarnessConditionAttested: every server runs one identified runtime artifact.
	HarnessConditionAttested = "Attested"
	// HarnessConditionSandboxReady (only with spec.appServer.sandbox mode
	// WorkspaceWrite): Codex's sandbox works on the server pods.
	HarnessConditionSandboxReady = "SandboxReady"
	// HarnessConditionLoggedIn: the app-server's model requests carry a
	// credential of its own (account/read at the handshake). False means
	// they would carry none: turns without an auth profile are refused
	// AuthFailed, turns with one still run, so Ready does not include it.
	// With spec.modelGateway it is True, reason ModelGateway: the gateway
	// adds the credential.
	HarnessConditionLoggedIn = "LoggedIn"
	// HarnessConditionReady is WorkloadReady and VersionSupported (and SandboxReady when a sandbox is asked for); attestation is separate.
	HarnessConditionReady = "Ready"
)

// HarnessConditionReason is the machine-readable reason of an AgentHarness condition.
type HarnessConditionReason string

// AgentHarness condition reasons.
const (
	// HarnessReasonAccountPresent: the server is logged in (an account).
	HarnessReasonAccountPresent HarnessConditionReason = "AccountPresent"
	// HarnessReasonProviderCredentials: the server's model provider
	// authenticates with its own key (env_key), which the handshake cannot see.
	HarnessReasonProviderCredentials HarnessConditionReason = "ProviderCredentials"
	// HarnessReasonNotLoggedIn: the provider needs the server's login and there is none.
	HarnessReasonNotLoggedIn HarnessConditionReason = "NotLoggedIn"
	// HarnessReasonLoginUnknown: the server did not answer account/read (or no handshake yet).
	HarnessReasonLoginUnknown HarnessConditionReason = "LoginUnknown"
	// HarnessReasonReconciling: the manager has not finished observing the harness.
	HarnessReasonReconciling HarnessConditionReason = "Reconciling"
	// HarnessReasonPodsReady: at least one server pod is Ready.
	HarnessReasonPodsReady HarnessConditionReason = "PodsReady"
	// HarnessReasonNoReadyPods: no server pod is Ready.
	HarnessReasonNoReadyPods HarnessConditionReason = "NoReadyPods"
	// HarnessReasonProbeSucceeded: the external server's /readyz answered.
	HarnessReasonProbeSucceeded HarnessConditionReason = "ProbeSucceeded"
	// HarnessReasonProbeFailed: the external server's /readyz did not answer.
	HarnessReasonProbeFailed HarnessConditionReason = "ProbeFailed"
	// HarnessReasonTokenSecretMissing: the token Secret or key does not exist.
	HarnessReasonTokenSecretMissing HarnessConditionReason = "TokenSecretMissing"
	// HarnessReasonVersionAccepted: the handshake version is at or above the floor.
	HarnessReasonVersionAccepted HarnessConditionReason = "VersionAccepted"
	// HarnessReasonVersionBelowFloor: the server is older than the floor, or unversioned.
	HarnessReasonVersionBelowFloor HarnessConditionReason = "VersionBelowFloor"
	// HarnessReasonHandshakeFailed: the initialize handshake failed.
	HarnessReasonHandshakeFailed HarnessConditionReason = "HandshakeFailed"
	// HarnessReasonHandshakePending: no handshake has completed yet.
	HarnessReasonHandshakePending HarnessConditionReason = "HandshakePending"
	// HarnessReasonArtifactVerified: every server runs one image digest and version.
	HarnessReasonArtifactVerified HarnessConditionReason = "ArtifactVerified"
	// HarnessReasonMixedArtifacts: servers run different digests or versions.
	HarnessReasonMixedArtifacts HarnessConditionReason = "MixedArtifacts"
	// HarnessReasonExternalServer: an external server cannot be attested.
	HarnessReasonExternalServer HarnessConditionReason = "ExternalServer"
	// HarnessReasonReady: the harness accepts turns.
	HarnessReasonReady HarnessConditionReason = "Ready"
	// HarnessReasonWorkloadNotReady: the workload is not ready.
	HarnessReasonWorkloadNotReady HarnessConditionReason = "WorkloadNotReady"
	// HarnessReasonVersionNotSupported: the version is below the floor or not yet known.
	HarnessReasonVersionNotSupported HarnessConditionReason = "VersionNotSupported"
	// HarnessReasonNamespaceNotManaged: the harness is outside the operator's harness namespaces.
	HarnessReasonNamespaceNotManaged HarnessConditionReason = "NamespaceNotManaged"
	// HarnessReasonNameConflict: an object of a generated name exists and is not controlled by the harness; it is left alone.
	HarnessReasonNameConflict HarnessConditionReason = "NameConflict"
	// HarnessReasonReconcileFailed: a phase of the manager failed (an apply refused by quota, Pod Security or RBAC); the message says which.
	HarnessReasonReconcileFailed HarnessConditionReason = "ReconcileFailed"
	// HarnessReasonSandboxUsable: a server pod ran Codex's sandbox check successfully.
	HarnessReasonSandboxUsable HarnessConditionReason = "SandboxUsable"
	// HarnessReasonSandboxUnavailable: Codex's sandbox cannot run on the server pods (their check failed); the pods do not start and no turn runs.
	HarnessReasonSandboxUnavailable HarnessConditionReason = "SandboxUnavailable"
	// HarnessReasonModelGatewayNotConfigured: the harness has spec.modelGateway and the manager cannot point its pods at the gateway (no --model-gateway-url, or the gateway's CA cannot be read); no workload is created or changed.
	HarnessReasonModelGatewayNotConfigured HarnessConditionReason = "ModelGatewayNotConfigured"
	// HarnessReasonModelGateway: the server's model provider is the model gateway, which adds the credential; the pods hold none.
	HarnessReasonModelGateway HarnessConditionReason = "ModelGateway"
	// HarnessReasonSandboxNotChecked: no server pod has run the sandbox check yet.
	HarnessReasonSandboxNotChecked HarnessConditionReason = "SandboxNotChecked"
)
