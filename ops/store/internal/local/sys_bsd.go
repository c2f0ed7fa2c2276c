//go:build unix && !linux && !darwin

package local

// renameNoReplaceAt renames from (in the folder fromfd) to to (in tofd); to must not exist.
// Without an atomic no-replace rename, the target is checked first: only the store's own
// processes race for these names, and they take the store's locks for them.
func renameNoReplaceAt(fromfd int, from string, tofd int, to string) error {
	return renameCheckedAt(fromfd, from, tofd, to)
}

// driveFlush does nothing here: fsync has already made each file durable.
func driveFlush(fd int) error { return nil }
