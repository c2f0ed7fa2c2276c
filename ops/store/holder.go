package store

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Holder is what a store's lock says of the process that holds it, so that a command that could
// not have the lock names who has it: its pid, its host and since when. The local store writes it
// into its lock file, the S3 store into its lease object's metadata.
type Holder struct {
	PID   int
	Host  string
	Since time.Time
}

// Me is this process as a lock's holder, from now.
func Me() Holder {
	host, _ := os.Hostname()
	return Holder{PID: os.Getpid(), Host: host, Since: time.Now().UTC()}
}

// String is the holder as kept in a lock: "pid=N host=H since=RFC3339", one line.
func (h Holder) String() string {
	return fmt.Sprintf("pid=%d host=%s since=%s", h.PID, strings.Join(strings.Fields(h.Host), "_"), h.Since.UTC().Format(time.RFC3339))
}

// ParseHolder reads what String wrote; ok is false when s is not one (an empty lock, one of an
// earlier version, garbage).
func ParseHolder(s string) (h Holder, ok bool) {
	var pidOK, sinceOK bool
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "pid":
			h.PID, err = strconv.Atoi(v)
			pidOK = err == nil && h.PID > 0
		case "host":
			h.Host = v
		case "since":
			h.Since, err = time.Parse(time.RFC3339, v)
			sinceOK = err == nil
		}
	}
	return h, pidOK && sinceOK
}

// Describe is the holder in words: "pid 4242 on host db1 since 2026-12-02T03:17:00Z (4m ago)".
func (h Holder) Describe(now time.Time) string {
	host := h.Host
	if host == "" {
		host = "an unknown host"
	} else {
		host = "host " + host
	}
	return fmt.Sprintf("pid %d on %s since %s (%s ago)", h.PID, host, h.Since.UTC().Format(time.RFC3339),
		now.Sub(h.Since).Round(time.Second))
}

// HeldBy is the part of a store.locked message after the lock's name: who holds it, if known,
// how long it was waited for, and how to wait longer.
func HeldBy(h Holder, known bool, wait time.Duration) string {
	who := "is held"
	if known {
		who = "is held by " + h.Describe(time.Now())
	}
	return fmt.Sprintf("%s; not had within %s; give --wait DURATION (say --wait 10m) to wait for it", who, wait)
}
