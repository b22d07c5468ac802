//go:build race

package rules

// raceEnabled: the race detector maps its shadow memory as it goes, which
// no address-space limit leaves room for, so a host built with it runs
// without one.
const raceEnabled = true
