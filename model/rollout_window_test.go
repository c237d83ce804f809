package model

import (
	"strings"
	"testing"
	"time"
)

func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return t
}

func window(spans ...WindowSpan) *RolloutWindow {
	return &RolloutWindow{Name: "w", Schedule: spans}
}

// TestWindowOpenAndNextTransition checks OpenAt and NextTransition at instants around the
// edges of each schedule, daylight saving days in Europe/Berlin among them (2026: clocks go
// forward on 29 March at 02:00, back on 25 October at 03:00).
func TestWindowOpenAndNextTransition(t *testing.T) {
	weekdays := WindowSpan{Days: []string{"mon", "tue", "wed", "thu", "fri"}, Start: "09:00", End: "17:00", TimeZone: "Europe/Berlin"}
	night := WindowSpan{Days: []string{"fri"}, Start: "22:00", End: "02:00", TimeZone: "UTC"}
	spring := WindowSpan{Days: []string{"sun"}, Start: "02:30", End: "04:00", TimeZone: "Europe/Berlin"}
	fall := WindowSpan{Days: []string{"sun"}, Start: "02:30", End: "03:30", TimeZone: "Europe/Berlin"}
	inGap := WindowSpan{Days: []string{"sun"}, Start: "02:30", End: "03:00", TimeZone: "Europe/Berlin"}
	all := []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	cases := []struct {
		name string
		w    *RolloutWindow
		at   string // UTC
		open bool
		next string // UTC; "" for none
	}{
		{"weekday before opening", window(weekdays), "2026-11-30 07:59", false, "2026-11-30 08:00"},
		{"weekday at opening", window(weekdays), "2026-11-30 08:00", true, "2026-11-30 16:00"},
		{"weekday at closing", window(weekdays), "2026-11-30 16:00", false, "2026-12-01 08:00"},
		{"friday evening waits for monday", window(weekdays), "2026-12-04 16:30", false, "2026-12-07 08:00"},
		{"summer time shifts the UTC hours", window(weekdays), "2026-07-01 07:30", true, "2026-07-01 15:00"},
		{"over midnight, before", window(night), "2026-12-04 21:00", false, "2026-12-04 22:00"},
		{"over midnight, after midnight", window(night), "2026-12-05 01:00", true, "2026-12-05 02:00"},
		{"over midnight, belongs to friday", window(night), "2026-12-06 01:00", false, "2026-12-11 22:00"},
		// 02:30 does not exist on 29 March: it is 03:30 CEST (01:30 UTC); 04:00 CEST is 02:00 UTC.
		{"spring forward, in the skipped hour", window(spring), "2026-03-29 01:00", false, "2026-03-29 01:30"},
		{"spring forward, opened late", window(spring), "2026-03-29 01:30", true, "2026-03-29 02:00"},
		{"spring forward, closed", window(spring), "2026-03-29 02:00", false, "2026-04-05 00:30"},
		// 02:30 happens twice on 25 October: the first (CEST, 00:30 UTC); 03:30 is CET (02:30 UTC).
		{"fall back, first 02:30", window(fall), "2026-10-25 00:30", true, "2026-10-25 02:30"},
		{"fall back, second 02:30 still open", window(fall), "2026-10-25 01:30", true, "2026-10-25 02:30"},
		{"fall back, closed", window(fall), "2026-10-25 02:30", false, "2026-11-01 01:30"},
		{"a span from the skipped hour to its end is empty", window(inGap), "2026-03-28 12:00", false, "2026-04-05 00:30"},
		{"adjacent spans join", window(
			WindowSpan{Days: []string{"mon"}, Start: "00:00", End: "12:00", TimeZone: "UTC"},
			WindowSpan{Days: []string{"mon"}, Start: "12:00", End: "00:00", TimeZone: "UTC"}), "2026-11-30 13:00", true, "2026-12-01 00:00"},
		{"always open", window(
			WindowSpan{Days: all, Start: "00:00", End: "23:59", TimeZone: "UTC"},
			WindowSpan{Days: all, Start: "23:59", End: "00:00", TimeZone: "UTC"}), "2026-11-30 13:00", true, ""},
		{"zones mix", window(weekdays, WindowSpan{Days: []string{"mon"}, Start: "18:00", End: "19:00", TimeZone: "America/New_York"}),
			"2026-11-30 16:00", false, "2026-11-30 23:00"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.w.Validate(); err != nil {
				t.Fatal(err)
			}
			at := utc(c.at)
			if got := c.w.OpenAt(at); got != c.open {
				t.Errorf("OpenAt(%s) = %v, want %v", c.at, got, c.open)
			}
			next, ok := c.w.NextTransition(at)
			switch {
			case c.next == "" && ok:
				t.Errorf("NextTransition(%s) = %s, want none", c.at, next)
			case c.next != "" && (!ok || !next.Equal(utc(c.next))):
				t.Errorf("NextTransition(%s) = %s %v, want %s", c.at, next, ok, c.next)
			}
			if ok && c.w.OpenAt(next) == c.open {
				t.Errorf("the window is %v both at %s and at its transition %s", c.open, c.at, next)
			}
		})
	}
}

