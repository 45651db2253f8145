package stats

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// netDeviceFull is one interface of /proc/<pid>/net/dev with the counters
// cAdvisor exports.
type netDeviceFull struct {
	Name                                    string
	RxBytes, RxPackets, RxErrors, RxDropped uint64
	TxBytes, TxPackets, TxErrors, TxDropped uint64
}

// parseNetDevFull reads net/dev, leaving out the interfaces cAdvisor
// ignores (loopback, veth host ends, docker bridges). Malformed rows are
// skipped.
func parseNetDevFull(data []byte) []netDeviceFull {
	var out []netDeviceFull
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		name, rest, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		n := strings.TrimSpace(string(name))
		if ignoredDevice(n) {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) < 16 {
			continue
		}
		var v [16]uint64
		bad := false
		for i := 0; i < 16; i++ {
			x, err := strconv.ParseUint(string(f[i]), 10, 64)
			if err != nil {
				bad = true
				break
			}
			v[i] = x
		}
		if bad {
			continue
		}
		out = append(out, netDeviceFull{Name: n,
			RxBytes: v[0], RxPackets: v[1], RxErrors: v[2], RxDropped: v[3],
			TxBytes: v[8], TxPackets: v[9], TxErrors: v[10], TxDropped: v[11]})
	}
	return out
}

// diskStats is one row of /proc/diskstats.
type diskStats struct {
	Reads, ReadsMerged, SectorsRead, ReadMillis       uint64
	Writes, WritesMerged, SectorsWritten, WriteMillis uint64
	IOInProgress, IOMillis, WeightedIOMillis          uint64
}

// parseDiskstats maps "major:minor" to its counters.
func parseDiskstats(data []byte) map[string]diskStats {
	out := map[string]diskStats{}
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) < 14 {
			continue
		}
		var v [11]uint64
		for i := range v {
			v[i], _ = strconv.ParseUint(string(f[3+i]), 10, 64)
		}
		out[string(f[0])+":"+string(f[1])] = diskStats{
			Reads: v[0], ReadsMerged: v[1], SectorsRead: v[2], ReadMillis: v[3],
			Writes: v[4], WritesMerged: v[5], SectorsWritten: v[6], WriteMillis: v[7],
			IOInProgress: v[8], IOMillis: v[9], WeightedIOMillis: v[10],
		}
	}
	return out
}

// rootFilesystem is one block-device filesystem of the machine, reported
// on the root cgroup as cAdvisor reports the machine's filesystems.
type rootFilesystem struct {
	Device     string
	MajorMinor string
	Mountpoint string
	fsInfo
	Disk diskStats
}

// blockMounts lists, from mountinfo, one mount per block device (sources
// under /dev/), the first mount of each. A table it cannot parse yields
// none.
func blockMounts(table []byte) []rootFilesystem {
	infos, err := mountinfo.GetMountsFromReader(bytes.NewReader(table), func(m *mountinfo.Info) (skip, stop bool) {
		return !strings.HasPrefix(m.Source, "/dev/"), false
	})
	if err != nil {
		return nil
	}
	var out []rootFilesystem
	seen := map[string]bool{}
	for _, m := range infos {
		if seen[m.Source] {
			continue
		}
		seen[m.Source] = true
		out = append(out, rootFilesystem{Device: m.Source, MajorMinor: strconv.Itoa(m.Major) + ":" + strconv.Itoa(m.Minor), Mountpoint: m.Mountpoint})
	}
	return out
}

// readRootFilesystems sizes the machine's block-device filesystems and
// joins their disk counters. mounts, when not nil, is the list of
// blockMounts to size instead of reading mountinfo again.
func readRootFilesystems(r *reader, procRoot string, mounts []rootFilesystem) []rootFilesystem {
	if mounts == nil {
		data, ok := r.read(procRoot, "self", "mountinfo")
		if !ok {
			return nil
		}
		mounts = blockMounts(data)
	}
	disks := map[string]diskStats{}
	if data, ok := r.read(procRoot, "diskstats"); ok {
		disks = parseDiskstats(data)
	}
	out := make([]rootFilesystem, 0, len(mounts))
	for _, m := range mounts {
		fi, err := statFS(m.Mountpoint)
		if err != nil {
			continue
		}
		m.fsInfo = fi
		m.Disk = disks[m.MajorMinor]
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Device < out[j].Device })
	return out
}

// readMaxOpenFiles is the soft "Max open files" of a /proc/<pid>/limits;
// -1 for unlimited, 0 when unreadable.
func readMaxOpenFiles(r *reader, limitsFile string) int64 {
	data, ok := r.read(limitsFile)
	if !ok {
		return 0
	}
	return parseMaxOpenFiles(data)
}

func parseMaxOpenFiles(data []byte) int64 {
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		rest, ok := bytes.CutPrefix(line, []byte("Max open files"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		if string(f[0]) == "unlimited" {
			return -1
		}
		v, _ := strconv.ParseInt(string(f[0]), 10, 64)
		return v
	}
	return 0
}

func itoa(i int) string { return strconv.Itoa(i) }

// CPUTopology is the machine's physical core and socket count, as cAdvisor
// reads them from sysfs.
type CPUTopology struct{ PhysicalCores, Sockets int }

// ReadCPUTopology counts distinct (package, core) pairs and packages under
// sysRoot/devices/system/cpu (sysRoot is /sys). A machine whose topology
// is unreadable reports its logical CPUs as cores in one socket.
func ReadCPUTopology(sysRoot string, logical int) CPUTopology {
	dirs, _ := filepath.Glob(filepath.Join(sysRoot, "devices/system/cpu/cpu[0-9]*"))
	cores, sockets := map[string]bool{}, map[string]bool{}
	for _, d := range dirs {
		pkg, err1 := os.ReadFile(filepath.Join(d, "topology/physical_package_id"))
		core, err2 := os.ReadFile(filepath.Join(d, "topology/core_id"))
		if err1 != nil || err2 != nil {
			continue
		}
		p, c := strings.TrimSpace(string(pkg)), strings.TrimSpace(string(core))
		sockets[p] = true
		cores[p+"/"+c] = true
	}
	if len(cores) == 0 {
		return CPUTopology{PhysicalCores: logical, Sockets: 1}
	}
	return CPUTopology{PhysicalCores: len(cores), Sockets: len(sockets)}
}
