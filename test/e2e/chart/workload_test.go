//go:build e2e

package chart

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/openclaw/harness-operator/internal/testutil"
)

func deployment(t *testing.T, objs []object, name string) appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	find(t, objs, "Deployment", releaseNamespace, name).decode(t, &d)
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("Deployment %s has %d containers, want 1", name, len(d.Spec.Template.Spec.Containers))
	}
	return d
}

func service(t *testing.T, objs []object, name string) corev1.Service {
	t.Helper()
	var s corev1.Service
	find(t, objs, "Service", releaseNamespace, name).decode(t, &s)
	return s
}

// selects reports whether a Service selector selects pods with these labels.
func selects(selector, podLabels map[string]string) bool {
	return len(selector) > 0 && labels.SelectorFromSet(selector).Matches(labels.Set(podLabels))
}

func containerPort(c corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// envValue is the value of the container's environment variable name
// ("" when unset).
func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// argMap maps each --flag to its value ("" for a bare boolean flag).
func argMap(args []string) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		m[k] = v
	}
	return m
}

func volume(spec corev1.PodSpec, name string) *corev1.Volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}

// harnessNetworkPolicyPeer is the pod selector of the NetworkPolicy the
// agentharness controller puts in front of app-server pods
// (controllers/agentharness/workload.go, docs/controllers.md): the operator's
// pods must match it to reach app-server pods.
func harnessNetworkPolicyPeer(t *testing.T) labels.Selector {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{
		MatchLabels: map[string]string{"app.kubernetes.io/name": "harness-operator"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "app.kubernetes.io/component", Operator: metav1.LabelSelectorOpIn, Values: []string{"manager", "dispatcher"},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// TestPodLabels checks the manager and dispatcher pods (and their
// ServiceAccounts) carry the labels docs/controllers.md names, which the harness
// NetworkPolicies admit.
func TestPodLabels(t *testing.T) {
	peer := harnessNetworkPolicyPeer(t)
	for _, valueSet := range valueSets {
		t.Run(valueSet, func(t *testing.T) {
			objs := objectsOf(t, valueSet)
			for _, component := range []string{"manager", "dispatcher"} {
				d := deployment(t, objs, fullname+"-"+component)
				l := d.Spec.Template.Labels
				if l["app.kubernetes.io/name"] != "harness-operator" || l["app.kubernetes.io/component"] != component {
					t.Errorf("%s pod labels = %v, want app.kubernetes.io/name=harness-operator, app.kubernetes.io/component=%s", component, l, component)
				}
				if !peer.Matches(labels.Set(l)) {
					t.Errorf("%s pod labels %v do not match the harness NetworkPolicy peer %s", component, l, peer)
				}
				if d.Spec.Template.Spec.ServiceAccountName != fullname+"-"+component {
					t.Errorf("%s pod ServiceAccount = %q, want %q", component, d.Spec.Template.Spec.ServiceAccountName, fullname+"-"+component)
				}
				var sa corev1.ServiceAccount
				find(t, objs, "ServiceAccount", releaseNamespace, fullname+"-"+component).decode(t, &sa)
				if sa.Labels["app.kubernetes.io/name"] != "harness-operator" || sa.Labels["app.kubernetes.io/component"] != component {
					t.Errorf("ServiceAccount %s labels = %v", sa.Name, sa.Labels)
				}
				if env := envValueFrom(d.Spec.Template.Spec.Containers[0], "POD_NAMESPACE"); env != "metadata.namespace" {
					t.Errorf("%s POD_NAMESPACE comes from %q, want the downward API metadata.namespace", component, env)
				}
			}
		})
	}
}

func envValueFrom(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			return e.ValueFrom.FieldRef.FieldPath
		}
	}
	return ""
}

// TestRestrictedSecurityContexts checks every pod and container meets the
// restricted Pod Security Standard with a read-only root filesystem.
func TestRestrictedSecurityContexts(t *testing.T) {
	for _, valueSet := range valueSets {
		t.Run(valueSet, func(t *testing.T) {
			n := 0
			for _, o := range objectsOf(t, valueSet) {
				if o.Kind != "Deployment" {
					if slices.Contains([]string{"StatefulSet", "DaemonSet", "Job", "CronJob", "Pod"}, o.Kind) {
						t.Errorf("unexpected workload %s %s: extend this test", o.Kind, o.Name)
					}
					continue
				}
				n++
				var d appsv1.Deployment
				o.decode(t, &d)
				ps := d.Spec.Template.Spec.SecurityContext
				if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("%s: pod securityContext %+v is not restricted (runAsNonRoot, seccomp RuntimeDefault)", d.Name, ps)
				}
				if d.Spec.Template.Spec.HostNetwork || d.Spec.Template.Spec.HostPID || d.Spec.Template.Spec.HostIPC {
					t.Errorf("%s uses host namespaces", d.Name)
				}
				for _, v := range d.Spec.Template.Spec.Volumes {
					if v.HostPath != nil {
						t.Errorf("%s mounts hostPath %s", d.Name, v.Name)
					}
				}
				for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
					sc := c.SecurityContext
					switch {
					case sc == nil:
						t.Errorf("%s/%s has no securityContext", d.Name, c.Name)
					case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
						t.Errorf("%s/%s: allowPrivilegeEscalation is not false", d.Name, c.Name)
					case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
						t.Errorf("%s/%s: capabilities %+v, want drop [ALL] and no add", d.Name, c.Name, sc.Capabilities)
					case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
						t.Errorf("%s/%s: readOnlyRootFilesystem is not true", d.Name, c.Name)
					case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
						t.Errorf("%s/%s: runAsNonRoot is not true", d.Name, c.Name)
					case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
						t.Errorf("%s/%s: seccompProfile is not RuntimeDefault", d.Name, c.Name)
					case sc.Privileged != nil && *sc.Privileged:
						t.Errorf("%s/%s is privileged", d.Name, c.Name)
					}
					// The binaries write only to mounted volumes.
					if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" }) {
						t.Errorf("%s/%s has no writable /tmp", d.Name, c.Name)
					}
				}
			}
			want := 2
			if _, on := gatewaySets[valueSet]; on {
				want = 3
			}
			if n != want {
				t.Errorf("rendered %d Deployments, want %d (manager, dispatcher, model gateway when on)", n, want)
			}
		})
	}
}