func TestWindowValidate(t *testing.T) {
	span := func(f func(*WindowSpan)) *RolloutWindow {
		s := WindowSpan{Days: []string{"mon"}, Start: "09:00", End: "17:00", TimeZone: "Europe/Berlin"}
		f(&s)
		return window(s)
	}
	cases := []struct {
		name string
		w    *RolloutWindow
		want string
	}{
		{"empty name", &RolloutWindow{Schedule: span(func(*WindowSpan) {}).Schedule}, "name is required"},
		{"bad name", &RolloutWindow{Name: "a b", Schedule: span(func(*WindowSpan) {}).Schedule}, "may contain only"},
		{"empty schedule", &RolloutWindow{Name: "w"}, "at least one span"},
		{"no days", span(func(s *WindowSpan) { s.Days = nil }), "at least one day"},
		{"unknown day", span(func(s *WindowSpan) { s.Days = []string{"monday"} }), `unknown day "monday"`},
		{"day twice", span(func(s *WindowSpan) { s.Days = []string{"mon", "mon"} }), "twice"},
		{"hour 24", span(func(s *WindowSpan) { s.Start = "24:00" }), "HH:MM"},
		{"minute 60", span(func(s *WindowSpan) { s.End = "09:60" }), "HH:MM"},
		{"one digit hour", span(func(s *WindowSpan) { s.Start = "9:00" }), "HH:MM"},
		{"no colon", span(func(s *WindowSpan) { s.Start = "0900" }), "HH:MM"},
		{"sign", span(func(s *WindowSpan) { s.Start = "+9:00" }), "HH:MM"},
		{"end equals start", span(func(s *WindowSpan) { s.End = "09:00" }), "equals start"},
		{"no zone", span(func(s *WindowSpan) { s.TimeZone = "" }), "time_zone is required"},
		{"unknown zone", span(func(s *WindowSpan) { s.TimeZone = "Mars/Olympus" }), "unknown time zone"},
		{"the machine's zone", span(func(s *WindowSpan) { s.TimeZone = "Local" }), "unknown time zone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.w.Validate()
			if !IsType(err, ErrInvalidRequest) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate() = %v, want InvalidRequest with %q", err, c.want)
			}
		})
	}
	if err := span(func(s *WindowSpan) { s.End = "02:00" }).Validate(); err != nil {
		t.Fatalf("a span over midnight: %v", err)
	}
}

// FuzzRolloutWindow: any bytes decode to a window or an InvalidRequest (never a panic or
// another type), and for a valid window and any instant, the window is open or closed alike
// from the instant up to its next transition, and changes there.
func FuzzRolloutWindow(f *testing.F) {
	for _, seed := range []string{
		`{"name":"w","schedule":[{"days":["mon","tue"],"start":"09:00","end":"17:00","time_zone":"Europe/Berlin"}]}`,
		`{"name":"w","schedule":[{"days":["sun"],"start":"02:30","end":"03:00","time_zone":"Europe/Berlin"}]}`,
		`{"name":"w","schedule":[{"days":["fri"],"start":"22:00","end":"02:00","time_zone":"America/New_York"},{"days":["sat"],"start":"01:00","end":"05:00","time_zone":"Australia/Lord_Howe"}]}`,
		`{"name":"w","schedule":[{"days":"mon"}]}`, `{"name":1}`, `[`, `null`, `{"x":1}`,
	} {
		f.Add(seed, int64(1796000000))
	}
	f.Fuzz(func(t *testing.T, raw string, unix int64) {
		var w RolloutWindow
		if err := DecodeStrict("", []byte(raw), &w); err != nil {
			if TypeOf(err) != ErrInvalidRequest {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		if err := w.Validate(); err != nil {
			if TypeOf(err) != ErrInvalidRequest {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		at := time.Unix(unix%(1<<34), 0) // within a few centuries of 1970, either side
		open := w.OpenAt(at)
		next, ok := w.NextTransition(at)
		if !ok {
			return
		}
		if !next.After(at) {
			t.Fatalf("%s: next transition %s is not after %s", raw, next, at)
		}
		if mid := at.Add(next.Sub(at) / 2); w.OpenAt(mid) != open {
			t.Fatalf("%s: open %v at %s but %v at %s, before the next transition %s", raw, open, at, !open, mid, next)
		}
		if w.OpenAt(next) == open {
			t.Fatalf("%s: open %v both at %s and at its next transition %s", raw, open, at, next)
		}
	})
}
