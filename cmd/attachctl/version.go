package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "version",
		Usage: "print the version, the source revision and the Go version it was built from",
		Description: "One line: the module version (or the -X main.version given at link time for a build\n" +
			"outside a module), the VCS revision and its time when the build recorded them (\"modified\"\n" +
			"when the work tree had changes), and the Go version and platform.\n\n" +
			example("attachctl version", "attachctl version | cut -d' ' -f2"),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError("version takes no arguments")
			}
			info, _ := debug.ReadBuildInfo()
			if _, err := fmt.Fprintln(c.App.Writer, versionLine(info)); err != nil {
				return outputFailed("version", err)
			}
			return nil
		},
	})
	// attachctl --version says the same.
	cli.VersionPrinter = func(c *cli.Context) {
		info, _ := debug.ReadBuildInfo()
		fmt.Fprintln(c.App.Writer, versionLine(info))
	}
}

// versionOf is the one version string of attachctl (version, --version, --help, the man page):
// the one stamped at link time, else the module's version from the build, else "devel".
func versionOf(info *debug.BuildInfo) string {
	if version != "" {
		return version
	}
	if info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
}

// versionLine is "attachctl VERSION (revision REV, TIME, modified) GOVERSION OS/ARCH", with the
// parts the build did not record left out.
func versionLine(info *debug.BuildInfo) string {
	v, goVersion := versionOf(info), runtime.Version()
	var vcs []string
	if info != nil {
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if r := settings["vcs.revision"]; r != "" {
			vcs = append(vcs, "revision "+r)
			if t := settings["vcs.time"]; t != "" {
				vcs = append(vcs, t)
			}
			if settings["vcs.modified"] == "true" {
				vcs = append(vcs, "modified")
			}
		}
	}
	line := "attachctl " + v
	if len(vcs) > 0 {
		line += " (" + strings.Join(vcs, ", ") + ")"
	} else {
		line += " (no revision recorded)"
	}
	return line + " " + goVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
}
