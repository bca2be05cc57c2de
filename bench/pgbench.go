package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The floors: what Postgres itself needs for an operation's SQL, measured with pgbench
// (prepared statements, the C client: the least a client can make Postgres do), and what
// the transport needs, one HTTP round trip of { __typename } through Parley. Both are
// measured in the same run as everything else, and each operation is reported as a
// multiple of its floor (pgbench's p50 plus the round trip's).

// pgbenchSaveScript is the raw SQL + NOTIFY save as a pgbench script: Parley's write in
// one statement and its notification, in a transaction. Each pgbench client writes to a
// conversation of its own (pgbenchConvID).
const pgbenchSaveScript = `BEGIN;
WITH conv AS (
	UPDATE conversations
	SET last_position = last_position + 1, message_count = message_count + 1, updated_at = now()
	WHERE id = ('` + pgbenchConvPrefix + `' || lpad(:client_id, 12, '0'))::uuid
	RETURNING id, last_position
)
INSERT INTO messages (conversation_id, position, schema_version, kind, role, content, payload)
SELECT conv.id, conv.last_position, 2, 'text', 'user', :content, :payload FROM conv
RETURNING conversation_id AS cid, id AS mid, position AS pos \gset
SELECT pg_notify('` + notifyChannel + `', '{"k":"added","c":"' || :cid || '","m":"' || :mid || '","p":' || :pos || '}');
COMMIT;
`

// pgbenchHistoryScript is the raw SQL history read: every column of the page's rows.
const pgbenchHistoryScript = `SELECT ` + messageColumns + ` FROM messages
	WHERE conversation_id = :conv ORDER BY position LIMIT 100;
`

// pgbenchConvPrefix makes pgbench client i's conversation id from its number.
const pgbenchConvPrefix = "00000000-0000-4000-8000-"

func pgbenchConvID(client int) string { return fmt.Sprintf("%s%012d", pgbenchConvPrefix, client) }

// pgbenchSetupSQL creates pgbench's conversations, one per client (as the local owner,
// whom Parley without authentication acts for, like every conversation here).
func pgbenchSetupSQL(clients int) string {
	return fmt.Sprintf(`INSERT INTO conversations (id, title) SELECT ('%s' || lpad(i::text, 12, '0'))::uuid, 'pgbench ' || i
		FROM generate_series(0, %d) i`, pgbenchConvPrefix, clients-1)
}

// pgbench runs pgbench with a script against the benchmark's database.
type pgbench struct {
	bin    string
	work   string // for the scripts and logs
	conn   []string
	cpu    func() cpuTimes // Postgres's CPU (Server and Client unused)
	script map[string]string
	vars   map[string][]string // per workload: -D name=value arguments
}

// findPgbench looks for pgbench beside the server's programs (Debian ships it with the
// server packages), then on PATH.
func findPgbench(binDir string) (string, error) {
	if p := filepath.Join(binDir, "pgbench"); isExecutableFile(p) {
		return p, nil
	}
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("pgbench is missing (not in %s nor on PATH): it measures the floors; it comes with PostgreSQL's server packages", binDir)
}

func isExecutableFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// measure runs workload's script with clients for warmup (its own unrecorded run), then
// for d rounded up to whole seconds (pgbench's -T), logging every transaction's latency.
func (p *pgbench) measure(ctx context.Context, workload string, clients int, warmup, d time.Duration) (sample, error) {
	script := filepath.Join(p.work, "pgbench-"+workload+".sql")
	if err := os.WriteFile(script, []byte(p.script[workload]), 0o644); err != nil {
		return sample{}, err
	}
	args := append(slices.Clone(p.conn), "-n", "-M", "prepared", "-f", script, "-c", strconv.Itoa(clients),
		"-j", strconv.Itoa(min(clients, cpuCount())))
	args = append(args, p.vars[workload]...)
	if warmup > 0 {
		// A few transactions per client: pgbench's -T counts whole seconds.
		if _, err := p.run(ctx, append(slices.Clone(args), "-t", "50")); err != nil {
			return sample{}, fmt.Errorf("warming up: %w", err)
		}
	}
	logDir, err := os.MkdirTemp(p.work, "pgbench-log-")
	if err != nil {
		return sample{}, err
	}
	defer os.RemoveAll(logDir)
	secs := max(1, int(math.Ceil(d.Seconds())))
	pg0 := p.cpu()
	out, err := p.run(ctx, append(args, "-T", strconv.Itoa(secs), "-l", "--log-prefix", filepath.Join(logDir, "tx")))
	if err != nil {
		return sample{}, err
	}
	pg1 := p.cpu()
	lat, err := readPgbenchLogs(logDir)
	if err != nil {
		return sample{}, err
	}
	if len(lat) == 0 {
		return sample{}, fmt.Errorf("pgbench logged no transaction:\n%s", out.text)
	}
	slices.Sort(lat)
	tps := float64(len(lat)) / float64(secs)
	if m := tpsRE.FindStringSubmatch(out.text); m != nil {
		tps, _ = strconv.ParseFloat(m[1], 64)
	}
	return sample{
		Clients:    clients,
		Requests:   len(lat),
		Elapsed:    time.Duration(float64(len(lat)) / tps * float64(time.Second)),
		P50:        percentile(lat, 50),
		P99:        percentile(lat, 99),
		Throughput: tps,
		CPU:        cpuTimes{Postgres: pg1.Postgres - pg0.Postgres, Client: out.cpu},
	}, nil
}

var tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

type pgbenchOutput struct {
	text string
	cpu  time.Duration // pgbench's own
}

func (p *pgbench) run(ctx context.Context, args []string) (pgbenchOutput, error) {
	cmd := exec.CommandContext(ctx, p.bin, args...)
	cmd.Env = append(os.Environ(), "PGAPPNAME=pgbench")
	b, err := cmd.CombinedOutput()
	out := pgbenchOutput{text: string(b)}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			out.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	if err != nil {
		return out, fmt.Errorf("pgbench %s: %v:\n%s", strings.Join(args, " "), err, b)
	}
	// pgbench carries on when a client aborts (and says so); a floor with a dead client
	// would be no floor.
	if strings.Contains(out.text, "aborted") || strings.Contains(out.text, "number of failed transactions: ") &&
		!strings.Contains(out.text, "number of failed transactions: 0 ") {
		return out, fmt.Errorf("pgbench %s: transactions failed:\n%s", strings.Join(args, " "), b)
	}
	return out, nil
}

// readPgbenchLogs reads the latencies of pgbench's per-transaction logs (-l): one line a
// transaction, "client_id transaction_no time script_no time_epoch time_us", time in
// microseconds; one file per thread.
func readPgbenchLogs(dir string) ([]time.Duration, error) {
	files, err := filepath.Glob(filepath.Join(dir, "tx*"))
	if err != nil {
		return nil, err
	}
	var lat []time.Duration
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 6 {
				f.Close()
				return nil, fmt.Errorf("%s: unexpected line %q", name, sc.Text())
			}
			us, err := strconv.ParseInt(fields[2], 10, 64)
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %q: %w", name, sc.Text(), err)
			}
			lat = append(lat, time.Duration(us)*time.Microsecond)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return lat, nil
}
