package acp

import (
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/store"
)

// promptLimits refuses a prompt that names more uploads than opts.MaxFiles, or whose uploads
// (each once) hold more than opts.MaxBytes together: upload.tooMany, naming the limit and what the
// prompt holds. It runs after every reference is examined, before anything is marked or written.
func promptLimits(refs []*ref, opts Options) error {
	if opts.MaxFiles <= 0 && opts.MaxBytes <= 0 {
		return nil
	}
	seen := map[string]bool{}
	var files, bytes int64
	for _, r := range refs {
		if r == nil || seen[r.id] {
			continue
		}
		seen[r.id] = true
		files++
		bytes += r.size
	}
	if opts.MaxFiles > 0 && files > opts.MaxFiles {
		return fault.Errorf(fault.UploadTooMany, "the prompt names %d uploads; at most %d go in one prompt (--max-files)", files, opts.MaxFiles)
	}
	if opts.MaxBytes > 0 && bytes > opts.MaxBytes {
		return fault.Errorf(fault.UploadTooMany, "the prompt's %d uploads hold %s; at most %s go in one prompt (--max-bytes)", files, store.Bytes(bytes), store.Bytes(opts.MaxBytes))
	}
	return nil
}
