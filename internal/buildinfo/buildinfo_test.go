package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestRead(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name         string
		bi           *debug.BuildInfo
		ok           bool
		wantVersion  string
		wantRevision string
		wantString   string
	}{
		{name: "no build info", bi: nil, ok: false, wantVersion: "(devel)", wantRevision: "unknown"},
		{
			name: "tagged build from a clean tree",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}, {Key: "vcs.time", Value: "2026-11-23T10:00:00Z"},
			}},
			ok: true, wantVersion: "v0.3.0", wantRevision: "0123456789ab",
			wantString: "v0.3.0 (revision 0123456789ab, 2026-11-23T10:00:00Z, go1.26.8 ",
		},
		{
			name: "modified tree",
			bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"},
			}},
			ok: true, wantVersion: "(devel)", wantRevision: "abc-dirty",
			wantString: "(devel) (revision abc-dirty, go1.26.8 ",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			i := read(tt.bi, tt.ok)
			if i.Version != tt.wantVersion {
				t.Errorf("Version: got %q, want %q", i.Version, tt.wantVersion)
			}
			if got := i.ShortRevision(); got != tt.wantRevision {
				t.Errorf("ShortRevision: got %q, want %q", got, tt.wantRevision)
			}
			if tt.wantString != "" && (len(i.String()) < len(tt.wantString) || i.String()[:len(tt.wantString)] != tt.wantString) {
				t.Errorf("String: got %q, want it to start with %q", i.String(), tt.wantString)
			}
			if i.Platform == "" || i.GoVersion == "" {
				t.Errorf("got platform %q and Go %q, want both", i.Platform, i.GoVersion)
			}
		})
	}
}