// TestManager checks the manager's flags for each values set.
func TestManager(t *testing.T) {
	const certDir = "/var/run/harness-operator/webhook-certs"
	cases := []struct {
		valueSet string
		want     map[string]string // flag -> value; "-" means absent
		certVol  string            // "emptyDir", "secret" or "" (none)
	}{
		// No egress list: the manager's default policy for app-server pods.
		{"defaults", map[string]string{"--webhook-cert-mode": "self-managed", "--webhook-cert-dir-from-secret": "", "--webhook-cert-dir": certDir, "--harness-namespaces": "-", "--app-server-egress-cidrs": "-"}, "emptyDir"},
		{"harness-namespaces", map[string]string{"--harness-namespaces": "team-a,team-b"}, "emptyDir"},
		{"cert-manager", map[string]string{"--webhook-cert-mode": "cert-manager", "--webhook-cert-manager-issuer": "ClusterIssuer/corp-ca", "--webhook-cert-dir-from-secret": "-", "--webhook-cert-dir": certDir}, "secret"},
		// The manager serving the webhooks runs outside the cluster.
		{"webhook-url", map[string]string{"--webhook-cert-mode": "disabled", "--webhook-dns-name": "-", "--webhook-cert-dir-from-secret": "-"}, ""},
		{"opt-ins", map[string]string{"--zap-log-level": "debug", "--app-server-egress-cidrs": "203.0.113.0/24,2001:db8::/32"}, "emptyDir"},
	}
	for _, c := range cases {
		t.Run(c.valueSet, func(t *testing.T) {
			objs := objectsOf(t, c.valueSet)
			d := deployment(t, objs, fullname+"-manager")
			args := argMap(d.Spec.Template.Spec.Containers[0].Args)
			want := map[string]string{
				"--leader-elect":              "true",
				"--leader-election-namespace": releaseNamespace,
				"--operator-namespace":        releaseNamespace,
			}
			for k, v := range c.want {
				want[k] = v
			}
			for k, v := range want {
				got, ok := args[k]
				switch {
				case v == "-" && ok:
					t.Errorf("manager has %s=%s, want it absent", k, got)
				case v != "-" && (!ok || got != v):
					t.Errorf("manager %s = %q (set %v), want %q", k, got, ok, v)
				}
			}
			// manager.goMemLimit reaches the manager's Go runtime; unset, no
			// limit is rendered.
			wantLimit := map[string]string{"opt-ins": "48MiB"}[c.valueSet]
			if got := envValue(d.Spec.Template.Spec.Containers[0], "GOMEMLIMIT"); got != wantLimit {
				t.Errorf("manager GOMEMLIMIT = %q, want %q", got, wantLimit)
			}
			vol := volume(d.Spec.Template.Spec, "webhook-certs")
			switch {
			case c.certVol == "" && vol != nil:
				t.Errorf("webhook-certs volume rendered without in-cluster webhooks")
			case c.certVol == "emptyDir" && (vol == nil || vol.EmptyDir == nil):
				t.Errorf("webhook-certs volume = %+v, want an emptyDir (the manager copies the Secret into it)", vol)
			case c.certVol == "secret" && (vol == nil || vol.Secret == nil || vol.Secret.SecretName != webhookSecretName || vol.Secret.Optional == nil || !*vol.Secret.Optional):
				t.Errorf("webhook-certs volume = %+v, want the optional Secret %s", vol, webhookSecretName)
			}
		})
	}
}

