// Package sourceid gives the messages of an imported history source ids where the
// format has none (the provider APIs' message arrays): each input message's id is a
// digest of it and of every message before it, so importing the same history again adds
// nothing, and a longer copy of it adds only what is new.
package sourceid

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/parley-dev/parley"
)

// Chain digests a history's input messages in order. The zero value is not ready: use
// NewChain.
type Chain struct {
	prefix string
	sum    string // hex SHA-256 of the messages so far, chained
}

// NewChain returns a chain whose ids start with prefix and a colon ("anthropic:...").
func NewChain(prefix string) *Chain { return &Chain{prefix: prefix + ":"} }

// Start chains the input message raw (its compact form when it is JSON, so white space
// does not count) and returns what adds the messages it yields to imp, as coming from
// where.
func (c *Chain) Start(imp *parley.Import, where string, raw []byte) *Message {
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		compact.Write(raw)
	}
	sum := sha256.Sum256([]byte(c.sum + "\n" + compact.String()))
	c.sum = hex.EncodeToString(sum[:])
	return &Message{imp: imp, where: where, id: c.prefix + c.sum[:32]}
}

// Message adds the Parley messages one input message yields, numbering their source
// ids: the input message's id for the first, then id#1, id#2...
type Message struct {
	imp   *parley.Import
	where string
	id    string
	n     int
}

// Add gives m its source id and adds it to the import.
func (o *Message) Add(m parley.Message) {
	m.Meta().SourceID = o.id
	if o.n > 0 {
		m.Meta().SourceID = fmt.Sprintf("%s#%d", o.id, o.n)
	}
	o.n++
	o.imp.Add(m, o.where)
}

// Len is how many messages were added.
func (o *Message) Len() int { return o.n }
