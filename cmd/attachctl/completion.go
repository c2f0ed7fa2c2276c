package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
)

// Shell completion never runs a command. The scripts ask `attachctl __complete -- WORD... CUR`
// (the words typed after attachctl, then the one being completed, perhaps empty), which only reads
// the command tree: commands, subcommands, flags, and the values of flags that take a fixed set.
// It prints one candidate a line ("word<TAB>description"), and a last line ":files" where a path
// may come next, which the script leaves to the shell's own file completion.
//
// urfave/cli's own completion (--generate-bash-completion) runs the command's action when the line
// holds a "--" or a path: `attachctl upload notes.txt --<Tab>` uploaded notes.txt. It is off, and
// a line ending in --generate-bash-completion (a script saved from an older attachctl) is answered
// here too, so that no saved script can run an action either.

const completeCommand = "__complete"

const bashCompletion = `# bash completion for attachctl. Load it with
#   source <(attachctl completion bash)
# or save it as ~/.local/share/bash-completion/completions/attachctl
# It asks 'attachctl __complete', which only reads the command tree: completing never runs a command.
_attachctl() {
    local cur=${COMP_WORDS[COMP_CWORD]} line files=
    local IFS=$'\n'
    COMPREPLY=()
    for line in $(command attachctl __complete -- "${COMP_WORDS[@]:1:COMP_CWORD-1}" "$cur" 2>/dev/null); do
        if [[ $line == :files ]]; then
            files=1
        else
            COMPREPLY+=("${line%%$'\t'*}")
        fi
    done
    if [[ -n $files ]]; then
        compopt -o filenames 2>/dev/null
        COMPREPLY+=($(compgen -f -- "$cur"))
    fi
}
complete -o bashdefault -o default -F _attachctl attachctl
`

const zshCompletion = `#compdef attachctl
# zsh completion for attachctl. Load it with
#   source <(attachctl completion zsh)
# or save it as _attachctl in a folder of your $fpath.
# It asks 'attachctl __complete', which only reads the command tree: completing never runs a command.
_attachctl() {
  local -a lines cands
  local line files=0
  lines=("${(@f)$(command attachctl __complete -- "${(@)words[2,CURRENT-1]}" "${words[CURRENT]}" 2>/dev/null)}")
  for line in "${lines[@]}"; do
    [[ -z $line ]] && continue
    if [[ $line == :files ]]; then
      files=1
    else
      line=${line//:/\\:}
      cands+=("${line/$'\t'/:}")
    fi
  done
  (( ${#cands} )) && _describe -t values attachctl cands
  (( files )) && _files
  return 0
}
if [[ "$funcstack[1]" == "_attachctl" ]]; then
  _attachctl "$@"
else
  compdef _attachctl attachctl
fi
`

const fishCompletion = `# fish completion for attachctl. Load it with
#   attachctl completion fish | source
# or save it as ~/.config/fish/completions/attachctl.fish
# It asks 'attachctl __complete', which only reads the command tree: completing never runs a command.
function __attachctl_complete
    set -l words (commandline -opc)
    set -e words[1]
    set -l cur (commandline -ct)
    set -l files 0
    for line in (command attachctl __complete -- $words $cur 2>/dev/null)
        if test "$line" = :files
            set files 1
        else
            printf '%s\n' $line
        end
    end
    if test $files = 1
        __fish_complete_path $cur
    end
end
complete -c attachctl -f -a '(__attachctl_complete)'
`

// flagChoices are the values of the flags that take a fixed set, by "COMMAND FLAG" or by the
// flag's name on every command. TestFlagChoicesInHelp checks that each flag's help names them.
var flagChoices = map[string][]string{
	"progress":      {"auto", "always", "never"},
	"ls format":     {"manifest", "text"},
	"verify format": {"manifest", "text", "b3sum", "combined"},
	"caps":          {"image", "audio", "embeddedContext"},
	"agent":         strings.Split(adapterNames, ", "),
	"model":         strings.Split(modelNames, ", "),
}

// choicesOf is flagChoices for the flag name of cmd, or nil.
func choicesOf(cmd *cli.Command, name string) []string {
	if choices, ok := flagChoices[cmd.Name+" "+name]; ok {
		return choices
	}
	return flagChoices[name]
}

// listFlags take a comma-separated list of their choices.
var listFlags = map[string]bool{"caps": true}

