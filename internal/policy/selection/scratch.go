package selection

// The engine's working memory, kept between calls (enginePool), and the
// small parts of a decision allocated together.

import (
	"sync"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/policy/toolpolicy"
)

// scratch is the memory an engine works in and the decision never
// references. It is kept between calls (enginePool): allocating it for
// every turn cost more than the work done in it, most of it in the garbage
// collector.
type scratch struct {
	views  []hview
	order  []int64
	routes []route
	// listed backs the routes' listed views.
	listed []int32
	// rs and outs are evaluate's per-route results.
	rs   []routeScratch
	outs []outcome
	// toolNames and layers are the tool-policy input (toolVerdict).
	toolNames []string
	layers    []toolpolicy.Layer
}

// maxPooledViews bounds the scratch an engine keeps: one call with an
// unusual number of harnesses does not keep its memory for good.
const maxPooledViews = 1024

// enginePool holds engines with their scratch between calls. Only the
// scratch's capacity survives a call (release clears everything else), so
// no call sees another's data.
var enginePool = sync.Pool{New: func() any { return new(engine) }}

// decisionParts are the small parts of one decision, allocated together:
// each would otherwise be an allocation of its own on every turn.
type decisionParts struct {
	harnessRef wire.HarnessRef
	toolPolicy wire.ToolPolicyDecision
	// routes back Decision.Routes for a retry set of up to three routes.
	routes [3]wire.RouteDecision
	// matched backs Decision.MatchedPolicies for up to two policies.
	matched [2]string
}

// matchedStorage is where resolvePolicy lists n matched policies' names.
func (e *engine) matchedStorage(n int) []string {
	if p := e.getParts(); n <= len(p.matched) {
		return p.matched[:0:n]
	}
	return make([]string, 0, n)
}

// getParts returns the decision's parts, allocating them on first use.
func (e *engine) getParts() *decisionParts {
	if e.parts == nil {
		e.parts = new(decisionParts)
	}
	return e.parts
}

// release clears the engine, keeping only its scratch, and returns it to
// enginePool. Nothing the decision holds is in the scratch, and the next call
// writes every element of the scratch it reads. The scratch still refers to
// this call's harnesses and strings until it is reused or the pool drops it
// (at the latest after two garbage collections): clearing it would cost more
// than the rest of the release.
func (e *engine) release() {
	sc := e.scratch
	*e = engine{}
	if cap(sc.views) > maxPooledViews || cap(sc.toolNames) > maxPooledViews {
		return
	}
	e.scratch = sc
	enginePool.Put(e)
}

// resized returns s with length n, reusing its memory when it is large
// enough; the caller initializes every element it reads.
func resized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}
