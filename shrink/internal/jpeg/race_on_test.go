//go:build race

package jpeg

// raceBuild is true under -race. The decoder runs on one goroutine, so the race detector has
// nothing to find in the differential sweeps (TestTruncated, TestCorrupted, TestReaders,
// TestScanParametersChanged) and only makes them about eight times slower; under -race they
// take a sample of their cases (see sampled), and `go test` without -race (run by .ci/run
// too) takes them all.
const raceBuild = true
