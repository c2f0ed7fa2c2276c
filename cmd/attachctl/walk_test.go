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
	helperCmds["mkraw"] = func(sc helper, args []string) error {
		if len(args) < 1 || len(args) > 2 {
			return fmt.Errorf("usage: mkraw NAME [TEXT]")
		}
		args = append(args, "")
		name, err := strconv.Unquote(`"` + args[0] + `"`)
		text, terr := strconv.Unquote(`"` + args[1] + `"`)
		if err == nil {
			err = terr
		}
		if err != nil {
			return err
		}
		return os.WriteFile(sc.abs(name), []byte(text), 0o644)
	}
	helperCmds["line"] = func(sc helper, args []string) error {
		if len(args) != 2 {
			return fmt.Errorf("usage: line FILE N")
		}
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return err
		}
		f, err := os.Open(sc.abs(args[0]))
		if err != nil {
			return err
		}
		defer f.Close()
		br := bufio.NewReader(f)
		for i := 1; ; i++ {
			b, err := br.ReadBytes('\n')
			if i == n && len(b) > 0 {
				_, err := sc.stdout.Write(b)
				return err
			}
			if err != nil {
				return fmt.Errorf("%s has no line %d", args[0], n)
			}
		}
	}
}
