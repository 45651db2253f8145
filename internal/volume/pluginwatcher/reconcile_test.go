package pluginwatcher

import (
	"reflect"
	"testing"
	"time"
)

func TestReconcile(t *testing.T) {
	t0 := time.Unix(100, 0)
	t1 := t0.Add(time.Second)
	cases := []struct {
		name            string
		desired, actual map[string]time.Time
		want            Plan
	}{
		{name: "nothing", want: Plan{}},
		{name: "new socket registers", desired: map[string]time.Time{"/r/a.sock": t0},
			want: Plan{Register: []string{"/r/a.sock"}}},
		{name: "registered socket stays", desired: map[string]time.Time{"/r/a.sock": t0}, actual: map[string]time.Time{"/r/a.sock": t0},
			want: Plan{}},
		{name: "removed socket de-registers", actual: map[string]time.Time{"/r/a.sock": t0},
			want: Plan{Unregister: []string{"/r/a.sock"}}},
		{name: "socket created again re-registers", desired: map[string]time.Time{"/r/a.sock": t1}, actual: map[string]time.Time{"/r/a.sock": t0},
			want: Plan{Unregister: []string{"/r/a.sock"}, Register: []string{"/r/a.sock"}}},
		{name: "several, sorted", desired: map[string]time.Time{"/r/c.sock": t0, "/r/b.sock": t0, "/r/keep.sock": t0},
			actual: map[string]time.Time{"/r/keep.sock": t0, "/r/z.sock": t0, "/r/y.sock": t0},
			want:   Plan{Unregister: []string{"/r/y.sock", "/r/z.sock"}, Register: []string{"/r/b.sock", "/r/c.sock"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Reconcile(tc.desired, tc.actual); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
