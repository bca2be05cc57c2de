package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		cgroup     memlimit.Provider
		want       int64
		wantSource string
	}{
		{"a container limited to 1 GiB", func() (uint64, error) { return 1 << 30, nil }, 966367641, "90% of the cgroup's memory limit of 1073741824 bytes"},
		{"no cgroup", func() (uint64, error) { return 0, memlimit.ErrNoCgroup }, 512 << 20, "default (no cgroup memory limit)"},
		{"a cgroup without a limit", func() (uint64, error) { return 0, memlimit.ErrNoLimit }, 512 << 20, "default (no cgroup memory limit)"},
		{"an unreadable cgroup", func() (uint64, error) { return 0, errors.New("permission denied") }, 512 << 20, "unreadable: permission denied"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, source := memoryLimit(tt.cgroup)
			if got != tt.want || !strings.Contains(source, tt.wantSource) {
				t.Errorf("got %d (%s), want %d (%s)", got, source, tt.want, tt.wantSource)
			}
		})
	}
}
