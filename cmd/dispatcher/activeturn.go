package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
)

// maxActiveTurnDelay bounds --active-turn-delay: a running turn must not go
// unseen by the webhook and by a restarted dispatcher for long.
const maxActiveTurnDelay = time.Minute

func bindActiveTurnFlag(fs *flag.FlagSet, d *time.Duration) {
	fs.DurationVar(d, "active-turn-delay", engine.DefaultActiveTurnDelay,
		"How long a turn runs before the dispatcher writes the AgentSession's status.activeTurn; a shorter turn makes one status write, at its end. 0 writes it as soon as the turn started on its app-server. At most 1m.")
}

// activeTurnDelay is the engine option of --active-turn-delay.
func activeTurnDelay(d time.Duration) (time.Duration, error) {
	switch {
	case d < 0 || d > maxActiveTurnDelay:
		return 0, fmt.Errorf("--active-turn-delay must be between 0 and %s, got %s", maxActiveTurnDelay, d)
	case d == 0:
		return engine.ActiveTurnImmediately, nil
	}
	return d, nil
}
