package agentharness

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
	"github.com/openclaw/harness-operator/internal/harness/objects"
)

// Settings of the server pods that are not in the API.
const (
	// HomeMountPath is the native home (CODEX_HOME and HOME) of the app-server
	// container: an emptyDir, or the replica's PersistentVolumeClaim when
	// spec.appServer.storage is set. Sessions get working directories below it.
	HomeMountPath = "/var/lib/codex"
	// TerminationGracePeriodSeconds lets running turns of a draining server
	// pod finish (the dispatcher sends no new turn to it: docs/dispatcher-api.md,
	// "Session identity, capacity and shutdown").
	TerminationGracePeriodSeconds = 600
	// podUser is the non-root uid/gid/fsGroup the app-server runs as.
	podUser = 65532

	homeVolume = "codex-home"
	tmpVolume  = "tmp"
	// credentialVolumePrefix names the Secret volume of a HomeFile credential.
	credentialVolumePrefix = "credential-"

	// EnvPort is set on the app-server container so that custom
	// spec.appServer.args can refer to it as $(HARNESS_APP_SERVER_PORT)
	// (and to the auth variables of wsauth.go).
	EnvPort = "HARNESS_APP_SERVER_PORT"
)

// workload is everything the managed objects are built from.
type workload struct {
	harness     *v1alpha1.AgentHarness
	port        int32
	opNamespace string   // namespace of the operator's manager and dispatcher
	credsHash   string   // v1alpha1.AnnotationCredentialsHash (credentials.go)
	egressCIDRs []string // Reconciler.AppServerEgressCIDRs (networkpolicy.go)
	// gateway is set for a harness with spec.modelGateway (modelgateway.go).
	gateway *gatewayRender
}

func (w workload) ownerRef() *metav1ac.OwnerReferenceApplyConfiguration {
	h := w.harness
	return metav1ac.OwnerReference().
		WithAPIVersion(v1alpha1.GroupVersion.String()).
		WithKind("AgentHarness").
		WithName(h.Name).
		WithUID(h.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

func (w workload) selector() *metav1ac.LabelSelectorApplyConfiguration {
	return metav1ac.LabelSelector().WithMatchLabels(objects.SelectorLabels(w.harness))
}

// tokenSecret is the operator-generated shared secret of the pods'
// signed-bearer auth (wsauth.go).
func (w workload) tokenSecret(token string) *corev1ac.SecretApplyConfiguration {
	h := w.harness
	return corev1ac.Secret(objects.TokenSecretName(h), h.Namespace).
		WithLabels(objects.ObjectLabels(h)).
		WithOwnerReferences(w.ownerRef()).
		WithType(corev1.SecretTypeOpaque).
		WithData(w.tokenSecretData(token))
}

// tokenSecretData is the token, and the model gateway's CA when the pods
// trust one (modelgateway.go).
func (w workload) tokenSecretData(token string) map[string][]byte {
	data := map[string][]byte{objects.TokenSecretKey: []byte(token)}
	if w.gateway != nil && len(w.gateway.ca) > 0 {
		data[tokenSecretCAKey] = w.gateway.ca
	}
	return data
}

// service is the headless Service that gives each server pod a stable DNS
// name. Not-ready addresses are published so that a client can reach a
// draining pod to reattach to a running turn.
func (w workload) service() *corev1ac.ServiceApplyConfiguration {
	h := w.harness
	return corev1ac.Service(objects.WorkloadName(h), h.Namespace).
		WithLabels(objects.ObjectLabels(h)).
		WithOwnerReferences(w.ownerRef()).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(objects.SelectorLabels(h)).
			WithPorts(corev1ac.ServicePort().
				WithName(objects.PortName).
				WithProtocol(corev1.ProtocolTCP).
				WithPort(w.port).
				WithTargetPort(intstr.FromString(objects.PortName))))
}

// podDisruptionBudget lets voluntary disruptions take one server pod at a
// time; unhealthy pods may always be evicted, so a broken pod never blocks a
// node drain.
func (w workload) podDisruptionBudget() *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	h := w.harness
	return policyv1ac.PodDisruptionBudget(objects.WorkloadName(h), h.Namespace).
		WithLabels(objects.ObjectLabels(h)).
		WithOwnerReferences(w.ownerRef()).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithSelector(w.selector()).
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithUnhealthyPodEvictionPolicy(policyv1.AlwaysAllow))
}

