//go:build !race

package plugin_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
