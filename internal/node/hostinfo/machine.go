package hostinfo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"
)

// Machine is what the node reports about the machine itself.
type Machine struct {
	MachineID, SystemUUID, BootID string
	KernelVersion, OSImage        string
	OperatingSystem, Architecture string
	NumCPU                        int
	MemoryCapacity                int64 // bytes (MemTotal)
	SwapCapacity                  int64 // bytes (SwapTotal)
	// HugePages maps a page size name ("2Mi", "1Gi") to the bytes of huge
	// pages of that size the kernel holds; sizes with no pages count too.
	HugePages                map[string]int64
	EphemeralStorageCapacity int64 // bytes of the filesystem holding the root dir
	// MaxPIDs is the kernel's limit on process IDs, the smaller of
	// kernel.pid_max and kernel.threads-max; 0 when neither is readable.
	MaxPIDs int64
}

// Machine reads the machine's description; rootDir is the kubelet's root
// directory, whose filesystem is the ephemeral storage. It returns
// everything it could read together with an error naming what it could
// not: the memory size, the boot ID, the kernel release and the root dir's
// filesystem are required; machine ID, system UUID, OS image, swap, huge
// pages and pid limits are optional.
func (h Host) Machine(rootDir string) (Machine, error) {
	info := Machine{
		OperatingSystem: runtime.GOOS,
		Architecture:    runtime.GOARCH,
		HugePages:       map[string]int64{},
	}
	var errs []error

	info.MachineID = h.firstLine("/etc/machine-id", "/var/lib/dbus/machine-id")
	info.SystemUUID = h.firstLine("/sys/class/dmi/id/product_uuid")
	if id := h.firstLine("/proc/sys/kernel/random/boot_id"); id != "" {
		info.BootID = id
	} else {
		errs = append(errs, errors.New("reading the boot ID from /proc/sys/kernel/random/boot_id failed"))
	}

	if rel, err := h.KernelRelease(); err != nil {
		errs = append(errs, fmt.Errorf("reading the kernel release: %w", err))
	} else {
		info.KernelVersion = rel
	}
	info.OSImage = h.osImage()
	info.NumCPU = h.numCPU()

	if mem, err := h.Meminfo(); err != nil {
		errs = append(errs, err)
	} else {
		info.MemoryCapacity, info.SwapCapacity = int64(mem.MemTotal), int64(mem.SwapTotal)
	}

	if pages, err := h.hugePages(); err != nil {
		errs = append(errs, err)
	} else {
		info.HugePages = pages
	}
	info.MaxPIDs = h.MaxPIDs()

	if c, err := h.FSCapacity(rootDir); err != nil {
		errs = append(errs, fmt.Errorf("measuring the filesystem of %s: %w", rootDir, err))
	} else {
		info.EphemeralStorageCapacity = c
	}
	return info, errors.Join(errs...)
}

// numCPU counts the online CPUs, falling back to NumCPU when the list is
// unreadable.
func (h Host) numCPU() int {
	if list := h.firstLine("/sys/devices/system/cpu/online"); list != "" {
		if set, err := cpuset.Parse(list); err == nil && set.Size() > 0 {
			return set.Size()
		}
	}
	return h.NumCPU()
}

// osImage is os-release's PRETTY_NAME, "Linux" when there is none (as
// cAdvisor reports it).
func (h Host) osImage() string {
	for _, p := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		b, err := os.ReadFile(h.path(p))
		if err != nil {
			continue
		}
		if name := osReleaseValue(b, "PRETTY_NAME"); name != "" {
			return name
		}
	}
	return "Linux"
}

func osReleaseValue(b []byte, key string) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || k != key {
			continue
		}
		if uq, err := strconv.Unquote(v); err == nil {
			return uq
		}
		return strings.Trim(v, `"'`)
	}
	return ""
}

// MaxPIDs is the smaller of kernel.pid_max and kernel.threads-max, as
// upstream counts pid capacity; 0 when neither is readable.
func (h Host) MaxPIDs() int64 {
	var out int64
	for _, p := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		v, err := strconv.ParseInt(h.firstLine(p), 10, 64)
		if err == nil && v > 0 && (out == 0 || v < out) {
			out = v
		}
	}
	return out
}

const hugePagesDir = "/sys/kernel/mm/hugepages"

// hugePages reads /sys/kernel/mm/hugepages/hugepages-<size>kB/nr_hugepages.
// A kernel without huge page support has no such directory: no pages.
func (h Host) hugePages() (map[string]int64, error) {
	out := map[string]int64{}
	entries, err := os.ReadDir(h.path(hugePagesDir))
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("reading %s: %w", hugePagesDir, err)
	}
	for _, e := range entries {
		name := e.Name()
		kb, ok := strings.CutPrefix(name, "hugepages-")
		if !ok {
			continue
		}
		kb, ok = strings.CutSuffix(kb, "kB")
		if !ok {
			continue
		}
		sizeKB, err := strconv.ParseInt(kb, 10, 64)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(h.path(path.Join(hugePagesDir, name, "nr_hugepages")))
		if err != nil {
			return out, fmt.Errorf("reading the huge pages of size %skB: %w", kb, err)
		}
		count, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return out, fmt.Errorf("parsing the huge pages of size %skB: %w", kb, err)
		}
		out[HugePageSizeName(sizeKB*1024)] = sizeKB * 1024 * count
	}
	return out, nil
}

// HugePageSizeName is the name of a huge page size as used in resource
// names: 2097152 → "2Mi".
func HugePageSizeName(pageBytes int64) string {
	return resource.NewQuantity(pageBytes, resource.BinarySI).String()
}
