package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "man",
		Usage: "print the manual page (roff), for man(1)",
		Description: "Writes attachctl(1) in roff: every command with its flags, the global flags once, exit\n" +
			"status, environment, files and examples.\n\n" +
			example("attachctl man > ~/.local/share/man/man1/attachctl.1 && man attachctl",
				"attachctl man | man -l -"),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError("man takes no arguments")
			}
			if _, err := io.WriteString(c.App.Writer, manPage(c.App)); err != nil {
				return outputFailed("man", err)
			}
			return nil
		},
	})
}

// The parts of the page that are not in the commands' own help.
const (
	manExitStatus = `.TP
.B 0
Everything done.
.TP
.B 1
Some records or uploads failed; the others are done and written. Each failure is on standard
error and in its record's "error", with its code (see the README for the codes).
.TP
.B 2
Bad usage (one line on standard error says what to fix, and nothing was done), or input that is
not a manifest or prompt.
.TP
.B 10
The named store does not exist (verify, ls, rm, touch, resolve); a sweep of a store that does not
exist exits 0 with its line.
.TP
.B 11
The store's lock was not had within --wait; the message names its holder.
.TP
.BR 130 ", " 143
Interrupted by SIGINT or SIGTERM, also while waiting on standard input.
`
	manEnvironment = `.TP
.B ATTACHCTL_STORE
The store when no \-\-store is given.
.TP
.B ATTACHCTL_SESSION
The ACP session id of prompt and prepare when no \-\-session is given.
.TP
.B ATTACHCTL_S3_PATH_STYLE
1: path-style addressing for S3 stores, as \-\-s3\-path\-style.
.TP
.BR AWS_ENDPOINT_URL_S3 ", " AWS_ENDPOINT_URL ", " AWS_REGION ", " AWS_ACCESS_KEY_ID ", " AWS_SECRET_ACCESS_KEY ", " AWS_PROFILE
How an S3 store (\-\-store s3://BUCKET/PREFIX) is reached, as every AWS SDK takes them.
.TP
.B XDG_STATE_HOME
Where the default store is (else ~/.local/state).
.TP
.B XDG_CACHE_HOME
Where shrunk images and working copies go (else ~/.cache).
`
	manFiles = `.TP
.I $XDG_STATE_HOME/attachctl/uploads
The default store (else
.IR ~/.local/state/attachctl/uploads ).
.TP
.I STORE/ID/NAME
A finished upload: read-only, owner-only, whole or not at all.
.TP
.I STORE/.attachctl/
The store's mark, lock, unfinished uploads and metadata; never mistaken for an upload.
.TP
.I $XDG_CACHE_HOME/attachctl/shrink
Shrunk images (shrink \-\-out; else
.IR ~/.cache/attachctl/shrink ).
.TP
.I $XDG_CACHE_HOME/attachctl/work/STORE
Working copies that resolve hands the agent for an S3 store (\-\-workdir).
`
	manSeeAlso = `.BR b3sum (1),
.BR jq (1),
.BR cron (8).
The README of the source tree documents the manifest, the store's layout and every error code.
`
)

