//go:build faults

package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil/dispatchertest"
)

// churnLabel selects the RuntimePolicies' namespaces: no namespace carries
// it, so the churned policies govern nothing the load runs.
const churnLabel = "harness-faults/churn"

// churnPace is the pause between two applies: a user's kubectl loop, not a
// flood of refusals while the webhook is down.
const churnPace = 20 * time.Millisecond

// churn applies changes to RuntimePolicies and AgentSessions the load does
// not use — create, update the spec, delete — one after another,
// and remembers what each accepted apply left, to check afterwards
// that nothing was half-applied.
type churn struct {
	k8s client.Client
	ns  string

	mu   sync.Mutex
	seq  int
	want map[string]churned // by kind/name: the state the last accepted apply left
	churnFigures
	afterMark int // accepted applies since mark

	stop chan struct{}
	done sync.WaitGroup
}

// churned is an object's state as the churn left it: its spec's counter
// (the policy's selector value, the session's resetGeneration), or deleted.
type churned struct {
	counter int64
	deleted bool
}

// churnFigures are one fault's outcomes of the churn's applies.
type churnFigures struct {
	accepted int
	// refusedVisibly: the error names the webhook that could not be
	// reached; refusedOther: any other error (listed in unclear).
	refusedVisibly, refusedOther int
	unclear                      map[string]int
	halfApplied                  int
	convergence                  []time.Duration
}

func newChurn(k8s client.Client, ns string) *churn {
	return &churn{k8s: k8s, ns: ns, want: map[string]churned{}}
}

// start runs the applies until stopAndCheck.
func (c *churn) start(ctx context.Context) {
	c.stop = make(chan struct{})
	c.done.Go(func() {
		for {
			select {
			case <-c.stop:
				return
			default:
			}
			c.applyOne(ctx)
			time.Sleep(churnPace) // the churn's rate, not an ordering
		}
	})
}

// mark starts counting accepted applies anew (acceptedSinceMark).
func (c *churn) mark() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.afterMark = 0
}

// waitAccepted waits until n applies were accepted since mark: the churn
// goes on through the fault and after it.
func (c *churn) waitAccepted(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c.mu.Lock()
		got := c.afterMark
		c.mu.Unlock()
		if got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d applies accepted within %s", got, n, timeout)
		}
		time.Sleep(20 * time.Millisecond) // the poll's interval; the count is the fact
	}
}

// applyOne picks a churned object (or a new one) and changes it.
func (c *churn) applyOne(ctx context.Context) {
	c.mu.Lock()
	var live []string
	for key, w := range c.want {
		if !w.deleted {
			live = append(live, key)
		}
	}
	c.seq++
	seq := c.seq
	c.mu.Unlock()
	kinds := []string{"policy", "session"}
	if len(live) < 6 || rand.IntN(4) == 0 {
		key := kinds[seq%2] + "/churn-" + strconv.Itoa(seq)
		c.record(key, churned{counter: 1}, c.k8s.Create(ctx, c.object(key, 1)))
		return
	}
	key := live[rand.IntN(len(live))]
	if rand.IntN(3) == 0 {
		c.record(key, churned{deleted: true}, client.IgnoreNotFound(c.k8s.Delete(ctx, c.object(key, 0))))
		return
	}
	obj := c.object(key, 0)
	if err := c.k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		c.record(key, churned{}, err)
		return
	}
	next := c.counterOf(obj) + 1
	setCounter(obj, next)
	c.record(key, churned{counter: next}, c.k8s.Update(ctx, obj))
}

// object is the churned object key with its spec's counter.
func (c *churn) object(key string, counter int64) client.Object {
	kind, name, _ := strings.Cut(key, "/")
	var obj client.Object
	if kind == "policy" {
		// A provider no session uses, for namespaces no namespace is.
		obj = &v1alpha1.RuntimePolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.RuntimePolicySpec{
			Providers: []v1alpha1.ProviderRuntimePolicy{{Provider: "churn", Runtime: "codex"}},
		}}
	} else {
		obj = &v1alpha1.AgentSession{
			ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name},
			Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:" + name, SessionID: name + "-id", Model: dispatchertest.TestModel},
		}
	}
	if counter > 0 {
		setCounter(obj, counter)
	}
	return obj
}

func setCounter(obj client.Object, n int64) {
	switch o := obj.(type) {
	case *v1alpha1.RuntimePolicy:
		o.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{churnLabel: strconv.FormatInt(n, 10)}}
	case *v1alpha1.AgentSession:
		o.Spec.ResetGeneration = n
	}
}

