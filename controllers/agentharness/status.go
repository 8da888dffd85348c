package agentharness

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// artifactPrefix starts runtimeArtifact.id: `codex-app-server:<version>`.
const artifactPrefix = "codex-app-server:"

// Limits of the status fields (api/v1alpha1).
const (
	maxUserAgent = 256
	maxVersion   = 64
)

// verdict is one condition's status, reason and message.
type verdict struct {
	status  metav1.ConditionStatus
	reason  v1alpha1.HarnessConditionReason
	message string
}

func setCondition(h *v1alpha1.AgentHarness, typ string, v verdict) {
	meta.SetStatusCondition(&h.Status.Conditions, metav1.Condition{
		Type:               typ,
		Status:             v.status,
		Reason:             string(v.reason),
		Message:            v.message,
		ObservedGeneration: h.Generation,
	})
}

// managedConditions derives the status of a managed harness from its server
// pods and the handshake results of their digests.
func (r *Reconciler) managedConditions(_ context.Context, s *scope) error {
	h := s.harness
	st := &h.Status

	var servers []v1alpha1.ServerStatus
	var ready int32
	for _, srv := range s.servers {
		ss := v1alpha1.ServerStatus{Name: srv.name, ImageID: srv.imageID, State: srv.state}
		if res := s.results[srv.digest]; srv.digest != "" && res != nil && res.err == nil {
			ss.UserAgent, ss.Version = serverIdentity(res.userAgent)
		}
		if srv.state == v1alpha1.ServerReady {
			ready++
		}
		servers = append(servers, ss)
	}
	st.Servers = servers
	st.Replicas = int32(len(servers))
	st.ReadyReplicas = ready
	st.Version = agreedVersion(servers)

	// WorkloadReady: at least one server pod is Ready.
	if ready > 0 {
		setCondition(h, v1alpha1.HarnessConditionWorkloadReady, verdict{metav1.ConditionTrue,
			v1alpha1.HarnessReasonPodsReady, fmt.Sprintf("%d of %d server pods are Ready", ready, len(servers))})
	} else {
		setCondition(h, v1alpha1.HarnessConditionWorkloadReady, verdict{metav1.ConditionFalse,
			v1alpha1.HarnessReasonNoReadyPods, fmt.Sprintf("no server pod is Ready (%d pods)", len(servers))})
	}

	// VersionSupported: the digests of Ready servers; with none Ready, what
	// is known about the digests of the other servers that are not draining.
	var relevant []*handshakeResult
	seen := map[string]bool{}
	for _, srv := range s.servers {
		if srv.state == v1alpha1.ServerReady && srv.digest != "" && !seen[srv.digest] {
			seen[srv.digest] = true
			relevant = append(relevant, s.results[srv.digest])
		}
	}
	if len(relevant) == 0 {
		for _, srv := range s.servers {
			res := s.results[srv.digest]
			if srv.state == v1alpha1.ServerNotReady && srv.digest != "" && !seen[srv.digest] && res != nil && res.err == nil {
				seen[srv.digest] = true
				relevant = append(relevant, res)
			}
		}
	}
	setCondition(h, v1alpha1.HarnessConditionVersionSupported, versionVerdict(relevant, h.Spec.MinVersion))
	if h.Spec.ModelGateway != nil {
		setCondition(h, v1alpha1.HarnessConditionLoggedIn, verdict{metav1.ConditionTrue, v1alpha1.HarnessReasonModelGateway,
			"the app-server's model provider is the model gateway: the pods hold no provider credential, and the gateway adds the harness's (spec.modelGateway.credentialSecretRef) to the model requests of running turns"})
	} else {
		setCondition(h, v1alpha1.HarnessConditionLoggedIn, loginVerdict(relevant))
	}
	st.Capabilities = judgedCapabilities(h, relevant)

	// Attested: every server that is not draining runs one digest whose
	// version the handshake identified.
	av, artifact := attestation(s)
	setCondition(h, v1alpha1.HarnessConditionAttested, av)
	st.RuntimeArtifact = artifact

	if sandboxRequested(h) {
		setCondition(h, v1alpha1.HarnessConditionSandboxReady, sandboxVerdict(s.servers))
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.HarnessConditionSandboxReady)
	}
	setReady(h)
	return nil
}

