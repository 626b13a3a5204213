//go:build race

package host_test

// raceEnabled: the race detector slows every call several times over and
// make test runs packages side by side, so a load test's latency ratios
// are only held to their targets without it (make bench).
const raceEnabled = true
