package localpg

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// maxSocketPath is the longest Unix socket path the kernel accepts (sun_path is 108
// bytes, NUL included).
const maxSocketPath = 107

// runAs is the unprivileged user postgres runs as when we are root.
type runAs struct {
	name string
	uid  int
	gid  int
	gids map[int]bool // primary and supplementary groups
	cred *syscall.Credential
}

// lookupRunAs finds the system user postgres will run as.
func lookupRunAs(name string) (*runAs, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("running as root, and postgres refuses to run as root, but there is no %q user to run it as (installing postgresql creates it; or run parley as an ordinary user): %w", name, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("user %q: uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("user %q: gid %q: %w", name, u.Gid, err)
	}
	r := &runAs{name: name, uid: uid, gid: gid, gids: map[int]bool{gid: true}}
	// Without Groups, the child would run with no supplementary groups at all (Go calls
	// setgroups with an empty list), unlike a real login as that user.
	var groups []uint32
	if ids, err := u.GroupIds(); err == nil {
		for _, s := range ids {
			if g, err := strconv.Atoi(s); err == nil {
				r.gids[g] = true
				groups = append(groups, uint32(g))
			}
		}
	}
	r.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}
	return r, nil
}

// chown gives path to the run-as user; without one (not root) it does nothing.
func (r *runAs) chown(path string) error {
	if r == nil {
		return nil
	}
	if err := os.Lchown(path, r.uid, r.gid); err != nil {
		return fmt.Errorf("give %s to user %s: %w", path, r.name, err)
	}
	return nil
}

// canTraverse reports whether the run-as user may search the directory fi describes,
// by its mode bits (ACLs are not consulted).
func (r *runAs) canTraverse(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true // cannot tell; let postgres report it
	}
	perm := fi.Mode().Perm()
	switch {
	case int(st.Uid) == r.uid:
		return perm&0o100 != 0
	case r.gids[int(st.Gid)]:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

// prepareDirs creates DataDir and, as root, hands it to the run-as user after checking
// that user can reach it at all.
func (c *Cluster) prepareDirs() error {
	if err := os.MkdirAll(filepath.Dir(c.dataDir), 0o755); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	if err := os.Mkdir(c.dataDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create data directory: %w", err)
	}
	fi, err := os.Stat(c.dataDir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("data directory %s is not a directory", c.dataDir)
	}
	c.socketDir = socketDirFor(c.dataDir)
	if c.runAs == nil {
		return nil
	}
	// Refuse rather than chmod: loosening /root or a home directory is not ours to do.
	for dir := filepath.Dir(c.dataDir); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
		if !c.runAs.canTraverse(fi) {
			return fmt.Errorf("postgres runs as user %q, which cannot traverse %s (mode %04o), so it cannot reach the data directory %s; "+
				"use a data directory it can reach, e.g. --data-dir /var/lib/parley", c.runAs.name, dir, fi.Mode().Perm(), c.dataDir)
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	if fi.Mode().Perm()&0o700 != 0o700 {
		if err := os.Chmod(c.dataDir, fi.Mode().Perm()|0o700); err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
	}
	// A postgres still shutting down (a previous process killed with -9 left it behind)
	// may remove files such as postmaster.pid while the walk runs: a file gone needs no
	// owner, so a vanished entry is skipped rather than failing the start.
	return filepath.WalkDir(c.dataDir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path != c.dataDir {
			return nil
		}
		if err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) == c.runAs.uid && int(st.Gid) == c.runAs.gid {
			return nil
		}
		if err := c.runAs.chown(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
}

// makeSocketDir creates the private socket directory. Outside DataDir (in /tmp) its name
// is predictable, so an existing one is used only if it is a real directory, owned by
// the user postgres runs as, and closed to everyone else.
func (c *Cluster) makeSocketDir() error {
	err := os.Mkdir(c.socketDir, 0o700)
	if err == nil {
		return c.runAs.chown(c.socketDir)
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create socket directory: %w", err)
	}
	fi, err := os.Lstat(c.socketDir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	owner := os.Geteuid()
	if c.runAs != nil {
		owner = c.runAs.uid
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != owner || fi.Mode().Perm() != 0o700 {
		return fmt.Errorf("socket directory %s exists but is not a 0700 directory owned by uid %d; remove it", c.socketDir, owner)
	}
	return nil
}

func socketName() string { return "/.s.PGSQL." + strconv.Itoa(port) }

// socketDirFor is the socket directory of the cluster in dataDir (absolute):
// dataDir/sock, or, when that path is too long for a Unix socket, somewhere short named
// after dataDir, which keeps DSNs stable across restarts (makeSocketDir checks nobody
// else prepared it for us).
func socketDirFor(dataDir string) string {
	dir := filepath.Join(dataDir, "sock")
	if len(dir)+len(socketName()) > maxSocketPath {
		sum := sha256.Sum256([]byte(dataDir))
		dir = filepath.Join("/tmp", "parley-"+hex.EncodeToString(sum[:6]))
	}
	return dir
}
