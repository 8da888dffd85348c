package selection

// The routes of an attempt (modelProvider, then modelProviders), prepared
// once per call: what every harness is checked against for each route.

import (
	"slices"
	"strconv"
	"strings"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// route is one prepared route; a nil mp means the attempt has no route facts.
// What every harness is checked against is prepared once per route, not per
// harness: listed holds the indices of the views that count for the route's
// compatible ids, so a harness is looked for by number rather than by
// comparing its id with every compatible id; authMode is the prepared auth
// mode trimmed and lowercased.
type route struct {
	name string
	// index is the route's row in routeNames and namedReasons: 0 for
	// modelProvider, i+1 for modelProviders[i].
	index    int
	mp       *wire.ModelProvider
	listed   []int32
	authMode string
	// same is the index of an earlier route with the same support facts
	// (sameSupportFacts), whose answer every harness repeats here, or -1: a
	// retry set often differs only in base URLs.
	same int
	// named are the reasons that name a route beyond namedReasons, built on
	// first use.
	named *[refusalCount]string
}

// namedRoutes is how many routes have their names and named reasons
// prepared once for every call (routeNames, namedReasons): retry sets are
// short, and naming a route per call would allocate.
const namedRoutes = 17

// routeNames are the names of the first routes: modelProvider, then
// modelProviders[0] and on.
var routeNames = func() (names [namedRoutes]string) {
	names[0] = "modelProvider"
	for i := 1; i < namedRoutes; i++ {
		names[i] = "modelProviders[" + strconv.Itoa(i-1) + "]"
	}
	return names
}()

// namedReasons are the candidate reasons that name one of the first routes
// ("modelProviders[1]: …"), by route index and refusal.
var namedReasons = func() (reasons [namedRoutes][refusalCount]string) {
	for i := range reasons {
		for why := refusalNone + 1; why < refusalCount; why++ {
			reasons[i][why] = routeNames[i] + ": " + refusalText[why]
		}
	}
	return reasons
}()

// reason is a candidate's reason for a refusal on this route; with several
// routes it names the route. The named text is built once, not once per
// candidate: a namespace that sees many harnesses that cannot run a turn
// does not pay for each of them.
func (r *route) reason(why refusal, several bool) string {
	if !several {
		return refusalText[why]
	}
	if r.index < namedRoutes {
		return namedReasons[r.index][why]
	}
	if r.named == nil {
		r.named = new([refusalCount]string)
	}
	if r.named[why] == "" {
		r.named[why] = r.name + ": " + refusalText[why]
	}
	return r.named[why]
}

// newRoute prepares the route at index (route.index); the views must be
// sorted (it looks harnesses up).
func (e *engine) newRoute(index int, mp *wire.ModelProvider) route {
	r := route{index: index, mp: mp, same: -1}
	if index < namedRoutes {
		r.name = routeNames[index]
	} else {
		r.name = "modelProviders[" + strconv.Itoa(index-1) + "]"
	}
	if mp.PreparedAuth != nil {
		r.authMode = strings.ToLower(strings.TrimSpace(mp.PreparedAuth.Mode))
	}
	if mp.RuntimePolicy != nil {
		r.listed = e.listedViews(mp.RuntimePolicy.CompatibleIDs)
	}
	for i := range e.routes {
		if p := &e.routes[i]; p.same < 0 && sameSupportFacts(p, &r) {
			r.same = i
			break
		}
	}
	return r
}

// listedViews returns the indices of the views that count for a route's
// compatible ids; only those can be listed (shadowed and reserved views are
// never asked about a route). An earlier route with the same ids shares its
// answer.
func (e *engine) listedViews(ids []string) []int32 {
	for i := range e.routes {
		if p := e.routes[i].mp.RuntimePolicy; p != nil && slices.Equal(p.CompatibleIDs, ids) {
			return e.routes[i].listed
		}
	}
	start := len(e.listed)
	for _, id := range ids {
		if i := e.lookup(NormalizeRuntimeID(id)); i >= 0 {
			e.listed = append(e.listed, int32(i))
		}
	}
	// The full slice expression keeps a later route's indices out of this one.
	return e.listed[start:len(e.listed):len(e.listed)]
}

// sameSupportFacts reports whether every harness answers two routes alike:
// they agree on everything supportsRoute reads (the provider is the
// attempt's).
func sameSupportFacts(a, b *route) bool {
	x, y := a.mp, b.mp
	if x.RequestTransportOverrides != y.RequestTransportOverrides || (x.RuntimePolicy == nil) != (y.RuntimePolicy == nil) ||
		!slices.Equal(a.listed, b.listed) || (x.PreparedAuth == nil) != (y.PreparedAuth == nil) {
		return false
	}
	return x.PreparedAuth == nil || (x.PreparedAuth.Requirement == y.PreparedAuth.Requirement &&
		x.PreparedAuth.Source == y.PreparedAuth.Source && a.authMode == b.authMode)
}
