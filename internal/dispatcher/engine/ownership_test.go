package engine

import (
	"errors"
	"net"
	"strconv"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// A managed harness in envtest: the real agentharness controller creates
// the StatefulSet and token Secret; the spec creates the pods the
// StatefulSet controller would (envtest runs none) with a real Codex behind
// pod 0. A rogue pod carries the labels, annotation and name of a server pod
// but is not controlled by the harness's StatefulSet; a second one is
// controlled by it but its ordinal is not below replicas. Both point at a
// listener that counts connections: the capability token and turns must
// never reach it.
var _ = Describe("Server pods are the harness's own", Ordered, func() {
	const (
		ownHost   = "127.0.0.21"
		rogueHost = "127.0.0.22"
		imageID   = "registry.example/codex@sha256:0000000000000000000000000000000000000000000000000000000000000021"
	)
	var (
		ns      string
		h       *v1alpha1.AgentHarness
		sts     *appsv1.StatefulSet
		dialed  atomic.Int32
		rogueLn net.Listener
	)

	BeforeAll(func() {
		ns = newNamespace()
		h = &v1alpha1.AgentHarness{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "codex"},
			Spec: v1alpha1.AgentHarnessSpec{
				HarnessID: "codex", Label: "Codex", Adapter: v1alpha1.AdapterCodexAppServer,
				AppServer: &v1alpha1.AppServerWorkload{Image: imageID, Replicas: ptr.To[int32](2)},
			},
		}
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		sts = &appsv1.StatefulSet{}
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: objects.WorkloadName(h)}, sts)
		}).Should(Succeed())
		secret := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: objects.TokenSecretName(h)}, secret)).To(Succeed())

		srv, err := codextest.StartErr(suiteT, codextest.Options{
			ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket, ListenHost: ownHost, Port: int(appPort),
			// As the operator's pods run: signed-bearer auth with the
			// token Secret as the shared secret.
			WSSharedSecret: string(secret.Data[objects.TokenSecretKey]),
			WSIssuer:       appserver.SignedBearerIssuer, WSAudience: appserver.SignedBearerAudience,
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Kill)

		rogueLn, err = net.Listen("tcp", net.JoinHostPort(rogueHost, strconv.Itoa(int(appPort))))
		Expect(err).NotTo(HaveOccurred())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				c, err := rogueLn.Accept()
				if errors.Is(err, net.ErrClosed) {
					return
				}
				if err == nil {
					dialed.Add(1)
					_ = c.Close()
				}
			}
		}()
		DeferCleanup(func() {
			_ = rogueLn.Close()
			<-done
		})

		own := testutil.ServerPod(sts, 0)
		Expect(k8sClient.Create(ctx, own)).To(Succeed())
		Expect(testutil.SetPodStatus(ctx, k8sClient, own, ownHost, imageID, true)).To(Succeed())
		waitHarness(h, v1alpha1.HarnessConditionReady, metav1.ConditionTrue)
	})

	// place runs one turn of a new session and returns the pod it was bound to.
	place := func(name string) string {
		GinkgoHelper()
		newSession(ns, name, testModel)
		stub.When(name+": hello", stubmodel.Text("hi from "+name))
		evs, err := turn(ns, name, textReq("run-"+name, name+": hello"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).AssistantTexts).To(Equal([]string{"hi from " + name}))
		return getSession(ns, name).Status.NativeBinding.Pod
	}

	It("never sends a turn to a Ready pod with a server pod's labels, annotation and name that its StatefulSet does not control", func() {
		Expect(place("first")).To(Equal(sts.Name+"-0"), "control: the StatefulSet's own pod serves")

		rogue := testutil.ServerPod(sts, 1)
		rogue.OwnerReferences = nil
		Expect(k8sClient.Create(ctx, rogue)).To(Succeed())
		Expect(testutil.SetPodStatus(ctx, k8sClient, rogue, rogueHost, imageID, true)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, rogue))).To(Succeed()) })

		// The rogue pod holds no session and sorts after the loaded pod 0:
		// were it trusted, least-loaded placement would choose it.
		Expect(place("second")).To(Equal(sts.Name+"-0"), "the rogue pod-1 is not a server")
		Expect(dialed.Load()).To(BeZero(), "the rogue pod was dialed (and sent the capability token)")
	})

	It("never sends a turn to a pod of the StatefulSet whose ordinal is not below spec.appServer.replicas", func() {
		beyond := testutil.ServerPod(sts, 2)
		Expect(k8sClient.Create(ctx, beyond)).To(Succeed())
		Expect(testutil.SetPodStatus(ctx, k8sClient, beyond, rogueHost, imageID, true)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, beyond))).To(Succeed()) })

		Expect(place("third")).To(Equal(sts.Name+"-0"), "pod-2 of a 2-replica harness is not a server")
		Expect(dialed.Load()).To(BeZero(), "the pod beyond replicas was dialed")
	})

})
