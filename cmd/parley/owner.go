package main

import (
	"context"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/config"
)

// withOwner returns ctx acting for the owner import and export act on (--owner).
func withOwner(ctx context.Context, cfg config.Config) (context.Context, error) {
	owner, err := parley.CleanOwner(cfg.Process.Owner)
	if err != nil {
		return ctx, userError(err)
	}
	return parley.WithOwner(ctx, owner), nil
}

// ownerName is the owner ctx acts for (withOwner), for output.
func ownerName(ctx context.Context) string {
	owner, _ := parley.OwnerFrom(ctx)
	return owner
}