// TestDispatcher checks the dispatcher runs one replica with Recreate and
// leader election on the file store, its journal volume, TLS and its Service.
func TestDispatcher(t *testing.T) {
	svcName := fullname + "-dispatcher"
	cases := []struct {
		valueSet   string
		pvc        bool
		tlsSecret  string
		storageCls string
	}{
		{"defaults", true, "", ""},
		{"cert-manager", true, "dispatcher-tls", "fast-rwo"},
		{"webhook-url", false, "", ""},
	}
	for _, c := range cases {
		t.Run(c.valueSet, func(t *testing.T) {
			objs := objectsOf(t, c.valueSet)
			d := deployment(t, objs, svcName)
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
				t.Errorf("dispatcher replicas = %v, want 1", d.Spec.Replicas)
			}
			if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
				t.Errorf("dispatcher strategy = %q, want Recreate", d.Spec.Strategy.Type)
			}
			ctr := d.Spec.Template.Spec.Containers[0]
			args := argMap(ctr.Args)
			if args["--store"] != "files" {
				t.Errorf("dispatcher --store = %q, want files", args["--store"])
			}
			if args["--leader-elect"] != "true" || args["--leader-election-namespace"] != releaseNamespace {
				t.Errorf("dispatcher leader election args = %v", ctr.Args)
			}
			// Only tokens requested for the dispatcher are accepted: the
			// audience kubectl harness requests by default.
			if args["--token-audience"] != "harness-dispatcher" || args["--require-token-audience"] != "true" {
				t.Errorf("dispatcher args %v: want --token-audience=harness-dispatcher --require-token-audience=true", ctr.Args)
			}
			// The Secret the turn-token Role grants (config/rbac).
			if args["--turn-token-secret-name"] != "harness-dispatcher-turn-token" || args["--turn-token-secret-namespace"] != releaseNamespace {
				t.Errorf("dispatcher turn-token args = %v", ctr.Args)
			}
			if !slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == "journal" && strings.HasPrefix(args["--journal-dir"], m.MountPath+"/")
			}) {
				t.Errorf("--journal-dir %q is not on the journal volume (%+v)", args["--journal-dir"], ctr.VolumeMounts)
			}
			j := volume(d.Spec.Template.Spec, "journal")
			pvcName := fullname + "-dispatcher-journal"
			if c.pvc {
				if j == nil || j.PersistentVolumeClaim == nil || j.PersistentVolumeClaim.ClaimName != pvcName {
					t.Errorf("journal volume = %+v, want the claim %s", j, pvcName)
				}
				var pvc corev1.PersistentVolumeClaim
				find(t, objs, "PersistentVolumeClaim", releaseNamespace, pvcName).decode(t, &pvc)
				if !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
					t.Errorf("journal claim access modes = %v, want ReadWriteOnce", pvc.Spec.AccessModes)
				}
				if got := ptrString(pvc.Spec.StorageClassName); got != c.storageCls {
					t.Errorf("journal storageClassName = %q, want %q", got, c.storageCls)
				}
			} else {
				if j == nil || j.EmptyDir == nil {
					t.Errorf("journal volume = %+v, want an emptyDir", j)
				}
				if has(objs, "PersistentVolumeClaim", releaseNamespace, pvcName) {
					t.Error("journal claim rendered with journal type emptyDir")
				}
			}
			if c.tlsSecret != "" {
				v := volume(d.Spec.Template.Spec, "tls")
				if v == nil || v.Secret == nil || v.Secret.SecretName != c.tlsSecret {
					t.Errorf("tls volume = %+v, want the Secret %s", v, c.tlsSecret)
				}
				if args["--tls-cert-file"] == "" || args["--tls-key-file"] == "" {
					t.Errorf("dispatcher args %v lack --tls-cert-file/--tls-key-file", ctr.Args)
				}
				if _, ok := args["--tls-secret-name"]; ok {
					t.Errorf("dispatcher args %v mix --tls-secret-name with certificate files", ctr.Args)
				}
			} else {
				// The self-managed CA lives in a Secret the chart's Role names;
				// the certificate's main name is the Service's <svc>.<ns>.svc.
				if args["--tls-secret-name"] != fullname+"-dispatcher-tls" || args["--tls-secret-namespace"] != releaseNamespace {
					t.Errorf("dispatcher args %v: want --tls-secret-name=%s-dispatcher-tls --tls-secret-namespace=%s", ctr.Args, fullname, releaseNamespace)
				}
				want := strings.Join([]string{svcName + "." + releaseNamespace + ".svc", svcName, svcName + "." + releaseNamespace, svcName + "." + releaseNamespace + ".svc.cluster.local"}, ",")
				if got := args["--tls-dns-names"]; got != want {
					t.Errorf("--tls-dns-names = %q, want %q", got, want)
				}
				if v := volume(d.Spec.Template.Spec, "tls"); v != nil {
					t.Errorf("tls volume %+v rendered with a self-managed certificate", v)
				}
				if _, ok := args["--tls-cert-file"]; ok {
					t.Errorf("dispatcher args %v mix --tls-cert-file with a self-managed certificate", ctr.Args)
				}
			}

			svc := service(t, objs, svcName)
			if svc.Labels["app.kubernetes.io/name"] != "harness-operator" || svc.Labels["app.kubernetes.io/component"] != "dispatcher" {
				t.Errorf("dispatcher Service labels = %v", svc.Labels)
			}
			if !selects(svc.Spec.Selector, d.Spec.Template.Labels) {
				t.Errorf("dispatcher Service selector %v does not select the dispatcher pods", svc.Spec.Selector)
			}
			if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
				return p.Name == "https" && p.Port == 8443 && p.TargetPort.String() == "https"
			}) || containerPort(ctr, "https") != 8443 || args["--bind-address"] != ":8443" {
				t.Errorf("dispatcher Service ports %+v / container ports %+v: want https 8443 -> --bind-address :8443", svc.Spec.Ports, ctr.Ports)
			}
			// kubectl harness finds the Service by labels: exactly one.
			n := 0
			for _, o := range objs {
				if o.Kind != "Service" {
					continue
				}
				var s corev1.Service
				o.decode(t, &s)
				if s.Labels["app.kubernetes.io/name"] == "harness-operator" && s.Labels["app.kubernetes.io/component"] == "dispatcher" {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d Services carry the dispatcher labels, want 1", n)
			}
		})
	}
}

