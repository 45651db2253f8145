package stats

import (
	"bytes"
	"encoding/binary"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cgroupFull is everything /metrics/cadvisor reports about one cgroup, read
// the way cAdvisor's libcontainer handler reads it. Zero means "read as
// zero or absent", as cAdvisor reports absent counters.
type cgroupFull struct {
	Time time.Time
	// HasCPU and HasMemory say the controller's files were readable; the
	// families of a controller are only written when it is.
	HasCPU, HasMemory bool

	CPUTotal, CPUUser, CPUSystem uint64 // nanoseconds
	CFSPeriods, CFSThrottled     uint64
	CFSThrottledNanos            uint64
	CFSBursts, CFSBurstNanos     uint64

	MemUsage, MemMaxUsage, MemFailcnt, MemKernel uint64
	MemCache, MemRSS, MemSwap, MemMappedFile     uint64
	ActiveFile, InactiveFile                     uint64
	PgFault, PgMajFault                          uint64
	OOMKills                                     uint64

	Threads uint64

	Spec cgroupSpec
}

// WorkingSet is usage less inactive file pages, floored at zero.
func (c *cgroupFull) WorkingSet() uint64 { return workingSet(c.MemUsage, c.InactiveFile) }

// cgroupSpec is the cgroup's configuration: what cAdvisor calls the
// container spec.
type cgroupSpec struct {
	Created                  time.Time
	CPUShares, CPUPeriod     uint64
	CPUQuota                 int64 // 0: none
	MemLimit, MemReservation uint64
	MemSwapLimit             uint64
	ThreadsMax               uint64 // 0: no limit
}

// reader reads small cgroup and procfs files with one buffer and plain
// system calls: a scrape reads thousands of them, and os.ReadFile's
// allocations and poller registration would double its cost. With a
// fileCache (newReader's, when the scrape got it) the files every scrape
// reads stay open between scrapes.
type reader struct {
	buf, path, key []byte
	dents          []byte     // getdents buffer (countProcesses)
	files          *fileCache // nil: open and close every file
}

// atFDCWD is AT_FDCWD (-100) as the system call takes it.
var atFDCWD = func() uintptr { v := unix.AT_FDCWD; return uintptr(v) }()

func newReader(files *fileCache) *reader {
	return &reader{buf: make([]byte, 16<<10), path: make([]byte, 0, 512), files: files}
}

// read returns the content of the file dir/name (dir alone when name is
// ""), valid until the next read.
func (r *reader) read(dir string, name ...string) ([]byte, bool) {
	return r.readFile(false, false, "", dir, name...)
}

// keptFor is read for a file every scrape reads again, kept open in the
// file cache for owner (a /proc/<pid> file for the sandbox that has that
// pid: another sandbox that gets the pid later gets a file of its own).
func (r *reader) keptFor(owner, dir string, name ...string) ([]byte, bool) {
	return r.readFile(true, false, owner, dir, name...)
}

// cgroup reads the cgroup file dir/name like read, in one read system call
// when it fits the buffer: the kernel renders a cgroup statistics or
// configuration file as a single seq_file record, whole, so a read that
// does not fill the buffer got all of it. (Not for cgroup.procs and
// cgroup.threads, whose pids are records of their own.)
func (r *reader) cgroup(dir, name string) ([]byte, bool) {
	return r.readFile(false, true, "", dir, name)
}

// cgroupStat is cgroup for the statistics every scrape reads: kept open.
func (r *reader) cgroupStat(dir, name string) ([]byte, bool) {
	return r.readFile(true, true, "", dir, name)
}

func (r *reader) readFile(keep, single bool, owner, dir string, name ...string) ([]byte, bool) {
	r.path = append(r.path[:0], dir...)
	for _, n := range name {
		r.path = append(append(r.path, '/'), n...)
	}
	r.key = append(append(append(r.key[:0], r.path...), 0), owner...)
	key := r.key
	r.path = append(r.path, 0)
	keep = keep && r.files != nil
	if keep {
		if fd, ok := r.files.lookup(key); ok {
			if data, ok := r.readAt(fd, single); ok {
				return data, true
			}
			// Its cgroup was removed (ENODEV): the path may name a new one.
			r.files.forget(key)
		}
	}
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(&r.path[0])),
		uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
	if errno != 0 {
		return nil, false
	}
	data, ok := r.readAt(int(fd), single)
	if ok && keep && r.files.keep(key, int(fd)) {
		return data, true
	}
	unix.Close(int(fd))
	return data, ok
}

