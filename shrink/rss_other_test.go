//go:build !linux

package shrink

import "errors"

// selfPeakRSS is not written where there is no /proc/self/status.
func selfPeakRSS() (int64, error) { return 0, errors.New("peak RSS is measured on Linux only") }
