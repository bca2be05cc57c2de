package db

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

// importPlacer decides where each message of an import goes in its conversation's tree:
// the (segment, depth) after its parent, named by source id (parley.ImportedMessage's
// Parent and Root), starting a segment where the parent already has a child. It only
// decides; the bulk writer writes the rows where it says, and finish writes the
// segments it started. A linear import (each message the child of the one before) takes
// no statement here: the parent is the last message placed, the end of its segment.
type importPlacer struct {
	convKey string
	// bySource is where the import's messages are, and the stored messages it named as
	// parents or found present, by source id.
	bySource map[string]spot
	// ends is the deepest depth of each segment known so far, stored or placed.
	ends map[int]int
	// forks are the conversation's segments (read when a branch check needs them, and
	// those started here): each one's parent segment (-1 for a root's) and fork depth.
	forks       map[int]fork
	forksLoaded bool
	segments    int    // the conversation's number of segments
	started     []fork // segments the import started, in order
	// tip is what a message without a parent follows: the last message the import
	// added, at first the active leaf. last is the place of the import's last message,
	// added or present, whose branch the import leaves active.
	tip, last spot
	lastSet   bool
	// fresh says the import made the conversation: every stored message was placed
	// here, so a parent not in bySource is not in the database either.
	fresh bool
}

// fork is a row of message_segments.
type fork struct {
	segment, parent, depth int
}

// newImportPlacer places after the conversation's active leaf, with segments segments.
func newImportPlacer(convKey string, active spot, segments int) *importPlacer {
	return &importPlacer{convKey: convKey, bySource: make(map[string]spot), ends: make(map[int]int),
		forks: make(map[int]fork), segments: segments, tip: active}
}

// resolve reads where the stored messages that msgs name as parents are, those the
// import has not placed or found: one statement for the batch, none when every parent
// is the import's.
func (p *importPlacer) resolve(ctx context.Context, tx *txn, msgs []parley.ImportedMessage) error {
	var ids []string
	for _, im := range msgs {
		if im.Parent == "" {
			continue
		}
		if _, ok := p.bySource[im.Parent]; !ok {
			ids = append(ids, im.Parent)
		}
	}
	if len(ids) == 0 || p.fresh {
		return nil
	}
	var rows []struct {
		SourceID string `db:"source_id"`
		spot
	}
	if err := tx.SelectContext(ctx, &rows, sourceSpotsSQL, p.convKey, pq.Array(ids)); err != nil {
		return fmt.Errorf("find imported parents: %w", err)
	}
	for _, r := range rows {
		p.bySource[r.SourceID] = r.spot
	}
	return nil
}

// found notes a message of the import that the conversation has already, at s.
func (p *importPlacer) found(sourceID string, s spot) {
	if sourceID != "" {
		p.bySource[sourceID] = s
	}
	p.last, p.lastSet = s, true
}

// place decides where im's message goes: after its parent (a new root for Root; after
// the last message added when its parent is not named or not found), in the parent's
// segment when that ends at the parent, else in a new segment forking there.
func (p *importPlacer) place(ctx context.Context, tx *txn, im parley.ImportedMessage) (spot, error) {
	parent := p.tip
	if im.Root {
		parent = spot{}
	} else if at, ok := p.bySource[im.Parent]; ok && im.Parent != "" {
		parent = at
	}
	at := spot{Segment: parent.Segment, Depth: parent.Depth + 1}
	end, err := p.end(ctx, tx, parent.Segment)
	if err != nil {
		return spot{}, err
	}
	if end > parent.Depth {
		// The parent has a child already: the message starts a branch.
		p.segments++
		f := fork{segment: p.segments, parent: parent.Segment, depth: parent.Depth}
		if parent.Depth == 0 {
			f.parent = -1
		}
		p.started = append(p.started, f)
		p.forks[f.segment] = f
		at.Segment = f.segment
	}
	p.ends[at.Segment] = at.Depth
	if id := im.Message.Meta().SourceID; id != "" {
		p.bySource[id] = at
	}
	p.tip, p.last, p.lastSet = at, at, true
	return at, nil
}

