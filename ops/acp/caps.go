package acp

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Caps are the prompt capabilities of the agent (ACP PromptCapabilities).
type Caps struct {
	Image, Audio, EmbeddedContext bool
}

// And is what both c and o allow: the intersection of what the user says the agent takes and
// what the agent's initialize response says.
func (c Caps) And(o Caps) Caps {
	return Caps{Image: c.Image && o.Image, Audio: c.Audio && o.Audio, EmbeddedContext: c.EmbeddedContext && o.EmbeddedContext}
}

// ParseCaps reads a comma-separated list of image, audio and embeddedContext. An empty list is no
// capability at all; an unknown name is an error.
func ParseCaps(s string) (Caps, error) {
	var c Caps
	for _, f := range strings.Split(s, ",") {
		switch strings.TrimSpace(f) {
		case "":
		case "image":
			c.Image = true
		case "audio":
			c.Audio = true
		case "embeddedContext":
			c.EmbeddedContext = true
		default:
			return c, fmt.Errorf("unknown capability %q (known: image, audio, embeddedContext)", f)
		}
	}
	return c, nil
}

// Agent is what an agent's initialize response says of it: the prompt capabilities (the
// protocol layer) and who it is (agentInfo), from which its adapter profile is chosen.
type Agent struct {
	Caps Caps
	// Name and Version are agentInfo's, "" when the response has none.
	Name, Version string
}

// ParseInitialize reads an agent's ACP initialize response: the result object
// ({"protocolVersion": N, "agentCapabilities": {...}, "agentInfo": {...}}) or the JSON-RPC 2.0
// response carrying it. A capability is given as a boolean (ACP v1) or as an object (later
// schemas: "image": {} means supported); what ACP lets an agent leave out, null, or a value of
// another type is false, as the v1 schema's x-deserialize-default-on-error makes it. Anything else
// (a request, an error response, JSON that is not one, a key in another case) is an error that
// says why.
func ParseInitialize(b []byte) (Agent, error) {
	var a Agent
	top, err := parseObject(b)
	if err != nil {
		return a, fmt.Errorf("not an ACP initialize response: %v", err)
	}
	res := top
	if top.has("jsonrpc") || top.has("method") || top.has("error") || top.has("result") {
		var version string
		if top.str("jsonrpc", &version) != nil || version != "2.0" {
			return a, fmt.Errorf(`not an ACP initialize response: a JSON-RPC message needs "jsonrpc": "2.0"`)
		}
		if top.has("method") {
			return a, fmt.Errorf("not an ACP initialize response: a JSON-RPC request, not the response to one")
		}
		if raw, ok := top.get("error"); ok {
			return a, fmt.Errorf("not an ACP initialize response: the agent answered with an error: %.200s", raw)
		}
		raw, ok := top.get("result")
		if !ok {
			return a, fmt.Errorf(`not an ACP initialize response: no "result"`)
		}
		if res, err = parseObject(raw); err != nil {
			return a, fmt.Errorf("not an ACP initialize response: result: %v", err)
		}
	}
	// The agent's capabilities alone, as an integrator copies them out of a response, are taken too.
	if res.has("promptCapabilities") && !res.has("protocolVersion") {
		a.Caps, err = promptCaps(res)
		return a, err
	}
	var version json.Number
	if raw, ok := res.get("protocolVersion"); !ok || json.Unmarshal(raw, &version) != nil {
		return a, fmt.Errorf(`not an ACP initialize response: no "protocolVersion" number`)
	}
	if v, err := version.Int64(); err != nil || v < 0 || v > 65535 {
		return a, fmt.Errorf("not an ACP initialize response: protocolVersion %s is not a version", version)
	}
	info, err := member(res, "agentInfo")
	if err != nil {
		return a, err
	}
	if info != nil {
		// Name and version are strings in every schema; anything else names no one.
		info.str("name", &a.Name)
		info.str("version", &a.Version)
	}
	agent, err := member(res, "agentCapabilities")
	if err != nil || agent == nil {
		return a, err
	}
	a.Caps, err = promptCaps(agent)
	return a, err
}

// promptCaps reads the promptCapabilities of an agentCapabilities object.
func promptCaps(agent object) (Caps, error) {
	var c Caps
	prompt, err := member(agent, "promptCapabilities")
	if err != nil || prompt == nil {
		return c, err
	}
	for _, f := range []struct {
		key string
		to  *bool
	}{{"image", &c.Image}, {"audio", &c.Audio}, {"embeddedContext", &c.EmbeddedContext}} {
		if raw, ok := prompt.get(f.key); ok {
			switch jsonKind(raw) {
			case "boolean":
				*f.to = string(raw) == "true"
			case "object":
				*f.to = true
			}
		}
	}
	return c, nil
}

// member is o's field k as an object: nil when absent or null.
func member(o object, k string) (object, error) {
	raw, ok := o.get(k)
	if !ok || isNull(raw) {
		return nil, nil
	}
	m, err := parseObject(raw)
	if err != nil {
		return nil, fmt.Errorf("not an ACP initialize response: %s: %v", k, err)
	}
	return m, nil
}