// readAt reads fd whole from offset 0 into the buffer (pread: a kept file
// is rendered afresh by the kernel at each read from 0); single stops after
// a read that did not fill the buffer (see cgroup).
func (r *reader) readAt(fd int, single bool) ([]byte, bool) {
	n := 0
	for {
		m, err := unix.Pread(fd, r.buf[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		if m == 0 || (single && n+m < len(r.buf)) {
			return r.buf[:n+m], true
		}
		n += m
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
	}
}

// uint reads a single-value cgroup file; "max" and "-1" read as ok=false.
func (r *reader) uint(dir, name string) (uint64, bool) {
	return parseUint(r.cgroup(dir, name))
}

// statUint is uint for the statistics every scrape reads (cgroupStat).
func (r *reader) statUint(dir, name string) (uint64, bool) {
	return parseUint(r.cgroupStat(dir, name))
}

func parseUint(data []byte, ok bool) (uint64, bool) {
	if !ok {
		return 0, false
	}
	return parseDecimal(bytes.TrimSpace(data))
}

// parseDecimal parses an unsigned decimal number as strconv.ParseUint(s,
// 10, 64) does, without making a string of it: a scrape parses tens of
// thousands.
func parseDecimal(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false // overflows
		}
		v = v*10 + d
	}
	return v, true
}

// eachKV calls f for every "key value" line of a flat-keyed file; key is
// valid during the call only.
func eachKV(data []byte, f func(key []byte, v uint64)) {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		sp := bytes.IndexByte(line, ' ')
		if sp <= 0 {
			continue
		}
		v, ok := parseDecimal(bytes.TrimSpace(line[sp+1:]))
		if !ok {
			continue
		}
		f(line[:sp], v)
	}
}

// cgroupDirs are the directories of one cgroup: per controller on v1, the
// one directory (in Unified) on v2.
type cgroupDirs struct {
	CPU, CPUAcct, Memory, Pids, Unified string
	Root                                bool
}

// dirsOf joins the directories of cgroup rel.
func (l cgroupLayout) dirsOf(rel string) cgroupDirs {
	if l.Unified {
		return cgroupDirs{Unified: filepath.Join(l.Root, rel), Root: isRoot(rel)}
	}
	return cgroupDirs{CPU: l.dir("cpu", rel), CPUAcct: l.dir("cpuacct", rel), Memory: l.dir("memory", rel), Pids: l.dir("pids", rel), Root: isRoot(rel)}
}

// readFull reads the cgroup in d for /metrics/cadvisor; ok is false when
// the cgroup is gone under every controller.
// spec, when non-nil, is used instead of reading the configuration again.
func readFull(r *reader, d *cgroupDirs, now time.Time, spec *cgroupSpec) (cgroupFull, bool) {
	if d.Unified != "" {
		return readFullV2(r, d.Unified, d.Root, now, spec)
	}
	return readFullV1(r, d.CPU, d.CPUAcct, d.Memory, d.Pids, d.Root, now, spec)
}

// nanosPerTick converts cpuacct.stat's USER_HZ ticks.
const nanosPerTick = uint64(time.Second) / userHZ

