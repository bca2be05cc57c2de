package config

import "fmt"

// RateLimits bound how fast one owner may send requests and writes, each a token
// bucket: a sustained rate per second and a burst above it. They apply only when
// authentication is configured (in local mode there is one owner, on one machine);
// 0 turns a limit off. nil takes the default.
type RateLimits struct {
	// Requests counts every request to /graphql (a query, a mutation, a subscription
	// over SSE, a websocket's upgrade).
	Requests      *int `yaml:"requests_per_second"`
	RequestsBurst *int `yaml:"requests_burst"`
	// Writes counts mutations, over every transport.
	Writes      *int `yaml:"writes_per_second"`
	WritesBurst *int `yaml:"writes_burst"`
}

// The default rate limits per owner, generous for a person or an agent and tight
// enough that one owner cannot take the server from the others.
const (
	DefaultRateRequests      = 50
	DefaultRateRequestsBurst = 100
	DefaultRateWrites        = 20
	DefaultRateWritesBurst   = 40
)

func (r *RateLimits) applyDefaults() {
	for _, f := range []struct {
		v   **int
		def int
	}{
		{&r.Requests, DefaultRateRequests}, {&r.RequestsBurst, DefaultRateRequestsBurst},
		{&r.Writes, DefaultRateWrites}, {&r.WritesBurst, DefaultRateWritesBurst},
	} {
		if *f.v == nil {
			v := f.def
			*f.v = &v
		}
	}
}

func (r *RateLimits) validate() error {
	for _, f := range []struct {
		key  string
		v    *int
		rate *int
	}{
		{"rate_limits.requests_per_second", r.Requests, nil}, {"rate_limits.requests_burst", r.RequestsBurst, r.Requests},
		{"rate_limits.writes_per_second", r.Writes, nil}, {"rate_limits.writes_burst", r.WritesBurst, r.Writes},
	} {
		if f.v == nil {
			continue
		}
		if *f.v < 0 {
			return keyError(f.key, "must be 0 (off) or more")
		}
		if f.rate != nil && *f.rate > 0 && *f.v < 1 {
			return keyError(f.key, fmt.Sprintf("must be at least 1 when the rate is %d: a bucket that holds nothing refuses everything", *f.rate))
		}
	}
	return nil
}
