package auth

import (
	"fmt"
	"testing"
	"time"
)

func TestExpiringCache(t *testing.T) {
	cases := []struct {
		name     string
		max      int
		sets     []string
		advance  time.Duration
		then     []string
		ttl      time.Duration
		wantHits []string // nil with anyHits: which survive is arbitrary
		anyHits  bool
		wantLen  int
	}{
		{name: "hit before expiry", max: 4, sets: []string{"a"}, ttl: time.Minute, advance: 59 * time.Second, wantHits: []string{"a"}, wantLen: 1},
		{name: "miss at expiry", max: 4, sets: []string{"a"}, ttl: time.Minute, advance: time.Minute, wantHits: nil, wantLen: 0},
		{name: "zero ttl not stored", max: 4, sets: []string{"a"}, ttl: 0, wantHits: nil, wantLen: 0},
		{name: "full cache drops expired first", max: 2, sets: []string{"a", "b"}, ttl: time.Minute, advance: time.Minute,
			then: []string{"c"}, wantHits: []string{"c"}, wantLen: 1},
		{name: "full cache stays bounded", max: 2, sets: []string{"a", "b", "c", "d"}, ttl: time.Minute, anyHits: true, wantLen: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			c := newExpiringCache[int](clk, tc.max)
			for i, k := range tc.sets {
				c.set(k, i, tc.ttl)
			}
			clk.Step(tc.advance)
			for i, k := range tc.then {
				c.set(k, i, tc.ttl)
			}
			var hits []string
			for _, k := range append(append([]string{}, tc.sets...), tc.then...) {
				if _, ok := c.get(k); ok {
					hits = append(hits, k)
				}
			}
			if !tc.anyHits && fmt.Sprint(hits) != fmt.Sprint(tc.wantHits) {
				t.Errorf("hits = %v, want %v", hits, tc.wantHits)
			}
			if len(c.entries) != tc.wantLen {
				t.Errorf("len = %d, want %d", len(c.entries), tc.wantLen)
			}
		})
	}
}
