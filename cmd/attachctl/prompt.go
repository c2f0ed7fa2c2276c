package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/attachctl/attachctl/manifest"
	"github.com/attachctl/attachctl/manifest/fault"
	"github.com/attachctl/attachctl/ops/acp"
	"github.com/urfave/cli/v2"
)

// promptFlags are prompt's own flags, also on prepare.
func promptFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "text", Usage: "the text block that comes first"},
		&cli.StringFlag{Name: "text-file", Usage: "read the text block from `FILE` (- for standard input when the manifest is not there)"},
		&cli.StringFlag{Name: "session", Usage: "the ACP session id (default $ATTACHCTL_SESSION, else the store folder's name)"},
		&cli.BoolFlag{Name: "jsonrpc", Usage: "write a JSON-RPC 2.0 session/prompt request instead of its params"},
		&cli.StringFlag{Name: "id", Value: "1", Usage: "the request's id with --jsonrpc: a whole number, else a string"},
		&cli.BoolFlag{Name: "allow-empty", Usage: "an empty manifest gives a prompt of the text alone (without it: nothing written, exit 1)"},
	}
}

func init() {
	register(&cli.Command{
		Name:      "prompt",
		Usage:     "write ACP session/prompt JSON that names each record's upload by reference",
		ArgsUsage: "[PATH...]",
		Description: "Writes one JSON document, compact on one line: {\"sessionId\", \"prompt\": [...]}, the text\n" +
			"block first, then one block per record in order: an image block for PNG, JPEG, GIF and\n" +
			"WebP, a resource_link with uri acpmux-upload:ID for every other file, both carrying\n" +
			"_meta.acpmux.upload {uploadId, fileName}. A record with no upload (upload.missing) or with\n" +
			"an error makes it write nothing and exit 1.\n\n" +
			example("attachctl upload --store S shots/*.png | attachctl prompt --text \"What changed?\" > prompt.json"),
		Flags: append([]cli.Flag{manifestFlag}, promptFlags()...),
		Action: func(c *cli.Context) error {
			p, err := promptOptions(c)
			if err != nil {
				return err
			}
			g := globalOptions(c)
			recs, err := collect(g, loop{stage: "prompt", flags: stageOptions(c)})
			if err != nil {
				return err
			}
			out, err := buildPrompt(g, p, recs)
			if err != nil {
				return err
			}
			if _, err := g.stdout.Write(out); err != nil {
				return outputFailed("prompt", err)
			}
			return nil
		},
	})
}

// promptValues are the promptFlags read once (promptOptions).
type promptValues struct {
	text       string // --text, or what --text-file holds
	hasText    bool   // one of them was given
	allowEmpty bool
	jsonrpc    bool
	id         string // --id, with --jsonrpc
	session    string // --session
}

// promptOptions reads the promptFlags: the text is --text or what --text-file holds.
func promptOptions(c *cli.Context) (promptValues, error) {
	p := promptValues{allowEmpty: c.Bool("allow-empty"), jsonrpc: c.Bool("jsonrpc"), id: c.String("id"), session: c.String("session")}
	if err := onlyWith(c, "jsonrpc", "id"); err != nil {
		return p, err
	}
	if c.IsSet("text") && c.IsSet("text-file") {
		return p, usageError("--text and --text-file: give one")
	}
	name := c.String("text-file")
	if name == "" {
		p.text, p.hasText = c.String("text"), c.IsSet("text")
		return p, nil
	}
	var b []byte
	var err error
	if name == "-" {
		if !c.Args().Present() && (c.String("manifest") == "" || c.String("manifest") == "-") {
			return p, usageError("--text-file -: standard input carries the manifest")
		}
		b, err = io.ReadAll(c.App.Reader)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return p, usageError("--text-file: %v", err)
	}
	p.text, p.hasText = string(b), true
	return p, nil
}

// buildPrompt writes the prompt document for recs, or reports every refusal and returns exit 1.
func buildPrompt(g globals, p promptValues, recs []*manifest.Record) ([]byte, error) {
	if len(recs) == 0 && !p.allowEmpty {
		// A pipeline whose first stage failed hands on nothing: a prompt without its attachments
		// must not look like success.
		fmt.Fprintf(g.stderr, "attachctl: %s: no records, so no attachments: nothing written (--allow-empty writes a prompt of the text alone)\n", g.cmd)
		return nil, exitError{exitFailed}
	}
	session, err := sessionID(g, p.session, recs)
	if err != nil {
		return nil, err
	}
	opts := acp.PromptOptions{Session: session, Text: p.text, HasText: p.hasText, JSONRPC: p.jsonrpc, ID: acp.RequestID(p.id)}
	out, err := acp.Prompt(recs, opts)
	if err != nil {
		reportAll(g, "prompt", err)
		return nil, exitError{exitFailed}
	}
	return out, nil
}

// sessionID is session (--session), else $ATTACHCTL_SESSION, else the store folder's name: the
// store named by --store or $ATTACHCTL_STORE, else the one store all records were uploaded to,
// else the default.
func sessionID(g globals, session string, recs []*manifest.Record) (string, error) {
	if session != "" {
		return session, nil
	}
	if s := os.Getenv("ATTACHCTL_SESSION"); s != "" {
		return s, nil
	}
	if !g.storeGiven() {
		common := ""
		for _, r := range recs {
			if r.Upload == nil || (common != "" && r.Upload.Store != common) {
				common = ""
				break
			}
			common = r.Upload.Store
		}
		if common != "" {
			return filepath.Base(common), nil
		}
	}
	dir, err := g.storeDir()
	if err != nil {
		return "", err
	}
	return filepath.Base(dir), nil
}

// reportAll prints each refusal that err joins on standard error.
func reportAll(g globals, stage string, err error) {
	for _, e := range joined(err) {
		me := *fault.AsError(e, fault.UploadInvalid)
		if me.Stage == "" {
			me.Stage = stage
		}
		g.report(&me)
	}
}

// joined is the errors that err joins (errors.Join), or err alone.
func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