// statefulSet is the app-server workload. The pod template carries the
// config hash of everything that shapes a pod, so a change rolls the pods.
func (w workload) statefulSet() (*appsv1ac.StatefulSetApplyConfiguration, error) {
	h := w.harness
	spec := h.Spec.AppServer
	tmpl, err := w.podTemplate()
	if err != nil {
		return nil, err
	}
	replicas := int32(1)
	if spec.Replicas != nil {
		replicas = *spec.Replicas
	}
	stsSpec := appsv1ac.StatefulSetSpec().
		WithReplicas(replicas).
		WithServiceName(objects.WorkloadName(h)).
		WithSelector(w.selector()).
		WithPodManagementPolicy(appsv1.ParallelPodManagement).
		WithUpdateStrategy(appsv1ac.StatefulSetUpdateStrategy().WithType(appsv1.RollingUpdateStatefulSetStrategyType)).
		WithPersistentVolumeClaimRetentionPolicy(appsv1ac.StatefulSetPersistentVolumeClaimRetentionPolicy().
			WithWhenScaled(appsv1.RetainPersistentVolumeClaimRetentionPolicyType).
			WithWhenDeleted(appsv1.DeletePersistentVolumeClaimRetentionPolicyType)).
		WithTemplate(tmpl)
	if spec.Storage != nil {
		stsSpec.WithVolumeClaimTemplates(w.homeClaimTemplate())
	}
	return appsv1ac.StatefulSet(objects.WorkloadName(h), h.Namespace).
		WithLabels(objects.ObjectLabels(h)).
		WithOwnerReferences(w.ownerRef()).
		WithSpec(stsSpec), nil
}

func (w workload) homeClaimTemplate() *corev1ac.PersistentVolumeClaimApplyConfiguration {
	st := w.harness.Spec.AppServer.Storage
	pvc := corev1ac.PersistentVolumeClaimSpec().
		WithAccessModes(corev1.ReadWriteOnce).
		WithResources(corev1ac.VolumeResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceStorage: st.Size}))
	if st.StorageClassName != nil {
		pvc.WithStorageClassName(*st.StorageClassName)
	}
	return corev1ac.PersistentVolumeClaim(homeVolume, "").
		WithLabels(objects.SelectorLabels(w.harness)).
		WithSpec(pvc)
}

// defaultCommand and defaultArgs run the WebSocket listener with signed
// bearer token auth (wsauth.go, docs/codex-app-server.md), keep the
// credentials out of the tools' environment (secretEnvNames), with Codex's
// sandbox the tools out of the shared /tmp (sandboxArgs), and with
// spec.modelGateway make the gateway the model provider (modelgateway.go).
func (w workload) defaultCommand() []string { return []string{"codex"} }

func (w workload) defaultArgs() []string {
	args := append([]string{
		"app-server",
		"--listen", "ws://0.0.0.0:" + strconv.Itoa(int(w.port)),
	}, wsAuthArgs()...)
	args = append(args, sandboxArgs(w.harness)...)
	args = append(args, codexconfig.ToolEnvironmentArgs(secretEnvNames(w.harness))...)
	return append(args, w.gatewayArgs()...)
}

