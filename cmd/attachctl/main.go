// Command attachctl prepares files for agent prompts, offline: sniff, shrink, upload, verify, touch,
// sweep, prompt, resolve and prepare. This package is CLI wiring only; the work is in the packages.
package main

import "os"

func main() { os.Exit(run(os.Args)) }
