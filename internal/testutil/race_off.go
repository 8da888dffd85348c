//go:build !race

package testutil

// RaceEnabled says whether this test binary was built with -race; the
// binaries the process suites build then are too (BuildBinaries).
const RaceEnabled = false
