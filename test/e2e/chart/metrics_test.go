//go:build e2e

package chart

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestDispatcherMetricsAreHTTPSApartFromProbes checks the dispatcher serves
// /metrics on its authenticated HTTPS listener (--metrics-bind-address, port
// https-metrics 8083, the Service's https-metrics port) while the kubelet's
// probes stay on the plain-HTTP probe port (--probe-bind-address 8081), which
// the Service does not expose.
func TestDispatcherMetricsAreHTTPSApartFromProbes(t *testing.T) {
	objs := objectsOf(t, "defaults")
	d := deployment(t, objs, fullname+"-dispatcher")
	ctr := d.Spec.Template.Spec.Containers[0]
	args := argMap(ctr.Args)
	if args["--metrics-bind-address"] != ":8083" || containerPort(ctr, "https-metrics") != 8083 {
		t.Errorf("dispatcher --metrics-bind-address = %q, container port https-metrics = %d: want :8083 and 8083", args["--metrics-bind-address"], containerPort(ctr, "https-metrics"))
	}
	if args["--probe-bind-address"] != ":8081" || containerPort(ctr, "probes") != 8081 {
		t.Errorf("dispatcher --probe-bind-address = %q, container port probes = %d: want :8081 and 8081", args["--probe-bind-address"], containerPort(ctr, "probes"))
	}
	for name, probe := range map[string]*corev1.Probe{"liveness": ctr.LivenessProbe, "readiness": ctr.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Port.String() != "probes" || probe.HTTPGet.Scheme == corev1.URISchemeHTTPS {
			t.Errorf("dispatcher %s probe = %+v, want plain HTTP on port probes", name, probe)
		}
	}
	svc := service(t, objs, fullname+"-dispatcher")
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
		return p.Name == "https-metrics" && p.Port == 8083 && p.TargetPort.String() == "https-metrics"
	}) {
		t.Errorf("dispatcher Service ports %+v: want https-metrics 8083 -> https-metrics", svc.Spec.Ports)
	}
	for _, p := range svc.Spec.Ports {
		if p.Port == 8081 || p.TargetPort.String() == "probes" {
			t.Errorf("dispatcher Service exposes the probe port: %+v", p)
		}
	}
}

// serviceMonitor is the part of a monitoring.coreos.com/v1 ServiceMonitor
// the test reads (its types are outside client-go).
type serviceMonitor struct {
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port            string `json:"port"`
			Scheme          string `json:"scheme"`
			BearerTokenFile string `json:"bearerTokenFile"`
			TLSConfig       *struct {
				InsecureSkipVerify bool `json:"insecureSkipVerify"`
			} `json:"tlsConfig"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// TestServiceMonitorScrapesBothOverHTTPS checks every ServiceMonitor endpoint
// scrapes over HTTPS with Prometheus's ServiceAccount token (both metrics
// endpoints authorize each scrape through the API server) and that the
// selected Services' metrics ports — the manager's and the dispatcher's — are
// each covered by an endpoint.
func TestServiceMonitorScrapesBothOverHTTPS(t *testing.T) {
	objs := objectsOf(t, "opt-ins")
	var sm serviceMonitor
	if err := yaml.Unmarshal(find(t, objs, "ServiceMonitor", releaseNamespace, fullname).raw, &sm); err != nil {
		t.Fatal(err)
	}
	scraped := map[string]bool{}
	for _, e := range sm.Spec.Endpoints {
		if e.Scheme != "https" || !strings.HasSuffix(e.BearerTokenFile, "/serviceaccount/token") || e.TLSConfig == nil || !e.TLSConfig.InsecureSkipVerify {
			t.Errorf("ServiceMonitor endpoint %+v: want https with the ServiceAccount token and the self-signed certificate accepted", e)
		}
		scraped[e.Port] = true
	}
	for _, name := range []string{fullname + "-manager-metrics", fullname + "-dispatcher"} {
		svc := service(t, objs, name)
		if !selects(sm.Spec.Selector.MatchLabels, svc.Labels) {
			t.Errorf("ServiceMonitor selector %v does not select the Service %s", sm.Spec.Selector.MatchLabels, name)
		}
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return strings.HasSuffix(p.Name, "metrics") && scraped[p.Name] }) {
			t.Errorf("no ServiceMonitor endpoint scrapes a metrics port of the Service %s (ports %+v, endpoints %v)", name, svc.Spec.Ports, scraped)
		}
	}
}
