package stats

import (
	"testing"
	"time"
)

func TestUsageNanoCores(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name   string
		prev   cpuSample
		cur    cpuSample
		want   uint64
		wantOK bool
	}{
		{name: "one core for two seconds", prev: cpuSample{At: t0, Nanos: 1e9}, cur: cpuSample{At: t0.Add(2 * time.Second), Nanos: 3e9}, want: 1e9, wantOK: true},
		{name: "quarter core", prev: cpuSample{At: t0, Nanos: 0}, cur: cpuSample{At: t0.Add(4 * time.Second), Nanos: 1e9}, want: 25e7, wantOK: true},
		{name: "idle", prev: cpuSample{At: t0, Nanos: 5}, cur: cpuSample{At: t0.Add(time.Second), Nanos: 5}, want: 0, wantOK: true},
		{name: "large counters do not overflow", prev: cpuSample{At: t0, Nanos: 1 << 62}, cur: cpuSample{At: t0.Add(10 * time.Second), Nanos: 1<<62 + 40e9}, want: 4e9, wantOK: true},
		{name: "no time passed", prev: cpuSample{At: t0, Nanos: 1}, cur: cpuSample{At: t0, Nanos: 2}, wantOK: false},
		{name: "counter went back", prev: cpuSample{At: t0, Nanos: 10}, cur: cpuSample{At: t0.Add(time.Second), Nanos: 5}, wantOK: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := usageNanoCores(tc.prev, tc.cur)
			if ok != tc.wantOK || got != tc.want {
				t.Errorf("got %d, %v; want %d, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestCPURatesObserve(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration, nanos uint64) cpuSample { return cpuSample{At: t0.Add(d), Nanos: nanos} }
	type step struct {
		s    cpuSample
		want *uint64
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name:  "first reading has no rate, second does",
			steps: []step{{at(0, 0), nil}, {at(2*time.Second, 1e9), u64(5e8)}},
		},
		{
			name: "a reading inside the minimum interval returns the last rate and keeps the base",
			steps: []step{
				{at(0, 0), nil},
				{at(100*time.Millisecond, 1e9), nil},
				{at(time.Second, 1e9), u64(1e9)},
				{at(1500*time.Millisecond, 1e9), u64(1e9)},
				{at(3*time.Second, 3e9), u64(1e9)},
			},
		},
		{
			name:  "counter reset starts over",
			steps: []step{{at(0, 5e9), nil}, {at(2*time.Second, 6e9), u64(5e8)}, {at(4*time.Second, 1e9), nil}, {at(6*time.Second, 3e9), u64(1e9)}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newCPURates(time.Second, time.Minute)
			for i, st := range tc.steps {
				got := r.observe("k", st.s, st.s.At)
				if (got == nil) != (st.want == nil) || (got != nil && *got != *st.want) {
					t.Fatalf("step %d: got %v, want %v", i, deref(got), deref(st.want))
				}
			}
		})
	}
}

func TestCPURatesPrune(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name      string
		idle      time.Duration
		wantKnown bool
	}{
		{name: "recently seen is kept", idle: 30 * time.Second, wantKnown: true},
		{name: "idle past the limit is dropped", idle: 2 * time.Minute, wantKnown: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newCPURates(time.Second, time.Minute)
			r.observe("k", cpuSample{At: t0, Nanos: 1}, t0)
			r.prune(t0.Add(tc.idle))
			if got := r.known("k"); got != tc.wantKnown {
				t.Errorf("known = %v, want %v", got, tc.wantKnown)
			}
		})
	}
}
