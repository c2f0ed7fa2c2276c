//go:build !unix

package stage

const oNonblock = 0

// oNofollow opens a folder's file without following a symlink put where the walk found a file.
const oNofollow = 0
