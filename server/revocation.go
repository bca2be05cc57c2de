package server

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/transport"
)

// errRevoked is why a revoked token's streams end.
var errRevoked = errors.New("the credential was revoked")

// revocations ends the streams (websockets, SSE) opened with API tokens that have since
// been revoked or have expired: while any is open, one goroutine asks the database
// every interval which of their tokens no longer hold, in one statement for all of
// them, however many streams there are. JWTs cannot be revoked; their expiry ends
// their streams (transport.WithCredentialExpiry).
type revocations struct {
	check    parley.CredentialChecker
	interval time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	streams map[string]*tokenStreams // by token id
	running bool
}

// tokenStreams are the open streams of one token: each one's cancel func.
type tokenStreams struct {
	cancels map[*context.CancelCauseFunc]struct{}
}

// revocationInterval is how often open streams' tokens are checked: a revoked
// token's streams end within about this long.
const revocationInterval = 2 * time.Second

func newRevocations(a parley.Authenticator, shares parley.CredentialChecker, log *slog.Logger) *revocations {
	// The store knows every API token, share links included; the authenticator knows
	// them only when it accepts API tokens.
	var check parley.CredentialChecker = shares
	if check == nil {
		c, ok := a.(parley.CredentialChecker)
		if !ok {
			return nil
		}
		check = c
	}
	return &revocations{check: check, interval: revocationInterval, log: log,
		streams: map[string]*tokenStreams{}}
}

// watch returns ctx, ended with errRevoked once p's token no longer holds. Principals
// that are not API tokens get ctx as it is.
func (r *revocations) watch(ctx context.Context, p *parley.Principal) context.Context {
	if r == nil || p.Method != "token" || p.TokenID == "" {
		return ctx
	}
	ctx, cancel := context.WithCancelCause(ctx)
	r.mu.Lock()
	set := r.streams[p.TokenID]
	if set == nil {
		set = &tokenStreams{cancels: map[*context.CancelCauseFunc]struct{}{}}
		r.streams[p.TokenID] = set
	}
	set.cancels[&cancel] = struct{}{}
	if !r.running {
		r.running = true
		go r.loop()
	}
	r.mu.Unlock()
	context.AfterFunc(ctx, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(set.cancels, &cancel)
		if len(set.cancels) == 0 && r.streams[p.TokenID] == set {
			delete(r.streams, p.TokenID)
		}
	})
	return ctx
}

// loop checks the watched tokens every interval, and ends once none is watched.
func (r *revocations) loop() {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for range t.C {
		r.mu.Lock()
		if len(r.streams) == 0 {
			r.running = false
			r.mu.Unlock()
			return
		}
		ids := make([]string, 0, len(r.streams))
		for id := range r.streams {
			ids = append(ids, id)
		}
		r.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*r.interval)
		invalid, err := r.check.InvalidTokens(ctx, ids)
		cancel()
		if err != nil {
			// The database is away: the streams' own reads fail and end them if it stays.
			r.log.Warn("cannot check the tokens of open streams", "err", err)
			continue
		}
		r.mu.Lock()
		for _, id := range invalid {
			if set := r.streams[id]; set != nil {
				for c := range set.cancels {
					(*c)(errRevoked)
				}
			}
		}
		r.mu.Unlock()
	}
}

// checkOperation re-checks the credential of a websocket at each operation it
// starts: a token revoked since it connected is refused at once, without waiting for
// the next round of the loop.
func (r *revocations) checkOperation(ctx context.Context) error {
	p := principalFrom(ctx)
	if r == nil || p == nil || p.Method != "token" {
		return nil
	}
	invalid, err := r.check.InvalidTokens(ctx, []string{p.TokenID})
	if err != nil {
		return err
	}
	if len(invalid) > 0 {
		return &transport.WebsocketRefusal{Code: transport.CloseForbidden, Reason: "Forbidden: " + errRevoked.Error()}
	}
	return nil
}
