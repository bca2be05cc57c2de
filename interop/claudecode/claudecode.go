// Package claudecode reads Claude Code session files
// (~/.claude/projects/<project>/<session>.jsonl) into Parley messages.
//
// A session file is one JSON record per line. Only user and assistant records that are
// conversation turns become messages; role attribution follows seed 004:
//
//   - a user record carrying tool_result blocks is a tool result (one message per
//     block, linked by tool_use_id, is_error giving status ERROR); images inside a
//     tool_result stay inside it as IMAGE parts, in order among its text; other text
//     in the record stays on the result, other images follow it as image messages;
//   - an assistant reply carrying tool_use blocks is a tool request, keeping its text
//     and thinking; without them it is assistant text;
//   - plain user text is user text; images are image messages.
//
// What real files hold besides turns, and what this package does with it:
//
//   - An assistant reply is streamed as several lines sharing message.id, not
//     necessarily next to each other: they become one message, placed at the first
//     line, with the blocks in file order. Its source id is message.id.
//   - A resumed session re-writes earlier turns with new uuids but the same message.id
//     and timestamps: blocks already read for a reply, user turns with the same
//     timestamp and content, and second results for a call are skipped as re-written.
//   - Text Claude Code injected rather than the person typed (isMeta: the prompt a
//     slash command expands to, caveats, reminders) is SUPERVISOR text: the model read
//     it, so it is kept, and exports send it as system instructions.
//   - Sidechain (sub-agent) records, summaries, system notices, progress, snapshots and
//     queue operations are skipped and counted. A compaction summary (isCompactSummary) is
//     a CompactionMessage covering every message before it: exports for an LLM start
//     at it, and the turns it summarizes stay in the history.
//     Notices Claude Code wrote in the model's name (API errors, model "<synthetic>")
//     are skipped: they are not the model's words.
//   - An unfamiliar record type is skipped with a warning; a session ending with an
//     unanswered tool_use imports, the call staying PENDING.
//   - A tool_result naming a call that no earlier line makes is an error, as is a line
//     that is not JSON or has fields of the wrong type: the error names the line.
//   - Lines are read whole, whatever their length (base64 screenshots pass 1 MB).
//   - The title is the session's custom title, else its summary.
//
// The records' uuid/parentUuid links make a tree, and so do the messages: each message
// names its parent (parley.ImportedMessage.Parent, by source id), so that a rewind, an
// edited prompt or a resumed session that went back imports as a branch. Records that
// make no message of their own (progress, system notices, the further lines of a
// streamed reply, a resumed session's copies) pass their place on to their children, so
// that only message-level forks are forks. The results of one request's calls are one
// run: each record answering a call names the call's line as its parent (Claude Code
// 2.x), which would make parallel results siblings, so a child of any message of the
// run follows the run's last message instead. A compaction boundary (parentUuid null)
// continues from its logicalParentUuid, or from the message before it.
package claudecode

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	segmentjson "github.com/segmentio/encoding/json"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/internal/contentblock"
	"github.com/parley-dev/parley/interop/internal/jsonerr"
)

