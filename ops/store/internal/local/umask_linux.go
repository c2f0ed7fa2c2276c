package local

import (
	"bytes"
	"os"
	"strconv"
)

// readUmask reads the process's umask from /proc/self/status (Linux 4.7 and later), which
// leaves it as it is.
func readUmask() (uint32, bool) {
	b, err := os.ReadFile("/proc/self/status")
	_, line, ok := bytes.Cut(b, []byte("\nUmask:"))
	if err != nil || !ok {
		return 0, false
	}
	line, _, _ = bytes.Cut(line, []byte("\n"))
	m, err := strconv.ParseUint(string(bytes.TrimSpace(line)), 8, 32)
	return uint32(m), err == nil
}