// externalConditions derives the status of an external harness from the
// /readyz probe and the handshake.
func (r *Reconciler) externalConditions(_ context.Context, s *scope) error {
	h := s.harness
	st := &h.Status

	srv := v1alpha1.ServerStatus{Name: externalServerName, State: v1alpha1.ServerReady}
	if s.probeErr != nil {
		srv.State = v1alpha1.ServerNotReady
	}
	if s.external != nil && s.external.err == nil {
		srv.UserAgent, srv.Version = serverIdentity(s.external.userAgent)
	}
	st.Servers = []v1alpha1.ServerStatus{srv}
	st.Replicas = 1
	st.ReadyReplicas = 0
	if srv.State == v1alpha1.ServerReady {
		st.ReadyReplicas = 1
	}
	st.Version = srv.Version
	st.RuntimeArtifact = nil

	if s.probeErr == nil {
		setCondition(h, v1alpha1.HarnessConditionWorkloadReady, verdict{metav1.ConditionTrue,
			v1alpha1.HarnessReasonProbeSucceeded, "the external app-server's /readyz answered 200"})
	} else {
		setCondition(h, v1alpha1.HarnessConditionWorkloadReady, verdict{metav1.ConditionFalse,
			v1alpha1.HarnessReasonProbeFailed, "the external app-server's /readyz did not answer: " + s.probeErr.Error()})
	}

	var vv verdict
	switch {
	case s.tokenMissing != "":
		vv = verdict{metav1.ConditionFalse, v1alpha1.HarnessReasonTokenSecretMissing, s.tokenMissing}
	case s.external == nil && s.probeErr != nil:
		vv = verdict{metav1.ConditionUnknown, v1alpha1.HarnessReasonHandshakePending,
			"waiting for the external app-server's /readyz before the handshake"}
	default:
		vv = versionVerdict([]*handshakeResult{s.external}, h.Spec.MinVersion)
	}
	setCondition(h, v1alpha1.HarnessConditionVersionSupported, vv)
	setCondition(h, v1alpha1.HarnessConditionLoggedIn, loginVerdict([]*handshakeResult{s.external}))
	st.Capabilities = judgedCapabilities(h, []*handshakeResult{s.external})

	setCondition(h, v1alpha1.HarnessConditionAttested, verdict{metav1.ConditionFalse,
		v1alpha1.HarnessReasonExternalServer,
		"an external app-server is not attested: the operator does not run it and cannot identify its artifact"})

	setReady(h)
	return nil
}

// versionVerdict judges handshake results (nil = none yet) against the
// floor: any server below the floor wins, then any failed handshake, then
// any pending one; all accepted is True.
func versionVerdict(results []*handshakeResult, minVersion string) verdict {
	floor := appserver.MinimumVersion
	if f, err := appserver.Floor(minVersion); err == nil {
		floor = f.String()
	}
	var below, failed string
	pending := len(results) == 0
	var accepted []string
	for _, res := range results {
		switch {
		case res == nil:
			pending = true
		case res.err != nil:
			if failed == "" {
				failed = fmt.Sprintf("the handshake with %s failed: %v", res.server, res.err)
			}
		default:
			v, err := appserver.CheckVersion(res.userAgent, minVersion)
			if err != nil {
				if below == "" {
					below = err.Error()
				}
				continue
			}
			if s := v.String(); !slices.Contains(accepted, s) {
				accepted = append(accepted, s)
			}
		}
	}
	switch {
	case below != "":
		return verdict{metav1.ConditionFalse, v1alpha1.HarnessReasonVersionBelowFloor, below}
	case failed != "":
		return verdict{metav1.ConditionFalse, v1alpha1.HarnessReasonHandshakeFailed, failed}
	case pending:
		return verdict{metav1.ConditionUnknown, v1alpha1.HarnessReasonHandshakePending,
			"waiting for the first handshake with a Ready app-server"}
	}
	return verdict{metav1.ConditionTrue, v1alpha1.HarnessReasonVersionAccepted,
		fmt.Sprintf("Codex app-server %s meets the version floor %s", strings.Join(accepted, ", "), floor)}
}

