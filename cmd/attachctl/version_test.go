package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestVersionLine(t *testing.T) {
	platform := " " + runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		info *debug.BuildInfo
		want string
	}{
		{nil, "attachctl devel (no revision recorded) " + runtime.Version() + platform},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"attachctl devel (no revision recorded) go1.26.8" + platform},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123abc"}, {Key: "vcs.time", Value: "2026-11-30T12:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"attachctl v1.2.3 (revision 0123abc, 2026-11-30T12:00:00Z, modified) go1.26.8" + platform},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123abc"}, {Key: "vcs.modified", Value: "false"}}},
			"attachctl devel (revision 0123abc) go1.26.8" + platform},
	} {
		if got := versionLine(tc.info); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
	// A version stamped at link time (scripts/release.sh) wins over the module's.
	version = "v9.8.7"
	defer func() { version = "" }()
	if got := versionOf(&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261130-0123abc"}}); got != "v9.8.7" {
		t.Errorf("stamped: %q, want v9.8.7", got)
	}
}
