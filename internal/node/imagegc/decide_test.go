package imagegc

import (
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func idsOf(rs []Record) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func TestRecords(t *testing.T) {
	old := map[string]Record{
		"a":    {ID: "a", FirstDetected: t0.Add(-time.Hour), LastUsed: t0.Add(-30 * time.Minute), Size: 1},
		"gone": {ID: "gone", FirstDetected: t0.Add(-time.Hour)},
	}
	images := []Image{{ID: "a", Size: 10}, {ID: "b", Size: 20, Pinned: true}}
	got := Records(old, images, map[string]bool{"a": true}, t0, t0)
	want := map[string]Record{
		"a": {ID: "a", FirstDetected: t0.Add(-time.Hour), LastUsed: t0, Size: 10},
		"b": {ID: "b", FirstDetected: t0, Size: 20, Pinned: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Records\n got %+v\nwant %+v", got, want)
	}
	if old["a"].LastUsed != t0.Add(-30*time.Minute) {
		t.Fatal("Records modified its input")
	}
}

func TestEvictionOrder(t *testing.T) {
	records := map[string]Record{
		"recent":   {ID: "recent", FirstDetected: t0.Add(-time.Hour), LastUsed: t0.Add(-time.Minute)},
		"old":      {ID: "old", FirstDetected: t0.Add(-time.Hour), LastUsed: t0.Add(-50 * time.Minute)},
		"never-a":  {ID: "never-a", FirstDetected: t0.Add(-40 * time.Minute)},
		"never-b":  {ID: "never-b", FirstDetected: t0.Add(-50 * time.Minute)},
		"in-use":   {ID: "in-use", FirstDetected: t0.Add(-time.Hour), LastUsed: t0},
		"pinned":   {ID: "pinned", FirstDetected: t0.Add(-time.Hour), Pinned: true},
		"sandboxy": {ID: "sandboxy", FirstDetected: t0.Add(-time.Hour)},
	}
	got := idsOf(EvictionOrder(records, map[string]bool{"in-use": true}, map[string]bool{"sandboxy": true}))
	want := []string{"never-b", "never-a", "old", "recent"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

func TestBytesToFree(t *testing.T) {
	p := Policy{HighThresholdPercent: 85, LowThresholdPercent: 80}
	tests := []struct {
		name                string
		capacity, available int64
		want                int64
	}{
		{"below high", 1000, 200, 0},  // 80% used
		{"at high", 1000, 150, 50},    // 85% used: free down to 80%
		{"above high", 1000, 50, 150}, // 95% used
		{"available clamped", 1000, 2000, 0},
		{"no capacity", 0, 0, 0},
	}
	for _, tt := range tests {
		if got := BytesToFree(tt.capacity, tt.available, p); got != tt.want {
			t.Errorf("%s: BytesToFree(%d, %d) = %d, want %d", tt.name, tt.capacity, tt.available, got, tt.want)
		}
	}
}

func TestSelectForSpace(t *testing.T) {
	p := Policy{MinAge: 2 * time.Minute}
	candidates := []Record{
		{ID: "young", FirstDetected: t0.Add(-time.Minute), Size: 100},
		{ID: "a", FirstDetected: t0.Add(-time.Hour), Size: 30},
		{ID: "b", FirstDetected: t0.Add(-time.Hour), LastUsed: t0.Add(-time.Minute), Size: 30},
		{ID: "c", FirstDetected: t0.Add(-time.Hour), LastUsed: t0.Add(-time.Second), Size: 30},
	}
	if got := idsOf(SelectForSpace(candidates, p, t0, 50)); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("free 50: %v", got)
	}
	if got := idsOf(SelectForSpace(candidates, p, t0, 1<<62)); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Fatalf("free all: %v", got)
	}
}

func TestSelectForAge(t *testing.T) {
	p := Policy{MaxAge: time.Hour}
	candidates := []Record{
		{ID: "never", FirstDetected: t0.Add(-3 * time.Hour)},
		{ID: "stale", LastUsed: t0.Add(-2 * time.Hour)},
		{ID: "fresh", LastUsed: t0.Add(-30 * time.Minute)},
	}
	if got := SelectForAge(candidates, p, t0, t0.Add(-30*time.Minute)); len(got) != 0 {
		t.Fatalf("before MaxAge of GC uptime nothing is old: %v", idsOf(got))
	}
	if got := idsOf(SelectForAge(candidates, p, t0, t0.Add(-2*time.Hour))); !reflect.DeepEqual(got, []string{"never", "stale"}) {
		t.Fatalf("old: %v", got)
	}
	if got := SelectForAge(candidates, Policy{}, t0, t0.Add(-24*time.Hour)); len(got) != 0 {
		t.Fatalf("MaxAge 0 disables: %v", idsOf(got))
	}
}
