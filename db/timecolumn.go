package db

import (
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// timeColumn scans a timestamp selected as text (pageTime) into *t, as lib/pq would
// have scanned the timestamptz in a session of the time zone zone (DB.zone). NULL sets
// *valid false, and is an error where valid is nil (a column that is never NULL).
type timeColumn struct {
	t     *time.Time
	valid *bool
	zone  *time.Location
}

func (c timeColumn) Scan(src any) error {
	if src == nil {
		if c.valid == nil {
			return errors.New("scan a time column: got NULL")
		}
		*c.t, *c.valid = time.Time{}, false
		return nil
	}
	b, ok := src.([]byte)
	if !ok {
		return fmt.Errorf("scan a time column: got %T %q", src, src)
	}
	t, err := parseTextTime(b, c.zone)
	if err != nil {
		return err
	}
	*c.t = t
	if c.valid != nil {
		*c.valid = true
	}
	return nil
}

// parseTextTime parses a timestamptz as Postgres writes it (DateStyle ISO, which lib/pq
// sets) in a session of the time zone zone, as lib/pq parses the column: a time whose
// offset is zone's then is placed in zone, any other at a fixed offset. Times at offset
// zero in years 1 to 9999 (every stored time where the sessions' zone is UTC) are
// parsed here without allocating; anything else (another offset, a year past 9999, BC)
// is left to lib/pq.
func parseTextTime(b []byte, zone *time.Location) (time.Time, error) {
	if t, ok := parseUTC(b); ok && zone != nil {
		if t = t.In(zone); offset(t) == 0 {
			return t, nil
		}
	}
	return pq.ParseTimestamp(zone, string(b))
}

// parseUTC parses 2006-01-02 15:04:05[.fraction]+00, and reports false for anything
// else.
func parseUTC(b []byte) (time.Time, bool) {
	const zero = "+00"
	n := len(b)
	if n < 19+len(zero) || string(b[n-len(zero):]) != zero || b[4] != '-' || b[7] != '-' || b[10] != ' ' || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	year, ok1 := digits(b[0:4])
	month, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	hour, ok4 := digits(b[11:13])
	minute, ok5 := digits(b[14:16])
	sec, ok6 := digits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || year < 1 || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := b[19 : n-len(zero)]; len(frac) > 0 {
		if len(frac) < 2 || len(frac) > 10 || frac[0] != '.' {
			return time.Time{}, false
		}
		f, ok := digits(frac[1:])
		if !ok {
			return time.Time{}, false
		}
		nsec = f
		for range 10 - len(frac) {
			nsec *= 10
		}
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

// digits parses b, ASCII digits only.
func digits(b []byte) (int, bool) {
	v := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

func offset(t time.Time) int {
	_, off := t.Zone()
	return off
}
