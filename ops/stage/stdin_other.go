//go:build !unix

package stage

func backgroundReadsFail() {}
