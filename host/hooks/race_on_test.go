//go:build race

package hooks_test

// raceEnabled: the race detector's builds allocate where others do not.
const raceEnabled = true
