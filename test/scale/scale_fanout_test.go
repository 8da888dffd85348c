package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/platform/conditions"
)

// The fan-out's CPU account: what a policy change costs per affected session
// against a plain write of the same status part, made by the benchmark in
// the same run (docs/benchmarks/operator-scale.md).

// writeArm is how the benchmark writes the manager's part of a status.
type writeArm int

const (
	// armApply: server-side apply under the manager's field manager, as the
	// manager writes it.
	armApply writeArm = iota
	// armMergePatch: the same body as a JSON merge patch.
	armMergePatch
)

// managerPart is the manager's part of a session status: what its
// AgentSession controller applies (policy, observedGeneration, its two
// conditions), as JSON.
type managerPart struct {
	ObservedGeneration int64                   `json:"observedGeneration,omitempty"`
	Policy             *v1alpha1.SessionPolicy `json:"policy,omitempty"`
	Conditions         []map[string]any        `json:"conditions,omitempty"`
}

// managerParts reads the manager's part of the status of the sessions keys
// names from the API server.
func managerParts(ctx context.Context, c client.Client, keys []types.NamespacedName) (map[types.NamespacedName]managerPart, error) {
	want := map[types.NamespacedName]bool{}
	for _, k := range keys {
		want[k] = true
	}
	out := map[types.NamespacedName]managerPart{}
	var list v1alpha1.AgentSessionList
	for {
		if err := c.List(ctx, &list, client.Limit(1000), client.Continue(list.Continue)); err != nil {
			return nil, err
		}
		for i := range list.Items {
			s := &list.Items[i]
			key := client.ObjectKeyFromObject(s)
			if !want[key] {
				continue
			}
			p := managerPart{ObservedGeneration: s.Status.ObservedGeneration, Policy: s.Status.Policy}
			for _, cond := range s.Status.Conditions {
				p.Conditions = append(p.Conditions, map[string]any{
					"type": cond.Type, "status": string(cond.Status), "reason": cond.Reason, "message": cond.Message,
					"observedGeneration": cond.ObservedGeneration, "lastTransitionTime": cond.LastTransitionTime.UTC().Format(time.RFC3339),
				})
			}
			out[key] = p
		}
		if list.Continue == "" {
			break
		}
	}
	if len(out) != len(keys) {
		return nil, fmt.Errorf("read the status of %d of %d sessions", len(out), len(keys))
	}
	return out, nil
}

// measureManagerWriteCPU writes the manager's part of the status of n
// sessions once more, floorWriters at a time, the way arm says: the same
// fields and the same size as the manager's write, with only each
// condition's lastTransitionTime moved (a real write, which the manager
// neither reconciles nor undoes: it compares its conditions without that
// time). It waits until the watch has delivered each write and returns the
// CPU time kube-apiserver and etcd (pids) spent per write meanwhile.
func measureManagerWriteCPU(ctx context.Context, c client.Client, w *sessionWatch, pids []int, n int, arm writeArm) (time.Duration, error) {
	keys := w.keys()[:n]
	parts, err := managerParts(ctx, c, keys)
	if err != nil {
		return 0, err
	}
	// A time none of the conditions holds yet, whole seconds (the API's
	// precision), distinct for each arm.
	moved := time.Now().UTC().Truncate(time.Second).Add(time.Duration(arm+1) * time.Hour).Format(time.RFC3339)
	bodies := make(map[types.NamespacedName][]byte, n)
	for key, p := range parts {
		for _, cond := range p.Conditions {
			cond["lastTransitionTime"] = moved
		}
		body, err := json.Marshal(map[string]any{"status": p})
		if err != nil {
			return 0, err
		}
		bodies[key] = body
	}
	before := w.writes()
	cpuBefore, err := cpuOf(pids)
	if err != nil {
		return 0, err
	}
	next := make(chan types.NamespacedName)
	errs := make(chan error, floorWriters)
	var wg sync.WaitGroup
	for range floorWriters {
		wg.Go(func() {
			for key := range next {
				if err := writeManagerPart(ctx, c, key, bodies[key], arm); err != nil {
					errs <- fmt.Errorf("write the status of %s: %w", key, err)
					return
				}
			}
		})
	}
	for _, key := range keys {
		next <- key
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	_, err = w.waitAll(ctx, scaleWait, n, func(key types.NamespacedName) bool { _, ok := bodies[key]; return ok },
		func(key types.NamespacedName, s *sessionSeen) bool { return s.writes > before[key] })
	if err != nil {
		return 0, err
	}
	cpuAfter, err := cpuOf(pids)
	if err != nil {
		return 0, err
	}
	return (cpuAfter - cpuBefore) / time.Duration(n), nil
}

func writeManagerPart(ctx context.Context, c client.Client, key types.NamespacedName, body []byte, arm writeArm) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("AgentSession"))
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	if arm == armMergePatch {
		return c.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, body))
	}
	if err := json.Unmarshal(body, &u.Object); err != nil {
		return err
	}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("AgentSession"))
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	return c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(conditions.FieldManager("manager")), client.ForceOwnership)
}

// sessionReconciles is the manager's count of AgentSession reconciles
// (controller-runtime's controller_runtime_reconcile_total of the
// agentsession controller, every result).
func sessionReconciles(ctx context.Context, metricsURL string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET the manager's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	dec := expfmt.NewDecoder(resp.Body, expfmt.NewFormat(expfmt.TypeProtoDelim))
	sum := 0.0
	for {
		var family dto.MetricFamily
		if err := dec.Decode(&family); errors.Is(err, io.EOF) {
			return sum, nil
		} else if err != nil {
			return 0, fmt.Errorf("decode the manager's metrics: %w", err)
		}
		if family.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range family.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "agentsession" {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
}
