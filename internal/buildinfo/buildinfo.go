// Package buildinfo says which build of Parley is running: the module version, the VCS
// revision it was built from and the Go toolchain, as the Go linker recorded them
// (runtime/debug.ReadBuildInfo). `parley version`, the parley_build_info metric, the
// tracing resource's service.version and the MCP client's name all read it from here.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// version, when set at link time (-ldflags "-X github.com/parley-dev/parley/internal/buildinfo.version=v1.2.3"),
// is the release's version. A release build sets it because `go build` in a checkout
// records the main module's version as "(devel)" unless it was built from a tag.
var version string

// Info is a build's identity.
type Info struct {
	// Version is the module version ("v0.3.0", or a pseudo-version), or "(devel)"
	// for a build without one.
	Version string
	// Revision is the VCS commit the build came from, and Modified whether the
	// work tree had uncommitted changes; Revision is "" when the build recorded none
	// (-buildvcs=false, or built outside a checkout).
	Revision string
	Modified bool
	// Time is the commit's time (RFC 3339), "" when unknown.
	Time string
	// GoVersion is the toolchain ("go1.26.8"), Platform GOOS/GOARCH.
	GoVersion string
	Platform  string
}

var (
	once sync.Once
	info Info
)

// Get returns the running binary's build information.
func Get() Info {
	once.Do(func() { info = read(debug.ReadBuildInfo()) })
	return info
}

// read makes an Info of what debug.ReadBuildInfo returned.
func read(bi *debug.BuildInfo, ok bool) Info {
	i := Info{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if ok && bi != nil {
		if v := bi.Main.Version; v != "" {
			i.Version = v
		}
		if bi.GoVersion != "" {
			i.GoVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Revision = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			case "vcs.time":
				i.Time = s.Value
			}
		}
	}
	if version != "" {
		i.Version = version
	}
	return i
}

// ShortRevision is the revision's first 12 characters, with "-dirty" when the tree
// was modified; "unknown" when none was recorded.
func (i Info) ShortRevision() string {
	if i.Revision == "" {
		return "unknown"
	}
	r := i.Revision
	if len(r) > 12 {
		r = r[:12]
	}
	if i.Modified {
		r += "-dirty"
	}
	return r
}

// String is the one line `parley --version` prints after the program's name:
// "v0.3.0 (revision 0123456789ab, 2026-11-23T10:00:00Z, go1.26.8 linux/amd64)".
func (i Info) String() string {
	s := i.Version + " (revision " + i.ShortRevision()
	if i.Time != "" {
		s += ", " + i.Time
	}
	return fmt.Sprintf("%s, %s %s)", s, i.GoVersion, i.Platform)
}