// end returns the deepest depth of a segment, reading a stored one the first time. In
// a conversation the import made, a segment it has not placed in has nothing (0).
func (p *importPlacer) end(ctx context.Context, tx *txn, segment int) (int, error) {
	if d, ok := p.ends[segment]; ok {
		return d, nil
	}
	if p.fresh {
		p.ends[segment] = 0
		return 0, nil
	}
	var d sql.NullInt64
	if err := tx.GetContext(ctx, &d, `SELECT max(depth) FROM messages WHERE conversation_id = $1 AND segment = $2`,
		p.convKey, segment); err != nil {
		return 0, fmt.Errorf("read segment %d: %w", segment, err)
	}
	p.ends[segment] = int(d.Int64)
	return int(d.Int64), nil
}

// onPath reports whether the message at a is on the branch through b (b or one of its
// ancestors): a tool result must be on its call's branch.
func (p *importPlacer) onPath(ctx context.Context, tx *txn, a, b spot) (bool, error) {
	for seg, hi := b.Segment, b.Depth; ; {
		if seg == a.Segment {
			return a.Depth <= hi, nil
		}
		if seg == 0 {
			return false, nil
		}
		f, ok := p.forks[seg]
		if !ok && !p.forksLoaded {
			if err := p.loadForks(ctx, tx); err != nil {
				return false, err
			}
			f, ok = p.forks[seg]
		}
		if !ok || f.parent < 0 {
			return false, nil
		}
		seg, hi = f.parent, f.depth
	}
}

// loadForks reads the conversation's stored segments.
func (p *importPlacer) loadForks(ctx context.Context, tx *txn) error {
	var rows []struct {
		Segment int           `db:"segment"`
		Parent  sql.NullInt64 `db:"parent_segment"`
		Depth   int           `db:"fork_depth"`
	}
	if err := tx.SelectContext(ctx, &rows, `SELECT segment, parent_segment, fork_depth FROM message_segments
		WHERE conversation_id = $1`, p.convKey); err != nil {
		return fmt.Errorf("read segments: %w", err)
	}
	for _, r := range rows {
		f := fork{segment: r.Segment, parent: -1, depth: r.Depth}
		if r.Parent.Valid {
			f.parent = int(r.Parent.Int64)
		}
		p.forks[r.Segment] = f
	}
	p.forksLoaded = true
	return nil
}

// finish stores the segments the import started and returns the leaf the conversation's
// active branch ends at: the end of the segment of the import's last message, continued
// along first children as switchBranch continues a branch. ok is false when the import
// placed and found nothing.
func (p *importPlacer) finish(ctx context.Context, tx *txn) (leaf spot, ok bool, err error) {
	if len(p.started) > 0 {
		segs, parents, depths := make([]int64, len(p.started)), make([]sql.NullInt64, len(p.started)), make([]int64, len(p.started))
		for i, f := range p.started {
			segs[i], depths[i] = int64(f.segment), int64(f.depth)
			parents[i] = sql.NullInt64{Int64: int64(f.parent), Valid: f.parent >= 0}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO message_segments (conversation_id, segment, parent_segment, fork_depth)
			SELECT $1, s, p, d FROM unnest($2::int[], $3::int[], $4::int[]) AS t(s, p, d)`,
			p.convKey, pq.Array(segs), pq.Array(parents), pq.Array(depths)); err != nil {
			return spot{}, false, fmt.Errorf("start segments: %w", err)
		}
		p.started = nil
	}
	if !p.lastSet {
		return spot{}, false, nil
	}
	end, err := p.end(ctx, tx, p.last.Segment)
	if err != nil {
		return spot{}, false, err
	}
	return spot{Segment: p.last.Segment, Depth: end}, true, nil
}
