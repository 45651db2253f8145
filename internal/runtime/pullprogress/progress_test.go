package pullprogress

import (
	"testing"
	"time"
)

func TestMeasure(t *testing.T) {
	since := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	blobs := []Blob{{"sha256:c", 500}, {"sha256:l0", 1000}, {"sha256:l1", 4000}, {"sha256:l2", 2000}}
	tests := []struct {
		name   string
		stored map[string]Stored
		want   Progress
	}{
		{name: "nothing yet", want: Progress{Total: 7500}},
		{
			name: "config committed during the pull, a layer half written",
			stored: map[string]Stored{
				"sha256:c":  {Committed: true, CommittedAt: since.Add(time.Second)},
				"sha256:l1": {Offset: 2000},
			},
			want: Progress{Total: 7500, Done: 2500, Fetched: 2500},
		},
		{
			name: "a layer shared with an image pulled before counts as done, not fetched",
			stored: map[string]Stored{
				"sha256:l0": {Committed: true, CommittedAt: since.Add(-time.Hour)},
				"sha256:l2": {Offset: 10},
			},
			want: Progress{Total: 7500, Done: 1010, Fetched: 10},
		},
		{
			name:   "an offset beyond the size is capped, a negative one ignored",
			stored: map[string]Stored{"sha256:l0": {Offset: 5000}, "sha256:l1": {Offset: -3}},
			want:   Progress{Total: 7500, Done: 1000, Fetched: 1000},
		},
		{
			name: "all there",
			stored: map[string]Stored{
				"sha256:c": {Committed: true, CommittedAt: since}, "sha256:l0": {Committed: true, CommittedAt: since},
				"sha256:l1": {Committed: true, CommittedAt: since}, "sha256:l2": {Committed: true, CommittedAt: since},
			},
			want: Progress{Total: 7500, Done: 7500, Fetched: 7500},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Measure(blobs, tc.stored, since); got != tc.want {
				t.Errorf("Measure = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNote(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name    string
		p       Progress
		before  int64
		elapsed time.Duration
		want    string
	}{
		{name: "first update", p: Progress{Total: 40 * mib, Done: 12 * mib, Fetched: 12 * mib}, elapsed: 10 * time.Second,
			want: "12.0 MiB of 40.0 MiB (30%), 1.2 MiB/s"},
		{name: "rate since the last update", p: Progress{Total: 40 * mib, Done: 20 * mib, Fetched: 20 * mib}, before: 12 * mib, elapsed: 10 * time.Second,
			want: "20.0 MiB of 40.0 MiB (50%), 819.2 KiB/s"},
		{name: "layers present before do not count in the rate", p: Progress{Total: 40 * mib, Done: 30 * mib, Fetched: 5 * mib}, elapsed: 5 * time.Second,
			want: "30.0 MiB of 40.0 MiB (75%), 1.0 MiB/s"},
		{name: "stalled", p: Progress{Total: 40 * mib, Done: 20 * mib, Fetched: 20 * mib}, before: 20 * mib, elapsed: 10 * time.Second,
			want: "20.0 MiB of 40.0 MiB (50%), 0 B/s"},
		{name: "every byte there: unpacking", p: Progress{Total: 40 * mib, Done: 40 * mib, Fetched: 40 * mib}, before: 30 * mib, elapsed: 10 * time.Second,
			want: "40.0 MiB of 40.0 MiB (100%), unpacking"},
		{name: "no time elapsed: no rate", p: Progress{Total: 2048, Done: 1024, Fetched: 1024},
			want: "1.0 KiB of 2.0 KiB (50%)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Note(tc.p, tc.before, tc.elapsed); got != tc.want {
				t.Errorf("Note = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 40 << 20: "40.0 MiB",
		5<<30 + 300<<20: "5.3 GiB", 3 << 40: "3.0 TiB", 5000 << 40: "5000.0 TiB",
	} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestInterval(t *testing.T) {
	want := map[int]time.Duration{
		0: 10 * time.Second, 5: 10 * time.Second, 6: 20 * time.Second, 11: 20 * time.Second,
		12: 40 * time.Second, 18: 80 * time.Second, 24: 160 * time.Second, 30: 5 * time.Minute, 1000: 5 * time.Minute,
	}
	for n, w := range want {
		if got := Interval(n); got != w {
			t.Errorf("Interval(%d) = %v, want %v", n, got, w)
		}
	}
	// The updates of a 15 minute pull, as the spam filter sees them: 25 at
	// once, then one every 5 minutes.
	var at time.Duration
	n := 0
	for ; at+Interval(n) <= 15*time.Minute; n++ {
		at += Interval(n)
	}
	if budget := 25 + int(at/(5*time.Minute)); n > budget {
		t.Errorf("%d updates in %v, over the spam filter's %d", n, at, budget)
	}
}
