package pgwire

import (
	"testing"
	"time"
)

// TestSessionSettings checks validation and normalization of the settings
// pgwire depends on, and ParameterStatus change tracking.
func TestSessionSettings(t *testing.T) {
	s := newSession()
	for _, kv := range [][2]string{{"server_version", "16.0 (Floe)"}, {"TimeZone", "UTC"}, {"DateStyle", "ISO"}} {
		if err := s.SetSetting(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.changedReported(); len(got) != 3 {
		t.Errorf("first report = %v", got)
	}
	if got := s.changedReported(); len(got) != 0 {
		t.Errorf("unchanged settings reported again: %v", got)
	}
	cases := []struct {
		name, value, want string
		offset            int // for TimeZone: seconds east of UTC in January
		bad               bool
	}{
		{name: "datestyle", value: "iso, dmy", want: "ISO, DMY"},
		{name: "DateStyle", value: "ISO, European", want: "ISO, DMY"},
		{name: "DateStyle", value: "SQL, DMY", bad: true},
		{name: "client_encoding", value: "utf-8", want: "UTF8"},
		{name: "client_encoding", value: "UNICODE", want: "UTF8"},
		{name: "client_encoding", value: "WIN1252", bad: true},
		{name: "TimeZone", value: "Europe/Berlin", want: "Europe/Berlin", offset: 3600},
		{name: "timezone", value: "Etc/UTC", want: "UTC"},
		{name: "TimeZone", value: "GMT-01:30", want: "GMT-01:30", offset: 5400},
		{name: "TimeZone", value: "UTC+3", want: "UTC+3", offset: -3 * 3600},
		{name: "TimeZone", value: "GMT+99", bad: true},
		{name: "TimeZone", value: "localtime", bad: true},
		{name: "TimeZone", value: "../../etc/passwd", bad: true},
		{name: "standard_conforming_strings", value: "off", bad: true},
		{name: "server_version", value: "9.6", bad: true},
		{name: "server_version", value: "16.0 (Floe)", want: "16.0 (Floe)"},
		{name: "search_path", value: "a, b", want: "a, b"},
	}
	for _, tc := range cases {
		err := s.SetSetting(tc.name, tc.value)
		if tc.bad {
			if _, ok := err.(*Error); !ok {
				t.Errorf("%s=%q: err = %v, want *Error", tc.name, tc.value, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s=%q: %v", tc.name, tc.value, err)
			continue
		}
		if got, _ := s.Setting(tc.name); got != tc.want {
			t.Errorf("%s=%q: stored %q, want %q", tc.name, tc.value, got, tc.want)
		}
		if tc.offset != 0 {
			_, off := time.Date(2024, 1, 15, 12, 0, 0, 0, time.UTC).In(s.Location()).Zone()
			if off != tc.offset {
				t.Errorf("%s=%q: offset %d, want %d", tc.name, tc.value, off, tc.offset)
			}
		}
	}
	got := s.changedReported()
	want := map[string]string{"DateStyle": "ISO, DMY", "client_encoding": "UTF8", "TimeZone": "UTC+3"}
	if len(got) != len(want) {
		t.Errorf("changed = %v, want %v", got, want)
	}
	for _, p := range got {
		if want[p[0]] != p[1] {
			t.Errorf("changed %s=%s, want %s", p[0], p[1], want[p[0]])
		}
	}
}
