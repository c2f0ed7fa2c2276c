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
			"status, environment, files and examples. man finds ~/.local/share/man when ~/.local/bin is\n" +
			"on PATH, or when MANPATH names it.\n\n" +
			example("mkdir -p ~/.local/share/man/man1 && attachctl man > ~/.local/share/man/man1/attachctl.1",
				"MANPATH=\"$HOME/.local/share/man:\" man attachctl",
				"attachctl man | man -l -"),
		Flags: []cli.Flag{
			// docs/manual.md is this page in Markdown (a test keeps it current); not for users.
			&cli.BoolFlag{Name: "markdown", Hidden: true},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError("man takes no arguments")
			}
			page := manPage
			if c.Bool("markdown") {
				page = manMarkdown
			}
			if _, err := io.WriteString(c.App.Writer, page(c.App)); err != nil {
				return outputFailed("man", err)
			}
			return nil
		},
	})
}

// The parts of the manual that are not in the commands' own help, written once for the roff page,
// docs/manual.md and (the exit codes) every command's --help.
type manEntry struct{ tag, text string }

var (
	exitStatuses = []manEntry{
		{"0", "Everything done."},
		{"1", "Some records or uploads failed; the others are done and written. Each failure is on standard error and in its record's \"error\", with its code (docs/errors.md lists them)."},
		{"2", "Bad usage (one line on standard error says what to fix, and nothing was done), or input that is not a manifest or prompt."},
		{"10", "The named store does not exist (verify, ls, rm, touch, resolve; sweep of a store that is gone exits 0 with a line on standard error)."},
		{"11", "The store's lock could not be had within --wait (store.locked); the message names its holder."},
		{"130, 143", "Interrupted by SIGINT or SIGTERM, also while waiting on standard input."},
	}
	manEnvironment = []manEntry{
		{"ATTACHCTL_STORE", "The store when no --store is given."},
		{"ATTACHCTL_SESSION", "The ACP session id of prompt and prepare when no --session is given."},
		{"ATTACHCTL_S3_PATH_STYLE", "1: path-style addressing for S3 stores, as --s3-path-style."},
		{"AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE",
			"How an S3 store (--store s3://BUCKET/PREFIX) is reached, as every AWS SDK takes them."},
		{"XDG_STATE_HOME", "Where the default store is (else ~/.local/state)."},
		{"XDG_CACHE_HOME", "Where shrunk images and working copies go (else ~/.cache)."},
	}
	manFiles = []manEntry{
		{"$XDG_STATE_HOME/attachctl/uploads", "The default store (else ~/.local/state/attachctl/uploads)."},
		{"STORE/ID/NAME", "A finished upload: read-only, owner-only, whole or not at all."},
		{"STORE/.attachctl/", "The store's mark, lock, unfinished uploads and metadata; never mistaken for an upload."},
		{"$XDG_CACHE_HOME/attachctl/shrink", "Shrunk images (shrink --out; else ~/.cache/attachctl/shrink)."},
		{"$XDG_CACHE_HOME/attachctl/work/STORE", "Working copies that resolve hands the agent for an S3 store (--workdir)."},
	}
)

const manSeeAlso = `.BR b3sum (1),
.BR jq (1),
.BR cron (8).
The docs/ folder of the source tree documents the manifest, the store's layout and every error
code; docs/manual.md is this page in Markdown.
`

// roffEntries is entries as tagged paragraphs.
func roffEntries(entries []manEntry) string {
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(".TP\n.B " + roffText(e.tag) + "\n" + roffText(e.text) + "\n")
	}
	return b.String()
}

// exitCodesHelp ends every help page: the exit codes, as urfave/cli's help lays out a section.
var exitCodesHelp = func() string {
	var b strings.Builder
	b.WriteString("\nEXIT CODES:\n")
	for _, e := range exitStatuses {
		b.WriteString(wrapHelp(fmt.Sprintf("   %-10s", e.tag), strings.TrimSuffix(e.text, "."), 96))
	}
	return b.String()
}()

