package stats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/seed-kubelet/kubelet/internal/node/cgroups"
	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
)

// unlimitedMemory is the smallest limit taken as "no limit": cgroup v1
// reports PAGE_COUNTER_MAX pages in bytes, just under 2^63.
const unlimitedMemory = uint64(1) << 62

// errCgroupNotFound says the cgroup exists under no controller.
var errCgroupNotFound = errors.New("cgroup not found")

// cgroupLayout says where the cgroup controllers are mounted (hostinfo
// finds them).
type cgroupLayout hostinfo.Cgroups

// dir is the directory of cgroup rel for controller (ignored on v2), or ""
// when that controller is not mounted.
func (l cgroupLayout) dir(controller, rel string) string {
	if l.Unified {
		return joinCgroup(l.Root, rel)
	}
	m, ok := l.Mounts[controller]
	if !ok {
		return ""
	}
	return joinCgroup(m, rel)
}

// joinCgroup is filepath.Join(mount, rel), without its cleaning pass for
// the clean absolute paths cgroups have (a scrape joins over a thousand).
func joinCgroup(mount, rel string) string {
	if mount == "" {
		return filepath.Join(mount, rel)
	}
	if rel == "" || rel == "/" {
		return filepath.Clean(mount)
	}
	if rel[0] != '/' || rel[len(rel)-1] == '/' || strings.Contains(rel, "//") || strings.Contains(rel, "/.") ||
		mount == "/" || mount != filepath.Clean(mount) {
		return filepath.Join(mount, rel)
	}
	return mount + rel
}

// exists reports whether cgroup rel exists (under the memory controller on v1).
func (l cgroupLayout) exists(rel string) bool {
	d := l.dir("memory", rel)
	if d == "" {
		return false
	}
	st, err := os.Stat(d)
	return err == nil && st.IsDir()
}

// isRoot reports whether rel names the root cgroup.
func isRoot(rel string) bool { return path.Clean("/"+rel) == "/" }

// cgroupSample is what one read of a cgroup gives; nil fields were not
// available.
type cgroupSample struct {
	CPUNanos        *uint64
	MemUsage        *uint64
	MemLimit        *uint64 // nil when unlimited
	InactiveFile    *uint64
	RSS             *uint64
	PageFaults      *uint64
	MajorPageFaults *uint64
	SwapUsage       *uint64
	Pids            *uint64
	// Created is the cgroup directory's change time, for start times.
	Created time.Time
}

// read samples cgroup rel. It fails only when neither CPU nor memory
// accounting could be read.
func (l cgroupLayout) read(rel string) (cgroupSample, error) {
	if l.Unified {
		return readCgroupV2(filepath.Join(l.Root, rel), isRoot(rel))
	}
	return readCgroupV1(l.dir("cpuacct", rel), l.dir("memory", rel), l.dir("pids", rel))
}

func readCgroupV1(cpuDir, memDir, pidsDir string) (cgroupSample, error) {
	var s cgroupSample
	if cpuDir != "" {
		s.CPUNanos = readUintFile(filepath.Join(cpuDir, "cpuacct.usage"))
		s.Created = ctime(cpuDir)
	}
	if memDir != "" {
		if data, err := os.ReadFile(filepath.Join(memDir, "memory.stat")); err == nil {
			applyMemoryStatV1(&s, parseFlatKeyed(data))
			s.MemUsage = readUintFile(filepath.Join(memDir, "memory.usage_in_bytes"))
			s.MemLimit = limitOrNil(readUintFile(filepath.Join(memDir, "memory.limit_in_bytes")))
			if memsw := readUintFile(filepath.Join(memDir, "memory.memsw.usage_in_bytes")); memsw != nil && s.MemUsage != nil && *memsw >= *s.MemUsage {
				s.SwapUsage = u64(*memsw - *s.MemUsage)
			}
			if s.Created.IsZero() {
				s.Created = ctime(memDir)
			}
		}
	}
	if pidsDir != "" {
		s.Pids = readUintFile(filepath.Join(pidsDir, "pids.current"))
	}
	if s.CPUNanos == nil && s.MemUsage == nil {
		return s, fmt.Errorf("%w: %s", errCgroupNotFound, memDir)
	}
	return s, nil
}

// applyMemoryStatV1 takes the hierarchical (total_*) counters of a v1
// memory.stat, which include the descendants.
func applyMemoryStatV1(s *cgroupSample, kv map[string]uint64) {
	s.InactiveFile = lookup(kv, "total_inactive_file")
	s.RSS = lookup(kv, "total_rss")
	s.PageFaults = lookup(kv, "total_pgfault")
	s.MajorPageFaults = lookup(kv, "total_pgmajfault")
}

func readCgroupV2(dir string, root bool) (cgroupSample, error) {
	var s cgroupSample
	if data, err := os.ReadFile(filepath.Join(dir, "cpu.stat")); err == nil {
		if us := lookup(parseFlatKeyed(data), "usage_usec"); us != nil {
			s.CPUNanos = u64(*us * 1000)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "memory.stat")); err == nil {
		applyMemoryStatV2(&s, parseFlatKeyed(data))
	}
	if !root {
		s.MemUsage = readUintFile(filepath.Join(dir, "memory.current"))
		s.MemLimit = limitOrNil(readUintFile(filepath.Join(dir, "memory.max")))
		s.SwapUsage = readUintFile(filepath.Join(dir, "memory.swap.current"))
		s.Pids = readUintFile(filepath.Join(dir, "pids.current"))
	}
	s.Created = ctime(dir)
	if s.CPUNanos == nil && s.MemUsage == nil && s.InactiveFile == nil {
		return s, fmt.Errorf("%w: %s", errCgroupNotFound, dir)
	}
	return s, nil
}

