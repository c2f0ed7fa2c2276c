package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
)

// Helpers for the walk and bad-name scripts:
//
//	mkraw NAME [TEXT]  writes TEXT to the file NAME, both read as the inside of a Go string, so
//	                   that \xe9 is that byte: a file named by raw bytes, or a line that is not UTF-8
//	line FILE N        prints line N of FILE (counting from 1), with its newline, byte for byte
func init() {
	testCommands["mkraw"] = func() int {
		if len(os.Args) < 2 || len(os.Args) > 3 {
			fmt.Fprintln(os.Stderr, "usage: mkraw NAME [TEXT]")
			return 1
		}
		args := append(os.Args[1:], "")
		name, err := strconv.Unquote(`"` + args[0] + `"`)
		text, terr := strconv.Unquote(`"` + args[1] + `"`)
		if err == nil {
			err = terr
		}
		if err == nil {
			err = os.WriteFile(name, []byte(text), 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "mkraw:", err)
			return 1
		}
		return 0
	}
	testCommands["line"] = func() int {
		n, err := strconv.Atoi(os.Args[2])
		f, ferr := os.Open(os.Args[1])
		if err == nil {
			err = ferr
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "line:", err)
			return 1
		}
		defer f.Close()
		br := bufio.NewReader(f)
		for i := 1; ; i++ {
			b, err := br.ReadBytes('\n')
			if i == n && len(b) > 0 {
				os.Stdout.Write(b)
				return 0
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "line: %s has no line %d\n", os.Args[1], n)
				return 1
			}
		}
	}
}