// TestDispatcherOnPostgres checks the dispatcher with the PostgreSQL store:
// its replicas, a RollingUpdate that stops an old pod only once its
// replacement is ready, a PodDisruptionBudget, the connection string only by
// its Secret's name (never in the pod spec), POD_NAME from the downward API
// as its owner id, no journal volume or claim, and leader election still on
// (for the controllers).
func TestDispatcherOnPostgres(t *testing.T) {
	objs := objectsOf(t, "postgres")
	d := deployment(t, objs, fullname+"-dispatcher")
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("dispatcher replicas = %v, want 3", d.Spec.Replicas)
	}
	// Every replica serves: a serving pod is stopped only once its
	// replacement is ready.
	if s := d.Spec.Strategy; s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate == nil ||
		s.RollingUpdate.MaxUnavailable == nil || s.RollingUpdate.MaxUnavailable.String() != "0" {
		t.Errorf("dispatcher strategy = %+v, want RollingUpdate with maxUnavailable 0", s)
	}
	if !has(objs, "PodDisruptionBudget", releaseNamespace, fullname+"-dispatcher") {
		t.Error("no PodDisruptionBudget for the dispatcher's replicas")
	}
	ctr := d.Spec.Template.Spec.Containers[0]
	args := argMap(ctr.Args)
	for flag, want := range map[string]string{
		"--store": "postgres", "--postgres-secret-name": "harness-db-app", "--postgres-secret-key": "uri",
		"--leader-elect": "true", "--leader-election-namespace": releaseNamespace,
	} {
		if args[flag] != want {
			t.Errorf("dispatcher %s = %q, want %q (args %v)", flag, args[flag], want, ctr.Args)
		}
	}
	for _, journalOnly := range []string{"--journal-dir", "--journal-min-free-bytes", "--journal-max-namespace-bytes"} {
		if _, ok := args[journalOnly]; ok {
			t.Errorf("dispatcher args %v carry the file store's %s", ctr.Args, journalOnly)
		}
	}
	podName := slices.IndexFunc(ctr.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_NAME" })
	if podName < 0 || ctr.Env[podName].ValueFrom == nil || ctr.Env[podName].ValueFrom.FieldRef == nil ||
		ctr.Env[podName].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("dispatcher env %+v: want POD_NAME from metadata.name", ctr.Env)
	}
	for _, e := range ctr.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			t.Errorf("dispatcher env %s comes from a Secret: the connection string is read by the dispatcher, never put in the pod spec", e.Name)
		}
	}
	if v := volume(d.Spec.Template.Spec, "journal"); v != nil {
		t.Errorf("journal volume %+v rendered with the PostgreSQL store", v)
	}
	if has(objs, "PersistentVolumeClaim", releaseNamespace, fullname+"-dispatcher-journal") {
		t.Error("journal claim rendered with the PostgreSQL store")
	}
	if has(objectsOf(t, "defaults"), "PodDisruptionBudget", releaseNamespace, fullname+"-dispatcher") {
		t.Error("a PodDisruptionBudget for the file store's one dispatcher")
	}
}

