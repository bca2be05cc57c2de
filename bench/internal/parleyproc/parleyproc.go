// Package parleyproc runs the `parley serve` process a benchmark program measures, and
// reads what it costs from /proc. The fan-out and streaming benchmarks (bench/fanout,
// bench/streaming) are main packages of their own, so what they share lives here.
package parleyproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Server is a running `parley serve`.
type Server struct {
	// URL is where it serves, e.g. http://127.0.0.1:41234 (GraphQL at URL/graphql).
	URL    string
	cmd    *exec.Cmd
	exited chan struct{}
}

var servingLine = regexp.MustCompile(`serving GraphQL at (http://[^ ]+)/graphql`)

// Start runs bin serve on dsn on a free loopback port, with its log in logPath and
// extra flags after serve's own, and returns once it serves (within a minute).
func Start(ctx context.Context, bin, dsn, logPath string, extra ...string) (*Server, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := append([]string{"--log-level", "warn", "serve", "--database-url", dsn, "--addr", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{cmd: cmd, exited: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	go func() {
		cmd.Wait()
		close(s.exited)
	}()
	select {
	case s.URL = <-urls:
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("%s exited before serving; see %s", bin, logPath)
	case <-time.After(time.Minute):
		s.Stop()
		return nil, fmt.Errorf("%s did not serve within a minute; see %s", bin, logPath)
	case <-ctx.Done():
		s.Stop()
		return nil, ctx.Err()
	}
}

// Stop ends the server: SIGTERM, then SIGKILL after 20 seconds.
func (s *Server) Stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// CPUTime returns the CPU time the server has used so far (user and system).
func (s *Server) CPUTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.Pid()))
	if err != nil {
		return 0, err
	}
	// The fields after the command name (which may hold spaces) in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond, nil
}

// FreePort asks the kernel for a free loopback TCP port. Another process could take it
// before the server binds it; on a single-user benchmark machine that does not happen.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// LoadAverage is the machine's 1-minute load average, or "unknown".
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// CPUProfile writes the CPU profile of the Parley whose --debug-addr serves debugURL
// (e.g. http://127.0.0.1:6061), taken over the next secs seconds, to path.
func CPUProfile(ctx context.Context, debugURL string, secs int, path string) error {
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", debugURL, secs)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profile the server: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("profile the server: GET %s: %s: %s", url, resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