func (c *churn) counterOf(obj client.Object) int64 {
	switch o := obj.(type) {
	case *v1alpha1.RuntimePolicy:
		if o.Spec.NamespaceSelector == nil {
			return 0
		}
		n, _ := strconv.ParseInt(o.Spec.NamespaceSelector.MatchLabels[churnLabel], 10, 64)
		return n
	case *v1alpha1.AgentSession:
		return o.Spec.ResetGeneration
	}
	return 0
}

// record counts an apply's outcome; an accepted one is what the object must
// now read back as.
func (c *churn) record(key string, state churned, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		c.accepted++
		c.afterMark++
		c.want[key] = state
	case strings.Contains(err.Error(), "failed calling webhook"):
		c.refusedVisibly++
	default:
		c.refusedOther++
		if c.unclear == nil {
			c.unclear = map[string]int{}
		}
		c.unclear[digitsOut.ReplaceAllString(err.Error(), "N")]++
	}
}

// stopAndCheck stops the applies and reads every churned object back:
// each must be as its last accepted apply left it (a refused apply left
// nothing behind). It returns the objects that are not.
func (c *churn) stopAndCheck(ctx context.Context) []string {
	close(c.stop)
	c.done.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	var bad []string
	for key, w := range c.want {
		obj := c.object(key, 0)
		err := c.k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		switch {
		case w.deleted && (apierrors.IsNotFound(err) || err == nil && obj.GetDeletionTimestamp() != nil):
		case w.deleted:
			bad = append(bad, fmt.Sprintf("%s was deleted, reads back %v", key, err))
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: %v", key, err))
		case c.counterOf(obj) != w.counter || obj.GetDeletionTimestamp() != nil:
			bad = append(bad, fmt.Sprintf("%s: accepted with counter %d, reads back %d (deleting: %v)", key, w.counter, c.counterOf(obj), obj.GetDeletionTimestamp() != nil))
		}
	}
	// The refused creates: churn-<seq> names never accepted must not exist.
	for seq := 1; seq <= c.seq; seq++ {
		key := []string{"policy", "session"}[seq%2] + "/churn-" + strconv.Itoa(seq)
		if _, ok := c.want[key]; ok {
			continue
		}
		obj := c.object(key, 0)
		if err := c.k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			bad = append(bad, fmt.Sprintf("%s: never accepted, reads back %v", key, err))
		}
	}
	c.halfApplied += len(bad)
	return bad
}

// converged waits until every churned object that exists has its status
// at its generation, and returns when that was reached after since.
func (c *churn) converged(ctx context.Context, since time.Time, timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for {
		behind, err := c.behind(ctx)
		if err == nil && len(behind) == 0 {
			return time.Since(since), nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return 0, fmt.Errorf("statuses still unread %s after the fault: %w", timeout, err)
			}
			return 0, fmt.Errorf("status not at generation %s after the fault: %v", timeout, behind)
		}
		time.Sleep(100 * time.Millisecond) // the poll's interval; the statuses are the fact
	}
}

// behind lists the churned objects whose status.observedGeneration is not
// their generation.
func (c *churn) behind(ctx context.Context) ([]string, error) {
	var behind []string
	var policies v1alpha1.RuntimePolicyList
	if err := c.k8s.List(ctx, &policies); err != nil {
		return nil, err
	}
	for _, p := range policies.Items {
		if strings.HasPrefix(p.Name, "churn-") && p.DeletionTimestamp == nil && p.Status.ObservedGeneration != p.Generation {
			behind = append(behind, fmt.Sprintf("policy/%s %d/%d", p.Name, p.Status.ObservedGeneration, p.Generation))
		}
	}
	var sessions v1alpha1.AgentSessionList
	if err := c.k8s.List(ctx, &sessions, client.InNamespace(c.ns)); err != nil {
		return nil, err
	}
	for _, s := range sessions.Items {
		if strings.HasPrefix(s.Name, "churn-") && s.DeletionTimestamp == nil && s.Status.ObservedGeneration != s.Generation {
			behind = append(behind, fmt.Sprintf("session/%s %d/%d", s.Name, s.Status.ObservedGeneration, s.Generation))
		}
	}
	return behind, nil
}

// take returns the figures since the last take and starts new ones.
func (c *churn) take() churnFigures {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.churnFigures
	c.churnFigures = churnFigures{}
	return f
}
