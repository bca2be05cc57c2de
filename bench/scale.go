package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/bench/internal/parleyproc"
	"github.com/parley-dev/parley/internal/selection"
)

// The scale rows: whether an operation costs the same in a conversation of 100,000
// messages in a database of 1,000,000 as in one of 100 messages in a small database.
// Two more Parleys serve two more databases, generated in SQL (generate_series): a small
// one (a 100-message conversation and 60 of two messages) and a large one (conversations
// of 100, 10,000 and 100,000 messages and enough of a few messages each to make the
// conversations and messages asked for). Each run measures each operation against both
// back to back, so the ratio of the two is paired like every other ratio here.

// scaleSizes are the conversations whose history is read, by their number of messages.
var scaleSizes = []int{100, 10000, 100000}

// scaleConvID is the id of the generated conversation number i (1-based) of a database.
func scaleConvID(i int) string { return fmt.Sprintf("00000000-0000-4000-9000-%012d", i) }

// generateHistory fills an empty Parley database with conversations of the given sizes,
// the first ones numbered as sizes lists them, every message a text alternating user and
// assistant as Parley stores them (the payload of a text message). Every conversation
// belongs to the local owner; the most recently updated come first in the order sizes
// lists them.
func generateHistory(ctx context.Context, db *sqlx.DB, sizes []int) error {
	ns := make([]int64, len(sizes))
	for i, n := range sizes {
		ns[i] = int64(n)
	}
	for _, q := range []string{
		`INSERT INTO conversations (id, title, last_position, message_count, created_at, updated_at)
		 SELECT ('00000000-0000-4000-9000-' || lpad(i::text, 12, '0'))::uuid, 'conversation ' || i, n, n,
		        now() - i * interval '1 second', now() - i * interval '1 second'
		 FROM unnest($1::int[]) WITH ORDINALITY AS s(n, i)`,
		`INSERT INTO messages (conversation_id, position, schema_version, kind, role, content, payload)
		 SELECT ('00000000-0000-4000-9000-' || lpad(i::text, 12, '0'))::uuid, p, 2, 'text',
		        CASE WHEN p % 2 = 1 THEN 'user' ELSE 'assistant' END, t,
		        jsonb_build_object('parts', jsonb_build_array(jsonb_build_object('kind', 'TEXT', 'content', t)))
		 FROM unnest($1::int[]) WITH ORDINALITY AS s(n, i), generate_series(1, n) p,
		      LATERAL (SELECT 'Message **' || p || '** of conversation ' || i || ': what does it say?' AS t) x`,
	} {
		if _, err := db.ExecContext(ctx, q, pq.Array(ns)); err != nil {
			return err
		}
	}
	// What autovacuum would have done by the time anyone reads a history this long.
	_, err := db.ExecContext(ctx, `VACUUM ANALYZE conversations, messages`)
	return err
}

