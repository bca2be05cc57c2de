// Package db is Parley's PostgreSQL adapter: it implements the root package's services
// with sqlx over lib/pq.
package db