// argChoices is an ArgsUsage that is a fixed set, as "bash|zsh|fish".
var argChoices = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z]+(\|[a-z]+)+$`) })

func init() {
	register(&cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script for bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "Completes command names, subcommands, flags and the values of --progress, --format and\n" +
			"--caps; paths are left to the shell. Completing never runs a command.\n\n" +
			example("source <(attachctl completion bash)",
				"attachctl completion zsh > \"${fpath[1]}/_attachctl\"",
				"attachctl completion fish > ~/.config/fish/completions/attachctl.fish"),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("completion takes one shell: bash, zsh or fish")
			}
			var script string
			switch shell := c.Args().First(); shell {
			case "bash":
				script = bashCompletion
			case "zsh":
				script = zshCompletion
			case "fish":
				script = fishCompletion
			default:
				return usageError("completion %q: the shells are bash, zsh and fish", shell)
			}
			if _, err := io.WriteString(c.App.Writer, script); err != nil {
				return outputFailed("completion", err)
			}
			return nil
		},
	})
}

// completionRequest reports whether args ask for completions rather than a run, and answers them
// on w: `attachctl __complete -- WORD... CUR`, or a line that ends in --generate-bash-completion.
func completionRequest(app *cli.App, args []string, w io.Writer) bool {
	switch {
	case len(args) > 1 && args[1] == completeCommand:
		words := args[2:]
		if len(words) > 0 && words[0] == "--" {
			words = words[1:]
		}
		if len(words) == 0 {
			words = []string{""}
		}
		for _, c := range completions(app, words[:len(words)-1], words[len(words)-1]) {
			fmt.Fprintln(w, c)
		}
		return true
	case len(args) > 1 && args[len(args)-1] == "--generate-bash-completion":
		words, cur := args[1:len(args)-1], ""
		if n := len(words); n > 0 && strings.HasPrefix(words[n-1], "-") {
			words, cur = words[:n-1], words[n-1]
		}
		for _, c := range completions(app, words, cur) {
			if c != ":files" {
				word, _, _ := strings.Cut(c, "\t")
				fmt.Fprintln(w, word)
			}
		}
		return true
	}
	return false
}

// completions are the candidates for cur after the words typed before it, filtered by cur, each
// "word<TAB>description", and ":files" last where a path may come.
func completions(app *cli.App, words []string, cur string) []string {
	cmd := &cli.Command{Name: app.Name, Flags: append(append([]cli.Flag(nil), app.Flags...), cli.VersionFlag), Subcommands: app.Commands}
	help, positional, onlyPaths := false, false, false
	var pending cli.Flag // a flag whose value cur is
	for i := 0; i < len(words); i++ {
		t := words[i]
		switch {
		case onlyPaths:
		case t == "--":
			onlyPaths = true
		case len(t) > 1 && t[0] == '-':
			name, _, hasValue := strings.Cut(strings.TrimLeft(t, "-"), "=")
			if f := findFlag(cmd.Flags, name); f != nil && takesValue(f) && !hasValue {
				if i+1 < len(words) && words[i+1] == "=" { // bash splits --flag=value at the =
					i++
				}
				if i+1 == len(words) {
					pending = f
				}
				i++
			}
		case help || !positional && len(cmd.Subcommands) > 0:
			if t == "help" && !help && cmd.Name == app.Name {
				help = true
			} else if sub := cmd.Command(t); sub != nil {
				cmd = sub
			} else {
				positional = true
			}
		default:
			positional = true
		}
	}
	var out []string
	add := func(word, desc string) {
		if strings.HasPrefix(word, cur) {
			out = append(out, strings.TrimSuffix(word+"\t"+firstLine(desc), "\t"))
		}
	}
	takesPaths := strings.Contains(cmd.ArgsUsage, "PATH") || strings.Contains(cmd.ArgsUsage, "FILE")
	switch {
	case onlyPaths:
		return []string{":files"}
	case cur == "=" && pending != nil: // bash: --flag=<Tab>
		var vals []string
		for _, v := range valueChoices(cmd, pending, "") {
			vals = append(vals, "="+v)
		}
		return vals
	case pending != nil:
		if choices := valueChoices(cmd, pending, cur); choices != nil {
			return choices
		}
		return []string{":files"}
	case strings.HasPrefix(cur, "-") && strings.Contains(cur, "="): // zsh, fish: --flag=VALUE
		name, value, _ := strings.Cut(strings.TrimLeft(cur, "-"), "=")
		f := findFlag(cmd.Flags, name)
		if f == nil || !takesValue(f) {
			return nil
		}
		prefix := cur[:len(cur)-len(value)]
		var vals []string
		for _, v := range valueChoices(cmd, f, value) {
			vals = append(vals, prefix+v)
		}
		return vals
	case strings.HasPrefix(cur, "-"):
		global := map[string]bool{}
		for _, f := range app.Flags {
			global[f.Names()[0]] = true
		}
		for _, f := range append(cmd.Flags, cli.HelpFlag) {
			// The global flags are hidden from a command's help, not from its completion.
			if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() && !global[f.Names()[0]] {
				continue
			}
			usage := ""
			if d, ok := f.(cli.DocGenerationFlag); ok {
				usage = strings.ReplaceAll(d.GetUsage(), "`", "")
			}
			for _, n := range f.Names() {
				add(dashed(n), usage)
			}
		}
		return out
	case help || !positional && len(cmd.Subcommands) > 0:
		for _, sub := range cmd.Subcommands {
			if !sub.Hidden {
				add(sub.Name, sub.Usage)
			}
		}
		if cmd.Name == app.Name && !help {
			add("help", "show a command's flags, examples and exit codes")
		}
		if help && cmd.Name == app.Name {
			add("global", "the flags every command takes")
		}
	case !positional && argChoices().MatchString(cmd.ArgsUsage):
		for _, v := range strings.Split(cmd.ArgsUsage, "|") {
			add(v, "")
		}
		return out
	}
	if takesPaths && !help {
		out = append(out, ":files")
	}
	return out
}

// valueChoices are the values of flag f of cmd that start with cur, or nil when f takes no fixed set.
// A list flag completes the last item of its comma-separated list.
func valueChoices(cmd *cli.Command, f cli.Flag, cur string) []string {
	name := f.Names()[0]
	choices := choicesOf(cmd, name)
	if choices == nil {
		return nil
	}
	done, last := "", cur
	if listFlags[name] {
		if i := strings.LastIndexByte(cur, ','); i >= 0 {
			done, last = cur[:i+1], cur[i+1:]
		}
	}
	given := map[string]bool{}
	for _, g := range strings.Split(done, ",") {
		given[g] = true
	}
	out := []string{}
	for _, c := range choices {
		if strings.HasPrefix(c, last) && !given[c] {
			out = append(out, done+c)
		}
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