// ansi matches terminal escape sequences (colours, cursor moves, hyperlinks) that tool
// output carries. CleanText would remove only their ESC byte and leave "[31m" behind.
var ansi = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])`)

// stripANSI removes terminal escape sequences from text.
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	return ansi.ReplaceAllString(s, "")
}

// MaxLineBytes bounds one line of a session file. Real lines reach a little over 1 MB
// (screenshots); this only stops a runaway file from exhausting memory.
const MaxLineBytes = 64 << 20

// bookkeeping are record types that are known not to be conversation turns.
var bookkeeping = map[string]string{
	"progress":              "progress record (hooks, tools, sub-agents)",
	"file-history-snapshot": "file history snapshot",
	"queue-operation":       "queued-input bookkeeping",
	"custom-title":          "custom title (used as the title)",
	"attachment":            "attachment bookkeeping",
	"mode":                  "mode bookkeeping",
}

// Skip reasons, shared by the records they count.
const (
	reasonSidechain   = "sidechain (sub-agent) record"
	reasonSynthetic   = "notice Claude Code wrote in the model's name (API error, interruption)"
	reasonRewritten   = "turn re-written by a resumed session"
	reasonEmpty       = "turn with no content"
	reasonThinkOnly   = "assistant reply with only thinking (no text or tool call)"
	reasonSystem      = "system notice (not a conversation turn)"
	reasonSummary     = "session summary (used as the title)"
	reasonUnfamiliar  = "record of an unfamiliar type"
	maxSourceIDLength = 200
)

// record is the envelope of a line: only the fields this package reads.
type record struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	UUID    string `json:"uuid"`
	// ParentUUID is absent (nil), null (a root) or a uuid.
	ParentUUID        json.RawMessage `json:"parentUuid"`
	LogicalParentUUID string          `json:"logicalParentUuid"`
	Timestamp         string          `json:"timestamp"`
	IsSidechain       bool            `json:"isSidechain"`
	IsMeta            bool            `json:"isMeta"`
	IsCompactSummary  bool            `json:"isCompactSummary"`
	IsAPIError        bool            `json:"isApiErrorMessage"`
	Message           json.RawMessage `json:"message"`
	Summary           string          `json:"summary"`
	LeafUUID          string          `json:"leafUuid"`
	CustomTitle       string          `json:"customTitle"`
}

// apiMessage is a record's message: an Anthropic Messages API message.
type apiMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Model      string          `json:"model"`
	Content    json.RawMessage `json:"content"`
	StopReason string          `json:"stop_reason"`
	Usage      *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// provenance is what a line says of who produced a reply: its model, the API's message
// id, stop reason and usage (Claude Code repeats the reply's usage on each of its lines;
// the last line's is the reply's).
func (m *apiMessage) provenance(prev *parley.Provenance) *parley.Provenance {
	p := parley.Provenance{Provider: "anthropic", Model: m.Model, ResponseID: m.ID, FinishReason: m.StopReason}
	if u := m.Usage; u != nil {
		p.Usage = parley.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CachedInputTokens: u.CacheReadInputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens}
	}
	if prev != nil {
		merged := prev.Merge(&p)
		return &merged
	}
	if m.Model == "" && m.Usage == nil {
		return nil
	}
	return &p
}

// block is a Messages API content block of any type.
type block = contentblock.Block

// reply is an assistant reply being assembled from its lines.
type reply struct {
	line      int
	sourceID  string
	createdAt time.Time
	parts     []parley.Part
	calls     []parley.ToolCall
	at        []int // how many parts came before each call
	// seen holds digests of the blocks already read, not the blocks, which can be
	// large: a reply has a few, so a slice searched in order is smaller than a map.
	seen [][16]byte
	// emitted says the reply was handed out (a later reply began): blocks of it that
	// come later still cannot be added.
	emitted bool
	prov    *parley.Provenance
	// parent is where the reply goes (its first line's parent), self the reply's place,
	// last the last message of the reply (itself or an image it carried).
	parent, self, last ref
}

// ref is a place in the messages' tree as the parser sees it: a message, by its source
// id and its order among the messages, before the root (a root's parent), or unknown (a
// parent outside the file).
type ref struct {
	sid     string
	ord     int
	root    bool
	unknown bool
}

var (
	rootRef    = ref{root: true, ord: -1}
	unknownRef = ref{unknown: true, ord: -1}
)

// item is one entry of the output, in file order: a finished message or a reply.
type item struct {
	msg    parley.Message
	origin string
	reply  *reply
	parent ref
}

type parser struct {
	imp        *parley.Import
	items      []item
	replies    map[string]*reply
	uses       map[string]*toolUse // by tool_use id
	userTurns  map[turnKey]ref     // the turn's last message
	uuids      map[string]bool     // the uuids of records that have no place (at): sidechains', summaries
	turns      int                 // conversation turns read so far
	unfamiliar map[string]bool
	dropped    map[string]bool // block types warned about
	summaries  []summaryRecord
	custom     string

	// The tree: each record's place (by uuid), the order of the last message (ord), and
	// the runs of results: each run's last message (runs), and the run each message is
	// in, by its order (runOf: an index in runs plus one, 0 for none; a request is in
	// the run of its calls' results). Slices by order rather than maps by source id: they
	// are consulted for nearly every record.
	at    map[string]ref
	ord   int
	runs  []ref
	runOf []int32
	gone  map[int]ref // replies left out (by order), to their parents

	scratch []plainBlock // decodeBlocks'
	rec     record       // line's
	msg     apiMessage   // line's
	fp      []byte       // assistant's, kept from block to block
}

// toolUse is a call a line made: the line, its request, and its result once read.
type toolUse struct {
	line     int
	req      ref
	answered bool
	answer   answer
}

type answer struct {
	line        int
	fingerprint string
	at          ref
}

// turnKey tells a resumed session's copies of a user turn: the record's timestamp and a
// digest of its message.
type turnKey struct {
	timestamp string
	message   [16]byte
}

type summaryRecord struct {
	text, leaf string
}

// Parse reads a session file whole. Errors are *parley.Error with code EINVALID, naming
// the line and what is wrong with it.
func Parse(r io.Reader) (*parley.Import, error) {
	src := Stream(r)
	var msgs []parley.ImportedMessage
	for {
		im, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		msgs = append(msgs, im)
	}
	imp := src.Import()
	imp.Messages = msgs
	return imp, nil
}

// Stream reads a session file a line at a time, handing out each message once it is
// complete, so that a session of any length takes the memory of a turn, not of the
// file: a reply is complete when the next reply begins (its lines, not necessarily
// adjacent, end there), and what follows it waits for it. What stays for the whole
// file is small and fixed per record: digests of the blocks, turns and results seen
// (to recognize a resumed session's copies), call ids and record uuids.
func Stream(r io.Reader) parley.ImportSource {
	return &stream{p: newParser(), br: bufio.NewReaderSize(r, 256<<10)}
}

type stream struct {
	p    *parser
	br   *bufio.Reader
	n    int // the last line read
	done bool
	err  error
}

// Next implements parley.ImportSource.
func (s *stream) Next() (parley.ImportedMessage, error) {
	for len(s.p.imp.Messages) == 0 {
		if s.err != nil {
			return parley.ImportedMessage{}, s.err
		}
		if s.done {
			return parley.ImportedMessage{}, io.EOF
		}
		s.err = s.readLine()
	}
	im := s.p.imp.Messages[0]
	s.p.imp.Messages[0] = parley.ImportedMessage{}
	s.p.imp.Messages = s.p.imp.Messages[1:]
	return im, nil
}

// readLine reads and parses the next line, finishing at the end of the input.
func (s *stream) readLine() error {
	s.n++
	line, err := readLine(s.br)
	if len(line) > MaxLineBytes {
		return parley.Errorf(parley.EINVALID, "line %d: longer than %d bytes", s.n, MaxLineBytes)
	}
	if len(bytes.TrimSpace(line)) > 0 {
		if perr := s.p.line(s.n, line); perr != nil {
			return perr
		}
	}
	if errors.Is(err, io.EOF) {
		s.p.finish()
		s.done = true
		return nil
	} else if err != nil {
		return fmt.Errorf("read line %d: %w", s.n, err)
	}
	return nil
}

// Import implements parley.ImportSource.
func (s *stream) Import() *parley.Import { return s.p.imp }

func newParser() *parser {
	return &parser{
		imp:        &parley.Import{},
		replies:    make(map[string]*reply),
		uses:       make(map[string]*toolUse),
		userTurns:  make(map[turnKey]ref),
		uuids:      make(map[string]bool),
		unfamiliar: make(map[string]bool),
		dropped:    make(map[string]bool),
		at:         make(map[string]ref),
		runOf:      []int32{0}, // orders start at 1
		gone:       make(map[int]ref),
	}
}

// parentOf is where a record's children go by its parentUuid: the place of the record
// it names (the last message of a run it names), a root, or unknown for a uuid this
// file does not have. A compaction boundary has no parent but a logical one.
func (p *parser) parentOf(rec *record) ref {
	raw := bytes.TrimSpace(rec.ParentUUID)
	var id string
	if len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if err := unmarshal(raw, &id); err != nil {
			return unknownRef
		}
	}
	if id == "" {
		switch {
		case rec.LogicalParentUUID != "":
			id = rec.LogicalParentUUID
		case len(raw) == 0, rec.Type == "system" && rec.Subtype == "compact_boundary", rec.IsCompactSummary:
			return unknownRef // the message before it, as in a file without links
		default:
			return rootRef
		}
	}
	at, ok := p.at[id]
	if !ok {
		return unknownRef
	}
	return p.follow(at)
}

// follow takes a place in a run of results to the run's last message.
func (p *parser) follow(at ref) ref {
	if run := p.run(at); run > 0 {
		return p.runs[run-1]
	}
	return at
}

// run is the run of results the message at m is in (an index in runs plus one), 0 for
// none.
func (p *parser) run(m ref) int32 {
	if m.ord <= 0 {
		return 0
	}
	return p.runOf[m.ord]
}

// pass gives a record that makes no message of its own the place of its parent.
func (p *parser) pass(rec *record) {
	if rec.UUID != "" {
		p.at[rec.UUID] = p.parentOf(rec)
	}
}

// sawUUID records the uuid of a record that gets no place in the tree (at): every
// other record's is a key of at, which hasUUID looks in as well, rather than a second
// map holding every record's uuid (two inserts a line into maps of 100,000 keys).
func (p *parser) sawUUID(uuid string) {
	if uuid != "" {
		p.uuids[uuid] = true
	}
}

// hasUUID reports whether a record of the file has the uuid.
func (p *parser) hasUUID(uuid string) bool {
	if p.uuids[uuid] {
		return true
	}
	_, ok := p.at[uuid]
	return ok
}

// next numbers a new message.
func (p *parser) next(sid string) ref {
	p.ord++
	p.runOf = append(p.runOf, 0)
	return ref{sid: sid, ord: p.ord}
}

// readLine reads one line without its newline, however long, stopping early past
// MaxLineBytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > MaxLineBytes {
				return line, nil
			}
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		return bytes.TrimSuffix(line, []byte("\r")), err
	}
}

func invalid(n int, format string, args ...any) error {
	return parley.Errorf(parley.EINVALID, "line %d: %s", n, fmt.Sprintf(format, args...))
}

func (p *parser) line(n int, line []byte) error {
	line = bytes.TrimPrefix(bytes.TrimSpace(line), []byte("\xef\xbb\xbf"))
	if line[0] != '{' {
		if !json.Valid(line) {
			return invalid(n, "not valid JSON (%s)", jsonerr.SyntaxProblem(line, "line"))
		}
		return invalid(n, "a record must be a JSON object, got %s", jsonerr.Kind(line))
	}
	// The record and its message are decoded into the parser's, kept from line to line
	// (nothing keeps them past the line): two allocations a line fewer.
	rec := &p.rec
	*rec = record{}
	if err := unmarshal(line, rec); err != nil {
		if perr := recordProblem(n, line, rec, err); perr != nil {
			return perr
		}
	}
	where := lineName(n)
	switch rec.Type {
	case "":
		return invalid(n, "no \"type\" field: not a Claude Code session record")
	case "user", "assistant":
		if rec.IsSidechain {
			p.sawUUID(rec.UUID)
			p.imp.Skip(reasonSidechain, where)
			return nil // a sub-agent's records are never a main-line record's parent
		}
		created, err := parseTime(rec.Timestamp)
		if err != nil {
			return invalid(n, "timestamp: %q is not an ISO 8601 time", rec.Timestamp)
		}
		if len(bytes.TrimSpace(rec.Message)) == 0 || bytes.Equal(bytes.TrimSpace(rec.Message), []byte("null")) {
			return invalid(n, "a %s record needs a message", rec.Type)
		}
		msg := &p.msg
		*msg = apiMessage{}
		if err := unmarshal(rec.Message, msg); err != nil {
			return invalid(n, "message: %s", decodeProblem(err, rec.Message, "an object"))
		}
		if msg.Role != "" && msg.Role != rec.Type {
			return invalid(n, "message.role: %q in a %s record; want %q", msg.Role, rec.Type, rec.Type)
		}
		blocks, text, isString, err := p.decodeContent(msg.Content)
		if err != nil {
			return invalid(n, "message.%s", err)
		}
		if rec.Type == "user" {
			return p.user(n, where, rec, created, blocks, text, isString)
		}
		return p.assistant(n, where, rec, msg, created, blocks, text, isString)
	case "summary":
		p.sawUUID(rec.UUID)
		p.summaries = append(p.summaries, summaryRecord{text: rec.Summary, leaf: rec.LeafUUID})
		p.imp.Skip(reasonSummary, where)
	case "system":
		p.pass(rec)
		p.imp.Skip(reasonSystem, where)
	default:
		p.pass(rec)
		if reason, ok := bookkeeping[rec.Type]; ok {
			if rec.Type == "custom-title" && strings.TrimSpace(rec.CustomTitle) != "" {
				p.custom = rec.CustomTitle
			}
			p.imp.Skip(reason, where)
			return nil
		}
		if !p.unfamiliar[rec.Type] {
			p.unfamiliar[rec.Type] = true
			p.imp.Warn("line %d: unfamiliar record type %q skipped (a newer Claude Code?); later records of this type are skipped too", n, jsonerr.Truncate(rec.Type))
		}
		p.imp.Skip(reasonUnfamiliar, where)
	}
	return nil
}

// recordProblem is the error of a line that did not decode into rec (err), or nil when
// the line is still read: a field of the wrong type in a record that is not a turn.
func recordProblem(n int, line []byte, rec *record, err error) error {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		return invalid(n, "not valid JSON (%s)", jsonerr.SyntaxProblem(line, "line"))
	}
	if typeErr.Field == "type" || rec.Type == "user" || rec.Type == "assistant" {
		return invalid(n, "%s: want %s, got %s", typeErr.Field, jsonerr.GoKind(typeErr.Type.Kind().String(), "an object or a boolean"), typeErr.Value)
	}
	return nil
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

// decodeContent reads a message's content: a string, or an array of blocks.
func (p *parser) decodeContent(raw json.RawMessage) (blocks []block, text string, isString bool, err error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, "", true, nil
	case raw[0] == '"':
		if err := unmarshal(raw, &text); err != nil {
			return nil, "", false, fmt.Errorf("content: not valid JSON")
		}
		return nil, stripANSI(text), true, nil
	case raw[0] != '[':
		return nil, "", false, fmt.Errorf("content: want a string or an array of blocks, got %s", jsonerr.Kind(raw))
	}
	if blocks, ok := decodeBlocks(raw, &p.scratch); ok {
		return blocks, "", false, nil
	}
	var elems []json.RawMessage
	if err := unmarshal(raw, &elems); err != nil {
		return nil, "", false, fmt.Errorf("content: not valid JSON")
	}
	blocks = make([]block, len(elems))
	for i, e := range elems {
		if t := bytes.TrimSpace(e); len(t) == 0 || t[0] != '{' {
			return nil, "", false, fmt.Errorf("content[%d]: want a block object, got %s", i, jsonerr.Kind(e))
		}
		if err := unmarshal(e, &blocks[i]); err != nil {
			return nil, "", false, fmt.Errorf("content[%d]%s", i, jsonerr.FieldProblem(err, "an object or a boolean"))
		}
		if blocks[i].Type == "" {
			return nil, "", false, fmt.Errorf("content[%d].type: a block needs a type", i)
		}
		blocks[i].Text = stripANSI(blocks[i].Text)
	}
	return blocks, "", false, nil
}

// plainBlock is a block decoded without contentblock.Block's UnmarshalJSON: an array of
// them decodes in one pass.
type plainBlock contentblock.Block

// decodeBlocks decodes raw, an array, into its blocks in one pass, where decodeContent
// decodes it into elements and then each element: what a line's content is, nearly
// always. It reports false, for decodeContent to decode it element by element and
// name what is wrong, when raw is not valid, when a block has no type (or is null),
// and when one is a server tool's, whose bytes are kept as given (Block.Raw). The
// blocks are decoded into scratch, kept from call to call (the decoder gives a slice
// room for ten blocks, 2.4 kB, where a line has one or two), and copied out.
func decodeBlocks(raw []byte, scratch *[]plainBlock) ([]block, bool) {
	plain := (*scratch)[:cap(*scratch)]
	clear(plain) // a field a block lacks must not keep an earlier block's
	plain = plain[:0]
	err := unmarshalFast(raw, &plain)
	*scratch = plain[:0]
	if err != nil {
		return nil, false
	}
	blocks := make([]block, len(plain))
	for i := range plain {
		if plain[i].Type == "" || contentblock.ServerTool(plain[i].Type) {
			return nil, false
		}
		blocks[i] = block(plain[i])
		blocks[i].Text = stripANSI(blocks[i].Text)
	}
	return blocks, true
}

// user reads a user record, line n (where names it).
func (p *parser) user(n int, where string, rec *record, created time.Time, blocks []block, text string, isString bool) error {
	// Text Claude Code injected (isMeta: an expanded slash command's prompt, a caveat, a
	// reminder) is what the model was told, but not by the person: a supervising party's.
	textRole := parley.RoleUser
	if rec.IsMeta {
		textRole = parley.RoleSupervisor
	}
	// Resumed sessions copy earlier user turns with new uuids and the same timestamp.
	key := turnKey{timestamp: rec.Timestamp, message: digest(rec.Message)}
	if rec.Timestamp != "" {
		if orig, dup := p.userTurns[key]; dup && !hasToolResult(blocks) {
			if rec.UUID != "" {
				p.at[rec.UUID] = p.follow(orig) // the copy's children are the original's
			}
			p.imp.Skip(reasonRewritten, where)
			return nil
		}
	}
	out := &emitter{p: p, origin: where, created: created, sourceID: sourceID(rec.UUID, n, rec.Message), parent: p.parentOf(rec)}
	defer func() {
		// Children of the record follow its last message (its parent's place when it
		// made none).
		if rec.UUID != "" {
			p.at[rec.UUID] = out.parent
		}
		if rec.Timestamp != "" && out.count > 0 {
			p.userTurns[key] = out.parent
		}
	}()
	if rec.IsCompactSummary {
		// Claude Code's summary of the turns before it: a compaction, which exports
		// start at, while the turns it covers stay.
		if !isString {
			var texts []string
			for _, b := range blocks {
				if b.Type == "text" && strings.TrimSpace(b.Text) != "" {
					texts = append(texts, b.Text)
				}
			}
			text = strings.Join(texts, "\n\n")
		}
		if strings.TrimSpace(text) == "" {
			p.imp.Skip(reasonEmpty, where)
			return nil
		}
		out.emit(&parley.CompactionMessage{Body: parley.TextBody(text)})
		return nil
	}
	if isString {
		if strings.TrimSpace(text) == "" {
			p.imp.Skip(reasonEmpty, where)
			return nil
		}
		out.emit(&parley.TextMessage{MessageMeta: parley.MessageMeta{Role: textRole}, Body: parley.TextBody(text)})
		return nil
	}
	if hasToolResult(blocks) {
		return p.toolResults(n, out, blocks)
	}
	var parts []parley.Part
	flush := func() {
		if len(parts) > 0 {
			out.emit(&parley.TextMessage{MessageMeta: parley.MessageMeta{Role: textRole}, Body: parley.Body{Parts: parts}})
			parts = nil
		}
	}
	for i, b := range blocks {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				parts = append(parts, parley.Part{Kind: parley.PartText, Text: b.Text})
			}
		case "image":
			img, err := p.image(n, fmt.Sprintf("message.content[%d]", i), b.Source, parley.RoleUser)
			if err != nil {
				return err
			}
			flush()
			out.emit(img)
		default:
			p.dropBlock(n, b.Type, "user")
		}
	}
	flush()
	if out.count == 0 {
		p.imp.Skip(reasonEmpty, where)
	}
	return nil
}

func hasToolResult(blocks []block) bool {
	return slices.ContainsFunc(blocks, func(b block) bool { return b.Type == "tool_result" })
}

// toolResults turns a user record carrying tool_result blocks into one result per block
// (seed 004: the tool result wins over anything else the record holds).
func (p *parser) toolResults(n int, out *emitter, blocks []block) error {
	var last *parley.ToolResultMessage
	var run ref // the request whose run the record's messages join, if inRun
	inRun := false
	var images []parley.Message
	var extra []parley.Part // text beside the results stays with them (seed 004)
	for i, b := range blocks {
		switch b.Type {
		case "tool_result":
			if b.ToolUseID == "" {
				return invalid(n, "%s.tool_use_id: a tool_result must name the tool_use it answers", contentField(i))
			}
			use, ok := p.uses[b.ToolUseID]
			if !ok {
				return invalid(n, "%s: tool_result for tool_use %q, which no earlier line calls", contentField(i), jsonerr.Truncate(b.ToolUseID))
			}
			fp := fingerprint(b.Content)
			if use.answered {
				prev := use.answer
				if prev.fingerprint != fp {
					p.imp.Warn("line %d: a second, different result for tool_use %q (first on line %d) skipped", n, jsonerr.Truncate(b.ToolUseID), prev.line)
				}
				if out.count == 0 {
					out.parent = p.follow(prev.at) // a copy's children are the original's
				}
				continue
			}
			res, err := p.result(n, i, b)
			if err != nil {
				return err
			}
			req := use.req
			if out.count == 0 {
				// A result answers a call of the run its request started: it follows
				// the run's last message, not the call's line.
				if run := p.run(req); run > 0 && (out.parent.ord == req.ord || p.run(out.parent) == run) {
					out.parent = p.runs[run-1]
				}
			}
			out.emit(res)
			p.joinRun(req, out.parent)
			use.answered, use.answer = true, answer{line: n, fingerprint: fp, at: out.parent}
			run, inRun = req, true
			last = res
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				extra = append(extra, parley.Part{Kind: parley.PartText, Text: b.Text})
			}
		case "image":
			img, err := p.image(n, contentField(i), b.Source, parley.RoleUser)
			if err != nil {
				return err
			}
			images = append(images, img)
		default:
			p.dropBlock(n, b.Type, "user")
		}
	}
	if last != nil {
		last.Parts = append(last.Parts, extra...)
	}
	for _, img := range images {
		out.emit(img)
		if inRun {
			p.joinRun(run, out.parent)
		}
	}
	if out.count == 0 {
		p.imp.Skip(reasonRewritten, lineName(n))
	}
	return nil
}

// joinRun makes the message at m the last of the run of results of the request req.
func (p *parser) joinRun(req, m ref) {
	run := p.runOf[req.ord]
	if run == 0 {
		p.runs = append(p.runs, ref{})
		run = int32(len(p.runs))
		p.runOf[req.ord] = run
	}
	p.runs[run-1] = m
	p.runOf[m.ord] = run
}

// result reads a tool_result block into its result: its content is a string, or text
// and image blocks, the images kept inside the result as IMAGE parts, in order among
// its text (as the anthropic importer keeps them, and as they go back to the API).
func (p *parser) result(n, i int, b block) (*parley.ToolResultMessage, error) {
	blocks, text, isString, err := p.decodeContent(b.Content)
	if err != nil {
		return nil, invalid(n, "%s.%s", contentField(i), err)
	}
	if isString {
		return contentblock.ToolResult(parley.MessageMeta{}, b, text), nil
	}
	var parts []parley.Part
	images := false
	for j, ib := range blocks {
		switch ib.Type {
		case "text":
			parts = append(parts, parley.Part{Kind: parley.PartText, Text: ib.Text})
		case "image":
			img, err := p.image(n, fmt.Sprintf("%s.content[%d]", contentField(i), j), ib.Source, parley.RoleUser)
			if err != nil {
				return nil, err
			}
			parts = append(parts, contentblock.ImagePart(img.Source))
			images = true
		default:
			p.dropBlock(n, ib.Type, "tool_result")
		}
	}
	res := contentblock.ToolResult(parley.MessageMeta{}, b, parley.Body{Parts: parts}.Text())
	if images {
		res.Body = parley.Body{Parts: parts}
	}
	return res, nil
}

// assistant reads an assistant record, line n (where names it).
func (p *parser) assistant(n int, where string, rec *record, msg *apiMessage, created time.Time, blocks []block, text string, isString bool) error {
	if rec.IsAPIError || msg.Model == "<synthetic>" {
		p.pass(rec)
		p.imp.Skip(reasonSynthetic, where)
		return nil
	}
	parent := p.parentOf(rec)
	if isString {
		blocks = []block{{Type: "text", Text: text}}
	}
	key := msg.ID
	if key == "" {
		key = sourceID(rec.UUID, n, rec.Message)
	}
	r := p.replies[key]
	continued := r != nil
	if r == nil {
		p.release() // every reply before this one is complete
		r = &reply{line: n, sourceID: key, createdAt: created, parent: parent}
		r.self = p.next(clip(key))
		r.last = r.self
		p.replies[key] = r
		p.items = append(p.items, item{reply: r, origin: where, parent: parent})
		p.turns++
	}
	if rec.UUID != "" {
		// A further line of the reply: its children follow the reply (or what came
		// after it, when the line's parent is that); a copy's from a resumed session
		// whose parent is older follow the reply.
		at := p.follow(r.last)
		if continued && parent.ord >= r.self.ord {
			at = parent
		}
		p.at[rec.UUID] = at
	}
	r.prov = msg.provenance(r.prov)
	added := 0
	for i, b := range blocks {
		seen := p.blockDigest(&b)
		if slices.Contains(r.seen, seen) {
			continue
		}
		r.seen = append(r.seen, seen)
		if r.emitted {
			p.imp.Warn("line %d: a block of the reply %s (line %d) after a later reply began was left out", n, jsonerr.Truncate(key), r.line)
			continue
		}
		added++
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				r.parts = append(r.parts, contentblock.TextPart(b))
			}
		case "thinking", "redacted_thinking":
			if part, ok := contentblock.Thinking(b); ok {
				r.parts = append(r.parts, part)
			}
		case "tool_use":
			if b.ID == "" {
				return invalid(n, "%s.id: a tool_use needs an id", contentField(i))
			}
			if b.Name == "" {
				return invalid(n, "%s.name: a tool_use needs a name", contentField(i))
			}
			if prev, dup := p.uses[b.ID]; dup {
				return invalid(n, "%s.id: tool_use id %q is already used on line %d", contentField(i), jsonerr.Truncate(b.ID), prev.line)
			}
			args, raw := contentblock.Arguments(b.Input)
			p.uses[b.ID] = &toolUse{line: n, req: r.self}
			r.calls = append(r.calls, parley.ToolCall{ID: b.ID, Name: b.Name, Arguments: args, ArgumentsRaw: raw})
			r.at = append(r.at, len(r.parts))
		case "image":
			img, err := p.image(n, contentField(i), b.Source, parley.RoleAssistant)
			if err != nil {
				return err
			}
			img.Meta().CreatedAt = created
			img.Meta().SourceID = clip(key + "#image-" + fingerprint([]byte(b.Source.Data + b.Source.URL))[:12])
			at := p.next(img.Meta().SourceID)
			p.items = append(p.items, item{msg: img, origin: where, parent: r.last})
			r.last = at
			if rec.UUID != "" {
				p.at[rec.UUID] = at
			}
		default:
			if contentblock.ServerTool(b.Type) {
				r.parts = append(r.parts, contentblock.ServerToolPart(b))
				continue
			}
			p.dropBlock(n, b.Type, "assistant")
		}
	}
	if continued && added == 0 {
		p.imp.Skip(reasonRewritten, where)
	}
	return nil
}

// image reads an image block's source into an image message.
func (p *parser) image(n int, field string, src *contentblock.ImageSource, role parley.Role) (*parley.ImageMessage, error) {
	m, sniffed, problem := contentblock.Image(src, role)
	if problem != nil {
		return nil, invalid(n, "%s%s: %s", field, problem.Field, problem.Message)
	}
	if sniffed != "" {
		p.imp.Warn("line %d: %s is %s, not the %s it claims; kept as %s", n, field, sniffed, src.MediaType, sniffed)
	}
	return m, nil
}

func (p *parser) dropBlock(n int, typ, where string) {
	key := where + "\x00" + typ
	if p.dropped[key] {
		return
	}
	p.dropped[key] = true
	p.imp.Warn("line %d: %q blocks in %s records are not kept (here and later)", n, jsonerr.Truncate(typ), where)
}

// emitter adds the messages one record yields, giving each its source id: the record's
// uuid for the first, the uuid and a counter for the others.
// Each message follows the one before it; parent is where the next one goes.
type emitter struct {
	p        *parser
	origin   string // the record's line, named
	created  time.Time
	sourceID string
	count    int
	parent   ref
}

func (e *emitter) emit(m parley.Message) {
	meta := m.Meta()
	meta.CreatedAt = e.created
	meta.SourceID = e.sourceID
	if e.count > 0 {
		meta.SourceID = clip(fmt.Sprintf("%s#%d", e.sourceID, e.count))
	}
	e.count++
	e.p.turns++
	e.p.items = append(e.p.items, item{msg: m, origin: e.origin, parent: e.parent})
	e.parent = e.p.next(meta.SourceID)
}

// release hands out every item read so far, in file order, the replies among them
// made messages.
func (p *parser) release() {
	for i, it := range p.items {
		p.add(it)
		p.items[i] = item{}
	}
	p.items = p.items[:0]
}

func (p *parser) add(it item) {
	if it.reply == nil {
		p.addAt(it.msg, it.origin, it.parent)
		return
	}
	r := it.reply
	r.emitted = true
	parts, calls := r.parts, r.calls
	parley.AnchorCalls(calls, r.at, len(parts))
	r.parts, r.calls, r.at = nil, nil, nil // the message has them now
	meta := parley.MessageMeta{Role: parley.RoleAssistant, CreatedAt: r.createdAt, SourceID: clip(r.sourceID),
		Live: parley.Live{Provenance: r.prov}}
	switch {
	case len(calls) > 0:
		meta.Role = parley.RoleInvocation
		p.addAt(&parley.ToolRequestMessage{MessageMeta: meta, Body: parley.Body{Parts: parts}, ToolCalls: calls}, it.origin, it.parent)
	case strings.TrimSpace(parley.Body{Parts: parts}.Text()) != "":
		p.addAt(&parley.TextMessage{MessageMeta: meta, Body: parley.Body{Parts: parts}}, it.origin, it.parent)
	case len(parts) > 0:
		p.gone[r.self.ord] = it.parent
		p.imp.Skip(reasonThinkOnly, it.origin)
	default:
		p.gone[r.self.ord] = it.parent
		p.imp.Skip(reasonEmpty, it.origin)
	}
}

// addAt hands out m as the child of the message at parent.
func (p *parser) addAt(m parley.Message, origin string, parent ref) {
	for {
		// A reply left out (only thinking): its children are its parent's.
		up, ok := p.gone[parent.ord]
		if !ok {
			break
		}
		parent = up
	}
	p.imp.Messages = append(p.imp.Messages, parley.ImportedMessage{Message: m, Origin: origin,
		Parent: parent.sid, Root: parent.root})
}

// finish hands out what is left and picks the title.
func (p *parser) finish() {
	p.release()
	switch {
	case p.custom != "":
		p.imp.Title = p.custom
	default:
		for _, s := range p.summaries {
			if p.hasUUID(s.leaf) && strings.TrimSpace(s.text) != "" {
				p.imp.Title = s.text
				break
			}
		}
		if p.imp.Title == "" {
			for _, s := range p.summaries {
				if strings.TrimSpace(s.text) != "" {
					p.imp.Title = s.text
					break
				}
			}
		}
	}
}

// sourceID is a record's id: its uuid, or a digest of its line when it has none.
func sourceID(uuid string, n int, raw []byte) string {
	if uuid != "" {
		return clip(uuid)
	}
	return "sha256:" + fingerprint(raw)
}

// clip keeps a source id to a sane length; ids this long are not Claude Code's anyway.
func clip(id string) string {
	if len(id) <= maxSourceIDLength {
		return id
	}
	return "sha256:" + fingerprint([]byte(id))
}

func fingerprint(raw []byte) string {
	sum := digest(raw)
	return hex.EncodeToString(sum[:])
}

// digest is what fingerprint writes in hex.
func digest(raw []byte) [16]byte {
	sum := sha256.Sum256(bytes.TrimSpace(raw))
	return [16]byte(sum[:16])
}

// blockDigest tells a block of a reply read again (a resumed session's copy) from a new
// one: a digest of its fields, written into a buffer kept from block to block rather
// than joined into a string (a copy of each block's text, and another to hash it).
func (p *parser) blockDigest(b *block) [16]byte {
	fp := p.fp[:0]
	fp = append(append(fp, b.Type...), 0)
	fp = append(append(fp, b.Text...), 0)
	fp = append(append(fp, b.Thinking...), 0)
	fp = append(append(append(fp, b.Signature...), b.Data...), 0)
	fp = append(append(fp, b.ID...), 0)
	fp = appendFingerprint(appendFingerprint(fp, b.Input), b.Raw)
	if b.Type == "image" && b.Source != nil {
		fp = append(append(fp, b.Source.Data...), b.Source.URL...)
	}
	p.fp = fp
	sum := sha256.Sum256(fp)
	return [16]byte(sum[:16])
}

// appendFingerprint appends fingerprint(raw) to dst.
func appendFingerprint(dst, raw []byte) []byte {
	sum := digest(raw)
	return hex.AppendEncode(dst, sum[:])
}

// contentField names the message's content block i in an error.
func contentField(i int) string { return "message.content[" + strconv.Itoa(i) + "]" }

func decodeProblem(err error, raw []byte, want string) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Sprintf("want %s, got %s", want, jsonerr.Kind(raw))
		}
		return fmt.Sprintf("%s: want %s, got %s", te.Field, jsonerr.GoKind(te.Type.Kind().String(), "an object or a boolean"), te.Value)
	}
	return "not valid JSON"
}

// unmarshal decodes with segmentio's drop-in encoding/json, which reads session lines
// about twice as fast as the standard library (decoding was 60% of an import's CPU).
// Errors are rare; for them it decodes again with the standard library, whose errors
// (the offending value's kind) the messages here are written from.
//
// The raw JSON values it decodes (json.RawMessage: a record's message, a message's
// content, a block's input) point into data rather than copy it (a third of the parse's
// allocated bytes): data is always a line, or a piece of one, read into a slice of its
// own (readLine) and never written after, and what keeps a piece keeps it as long as
// its message, which holds the line's text anyway.
func unmarshal(data []byte, v any) error {
	if err := unmarshalFast(data, v); err == nil {
		return nil
	}
	return json.Unmarshal(data, v)
}

// unmarshalFast is segmentio's Unmarshal (trailing bytes an error), its raw values
// pointing into data.
func unmarshalFast(data []byte, v any) error {
	rest, err := segmentjson.Parse(data, v, segmentjson.DontCopyRawMessage)
	if err == nil && len(rest) != 0 {
		err = errors.New("bytes after the value")
	}
	return err
}

// lineName is how messages and skipped records name line n: "line n", written without
// fmt, for it is written once or twice for each of a session's lines.
func lineName(n int) string { return "line " + strconv.Itoa(n) }
