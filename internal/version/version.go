// Package version holds the release version of vkjobs, printed by every
// command's -version flag and stated in README.md and CHANGELOG.md.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release version of this repository (semantic versioning).
// CHANGELOG.md records what each version changed.
const Version = "0.9.0"

// String returns the line a command prints for -version: the program name,
// Version, the VCS revision when the binary was built from a git checkout,
// and the Go toolchain, for example
//
//	crowd 0.9.0 (1297731, go1.26.8 linux/amd64)
func String(program string) string {
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
				if len(rev) > 7 {
					rev = rev[:7]
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" && dirty {
			rev += "+dirty"
		}
	}
	if rev != "" {
		rev += ", "
	}
	return fmt.Sprintf("%s %s (%s%s %s/%s)", program, Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
