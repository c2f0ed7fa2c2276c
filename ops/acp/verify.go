package acp

import "os"

// Nothing goes out unless the whole prompt is good (docs/resolve.md): before the uploads are
// marked used and before the first byte is written, every inline file is read through the same
// open the output will use and checked as the output checks it (size, type, and the BLAKE3 the
// store recorded), without encoding it. A stored image corrupted since it was finished is then a
// refusal with an empty standard output, not half a prompt.
//
// Checking first and streaming after reads each inline file twice, the second time mostly from
// the page cache, and keeps memory at one chunk per file being checked. Rendering the whole
// document into a temporary file and copying it out was measured too: it writes every byte of
// base64 to disk and read it back, and made a 13 MB resolve about 9% slower (elapsed) on a shared
// 2-vCPU machine, where checking first costs a second read from the page cache: the write does
// not hash again a file that is still the one checked (sameChecked in write.go). What checking first leaves open
// is a file changed in place between the check and the write (a finished upload is read-only;
// only someone writing into the store can): the write still catches it and stops, as before.

// verifyInline checks every inline file, refJobs at once, and returns the first failure in prompt
// order, naming its block.
func (res *Resolution) verifyInline() error {
	todo := make([]*ref, len(res.refs))
	for i, r := range res.refs {
		if r != nil && (r.mode == inlineImage || r.mode == inlineAudio) {
			todo[i] = r
		}
	}
	errs := eachRef(todo, func(_ int, r *ref) error {
		if r.of != nil && r.fitted == nil && r.checked != nil {
			// A document's page found in the cache was hashed as it was read (cachedPage): while
			// it is still that file, it is not read again until it is written.
			if fi, err := os.Lstat(r.path); err == nil && sameChecked(r.checked, fi) {
				return nil
			}
		}
		return streamBase64(res.u, nil, r, make([]byte, streamChunk))
	})
	for i, err := range errs {
		if err != nil {
			return atBlock(res.inputBlock(i), err)
		}
	}
	return nil
}
