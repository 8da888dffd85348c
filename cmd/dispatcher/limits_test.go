package main

import (
	"strings"
	"testing"
	"time"
)

// Limits that cannot work are refused at start, naming the flag.
func TestLimitFlagsThatCannotWorkAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		o        limitOptions
		audience string
		want     string // "" for valid
	}{
		{"defaults", limitOptions{}, "", ""},
		{"audience required and set", limitOptions{requireAudience: true}, "harness-dispatcher", ""},
		{"audience required but none", limitOptions{requireAudience: true}, "", "--require-token-audience needs --token-audience"},
		{"negative read timeout", limitOptions{readTimeout: -1}, "", "--read-timeout"},
		{"negative connection cap", limitOptions{maxConnections: -1}, "", "--max-connections"},
		{"negative refused burst", limitOptions{refusedBurst: -1}, "", "--auth-refused-burst"},
		{"negative token lifetime", limitOptions{maxTokenLife: -time.Second}, "", "--max-token-lifetime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.validate(tc.audience)
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("validate = %v, want %q", err, tc.want)
			}
		})
	}
}
