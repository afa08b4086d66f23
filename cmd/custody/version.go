package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// runVersion prints what this binary is: custody's version, the commit
// it was built from, and the Go that built it.
//
//	custody version
func (m *Main) runVersion(_ context.Context, args []string) int {
	fs := m.flags("version", "")
	if ok, code := m.parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return m.flagUsage(fs, "unexpected arguments")
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	writeVersion(m.Stdout, bi)
	return exitOK
}

// writeVersion writes the version, commit and Go version of bi, one a
// line. A commit with changes not committed is marked "(modified)"; what
// the build does not record is "unknown".
func writeVersion(w io.Writer, bi *debug.BuildInfo) {
	version := bi.Main.Version
	if version == "" {
		version = "unknown"
	}
	commit, modified, at := "unknown", false, ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		case "vcs.time":
			at = s.Value
		}
	}
	if modified {
		commit += " (modified)"
	}
	if at != "" {
		commit += " " + at
	}
	goVersion := bi.GoVersion
	if goVersion == "" {
		goVersion = "unknown"
	}
	fmt.Fprintf(w, "custody %s\ncommit  %s\ngo      %s\n", version, commit, goVersion)
}