// attestation is the Attested verdict and, when every server that is not
// draining runs one identified digest, the runtime artifact.
func attestation(s *scope) (verdict, *v1alpha1.RuntimeArtifact) {
	var digests []string
	for _, srv := range s.servers {
		if srv.state != v1alpha1.ServerTerminating && srv.digest != "" && !slices.Contains(digests, srv.digest) {
			digests = append(digests, srv.digest)
		}
	}
	switch len(digests) {
	case 0:
		return verdict{metav1.ConditionUnknown, v1alpha1.HarnessReasonNoReadyPods,
			"no server pod reports an image digest yet"}, nil
	case 1:
	default:
		return verdict{metav1.ConditionFalse, v1alpha1.HarnessReasonMixedArtifacts,
			"servers run different image digests: " + strings.Join(digests, ", ")}, nil
	}
	digest := digests[0]
	res := s.results[digest]
	switch {
	case res == nil:
		return verdict{metav1.ConditionUnknown, v1alpha1.HarnessReasonHandshakePending,
			"waiting for the handshake with a server running " + digest}, nil
	case res.err != nil:
		return verdict{metav1.ConditionUnknown, v1alpha1.HarnessReasonHandshakeFailed,
			fmt.Sprintf("the handshake with %s failed: %v", res.server, res.err)}, nil
	}
	_, version := serverIdentity(res.userAgent)
	if version == "" {
		return verdict{metav1.ConditionFalse, v1alpha1.HarnessReasonHandshakeFailed,
			fmt.Sprintf("the version of the app-server in %s could not be determined from its userAgent", digest)}, nil
	}
	artifact := &v1alpha1.RuntimeArtifact{ID: artifactPrefix + version, Fingerprint: digest}
	return verdict{metav1.ConditionTrue, v1alpha1.HarnessReasonArtifactVerified,
		fmt.Sprintf("every server runs %s (%s)", artifact.ID, digest)}, artifact
}

// unmanagedNamespace reports a harness outside the operator's harness
// namespaces: nothing is created for it and it never accepts turns.
func (r *Reconciler) unmanagedNamespace(_ context.Context, s *scope) error {
	h := s.harness
	msg := fmt.Sprintf("namespace %s is not one of the operator's harness namespaces (%s; manager flag --harness-namespaces, chart value harnessNamespaces): the operator cannot read Secrets here, so it serves no harness in it",
		h.Namespace, strings.Join(r.HarnessNamespaces, ", "))
	if len(r.HarnessNamespaces) == 0 {
		msg = fmt.Sprintf("no harness namespaces are configured (manager flag --harness-namespaces, chart value harnessNamespaces): the operator serves no harness, and none in namespace %s",
			h.Namespace)
	}
	notManaged := verdict{metav1.ConditionFalse, v1alpha1.HarnessReasonNamespaceNotManaged, msg}
	setCondition(h, v1alpha1.HarnessConditionWorkloadReady, notManaged)
	setCondition(h, v1alpha1.HarnessConditionReady, notManaged)
	return nil
}

