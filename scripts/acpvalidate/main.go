// Command acpvalidate checks that FILE is one line of JSON (and a newline) that validates against
// ACP v1's PromptRequest in SCHEMA (testdata/acp/schema.json): the document itself, or the params
// of a JSON-RPC session/prompt request. Exit 0 when it does, 1 with the reason when not.
//
//	acpvalidate SCHEMA FILE
//
// The CLI's scripts run it as `acpvalidate FILE` (cmd/attachctl builds it once per test run). It
// is a program of its own, not one of the test binary's helpers, so that the JSON Schema
// library's start-up (30 ms under -race) is not paid by each of the hundreds of attachctl
// processes the scripts run as that binary.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func main() {
	if err := validate(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "acpvalidate:", err)
		os.Exit(1)
	}
}

func validate(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: acpvalidate SCHEMA FILE")
	}
	doc, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	if bytes.Count(doc, []byte("\n")) != 1 || !bytes.HasSuffix(doc, []byte("\n")) {
		return fmt.Errorf("%s is not one line of JSON and a newline", args[1])
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	top, ok := inst.(map[string]any)
	if !ok {
		return fmt.Errorf("not a JSON object")
	}
	if p, ok := top["params"]; ok {
		_, hasID := top["id"]
		if top["jsonrpc"] != "2.0" || top["method"] != "session/prompt" || !hasID {
			return fmt.Errorf("not a JSON-RPC session/prompt request")
		}
		inst = p
	}
	path, err := filepath.Abs(args[0])
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sch, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("file://"+path, sch); err != nil {
		return err
	}
	s, err := c.Compile("file://" + path + "#/$defs/PromptRequest")
	if err != nil {
		return err
	}
	return s.Validate(inst)
}
