// Package webhook holds the admission webhooks of the three kinds: defaulters
// that normalize and fill in what the API documents, and validators for the
// rules that need other objects (single-object rules are CEL in the CRDs).
// Refusals are field.ErrorLists in one Invalid error, so users see every
// problem with its path at once; accepted-but-risky input gets warnings.
package webhook

import (
	"context"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/platform/access"
)

// Names of the webhook configurations the operator's certificates are injected into.
const (
	ValidatingConfigurationName = "harness-operator-validating"
	MutatingConfigurationName   = "harness-operator-mutating"
)

// kinds lists the kinds with webhooks: resource (plural) and kind.
var kinds = []struct{ resource, kind string }{
	{"agentharnesses", "AgentHarness"},
	{"runtimepolicies", "RuntimePolicy"},
	{"agentsessions", "AgentSession"},
}

// path is the webhook path of a kind, as controller-runtime's builder names it.
func path(op, kind string) string {
	gv := v1alpha1.GroupVersion
	return fmt.Sprintf("/%s-%s-%s-%s", op, strings.ReplaceAll(gv.Group, ".", "-"), gv.Version, strings.ToLower(kind))
}

// Setup registers the defaulting and validating webhooks of the three kinds
// with the manager's webhook server. Validators read the manager's cache,
// with what this server admitted and the cache does not show yet on top
// (admitted.go): no API request but the requester's SubjectAccessReviews,
// except RuntimePolicies, which their own validator lists live; the
// controllers re-check what a race between replicas still lets through.
// AgentHarnesses are admitted only in
// o.HarnessNamespaces, and only from a requester who holds the rights the
// harness makes the operator use (requester.go).
func Setup(mgr ctrl.Manager, o InstallOptions) error {
	if err := indexHarnessIDs(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := indexPolicyRuntimeIDs(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	c := newReaders(mgr.GetClient(), mgr.GetAPIReader())
	if err := c.follow(context.Background(), mgr.GetCache()); err != nil {
		return err
	}
	hv := &harnessValidator{reader: c, namespaces: o.HarnessNamespaces,
		access:                newSharedReviews(access.NewChecker(mgr.GetClient()), o.AccessReviewCacheTTL),
		allowInsecureLoopback: o.AllowInsecureLoopbackExternal}
	scheme := mgr.GetScheme()
	srv := mgr.GetWebhookServer()
	srv.Register(path("mutate", "AgentHarness"), &admission.Webhook{Handler: defaulting(scheme, (&harnessDefaulter{}).Default)})
	srv.Register(path("mutate", "RuntimePolicy"), &admission.Webhook{Handler: defaulting(scheme, defaultPolicy)})
	srv.Register(path("mutate", "AgentSession"), &admission.Webhook{Handler: defaulting(scheme, defaultSession)})
	if err := ctrl.NewWebhookManagedBy(mgr, &v1alpha1.AgentHarness{}).WithValidator(hv).Complete(); err != nil {
		return fmt.Errorf("register AgentHarness validator: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &v1alpha1.RuntimePolicy{}).WithValidator(&policyValidator{reader: c}).Complete(); err != nil {
		return fmt.Errorf("register RuntimePolicy validator: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &v1alpha1.AgentSession{}).WithValidator(&sessionValidator{reader: c}).Complete(); err != nil {
		return fmt.Errorf("register AgentSession validator: %w", err)
	}
	return nil
}

// SpecChangedCondition is the matchCondition every webhook carries: the API
// server calls it for a create, and for an update only when spec changed.
// Every check and every default of the three kinds reads spec alone (and
// metadata that cannot change: name, namespace, creationTimestamp), so an
// update of labels, annotations or finalizers — the dispatcher's finalizer
// on each new session, the controllers' own — has nothing for the webhooks
// to judge. The status subresource is not matched at all. An object without
// spec is sent to the webhooks, as before.
var SpecChangedCondition = admissionregistrationv1.MatchCondition{
	Name:       "spec-changed",
	Expression: "request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec",
}

// Configurations returns the webhook configurations for the three kinds;
// clientConfig says how the API server reaches a path (a Service in a cluster,
// a URL for a manager running outside it). The caBundle is left empty: the
// certificate rotator (or cert-manager) injects it.
func Configurations(clientConfig func(path string) admissionregistrationv1.WebhookClientConfig) (*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfiguration) {
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ValidatingConfigurationName}}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: MutatingConfigurationName}}
	for _, k := range kinds {
		rules := []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{v1alpha1.GroupVersion.Group},
				APIVersions: []string{v1alpha1.GroupVersion.Version},
				Resources:   []string{k.resource},
			},
		}}
		name := k.resource + "." + v1alpha1.GroupVersion.Group
		common := func(op string) (admissionregistrationv1.WebhookClientConfig, *admissionregistrationv1.FailurePolicyType, *admissionregistrationv1.SideEffectClass) {
			return clientConfig(path(op, k.kind)), ptr.To(admissionregistrationv1.Fail), ptr.To(admissionregistrationv1.SideEffectClassNone)
		}
		cc, fail, none := common("validate")
		validating.Webhooks = append(validating.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: "validate." + name, ClientConfig: cc, Rules: rules, FailurePolicy: fail, SideEffects: none,
			AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](5),
			MatchPolicy:     ptr.To(admissionregistrationv1.Equivalent),
			MatchConditions: []admissionregistrationv1.MatchCondition{SpecChangedCondition},
		})
		cc, fail, none = common("mutate")
		mutating.Webhooks = append(mutating.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name: "mutate." + name, ClientConfig: cc, Rules: rules, FailurePolicy: fail, SideEffects: none,
			AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](5),
			MatchPolicy:        ptr.To(admissionregistrationv1.Equivalent),
			ReinvocationPolicy: ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
			MatchConditions:    []admissionregistrationv1.MatchCondition{SpecChangedCondition},
		})
	}
	return validating, mutating
}

// URLClientConfig reaches the webhook server at base (https://host:port), for a
// manager that runs outside the cluster (`make run`, tests).
func URLClientConfig(base string) func(path string) admissionregistrationv1.WebhookClientConfig {
	return func(p string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(strings.TrimSuffix(base, "/") + p)}
	}
}

// ServiceClientConfig reaches the webhook server through a Service in the cluster.
func ServiceClientConfig(namespace, name string, port int32) func(path string) admissionregistrationv1.WebhookClientConfig {
	return func(p string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: namespace, Name: name, Path: ptr.To(p), Port: ptr.To(port),
		}}
	}
}

// The validators read the objects they compare against; certificate rotation
// injects the CA into the webhook configurations and keeps its Secret in the
// operator's namespace (a Role there, not cluster-wide Secret access).
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentharnesses;runtimepolicies;agentsessions,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",namespace=harness-operator-system,resources=secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=cert-manager.io,namespace=harness-operator-system,resources=certificates;issuers,verbs=get;list;watch;create;patch
