//go:build !race

package broker

// raceEnabled: the tests run under the race detector, which slows a
// connection's set-up several times over.
const raceEnabled = false
