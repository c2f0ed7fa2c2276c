package main

import (
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "sniff",
		Usage:     "tell what each file is, from its content: type, kind, size, BLAKE3, image size",
		ArgsUsage: "[PATH...]",
		Description: "Writes one manifest record per file; folders are walked in lexical order. A symlink\n" +
			"named as an argument is followed; one met inside a folder is not. Without paths it\n" +
			"reads a manifest and sniffs each record's path.\n\n" +
			example("attachctl sniff shots/ report.pdf > manifest.jsonl"),
		Flags: []cli.Flag{manifestFlag, noHashFlag},
		Action: func(c *cli.Context) error {
			return runStage(c, "sniff", nil)
		},
	})
}