func readFullV1(r *reader, cpuDir, acctDir, memDir, pidsDir string, root bool, now time.Time, spec *cgroupSpec) (cgroupFull, bool) {
	c := cgroupFull{Time: now}
	readSpec := spec == nil
	if acctDir != "" {
		if v, ok := r.statUint(acctDir, "cpuacct.usage"); ok {
			c.HasCPU, c.CPUTotal = true, v
			if data, ok := r.cgroupStat(acctDir, "cpuacct.stat"); ok {
				eachKV(data, func(k []byte, v uint64) {
					switch string(k) {
					case "user":
						c.CPUUser = v * nanosPerTick
					case "system":
						c.CPUSystem = v * nanosPerTick
					}
				})
			}
			if readSpec {
				c.Spec.Created = ctime(acctDir)
			}
		}
	}
	if cpuDir != "" && c.HasCPU {
		if readSpec {
			c.Spec.CPUShares, _ = r.uint(cpuDir, "cpu.shares")
			c.Spec.CPUPeriod, _ = r.uint(cpuDir, "cpu.cfs_period_us")
			if data, ok := r.cgroup(cpuDir, "cpu.cfs_quota_us"); ok {
				if q, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64); err == nil && q > 0 {
					c.Spec.CPUQuota = q
				}
			}
		} else {
			c.Spec.CPUQuota = spec.CPUQuota
		}
	}
	// cpu.stat holds only the CFS counters, which are exported for
	// cgroups with a quota alone (cfsFamily): the others skip the read,
	// one file of the ten a cgroup costs a scrape.
	if cpuDir != "" && c.HasCPU && c.Spec.CPUQuota != 0 {
		if data, ok := r.cgroupStat(cpuDir, "cpu.stat"); ok {
			eachKV(data, func(k []byte, v uint64) {
				switch string(k) {
				case "nr_periods":
					c.CFSPeriods = v
				case "nr_throttled":
					c.CFSThrottled = v
				case "throttled_time":
					c.CFSThrottledNanos = v
				case "nr_bursts":
					c.CFSBursts = v
				case "burst_time":
					c.CFSBurstNanos = v
				}
			})
		}
	}
	if memDir != "" {
		if v, ok := r.statUint(memDir, "memory.usage_in_bytes"); ok {
			c.HasMemory, c.MemUsage = true, v
			c.MemMaxUsage, _ = r.statUint(memDir, "memory.max_usage_in_bytes")
			c.MemFailcnt, _ = r.statUint(memDir, "memory.failcnt")
			c.MemKernel, _ = r.statUint(memDir, "memory.kmem.usage_in_bytes")
			if data, ok := r.cgroupStat(memDir, "memory.stat"); ok {
				applyFullMemoryStatV1(&c, data)
			}
			if data, ok := r.cgroupStat(memDir, "memory.oom_control"); ok {
				eachKV(data, func(k []byte, v uint64) {
					if string(k) == "oom_kill" {
						c.OOMKills = v
					}
				})
			}
			if readSpec {
				c.Spec.MemLimit = specLimit(r.uint(memDir, "memory.limit_in_bytes"))
				c.Spec.MemReservation = specLimit(r.uint(memDir, "memory.soft_limit_in_bytes"))
				c.Spec.MemSwapLimit = specLimit(r.uint(memDir, "memory.memsw.limit_in_bytes"))
				if c.Spec.Created.IsZero() {
					c.Spec.Created = ctime(memDir)
				}
			}
		}
	}
	if pidsDir != "" && !root {
		c.Threads, _ = r.statUint(pidsDir, "pids.current")
		if readSpec {
			c.Spec.ThreadsMax, _ = r.uint(pidsDir, "pids.max")
		}
	}
	if !readSpec {
		c.Spec = *spec
	}
	return c, c.HasCPU || c.HasMemory
}

// applyFullMemoryStatV1 takes the hierarchical counters (memory.use_hierarchy
// is always on in the kernels the kubelet supports), and the page faults
// of the cgroup itself, as cAdvisor does.
func applyFullMemoryStatV1(c *cgroupFull, data []byte) {
	eachKV(data, func(k []byte, v uint64) {
		switch string(k) {
		case "total_cache":
			c.MemCache = v
		case "total_rss":
			c.MemRSS = v
		case "total_swap":
			c.MemSwap = v
		case "total_mapped_file":
			c.MemMappedFile = v
		case "total_active_file":
			c.ActiveFile = v
		case "total_inactive_file":
			c.InactiveFile = v
		case "pgfault":
			c.PgFault = v
		case "pgmajfault":
			c.PgMajFault = v
		}
	})
}

// specLimit is a memory limit as cAdvisor reports it: 0 for none.
func specLimit(v uint64, ok bool) uint64 {
	if !ok || v > unlimitedMemory {
		return 0
	}
	return v
}

