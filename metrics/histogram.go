package metrics

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// lagHistogram is a histogram of durations observed from many CPUs at once, as the
// websocket deliveries of one message are (parley_notify_delivery_lag_seconds: one
// observation a delivery, a thousand a message at a thousand subscribers). A
// prometheus.Histogram keeps one set of counters, whose cache lines the CPUs then take
// from one another on every observation; this one keeps a set per shard, and each
// observation takes a shard from a sync.Pool, which hands a CPU back the one it last
// put there. Observations stay exact: the counters are atomic, and a shard shared by
// two CPUs now and then is only slower. Collect adds the shards up.
type lagHistogram struct {
	desc   *prometheus.Desc
	bounds []float64       // the buckets' upper bounds, in seconds
	limits []time.Duration // the same bounds as durations, for Observe
	shards []lagShard
	next   atomic.Uint32 // the shard pool.New hands out next
	pool   sync.Pool     // *lagShard
}

// lagShard is one set of a lagHistogram's counters, alone on its cache lines.
type lagShard struct {
	_       [64]byte
	buckets [maxLagBuckets + 1]atomic.Uint64 // observations per bucket (not cumulative), +Inf last
	count   atomic.Uint64
	sum     atomic.Uint64 // float64 bits, in seconds
	_       [64]byte
}

// maxLagBuckets bounds a lagHistogram's buckets.
const maxLagBuckets = 24

func newLagHistogram(opts prometheus.HistogramOpts) *lagHistogram {
	if len(opts.Buckets) > maxLagBuckets {
		panic("metrics: too many buckets")
	}
	h := &lagHistogram{
		desc:   prometheus.NewDesc(opts.Name, opts.Help, nil, opts.ConstLabels),
		bounds: opts.Buckets,
		shards: make([]lagShard, max(4, 2*runtime.NumCPU())),
	}
	for _, b := range opts.Buckets {
		h.limits = append(h.limits, time.Duration(math.Round(b*float64(time.Second))))
	}
	h.pool.New = func() any { return &h.shards[int(h.next.Add(1))%len(h.shards)] }
	return h
}

// Observe records d (negative: 0).
func (h *lagHistogram) Observe(d time.Duration) {
	d = max(d, 0)
	i := 0
	for i < len(h.limits) && d > h.limits[i] {
		i++
	}
	s := h.pool.Get().(*lagShard)
	s.buckets[i].Add(1)
	for {
		old := s.sum.Load()
		if s.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d.Seconds())) {
			break
		}
	}
	s.count.Add(1) // last: Collect reads it first, so that no bucket is short of it
	h.pool.Put(s)
}

// Describe implements prometheus.Collector.
func (h *lagHistogram) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

// Collect implements prometheus.Collector.
func (h *lagHistogram) Collect(ch chan<- prometheus.Metric) {
	var count uint64
	var sum float64
	per := make([]uint64, len(h.bounds)+1)
	for i := range h.shards {
		s := &h.shards[i]
		count += s.count.Load()
		sum += math.Float64frombits(s.sum.Load())
		for j := range per {
			per[j] += s.buckets[j].Load()
		}
	}
	// Observations under way may have reached their bucket and not yet the count: the
	// count is at least the buckets' total, as a histogram's must be.
	cumulative := make(map[float64]uint64, len(h.bounds))
	var n uint64
	for j, b := range h.bounds {
		n += per[j]
		cumulative[b] = n
	}
	count = max(count, n+per[len(h.bounds)])
	ch <- prometheus.MustNewConstHistogram(h.desc, count, sum, cumulative)
}
