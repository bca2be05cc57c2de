package metrics

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The sharded histogram, observed from many goroutines at once, reports what a
// prometheus.Histogram given the same observations does: the same count, buckets and
// sum.
func TestLagHistogramMatchesPrometheus(t *testing.T) {
	t.Parallel()
	opts := prometheus.HistogramOpts{Name: "lag_seconds", Help: "h", Buckets: []float64{.001, .01, .1, 1}}
	sharded := newLagHistogram(opts)
	opts.Name = "reference_seconds"
	reference := prometheus.NewHistogram(opts)
	reg := prometheus.NewRegistry()
	reg.MustRegister(sharded, reference)

	durations := []time.Duration{-time.Second, 0, time.Millisecond, 1500 * time.Microsecond, 10 * time.Millisecond,
		99 * time.Millisecond, time.Second, 3 * time.Second}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				d := durations[(g+i)%len(durations)]
				sharded.Observe(d)
				reference.Observe(max(d, 0).Seconds())
			}
		}()
	}
	wg.Wait()

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*dto.Histogram{}
	for _, f := range families {
		got[f.GetName()] = f.GetMetric()[0].GetHistogram()
	}
	s, r := got["lag_seconds"], got["reference_seconds"]
	if s == nil || r == nil {
		t.Fatalf("gathered %v", families)
	}
	if s.GetSampleCount() != 8000 || s.GetSampleCount() != r.GetSampleCount() {
		t.Errorf("count: got %d, want %d (8000)", s.GetSampleCount(), r.GetSampleCount())
	}
	if math.Abs(s.GetSampleSum()-r.GetSampleSum()) > 1e-6 {
		t.Errorf("sum: got %v, want %v", s.GetSampleSum(), r.GetSampleSum())
	}
	if len(s.GetBucket()) != len(r.GetBucket()) {
		t.Fatalf("got %d buckets, want %d", len(s.GetBucket()), len(r.GetBucket()))
	}
	for i, b := range s.GetBucket() {
		if want := r.GetBucket()[i]; b.GetUpperBound() != want.GetUpperBound() || b.GetCumulativeCount() != want.GetCumulativeCount() {
			t.Errorf("bucket %d: got le=%v %d, want le=%v %d", i, b.GetUpperBound(), b.GetCumulativeCount(),
				want.GetUpperBound(), want.GetCumulativeCount())
		}
	}
}