func applyMemoryStatV2(s *cgroupSample, kv map[string]uint64) {
	s.InactiveFile = lookup(kv, "inactive_file")
	s.RSS = lookup(kv, "anon")
	s.PageFaults = lookup(kv, "pgfault")
	s.MajorPageFaults = lookup(kv, "pgmajfault")
}

// parseFlatKeyed parses "key value" lines (memory.stat, cpu.stat); lines
// whose value is not an unsigned integer are skipped.
func parseFlatKeyed(data []byte) map[string]uint64 {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		if v, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			out[f[0]] = v
		}
	}
	return out
}

// parseCgroupValue parses a single-value cgroup file; "max" (v2's no
// limit) gives ok=false.
func parseCgroupValue(data []byte) (uint64, bool, error) {
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return 0, false, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, err
	}
	return v, true, nil
}

func readUintFile(p string) *uint64 {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	v, ok, err := parseCgroupValue(data)
	if err != nil {
		return nil
	}
	if !ok {
		return u64(^uint64(0)) // "max": unlimited, dropped by limitOrNil
	}
	return &v
}

func limitOrNil(v *uint64) *uint64 {
	if v == nil || *v >= unlimitedMemory {
		return nil
	}
	return v
}

func lookup(kv map[string]uint64, k string) *uint64 {
	v, ok := kv[k]
	if !ok {
		return nil
	}
	return &v
}

// workingSet is usage less inactive file pages, as cAdvisor computes it,
// floored at zero.
func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile >= usage {
		return 0
	}
	return usage - inactiveFile
}

// memoryStats turns a cgroup sample into MemoryStats. capacity, when
// non-zero, stands in for a missing limit (the root cgroup is limited by
// the machine's memory), so AvailableBytes is set whenever a limit is known.
func memoryStats(s cgroupSample, capacity uint64, t time.Time) *statsapi.MemoryStats {
	if s.MemUsage == nil {
		return nil
	}
	ws := workingSet(*s.MemUsage, deref(s.InactiveFile))
	m := &statsapi.MemoryStats{
		Time:            metav1.NewTime(t),
		UsageBytes:      u64(*s.MemUsage),
		WorkingSetBytes: u64(ws),
		RSSBytes:        copyPtr(s.RSS),
		PageFaults:      copyPtr(s.PageFaults),
		MajorPageFaults: copyPtr(s.MajorPageFaults),
	}
	limit := capacity
	if s.MemLimit != nil {
		limit = *s.MemLimit
	}
	if limit > 0 {
		m.AvailableBytes = u64(0)
		if limit > ws {
			*m.AvailableBytes = limit - ws
		}
	}
	return m
}

// cpuStats turns a cumulative usage and its rate (nil when unknown yet)
// into CPUStats.
func cpuStats(usageNanos *uint64, rate *uint64, t time.Time) *statsapi.CPUStats {
	if usageNanos == nil {
		return nil
	}
	return &statsapi.CPUStats{Time: metav1.NewTime(t), UsageCoreNanoSeconds: u64(*usageNanos), UsageNanoCores: copyPtr(rate)}
}

// podCgroupOf returns the pod-level cgroup holding a sandbox, from the
// sandbox's OCI cgroupsPath, when that parent really is the pod's (named
// pod<uid>, or a systemd slice ending in pod<uid_with_underscores>.slice).
// Runtimes given no cgroup parent put every sandbox under a shared parent
// (containerd: /k8s.io/<id>), which is no pod cgroup.
func podCgroupOf(cgroupsPath, uid string) (string, bool) {
	if cgroupsPath == "" || uid == "" {
		return "", false
	}
	var parent string
	if slice, _, ok := strings.Cut(cgroupsPath, ":"); ok && !strings.HasPrefix(cgroupsPath, "/") {
		// systemd driver: "<parent slice>:<prefix>:<name>"
		parent = expandSlice(slice)
	} else {
		parent = path.Dir(path.Clean(cgroupsPath))
	}
	base := path.Base(parent)
	if base == "pod"+uid || strings.HasSuffix(base, "pod"+strings.ReplaceAll(uid, "-", "_")+".slice") {
		return parent, true
	}
	return "", false
}

// expandSlice turns a systemd slice name into its cgroup path
// (kubepods-burstable.slice is /kubepods.slice/kubepods-burstable.slice),
// through the cgroup names' one home; the root slice (-.slice) is "/".
func expandSlice(slice string) string {
	n, err := cgroups.ParseSystemd(slice)
	if err != nil {
		return "/"
	}
	return n.Systemd()
}

// podsCgroup returns the cgroup holding all pods (kubepods, or
// kubepods.slice with the systemd driver) when it exists.
func (l cgroupLayout) podsCgroup() (string, bool) {
	for _, c := range []string{"/kubepods", "/kubepods.slice"} {
		if l.exists(c) {
			return c, true
		}
	}
	return "", false
}

// accountingCgroup picks, from a process's /proc/<pid>/cgroup, the cgroup
// that accounts its CPU and memory: the v2 path, or the v1 memory path when
// the cpuacct one is the same. ok is false at the root (it would describe
// the whole node) or when the hierarchies disagree.
func accountingCgroup(procCgroup map[string]string, unified bool) (string, bool) {
	var p string
	if unified {
		p = procCgroup[""]
	} else {
		mem, cpu := procCgroup["memory"], procCgroup["cpuacct"]
		if mem != cpu {
			return "", false
		}
		p = mem
	}
	if p == "" || isRoot(p) {
		return "", false
	}
	return p, true
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

func copyPtr(p *uint64) *uint64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
