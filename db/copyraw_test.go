package db_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

// TestCopyRowIsPQs copies the same rows through database/sql (lib/pq writing their
// text) and written by the import's own COPY text (rawCopyIn), in one transaction, and
// finds the two tables the same row for row: every kind of value an import's row has
// (text with what COPY escapes, numbers, booleans, times, the same time again, NULLs,
// JSON).
func TestCopyRowIsPQs(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	rng := rand.New(rand.NewPCG(2, 15))
	pieces := []string{"", "a", "back\\slash", "\\N", "\n", "\r\n", "\t", "\\t", "é😬", "\u2028", "{}", `"quoted"`, "\x01", "NULL"}
	str := func() string {
		var b strings.Builder
		for range rng.IntN(6) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	var rows [][]any
	for i := range 3000 {
		var text, doc, at any = str(), jsonDoc(str(), i), time.Unix(rng.Int64N(4e9)-2e9, rng.Int64N(1e9)).Round(time.Microsecond)
		switch i % 7 {
		case 1:
			text = nil
		case 2:
			doc = nil
		case 3:
			at = nil
		case 4:
			at = time.Date(-44, 3, 15, 12, 0, 0, 0, time.UTC) // BC
		case 5, 6:
			at = rows[i-1][4] // the time written before, once or twice (rawCopyIn keeps its text)
		}
		rows = append(rows, []any{int64(i), text, rng.Int64() - 1<<62, rng.IntN(2) == 0, at, doc})
	}
	columns := []string{"n", "text", "big", "flag", "at", "doc"}
	err := d.CopyBothWays(t.Context(), `CREATE TEMPORARY TABLE via_sql (n bigint, text text, big bigint, flag boolean, at timestamptz, doc jsonb) ON COMMIT DROP;
		CREATE TEMPORARY TABLE via_raw (LIKE via_sql) ON COMMIT DROP`, "via_sql", "via_raw", columns, rows, func(q *sqlx.Tx) error {
		var counts struct {
			SQL     int `db:"via_sql"`
			Raw     int `db:"via_raw"`
			Differ  int `db:"differ"`
			Escaped int `db:"escaped"`
		}
		if err := q.GetContext(t.Context(), &counts, `SELECT (SELECT count(*) FROM via_sql) AS via_sql, (SELECT count(*) FROM via_raw) AS via_raw,
			(SELECT count(*) FROM via_sql s FULL JOIN via_raw r USING (n)
				WHERE (s.text, s.big, s.flag, s.at, s.doc::text) IS DISTINCT FROM (r.text, r.big, r.flag, r.at, r.doc::text)) AS differ,
			(SELECT count(*) FROM via_raw WHERE text ~ '[\\\n\r\t]') AS escaped`); err != nil {
			return err
		}
		if counts.SQL != len(rows) || counts.Raw != len(rows) || counts.Differ != 0 {
			t.Errorf("got %d rows through database/sql, %d written here, %d differing; want %d, %d, 0", counts.SQL, counts.Raw, counts.Differ, len(rows), len(rows))
		}
		if counts.Escaped == 0 {
			t.Error("no row's text has a character COPY escapes: the comparison does not cover them")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// jsonDoc is a JSON object holding s and n.
func jsonDoc(s string, n int) string {
	b, _ := json.Marshal(map[string]any{"k": s, "n": n})
	return string(b)
}
