package db_test

import (
	"testing"
	"time"
)

// TestPageTimesAreLibPQs checks that a page's times, selected as text (pageTime) and
// parsed by timeColumn, are the times lib/pq scans from the timestamptz columns: the
// same instant, zone and offset, so the same in every response, whatever the sessions'
// time zone.
func TestPageTimesAreLibPQs(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	values := []string{
		"2026-11-28 05:27:29.123456+00", "2026-11-28 05:27:29+00", "2026-11-28 05:27:29.1+00",
		"2026-07-01 12:00:00.5+00", "2026-03-29 01:30:00+00", "1900-01-01 00:00:00+00",
		"0001-01-01 00:00:00+00", "12000-01-01 00:00:00.000001+00", "0044-03-15 12:00:00+00 BC",
	}
	for _, zone := range []string{"UTC", "Etc/UTC", "Europe/Paris", "Asia/Kolkata", "America/St_Johns"} {
		got, want, err := d.ScanTimes(t.Context(), zone, values)
		if err != nil {
			t.Fatalf("%s: %v", zone, err)
		}
		for i := range values {
			g, w := got[i], want[i]
			if !g.Equal(w) || g.Location().String() != w.Location().String() || g.Format(time.RFC3339Nano) != w.Format(time.RFC3339Nano) {
				t.Errorf("%s, %s: got %v (%s), want %v (%s)", zone, values[i], g, g.Format(time.RFC3339Nano), w, w.Format(time.RFC3339Nano))
			}
		}
	}
}
