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
			"named as an argument is followed. In a folder, symlinks, FIFOs, sockets, devices, .git,\n" +
			".hg, .svn, .DS_Store and the names --exclude matches are skipped, each with a line on\n" +
			"standard error. A path that is not valid UTF-8 is a file.badName record: rename it.\n" +
			"Without paths it reads a manifest and sniffs each record's path.\n\n" +
			example("attachctl sniff shots/ report.pdf > manifest.jsonl",
				"find . -name '*.png' -print0 | attachctl sniff --files-from - -0"),
		Flags: append([]cli.Flag{manifestFlag, noHashFlag, &cli.BoolFlag{Name: "pages",
			Usage: "documents (PDF, .docx, .xlsx, .pptx, .odt) also get pages and textLayer, or docNote; about 5 ms a PDF"}},
			walkFlags...),
		Action: func(c *cli.Context) error {
			if c.Bool("no-hash") && c.Bool("pages") {
				return usageError("--pages reads the whole document, which --no-hash does not: leave one out")
			}
			return runStage(globalOptions(c), stageOptions(c), "sniff", nil)
		},
	})
}
