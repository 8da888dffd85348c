package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/platform/proxyenv"
)

// kubeFlags are the kubeconfig flags of the commands that read the cluster.
type kubeFlags struct {
	kubeconfig string
	context    string
	namespace  string
}

func (k *kubeFlags) add(f *pflag.FlagSet) {
	f.StringVarP(&k.namespace, "namespace", "n", "", "Namespace of the AgentSession (default: the kubeconfig's, or default).")
	f.StringVar(&k.kubeconfig, "kubeconfig", "", "Path of the kubeconfig.")
	f.StringVar(&k.context, "context", "", "kubeconfig context.")
}

// kubeClient is a client of the kubeconfig's cluster, with the namespace the
// command works in.
type kubeClient struct {
	cfg       *rest.Config
	c         client.Client
	namespace string
}

func (k *kubeFlags) client() (*kubeClient, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	if cfg.Proxy == nil {
		// The environment's proxy, as kubectl uses it, but never for an
		// in-cluster or loopback API server (a cluster's proxy-url is the
		// kubeconfig's own choice and stays).
		cfg.Proxy = proxyenv.FromEnvironment(os.Getenv)
	}
	ns := k.namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil {
			return nil, fmt.Errorf("kubeconfig namespace: %w", err)
		}
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	return &kubeClient{cfg: cfg, c: c, namespace: ns}, nil
}

// session reads an AgentSession; an unknown one is bad input (exit 2).
func (kc *kubeClient) session(ctx context.Context, name string) (*v1alpha1.AgentSession, error) {
	s := &v1alpha1.AgentSession{}
	if err := kc.c.Get(ctx, client.ObjectKey{Namespace: kc.namespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, badInput(fmt.Errorf("AgentSession %s/%s not found (kubectl harness session create makes one)", kc.namespace, name))
		}
		return nil, fmt.Errorf("get AgentSession %s/%s: %w", kc.namespace, name, err)
	}
	return s, nil
}
