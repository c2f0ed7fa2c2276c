//go:build !unix

package stage

const oNonblock = 0
