//go:build !linux

package rsstest

import "errors"

// PeakKiB is not written where there is no /proc/self/status.
func PeakKiB() (int64, error) { return 0, errors.New("peak RSS is measured on Linux only") }
