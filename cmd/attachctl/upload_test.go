package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Helpers for the upload scripts:
//
//	fmode GLOB...      prints the permission bits of each match in octal, without following a link
//	idof FILE          prints the "id" of the JSON object in FILE (the output of upload begin)
//	step SUB ARGS...   runs attachctl upload SUB --store $S --id <the id in ./id> ARGS...
//	exits N CMD ARGS   runs attachctl ARGS (CMD is attachctl) and succeeds when it exits with N
func init() {
	helperCmds["fmode"] = func(sc helper, args []string) error {
		return eachMatch(sc, args, func(p string) error {
			fi, err := os.Lstat(p)
			if err == nil {
				fmt.Fprintf(sc.stdout, "%04o %s\n", fi.Mode().Perm(), filepath.Base(p))
			}
			return err
		})
	}
	helperCmds["idof"] = func(sc helper, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("usage: idof FILE")
		}
		b, err := os.ReadFile(sc.abs(args[0]))
		var v struct{ ID string }
		if err == nil {
			err = json.Unmarshal(b, &v)
		}
		if err != nil || v.ID == "" {
			return fmt.Errorf("%v %s", err, b)
		}
		fmt.Fprint(sc.stdout, v.ID)
		return nil
	}
	testCommands["step"] = func() int {
		id, err := os.ReadFile("id")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		args := []string{"attachctl", "upload", os.Args[1], "--store", os.Getenv("S"), "--id", string(id)}
		return run(append(args, os.Args[2:]...))
	}
	testCommands["exits"] = func() int {
		want, err := strconv.Atoi(os.Args[1])
		if err != nil || len(os.Args) < 3 || os.Args[2] != "attachctl" {
			fmt.Fprintln(os.Stderr, "usage: exits N attachctl ARGS...")
			return 1
		}
		if got := run(os.Args[2:]); got != want {
			fmt.Fprintf(os.Stderr, "exit %d, want %d\n", got, want)
			return 1
		}
		return 0
	}
}
