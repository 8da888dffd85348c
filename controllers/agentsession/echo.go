package agentsession

import (
	"hash/maphash"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// echoesSkipped counts the session updates the controller did not reconcile
// because they only carried its own status write back (ownWrites).
var echoesSkipped = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "harness_manager_agentsession_own_write_echoes_skipped_total",
	Help: "AgentSession updates not reconciled because the manager's part of their status is exactly what this manager last applied.",
})

func init() { metrics.Registry.MustRegister(echoesSkipped) }

// ownWrites remembers, per session UID, a digest of the manager's part of
// the status this manager last applied. The watch event of that write (its
// echo) changes only the manager's own fields, to what the manager just
// computed from the same inputs: reconciling it would read the namespace,
// the policies and the harnesses again to write nothing. At 10,000 sessions
// that second reconcile was most of the manager's CPU in a policy change
// (docs/benchmarks/operator-scale.md).
//
// Only content counts, never a resourceVersion: an update whose manager
// part differs from the digest — someone else's edit of those fields, or a
// write that failed — is reconciled, and so is any change of the spec or
// of the dispatcher's pin (managerInputsChanged). A digest is 8 bytes a
// session; a collision would skip one correction of a hand edit that
// happens to hash like the manager's own write (odds of 2^-64).
type ownWrites struct {
	seed   maphash.Seed
	mu     sync.Mutex
	digest map[types.UID]uint64
}

func newOwnWrites() *ownWrites {
	return &ownWrites{seed: maphash.MakeSeed(), digest: map[types.UID]uint64{}}
}

// wrote records the manager part about to be applied to the session uid.
// It is recorded before the write: the echo can reach the cache before the
// apply returns.
func (o *ownWrites) wrote(uid types.UID, st *v1alpha1.AgentSessionStatus) {
	d := o.of(st)
	o.mu.Lock()
	o.digest[uid] = d
	o.mu.Unlock()
}

// forget drops what is known about the session uid (a failed write, a
// deleted session).
func (o *ownWrites) forget(uid types.UID) {
	o.mu.Lock()
	delete(o.digest, uid)
	o.mu.Unlock()
}

// isEcho reports whether the manager's part of s's status is what this
// manager last applied to it.
func (o *ownWrites) isEcho(s *v1alpha1.AgentSession) bool {
	o.mu.Lock()
	d, ok := o.digest[s.UID]
	o.mu.Unlock()
	return ok && d == o.of(&s.Status)
}

// of digests the fields managedEqual compares: observedGeneration, the
// policy, and the owned conditions without lastTransitionTime.
func (o *ownWrites) of(st *v1alpha1.AgentSessionStatus) uint64 {
	var h maphash.Hash
	h.SetSeed(o.seed)
	field := func(s string) {
		h.WriteString(strconv.Itoa(len(s)))
		h.WriteByte(':')
		h.WriteString(s)
	}
	field(strconv.FormatInt(st.ObservedGeneration, 10))
	if p := st.Policy; p != nil {
		field("policy")
		field(string(p.Runtime))
		field(string(p.Source))
		field(strconv.Itoa(len(p.MatchedPolicies)))
		for _, name := range p.MatchedPolicies {
			field(name)
		}
	}
	for _, typ := range ownedConditions {
		c := meta.FindStatusCondition(st.Conditions, typ)
		if c == nil {
			field("-")
			continue
		}
		field(c.Type)
		field(string(c.Status))
		field(c.Reason)
		field(c.Message)
		field(strconv.FormatInt(c.ObservedGeneration, 10))
	}
	return h.Sum64()
}
