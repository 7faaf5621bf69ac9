package nest

import "testing"

// BenchmarkDetect is the walk a top-level launch makes: no marker, every
// ancestor read up to pid 1.
func BenchmarkDetect(b *testing.B) {
	for b.Loop() {
		if Detect("") != "" {
			b.Fatal("nested")
		}
	}
}