func (w workload) podTemplate() (*corev1ac.PodTemplateSpecApplyConfiguration, error) {
	h := w.harness
	spec := h.Spec.AppServer
	if h.Spec.ModelGateway != nil && w.gateway == nil {
		// checkModelGateway stops the reconcile before this: a pod without
		// the gateway's provider would have none.
		return nil, fmt.Errorf("spec.modelGateway is set and the manager knows no model gateway (%s)", flagModelGatewayURL)
	}

	command, args := w.defaultCommand(), w.defaultArgs()
	if len(spec.Command) > 0 {
		command = spec.Command
	}
	if len(spec.Args) > 0 {
		args = spec.Args
	}

	env, err := w.env()
	if err != nil {
		return nil, err
	}
	mounts := []*corev1ac.VolumeMountApplyConfiguration{
		corev1ac.VolumeMount().WithName(homeVolume).WithMountPath(HomeMountPath),
		corev1ac.VolumeMount().WithName(tmpVolume).WithMountPath("/tmp"),
	}
	wsVolume, wsMount := w.wsSecretMount()
	mounts = append(mounts, wsMount)
	volumes := []*corev1ac.VolumeApplyConfiguration{wsVolume}
	if spec.Storage == nil {
		volumes = append(volumes, corev1ac.Volume().WithName(homeVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	}
	volumes = append(volumes, corev1ac.Volume().WithName(tmpVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	if caVolume, caMount := w.gatewayCAMount(); caVolume != nil {
		volumes, mounts = append(volumes, caVolume), append(mounts, caMount)
	}
	for i, c := range spec.Credentials {
		if c.Mount != v1alpha1.CredentialMountHomeFile {
			continue
		}
		name := credentialVolumePrefix + strconv.Itoa(i)
		volumes = append(volumes, corev1ac.Volume().WithName(name).
			WithSecret(corev1ac.SecretVolumeSource().
				WithSecretName(c.SecretKeyRef.Name).
				WithDefaultMode(0o440).
				WithItems(corev1ac.KeyToPath().WithKey(c.SecretKeyRef.Key).WithPath(c.Name))))
		mounts = append(mounts, corev1ac.VolumeMount().
			WithName(name).
			WithMountPath(HomeMountPath+"/"+c.Name).
			WithSubPath(c.Name).
			WithReadOnly(true))
	}

	pull := cmp.Or(spec.ImagePullPolicy, corev1.PullIfNotPresent)
	security := corev1ac.SecurityContext().
		WithRunAsNonRoot(true).
		WithAllowPrivilegeEscalation(false).
		WithReadOnlyRootFilesystem(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
		WithSeccompProfile(seccompProfile(h))
	container := corev1ac.Container().
		WithName(objects.ContainerName).
		WithImage(spec.Image).
		WithImagePullPolicy(pull).
		WithCommand(command...).
		WithArgs(args...).
		WithEnv(env...).
		WithPorts(corev1ac.ContainerPort().WithName(objects.PortName).WithContainerPort(w.port).WithProtocol(corev1.ProtocolTCP)).
		WithVolumeMounts(mounts...).
		WithStartupProbe(httpProbe("/healthz", 1, 60)).
		WithReadinessProbe(httpProbe("/readyz", 5, 3)).
		WithLivenessProbe(httpProbe("/healthz", 10, 3)).
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		WithSecurityContext(security)
	if spec.Resources != nil {
		var res corev1ac.ResourceRequirementsApplyConfiguration
		if err := convert(spec.Resources, &res); err != nil {
			return nil, fmt.Errorf("convert resources: %w", err)
		}
		container.WithResources(&res)
	}

	podSpec := corev1ac.PodSpec().
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithTerminationGracePeriodSeconds(TerminationGracePeriodSeconds).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(podUser).
			WithRunAsGroup(podUser).
			WithFSGroup(podUser).
			WithFSGroupChangePolicy(corev1.FSGroupChangeOnRootMismatch).
			WithSeccompProfile(seccompProfile(h))).
		WithContainers(container).
		WithVolumes(volumes...)
	if sandboxRequested(h) {
		check, volume := w.sandboxCheck(command[0], pull, security)
		podSpec.WithInitContainers(check).WithVolumes(volume)
	}

	tmpl := corev1ac.PodTemplateSpec().
		WithLabels(objects.ObjectLabels(h)).
		WithAnnotations(map[string]string{v1alpha1.AnnotationHarness: h.Name}).
		WithSpec(podSpec)
	hash, err := configHash(tmpl)
	if err != nil {
		return nil, err
	}
	tmpl.WithAnnotations(map[string]string{v1alpha1.AnnotationConfigHash: hash, v1alpha1.AnnotationCredentialsHash: w.credsHash})
	return tmpl, nil
}

// env is the operator's variables, then spec.appServer.env, then the Env
// credentials; a later entry replaces an earlier one of the same name.
func (w workload) env() ([]*corev1ac.EnvVarApplyConfiguration, error) {
	spec := w.harness.Spec.AppServer
	var out []*corev1ac.EnvVarApplyConfiguration
	index := map[string]int{}
	add := func(e *corev1ac.EnvVarApplyConfiguration) {
		if i, ok := index[*e.Name]; ok {
			out[i] = e
			return
		}
		index[*e.Name] = len(out)
		out = append(out, e)
	}
	add(corev1ac.EnvVar().WithName("CODEX_HOME").WithValue(HomeMountPath))
	add(corev1ac.EnvVar().WithName("HOME").WithValue(HomeMountPath))
	add(corev1ac.EnvVar().WithName(EnvPort).WithValue(strconv.Itoa(int(w.port))))
	for _, e := range wsAuthEnv() {
		add(e)
	}
	for _, e := range w.gatewayEnv() {
		add(e)
	}
	for i := range spec.Env {
		var e corev1ac.EnvVarApplyConfiguration
		if err := convert(&spec.Env[i], &e); err != nil {
			return nil, fmt.Errorf("convert env %q: %w", spec.Env[i].Name, err)
		}
		add(&e)
	}
	for _, c := range spec.Credentials {
		if c.Mount != v1alpha1.CredentialMountEnv {
			continue
		}
		add(corev1ac.EnvVar().WithName(c.Name).WithValueFrom(corev1ac.EnvVarSource().
			WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(c.SecretKeyRef.Name).WithKey(c.SecretKeyRef.Key))))
	}
	return out, nil
}

func httpProbe(path string, period, failures int32) *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().
		WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromString(objects.PortName))).
		WithPeriodSeconds(period).
		WithTimeoutSeconds(2).
		WithFailureThreshold(failures)
}

// convert copies an API value into its apply configuration; both share the
// JSON shape.
func convert(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// configHash is the SHA-256 of the pod template (without the hash itself).
func configHash(tmpl *corev1ac.PodTemplateSpecApplyConfiguration) (string, error) {
	b, err := json.Marshal(tmpl)
	if err != nil {
		return "", fmt.Errorf("hash pod template: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), nil
}

// claimTemplatesChanged reports whether the existing StatefulSet's
// volumeClaimTemplates (immutable) differ from what the spec asks for.
func claimTemplatesChanged(sts *appsv1.StatefulSet, storage *v1alpha1.AppServerStorage) bool {
	vcts := sts.Spec.VolumeClaimTemplates
	if storage == nil {
		return len(vcts) != 0
	}
	if len(vcts) != 1 || vcts[0].Name != homeVolume {
		return true
	}
	got := vcts[0].Spec
	req, ok := got.Resources.Requests[corev1.ResourceStorage]
	if !ok || req.Cmp(storage.Size) != 0 {
		return true
	}
	return !equalStringPtr(got.StorageClassName, storage.StorageClassName)
}

func equalStringPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