// TestDispatcherReplicasNeedPostgres checks a values set that skips the
// schema still cannot run several dispatchers on one file journal, nor the
// PostgreSQL store without its Secret: the template fails naming the values.
func TestDispatcherReplicasNeedPostgres(t *testing.T) {
	for values, want := range map[string]string{
		"dispatcher:\n  replicas: 2\n":                "dispatcher.replicas is 2, but more than 1 needs dispatcher.store.type postgres",
		"dispatcher:\n  store:\n    type: postgres\n": "dispatcher.store.type postgres needs dispatcher.store.postgres.secretName",
	} {
		out, stderr, err := helm(t, "template", releaseName, chartDir(t), "--namespace", releaseNamespace,
			"--skip-schema-validation", "--values", writeValues(t, values))
		if err == nil || !strings.Contains(out+stderr, want) {
			t.Errorf("helm template %q: %v, want a failure saying %q:\n%s", values, err, want, stderr)
		}
	}
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// TestFlagsExist builds the manager and the dispatcher and checks every flag
// the chart passes is one the binary defines.
func TestFlagsExist(t *testing.T) {
	bin := t.TempDir()
	if err := testutil.BuildBinaries(bin, "./cmd/manager", "./cmd/dispatcher"); err != nil {
		t.Fatal(err)
	}
	flagLine := regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`)
	defined := map[string]map[string]bool{}
	for _, cmd := range []string{"manager", "dispatcher"} {
		// -h prints the flags and exits 0 (flag.ExitOnError).
		out, err := exec.Command(filepath.Join(bin, cmd), "-h").CombinedOutput()
		if err != nil {
			t.Fatalf("%s -h: %v\n%s", cmd, err, out)
		}
		defined[cmd] = map[string]bool{}
		for _, m := range flagLine.FindAllStringSubmatch(string(out), -1) {
			defined[cmd][m[1]] = true
		}
		if len(defined[cmd]) < 5 {
			t.Fatalf("%s -h listed too few flags:\n%s", cmd, out)
		}
	}
	for _, valueSet := range valueSets {
		objs := objectsOf(t, valueSet)
		for _, cmd := range []string{"manager", "dispatcher"} {
			d := deployment(t, objs, fullname+"-"+cmd)
			c := d.Spec.Template.Spec.Containers[0]
			if !slices.Equal(c.Command, []string{"/" + cmd}) {
				t.Errorf("%s: %s command = %v, want [/%s]", valueSet, cmd, c.Command, cmd)
			}
			for _, a := range c.Args {
				name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
				if !defined[cmd][name] {
					t.Errorf("%s: %s is passed %s, which it does not define", valueSet, cmd, a)
				}
			}
		}
	}
}
