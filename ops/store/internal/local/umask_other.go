//go:build unix && !linux

package local

// readUmask: elsewhere the umask cannot be read without setting it, so it is not known, and
// every file and folder the store makes gets its mode with fchmod.
func readUmask() (uint32, bool) { return 0, false }
