//go:build !race

package jpeg

// raceBuild is true under -race: see race_on_test.go.
const raceBuild = false
