package localpg

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// serverBinaries are the programs a Cluster runs; a bin dir must hold both.
var serverBinaries = []string{"initdb", "postgres"}

// findBinDir picks the directory holding the PostgreSQL server binaries: explicit if
// set, else the first of `pg_config --bindir`, the newest /usr/lib/postgresql/*/bin and
// the PATH directories holding initdb. When pgdata already holds a cluster, the
// binaries must be of its major version, so with several installed (mid-upgrade, say)
// the matching ones are chosen rather than the newest.
func findBinDir(explicit, pgdata string) (string, error) {
	var candidates, looked []string
	if explicit != "" {
		candidates = []string{explicit}
		looked = []string{"BinDir " + explicit}
	} else {
		candidates, looked = defaultBinDirs()
	}
	var found, real []string
	for _, dir := range candidates {
		if !hasServerBinaries(dir) {
			continue
		}
		// /usr/local/bin may only hold symlinks to a versioned dir already listed.
		r, err := filepath.EvalSymlinks(filepath.Join(dir, "postgres"))
		if err != nil || slices.Contains(real, r) {
			continue
		}
		found, real = append(found, dir), append(real, r)
	}
	if len(found) == 0 {
		return "", fmt.Errorf("%w: looked for %s in %s; `make deps` installs them (apt-get install postgresql)",
			ErrNoBinaries, strings.Join(serverBinaries, " and "), strings.Join(looked, ", "))
	}
	b, err := os.ReadFile(filepath.Join(pgdata, "PG_VERSION"))
	if err != nil {
		return found[0], nil // no cluster yet (or unreadable: postgres will say why)
	}
	want := strings.TrimSpace(string(b))
	var seen []string
	for _, dir := range found {
		got := serverMajor(dir)
		if got == want {
			return dir, nil
		}
		seen = append(seen, fmt.Sprintf("%s is %s", dir, got))
	}
	return "", fmt.Errorf("the cluster in %s was created by PostgreSQL %s, but the server binaries found are another version (%s); install PostgreSQL %s (apt-get install postgresql-%s) or move the data directory aside",
		pgdata, want, strings.Join(seen, "; "), want, want)
}

// defaultBinDirs lists the candidate bin dirs in order of preference, and describes
// where it looked for the error message.
func defaultBinDirs() (dirs, looked []string) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		dirs = append(dirs, dir)
		looked = append(looked, dir+" (pg_config --bindir)")
	} else {
		looked = append(looked, "pg_config --bindir (pg_config: "+err.Error()+")")
	}
	versioned, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(versioned, func(a, b string) int { // newest first: 10 > 9.6
		return compareVersions(filepath.Base(filepath.Dir(b)), filepath.Base(filepath.Dir(a)))
	})
	dirs = append(dirs, versioned...)
	looked = append(looked, "/usr/lib/postgresql/*/bin")
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir != "" && isExecutable(filepath.Join(dir, "initdb")) {
			dirs = append(dirs, dir)
		}
	}
	looked = append(looked, "the directories on $PATH")
	return dirs, looked
}

func hasServerBinaries(dir string) bool {
	for _, name := range serverBinaries {
		if !isExecutable(filepath.Join(dir, name)) {
			return false
		}
	}
	return true
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// serverMajor returns the major version of the postgres in dir as PG_VERSION spells it
// ("15", or "9.6" before 10), or a description of why it could not tell.
func serverMajor(dir string) string {
	// "postgres (PostgreSQL) 15.8 (Debian 15.8-0+deb12u1)"; --version is answered before
	// postgres's refusal to run as root, so this works for root too.
	out, err := exec.Command(filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	_, after, ok := bytes.Cut(out, []byte("(PostgreSQL) "))
	if !ok {
		return "unknown (" + strings.TrimSpace(string(out)) + ")"
	}
	fields := strings.Fields(string(after))
	if len(fields) == 0 {
		return "unknown (" + strings.TrimSpace(string(out)) + ")"
	}
	parts := strings.Split(fields[0], ".")
	if n, err := strconv.Atoi(parts[0]); err == nil && n < 10 && len(parts) > 1 {
		return parts[0] + "." + parts[1]
	}
	// Development builds say e.g. "17beta1"; PG_VERSION says "17".
	major := parts[0]
	if i := strings.IndexFunc(major, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		major = major[:i]
	}
	return major
}

// compareVersions orders dotted version strings numerically.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}
