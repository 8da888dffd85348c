package snapshot

import (
	"testing"

	"go.uber.org/goleak"
)

// A view's read runs on a goroutine of its own (Views.View): none may
// outlive the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
