package netguard_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The in-process DNS server runs a goroutine per query; each must end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