// manPage is attachctl(1) in roff.
func manPage(app *cli.App) string {
	var b strings.Builder
	v := versionOf(readBuildInfo())
	fmt.Fprintf(&b, ".TH ATTACHCTL 1 \"\" \"attachctl %s\" \"User Commands\"\n", roffText(v))
	b.WriteString(".SH NAME\nattachctl \\- " + roffText(app.Usage) + "\n")
	b.WriteString(".SH SYNOPSIS\n.B attachctl\n[\\fIGLOBAL FLAGS\\fR] \\fICOMMAND\\fR [\\fIFLAGS\\fR] [\\fIPATH\\fR...]\n")
	desc, examples := splitExamples(app.Description)
	b.WriteString(".SH DESCRIPTION\n" + roffPara(desc))
	b.WriteString(".SH COMMANDS\n")
	global := map[string]bool{}
	for _, f := range app.Flags {
		global[f.Names()[0]] = true
	}
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, cmd := range cmds {
			if cmd.Hidden {
				continue
			}
			name := path + " " + cmd.Name
			synopsis := "\\fB" + roffText(name) + "\\fR"
			if own := ownFlags(cmd, global); len(own) > 0 {
				synopsis += " [\\fIFLAGS\\fR]"
			}
			if cmd.ArgsUsage != "" {
				synopsis += " " + roffText(cmd.ArgsUsage)
			}
			b.WriteString(".TP\n" + synopsis + "\n" + roffText(cmd.Usage) + ".\n")
			d, ex := splitExamples(cmd.Description)
			examples = append(examples, ex...)
			if d != "" {
				b.WriteString(".IP\n" + roffPara(d))
			}
			if own := ownFlags(cmd, global); len(own) > 0 {
				b.WriteString(".RS\n")
				for _, f := range own {
					b.WriteString(manFlag(f))
				}
				b.WriteString(".RE\n")
			}
			walk(name, cmd.Subcommands)
		}
	}
	walk("attachctl", app.Commands)
	b.WriteString(".SH GLOBAL FLAGS\nThey stand before or after the command name.\n")
	for _, f := range app.Flags {
		b.WriteString(manFlag(f))
	}
	b.WriteString(".SH EXIT STATUS\n" + manExitStatus)
	b.WriteString(".SH ENVIRONMENT\n" + manEnvironment)
	b.WriteString(".SH FILES\n" + manFiles)
	b.WriteString(".SH EXAMPLES\n")
	for i := 0; i < len(examples); i++ {
		b.WriteString(".PP\n.EX\n" + roffText(examples[i]) + "\n")
		for strings.HasSuffix(examples[i], "\\") && i+1 < len(examples) { // continued on the next line
			i++
			b.WriteString(roffText(examples[i]) + "\n")
		}
		b.WriteString(".EE\n")
	}
	b.WriteString(".SH SEE ALSO\n" + manSeeAlso)
	return b.String()
}

// ownFlags are cmd's flags that are not global (those are listed once).
func ownFlags(cmd *cli.Command, global map[string]bool) []cli.Flag {
	var own []cli.Flag
	for _, f := range cmd.Flags {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		if !global[f.Names()[0]] {
			own = append(own, f)
		}
	}
	return own
}

// manFlag is one flag as a tagged paragraph: "--chunk BYTES" and what it does, with its default.
func manFlag(f cli.Flag) string {
	head := flagWithValue(f)
	names := f.Names()
	for _, alias := range names[1:] {
		head += ", " + dashed(alias)
	}
	name, value, _ := strings.Cut(head, " ")
	line := "\\fB" + roffText(name) + "\\fR"
	if value != "" {
		if strings.HasPrefix(value, "--") || strings.HasPrefix(value, "-") {
			line += " " + roffText(value)
		} else {
			v, rest, _ := strings.Cut(value, ",")
			line += " \\fI" + roffText(v) + "\\fR"
			if rest != "" {
				line += "," + roffText(rest)
			}
		}
	}
	usage := ""
	if d, ok := f.(cli.DocGenerationFlag); ok {
		usage = strings.ReplaceAll(d.GetUsage(), "`", "")
		if def := d.GetDefaultText(); d.TakesValue() && def != "" && def != `""` && def != "0" {
			if r, ok := f.(cli.RequiredFlag); !ok || !r.IsRequired() {
				usage += " (default: " + strings.Trim(def, `"`) + ")"
			}
		}
		if r, ok := f.(cli.RequiredFlag); ok && r.IsRequired() {
			usage += " (required)"
		}
	}
	return ".TP\n" + line + "\n" + roffText(usage) + "\n"
}

// splitExamples cuts a help text at its "Example:" block, and returns the text before it and
// the example lines.
func splitExamples(s string) (string, []string) {
	text, ex, found := strings.Cut(s, "Example:\n")
	if !found {
		return strings.TrimSpace(s), nil
	}
	var lines []string
	for _, l := range strings.Split(ex, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.TrimSpace(text), lines
}

// roffPara is text as roff paragraphs: its lines joined, a blank line a new paragraph.
func roffPara(s string) string {
	var b strings.Builder
	for i, p := range strings.Split(s, "\n\n") {
		if i > 0 {
			b.WriteString(".PP\n")
		}
		b.WriteString(roffText(strings.Join(strings.Fields(p), " ")) + "\n")
	}
	return b.String()
}

// roffText escapes text for roff: backslashes, and hyphens (so that flags are copied as typed).
func roffText(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

func readBuildInfo() *debug.BuildInfo {
	info, _ := debug.ReadBuildInfo()
	return info
}
