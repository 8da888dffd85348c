//go:build faults

package main

import (
	"math/rand/v2"
	"time"
)

// controlPlaneFaults are the faults of the Kubernetes control plane the
// dispatcher and the controllers depend on.
func (c *campaign) controlPlaneFaults() []fault {
	return []fault{
		{"kube-apiserver restarted (down 1–3 s, same etcd, certificates and keys)", func() {
			down, start := time.Duration(1000+rand.IntN(2000))*time.Millisecond, time.Now()
			ended, err := c.env.fx.env.RestartAPIServer(down)
			must(c.t, err)
			c.t.Logf("kube-apiserver restarted: %s, down %s, unreachable for %s in all", ended, down, time.Since(start).Round(time.Millisecond))
		}},
	}
}
