package cgroups

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Version is the cgroup hierarchy a node runs.
type Version int

// Cgroup hierarchies.
const (
	V1 Version = 1
	V2 Version = 2
)

// Write is one value to write into one cgroup file. Controller names the v1
// hierarchy holding the file; on v2 it is the controller the file belongs
// to (which the parent must delegate in cgroup.subtree_control).
type Write struct {
	Controller string
	File       string
	Value      string
}

// Files translates rc into the files to write, in order (the CFS period
// goes before the quota, which the kernel checks against it).
func Files(v Version, rc ResourceConfig) []Write {
	if v == V2 {
		return filesV2(rc)
	}
	var out []Write
	if rc.CPUShares != nil {
		out = append(out, Write{"cpu", "cpu.shares", strconv.FormatUint(*rc.CPUShares, 10)})
	}
	if rc.CPUPeriod != nil {
		out = append(out, Write{"cpu", "cpu.cfs_period_us", strconv.FormatUint(*rc.CPUPeriod, 10)})
	}
	if rc.CPUQuota != nil {
		out = append(out, Write{"cpu", "cpu.cfs_quota_us", strconv.FormatInt(*rc.CPUQuota, 10)})
	}
	if rc.Memory != nil {
		out = append(out, Write{"memory", "memory.limit_in_bytes", strconv.FormatInt(*rc.Memory, 10)})
	}
	if rc.PidsLimit != nil {
		out = append(out, Write{"pids", "pids.max", maxOr(*rc.PidsLimit)})
	}
	return out
}

func filesV2(rc ResourceConfig) []Write {
	var out []Write
	if rc.CPUShares != nil {
		out = append(out, Write{"cpu", "cpu.weight", strconv.FormatUint(SharesToWeight(*rc.CPUShares), 10)})
	}
	if rc.CPUQuota != nil || rc.CPUPeriod != nil {
		out = append(out, Write{"cpu", "cpu.max", CPUMax(rc.CPUQuota, rc.CPUPeriod)})
	}
	if rc.Memory != nil {
		out = append(out, Write{"memory", "memory.max", maxOr(*rc.Memory)})
	}
	if rc.PidsLimit != nil {
		out = append(out, Write{"pids", "pids.max", maxOr(*rc.PidsLimit)})
	}
	return out
}

// maxOr spells a limit the way pids.max and memory.max take it: "max" for
// unlimited (any value <= 0 for pids, -1 for memory).
func maxOr(v int64) string {
	if v <= 0 {
		return "max"
	}
	return strconv.FormatInt(v, 10)
}

// CPUMax is cpu.max for a CFS quota and period: "<quota> <period>", "max"
// for no quota; a nil period leaves just the quota (the kernel keeps its
// period).
func CPUMax(quota *int64, period *uint64) string {
	q := "max"
	if quota != nil && *quota > 0 {
		q = strconv.FormatInt(*quota, 10)
	}
	if period == nil {
		return q
	}
	return q + " " + strconv.FormatUint(*period, 10)
}

// ParseCPUMax reads cpu.max back: quota -1 for "max".
func ParseCPUMax(s string) (quota int64, period uint64, err error) {
	f := strings.Fields(s)
	if len(f) == 0 || len(f) > 2 {
		return 0, 0, fmt.Errorf("cpu.max %q: want \"<quota|max> [period]\"", s)
	}
	quota = -1
	if f[0] != "max" {
		if quota, err = strconv.ParseInt(f[0], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("cpu.max quota %q: %w", f[0], err)
		}
	}
	if len(f) == 2 {
		if period, err = strconv.ParseUint(f[1], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("cpu.max period %q: %w", f[1], err)
		}
	}
	return quota, period, nil
}

