package acp

import (
	"os"
	"path/filepath"
	"testing"
)

// Each adapter profile carries the promptCapabilities and version of that adapter's own
// initialize response, as measured from the published adapter (testdata/initialize holds the
// responses the adapters gave), so that --agent NAME alone is --initialize with that response.
func TestProfileCapsMeasured(t *testing.T) {
	files, _ := filepath.Glob("testdata/initialize/*.json")
	if len(files) != len(Adapters) {
		t.Fatalf("%d measured initialize responses for %d adapter profiles", len(files), len(Adapters))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		agent, err := ParseInitialize(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		a := FindAdapter(agent.Name)
		if a == nil {
			t.Fatalf("%s: no profile for agentInfo name %q", f, agent.Name)
		}
		if a.Caps != agent.Caps || a.Version != agent.Version {
			t.Errorf("%s: profile %s says %+v of version %q; the adapter's initialize says %+v of version %q", f, a.Name, a.Caps, a.Version, agent.Caps, agent.Version)
		}
		if got := ProtocolCaps(Caps{}, false, nil, a); got != ProtocolCaps(Caps{}, false, &agent, a) {
			t.Errorf("%s: --agent alone gives %+v, --initialize %+v", a.Name, got, agent.Caps)
		}
	}
}

func TestProtocolCaps(t *testing.T) {
	all := Caps{Image: true, Audio: true, EmbeddedContext: true}
	claude, gemini := FindAdapter("claude-agent-acp"), FindAdapter("gemini-cli")
	init := &Agent{Caps: Caps{Image: true, Audio: true}}
	for _, c := range []struct {
		name    string
		user    Caps
		userSet bool
		init    *Agent
		a       *Adapter
		want    Caps
	}{
		{"nothing known: image", Caps{}, false, nil, nil, Caps{Image: true}},
		{"--caps alone", all, true, nil, nil, all},
		{"--agent claude alone: what it advertises", Caps{}, false, nil, claude, Caps{Image: true, EmbeddedContext: true}},
		{"--agent gemini alone", Caps{}, false, nil, gemini, all},
		{"--caps narrows --agent", Caps{Image: true}, true, nil, claude, Caps{Image: true}},
		{"--caps never widens --agent", all, true, nil, claude, Caps{Image: true, EmbeddedContext: true}},
		{"--initialize wins over the profile", Caps{}, false, init, claude, Caps{Image: true, Audio: true}},
		{"--caps narrows --initialize", Caps{Audio: true}, true, init, claude, Caps{Audio: true}},
	} {
		if got := ProtocolCaps(c.user, c.userSet, c.init, c.a); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
