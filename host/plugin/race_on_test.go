//go:build race

package plugin_test

// raceEnabled: the race detector's memory (shadow memory, and the history
// of every goroutine and lock) grows with each reload and is never given
// back, so RSS is no measure of a leak in a race build.
const raceEnabled = true
