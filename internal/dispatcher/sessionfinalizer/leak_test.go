package sessionfinalizer

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run when a goroutine outlives its tests. Two
// goroutines are not ours and are let go: Ginkgo's interrupt handler, and
// apimachinery's watch.Filter loop (controller-runtime wraps metadata-only
// watches in it), which stays blocked sending an event when the informer
// stopped reading — its Stop does not unblock that send.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"),
		goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"),
	)
}
