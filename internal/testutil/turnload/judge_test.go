package turnload

import (
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

func TestJudge(t *testing.T) {
	ok := Outcome{OK: true}
	killed := Outcome{Code: string(wire.CodeHarnessUnavailable)}
	once := func(string) int { return 1 }
	tests := []struct {
		name       string
		c          Campaign
		wantFailed int
		want       []string // one substring per violation, in order
	}{
		{
			name: "every turn completed once, the killed replica's failed unsafe to replay",
			c: Campaign{
				AfterRestart: map[string]Outcome{"a": ok}, All: map[string]Outcome{"a": ok, "b": killed, "c": ok},
				Doomed: map[string]bool{"b": true, "c": true}, Sent: 3, Executions: once,
			},
			wantFailed: 1,
		},
		{
			name: "a turn failed during the rolling restart",
			c: Campaign{
				AfterRestart: map[string]Outcome{"a": killed}, All: map[string]Outcome{"a": killed, "b": killed},
				Doomed: map[string]bool{"b": true}, Sent: 2, Executions: once,
			},
			wantFailed: 1,
			want:       []string{"rolling restart: turn a failed", "turn a ended"},
		},
		{
			name: "a killed replica's turn said a replay was safe",
			c: Campaign{
				All:    map[string]Outcome{"b": {Code: string(wire.CodeHarnessUnavailable), ReplaySafe: true}},
				Doomed: map[string]bool{"b": true}, Sent: 1, Executions: once,
			},
			want: []string{"turn b ended", "no turn of the killed replica failed"},
		},
		{
			name: "a turn of a surviving replica failed",
			c: Campaign{
				All: map[string]Outcome{"a": killed, "b": killed}, Doomed: map[string]bool{"b": true}, Sent: 2, Executions: once,
			},
			wantFailed: 1,
			want:       []string{"turn a ended"},
		},
		{
			name: "a turn ran twice, one completed without reaching the model",
			c: Campaign{
				All: map[string]Outcome{"a": ok, "b": ok}, Sent: 2,
				Executions: func(id string) int { return map[string]int{"a": 2}[id] },
			},
			want: []string{"reached the model 2 times", "reached the model 0 times"},
		},
		{
			name: "a turn was sent and never ended",
			c:    Campaign{All: map[string]Outcome{"a": ok}, Sent: 2, Executions: once},
			want: []string{"1 turns were sent and never ended"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.c)
			if v.FailedDoomed != tt.wantFailed || v.Turns != len(tt.c.All) {
				t.Errorf("failed doomed %d of %d turns, want %d of %d", v.FailedDoomed, v.Turns, tt.wantFailed, len(tt.c.All))
			}
			if len(v.Violations) != len(tt.want) {
				t.Fatalf("violations %q, want %d like %q", v.Violations, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(v.Violations[i], w) {
					t.Errorf("violation %d = %q, want it to contain %q", i, v.Violations[i], w)
				}
			}
		})
	}
}
