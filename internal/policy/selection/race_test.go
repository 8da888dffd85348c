//go:build race

package selection

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// Select's allocation counts (enginePool) are not deterministic under it.
const raceEnabled = true
