package engine

import (
	"testing"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

func TestThreadState(t *testing.T) {
	bound := func(thread string, st v1alpha1.ThreadState) *v1alpha1.NativeBinding {
		return &v1alpha1.NativeBinding{ThreadID: thread, ThreadState: st}
	}
	tests := []struct {
		name   string
		prev   *v1alpha1.NativeBinding
		result bool
		want   v1alpha1.ThreadState
	}{
		{name: "a new thread whose first turn ended with a result", result: true, want: v1alpha1.ThreadEstablished},
		{name: "a new thread whose first turn failed", want: v1alpha1.ThreadProvisional},
		{name: "a failed turn on an established thread", prev: bound("t1", v1alpha1.ThreadEstablished), want: v1alpha1.ThreadEstablished},
		{name: "a failed turn on a thread bound before the field existed", prev: bound("t1", ""), want: v1alpha1.ThreadEstablished},
		{name: "a second failed turn on a provisional thread", prev: bound("t1", v1alpha1.ThreadProvisional), want: v1alpha1.ThreadProvisional},
		{name: "a result on a provisional thread", prev: bound("t1", v1alpha1.ThreadProvisional), result: true, want: v1alpha1.ThreadEstablished},
		{name: "a failed first turn on a new thread replacing an established one (a re-seed)", prev: bound("t0", v1alpha1.ThreadEstablished), want: v1alpha1.ThreadProvisional},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := threadState(tt.prev, "t1", tt.result); got != tt.want {
				t.Errorf("threadState = %q, want %q", got, tt.want)
			}
		})
	}
}
