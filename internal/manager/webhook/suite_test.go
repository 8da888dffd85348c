package webhook_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/openclaw/harness-operator/internal/manager/webhook"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// The suite runs the real webhook server behind real Validating- and
// MutatingWebhookConfigurations on a real kube-apiserver, with self-managed
// certificates. They live an hour and are replaced 30 minutes before they
// expire, so no spec depends on a rotation happening (or not) while it runs,
// however slow the machine; the rotation spec brings the certificate near
// its expiry itself (rotation_test.go).
var (
	env         *testutil.Env
	cfg         *rest.Config
	k8sClient   client.Client
	ctx         context.Context
	cancel      context.CancelFunc
	webhookAddr string
	certDir     string
)

// harnessNamespaces are the suite's harness namespaces (the manager's
// --harness-namespaces); newNamespace hands them out one per call.
var harnessNamespaces = func() []string {
	out := make([]string, 200)
	for i := range out {
		out[i] = fmt.Sprintf("harness-%03d", i)
	}
	return out
}()

const (
	certNamespace = "harness-operator-system"
	certSecret    = "webhook-tls"
	// certValidity and certLookahead: how long the suite's serving
	// certificates live, and how long before expiry they are replaced.
	certValidity, certLookahead = time.Hour, 30 * time.Minute
)

func TestWebhooks(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Admission webhooks suite (envtest)")
}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())

	var err error
	env, err = testutil.StartEnv()
	Expect(err).NotTo(HaveOccurred())
	cfg, k8sClient = env.Config, env.Client
	Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: certNamespace}})).To(Succeed())

	port := freePort()
	webhookAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	validating, mutating := webhook.Configurations(webhook.URLClientConfig(fmt.Sprintf("https://localhost:%d", port)))
	Expect(k8sClient.Create(ctx, validating)).To(Succeed())
	Expect(k8sClient.Create(ctx, mutating)).To(Succeed())

	certDir = GinkgoT().TempDir()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
	})
	Expect(err).NotTo(HaveOccurred())
	ready, err := webhook.Install(mgr, webhook.InstallOptions{Mode: webhook.ModeSelfManaged, HarnessNamespaces: harnessNamespaces, Certs: webhook.CertOptions{
		SecretNamespace: certNamespace, SecretName: certSecret, CertDir: certDir, DNSName: "localhost",
		ServerCertValidity: certValidity, Lookahead: certLookahead, RotationCheckInterval: 2 * time.Second,
		SyncCertDirFromSecret: true,
	}})
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	Eventually(func() error { return ready(nil) }, 60*time.Second, 250*time.Millisecond).Should(Succeed())
	// The webhook server answers TLS with the rotator's certificate.
	Eventually(func() error {
		conn, err := tls.Dial("tcp", webhookAddr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only checks that it serves
		if err != nil {
			return err
		}
		return conn.Close()
	}, 30*time.Second, 250*time.Millisecond).Should(Succeed())
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	Expect(env.Stop()).To(Succeed())
})

func freePort() int {
	port, err := testutil.FreePort()
	Expect(err).NotTo(HaveOccurred())
	return port
}
