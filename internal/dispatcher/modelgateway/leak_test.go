package modelgateway

import (
	"testing"

	"go.uber.org/goleak"
)

// The gateway, its servers and the tests' upstreams run goroutines per
// connection and per timer; each must end with its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
