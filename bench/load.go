package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// op does one request as client number client (0..clients-1) and reports whether it
// worked. Each client runs its ops one after another, so client is a safe index into
// per-client state.
type op func(ctx context.Context, client int) error

// sample is what one measurement of one op found.
type sample struct {
	Clients    int
	Requests   int
	Elapsed    time.Duration
	P50, P99   time.Duration
	Throughput float64 // requests per second
	// CPU is what each part used while the requests were recorded (see cpuTimes).
	CPU cpuTimes
}

// measure runs clients concurrent loops of do for warmup (not recorded), then for d,
// and returns the latency percentiles and throughput of the recorded part. The first
// failing request ends the measurement with its error: a benchmark that counts failures
// as fast answers measures nothing.
//
// cpu, when not nil, reads the CPU times of the parts of the system, before and after
// the recorded stretch.
func measure(ctx context.Context, clients int, warmup, d time.Duration, do op, cpu func() cpuTimes) (sample, error) {
	if warmup > 0 {
		if _, _, err := runFor(ctx, clients, warmup, do); err != nil {
			return sample{}, fmt.Errorf("warming up: %w", err)
		}
	}
	var cpu0 cpuTimes
	if cpu != nil {
		cpu0 = cpu()
	}
	lat, elapsed, err := runFor(ctx, clients, d, do)
	if err != nil {
		return sample{}, err
	}
	var used cpuTimes
	if cpu != nil {
		used = cpu().sub(cpu0)
	}
	if len(lat) == 0 {
		return sample{}, errors.New("no request completed")
	}
	slices.Sort(lat)
	return sample{
		Clients:    clients,
		Requests:   len(lat),
		Elapsed:    elapsed,
		P50:        percentile(lat, 50),
		P99:        percentile(lat, 99),
		Throughput: float64(len(lat)) / elapsed.Seconds(),
		CPU:        used,
	}, nil
}

// runFor is one timed stretch of measure: every client loops until d has passed and
// finishes the request it is in. Elapsed runs until the last client stops.
func runFor(ctx context.Context, clients int, d time.Duration, do op) (lat []time.Duration, elapsed time.Duration, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	per := make([][]time.Duration, clients)
	errs := make([]error, clients)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := make([]time.Duration, 0, 4096)
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(deadline) {
					break
				}
				if err := do(ctx, c); err != nil {
					if ctx.Err() == nil {
						errs[c] = err
						cancel()
					}
					break
				}
				own = append(own, time.Since(t0))
			}
			per[c] = own
		}()
	}
	wg.Wait()
	elapsed = time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return nil, 0, err
	}
	for _, l := range per {
		lat = append(lat, l...)
	}
	return lat, elapsed, nil
}

// percentile returns the nearest-rank p-th percentile of sorted.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// gqlClient posts GraphQL requests to one endpoint over kept-alive connections.
type gqlClient struct {
	url  string
	http *http.Client
	bufs []bytes.Buffer // one response buffer per client, reused
}

func newGQLClient(url string, clients int) *gqlClient {
	return &gqlClient{
		url: url,
		http: &http.Client{Transport: &http.Transport{
			MaxIdleConns:        256,
			MaxIdleConnsPerHost: 256,
			DisableCompression:  true,
		}, Timeout: 30 * time.Second},
		bufs: make([]bytes.Buffer, clients),
	}
}

// post sends body (a JSON-encoded GraphQL request) as client and returns the response
// body, which stays valid until the client's next post. A response that is not a 200
// with data and without errors is an error.
func (g *gqlClient) post(ctx context.Context, client int, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := g.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	buf := &g.bufs[client]
	buf.Reset()
	if _, err := io.Copy(buf, resp.Body); err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	b := buf.Bytes()
	// Both servers write errors, when there are any, before data (gqlgen's Response and
	// graphql-js's ExecutionResult both order them so): a response that starts with data
	// has none.
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(b, []byte(`{"data":`)) {
		return nil, fmt.Errorf("%s: status %d: %.500s", g.url, resp.StatusCode, b)
	}
	return b, nil
}

// measureInterleaved measures ops with one client that does one of each in turn (in
// the order given) for warmup (not recorded), then for d, and returns each op's sample.
// Each op's requests are spread over the same stretch as the others', so a burst of
// load from elsewhere on a shared machine slows all of them alike: their ratios hold
// where measurements one after another would each meet different weather.
func measureInterleaved(ctx context.Context, warmup, d time.Duration, ops []op) ([]sample, error) {
	run := func(d time.Duration, record bool) ([][]time.Duration, time.Duration, error) {
		lat := make([][]time.Duration, len(ops))
		start := time.Now()
		for time.Since(start) < d {
			for i, do := range ops {
				t0 := time.Now()
				if err := do(ctx, 0); err != nil {
					return nil, 0, err
				}
				if record {
					lat[i] = append(lat[i], time.Since(t0))
				}
			}
		}
		return lat, time.Since(start), nil
	}
	if warmup > 0 {
		if _, _, err := run(warmup, false); err != nil {
			return nil, fmt.Errorf("warming up: %w", err)
		}
	}
	lat, elapsed, err := run(d, true)
	if err != nil {
		return nil, err
	}
	out := make([]sample, len(ops))
	for i, l := range lat {
		slices.Sort(l)
		out[i] = sample{Clients: 1, Requests: len(l), Elapsed: elapsed, P50: percentile(l, 50), P99: percentile(l, 99),
			Throughput: float64(len(l)) / elapsed.Seconds()}
	}
	return out, nil
}