// wrapHelp is text after head, wrapped at width, its later lines indented as far as head.
func wrapHelp(head, text string, width int) string {
	var b strings.Builder
	line := head
	for i, w := range strings.Fields(text) {
		if i > 0 && len(line)+1+len(w) > width {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = strings.Repeat(" ", len(head))
		} else if i > 0 {
			line += " "
		}
		line += w
	}
	return b.String() + line + "\n"
}

// manCommand is one command or subcommand as the manual shows it.
type manCommand struct {
	name, usage, args, desc string
	examples                []string
	flags                   []cli.Flag // its own, not the global ones
}

// manCommands are the commands and subcommands that are not hidden, depth first.
func manCommands(app *cli.App) []manCommand {
	global := map[string]bool{}
	for _, f := range app.Flags {
		global[f.Names()[0]] = true
	}
	var out []manCommand
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, cmd := range cmds {
			if cmd.Hidden {
				continue
			}
			name := path + " " + cmd.Name
			d, ex := splitExamples(cmd.Description)
			out = append(out, manCommand{name: name, usage: cmd.Usage, args: cmd.ArgsUsage, desc: d, examples: ex,
				flags: ownFlags(cmd, global)})
			walk(name, cmd.Subcommands)
		}
	}
	walk(app.Name, app.Commands)
	return out
}

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
	for _, cmd := range manCommands(app) {
		synopsis := "\\fB" + roffText(cmd.name) + "\\fR"
		if len(cmd.flags) > 0 {
			synopsis += " [\\fIFLAGS\\fR]"
		}
		if cmd.args != "" {
			synopsis += " " + roffText(cmd.args)
		}
		b.WriteString(".TP\n" + synopsis + "\n" + roffText(cmd.usage) + ".\n")
		examples = append(examples, cmd.examples...)
		if cmd.desc != "" {
			b.WriteString(".IP\n" + roffPara(cmd.desc))
		}
		if len(cmd.flags) > 0 {
			b.WriteString(".RS\n")
			for _, f := range cmd.flags {
				b.WriteString(manFlag(f))
			}
			b.WriteString(".RE\n")
		}
	}
	b.WriteString(".SH GLOBAL FLAGS\nThey stand before or after the command name.\n")
	for _, f := range app.Flags {
		b.WriteString(manFlag(f))
	}
	b.WriteString(".SH EXIT STATUS\n" + roffEntries(exitStatuses))
	b.WriteString(".SH ENVIRONMENT\n" + roffEntries(manEnvironment))
	b.WriteString(".SH FILES\n" + roffEntries(manFiles))
	b.WriteString(".SH EXAMPLES\n")
	for _, ex := range exampleBlocks(examples) {
		b.WriteString(".PP\n.EX\n")
		for _, l := range ex {
			b.WriteString(roffText(l) + "\n")
		}
		b.WriteString(".EE\n")
	}
	b.WriteString(".SH SEE ALSO\n" + manSeeAlso)
	return b.String()
}

// exampleBlocks groups example lines into commands: a line ending in a backslash goes on.
func exampleBlocks(lines []string) [][]string {
	var out [][]string
	for i := 0; i < len(lines); i++ {
		block := []string{lines[i]}
		for strings.HasSuffix(lines[i], "\\") && i+1 < len(lines) {
			i++
			block = append(block, lines[i])
		}
		out = append(out, block)
	}
	return out
}

