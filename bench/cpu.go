package main

import "time"

// cpuTimes is the CPU time used so far by each part of the benchmark: the server being
// measured (Parley or PostGraphile, with its child processes), PostgreSQL (the
// postmaster and its backends) and the load generator itself (which also runs the raw
// SQL reference). Differences over a measurement say where a request's CPU goes.
type cpuTimes struct {
	Server, Postgres, Client time.Duration
}

func (a cpuTimes) sub(b cpuTimes) cpuTimes {
	return cpuTimes{Server: a.Server - b.Server, Postgres: a.Postgres - b.Postgres, Client: a.Client - b.Client}
}
