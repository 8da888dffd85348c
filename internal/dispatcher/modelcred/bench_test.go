package modelcred

import (
	"bytes"
	"testing"
	"time"
)

// BenchmarkSealOpen: what minting a turn's credential costs the dispatcher
// (Seal) and checking it costs the gateway (Open), for a turn without an
// auth profile (docs/benchmarks/gateway.md).
func BenchmarkSealOpen(b *testing.B) {
	k, err := DeriveKey(bytes.Repeat([]byte{7}, TurnTokenKeyBytes))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	c := Claims{Audience: Audience, Lease: "team-a/0d6f4c1e-uid", Token: 42, Run: "run-0123456789",
		Harness: Harness{Namespace: "team-a", Name: "codex", UID: "5a1b2c3d-harness-uid"},
		Models:  []string{"gpt-5"}, ExpiresAt: now.Add(time.Hour)}
	token, err := Seal(k, c, now)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("seal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Seal(k, c, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Open(k, token, now, Audience); err != nil {
				b.Fatal(err)
			}
		}
	})
}
