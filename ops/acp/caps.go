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

// ParseInitialize reads the prompt capabilities from an agent's ACP initialize response: the
// result object ({"protocolVersion": N, "agentCapabilities": {...}}) or the JSON-RPC 2.0 response
// carrying it. What ACP lets an agent leave out is false, as ACP defaults it. Anything else (a
// request, an error response, JSON that is not one, a key in another case) is an error that says
// why.
func ParseInitialize(b []byte) (Caps, error) {
	var c Caps
	top, err := parseObject(b)
	if err != nil {
		return c, fmt.Errorf("not an ACP initialize response: %v", err)
	}
	res := top
	if top.has("jsonrpc") || top.has("method") || top.has("error") || top.has("result") {
		var version string
		if top.str("jsonrpc", &version) != nil || version != "2.0" {
			return c, fmt.Errorf(`not an ACP initialize response: a JSON-RPC message needs "jsonrpc": "2.0"`)
		}
		if top.has("method") {
			return c, fmt.Errorf("not an ACP initialize response: a JSON-RPC request, not the response to one")
		}
		if raw, ok := top.get("error"); ok {
			return c, fmt.Errorf("not an ACP initialize response: the agent answered with an error: %.200s", raw)
		}
		raw, ok := top.get("result")
		if !ok {
			return c, fmt.Errorf(`not an ACP initialize response: no "result"`)
		}
		if res, err = parseObject(raw); err != nil {
			return c, fmt.Errorf("not an ACP initialize response: result: %v", err)
		}
	}
	// The agent's capabilities alone, as an integrator copies them out of a response, are taken too.
	if res.has("promptCapabilities") && !res.has("protocolVersion") {
		return promptCaps(res)
	}
	var version json.Number
	if raw, ok := res.get("protocolVersion"); !ok || json.Unmarshal(raw, &version) != nil {
		return c, fmt.Errorf(`not an ACP initialize response: no "protocolVersion" number`)
	}
	if v, err := version.Int64(); err != nil || v < 0 || v > 65535 {
		return c, fmt.Errorf("not an ACP initialize response: protocolVersion %s is not a version", version)
	}
	agent, err := member(res, "agentCapabilities")
	if err != nil || agent == nil {
		return c, err
	}
	return promptCaps(agent)
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
		if raw, ok := prompt.get(f.key); ok && json.Unmarshal(raw, f.to) != nil {
			return c, fmt.Errorf("not an ACP initialize response: promptCapabilities.%s is not true or false", f.key)
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
