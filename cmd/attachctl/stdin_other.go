//go:build !unix

package main

func backgroundReadsFail() {}
