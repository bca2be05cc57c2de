package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/parley-dev/parley/bench/internal/readtrace"
)

// results is everything one benchmark run found, kept as JSON beside the report so that
// a later run can show it as "before".
type results struct {
	Started       time.Time           `json:"started"`
	Elapsed       string              `json:"elapsed"`
	Machine       string              `json:"machine"`
	Versions      map[string]string   `json:"versions"`
	Postgres      string              `json:"postgres"`
	PGWorkers     int                 `json:"postgraphileWorkers"`
	Runs          int                 `json:"runs"`
	Clients       int                 `json:"clients"`
	Warmup        string              `json:"warmup"`
	Duration      string              `json:"duration"`
	Commands      []string            `json:"commands"`
	Samples       map[string][]sample `json:"samples"`
	AllocsPerRead float64             `json:"allocsPerRead"`
	BytesPerRead  float64             `json:"bytesPerRead"`
	Profiles      map[string]string   `json:"profiles,omitempty"`
	Breakdowns    map[string][]string `json:"breakdowns,omitempty"`
	ProfileFiles  []string            `json:"profileFiles,omitempty"`
	// ReadPhases says where the wall time of a read goes, by measurement (readtrace).
	ReadPhases map[string]readtrace.Summary `json:"readPhases,omitempty"`
	Extra      []extraFigure                `json:"extra,omitempty"`
	// ScaleDatabase describes the large database of the scale rows.
	ScaleDatabase string `json:"scaleDatabase,omitempty"`
	// Fanout is the realtime fan-out benchmark's own Markdown report.
	Fanout string `json:"fanout,omitempty"`
	// Sections are the reports of benchmarks of their own (scripts/bench.sh's optional
	// sections), in the order they ran.
	Sections []section `json:"sections,omitempty"`
}

// extraFigure is a figure from a benchmark outside this program (fan-out, import).
type extraFigure struct {
	Section string `json:"section"`
	Name    string `json:"name"`
	Value   string `json:"value"`
	Note    string `json:"note,omitempty"`
}

// figure is the median over runs of one measurement.
type figure struct {
	P50, P99   time.Duration
	Throughput float64
	Runs       int
}

// figure returns the median of key's samples, and false when there are none.
func (r *results) figure(key string) (figure, bool) {
	ss := r.Samples[key]
	if len(ss) == 0 {
		return figure{}, false
	}
	p50 := make([]time.Duration, len(ss))
	p99 := make([]time.Duration, len(ss))
	tput := make([]float64, len(ss))
	for i, s := range ss {
		p50[i], p99[i], tput[i] = s.P50, s.P99, s.Throughput
	}
	return figure{P50: median(p50), P99: median(p99), Throughput: median(tput), Runs: len(ss)}, true
}

// median returns the middle value (the mean of the two middle ones for an even count).
func median[T time.Duration | float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// cpuPerRequest is the median over runs of the CPU each part used per request of key.
func (r *results) cpuPerRequest(key string) (cpuTimes, bool) {
	ss := r.Samples[key]
	var server, pg, client []time.Duration
	for _, s := range ss {
		if s.Requests == 0 || s.CPU == (cpuTimes{}) {
			continue
		}
		n := time.Duration(s.Requests)
		server, pg, client = append(server, s.CPU.Server/n), append(pg, s.CPU.Postgres/n), append(client, s.CPU.Client/n)
	}
	if len(server) == 0 {
		return cpuTimes{}, false
	}
	return cpuTimes{Server: median(server), Postgres: median(pg), Client: median(client)}, true
}

// pairedRatio is the median over runs of value(a)/value(b), each run's pair measured
// minutes apart at most: on a shared machine whose load comes and goes, this holds
// better than the ratio of the two medians.
func (r *results) pairedRatio(a, b string, value func(sample) float64) (float64, bool) {
	m, _, _, ok := r.pairedRatios(a, b, value)
	return m, ok
}

// pairedRatios is pairedRatio with the lowest and highest of the runs' ratios.
func (r *results) pairedRatios(a, b string, value func(sample) float64) (med, lo, hi float64, ok bool) {
	as, bs := r.Samples[a], r.Samples[b]
	n := min(len(as), len(bs))
	rs := make([]float64, 0, n)
	for i := range n {
		if d := value(bs[i]); d > 0 {
			rs = append(rs, value(as[i])/d)
		}
	}
	if len(rs) == 0 {
		return 0, 0, 0, false
	}
	return median(rs), slices.Min(rs), slices.Max(rs), true
}

func p50(s sample) float64              { return float64(s.P50) }
func sampleThroughput(s sample) float64 { return s.Throughput }

func writeResults(path string, r *results) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func readResults(path string) (*results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
