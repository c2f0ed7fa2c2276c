package main

import (
	"io"

	"github.com/urfave/cli/v2"
)

// The bash and zsh scripts ask attachctl itself what comes next (urfave/cli's
// --generate-bash-completion), so they never go stale. They run the words typed so far as they
// are, without eval, so completing a line never runs what the line quotes.
const bashCompletion = `# bash completion for attachctl. Load it with
#   source <(attachctl completion bash)
# or save it as ~/.local/share/bash-completion/completions/attachctl
_attachctl() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    local -a words=("${COMP_WORDS[@]:0:COMP_CWORD}")
    local opts
    if [[ $cur == -* ]]; then
        opts=$("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)
    else
        opts=$("${words[@]}" --generate-bash-completion 2>/dev/null)
    fi
    local IFS=$'\n'
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _attachctl attachctl
`

const zshCompletion = `#compdef attachctl
# zsh completion for attachctl. Load it with
#   source <(attachctl completion zsh)
# or save it as _attachctl in a folder of your $fpath.
_attachctl() {
  local -a opts
  local cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
if [[ "$funcstack[1]" == "_attachctl" ]]; then
  _attachctl "$@"
else
  compdef _attachctl attachctl
fi
`

func init() {
	register(&cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script for bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "Completes command names, subcommands and flags; paths are left to the shell.\n\n" +
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
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return cli.Exit("attachctl: completion: "+err.Error(), exitFailed)
				}
				script = s
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
