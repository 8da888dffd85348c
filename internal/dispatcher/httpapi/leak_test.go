package httpapi

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run when a goroutine outlives its tests. One
// goroutine is not ours and is let go (as in internal/dispatcher/engine):
// apimachinery's watch.Filter loop, in which controller-runtime wraps
// metadata-only watches — the benchmarks' manager has them — stays blocked
// sending an event when the informer stopped reading; its Stop does not
// unblock that send.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"))
}
