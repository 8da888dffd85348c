package main

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
)

func TestActiveTurnDelayFlag(t *testing.T) {
	fs := flag.NewFlagSet("dispatcher", flag.ContinueOnError)
	var d time.Duration
	bindActiveTurnFlag(fs, &d)
	if err := fs.Parse(nil); err != nil || d != engine.DefaultActiveTurnDelay {
		t.Fatalf("default: %s, %v; want %s", d, err, engine.DefaultActiveTurnDelay)
	}
	for _, c := range []struct {
		flag    time.Duration
		want    time.Duration
		refused bool
	}{
		{flag: 0, want: engine.ActiveTurnImmediately},
		{flag: 250 * time.Millisecond, want: 250 * time.Millisecond},
		{flag: time.Minute, want: time.Minute},
		{flag: -time.Second, refused: true},
		{flag: time.Minute + time.Second, refused: true},
	} {
		got, err := activeTurnDelay(c.flag)
		switch {
		case c.refused && err == nil:
			t.Errorf("--active-turn-delay=%s was accepted as %s", c.flag, got)
		case c.refused:
			if want := "--active-turn-delay"; !strings.Contains(err.Error(), want) {
				t.Errorf("--active-turn-delay=%s: error %q does not name the flag", c.flag, err)
			}
		case err != nil || got != c.want:
			t.Errorf("--active-turn-delay=%s: %s, %v; want %s", c.flag, got, err, c.want)
		}
	}
}
