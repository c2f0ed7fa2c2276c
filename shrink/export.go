package shrink

// What other derived files share with shrink's own (docs/resolve.md, "Documents"): resolve's
// document text and page images are cached beside the shrunk images, written the same way, and
// a document's decoding draws on the same --max-memory budget as an image's.

// Reserve waits until n bytes of the --max-memory budget max are free and takes them, shared
// with every image decode under the same budget; the returned function gives them back. n must
// be at most max.
func Reserve(max, n int64) func() { return reserve(max, min(n, max)) }

// WriteCache writes b to path in a cache folder as shrink writes its results: through a
// temporary file renamed into place (so a file there is always whole), 0600 in a folder made
// 0700. It returns the BLAKE3 of what it wrote.
func WriteCache(path string, b []byte) (string, error) { return writeAtomic(path, b) }
