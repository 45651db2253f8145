package logrotate

import (
	"reflect"
	"testing"
)

func TestPlanRotation(t *testing.T) {
	const l = "/logs/c/0.log"
	tests := []struct {
		name     string
		rotated  []string
		maxFiles int
		want     Plan
	}{
		{name: "first rotation", maxFiles: 5, want: Plan{}},
		{name: "previous rotation is compressed", maxFiles: 5,
			rotated: []string{l + ".20240101-000001"},
			want:    Plan{Compress: []string{l + ".20240101-000001"}}},
		{name: "oldest beyond the limit removed, newest compressed", maxFiles: 3,
			rotated: []string{l + ".20240101-000003", l + ".20240101-000001.gz", l + ".20240101-000002.gz"},
			want: Plan{Remove: []string{l + ".20240101-000001.gz", l + ".20240101-000002.gz"},
				Compress: []string{l + ".20240101-000003"}}},
		{name: "two files allowed keeps no rotated one", maxFiles: 2,
			rotated: []string{l + ".20240101-000001"},
			want:    Plan{Remove: []string{l + ".20240101-000001"}}},
		{name: "leftovers of an interrupted compression", maxFiles: 5,
			rotated: []string{l + ".20240101-000001", l + ".20240101-000001.gz", l + ".20240101-000002.gz.tmp", l + ".20240101-000002"},
			want: Plan{Remove: []string{l + ".20240101-000001", l + ".20240101-000002.gz.tmp"},
				Compress: []string{l + ".20240101-000002"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanRotation(tt.rotated, tt.maxFiles)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("PlanRotation(%v, %d)\n got %#v\nwant %#v", tt.rotated, tt.maxFiles, got, tt.want)
			}
		})
	}
}

func TestNeedsRotation(t *testing.T) {
	p := Policy{MaxSize: 1024, MaxFiles: 5}
	if NeedsRotation(1023, p) || !NeedsRotation(1024, p) || !NeedsRotation(4096, p) {
		t.Fatal("rotation must start at MaxSize")
	}
	if NeedsRotation(1<<30, Policy{MaxSize: -1, MaxFiles: 5}) {
		t.Fatal("a negative MaxSize disables rotation")
	}
}