// setReady sets Ready = WorkloadReady ∧ VersionSupported (∧ SandboxReady
// not False, when a sandbox is asked for).
func setReady(h *v1alpha1.AgentHarness) {
	wr := meta.FindStatusCondition(h.Status.Conditions, v1alpha1.HarnessConditionWorkloadReady)
	vs := meta.FindStatusCondition(h.Status.Conditions, v1alpha1.HarnessConditionVersionSupported)
	sb := meta.FindStatusCondition(h.Status.Conditions, v1alpha1.HarnessConditionSandboxReady)
	switch {
	case sb != nil && sb.Status == metav1.ConditionFalse:
		setCondition(h, v1alpha1.HarnessConditionReady, verdict{metav1.ConditionFalse,
			v1alpha1.HarnessReasonSandboxUnavailable, sb.Message})
	case wr.Status != metav1.ConditionTrue:
		setCondition(h, v1alpha1.HarnessConditionReady, verdict{metav1.ConditionFalse,
			v1alpha1.HarnessReasonWorkloadNotReady, wr.Message})
	case vs.Status != metav1.ConditionTrue:
		setCondition(h, v1alpha1.HarnessConditionReady, verdict{metav1.ConditionFalse,
			v1alpha1.HarnessReasonVersionNotSupported, vs.Message})
	default:
		setCondition(h, v1alpha1.HarnessConditionReady, verdict{metav1.ConditionTrue,
			v1alpha1.HarnessReasonReady, "the harness accepts turns: " + vs.Message})
	}
}

// serverIdentity is the userAgent (cut to the API's limit) and the version
// parsed from it (empty when it has none).
func serverIdentity(userAgent string) (ua, version string) {
	version, _ = appserver.ParseUserAgentVersion(userAgent)
	if len(version) > maxVersion {
		version = ""
	}
	return truncateRunes(userAgent, maxUserAgent), version
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// agreedVersion is the version every server that reports one agrees on.
func agreedVersion(servers []v1alpha1.ServerStatus) string {
	version := ""
	for _, s := range servers {
		switch {
		case s.Version == "":
		case version == "":
			version = s.Version
		case version != s.Version:
			return ""
		}
	}
	return version
}

// writeStatus applies the status once, only when it changed, setting
// observedGeneration (the one place it is set); the StatusWriter records an
// Event for every condition whose status or reason changed.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	h := s.harness
	h.Status.ObservedGeneration = h.Generation
	// The conditions phase publishes the adapter's table with the model
	// catalog its handshakes read (judgedCapabilities), which the dispatcher
	// resolves for each decision's model. A reconcile that never judged the
	// servers (another mode, or a phase failed first) keeps what was
	// published, or publishes the table with the catalog unknown: an unready
	// harness still tells what it would offer.
	if len(h.Status.Capabilities) == 0 {
		h.Status.Capabilities = wire.AdapterCapabilities(h.Spec.Adapter)
	}
	if equality.Semantic.DeepEqual(*s.before, h.Status) {
		return nil
	}
	if err := r.status.Apply(ctx, h, &h.Status, s.before.Conditions, h.Status.Conditions); err != nil {
		return err
	}
	if ready := meta.FindStatusCondition(h.Status.Conditions, v1alpha1.HarnessConditionReady); ready != nil {
		ctrl.LoggerFrom(ctx).Info("status applied", "ready", ready.Status, "reason", ready.Reason, "message", ready.Message)
	}
	return nil
}

// warningCondition: a condition that is False, or a failed handshake.
func warningCondition(c metav1.Condition) bool {
	return c.Status == metav1.ConditionFalse || c.Reason == string(v1alpha1.HarnessReasonHandshakeFailed)
}

// quietFirstReasons are first observations not worth an Event.
var quietFirstReasons = []string{
	string(v1alpha1.HarnessReasonHandshakePending),
	string(v1alpha1.HarnessReasonNoReadyPods),
	string(v1alpha1.HarnessReasonWorkloadNotReady),
	string(v1alpha1.HarnessReasonVersionNotSupported),
	string(v1alpha1.HarnessReasonExternalServer),
}

// quietFirst: a first observation that is True is worth an Event, one that
// is only pending is not.
func quietFirst(c metav1.Condition) bool {
	return c.Status != metav1.ConditionTrue && slices.Contains(quietFirstReasons, c.Reason)
}
