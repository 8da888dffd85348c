package webhook_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// warningRecorder collects the admission warnings the API server relays.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

// clientWithWarnings returns a client whose requests' warnings are recorded.
func clientWithWarnings() (client.Client, *warningRecorder) {
	GinkgoHelper()
	rec := &warningRecorder{}
	c := rest.CopyConfig(cfg)
	c.WarningHandler = rec
	cl, err := client.New(c, client.Options{Scheme: k8sClient.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return cl, rec
}

// create creates obj and returns the warnings of the request.
func create(obj client.Object) ([]string, error) {
	GinkgoHelper()
	cl, rec := clientWithWarnings()
	err := cl.Create(ctx, obj)
	return rec.warnings, err
}

// update updates obj and returns the warnings of the request.
func update(obj client.Object) ([]string, error) {
	GinkgoHelper()
	cl, rec := clientWithWarnings()
	err := cl.Update(ctx, obj)
	return rec.warnings, err
}

// expectFieldError asserts err is Invalid with a cause on field containing want.
func expectFieldError(err error, field, want string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "the API server accepted an invalid object")
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
	var causes []string
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		causes = append(causes, fmt.Sprintf("%s: %s", c.Field, c.Message))
		if c.Field == field && strings.Contains(c.Message, want) {
			return
		}
	}
	Fail(fmt.Sprintf("no cause on field %q containing %q; causes:\n  %s", field, want, strings.Join(causes, "\n  ")))
}

// expectWarning asserts one warning contains want.
func expectWarning(warnings []string, want string) {
	GinkgoHelper()
	for _, w := range warnings {
		if strings.Contains(w, want) {
			return
		}
	}
	Fail(fmt.Sprintf("no warning containing %q; warnings:\n  %s", want, strings.Join(warnings, "\n  ")))
}

// namespacesUsed counts the harness namespaces newNamespace handed out.
var namespacesUsed atomic.Int32

// newNamespace creates the next unused namespace of the suite's harness
// namespaces, with labels.
func newNamespace(labels map[string]string) string {
	GinkgoHelper()
	i := int(namespacesUsed.Add(1)) - 1
	Expect(i).To(BeNumerically("<", len(harnessNamespaces)), "the suite ran out of harness namespaces; list more in suite_test.go")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: harnessNamespaces[i], Labels: labels}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// newOutsideNamespace creates a namespace that is not a harness namespace.
func newOutsideNamespace() string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "outside-" + rand.String(8)}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// accepting labels a namespace to consent to the harnesses of the namespaces.
func accepting(labels map[string]string, harnessNamespaces ...string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		out[k] = v
	}
	for _, n := range harnessNamespaces {
		out[v1alpha1.AcceptHarnessesLabel(n)] = v1alpha1.AcceptHarnessesLabelValue
	}
	return out
}

func externalHarness(namespace, name, id string) *v1alpha1.AgentHarness {
	return &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.AgentHarnessSpec{
			HarnessID: id,
			Adapter:   v1alpha1.AdapterCodexAppServer,
			External: &v1alpha1.ExternalServer{
				URL:            "wss://127.0.0.1:4500",
				TokenSecretRef: v1alpha1.SecretKeyReference{Name: "codex-token", Key: "token"},
			},
		},
	}
}