// ParseMax reads memory.max or pids.max (and their v1 forms): -1 for "max"
// or the v1 "unlimited" value.
func ParseMax(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return -1, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("limit %q: %w", s, err)
	}
	// cgroup v1 reports "no limit" as the largest page-aligned value.
	if v >= math.MaxInt64-(1<<20) {
		return -1, nil
	}
	return int64(v), nil
}

// cpu.shares and cpu.weight ranges.
const (
	maxShares = 262144
	maxWeight = 10000
)

// SharesToWeight converts cpu.shares to cpu.weight with the quadratic fit
// the OCI runtimes (runc, crun) use, so the kubelet's pod cgroups and the
// runtime's container cgroups agree: 2 -> 1, 1024 -> 100, 262144 -> 10000.
// 0 (unset) stays 0.
func SharesToWeight(shares uint64) uint64 {
	switch {
	case shares == 0:
		return 0
	case shares <= 2:
		return 1
	case shares >= maxShares:
		return maxWeight
	}
	l := math.Log2(float64(shares))
	return uint64(math.Ceil(math.Pow(10, (l*l+125*l)/612.0-7.0/34.0)))
}

// WeightToShares is the inverse of SharesToWeight: the smallest share count
// that converts to weight, so that SharesToWeight(WeightToShares(w)) == w
// for every weight SharesToWeight can produce.
func WeightToShares(weight uint64) uint64 {
	switch {
	case weight == 0:
		return 0
	case weight <= 1:
		return 2
	case weight >= maxWeight:
		return maxShares
	}
	lo, hi := uint64(2), uint64(maxShares)
	for lo < hi {
		mid := (lo + hi) / 2
		if SharesToWeight(mid) >= weight {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// ReadConfig is the inverse of Files: it rebuilds a ResourceConfig from the
// files' contents (file name -> value) of one cgroup.
func ReadConfig(v Version, files map[string]string) (ResourceConfig, error) {
	var rc ResourceConfig
	get := func(name string) (string, bool) {
		s, ok := files[name]
		return strings.TrimSpace(s), ok
	}
	u64 := func(s string) (*uint64, error) {
		n, err := strconv.ParseUint(s, 10, 64)
		return &n, err
	}
	i64 := func(n int64, err error) (*int64, error) { return &n, err }
	var err error
	if v == V2 {
		if s, ok := get("cpu.weight"); ok {
			var w *uint64
			if w, err = u64(s); err != nil {
				return rc, fmt.Errorf("cpu.weight: %w", err)
			}
			shares := WeightToShares(*w)
			rc.CPUShares = &shares
		}
		if s, ok := get("cpu.max"); ok {
			q, p, err := ParseCPUMax(s)
			if err != nil {
				return rc, err
			}
			rc.CPUQuota = &q
			if p != 0 {
				rc.CPUPeriod = &p
			}
		}
		if s, ok := get("memory.max"); ok {
			if rc.Memory, err = i64(ParseMax(s)); err != nil {
				return rc, err
			}
		}
	} else {
		if s, ok := get("cpu.shares"); ok {
			if rc.CPUShares, err = u64(s); err != nil {
				return rc, fmt.Errorf("cpu.shares: %w", err)
			}
		}
		if s, ok := get("cpu.cfs_period_us"); ok {
			if rc.CPUPeriod, err = u64(s); err != nil {
				return rc, fmt.Errorf("cpu.cfs_period_us: %w", err)
			}
		}
		if s, ok := get("cpu.cfs_quota_us"); ok {
			if rc.CPUQuota, err = i64(strconv.ParseInt(s, 10, 64)); err != nil {
				return rc, fmt.Errorf("cpu.cfs_quota_us: %w", err)
			}
		}
		if s, ok := get("memory.limit_in_bytes"); ok {
			if rc.Memory, err = i64(ParseMax(s)); err != nil {
				return rc, err
			}
		}
	}
	if s, ok := get("pids.max"); ok {
		if rc.PidsLimit, err = i64(ParseMax(s)); err != nil {
			return rc, err
		}
	}
	return rc, nil
}
