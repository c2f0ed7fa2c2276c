package main

import (
	"io"

	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "man",
		Usage: "print the manual page (roff), for man(1)",
		Description: "Writes attachctl(1): every command, with its flags, in roff.\n\n" +
			example("attachctl man > ~/.local/share/man/man1/attachctl.1 && man attachctl",
				"attachctl man | man -l -"),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError("man takes no arguments")
			}
			page, err := c.App.ToManWithSection(1)
			if err != nil {
				return cli.Exit("attachctl: man: "+err.Error(), exitFailed)
			}
			if _, err := io.WriteString(c.App.Writer, page); err != nil {
				return outputFailed("man", err)
			}
			return nil
		},
	})
}
