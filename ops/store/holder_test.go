package store

import (
	"testing"
	"time"
)

func TestHolder(t *testing.T) {
	since := time.Date(2026, 12, 2, 3, 17, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		ok   bool
		want Holder
	}{
		{Holder{PID: 4242, Host: "db1", Since: since}.String(), true, Holder{4242, "db1", since}},
		{Holder{PID: 7, Host: "my host", Since: since}.String(), true, Holder{7, "my_host", since}},
		{"pid=7 host=h since=2026-12-02T03:17:00Z\n", true, Holder{7, "h", since}},
		{"", false, Holder{}},
		{"sweep 2026-12-02T03:17:00Z", false, Holder{}},              // an earlier version's lease line
		{"pid=0 host=h since=2026-12-02T03:17:00Z", false, Holder{}}, // no process
		{"pid=7 host=h since=yesterday", false, Holder{}},
	} {
		got, ok := ParseHolder(tc.in)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("ParseHolder(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	d := Holder{PID: 4242, Host: "db1", Since: since}.Describe(since.Add(4 * time.Minute))
	if want := "pid 4242 on host db1 since 2026-12-02T03:17:00Z (4m0s ago)"; d != want {
		t.Errorf("Describe = %q, want %q", d, want)
	}
}
