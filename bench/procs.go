package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a server the benchmark started: a child process whose output goes to a log
// file, stopped with SIGTERM (SIGKILL after a grace period).
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error
}

// startProc starts argv with its stdout and stderr in logPath, and waits until ready
// returns nil (polling every 100 ms for up to timeout) or the process exits.
func startProc(ctx context.Context, name, logPath string, env []string, argv []string,
	timeout time.Duration, ready func(ctx context.Context) error) (*proc, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	// Its own process group, so that a Ctrl-C in the terminal reaches the benchmark,
	// which stops its children in order, rather than everyone at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	deadline := time.Now().Add(timeout)
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := ready(rctx)
		cancel()
		if err == nil {
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited before it was ready (%v)%s", name, p.err, p.logTail())
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s not ready after %s: %v%s", name, timeout, err, p.logTail())
		}
	}
}

// stop sends SIGTERM and waits up to 20 s for the process to exit, then kills it.
func (p *proc) stop() {
	if p == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// alive reports an error if the process has exited.
func (p *proc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v)%s", p.name, p.err, p.logTail())
	default:
		return nil
	}
}

// logTail returns the last lines of the process's log, for error messages.
func (p *proc) logTail() string {
	b, err := os.ReadFile(p.log)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	lines = lines[max(0, len(lines)-20):]
	return "\n--- last lines of " + p.log + " ---\n" + strings.Join(lines, "\n")
}

// httpOK returns a readiness check that GETs url and wants a 200.
func httpOK(url string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
		}
		return nil
	}
}

// graphqlOK returns a readiness check that posts { __typename } to url.
func graphqlOK(url string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"query":"{ __typename }"}`))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"__typename"`)) {
			return fmt.Errorf("POST %s: status %d: %.200s", url, resp.StatusCode, b)
		}
		return nil
	}
}

// commandVersion runs argv and returns the first match of re's first group in its
// output, or "unknown".
func commandVersion(re string, argv ...string) string {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return "unknown"
	}
	if m := regexp.MustCompile(re).FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return "unknown"
}

// machine describes the CPU and memory, from /proc.
func machine() string {
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.Atoi(f[1]); err == nil {
					mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
				}
			}
		}
	}
	return fmt.Sprintf("%s, %d cores%s", model, cpuCount(), mem)
}
