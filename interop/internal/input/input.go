// Package input reads what an importer is given, within the importer's size limit.
package input

import (
	"fmt"
	"io"

	"github.com/parley-dev/parley"
)

// Read reads all of r. More than max bytes is EINVALID, without reading further.
func Read(r io.Reader, max int) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, fmt.Errorf("read input: %w", err)
	}
	if len(raw) > max {
		return nil, parley.Errorf(parley.EINVALID, "input: larger than %d bytes", max)
	}
	return raw, nil
}
