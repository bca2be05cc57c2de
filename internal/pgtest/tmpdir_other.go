//go:build !linux

package pgtest

// clusterParent returns where the test cluster's directory goes: the default temporary
// directory, outside Linux.
func clusterParent() string { return "" }