// largeSizes returns the large database's conversations: scaleSizes first, then enough
// of a few messages each to make conversations and messages in all.
func largeSizes(conversations, messages int) ([]int, error) {
	sizes := []int{scaleSizes[2], scaleSizes[1], scaleSizes[0]} // numbered 1, 2, 3
	rest, restConvs := messages, conversations-len(sizes)
	for _, n := range sizes {
		rest -= n
	}
	if restConvs < 50 || rest < restConvs {
		return nil, fmt.Errorf("a database of %d messages in %d conversations cannot hold conversations of %v and 50 others of a message or more",
			messages, conversations, scaleSizes)
	}
	for i := range restConvs {
		n := rest / restConvs
		if i < rest%restConvs {
			n++
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// smallSizes is the small database: the 100-message conversation (number 1) and 60
// others of two messages, enough for a page of 50 conversations.
func smallSizes() []int {
	sizes := []int{scaleSizes[0]}
	for range 60 {
		sizes = append(sizes, 2)
	}
	return sizes
}

// scaleDB is one of the two databases and the Parley serving it.
type scaleDB struct {
	name   string
	parley *proc
	client *gqlClient
	convs  map[int]string // GraphQL id of the conversation of n messages
	// conversations is how many the database holds.
	conversations int
}

// setUpScale creates, fills and serves the small and the large database.
func (e *env) setUpScale(ctx context.Context, cfg *config, logf func(string, ...any)) error {
	large, err := largeSizes(cfg.scaleConvs, cfg.scaleMsgs)
	if err != nil {
		return err
	}
	for _, d := range []struct {
		name  string
		sizes []int
		which map[int]int // conversation number of each size read
	}{
		{"small", smallSizes(), map[int]int{100: 1}},
		{"large", large, map[int]int{100000: 1, 10000: 2, 100: 3}},
	} {
		dbname := "parley_" + d.name
		if err := createDatabase(ctx, e.cluster.DSN("postgres"), dbname); err != nil {
			return err
		}
		dsn := e.cluster.DSN(dbname)
		port, err := parleyproc.FreePort()
		if err != nil {
			return err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		argv := []string{cfg.parleyBin, "serve", "--addr", addr, "--database-url", dsn}
		logf("starting Parley on %s for the %s database", addr, d.name)
		p, err := startProc(ctx, "parley ("+d.name+" database)", filepath.Join(e.work, "parley-"+d.name+".log"), nil, argv, 60*time.Second,
			httpOK("http://"+addr+"/readyz"))
		if err != nil {
			return err
		}
		s := &scaleDB{name: d.name, parley: p, client: newGQLClient("http://"+addr+"/graphql", 1), convs: map[int]string{},
			conversations: len(d.sizes)}
		e.scale = append(e.scale, s)
		total := 0
		for _, n := range d.sizes {
			total += n
		}
		logf("generating the %s database: %d messages in %d conversations", d.name, total, len(d.sizes))
		began := time.Now()
		db, err := sqlx.Open("postgres", dsn)
		if err != nil {
			return err
		}
		err = generateHistory(ctx, db, d.sizes)
		db.Close()
		if err != nil {
			return fmt.Errorf("generate the %s database: %w", d.name, err)
		}
		logf("  generated in %s", time.Since(began).Round(100*time.Millisecond))
		for n, i := range d.which {
			s.convs[n] = parley.ConversationID(scaleConvID(i))
		}
	}
	e.scaleSetUp = true
	return e.checkScale(ctx)
}

// scaleOps are the operations of the scale rows, by workload: each reads or writes the
// conversation of n messages (n 0: the operation is about the list of conversations).
var scaleOps = []struct {
	workload, title string
	sizes           []int
	body            func(conv string, n int) []byte
}{
	{"scale-first", "first page (`messages(first: 50)`)", scaleSizes, func(conv string, n int) []byte {
		return request(scalePageQuery, map[string]any{"c": conv, "first": 50})
	}},
	{"scale-middle", "a middle page (`messages(first: 50, after:)` the middle)", scaleSizes, func(conv string, n int) []byte {
		return request(scalePageQuery, map[string]any{"c": conv, "first": 50, "after": parley.MessageCursor(n/2 - 25)})
	}},
	{"scale-last", "the last page (`messages(last: 50)`)", scaleSizes, func(conv string, n int) []byte {
		return request(scalePageQuery, map[string]any{"c": conv, "last": 50})
	}},
	{"scale-before", "the page before the last (`messages(last: 50, before:)`, scrolling up)", scaleSizes, func(conv string, n int) []byte {
		return request(scalePageQuery, map[string]any{"c": conv, "last": 50, "before": parley.MessageCursor(n - 49)})
	}},
	{"scale-count", "`messageCount` and `messages { totalCount }`", []int{100, 100000}, func(conv string, n int) []byte {
		return request(`query($c: ID!) { conversation(id: $c) { messageCount messages(first: 1) { totalCount } } }`, map[string]any{"c": conv})
	}},
	{"scale-save", "save (`addMessage` of a text)", []int{100, 100000}, func(conv string, n int) []byte {
		return request(parleySaveQuery, map[string]any{"c": conv, "i": map[string]any{"text": map[string]any{"role": "USER", "content": saveText}}})
	}},
	{"scale-list", "`conversations(first: 50)`", []int{0}, func(string, int) []byte {
		return request(`{ conversations(first: 50) { edges { cursor node { id title createdAt updatedAt messageCount } } pageInfo { hasNextPage endCursor } } }`, nil)
	}},
	{"scale-total", "`conversations { totalCount }`", []int{0}, func(string, int) []byte {
		return request(`{ conversations(first: 1) { totalCount } }`, nil)
	}},
}

// scalePageQuery reads a page of a conversation, every field of every message.
const scalePageQuery = `query($c: ID!, $first: Int, $after: String, $last: Int, $before: String) { conversation(id: $c) {
	messages(first: $first, after: $after, last: $last, before: $before) {
		edges { cursor node {` + selection.MessageFields + `} } pageInfo { hasNextPage hasPreviousPage } } } }`

// scaleTarget names a measurement of the scale rows: the database and the size of the
// conversation.
func scaleTarget(db string, n int) string {
	if n == 0 {
		return db
	}
	return fmt.Sprintf("%s-%d", db, n)
}

// scalePlan is a group per scale operation: the small database's 100-message
// conversation and each size in the large database.
func (e *env) scalePlan() [][]measurement {
	if !e.scaleSetUp {
		return nil
	}
	var plan [][]measurement
	for _, o := range scaleOps {
		var group []measurement
		for _, s := range e.scale {
			for _, n := range o.sizes {
				if s.name == "small" && n > scaleSizes[0] {
					continue
				}
				body := o.body(s.convs[n], n)
				c := s.client
				group = append(group, measurement{key: keyOf(o.workload, 1, scaleTarget(s.name, n)), clients: 1, interleave: true,
					op: func(ctx context.Context, client int) error {
						_, err := c.post(ctx, client, body)
						return err
					}})
			}
		}
		plan = append(plan, group)
	}
	return plan
}

// checkScale reads each page, count and list once from both databases and checks what
// comes back: a benchmark of an empty page, or of the wrong conversation, measures
// nothing.
func (e *env) checkScale(ctx context.Context) error {
	for _, s := range e.scale {
		for _, o := range scaleOps {
			if o.workload == "scale-save" {
				continue
			}
			for _, n := range o.sizes {
				if s.name == "small" && n > scaleSizes[0] {
					continue
				}
				b, err := s.client.post(ctx, 0, o.body(s.convs[n], n))
				if err != nil {
					return fmt.Errorf("%s, %s database: %w", o.workload, s.name, err)
				}
				var r struct {
					Data struct {
						Conversation struct {
							MessageCount int
							Messages     struct {
								TotalCount int
								Edges      []struct{ Cursor string }
							}
						}
						Conversations struct {
							TotalCount int
							Edges      []json.RawMessage
						}
					}
				}
				if err := json.Unmarshal(b, &r); err != nil {
					return err
				}
				got, want := 0, 50
				switch o.workload {
				case "scale-count":
					got, want = r.Data.Conversation.MessageCount, n
					if t := r.Data.Conversation.Messages.TotalCount; t != n {
						got = t
					}
				case "scale-list":
					got = len(r.Data.Conversations.Edges)
				case "scale-total":
					got, want = r.Data.Conversations.TotalCount, s.conversations
				default:
					got = len(r.Data.Conversation.Messages.Edges)
				}
				if got != want {
					return fmt.Errorf("%s of %d messages, %s database: got %d, want %d: %.300s", o.workload, n, s.name, got, want, b)
				}
			}
		}
	}
	return nil
}

func (e *env) stopScale() {
	for _, s := range e.scale {
		s.parley.stop()
	}
}
