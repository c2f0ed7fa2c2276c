package s3

import (
	"os"
	"path/filepath"
)

// DefaultWorkdir is where resolve puts an S3 store's working copies unless told (SPEC 6: an S3
// store always hands the agent copies): under the XDG cache, one folder per bucket and prefix.
// The copying itself is resolve's work folder (ops/acp).
func DefaultWorkdir(s *Store) (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".cache")
	}
	name := s.Bucket
	if s.Prefix != "" {
		name += "/" + s.Prefix
	}
	return filepath.Join(base, "attachctl", "work", "s3", filepath.FromSlash(name)), nil
}
