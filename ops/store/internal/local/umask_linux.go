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
	if err != nil {
		return 0, false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("Umask:")); ok {
			m, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 8, 32)
			return uint32(m), err == nil
		}
	}
	return 0, false
}
