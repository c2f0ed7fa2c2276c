//go:build race

package main

// raceBuild is true under -race: scripts test it as the condition [race] (main_test.go).
const raceBuild = true