// manMarkdown is the manual as docs/manual.md holds it: what manPage says, in Markdown, without
// the version (so that the file changes only when the commands do).
func manMarkdown(app *cli.App) string {
	var b strings.Builder
	b.WriteString("# attachctl manual\n\n")
	b.WriteString("<!-- Generated by `go run ./cmd/attachctl man --markdown > docs/manual.md` from the definitions\n" +
		"that --help and `attachctl man` print; edit those, not this file. -->\n\n")
	b.WriteString("attachctl \u2014 " + mdText(app.Usage) + ". The same text as `attachctl help CMD` and `attachctl man`;\n" +
		"what each command decides beyond its flags is in the other pages of [docs](README.md).\n\n")
	b.WriteString("```\nattachctl [GLOBAL FLAGS] COMMAND [FLAGS] [PATH...]\n```\n\n")
	desc, examples := splitExamples(app.Description)
	b.WriteString(mdPara(desc) + "\n")
	b.WriteString(mdExamples(examples))
	b.WriteString("## Commands\n\n")
	for _, cmd := range manCommands(app) {
		b.WriteString("### " + cmd.name + "\n\n```\n" + cmd.name)
		if len(cmd.flags) > 0 {
			b.WriteString(" [FLAGS]")
		}
		if cmd.args != "" {
			b.WriteString(" " + cmd.args)
		}
		b.WriteString("\n```\n\n" + mdText(capitalize(cmd.usage)) + ".\n\n")
		if cmd.desc != "" {
			b.WriteString(mdPara(cmd.desc) + "\n")
		}
		for _, f := range cmd.flags {
			b.WriteString(mdFlag(f))
		}
		if len(cmd.flags) > 0 {
			b.WriteString("\n")
		}
		b.WriteString(mdExamples(cmd.examples))
	}
	b.WriteString("## Global flags\n\nEvery command takes them, before or after the command name (`attachctl help global`).\n\n")
	for _, f := range app.Flags {
		b.WriteString(mdFlag(f))
	}
	b.WriteString("\n## Exit status\n\n| exit | meaning |\n|---|---|\n")
	for _, e := range exitStatuses {
		b.WriteString("| " + e.tag + " | " + mdText(e.text) + " |\n")
	}
	for _, sec := range []struct {
		title   string
		entries []manEntry
	}{{"Environment", manEnvironment}, {"Files", manFiles}} {
		b.WriteString("\n## " + sec.title + "\n\n")
		for _, e := range sec.entries {
			b.WriteString("- `" + e.tag + "`: " + mdText(e.text) + "\n")
		}
	}
	return b.String()
}

// mdExamples is an example block, or nothing.
func mdExamples(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return "Example:\n\n```sh\n" + strings.Join(lines, "\n") + "\n```\n\n"
}

// mdFlag is one flag as a list item: "- `--chunk BYTES`: largest chunk in BYTES (default: 512KiB)".
func mdFlag(f cli.Flag) string {
	head, usage := flagDoc(f)
	return "- `" + head + "`: " + mdText(usage) + "\n"
}

// mdPara is text as Markdown paragraphs: its lines joined, a blank line a new paragraph.
func mdPara(s string) string {
	var b strings.Builder
	for _, p := range strings.Split(s, "\n\n") {
		b.WriteString(mdText(strings.Join(strings.Fields(p), " ")) + "\n")
	}
	return b.String()
}

// mdText escapes what Markdown would take for markup, so that the text reads as --help prints it.
var mdText = strings.NewReplacer(`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "<", `\<`, ">", `\>`,
	"[", `\[`, "]", `\]`, "|", `\|`, "#", `\#`).Replace

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
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

// flagDoc is a flag's head ("--chunk BYTES, -c") and what it does, with its default.
func flagDoc(f cli.Flag) (head, usage string) {
	head = flagWithValue(f)
	for _, alias := range f.Names()[1:] {
		head += ", " + dashed(alias)
	}
	if d, ok := f.(cli.DocGenerationFlag); ok {
		usage = strings.ReplaceAll(d.GetUsage(), "`", "")
		if def := d.GetDefaultText(); d.TakesValue() && def != "" && def != `""` && def != "0" && !namesDefault(usage) {
			if r, ok := f.(cli.RequiredFlag); !ok || !r.IsRequired() {
				usage += " (default: " + strings.Trim(def, `"`) + ")"
			}
		}
		if r, ok := f.(cli.RequiredFlag); ok && r.IsRequired() {
			usage += " (required)"
		}
	}
	return head, usage
}

// manFlag is one flag as a tagged paragraph: "--chunk BYTES" and what it does, with its default.
func manFlag(f cli.Flag) string {
	head, usage := flagDoc(f)
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
