package httpapi_test

import "testing"

// TestSumTraces adds up the values of `go tool pprof -traces` output.
func TestSumTraces(t *testing.T) {
	out := `File: httpapi.test
Type: cpu
-----------+-------------------------------------------------------
      60ms   runtime.nanotime
             main.main
-----------+-------------------------------------------------------
     1.20s   syscall.Syscall6
-----------+-------------------------------------------------------
`
	got, err := sumTraces([]byte(out))
	if err != nil || got != 1260 {
		t.Fatalf("sumTraces = %v ms, %v; want 1260", got, err)
	}
}