func readFullV2(r *reader, dir string, root bool, now time.Time, spec *cgroupSpec) (cgroupFull, bool) {
	c := cgroupFull{Time: now}
	if data, ok := r.cgroupStat(dir, "cpu.stat"); ok {
		eachKV(data, func(k []byte, v uint64) {
			switch string(k) {
			case "usage_usec":
				c.HasCPU, c.CPUTotal = true, v*1000
			case "user_usec":
				c.CPUUser = v * 1000
			case "system_usec":
				c.CPUSystem = v * 1000
			case "nr_periods":
				c.CFSPeriods = v
			case "nr_throttled":
				c.CFSThrottled = v
			case "throttled_usec":
				c.CFSThrottledNanos = v * 1000
			case "nr_bursts":
				c.CFSBursts = v
			case "burst_usec":
				c.CFSBurstNanos = v * 1000
			}
		})
	}
	if c.HasCPU && !root {
		if w, ok := r.uint(dir, "cpu.weight"); ok {
			c.Spec.CPUShares = weightToShares(w)
		}
		if data, ok := r.cgroup(dir, "cpu.max"); ok {
			c.Spec.CPUQuota, c.Spec.CPUPeriod = parseCPUMax(data)
		}
	} else if c.HasCPU {
		c.Spec.CPUShares, c.Spec.CPUPeriod = 1024, 100000
	}
	if data, ok := r.cgroupStat(dir, "memory.stat"); ok {
		c.HasMemory = true
		var slab uint64
		eachKV(data, func(k []byte, v uint64) {
			switch string(k) {
			case "file":
				c.MemCache = v
			case "anon":
				c.MemRSS = v
			case "file_mapped":
				c.MemMappedFile = v
			case "active_file":
				c.ActiveFile = v
			case "inactive_file":
				c.InactiveFile = v
			case "pgfault":
				c.PgFault = v
			case "pgmajfault":
				c.PgMajFault = v
			case "kernel":
				c.MemKernel = v
			case "slab":
				slab = v
			}
		})
		if c.MemKernel == 0 {
			c.MemKernel = slab
		}
	}
	if !root {
		if v, ok := r.statUint(dir, "memory.current"); ok {
			c.HasMemory, c.MemUsage = true, v
		}
		c.MemMaxUsage, _ = r.statUint(dir, "memory.peak")
		if sw, ok := r.statUint(dir, "memory.swap.current"); ok {
			c.MemSwap = sw
		}
		if data, ok := r.cgroupStat(dir, "memory.events"); ok {
			eachKV(data, func(k []byte, v uint64) {
				switch string(k) {
				case "max":
					c.MemFailcnt = v
				case "oom_kill":
					c.OOMKills = v
				}
			})
		}
		c.Spec.MemLimit = specLimit(r.uint(dir, "memory.max"))
		c.Spec.MemReservation = specLimit(r.uint(dir, "memory.low"))
		c.Spec.MemSwapLimit = specLimit(r.uint(dir, "memory.swap.max"))
		c.Threads, _ = r.statUint(dir, "pids.current")
		c.Spec.ThreadsMax, _ = r.uint(dir, "pids.max")
	}
	c.Spec.Created = ctime(dir)
	if spec != nil {
		c.Spec = *spec
	}
	return c, c.HasCPU || c.HasMemory
}

// weightToShares inverts the kubelet's shares→weight conversion, as
// cAdvisor reports cpu.weight on cgroup v2.
func weightToShares(w uint64) uint64 {
	if w == 0 {
		return 0
	}
	return 2 + ((w-1)*262142)/9999
}

// parseCPUMax reads cgroup v2 cpu.max, "max 100000" or "20000 100000".
func parseCPUMax(data []byte) (quota int64, period uint64) {
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return 0, 0
	}
	period, _ = strconv.ParseUint(f[1], 10, 64)
	if q, err := strconv.ParseInt(f[0], 10, 64); err == nil && q > 0 {
		quota = q
	}
	return quota, period
}

// processCounts is what cAdvisor's process metrics count in a cgroup.
type processCounts struct {
	Processes, FDs, Sockets uint64
}

// countProcesses counts the cgroup's processes and their open files and
// sockets from cgroup.procs and /proc/<pid>/fd, as cAdvisor does. The root
// cgroup holds most of the host's processes, thousands of descriptors: each
// fd directory is opened once and read with getdents, and every entry's
// link read relative to it, all into reused buffers.
func countProcesses(r *reader, procsFile, procRoot string) processCounts {
	var pc processCounts
	data, ok := r.read(procsFile)
	if !ok {
		return pc
	}
	pids := strings.Fields(string(data))
	var link [64]byte
	if r.dents == nil {
		r.dents = make([]byte, 8<<10)
	}
	dents := r.dents
	for _, pid := range pids {
		pc.Processes++
		dfd, err := unix.Open(procRoot+"/"+pid+"/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		for {
			n, err := unix.Getdents(dfd, dents)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				break
			}
			eachDirent(dents[:n], func(name []byte) {
				pc.FDs++
				if isSocket(dfd, name, link[:]) {
					pc.Sockets++
				}
			})
		}
		unix.Close(dfd)
	}
	return pc
}

// eachDirent calls f with the NUL-terminated name of every entry but "."
// and ".." in a getdents64 buffer.
func eachDirent(buf []byte, f func(name []byte)) {
	for len(buf) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(buf[16:18]))
		if reclen < 19 || reclen > len(buf) {
			return
		}
		name := buf[19:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i+1]
			if s := name[:i]; !(len(s) == 1 && s[0] == '.') && !(len(s) == 2 && s[0] == '.' && s[1] == '.') {
				f(name)
			}
		}
		buf = buf[reclen:]
	}
}

// isSocket reads the link name (NUL-terminated) in directory dfd: an open
// socket reads "socket:[inode]".
func isSocket(dfd int, name, link []byte) bool {
	n, _, errno := unix.Syscall6(unix.SYS_READLINKAT, uintptr(dfd), uintptr(unsafe.Pointer(&name[0])),
		uintptr(unsafe.Pointer(&link[0])), uintptr(len(link)), 0, 0)
	return errno == 0 && bytes.HasPrefix(link[:n], []byte("socket:"))
}
