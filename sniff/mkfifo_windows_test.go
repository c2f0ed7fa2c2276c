package sniff

import "errors"

// mkfifo: Windows has no FIFOs in its file system.
func mkfifo(path string, mode uint32) error { return errors.New("no FIFOs on Windows") }
