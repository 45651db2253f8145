package cgroups

import (
	"reflect"
	"testing"
)

func u64(v uint64) *uint64 { return &v }
func i64(v int64) *int64   { return &v }

func TestFilesV1AndV2(t *testing.T) {
	rc := ResourceConfig{CPUShares: u64(1024), CPUQuota: i64(50000), CPUPeriod: u64(100000), Memory: i64(52428800), PidsLimit: i64(100)}
	wantV1 := []Write{
		{"cpu", "cpu.shares", "1024"}, {"cpu", "cpu.cfs_period_us", "100000"}, {"cpu", "cpu.cfs_quota_us", "50000"},
		{"memory", "memory.limit_in_bytes", "52428800"}, {"pids", "pids.max", "100"},
	}
	if got := Files(V1, rc); !reflect.DeepEqual(got, wantV1) {
		t.Errorf("v1 = %v\nwant %v", got, wantV1)
	}
	wantV2 := []Write{
		{"cpu", "cpu.weight", "100"}, {"cpu", "cpu.max", "50000 100000"},
		{"memory", "memory.max", "52428800"}, {"pids", "pids.max", "100"},
	}
	if got := Files(V2, rc); !reflect.DeepEqual(got, wantV2) {
		t.Errorf("v2 = %v\nwant %v", got, wantV2)
	}
	unlimited := ResourceConfig{CPUQuota: i64(-1), CPUPeriod: u64(100000), Memory: i64(-1), PidsLimit: i64(-1)}
	wantV1u := []Write{{"cpu", "cpu.cfs_period_us", "100000"}, {"cpu", "cpu.cfs_quota_us", "-1"},
		{"memory", "memory.limit_in_bytes", "-1"}, {"pids", "pids.max", "max"}}
	if got := Files(V1, unlimited); !reflect.DeepEqual(got, wantV1u) {
		t.Errorf("v1 unlimited = %v", got)
	}
	wantV2u := []Write{{"cpu", "cpu.max", "max 100000"}, {"memory", "memory.max", "max"}, {"pids", "pids.max", "max"}}
	if got := Files(V2, unlimited); !reflect.DeepEqual(got, wantV2u) {
		t.Errorf("v2 unlimited = %v", got)
	}
	if got := Files(V2, ResourceConfig{}); len(got) != 0 {
		t.Errorf("empty config writes %v", got)
	}
}

func TestSharesWeight(t *testing.T) {
	for _, tc := range []struct{ shares, weight uint64 }{
		{0, 0}, {2, 1}, {1, 1}, {1024, 100}, {262144, 10000}, {300000, 10000}, {102, 17}, {512, 59}, {2048, 174},
	} {
		if got := SharesToWeight(tc.shares); got != tc.weight {
			t.Errorf("SharesToWeight(%d) = %d, want %d", tc.shares, got, tc.weight)
		}
	}
	// Every weight the conversion produces maps back to a share count that
	// converts to it again, and shares never decrease with weight.
	var last uint64
	seen := map[uint64]bool{}
	for s := uint64(2); s <= maxShares; s++ {
		seen[SharesToWeight(s)] = true
	}
	for w := uint64(1); w <= maxWeight; w++ {
		s := WeightToShares(w)
		if s < last {
			t.Fatalf("WeightToShares not monotonic at %d", w)
		}
		last = s
		if seen[w] && SharesToWeight(s) != w {
			t.Fatalf("round trip of weight %d via %d shares gives %d", w, s, SharesToWeight(s))
		}
	}
}

func TestReadConfigInvertsFiles(t *testing.T) {
	rc := ResourceConfig{CPUShares: u64(1024), CPUQuota: i64(25000), CPUPeriod: u64(50000), Memory: i64(1 << 30), PidsLimit: i64(42)}
	for _, v := range []Version{V1, V2} {
		files := map[string]string{}
		for _, w := range Files(v, rc) {
			files[w.File] = w.Value + "\n"
		}
		got, err := ReadConfig(v, files)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if v == V2 {
			// cpu.weight is coarser than cpu.shares: compare as weights.
			if SharesToWeight(*got.CPUShares) != SharesToWeight(*rc.CPUShares) {
				t.Errorf("v2 shares %d read back as %d", *rc.CPUShares, *got.CPUShares)
			}
			got.CPUShares = rc.CPUShares
		}
		if !reflect.DeepEqual(got, rc) {
			t.Errorf("v%d round trip: %s", v, dump(got))
		}
	}
	got, err := ReadConfig(V1, map[string]string{"memory.limit_in_bytes": "9223372036854771712", "pids.max": "max", "cpu.cfs_quota_us": "-1"})
	if err != nil || *got.Memory != -1 || *got.PidsLimit != -1 || *got.CPUQuota != -1 {
		t.Errorf("v1 unlimited read as %s, %v", dump(got), err)
	}
	got, err = ReadConfig(V2, map[string]string{"cpu.max": "max 100000", "memory.max": "max"})
	if err != nil || *got.CPUQuota != -1 || *got.CPUPeriod != 100000 || *got.Memory != -1 {
		t.Errorf("v2 unlimited read as %s, %v", dump(got), err)
	}
	if _, _, err := ParseCPUMax("1 2 3"); err == nil {
		t.Error("ParseCPUMax accepted three fields")
	}
	if _, err := ReadConfig(V2, map[string]string{"memory.max": "lots"}); err == nil {
		t.Error("ReadConfig accepted a bad memory.max")
	}
}

func dump(rc ResourceConfig) string {
	s := ""
	for _, w := range Files(V1, rc) {
		s += w.File + "=" + w.Value + " "
	}
	return s
}
