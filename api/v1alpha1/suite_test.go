package v1alpha1_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/internal/testutil"
)

// These specs run against a real etcd and kube-apiserver with the generated
// CRDs installed: what they assert is what `kubectl apply` users get.
var (
	env       *testutil.Env
	cfg       *rest.Config
	k8sClient client.Client
	ctx       context.Context
	cancel    context.CancelFunc
)

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "API validation suite (envtest)")
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	env, err = testutil.StartEnv()
	Expect(err).NotTo(HaveOccurred())
	cfg, k8sClient = env.Config, env.Client
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	Expect(env.Stop()).To(Succeed())
})
